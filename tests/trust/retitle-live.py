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
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trustlive import Daemon, fail, install, require_root, start_as_nobody  # noqa: E402

npu_tuned, retitle = sys.argv[1], sys.argv[2]
RENAMES = int(os.environ.get("NPT_RENAMES", "1000"))
BYTES = 32 * 1024
require_root()

with tempfile.TemporaryDirectory() as tmp:
    fake = install(tmp, retitle, "python3")
    daemon = Daemon(npu_tuned, tmp, "10-default.json")
    proc = None
    try:
        proc = start_as_nobody([fake, str(RENAMES), str(BYTES)], "the retitling process")
        time.sleep(0.5)
        before = daemon.cpu_s()
        t0 = time.monotonic()
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        if not proc.stdout.readline().startswith(b"renamed"):
            fail("the renames did not finish")
        # Let the daemon drain what is queued: until its CPU time stops moving (or it has
        # clearly failed).
        last, still = daemon.cpu_s(), 0
        while still < 3 and last - before < 5.0:
            time.sleep(0.2)
            now = daemon.cpu_s()
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
        daemon.stop()
