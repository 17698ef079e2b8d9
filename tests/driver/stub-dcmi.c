/* SPDX-License-Identifier: GPL-2.0-only */
/* A stand-in libdcmi.so for tests: the functions npu-tuned-driver-query calls, with fixed
 * answers. Card 3 holds two chips: chip 0, an NPU at 0000:c1:00.0 used by pids 120731
 * and 120732 (and a pid -1 the query must drop), and chip 1, an MCU whose process list
 * fails as a real one does. Card 7 holds one NPU at 0001:41:00.0 used by 33 processes,
 * one more than the API's bound (the query takes 32). Built with STUB_DCMI_V1, it has no
 * dcmi_get_device_pcie_info_v2 (an older driver): no domain. */
#include <errno.h>
#include <string.h>

struct dcmi_proc_mem_info {
        int proc_id;
        unsigned long proc_mem_usage;
};

struct dcmi_pcie_info {
        unsigned deviceid, venderid, subvenderid, subdeviceid, bdf_deviceid, bdf_busid, bdf_funcid;
};

struct dcmi_pcie_info_all {
        unsigned venderid, subvenderid, deviceid, subdeviceid;
        int domain;
        unsigned bdf_busid, bdf_deviceid, bdf_funcid;
        unsigned char reserve[32];
};

int dcmi_init(void);
int dcmi_get_card_num_list(int *card_num, int *card_list, int list_len);
int dcmi_get_device_num_in_card(int card_id, int *device_num);
int dcmi_get_device_resource_info(int card_id, int device_id, struct dcmi_proc_mem_info *proc_info, int *proc_num);
int dcmi_get_device_pcie_info(int card_id, int device_id, struct dcmi_pcie_info *pcie_info);
#ifndef STUB_DCMI_V1
int dcmi_get_device_pcie_info_v2(int card_id, int device_id, struct dcmi_pcie_info_all *pcie_info);
#endif

int dcmi_init(void) {
        return 0;
}

int dcmi_get_card_num_list(int *card_num, int *card_list, int list_len) {
        if (list_len < 2)
                return -EINVAL;
        card_list[0] = 3;
        card_list[1] = 7;
        *card_num = 2;
        return 0;
}

int dcmi_get_device_num_in_card(int card_id, int *device_num) {
        *device_num = card_id == 3 ? 2 : 1;
        return 0;
}

int dcmi_get_device_resource_info(int card_id, int device_id, struct dcmi_proc_mem_info *proc_info, int *proc_num) {
        if (card_id == 3 && device_id == 1)
                return -8005; /* the MCU: not supported */
        if (card_id == 3) {
                proc_info[0] = (struct dcmi_proc_mem_info){ 120731, 1UL << 30 };
                proc_info[1] = (struct dcmi_proc_mem_info){ -1, 0 };
                proc_info[2] = (struct dcmi_proc_mem_info){ 120732, 1UL << 30 };
                *proc_num = 3;
                return 0;
        }
        for (int i = 0; i < 33; i++)
                proc_info[i] = (struct dcmi_proc_mem_info){ 200000 + i, 4096 };
        *proc_num = 33;
        return 0;
}

static void bdf(int card_id, unsigned *bus, unsigned *dev, unsigned *fn) {
        *bus = card_id == 3 ? 0xc1 : 0x41;
        *dev = 0;
        *fn = 0;
}

int dcmi_get_device_pcie_info(int card_id, int device_id, struct dcmi_pcie_info *pcie_info) {
        memset(pcie_info, 0, sizeof *pcie_info);
        bdf(card_id, &pcie_info->bdf_busid, &pcie_info->bdf_deviceid, &pcie_info->bdf_funcid);
        return 0;
}

#ifndef STUB_DCMI_V1
int dcmi_get_device_pcie_info_v2(int card_id, int device_id, struct dcmi_pcie_info_all *pcie_info) {
        memset(pcie_info, 0, sizeof *pcie_info);
        pcie_info->domain = card_id == 3 ? 0 : 1;
        bdf(card_id, &pcie_info->bdf_busid, &pcie_info->bdf_deviceid, &pcie_info->bdf_funcid);
        return 0;
}
#endif
