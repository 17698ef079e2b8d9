/* SPDX-License-Identifier: GPL-2.0-only */
/* A stand-in libnvidia-ml.so.1 for tests: the functions npu-tuned-driver-query calls,
 * with fixed answers. Two GPUs, 0000:10:00.0 and 0000:1a:00.0 (the
 * first two accelerators tests/watcher/watcher-probe.c makes up). Their processes: those in
 * STUB_DIR/stub-nvml-pids ("INDEX PID" lines) when that file exists, else 4242 and a pid
 * 0 (which the query must drop) on the first and 5151 on the second. With
 * STUB_DIR/stub-nvml-hang, nvmlInit_v2 never returns. It also prints to stdout, as some
 * libraries do, which must not reach the query's output. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
        unsigned pid;
        unsigned long long used_gpu_memory;
        unsigned gpu_instance_id, compute_instance_id;
} proc_info;

typedef struct {
        char bus_id_legacy[16];
        unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
        char bus_id[32];
} pci_info;

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d);
int nvmlDeviceGetPciInfo_v3(void *d, pci_info *p);
int nvmlDeviceGetComputeRunningProcesses_v3(void *d, unsigned *n, proc_info *infos);

static int devices[2];

int nvmlInit_v2(void) {
        printf("stub NVML: hello on stdout\n");
        fflush(stdout);
        if (access(STUB_DIR "/stub-nvml-hang", F_OK) == 0)
                for (;;)
                        pause();
        return 0;
}

int nvmlShutdown(void) {
        return 0;
}

int nvmlDeviceGetCount_v2(unsigned *n) {
        *n = 2;
        return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d) {
        if (i >= 2)
                return 2; /* NVML_ERROR_INVALID_ARGUMENT */
        *d = &devices[i];
        return 0;
}

int nvmlDeviceGetPciInfo_v3(void *d, pci_info *p) {
        memset(p, 0, sizeof *p);
        snprintf(p->bus_id, sizeof p->bus_id, "%s", d == &devices[0] ? "00000000:10:00.0" : "00000000:1A:00.0");
        return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *d, unsigned *n, proc_info *infos) {
        unsigned index = d == &devices[0] ? 0 : 1, k = 0, i, pid;
        FILE *f = fopen(STUB_DIR "/stub-nvml-pids", "re");

        if (!f) {
                if (index == 0) {
                        infos[k++] = (proc_info){ .pid = 4242 };
                        infos[k++] = (proc_info){ .pid = 0 };
                } else
                        infos[k++] = (proc_info){ .pid = 5151 };
        } else {
                while (k < *n && fscanf(f, "%u %u", &i, &pid) == 2)
                        if (i == index)
                                infos[k++] = (proc_info){ .pid = pid };
                fclose(f);
        }
        *n = k;
        return 0;
}
