#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Fake claims, live (docs/trust.md): processes another user starts that look exactly like
the real server to the rule must not take its CPUs.

The real npu-tuned runs a policy whose rule matches threads-target by executable alone
(any user can run it), wanting both CPUs of a 2-CPU machine (control 1 + compute 1).
Three fakes run as `nobody` and start first; then the real server starts as root. Before
the trust model the first two arrivals took a CPU each and the real one was refused; now
the fakes' claims are not verified (nobody is not root, the rule names no user, there is
no device to check): the real server gets both CPUs by role, the fakes keep the affinity
they had. Asserted from the kernel (each thread's Cpus_allowed_list).

Also: --explain prints the real server's name escaped when it holds a control character
(it runs through a symlink whose name has an ESC in it, so that is its comm).
Needs root, the proc connector and 2 CPUs: skips (77) and says which otherwise.
Usage: claims-live.py NPU_TUNED THREADS_TARGET"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "placement"))
from livetest import allowed, placing_policy, require_root_and_two_cpus, threads, wait_placed  # noqa: E402
from trustlive import AS_NOBODY, Daemon, fail, install, require_root  # noqa: E402

npu_tuned, target_bin = sys.argv[1], sys.argv[2]
control_cpu, compute_cpu = require_root_and_two_cpus()
require_root()

policy = placing_policy("claims-live: a rule any user can satisfy", user=None)

with tempfile.TemporaryDirectory() as tmp:
    target = install(tmp, target_bin, "threads-target")
    evil = os.path.join(os.path.dirname(target), "srv\x1b[2Jx")  # comm "srv\x1b[2Jx"
    os.symlink(target, evil)
    procs = []
    daemon = Daemon(npu_tuned, tmp, policy)
    daemon_log = daemon.log
    try:
        before = allowed(os.getpid(), os.getpid())
        fakes = []
        for _ in range(3):
            p = subprocess.Popen(AS_NOBODY + [target, "--control", "1", "--compute", "1", "--timeout", "60"],
                                 stdout=subprocess.PIPE)
            procs.append(p)
            if not p.stdout.readline().startswith(b"ready"):
                fail("a fake did not start")
            fakes.append(p.pid)
        time.sleep(0.3)  # the daemon has seen them (and, before the fix, placed them)
        real = subprocess.Popen([evil, "--control", "1", "--compute", "1", "--timeout", "60"], stdout=subprocess.PIPE)
        procs.append(real)
        if not real.stdout.readline().startswith(b"ready"):
            fail("the real server did not start")
        placed = wait_placed(real.pid, 3, control_cpu, compute_cpu, timeout=5)
        print(f"ok: the real server (root) got both CPUs by role with 3 fakes of nobody there first: {placed}")
        # The daemon gives a fake that was placed while alone its affinity back right after
        # it pins the real server: allow it a moment.
        deadline = time.monotonic() + 2
        while True:
            pinned = [(pid, tid, sorted(allowed(pid, tid))) for pid in fakes for tid in threads(pid)
                      if allowed(pid, tid) != before]
            if not pinned:
                break
            if time.monotonic() > deadline:
                fail(f"fakes still pinned: {pinned}\n{daemon_log()}")
            time.sleep(0.01)
        print(f"ok: the fakes keep their affinity {sorted(before)}")
        if "its claim is not verified" not in daemon_log():
            fail("the daemon does not say why the fakes were not placed")
        ex = subprocess.run([npu_tuned, "--policy-dir", daemon.policy_dir, "--explain", str(real.pid)],
                            capture_output=True, text=True, timeout=30)
        if "\x1b" in ex.stdout or "srv\\x1b[2Jx" not in ex.stdout:
            fail(f"--explain does not escape the comm: {ex.stdout!r}")
        print("ok: --explain escapes a comm with ESC in it")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        daemon.stop()
print("claims-live: all passed")
