#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""npu-tuned's host knob part, run as a process on a fake root (see knobtest.py for how the
fake tree differs from sysfs and how values are compared):

- apply at start, restore on SIGTERM and on SIGINT, journal removed;
- double start: kill -9, start again, stop normally: the originals come back, not the
  tuned values the second start found;
- a knob changed by someone else while owned: logged once; re-asserted only with
  "reassert"; otherwise left to them on stop, and said so;
- --dry-run prints current -> desired and changes nothing;
- --restore: nothing to do; a corrupt or truncated journal (clear error, knobs and journal
  left as they are, also at daemon start); a journal of another root; a journal of an
  earlier boot; while the daemon runs;
- irqbalance running: said plainly.

Usage: daemon-knobs.py NPU_TUNED
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import knobtest  # noqa: E402

EXE = None
THP_ENABLED = "sys/kernel/mm/transparent_hugepage/enabled"


class Case:
    def __init__(self, name, irqbalance=False, **policy):
        self.dir = tempfile.mkdtemp(prefix=f"npu-knobs-{name}-")
        self.root = os.path.join(self.dir, "root")
        self.state = os.path.join(self.dir, "state")
        self.policy = os.path.join(self.dir, "policy")
        knobtest.build(self.root, irqbalance=irqbalance)
        knobtest.policy(self.policy, **policy)
        self.original = knobtest.snapshot(self.root)
        self.daemons = []

    def start(self, *args, env=None):
        d = knobtest.Daemon(EXE, self.root, self.policy, self.state, env=env, args=args)
        self.daemons.append(d)
        return d

    def snapshot(self):
        return knobtest.snapshot(self.root)

    def changed(self):
        return knobtest.diff(self.original, self.snapshot())

    def journal(self):
        return os.path.join(self.state, "knobs.journal")

    def close(self):
        for d in self.daemons:
            d.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def expect(cond, what, log=""):
    if not cond:
        raise AssertionError(what + ("\n--- log:\n" + log if log else ""))


def started(case, *args, env=None):
    d = case.start(*args, env=env)
    expect(d.wait_ready(), "npu-tuned died at start", d.output())
    return d


def stop(d, sig=signal.SIGTERM):
    d.kill(sig)
    rc = d.wait()
    expect(rc == 0, f"npu-tuned exited {rc} on {sig.name}", d.output())


def test_apply_and_stop():
    for sig in (signal.SIGTERM, signal.SIGINT):
        c = Case("stop")
        try:
            d = started(c)
            tuned = c.snapshot()
            expect(tuned[THP_ENABLED] == "never", "THP enabled not applied", d.output())
            expect(tuned["proc/irq/100/smp_affinity"] == frozenset({0}), "NPU 0's IRQ not on CPU 0", d.output())
            expect(tuned["proc/irq/5/smp_affinity"] == frozenset({0, 4}), "IRQ 5 not moved to housekeeping CPUs")
            expect(tuned["proc/irq/9/smp_affinity"] == c.original["proc/irq/9/smp_affinity"], "managed IRQ touched")
            expect(len(c.changed()) > 50, "too few knobs changed")
            expect(os.path.exists(c.journal()), "no journal while running")
            log = d.output()
            expect("does not offer \"performance\" for policy3" in log, "governor not offered: no report", log)
            expect("policy7 is offline" in log or "every CPU of policy7 is offline" in log, "offline policy: no report", log)
            expect("managed IRQs" in log and "(9)" in log, "managed IRQ 9 not reported", log)
            stop(d, sig)
            expect(c.changed() == {}, f"not restored after {sig.name}: {c.changed()}", d.output())
            expect(not os.path.exists(c.journal()), "journal left after stop")
        finally:
            c.close()


def test_double_start():
    c = Case("double")
    try:
        a = started(c)
        tuned = c.snapshot()
        a.kill()
        a.wait()
        expect(c.snapshot() == tuned, "SIGKILL changed knobs")
        b = started(c)
        log = b.output()
        expect("Found the journal of a previous run" in log, "journal not found by the second start", log)
        expect("original value \"madvise\" taken from the previous run's journal" in log,
               "THP original not taken from the journal", log)
        expect(c.snapshot() == tuned, "the second start changed tuned values", log)
        stop(b)
        expect(c.changed() == {}, f"originals not restored after a double start: {c.changed()}", b.output())
        expect(not os.path.exists(c.journal()), "journal left")
    finally:
        c.close()


def test_changed_by_others_reassert():
    c = Case("reassert", reassert=True, reconcile_interval_ms=100)
    try:
        d = started(c)
        for _ in range(2):
            knobtest.write(c.root, THP_ENABLED, "[always] madvise never\n")
            deadline = time.monotonic() + 5
            while c.snapshot()[THP_ENABLED] != "never" and time.monotonic() < deadline:
                time.sleep(0.02)
            expect(c.snapshot()[THP_ENABLED] == "never", "not re-asserted", d.output())
        log = d.output()
        expect(log.count("thp/enabled: changed by someone else") == 1, "change not logged exactly once", log)
        stop(d)
        expect(c.changed() == {}, f"not restored: {c.changed()}")
    finally:
        c.close()


def test_changed_by_others_left_alone():
    c = Case("leftalone", reassert=False, reconcile_interval_ms=100)
    try:
        d = started(c)
        knobtest.write(c.root, THP_ENABLED, "[always] madvise never\n")
        deadline = time.monotonic() + 5
        while "changed by someone else" not in d.output() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        log = d.output()
        expect(log.count("thp/enabled: changed by someone else") == 1, "change not logged exactly once", log)
        expect(c.snapshot()[THP_ENABLED] == "always", "someone else's value overwritten without reassert", log)
        stop(d)
        log = d.output()
        expect(c.snapshot()[THP_ENABLED] == "always", "someone else's value not left alone on stop", log)
        expect("set by someone else after npu-tuned set \"never\": left alone" in log, "left alone not said", log)
        left = c.changed()
        expect(list(left) == [THP_ENABLED], f"other knobs not restored: {left}")
    finally:
        c.close()


def test_dry_run():
    """--dry-run is one shot: it prints and exits 0 (it used to run on as a dry daemon);
    --dry-run --follow is the dry daemon, which changes nothing either."""
    c = Case("dryrun")
    try:
        r = subprocess.run([EXE, "--root", c.root, "--policy-dir", c.policy, "--state-dir", c.state, "--no-watch",
                            "--dry-run"], capture_output=True, text=True, timeout=30)
        out = r.stdout
        expect(r.returncode == 0, f"--dry-run exited {r.returncode}", r.stdout + r.stderr)
        expect("thp/enabled: madvise -> never" in out, "dry-run line missing", out)
        expect("irq/9 (IO-APIC 9-edge dev9): skipped: a managed IRQ" in out, "managed IRQ not in dry-run", out)
        # Governors that change the same way share a line; one that differs has its own.
        expect("cpufreq (3 policies, CPUs 0-2): powersave -> performance" in out, "governor lines not grouped", out)
        expect("cpufreq/policy3 (CPUs 3): skipped:" in out, "governor exception missing", out)
        expect("# processes: not looked at" in out, "dry-run does not say it did not look at processes", out)
        expect(not any(len(line) > 1 and line[0].isdigit() for line in out.splitlines()), "raw lines", out)
        expect(c.changed() == {}, "dry-run changed knobs")
        expect(not os.path.exists(c.journal()), "dry-run wrote a journal")
        d = started(c, "--dry-run", "--follow")
        time.sleep(0.1)
        expect("thp/enabled: madvise -> never" in d.output(), "--follow: dry-run line missing", d.output())
        expect(d.proc.poll() is None, "--dry-run --follow did not run on", d.output())
        expect(c.changed() == {}, "dry-run --follow changed knobs")
        stop(d)
        expect(c.changed() == {}, "dry-run changed knobs at stop")
    finally:
        c.close()


def killed_with_journal(c):
    a = started(c)
    a.kill()
    a.wait()
    return c.snapshot()


def test_restore_cases():
    c = Case("restore")
    try:
        # Nothing to do.
        r = knobtest.restore(EXE, c.root, c.state)
        expect(r.returncode == 0 and "nothing to restore" in r.stderr, f"no journal: {r.returncode} {r.stderr}")

        # While the daemon runs: refused, nothing touched.
        d = started(c)
        tuned = c.snapshot()
        r = knobtest.restore(EXE, c.root, c.state)
        expect(r.returncode == 1 and "is running" in r.stderr, f"--restore while running: {r.returncode} {r.stderr}")
        expect(c.snapshot() == tuned, "--restore while running touched knobs")
        d.kill()
        d.wait()

        # A truncated journal: clear error, knobs and journal left as they are.
        with open(c.journal()) as f:
            text = f.read()
        cut = text[: len(text) // 2]
        with open(c.journal(), "w") as f:
            f.write(cut)
        r = knobtest.restore(EXE, c.root, c.state)
        expect(r.returncode == 1 and "corrupt or truncated" in r.stderr and "no guessing" in r.stderr,
               f"truncated journal: {r.returncode} {r.stderr}")
        expect(c.snapshot() == tuned, "a truncated journal led to writes")
        with open(c.journal()) as f:
            expect(f.read() == cut, "the truncated journal was changed")
        # ... and a daemon starting on it leaves the knobs alone too, and runs.
        d = started(c)
        log = d.output()
        expect("corrupt or truncated" in log, "daemon start: no error for a truncated journal", log)
        expect(c.snapshot() == tuned, "daemon start on a truncated journal wrote knobs", log)
        stop(d)
        expect(c.snapshot() == tuned, "daemon stop on a truncated journal wrote knobs")
        # A flipped byte: the checksum catches it.
        flipped = text.replace("original=madvise", "original=madvisf", 1)
        with open(c.journal(), "w") as f:
            f.write(flipped)
        r = knobtest.restore(EXE, c.root, c.state)
        expect(r.returncode == 1 and "checksum" in r.stderr, f"corrupt journal: {r.returncode} {r.stderr}")
        expect(c.snapshot() == tuned, "a corrupt journal led to writes")
        # A journal of a newer format version.
        with open(c.journal(), "w") as f:
            f.write(text.replace("npu-tuned-journal 1", "npu-tuned-journal 7"))
        r = knobtest.restore(EXE, c.root, c.state)
        expect(r.returncode == 1 and "newer npu-tuned" in r.stderr, f"newer journal: {r.returncode} {r.stderr}")

        # The intact journal, restored with another --root: refused.
        with open(c.journal(), "w") as f:
            f.write(text)
        other = os.path.join(c.dir, "other-root")
        os.makedirs(other)
        r = knobtest.restore(EXE, other, c.state)
        expect(r.returncode == 1 and "belongs to root" in r.stderr, f"other root: {r.returncode} {r.stderr}")
        # The right root: restored, journal gone.
        r = knobtest.restore(EXE, c.root, c.state)
        expect(r.returncode == 0, f"--restore: {r.returncode} {r.stderr}")
        expect(c.changed() == {}, f"--restore did not restore: {c.changed()}")
        expect(not os.path.exists(c.journal()), "journal left after --restore")

        # A journal from an earlier boot: the kernel reset the knobs; discarded.
        killed_with_journal(c)
        knobtest.write(c.root, "proc/sys/kernel/random/boot_id", "0b5e55ed-fa4e-4b00-8000-000000000002\n")
        r = knobtest.restore(EXE, c.root, c.state)
        expect(r.returncode == 0 and "earlier boot" in r.stderr, f"earlier boot: {r.returncode} {r.stderr}")
        expect(not os.path.exists(c.journal()), "earlier boot's journal kept")
    finally:
        c.close()


def test_irqbalance():
    c = Case("irqbalance", irqbalance=True)
    try:
        d = started(c)
        log = d.output()
        expect("irqbalance is running (pid 4242)" in log and "IRQBALANCE_BANNED_CPULIST=1-3,5-6" in log,
               "irqbalance not reported", log)
        stop(d)
    finally:
        c.close()


def test_numa_balancing_notice():
    """A rule that moves memory while kernel.numa_balancing is on gets a notice
    (docs/placement.md); not when the policy turns the balancing off, nor without such a
    rule. The fake tree's numa_balancing starts at 1."""
    rule = ('{"version": 1, "processes": [{"name": "mover", "match": {"comm": "no-such-worker", '
            '"user": "root"}, "memory": {"migrate": %s}}]}')
    notice = 'kernel.numa_balancing is 1 and rule "mover" moves memory'
    for name, balancing, migrate, want in (("on", None, "true", True), ("off", 0, "true", False),
                                           ("nomove", None, "false", False)):
        c = Case("numa-" + name, numa_balancing=balancing)
        try:
            with open(os.path.join(c.policy, "60-mover.json"), "w") as f:
                f.write(rule % migrate)
            d = started(c)
            log = d.output()
            expect((notice in log) == want, f"{name}: notice {'missing' if want else 'unexpected'}", log)
            with open(os.path.join(c.root, "proc/sys/kernel/numa_balancing")) as f:
                now = f.read().strip()
            expect(now == ("0" if balancing == 0 else "1"), f"{name}: numa_balancing {now}", log)
            stop(d)
        finally:
            c.close()


def test_no_host_settings():
    c = Case("nohost")
    try:
        with open(os.path.join(c.policy, "50-host.json"), "w") as f:
            f.write("{\"version\": 1}")
        d = started(c)
        expect(c.changed() == {}, "knobs changed without host settings")
        expect(not os.path.exists(c.journal()), "journal without host settings")
        stop(d)
    finally:
        c.close()


def main():
    global EXE
    EXE = os.path.abspath(sys.argv[1])
    tests = [v for k, v in globals().items() if k.startswith("test_")]
    failed = 0
    for t in tests:
        try:
            t()
            print(f"ok   {t.__name__}")
        except Exception:
            failed += 1
            print(f"FAIL {t.__name__}")
            traceback.print_exc()
    print(f"{len(tests) - failed}/{len(tests)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
