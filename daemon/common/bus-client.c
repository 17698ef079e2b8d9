/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <string.h>

#include "bus-client.h"
#include "bus-names.h"
#include "npu-tuned/macro.h"


int bus_client_open(daemon_bus which, sd_bus **ret) {
        if (which == DAEMON_BUS_NONE)
                return -ENOMEDIUM;
        return which == DAEMON_BUS_SESSION ? sd_bus_open_user(ret) : sd_bus_open_system(ret);
}

bool bus_client_error_is_absent(const sd_bus_error *e, int r) {
        if (e && sd_bus_error_is_set(e))
                return sd_bus_error_has_name(e, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
                       sd_bus_error_has_name(e, SD_BUS_ERROR_NAME_HAS_NO_OWNER) ||
                       sd_bus_error_has_name(e, SD_BUS_ERROR_UNKNOWN_OBJECT) ||
                       sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) ||
                       sd_bus_error_has_name(e, SD_BUS_ERROR_DISCONNECTED);
        return r == -ENOENT || r == -ECONNREFUSED || r == -ENOMEDIUM || r == -ENOTCONN || r == -ECONNRESET ||
               r == -EHOSTDOWN || r == -ENXIO;
}

int bus_client_explain(sd_bus *bus, pid_t pid, json_object **ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *text;
        json_object *j;
        int r;

        r = sd_bus_call_method(bus, NPU_BUS_NAME, NPU_BUS_PATH, NPU_BUS_INTERFACE, "Explain", error, &reply, "u",
                               (uint32_t) pid);
        if (r < 0)
                return sd_bus_error_has_name(error, NPU_BUS_ERROR_NO_SUCH_PROCESS) ? -ESRCH : r;
        r = sd_bus_message_read(reply, "s", &text);
        if (r < 0)
                return r;
        j = json_tokener_parse(text);
        if (!j)
                return -EBADMSG;
        *ret = j;
        return 0;
}
