#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Placed processes get their original affinities back after the daemon was SIGKILLed.

The real npu-tuned places threads-target as in daemon-live.py (control threads on one CPU,
compute threads on the other, restore_on_stop: true). Asserted from the kernel (each
thread's Cpus_allowed_list), not from the daemon's log:
  1. kill -9 of the daemon leaves the threads placed (the kill really skipped the restore),
     and STATE/affinity-PID.json exists; `npu-tuned --restore` then gives every thread its
     original back, except the main thread, which the test re-bound itself meanwhile (left
     alone), and removes the record; what the process was attributed from, kept in the
     record, is then in its own file (attribution-PID), which the next start reads;
  2. kill -9, then START the daemon again (it restores the leftover record before it places
     the process again), then SIGTERM: every thread is back on its TRUE original, not on
     the first run's CPUs (the tuned-after-SIGKILL trap), and what it was attributed from is
     in its own file for the next start;
  3. a hand-made record naming a live process with another start time (a reused pid) is
     ignored and removed: the process's affinity is untouched; the same record with the
     right start time does restore it (so the check above can fail).
Needs root in the initial namespaces (the proc connector) and 2 online CPUs: skips (77) and
says which otherwise.
Usage: affinity-record-live.py NPU_TUNED THREADS_TARGET"""
import glob
import json
import os
import sys
import tempfile
import time

npu_tuned, target_bin = sys.argv[1], sys.argv[2]


from livetest import affinities, allowed, fail, placing_policy, require_root_and_two_cpus
import livetest

control_cpu, compute_cpu = require_root_and_two_cpus()
original = set(os.sched_getaffinity(0))


def wait_placed(pid, n_threads, timeout=10.0):
    return livetest.wait_placed(pid, n_threads, control_cpu, compute_cpu, timeout)


def start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])  # field 22


def records(state_dir, ready=False):
    """The affinity records in state_dir; ready: also the ready record (affinity-record.h), made
    after a first pin for the next process: a stop or --restore leaves neither."""
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(state_dir, "affinity-*")))
    return names if ready else [n for n in names if n != "affinity-ready"]


policy = placing_policy("affinity-record-live: place threads-target on node 0 by role, no host knobs")


def Run(tmp):
    return livetest.Run(npu_tuned, target_bin, policy, tmp)


def assert_all_original(pid, what, except_tid=None):
    for tid, (comm, a) in affinities(pid).items():
        if tid != except_tid and a != original:
            fail(f"{what}: thread {tid} ({comm}) has {sorted(a)}, want the original {sorted(original)}")


# 1. kill -9, then npu-tuned --restore.
with tempfile.TemporaryDirectory() as tmp:
    run = Run(tmp)
    try:
        run.start_daemon()
        pid = run.start_target()
        wait_placed(pid, 5)
        time.sleep(0.7)
        placed = wait_placed(pid, 6)  # the late thread too (placed on its fork/rename events)
        if records(run.state_dir) != [f"affinity-{pid}.json"]:
            fail(f"want one record for {pid}, the state dir holds {records(run.state_dir)}")
        with open(os.path.join(run.state_dir, f"affinity-{pid}.json")) as f:
            rec = json.load(f)
        if rec["pid"] != pid or rec["start_time"] != start_time(pid) or rec["restore_on_stop"] is not True:
            fail(f"record does not name the process: {rec}")
        # What it was attributed from is in the same write, and in no file of its own.
        attribution = rec.get("attribution", "")
        if not attribution.startswith(f"npu-tuned-attribution 1\npid {pid}\n"):
            fail(f"the record does not hold what pid {pid} was attributed from: {rec}")
        if os.path.exists(os.path.join(run.state_dir, f"attribution-{pid}")):
            fail("the record holds what it was attributed from, yet its own file was written too")
        run.kill_daemon()
        time.sleep(0.2)
        if affinities(pid) != placed:
            fail(f"after kill -9 the threads changed (was the daemon killed?): {affinities(pid)} != {placed}")
        print(f"ok: after kill -9 the threads keep the placement and {records(run.state_dir)} is there")
        # The process re-binds its main thread itself: --restore must leave it alone.
        os.sched_setaffinity(pid, {compute_cpu})
        run.restore()
        assert_all_original(pid, "after --restore", except_tid=pid)
        if allowed(pid, pid) != {compute_cpu}:
            fail(f"--restore overrode the main thread's own binding: {sorted(allowed(pid, pid))}")
        if records(run.state_dir, ready=True):
            fail(f"records left after --restore: {records(run.state_dir, ready=True)}")
        # The record's attribution outlives it, in the file the next start reads.
        with open(os.path.join(run.state_dir, f"attribution-{pid}")) as f:
            if f.read() != attribution:
                fail("--restore did not keep the record's attribution, as it was, in its own file")
        print(f"ok: --restore gave {len(placed) - 1} threads {sorted(original)} back, left the re-bound main "
              "thread alone, removed the record and kept what the process was attributed from")
    finally:
        run.close()

# 2. kill -9, start again, SIGTERM: the true originals, not the first run's CPUs.
with tempfile.TemporaryDirectory() as tmp:
    run = Run(tmp)
    try:
        run.start_daemon()
        pid = run.start_target(late=False)
        placed = wait_placed(pid, 5)
        run.kill_daemon()
        time.sleep(0.2)
        if affinities(pid) != placed:
            fail(f"after kill -9 the threads changed: {affinities(pid)}")
        run.start_daemon()
        wait_placed(pid, 5)
        if records(run.state_dir) != [f"affinity-{pid}.json"]:
            fail(f"want the new run's record for {pid}: {records(run.state_dir)}")
        with open(os.path.join(run.state_dir, f"affinity-{pid}.json")) as f:
            rec = json.load(f)
        bad = [t for t in rec["threads"] if t["original"] != f"{min(original)}-{max(original)}" and len(original) == 2]
        if bad:
            fail(f"the second run recorded our old values as originals: {bad}")
        run.stop_daemon()
        assert_all_original(pid, "after kill -9, restart and SIGTERM")
        if not os.path.exists(os.path.join(run.state_dir, f"attribution-{pid}")):
            fail("the daemon stopped and its record went, but what the process was attributed from was not kept")
        if records(run.state_dir, ready=True):
            fail(f"records left after SIGTERM: {records(run.state_dir, ready=True)}")
        print(f"ok: kill -9, restart, SIGTERM: every thread back on {sorted(original)}, record removed")
    finally:
        run.close()

# 3. A record for a pid that is now another process (start time differs) is ignored.
with tempfile.TemporaryDirectory() as tmp:
    run = Run(tmp)
    try:
        pid = run.start_target(late=False)
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot_id = f.read().strip()

        def craft(start):
            rec = {"version": 1, "boot_id": boot_id, "pid": pid, "start_time": start, "restore_on_stop": True,
                   "threads": [{"tid": pid, "original": str(control_cpu),
                                "applied": ",".join(str(c) for c in sorted(original))}]}
            # As the daemon writes it: root's, 0600 (anything else is refused, docs/trust.md).
            path = os.path.join(run.state_dir, f"affinity-{pid}.json")
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                json.dump(rec, f)
            os.chmod(path, 0o600)

        craft(start_time(pid) + 12345)
        run.restore()
        if allowed(pid, pid) != original:
            fail(f"a record with another start time changed pid {pid}: {sorted(allowed(pid, pid))}")
        if records(run.state_dir):
            fail(f"the stale record was not removed: {records(run.state_dir)}")
        print(f"ok: a record with a wrong start time left pid {pid} on {sorted(original)} and was removed")
        craft(start_time(pid))
        run.restore()
        if allowed(pid, pid) != {control_cpu}:
            fail(f"the same record with the right start time did not restore: {sorted(allowed(pid, pid))}")
        print("ok: the same record with the right start time does restore (the check above can fail)")
    finally:
        run.close()
print("affinity-record-live: all passed")
