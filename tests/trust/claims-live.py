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
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "placement"))
from livetest import allowed, fail, placing_policy, require_root_and_two_cpus, threads, wait_placed  # noqa: E402

npu_tuned, target_bin = sys.argv[1], sys.argv[2]
control_cpu, compute_cpu = require_root_and_two_cpus()
if shutil.which("setpriv") is None:
    print("SKIP: needs setpriv (util-linux) to run the fakes as nobody")
    sys.exit(77)

policy = placing_policy("claims-live: a rule any user can satisfy", user=None)

with tempfile.TemporaryDirectory() as tmp:
    os.chmod(tmp, 0o755)
    bindir = os.path.join(tmp, "bin")
    os.mkdir(bindir, 0o755)
    target = os.path.join(bindir, "threads-target")
    shutil.copy(target_bin, target)
    os.chmod(target, 0o755)
    evil = os.path.join(bindir, "srv\x1b[2Jx")  # comm "srv\x1b[2Jx"
    os.symlink(target, evil)
    policy_dir = os.path.join(tmp, "policies")
    state_dir = os.path.join(tmp, "state")
    os.mkdir(policy_dir)
    os.mkdir(state_dir, 0o700)
    with open(os.path.join(policy_dir, "test.json"), "w") as f:
        json.dump(policy, f)
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    procs = []
    daemon = subprocess.Popen([npu_tuned, "--policy-dir", policy_dir, "--state-dir", state_dir, "-v"],
                              stdout=log, stderr=subprocess.STDOUT)

    def daemon_log():
        log.seek(0)
        return log.read()

    try:
        deadline = time.monotonic() + 10
        while "Running:" not in daemon_log():
            if daemon.poll() is not None or time.monotonic() > deadline:
                fail(f"daemon did not start: {daemon_log()}")
            time.sleep(0.02)
        before = allowed(os.getpid(), os.getpid())
        fakes = []
        for _ in range(3):
            p = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", target,
                                  "--control", "1", "--compute", "1", "--timeout", "60"], stdout=subprocess.PIPE)
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
        ex = subprocess.run([npu_tuned, "--policy-dir", policy_dir, "--explain", str(real.pid)],
                            capture_output=True, text=True, timeout=30)
        if "\x1b" in ex.stdout or "srv\\x1b[2Jx" not in ex.stdout:
            fail(f"--explain does not escape the comm: {ex.stdout!r}")
        print("ok: --explain escapes a comm with ESC in it")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        daemon.terminate()
        daemon.wait(timeout=10)
print("claims-live: all passed")
