#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The metrics textfile costs no wake-up while nothing happens: npu-tuned on a generated
tree (no process watcher) with --metrics-textfile writes the file at the start, then is
not woken once in 3 s (its context switches, /proc/PID/status), and removes the file on
SIGTERM. Also: a file in a directory others may write is refused, with one warning.
Usage: metrics-idle.py NPU_TUNED"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "knobs"))
import knobtest  # noqa: E402

npu_tuned = sys.argv[1]
SOURCE = os.environ.get("NPU_SOURCE_ROOT", os.path.join(here, "..", ".."))


def switches(pid):
    with open(f"/proc/{pid}/status") as f:
        return sum(int(line.split()[1]) for line in f if "ctxt_switches" in line)


tmp = tempfile.mkdtemp(prefix="npu-metrics-idle-")
os.chmod(tmp, 0o755)
try:
    root, policy_dir, state = knobtest.fake_host(tmp)
    prom = os.path.join(tmp, "npu-tuned.prom")
    d = knobtest.Daemon(npu_tuned, root, policy_dir, state, args=("--bus=none", "--metrics-textfile", prom))
    try:
        knobtest.expect(d.wait_ready(), "npu-tuned ready on a fake root with --metrics-textfile")
        end = time.monotonic() + 5
        while not os.path.exists(prom) and time.monotonic() < end:
            time.sleep(0.05)
        knobtest.expect(os.path.exists(prom) and "npu_tuned_build_info{" in open(prom).read()
                        and os.stat(prom).st_mode & 0o777 == 0o644, "the metrics file written at the start, mode 0644")
        time.sleep(1.5)  # the knobs' first write may arm one more
        before = switches(d.proc.pid)
        time.sleep(3)
        after = switches(d.proc.pid)
        knobtest.expect(after == before, f"no wake-up in 3 s of nothing happening ({after - before} context switches)")
        d.kill(signal.SIGTERM)
        knobtest.expect(d.wait() == 0 and not os.path.exists(prom), "SIGTERM: exit 0, the metrics file removed")
    finally:
        d.close()
    # A directory another user may write: refused (a root writer there could be led astray).
    shared = os.path.join(tmp, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o777)
    d = knobtest.Daemon(npu_tuned, root, policy_dir, state,
                        args=("--bus=none", "--metrics-textfile", os.path.join(shared, "npu-tuned.prom")))
    try:
        knobtest.expect(d.wait_ready(), "npu-tuned ready with the metrics in a world-writable directory")
        time.sleep(0.5)
        log = d.output()
        knobtest.expect(not os.listdir(shared) and log.count("writable by no one else") == 1,
                        "nothing written there, one warning: " + log.strip().splitlines()[-1])
    finally:
        d.close()
finally:
    shutil.rmtree(tmp, ignore_errors=True)
