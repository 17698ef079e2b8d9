#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A hostile command line renamed over and over must cost the daemon little
(docs/trust.md, "Bounded work").

The real npu-tuned runs the shipped default policy. As `nobody`, a program named python3
whose 32 KiB command line starts like a MindIE backend's (so the MindIE rule's command
line regex runs over it) renames its main thread 1,000 times; every rename is a COMM
event the watcher re-evaluates. The daemon's CPU time (utime + stime of /proc/PID/stat)
over the renames must stay under 1 s. Before: 60-90 ms of regex per rename.
Needs root and the proc connector: skips (77) and says which otherwise.
Usage: retitle-live.py NPU_TUNED NPT_RETITLE"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

npu_tuned, retitle = sys.argv[1], sys.argv[2]
RENAMES = int(os.environ.get("NPT_RENAMES", "1000"))
BYTES = 32 * 1024
if os.geteuid() != 0:
    print("SKIP: needs root (the proc connector)")
    sys.exit(77)
src = os.environ.get("NPU_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TICK = os.sysconf("SC_CLK_TCK")


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


with tempfile.TemporaryDirectory() as tmp:
    os.chmod(tmp, 0o755)
    bindir = os.path.join(tmp, "bin")
    os.mkdir(bindir, 0o755)
    fake = os.path.join(bindir, "python3")
    shutil.copy(retitle, fake)
    os.chmod(fake, 0o755)
    policy_dir = os.path.join(tmp, "policies")
    os.mkdir(policy_dir)
    shutil.copy(os.path.join(src, "policies", "default.json"), policy_dir)
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([npu_tuned, "--policy-dir", policy_dir, "--state-dir", os.path.join(tmp, "state")],
                              stdout=log, stderr=subprocess.STDOUT)
    proc = None
    try:
        deadline = time.monotonic() + 10
        while True:
            log.seek(0)
            if "Running:" in log.read():
                break
            if daemon.poll() is not None or time.monotonic() > deadline:
                fail("daemon did not start")
            time.sleep(0.02)
        proc = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", fake, str(RENAMES),
                                 str(BYTES)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if not proc.stdout.readline().startswith(b"ready"):
            fail("the retitling process did not start")
        time.sleep(0.5)
        before = cpu_s(daemon.pid)
        t0 = time.monotonic()
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        if not proc.stdout.readline().startswith(b"renamed"):
            fail("the renames did not finish")
        # Let the daemon drain what is queued (and any deferred evaluation): until its CPU
        # time stops moving (or it has clearly failed).
        last, still = cpu_s(daemon.pid), 0
        while still < 3 and last - before < 5.0:
            time.sleep(0.2)
            now = cpu_s(daemon.pid)
            still = still + 1 if now == last else 0
            last = now
        spent = last - before
        print(f"{'ok' if spent < 1.0 else 'FAIL'}: {RENAMES} renames of a {BYTES // 1024} KiB hostile command line "
              f"cost the daemon {spent:.2f} s of CPU ({time.monotonic() - t0:.1f} s wall; limit 1 s)")
        if spent >= 1.0:
            sys.exit(1)
    finally:
        if proc:
            proc.kill()
            proc.wait()
        daemon.terminate()
        daemon.wait(timeout=20)
