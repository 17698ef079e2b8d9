#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A caller sees of a process only what /proc would show it (docs/trust.md), on the live
daemon and a private system bus, with /proc mounted hidepid=invisible for the daemon (a
proc instance of its own, in a mount namespace of its own: the host's /proc is not
touched). threads-target runs twice: as root, and as nobody (a rule that names no user).
  - nobody's ListProcesses() and npu-tunectl processes: its own process, not root's;
  - root's: both;
  - Explain() of root's process as nobody: AccessDenied, "not yours"; of its own: the JSON;
  - without hidepid the same daemon lists root's process to nobody (what /proc shows).
Needs root, the proc connector, unshare(1) and 2 CPUs (skips, 77, otherwise); it pins
real processes: not in parallel with other live tests.
Usage: bus-visibility.py NPU_TUNED NPU_TUNECTL THREADS_TARGET"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "placement"))
import buslib  # noqa: E402
import livetest  # noqa: E402
from buslib import expect, fail  # noqa: E402

npu_tuned, tunectl, target_bin = (os.path.abspath(a) for a in sys.argv[1:4])
buslib.require_tools()
livetest.require_root_and_two_cpus()
if not shutil.which("unshare"):
    buslib.skip("unshare(1) is not installed (util-linux)")


def listed(bus, run_as=None):
    procs = json.loads(bus.busctl("--json=short", "call", buslib.NAME, buslib.PATH, buslib.IFACE, "ListProcesses",
                                  run_as=run_as).stdout)["data"][0]
    return sorted(p[0] for p in procs)


HIDEPID = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
           'mount -t proc -o hidepid=invisible proc /proc && exec "$@"', "hidepid"]

tmp = tempfile.mkdtemp(prefix="npu-bus-visibility-")
os.chmod(tmp, 0o755)  # nobody runs threads-target from here
bus = buslib.Bus()
procs, daemon = [], None
try:
    policy_dir = os.path.join(tmp, "policies")
    os.mkdir(policy_dir)
    path = os.path.join(policy_dir, "test.json")
    with open(path, "w") as f:
        json.dump(livetest.placing_policy("bus-visibility: any user's threads-target", user=None), f)
    os.chmod(path, 0o644)
    target = os.path.join(tmp, "threads-target")
    shutil.copy(target_bin, target)
    os.chmod(target, 0o755)
    for hidepid in (True, False):
        state_dir = os.path.join(tmp, f"state-{hidepid}")
        os.mkdir(state_dir, 0o700)
        log_path = os.path.join(tmp, f"daemon-{hidepid}.log")
        daemon = buslib.start_daemon(bus, npu_tuned, policy_dir, state_dir, log_path, HIDEPID if hidepid else ())
        mine = subprocess.Popen([target, "--control", "1", "--compute", "1", "--timeout", "60"], stdout=subprocess.PIPE)
        theirs = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", target,
                                   "--control", "1", "--compute", "1", "--timeout", "60"], stdout=subprocess.PIPE)
        procs += [mine, theirs]
        for p in (mine, theirs):
            if not p.stdout.readline().startswith(b"ready"):
                fail("a threads-target did not start")
        deadline = time.monotonic() + 5
        while listed(bus) != sorted([mine.pid, theirs.pid]):
            if time.monotonic() > deadline:
                fail(f"both processes are not managed: {listed(bus)}\n{open(log_path).read()}")
            time.sleep(0.05)
        how = "hidepid=invisible" if hidepid else "no hidepid"
        expect(True, f"{how}: root's ListProcesses(): both, {mine.pid} (root) and {theirs.pid} (nobody)")
        seen = listed(bus, run_as="nobody")
        if hidepid:
            expect(seen == [theirs.pid], f"{how}: nobody's ListProcesses(): its own {theirs.pid} only: {seen}")
            out = bus.run([tunectl, "processes"], run_as="nobody").stdout
            expect(str(theirs.pid) in out and str(mine.pid) not in out,
                   f"{how}: nobody's npu-tunectl processes lists its own process only")
        else:
            expect(seen == sorted([mine.pid, theirs.pid]), f"{how}: nobody's ListProcesses(): both, as /proc shows")
        err, msg = bus.call_error("Explain", f"uint32:{mine.pid}", run_as="nobody")
        expect(err == "org.freedesktop.DBus.Error.AccessDenied" and "not yours" in msg,
               f"{how}: Explain() of root's process as nobody: {err}")
        ex = json.loads(bus.run([tunectl, "--json", "explain", str(theirs.pid)], run_as="nobody").stdout)
        expect(ex["pid"] == theirs.pid and ex["managed"], f"{how}: Explain() of its own process as nobody: the JSON")
        for p in (mine, theirs):
            p.kill()
            p.wait()
        daemon.terminate()
        expect(daemon.wait(10) == 0, f"{how}: npu-tuned exited 0 on SIGTERM")
        daemon = None
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    if daemon and daemon.poll() is None:
        daemon.kill()
        daemon.wait()
    bus.close()
    shutil.rmtree(tmp, ignore_errors=True)
print("PASS")
