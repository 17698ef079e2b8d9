#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A process in a cgroup v1 cpuset on this machine: the daemon plans inside the cpuset and
follows a rewrite of it.

threads-target runs in a fresh cpuset cgroup below /sys/fs/cgroup/cpuset holding CPU
<second> only; the test policy (livetest.placing_policy) would split control and compute
over both CPUs. Asserted from the kernel (each thread's Cpus_allowed_list) and from the
daemon's own plan (--explain --json):
  - inside the one-CPU cpuset the plan is that CPU for every role (not a CPU the kernel
    would refuse), and the daemon logs no failed pin;
  - the cpuset is rewritten to both CPUs: on the next reconcile tick the daemon plans
    again and the threads are split by role over the two CPUs;
  - it is rewritten back to the one CPU: every thread is on it, planned there;
  - npu-tuned never wrote the cgroup: its files hold what this test wrote.
Needs root, 2 CPUs, and the v1 cpuset hierarchy at /sys/fs/cgroup/cpuset: skips (77) and
says which otherwise.
Usage: cpuset-live.py NPU_TUNED THREADS_TARGET"""
import json
import os
import subprocess
import sys
import tempfile
import time

import livetest
from livetest import affinities, fail, placing_policy, require_root_and_two_cpus, skip

npu_tuned, target_bin = sys.argv[1], sys.argv[2]
control_cpu, compute_cpu = require_root_and_two_cpus()
V1 = "/sys/fs/cgroup/cpuset"
if not os.path.exists(os.path.join(V1, "cpuset.effective_cpus")):
    skip(f"no cgroup v1 cpuset hierarchy at {V1}")
mems = open(os.path.join(V1, "cpuset.effective_mems")).read().strip()


def write(cg, name, value):
    with open(os.path.join(cg, name), "w") as f:
        f.write(value)


def wait_all(pid, want, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while True:
        now = affinities(pid)
        if all(a == want(t, c) for t, (c, a) in now.items()):
            return now
        if time.monotonic() > deadline:
            fail(f"{what}: {now}")
        time.sleep(0.02)


def explain(policy_dir, pid):
    return livetest.explain(npu_tuned, policy_dir, pid)


cg = os.path.join(V1, f"npu-tuned-live-{os.getpid()}")
os.mkdir(cg)
target = daemon = None
try:
    write(cg, "cpuset.mems", mems)
    write(cg, "cpuset.cpus", str(compute_cpu))
    with tempfile.TemporaryDirectory() as tmp:
        policy_dir, state_dir = os.path.join(tmp, "policies"), os.path.join(tmp, "state")
        os.mkdir(policy_dir)
        os.mkdir(state_dir, 0o700)
        policy = placing_policy("cpuset-live: threads-target in a one-CPU v1 cpuset")
        policy["options"] = {"reconcile_interval_ms": 200}
        with open(os.path.join(policy_dir, "test.json"), "w") as f:
            json.dump(policy, f)
        log = open(os.path.join(tmp, "daemon.log"), "w+")
        daemon = subprocess.Popen([npu_tuned, "--policy-dir", policy_dir, "--state-dir", state_dir, "-v"],
                                  stdout=log, stderr=subprocess.STDOUT)
        livetest.wait_running(daemon, log.name)
        target = subprocess.Popen([target_bin, "--control", "2", "--compute", "2", "--timeout", "60"],
                                  stdout=subprocess.PIPE,
                                  preexec_fn=lambda: write(cg, "cgroup.procs", str(os.getpid())))
        if not target.stdout.readline().startswith(b"ready"):
            fail("threads-target did not start")
        deadline = time.monotonic() + 10
        while f"Placed pid {target.pid} " not in open(log.name).read():
            if time.monotonic() > deadline:
                fail(f"pid {target.pid} not placed: {open(log.name).read()}")
            time.sleep(0.02)
        wait_all(target.pid, lambda t, c: {compute_cpu}, "inside the one-CPU cpuset")
        plan = explain(policy_dir, target.pid)
        if (plan["pool"] != str(compute_cpu) or not plan["in_cpuset"] or plan.get("cgroup_cpus") != str(compute_cpu)
                or not any("planned inside them" in r for r in plan["reasons"])):
            fail(f"--explain inside the cpuset: {plan}")
        print(f"ok: planned inside cgroup v1 cpuset {compute_cpu}: pool {plan['pool']}")

        write(cg, "cpuset.cpus", f"{control_cpu},{compute_cpu}")
        placed = livetest.wait_placed(target.pid, 5, control_cpu, compute_cpu, timeout=10)
        print(f"ok: cpuset rewritten to {control_cpu},{compute_cpu}: split by role again: {placed}")
        write(cg, "cpuset.cpus", str(compute_cpu))
        wait_all(target.pid, lambda t, c: {compute_cpu}, "after the cpuset shrank back")
        deadline = time.monotonic() + 10
        while open(log.name).read().count(f"The cgroup cpuset of pid {target.pid} changed") < 2:
            if time.monotonic() > deadline:
                fail(f"the daemon did not notice both rewrites: {open(log.name).read()}")
            time.sleep(0.02)
        print("ok: both rewrites noticed and planned again")
        text = open(log.name).read()
        if "Failed to set the CPU affinity" in text:
            fail(f"a pin failed (planned outside the cpuset?): {text}")
        if open(os.path.join(cg, "cpuset.cpus")).read().strip() != str(compute_cpu):
            fail("the cgroup's cpuset.cpus is not what the test wrote")
        daemon.terminate()
        if daemon.wait(10) != 0:
            fail("daemon did not stop cleanly")
        print("--- daemon log ---")
        print(open(log.name).read())
finally:
    livetest.kill_all(target, daemon)
    for _ in range(50):
        try:
            os.rmdir(cg)
            break
        except OSError:
            time.sleep(0.05)
print("cpuset-live: all passed")
