#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""After the proc connector's socket overflows, every process is still placed, every thread
of it on its CPU, as the kernel says.

The real npu-tuned (the default receive buffer) is stopped (SIGSTOP) while a first wave of
threads-target processes (main thread, ctl-0, work-0, work-1) starts: more events than the
buffer holds, so the socket overflows. Then it continues and a second wave starts at once,
while it drains the socket and rescans /proc. Asserted from each thread's
Cpus_allowed_list: every thread of both waves ends on its role's CPU. After an overflow
the kernel drops every event for the socket, without a word, until its queue has been read
empty; a rescan made before that missed the second wave for good.
Needs root in the initial namespaces and 2 online CPUs: skips (77) and says which otherwise.
Usage: overrun-burst-live.py NPU_TUNED THREADS_TARGET NPT_SPAWN"""
import os
import signal
import subprocess
import sys
import tempfile
import time

from livetest import affinities, fail, placing_policy, require_root_and_two_cpus, want
import livetest

npu_tuned, target_bin, spawn_bin = sys.argv[1], sys.argv[2], sys.argv[3]
control_cpu, compute_cpu = require_root_and_two_cpus()
WAVE1, WAVE2, THREADS = 1400, 300, 4

policy = placing_policy("overrun-burst-live: threads-target by role on two CPUs")
policy["options"] = {"max_managed_processes": 4096}
# Shared CPUs: each process's plan stands alone, as thousands of them do not fit one each.
policy["processes"][0]["unattributed"] = {"action": "place", "cpus": f"{control_cpu},{compute_cpu}"}


def spawn(n, interval_us, pidfile):
    """npt-spawn starting n threads-target in its own session; returns it once all have
    started, and their pids."""
    p = subprocess.Popen([spawn_bin, str(n), str(interval_us), pidfile, target_bin, "--control", "1",
                          "--compute", "2", "--timeout", "300"], stdout=subprocess.PIPE,
                         start_new_session=True)
    spawners.append(p)
    for line in p.stdout:
        if line.startswith(b"spawned"):
            break
    else:
        fail(f"npt-spawn {n} ended early")
    with open(pidfile) as f:
        pids = [int(x) for x in f.read().split()]
    if len(pids) != n:
        fail(f"npt-spawn started {len(pids)} of {n}")
    return pids


def unplaced(pids):
    """The pids (of pids) not all of whose THREADS threads are on their role's CPU yet."""
    out = []
    for pid in pids:
        try:
            a = affinities(pid)
        except FileNotFoundError:
            fail(f"process {pid} died")
        if len(a) != THREADS or any(want(pid, t, c, control_cpu, compute_cpu) != s for t, (c, s) in a.items()):
            out.append(pid)
    return out


spawners = []
daemon = None
with tempfile.TemporaryDirectory() as tmp:
    state_dir = os.path.join(tmp, "state")
    os.mkdir(state_dir, 0o700)
    policy_dir = os.path.join(tmp, "policies")
    os.mkdir(policy_dir)
    livetest.write_policy(policy_dir, policy)
    log_path = os.path.join(tmp, "daemon.log")
    log = open(log_path, "w")
    try:
        daemon = subprocess.Popen([npu_tuned, "--bus=none", "--policy-dir", policy_dir, "--state-dir", state_dir],
                                  stdout=log, stderr=subprocess.STDOUT)
        livetest.wait_running(daemon, log_path)
        os.kill(daemon.pid, signal.SIGSTOP)
        wave1 = spawn(WAVE1, 0, os.path.join(tmp, "wave1"))
        time.sleep(1)  # the threads' own events too
        os.kill(daemon.pid, signal.SIGCONT)
        t0 = time.monotonic()
        wave2 = spawn(WAVE2, 300, os.path.join(tmp, "wave2"))
        left = wave1 + wave2
        deadline = t0 + 60
        while left:
            left = unplaced(left)
            if left and time.monotonic() > deadline:
                fail(f"{len(left)} processes not placed 60 s after the daemon continued "
                     f"({len([p for p in left if p in wave2])} of them of the second wave), e.g. "
                     f"{left[0]}: {affinities(left[0])}")
            time.sleep(0.2)
        with open(log_path) as f:
            lost = f.read().count("Process events were lost")
        if lost == 0:
            fail("no overrun happened: the test proves nothing on this machine")
        print(f"ok: {WAVE1} + {WAVE2} processes x {THREADS} threads all placed "
              f"{time.monotonic() - t0:.1f} s after the daemon continued, {lost} overrun(s)")
        daemon.send_signal(signal.SIGTERM)
        if daemon.wait(60) != 0:
            fail(f"daemon exited {daemon.returncode} on SIGTERM")
    finally:
        for p in spawners:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        if daemon and daemon.poll() is None:
            os.kill(daemon.pid, signal.SIGCONT)
        livetest.kill_all(daemon)
        log.close()
        with open(log_path) as f:
            tail = f.read().splitlines()
        print("--- daemon log (last 20 lines) ---")
        print("\n".join(tail[-20:]))
