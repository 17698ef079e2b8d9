/* SPDX-License-Identifier: GPL-2.0-only */
/* A stand-in libnvidia-ml.so.1 for tests: the functions npu-tuned-driver-query calls,
 * with fixed answers, switched by files beside the library (the directory it was loaded
 * from, as /proc/self/maps names it):
 *   stub-nvml-buses  the GPUs' bus ids, one a line, NVML's form ("00000000:61:00.0");
 *                    without it two GPUs, 00000000:10:00.0 and 00000000:1A:00.0 (the
 *                    first two accelerators tests/watcher/watcher-probe.c makes up)
 *   stub-nvml-pids   their processes, "INDEX PID" lines; without it 4242 and a pid 0
 *                    (which the query must drop) on the first GPU, 5151 on the second
 *   stub-nvml-hang   nvmlInit_v2 never returns
 *   stub-nvml-delay  nvmlInit_v2 takes a second (the processes are read after it)
 * It also prints to stdout, as some libraries do, which must not reach the query's
 * output. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

#define MAX_GPUS 8

static int devices[MAX_GPUS];
static char buses[MAX_GPUS][32] = { "00000000:10:00.0", "00000000:1A:00.0" };
static unsigned n_buses = 2;

/* dir/name of the directory this library was loaded from. */
static void beside(const char *name, char *buf, size_t size) {
        uintptr_t self = (uintptr_t) &nvmlInit_v2;
        char line[4096];
        FILE *f = fopen("/proc/self/maps", "re");

        snprintf(buf, size, "/nonexistent/%s", name);
        while (f && fgets(line, sizeof line, f)) {
                unsigned long lo, hi;
                char *path = strchr(line, '/'), *slash;
                if (sscanf(line, "%lx-%lx", &lo, &hi) != 2 || self < lo || self >= hi || !path)
                        continue;
                path[strcspn(path, "\n")] = 0;
                slash = strrchr(path, '/');
                *slash = 0;
                snprintf(buf, size, "%s/%s", path, name);
                break;
        }
        if (f)
                fclose(f);
}

static FILE *open_beside(const char *name) {
        char path[4096];
        beside(name, path, sizeof path);
        return fopen(path, "re");
}

int nvmlInit_v2(void) {
        char path[4096];
        FILE *f;

        printf("stub NVML: hello on stdout\n");
        fflush(stdout);
        if ((f = open_beside("stub-nvml-buses"))) {
                n_buses = 0;
                while (n_buses < MAX_GPUS && fscanf(f, "%31s", buses[n_buses]) == 1)
                        n_buses++;
                fclose(f);
        }
        beside("stub-nvml-delay", path, sizeof path);
        if (access(path, F_OK) == 0)
                sleep(1);
        beside("stub-nvml-hang", path, sizeof path);
        if (access(path, F_OK) == 0)
                for (;;)
                        pause();
        return 0;
}

int nvmlShutdown(void) {
        return 0;
}

int nvmlDeviceGetCount_v2(unsigned *n) {
        *n = n_buses;
        return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d) {
        if (i >= n_buses)
                return 2; /* NVML_ERROR_INVALID_ARGUMENT */
        *d = &devices[i];
        return 0;
}

int nvmlDeviceGetPciInfo_v3(void *d, pci_info *p) {
        memset(p, 0, sizeof *p);
        snprintf(p->bus_id, sizeof p->bus_id, "%s", buses[(int *) d - devices]);
        return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *d, unsigned *n, proc_info *infos) {
        unsigned index = (unsigned) ((int *) d - devices), k = 0, i, pid;
        FILE *f = open_beside("stub-nvml-pids");

        if (!f) {
                if (index == 0) {
                        infos[k++] = (proc_info){ .pid = 4242 };
                        infos[k++] = (proc_info){ .pid = 0 };
                } else if (index == 1)
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
