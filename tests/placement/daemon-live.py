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


from livetest import allowed, fail, placing_policy, require_root_and_two_cpus, threads
import livetest

control_cpu, compute_cpu = require_root_and_two_cpus()


def wait_placed(pid, n_threads, timeout=10.0):
    return livetest.wait_placed(pid, n_threads, control_cpu, compute_cpu, timeout)


policy = placing_policy("daemon-live: place threads-target on node 0 by role, no host knobs")


def start_daemon(tmp, state_dir, *flags):
    """npu-tuned with the test policy in tmp/policies: that directory, the policy file's
    path, its log (tmp/daemon.log, open for reading too) and the daemon."""
    policy_dir = os.path.join(tmp, "policies")
    os.mkdir(policy_dir)
    path = livetest.write_policy(policy_dir, policy)
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([npu_tuned, "--policy-dir", policy_dir, "--state-dir", state_dir, *flags],
                              stdout=log, stderr=subprocess.STDOUT)
    return policy_dir, path, log, daemon


with tempfile.TemporaryDirectory() as tmp:
    state_dir = os.path.join(tmp, "state")
    os.mkdir(state_dir, 0o700)
    policy_dir, path, log, daemon = start_daemon(tmp, state_dir, "-v")
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
        # --explain says the same, with its reasons.
        ex = subprocess.run([npu_tuned, "--policy-dir", policy_dir, "--explain", str(target.pid), "--json"],
                            capture_output=True, text=True, timeout=20)
        if ex.returncode != 0:
            fail(f"--explain exited {ex.returncode}: {ex.stderr}")
        plan = json.loads(ex.stdout)
        if (plan["action"] != "place" or plan["rule"] != "threads-target" or plan["pid"] != target.pid
                or plan["roles"]["control"] != str(control_cpu) or plan["roles"]["compute"] != str(compute_cpu)
                or not plan["reasons"]):
            fail(f"--explain: {plan}")
        print(f"ok: --explain: control {plan['roles']['control']}, compute {plan['roles']['compute']}, "
              f"{len(plan['reasons'])} reasons")
        time.sleep(1.2)
        placed = wait_placed(target.pid, 6)
        late = [t for t, (c, _) in placed.items() if c == "work-late-0"]
        if not late:
            fail(f"no late thread: {placed}")
        print(f"ok: late thread {late[0]} placed on CPU {compute_cpu}")

        # Reload (SIGHUP): a policy where only the main thread is control moves ctl-* to the
        # compute CPU; then a broken file is reported and the previous policy kept.
        changed = placing_policy("daemon-live: reloaded, only the main thread is control")
        del changed["processes"][0]["threads"]["control"]["names"]
        with open(path, "w") as f:
            json.dump(changed, f)
        daemon.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while True:
            now = {t: (c, allowed(target.pid, t)) for t, c in threads(target.pid).items()}
            if all(a == ({control_cpu} if t == target.pid else {compute_cpu}) for t, (c, a) in now.items()):
                break
            if time.monotonic() > deadline:
                fail(f"after SIGHUP with the new policy: {now}")
            time.sleep(0.02)
        print(f"ok: SIGHUP applied the new policy: ctl-* threads now on CPU {compute_cpu}")
        with open(path, "w") as f:
            f.write('{"version": 1, "processes": [ broken')
        daemon.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "Policy reload failed" not in open(log.name).read():
            if time.monotonic() > deadline or daemon.poll() is not None:
                fail(f"a broken policy on SIGHUP: not reported, or the daemon died: {open(log.name).read()}")
            time.sleep(0.02)
        time.sleep(0.3)
        if daemon.poll() is not None:
            fail("the daemon died after a broken policy reload")
        for t, c in threads(target.pid).items():
            if allowed(target.pid, t) != ({control_cpu} if t == target.pid else {compute_cpu}):
                fail(f"a broken reload changed thread {t} ({c}): {allowed(target.pid, t)}")
        print("ok: SIGHUP with a broken policy: reported, previous policy kept, nothing moved")
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
        livetest.kill_all(target, daemon)
        log.seek(0)
        print("--- daemon log ---")
        print(log.read())

# --dry-run --follow: the same policy, the plan is logged, no thread is touched.
with tempfile.TemporaryDirectory() as tmp:
    _, _, log, daemon = start_daemon(tmp, tmp, "--dry-run", "--follow")
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
        livetest.kill_all(target, daemon)
print("daemon-live: all passed")
