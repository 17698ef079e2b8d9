/* SPDX-License-Identifier: GPL-2.0-only */
#pragma once

/* The names of the D-Bus API (units/org.nputuned1.Manager.xml, man/npu-tuned.8), shared by
 * the daemon (bus/, core/manager-bus.c) and its clients (common/bus-client.c, npu-tunectl). */

#define NPU_BUS_NAME "org.nputuned1"
#define NPU_BUS_PATH "/org/nputuned1"
#define NPU_BUS_INTERFACE "org.nputuned1.Manager"
#define NPU_BUS_ERROR_NO_SUCH_PROCESS "org.nputuned1.Error.NoSuchProcess"
#define NPU_BUS_ERROR_NOT_MANAGED "org.nputuned1.Error.NotManaged"
#define NPU_BUS_ERROR_POLICY_INVALID "org.nputuned1.Error.PolicyInvalid"
#define NPU_BUS_ERROR_NOT_AVAILABLE "org.nputuned1.Error.NotAvailable"
