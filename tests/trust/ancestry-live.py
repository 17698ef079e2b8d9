#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The ancestry walk must cost the daemon little per process (docs/trust.md, "Bounded work").

The real npu-tuned runs the shipped default policy. As `nobody`, a program named python3
with 840 KiB of environment that holds no NAME=value (so it counts as wiped) forks a chain
of 16 ancestors; the deepest forks 50 children that each rename themselves once. Each
rename is a process the daemon evaluates with its own environment wiped, so it looks up
the parent chain for one it could have inherited. The daemon's CPU time (utime + stime of
/proc/PID/stat) over the renames, per child, must stay under 2 ms. Before: every walk read
all 16 environments, 22.8 ms a child on the machine the attack was found on.
Needs root and the proc connector: skips (77) and says which otherwise.
Usage: ancestry-live.py NPU_TUNED NPT_ANCESTRY"""
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trustlive import Daemon, fail, install, require_root, start_as_nobody  # noqa: E402

npu_tuned, ancestry = sys.argv[1], sys.argv[2]
DEPTH, CHILDREN = 16, 50
require_root()

with tempfile.TemporaryDirectory() as tmp:
    fake = install(tmp, ancestry, "python3")
    daemon = Daemon(npu_tuned, tmp, "10-default.json")
    proc = None
    try:
        proc = start_as_nobody([fake, str(DEPTH), str(CHILDREN)], "the chain", start_new_session=True)
        time.sleep(0.5)
        before = daemon.cpu_s()
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        if not proc.stdout.readline().startswith(b"done"):
            fail("the children were not forked")
        # Until the daemon has handled every rename: its CPU time still for half a second.
        last, deadline = daemon.cpu_s(), time.monotonic() + 30
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = daemon.cpu_s()
            if now == last:
                break
            last = now
        per_child_ms = (last - before) * 1000 / CHILDREN
        print(f"daemon CPU per renaming child under {DEPTH} ancestors of 840 KiB: {per_child_ms:.2f} ms")
        if per_child_ms >= 2.0:
            fail(f"the ancestry walk costs {per_child_ms:.2f} ms of daemon CPU per child (limit 2 ms)\n{daemon.log()[-3000:]}")
    finally:
        if proc:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        daemon.stop()
print("ancestry-live: PASS")
