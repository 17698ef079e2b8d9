#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A reload applies only the difference (fake root, tests/knobs/knobtest.py): a knob whose
desired value did not change is never written during a reload, not even restored and
written again (a serving host would see THP and IRQ affinity flip for a moment).
Asserted from the files: the modification time (nanoseconds) of every knob file that the
reload should not touch stays the same, its content too; the changed knob is written; a
knob the policy no longer sets is restored; SIGTERM then restores the true originals.
Usage: reload-diff.py NPU_TUNED"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import knobtest  # noqa: E402
from knobtest import expect, fail  # noqa: E402

exe = sys.argv[1]


def mtimes(root):
    return {rel: os.stat(os.path.join(root, rel)).st_mtime_ns
            for rel in knobtest.knob_files() if os.path.exists(os.path.join(root, rel))}


def reload(d, n):
    """SIGHUP, then wait for the n-th knob summary line (the reload's)."""
    d.kill(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while d.output().count("Host knobs:") < n:
        if time.monotonic() > deadline or d.proc.poll() is not None:
            fail("no knob summary after SIGHUP", d.output())
        time.sleep(0.02)


import tempfile  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    root, policy, state = (os.path.join(tmp, x) for x in ("root", "policy", "state"))
    knobtest.build(root)
    knobtest.policy(policy)
    os.mkdir(state, 0o700)
    original = knobtest.snapshot(root)
    d = knobtest.Daemon(exe, root, policy, state, args=("--bus=none",))
    try:
        if not d.wait_ready():
            fail("npu-tuned exited before READY", d.output())
        applied = knobtest.snapshot(root)
        expect(applied[f"{knobtest.THP}/enabled"] == "never" and applied["proc/irq/100/smp_affinity"] == frozenset({0}),
               "THP and the NPU's IRQ applied at start")
        time.sleep(0.02)  # a write now would get another mtime
        before = mtimes(root)

        # 1. The same policy again: nothing is written.
        reload(d, 2)
        after = mtimes(root)
        touched = sorted(rel for rel in before if after[rel] != before[rel])
        expect(touched == [] and knobtest.snapshot(root) == applied,
               f"a reload with an unchanged policy writes no knob file (touched: {touched[:5]})", d.output())

        # 2. THP defrag changes and ASPM is no longer set: only those files are written.
        knobtest.policy(policy, thp_defrag="madvise", aspm_policy=None, aspm_accelerator_link=None)
        before = mtimes(root)
        reload(d, 3)
        after = mtimes(root)
        touched = sorted(rel for rel in before if after[rel] != before[rel])
        now = knobtest.snapshot(root)
        aspm = [rel for rel in touched if "aspm" in rel]
        expect(f"{knobtest.THP}/defrag" in touched and now[f"{knobtest.THP}/defrag"] == "madvise",
               "the changed knob (THP defrag) is written", d.output())
        expect(aspm and all(now[rel] == original[rel] for rel in aspm),
               f"knobs the policy no longer sets are restored ({len(aspm)} ASPM files)", d.output())
        untouched = set(touched) - {f"{knobtest.THP}/defrag"} - set(aspm)
        expect(not untouched and f"{knobtest.THP}/enabled" not in touched
               and not any(rel.startswith("proc/irq/") for rel in touched),
               f"THP enabled and every IRQ file are never written during the reload (others: {sorted(untouched)})",
               d.output())
        d.kill(signal.SIGTERM)
        expect(d.wait() == 0, "exit 0 on SIGTERM")
        expect(knobtest.snapshot(root) == original,
               "SIGTERM restores the true originals, also of knobs changed by a reload", d.output())
    finally:
        d.close()
print("PASS")
