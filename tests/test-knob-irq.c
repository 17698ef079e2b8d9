/* SPDX-License-Identifier: GPL-2.0-only */
/* IRQ affinity on a fake /proc/irq: movable IRQs kept off the inference CPUs (masks with
 * offline CPUs, masks of inference CPUs only), accelerator vectors (msi_irqs/ and
 * /proc/interrupts names) moved to the housekeeping CPUs of the device's node, a managed
 * IRQ skipped, a refused write reported, irqbalance detected; masks compared as masks. */
#include "knobs/knob-test.h"

#define NPU "0000:c1:00.0"

/* CPUs 0-2 online (3 offline); node 0 = 0-1, node 1 = 2; the NPU on node 0.
 * Housekeeping (1 per node) = {0,2}; inference = {1}. */
static knob_test *irq_machine(const char *name) {
        knob_test *t = knob_test_new(name);
        fake_accel(t->root, NPU, 0, 0);
        fake_write(t->root, "sys/bus/pci/devices/" NPU "/msi_irqs/40", "msix\n", 0644);
        fake_write(t->root, "sys/bus/pci/devices/" NPU "/msi_irqs/41", "msix\n", 0644);
        fake_write(t->root, "proc/irq/default_smp_affinity", "f\n", 0644);
        fake_write(t->root, "proc/irq/0/smp_affinity", "f\n", 0644);       /* includes offline CPU 3 */
        fake_write(t->root, "proc/irq/1/smp_affinity", "2\n", 0644);       /* inference CPU only */
        fake_write(t->root, "proc/irq/2/smp_affinity", "8\n", 0644);       /* offline CPU only */
        fake_write(t->root, "proc/irq/3/smp_affinity", "00000005\n", 0644); /* already right */
        fake_write(t->root, "proc/irq/4/smp_affinity", "f\n", 0444);       /* managed: read-only */
        fake_write(t->root, "proc/irq/5/node", "0\n", 0644);               /* no smp_affinity at all */
        fake_write(t->root, "proc/irq/40/smp_affinity", "f\n", 0644);
        fake_write(t->root, "proc/irq/41/smp_affinity", "f\n", 0644);
        fake_write(t->root, "proc/irq/42/smp_affinity", "f\n", 0644);
        fake_write(t->root, "proc/interrupts",
                   "           CPU0       CPU1       CPU2\n"
                   "  0:         10          0          0   IO-APIC   2-edge      timer\n"
                   "  1:          0          0          0   IO-APIC   1-edge      i8042\n"
                   " 40:          0          0          0  PCI-MSIX-" NPU "   0-edge      sq_send_trigger_irq\n"
                   " 41:          0          0          0  PCI-MSIX-" NPU "   1-edge      cq_update_irq\n"
                   " 42:          0          0          0  PCI-MSIX-" NPU "   2-edge      mb_irq\n"
                   "NMI:          0          0          0   Non-maskable interrupts\n"
                   "ERR:          0\n",
                   0644);
        t->host.irq_manage = true;
        t->host.irq_housekeeping_cpus_per_node = 1;
        t->host.irq_keep_off_inference_cpus = true;
        t->host.irq_steer_accelerator_irqs = true;
        return t;
}

static void assert_mask(const knob_test *t, const char *rel, const char *expected) {
        _cleanup_free_ char *v = knob_test_value(t, rel, TUNE_KNOB_CPUMASK);
        if (!tune_knob_value_equal(TUNE_KNOB_CPUMASK, v, expected))
                fail_msg("%s holds mask %s, expected %s", rel, v, expected);
}

static void test_parse_interrupts(void **state) {
        _cleanup_free_ tune_irq_desc *d = NULL;
        unsigned n = 0;
        (void) state;

        assert_int_equal(tune_irq_parse_interrupts("           CPU0       CPU1\n"
                                                   " 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n"
                                                   " 36:          0      42399 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n"
                                                   "NMI:          0          0   Non-maskable interrupts\n"
                                                   "ERR:          0\n",
                                                   &d, &n),
                         0);
        assert_int_equal(n, 2);
        assert_int_equal(d[0].irq, 24);
        assert_string_equal(d[0].desc, "IO-APIC 5-edge ACPI:Ged");
        assert_int_equal(d[1].irq, 36);
        assert_string_equal(d[1].desc, "PCI-MSIX-0000:00:02.0 1-edge virtio1-req.0");
        free(d);
        d = NULL;
        /* Garbage is survived, not trusted. */
        assert_int_equal(tune_irq_parse_interrupts("", &d, &n), 0);
        assert_int_equal(n, 0);
        free(d);
        d = NULL;
        assert_int_equal(tune_irq_parse_interrupts("CPU0\n99999999999: 1 \x01\x02\n7:", &d, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(d[0].irq, 7);
}

static void test_plan_apply_restore(void **state) {
        knob_test *t = irq_machine("irq");
        (void) state;

        knob_test_load(t, 1);
        knob_test_plan(t);
        const tune_knob_item *i4 = knob_test_item(t, "irq/4"), *i5 = knob_test_item(t, "irq/5");
        assert_int_equal(i4->outcome, TUNE_KNOB_SKIPPED);
        assert_int_equal(i4->skip, -EROFS);
        assert_non_null(strstr(i4->skip_reason, "managed IRQ"));
        assert_int_equal(i5->outcome, TUNE_KNOB_SKIPPED);
        assert_int_equal(i5->skip, -ENOENT);
        const tune_knob_item *i40 = knob_test_item(t, "irq/40");
        assert_non_null(i40);
        assert_string_equal(i40->label, "sq_send_trigger_irq of ascend 0 " NPU);
        assert_non_null(knob_test_item(t, "irq/42")); /* named in /proc/interrupts only */

        /* The planner records what it knows as fields, so the daemon never parses the id or
         * the label back (which IRQs irqbalance is told to leave alone depends on them). */
        const tune_knob_item *idef = knob_test_item(t, "irq/default"), *i0 = knob_test_item(t, "irq/0");
        assert_int_equal(idef->backend->kind, TUNE_KNOB_KIND_IRQ);
        assert_int_equal(idef->irq, -1);
        assert_int_equal(idef->accel, -1);
        assert_int_equal(i0->irq, 0);
        assert_int_equal(i0->accel, -1);
        assert_int_equal(i4->irq, 4); /* set also on an item that is skipped */
        assert_int_equal(i40->irq, 40);
        assert_int_equal(i40->accel, 0);
        assert_string_equal(t->accels.items[i40->accel].pci, NPU);
        const tune_knob_item *i42 = knob_test_item(t, "irq/42");
        assert_int_equal(i42->irq, 42);
        assert_int_equal(i42->accel, 0);

        knob_test_apply(t, NULL);
        assert_mask(t, "proc/irq/default_smp_affinity", "d");
        assert_mask(t, "proc/irq/0/smp_affinity", "d"); /* {0,2,3}: CPU 1 removed, offline 3 kept */
        assert_mask(t, "proc/irq/1/smp_affinity", "5"); /* inference only -> housekeeping {0,2} */
        assert_mask(t, "proc/irq/2/smp_affinity", "5"); /* offline only -> housekeeping */
        assert_int_equal(knob_test_item(t, "irq/3")->outcome, TUNE_KNOB_ALREADY);
        _cleanup_free_ char *raw3 = knob_test_file(t, "proc/irq/3/smp_affinity");
        assert_string_equal(raw3, "00000005"); /* not rewritten */
        _cleanup_free_ char *raw4 = knob_test_file(t, "proc/irq/4/smp_affinity");
        assert_string_equal(raw4, "f");
        assert_mask(t, "proc/irq/40/smp_affinity", "1"); /* housekeeping CPU of node 0 */
        assert_mask(t, "proc/irq/41/smp_affinity", "1");
        assert_mask(t, "proc/irq/42/smp_affinity", "1");
        assert_null(tune_journal_find(t->journal, "irq/3"));
        assert_null(tune_journal_find(t->journal, "irq/4"));

        assert_int_equal(knob_test_restore(t), 0);
        assert_mask(t, "proc/irq/default_smp_affinity", "f");
        assert_mask(t, "proc/irq/0/smp_affinity", "f");
        assert_mask(t, "proc/irq/1/smp_affinity", "2");
        assert_mask(t, "proc/irq/2/smp_affinity", "8");
        assert_mask(t, "proc/irq/40/smp_affinity", "f");
        assert_mask(t, "proc/irq/42/smp_affinity", "f");
        assert_false(knob_test_journal_exists(t));
        knob_test_free(t);
}

static void test_accelerators_only(void **state) {
        knob_test *t = irq_machine("irq-accel");
        (void) state;

        t->host.irq_keep_off_inference_cpus = false;
        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_int_equal(t->plan.n, 3);
        assert_null(knob_test_item(t, "irq/default"));
        assert_null(knob_test_item(t, "irq/0"));
        knob_test_apply(t, NULL);
        assert_mask(t, "proc/irq/0/smp_affinity", "f");
        assert_mask(t, "proc/irq/41/smp_affinity", "1");
        assert_int_equal(knob_test_restore(t), 0);
        knob_test_free(t);
}

static void test_not_managed(void **state) {
        knob_test *t = irq_machine("irq-off");
        (void) state;

        t->host.irq_manage = false;
        knob_test_load(t, 1);
        knob_test_plan(t);
        assert_int_equal(t->plan.n, 0);
        knob_test_free(t);
}

static void test_no_housekeeping(void **state) {
        knob_test *t = irq_machine("irq-nohk");
        (void) state;

        /* No housekeeping CPUs: IRQs that would have no online CPU left are not touched. */
        knob_test_load(t, 0);
        tune_cpuset_add(&t->inference, 1);
        knob_test_plan(t);
        const tune_knob_item *i1 = knob_test_item(t, "irq/1");
        assert_int_equal(i1->outcome, TUNE_KNOB_SKIPPED);
        assert_int_equal(i1->skip, -ENXIO);
        assert_int_equal(knob_test_item(t, "irq/0")->outcome, TUNE_KNOB_PLANNED);
        knob_test_free(t);
}

static void test_irqbalance(void **state) {
        knob_test *t = irq_machine("irq-balance");
        int pid = -1;
        (void) state;

        fake_write(t->root, "proc/1/comm", "systemd\n", 0644);
        fake_write(t->root, "proc/99/comm", "irqbalance-not\n", 0644);
        fake_write(t->root, "proc/self/comm", "irqbalance\n", 0644); /* not a pid */
        knob_test_load(t, 1);
        assert_int_equal(tune_irqbalance_find(t->ctx, &pid), 0);
        assert_int_equal(pid, 0);
        knob_test_plan(t);
        assert_false(knob_test_has_note(t, "irq", 0));
        for (unsigned i = 0; i < t->plan.n_notes; i++)
                assert_int_not_equal(t->plan.notes[i].kind, TUNE_KNOB_NOTE_IRQBALANCE_RUNNING);

        /* Another user's process of that name is no irqbalance (it runs as root). */
        char dir[512];
        fake_write(t->root, "proc/500/comm", "irqbalance\n", 0644);
        snprintf(dir, sizeof dir, "%s/proc/500", t->root);
        assert_int_equal(chown(dir, 65534, 65534), 0);
        assert_int_equal(tune_irqbalance_find(t->ctx, &pid), 0);
        assert_int_equal(pid, 0);

        fake_write(t->root, "proc/777/comm", "irqbalance\n", 0644);
        assert_int_equal(tune_irqbalance_find(t->ctx, &pid), 0);
        assert_int_equal(pid, 777);
        knob_test_plan(t);
        assert_true(knob_test_has_note(t, "irq", 0));
        assert_non_null(strstr(t->plan.notes[0].message, "IRQBALANCE_BANNED_CPULIST=1"));
        /* The daemon finds this note by its kind: the words may change. */
        assert_int_equal(t->plan.notes[0].kind, TUNE_KNOB_NOTE_IRQBALANCE_RUNNING);
        assert_string_equal(t->plan.notes[0].message,
                            "irqbalance is running (pid 777): it will move IRQs back onto the inference CPUs. Make it "
                            "cooperate: IRQBALANCE_BANNED_CPULIST=1 in its environment file (/etc/default/irqbalance or "
                            "/etc/sysconfig/irqbalance), then restart it");
        knob_test_free(t);
}

static int child_refused(void *arg) {
        knob_test *t = arg;
        knob_test_plan(t);
        knob_test_apply(t, NULL);
        const tune_knob_item *i0 = knob_test_item(t, "irq/0");
        if (i0->outcome != TUNE_KNOB_REFUSED || i0->error != -EPERM)
                return 30;
        if (!strstr(tune_knob_refusal_reason(&tune_knob_irq, "irq/0", i0->error), "managed IRQ"))
                return 31;
        if (knob_test_item(t, "irq/1")->outcome != TUNE_KNOB_APPLIED)
                return 32;
        if (knob_test_restore(t) != 0)
                return 33;
        return 0;
}

/* A managed IRQ that looks writable but refuses the write (EPERM here; EIO on older
 * kernels): reported, never fatal, the others are applied. */
static void test_refused_write(void **state) {
        knob_test *t = irq_machine("irq-eperm");
        int r, status;
        (void) state;

        knob_test_load(t, 1);
        r = fake_set_immutable(t->root, "proc/irq/0/smp_affinity", true);
        if (r < 0) {
                print_message("immutable files not available here (%s): refused-write case not run\n", strerror(-r));
                knob_test_free(t);
                skip();
        }
        status = knob_test_in_child(child_refused, t);
        assert_int_equal(fake_set_immutable(t->root, "proc/irq/0/smp_affinity", false), 0);
        assert_int_equal(status, 0);
        assert_mask(t, "proc/irq/0/smp_affinity", "f");
        assert_mask(t, "proc/irq/1/smp_affinity", "2");
        knob_test_free(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_interrupts),
                cmocka_unit_test(test_plan_apply_restore),
                cmocka_unit_test(test_accelerators_only),
                cmocka_unit_test(test_not_managed),
                cmocka_unit_test(test_no_housekeeping),
                cmocka_unit_test(test_irqbalance),
                cmocka_unit_test(test_refused_write),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
