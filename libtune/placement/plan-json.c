/* SPDX-License-Identifier: GPL-2.0-only */
#include <errno.h>
#include <json.h>

#include "npu-tuned/plan.h"

int tune_json_add(json_object *o, const char *key, json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int add_set(json_object *o, const char *key, const tune_cpuset *s) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = tune_cpuset_format_list(s, &text);
        if (r < 0)
                return r;
        return tune_json_add(o, key, json_object_new_string(text));
}

int tune_plan_to_json(const tune_plan *p, struct json_object **ret) {
        json_object *o, *roles, *reasons;
        int r;

        o = json_object_new_object();
        roles = json_object_new_object();
        reasons = json_object_new_array();
        if (!o || !roles || !reasons) {
                json_object_put(o);
                json_object_put(roles);
                json_object_put(reasons);
                return -ENOMEM;
        }
        r = tune_json_add(o, "roles", roles);
        if (r < 0) {
                json_object_put(reasons);
                json_object_put(o);
                return r;
        }
        r = tune_json_add(o, "reasons", reasons);
        if (r >= 0)
                r = tune_json_add(o, "action", json_object_new_string(tune_plan_action_to_string(p->action)));
        if (r >= 0)
                r = add_set(o, "home_nodes", &p->home_nodes);
        if (r >= 0)
                r = add_set(o, "pool", &p->pool);
        if (r >= 0)
                r = add_set(o, "borrowed_nodes", &p->borrowed_nodes);
        if (r >= 0)
                r = tune_json_add(o, "cpus_wanted", json_object_new_int((int) p->cpus_wanted));
        if (r >= 0)
                r = tune_json_add(o, "shared", json_object_new_boolean(p->shared));
        if (r >= 0)
                r = add_set(o, "mem_nodes", &p->mem_nodes);
        if (r >= 0)
                r = tune_json_add(o, "in_cpuset", json_object_new_boolean(p->in_cpuset));
        if (r >= 0)
                r = tune_json_add(o, "cpuset_far", json_object_new_boolean(p->cpuset_far));
        for (unsigned i = 0; r >= 0 && i < _TUNE_ROLE_MAX; i++)
                r = add_set(roles, tune_role_to_string((tune_role) i), &p->role_cpus[i]);
        for (unsigned i = 0; r >= 0 && i < p->n_reasons; i++) {
                json_object *s = json_object_new_string(p->reasons[i]);
                if (!s || json_object_array_add(reasons, s) < 0) {
                        json_object_put(s);
                        r = -ENOMEM;
                }
        }
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}
