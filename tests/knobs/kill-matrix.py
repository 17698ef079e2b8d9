#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Kill matrix: SIGKILL npu-tuned at many points while it owns host knobs, run
`npu-tuned --restore`, and check every knob reads back its original value as the kernel
would show it (bracketed files by their selected word, masks as sets of CPUs; see
knobtest.py for how the fake tree differs from sysfs).

Kill points:
 1. deterministic, every numbered step of apply (NPU_TUNED_TEST_KILL_AT_STEP=N raises
    SIGKILL there): temp journal fsynced but not renamed, renamed but directory not
    fsynced, directory fsynced (between journal write and the first knob write), before
    and after each knob write, the second journal write;
 2. deterministic, every step of the restore that SIGTERM starts;
 3. deterministic, every step of a second start, with a changed policy, that adopts a
    killed run's journal (originals kept, knobs no longer asked for given back at once,
    new values written);
 4. random: each step sleeps a random 0..D µs (NPU_TUNED_TEST_STEP_DELAY_US) and the test
    sends SIGKILL from outside after a random delay within the measured apply time, until
    the total number of runs reaches --runs (default 240).

Usage: kill-matrix.py NPU_TUNED [--runs N] [--seed S] [--stride K]
"""
import argparse
import collections
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import knobtest  # noqa: E402

STEP_RE = re.compile(r"knob step (\d+): (\S+)")


class Matrix:
    def __init__(self, exe, workdir, seed):
        self.exe = exe
        self.work = workdir
        self.rng = random.Random(seed)
        self.template = os.path.join(workdir, "template")
        knobtest.build(self.template)
        self.policy_dir = os.path.join(workdir, "policy")
        knobtest.policy(self.policy_dir)
        # The second start's policy: THP "always", numa_balancing no longer asked for,
        # the links L1-only instead of off.
        self.policy2_dir = os.path.join(workdir, "policy2")
        knobtest.policy(self.policy2_dir, thp_enabled="always", numa_balancing=-1, aspm_accelerator_link="l1-only")
        self.original = knobtest.snapshot(self.template)
        self.runs = 0
        self.torn = 0
        self.failures = []
        self.kinds = collections.Counter()
        self.landed = collections.Counter()

    def fresh(self):
        """The machine as built, in a fresh state directory."""
        root = os.path.join(self.work, "root")
        state = os.path.join(self.work, "state")
        if not os.path.exists(root):
            shutil.copytree(self.template, root)
            self.saved = knobtest.save_knob_bytes(root)
        knobtest.reset_knob_bytes(root, self.saved)
        shutil.rmtree(state, ignore_errors=True)
        return root, state

    def start(self, root, state, env=None, verbose=False, second=False):
        return knobtest.Daemon(self.exe, root, self.policy2_dir if second else self.policy_dir, state, env=env,
                               verbose=verbose)

    def check_restored(self, label, root, state, daemon=None):
        """--restore, then every knob must show its original; no journal left."""
        self.runs += 1
        r = knobtest.restore(self.exe, root, state)
        problems = []
        if r.returncode != 0:
            problems.append(f"--restore exited {r.returncode}: {r.stderr.strip()}")
        d = knobtest.diff(self.original, knobtest.snapshot(root))
        if d:
            problems.append(f"{len(d)} knob(s) not back to the original, e.g. "
                            + ", ".join(f"{k}: {v[1]!r} (was {v[0]!r})" for k, v in sorted(d.items())[:3]))
        left = [f for f in os.listdir(state) if f.startswith("knobs.journal")] if os.path.isdir(state) else []
        if left:
            problems.append(f"left in the state directory: {left}")
        if problems:
            out = daemon.output() if daemon else ""
            self.failures.append(f"{label}: " + "; ".join(problems) + ("\n--- daemon log tail:\n" + out[-1500:] if out else ""))

    def count_steps(self):
        """A normal run with -v: the numbered steps of apply, restore, and adoption."""
        root, state = self.fresh()
        d = self.start(root, state, verbose=True)
        try:
            assert d.wait_ready(), "npu-tuned died:\n" + d.output()
            tuned = knobtest.snapshot(root)
            changed = knobtest.diff(self.original, tuned)
            assert len(changed) > 50, f"apply changed only {len(changed)} knobs"
            apply_steps = [(int(n), w) for n, w in STEP_RE.findall(d.output())]
            d.kill(signal.SIGTERM)
            assert d.wait() == 0, d.output()
            all_steps = [(int(n), w) for n, w in STEP_RE.findall(d.output())]
        finally:
            d.close()
        assert knobtest.diff(self.original, knobtest.snapshot(root)) == {}, "SIGTERM did not restore"
        # Adoption: kill -9 after apply, then count the second start's steps.
        root, state = self.fresh()
        a = self.start(root, state)
        try:
            assert a.wait_ready()
            a.kill()
            a.wait()
        finally:
            a.close()
        b = self.start(root, state, verbose=True, second=True)
        try:
            assert b.wait_ready(), b.output()
            adopt_steps = [(int(n), w) for n, w in STEP_RE.findall(b.output())]
            b.kill(signal.SIGTERM)
            assert b.wait() == 0
        finally:
            b.close()
        return apply_steps, all_steps[len(apply_steps):], adopt_steps, len(changed)

    def kill_at(self, step, what, phase):
        root, state = self.fresh()
        env = {"NPU_TUNED_TEST_KILL_AT_STEP": str(step)}
        if phase == "adopt":
            a = self.start(root, state)
            try:
                if not a.wait_ready():
                    self.failures.append(f"adopt {step}: first run died\n" + a.output())
                    return
                a.kill()
                a.wait()
            finally:
                a.close()
        d = self.start(root, state, env=env, second=phase == "adopt")
        try:
            ready = d.wait_ready()
            if phase == "restore":
                if not ready:
                    self.failures.append(f"restore step {step}: died before ready\n" + d.output())
                    return
                d.kill(signal.SIGTERM)
            elif ready:
                self.failures.append(f"{phase} step {step} ({what}): not killed during apply\n" + d.output())
            rc = d.wait()
            if rc != -signal.SIGKILL:
                self.failures.append(f"{phase} step {step} ({what}): exit {rc}, expected SIGKILL\n" + d.output())
            self.kinds[f"{phase}:{what}"] += 1
            self.check_restored(f"{phase} step {step} ({what})", root, state, d)
        finally:
            d.close()

    def random_kill(self, apply_seconds, delay_us):
        root, state = self.fresh()
        env = {"NPU_TUNED_TEST_STEP_DELAY_US": str(delay_us), "NPU_TUNED_TEST_SEED": str(self.rng.randrange(1 << 30))}
        d = self.start(root, state, env=env)
        try:
            time.sleep(self.rng.uniform(0, apply_seconds * 1.1))
            d.kill()
            d.wait()
            self.torn += knobtest.complete_torn_writes(root, state)
            # Where did it land? Count the knobs it had changed.
            changed = len(knobtest.diff(self.original, knobtest.snapshot(root)))
            journal = os.path.exists(os.path.join(state, "knobs.journal"))
            self.landed["before any journal" if not journal and changed == 0 else
                        "journal, no knob written yet" if changed == 0 else
                        "mid-apply" if changed < self.n_knobs else "all knobs written"] += 1
            self.check_restored(f"random kill (delay {delay_us} µs)", root, state, d)
        finally:
            d.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("--runs", type=int, default=240, help="at least this many runs in all")
    ap.add_argument("--random", type=int, default=100, help="at least this many random-time runs")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("KILL_MATRIX_SEED", "20240601")))
    ap.add_argument("--stride", type=int, default=1, help="every Kth deterministic step (1: all)")
    args = ap.parse_args()
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix="npu-kill-matrix-")
    try:
        m = Matrix(args.exe, work, args.seed)
        apply_steps, restore_steps, adopt_steps, n_knobs = m.count_steps()
        m.n_knobs = n_knobs
        print(f"apply: {len(apply_steps)} steps over {n_knobs} changed knobs; restore: {len(restore_steps)} steps; "
              f"second start adopting a journal: {len(adopt_steps)} steps")
        for n, what in apply_steps[::args.stride]:
            m.kill_at(n, what, "apply")
        for n, what in restore_steps[::max(args.stride, 1)]:
            m.kill_at(n, what, "restore")
        for n, what in adopt_steps[::max(args.stride, 1)]:
            m.kill_at(n, what, "adopt")
        deterministic = m.runs
        # Measure apply time with step delays, then kill at random points inside it.
        delay_us = 400
        root, state = m.fresh()
        d = m.start(root, state, env={"NPU_TUNED_TEST_STEP_DELAY_US": str(delay_us)})
        s = time.monotonic()
        assert d.wait_ready()
        apply_seconds = time.monotonic() - s
        d.kill(signal.SIGTERM)
        d.wait()
        d.close()
        while m.runs < args.runs or m.runs - deterministic < args.random:
            m.random_kill(apply_seconds, delay_us)
        elapsed = time.monotonic() - t0
        phases = collections.Counter()
        kinds = collections.defaultdict(set)
        for k, v in m.kinds.items():
            phase, what = k.split(":", 1)
            phases[phase] += v
            kinds[phase].add(what)
        print(f"kill matrix: {m.runs} SIGKILL runs in {elapsed:.1f} s (seed {args.seed}):")
        for phase in ("apply", "restore", "adopt"):
            print(f"  {phases[phase]:4} at numbered steps of {phase} ({', '.join(sorted(kinds[phase]))})")
        print(f"  {m.runs - deterministic:4} at random times within the {apply_seconds * 1000:.0f} ms of a slowed apply: "
              + ", ".join(f"{k}: {v}" for k, v in sorted(m.landed.items()))
              + f"; {m.torn} fake-file write(s) cut between O_TRUNC and write() completed as sysfs would")
        if m.failures:
            print(f"FAILED: {len(m.failures)} run(s) did not get every knob back:")
            for f in m.failures[:10]:
                print(" -", f)
            return 1
        print("every run: --restore exited 0, every knob shows its original value, no journal left")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
