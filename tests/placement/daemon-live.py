#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The daemon places a process on this machine, as a user would see it.

The real npu-tuned runs with an explicit test policy: processes running threads-target are
placed on node 0 without an accelerator, one CPU for control threads (the main thread and
"ctl-*"), one for compute threads ("work-*"). Asserted from the kernel (each thread's
Cpus_allowed_list in /proc), not from the daemon's log:
  - control threads end on one CPU and compute threads on the other;
  - a compute thread created 1 s later is placed too (its fork and rename events);
  - on SIGTERM the daemon gives every thread its original affinity back.
Needs root in the initial namespaces (the proc connector) and 2 online CPUs: skips (77) and
says which otherwise.
Usage: daemon-live.py NPU_TUNED THREADS_TARGET"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

npu_tuned, target_bin = sys.argv[1], sys.argv[2]


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


if os.geteuid() != 0:
    skip("needs root (the proc connector and placing another process)")
cpus = sorted(os.sched_getaffinity(0))
if len(cpus) < 2:
    skip(f"needs 2 usable CPUs, this machine gives {len(cpus)}")
control_cpu, compute_cpu = cpus[0], cpus[1]
pool = {control_cpu, compute_cpu}


def allowed(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                out = set()
                for part in line.split()[1].split(","):
                    a, _, b = part.partition("-")
                    out.update(range(int(a), int(b or a) + 1))
                return out
    return None


def threads(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                out[int(tid)] = f.read().strip()
        except FileNotFoundError:
            pass
    return out


def want(pid, tid, comm):
    if tid == pid or comm.startswith("ctl-"):
        return {control_cpu}
    if comm.startswith("work-"):
        return {compute_cpu}
    return None


def wait_placed(pid, n_threads, timeout=10.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        th = threads(pid)
        last = {tid: (comm, allowed(pid, tid)) for tid, comm in th.items()}
        if len(th) == n_threads and all(want(pid, t, c) == a for t, (c, a) in last.items()):
            return last
        time.sleep(0.01)
    fail(f"threads of {pid} not placed within {timeout} s: {last}")


with tempfile.TemporaryDirectory() as tmp:
    policy_dir = os.path.join(tmp, "policies")
    state_dir = os.path.join(tmp, "state")
    os.mkdir(policy_dir)
    os.mkdir(state_dir, 0o700)
    policy = {
        "version": 1,
        "comment": "daemon-live: place threads-target on node 0 by role, no host knobs",
        "host": {"irq": {"housekeeping_cpus_per_node": 0, "steer_accelerator_irqs": False}},
        "processes": [{
            "name": "threads-target",
            "match": {"exe": "*/threads-target", "user": "root"},
            "accelerators": "none",
            "unattributed": {"action": "place", "nodes": "0"},
            "threads": {
                "control": {"main_thread": True, "names": ["ctl-*"], "cpus": 1},
                "compute": {"cpus": 1},
            },
            "memory": {"migrate": False},
            "restore_on_stop": True,
        }],
    }
    path = os.path.join(policy_dir, "test.json")
    with open(path, "w") as f:
        json.dump(policy, f)
    os.chmod(path, 0o644)
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([npu_tuned, "--policy-dir", policy_dir, "--state-dir", state_dir, "-v"],
                              stdout=log, stderr=subprocess.STDOUT)
    target = None
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            log.seek(0)
            if "Running:" in log.read():
                break
            if daemon.poll() is not None:
                log.seek(0)
                fail(f"daemon exited {daemon.returncode}: {log.read()}")
            time.sleep(0.02)
        else:
            fail("daemon did not start within 10 s")
        original = allowed(os.getpid(), os.getpid())
        target = subprocess.Popen([target_bin, "--control", "2", "--compute", "2", "--late-ms", "1000",
                                   "--timeout", "60"], stdout=subprocess.PIPE)
        if not target.stdout.readline().startswith(b"ready"):
            fail("threads-target did not start")
        placed = wait_placed(target.pid, 5)
        print(f"ok: placed by role: {placed}")
        time.sleep(1.2)
        placed = wait_placed(target.pid, 6)
        late = [t for t, (c, _) in placed.items() if c == "work-late-0"]
        if not late:
            fail(f"no late thread: {placed}")
        print(f"ok: late thread {late[0]} placed on CPU {compute_cpu}")
        daemon.send_signal(signal.SIGTERM)
        rc = daemon.wait(10)
        if rc != 0:
            fail(f"daemon exited {rc} on SIGTERM")
        for tid, comm in threads(target.pid).items():
            a = allowed(target.pid, tid)
            if a != original:
                fail(f"thread {tid} ({comm}) has {sorted(a)} after stop, want the original {sorted(original)}")
        print(f"ok: all threads back on their original CPUs {sorted(original)}")
    finally:
        if target:
            target.kill()
            target.wait()
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        log.seek(0)
        print("--- daemon log ---")
        print(log.read())

# --dry-run: the same policy, the plan is logged, no thread is touched.
with tempfile.TemporaryDirectory() as tmp:
    policy_dir = os.path.join(tmp, "policies")
    os.mkdir(policy_dir)
    path = os.path.join(policy_dir, "test.json")
    with open(path, "w") as f:
        json.dump(policy, f)
    os.chmod(path, 0o644)
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([npu_tuned, "--policy-dir", policy_dir, "--state-dir", tmp, "--dry-run"],
                              stdout=log, stderr=subprocess.STDOUT)
    target = None
    try:
        deadline = time.monotonic() + 10
        while "Running:" not in open(log.name).read():
            if time.monotonic() > deadline or daemon.poll() is not None:
                fail(f"dry-run daemon did not start: {open(log.name).read()}")
            time.sleep(0.02)
        original = allowed(os.getpid(), os.getpid())
        target = subprocess.Popen([target_bin, "--control", "1", "--compute", "1", "--timeout", "30"],
                                  stdout=subprocess.PIPE)
        target.stdout.readline()
        deadline = time.monotonic() + 5
        while f"Dry run: would place pid {target.pid} " not in open(log.name).read():
            if time.monotonic() > deadline:
                fail(f"dry run: no plan logged for {target.pid}: {open(log.name).read()}")
            time.sleep(0.02)
        time.sleep(0.3)
        for tid, comm in threads(target.pid).items():
            if allowed(target.pid, tid) != original:
                fail(f"dry run changed thread {tid} ({comm}): {sorted(allowed(target.pid, tid))}")
        print(f"ok: --dry-run logged the plan and left every thread on {sorted(original)}")
        daemon.send_signal(signal.SIGTERM)
        if daemon.wait(10) != 0:
            fail("dry-run daemon did not stop cleanly")
    finally:
        if target:
            target.kill()
            target.wait()
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
print("daemon-live: all passed")
