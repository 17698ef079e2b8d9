#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Engines that bind themselves, and npu-tuned's "binding" modes, on this machine.

threads-target --self-bind-ms 300 binds every thread itself 300 ms after start, as
vllm-ascend does at worker start: main and ctl-* on its last CPU, work-* on its first (the
opposite of the test policy's plan: control on the first CPU, compute on the second).
One daemon, one rule per mode (matched by --tag). Asserted from each thread's
Cpus_allowed_list and from --explain:
  - "auto", self-binding worker: it keeps exactly the masks it set (after the watch window
    and several reconcile ticks); the daemon says it steps back; explain: bound by the engine;
  - "auto", SGLANG_NUMA_BIND_V2=1 in the environment, no self-binding: never narrowed;
    explain names the variable;
  - "auto", a worker that binds nothing: pinned by role after the watch window;
  - "daemon" (reassert_affinity), self-binding worker: placed as today, by role.
The workers run one at a time (an engine-bound process still holds its planned share of
the node, for its memory and the report). Needs root and 2 CPUs: skips (77) and says which otherwise.
Usage: binding-live.py NPU_TUNED THREADS_TARGET"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import time

import livetest
from livetest import affinities, fail, placing_policy, require_root_and_two_cpus

npu_tuned, target_bin = sys.argv[1], sys.argv[2]
first, last = require_root_and_two_cpus()
original = set(os.sched_getaffinity(0))

policy = placing_policy("binding-live: one rule per binding mode")
base = policy["processes"][0]
policy["options"] = {"reconcile_interval_ms": 200}
policy["processes"] = []
for tag, mode, extra in [(1, "auto", {}), (2, "daemon", {"reassert_affinity": True})]:
    rule = copy.deepcopy(base)
    rule.update({"name": f"tag{tag}-{mode}", "binding": mode, "binding_watch_ms": 1500, **extra})
    rule["match"]["cmdline"] = f" --tag {tag}( |$)"
    policy["processes"].append(rule)


def self_bound(pid, tid, comm):
    return {first} if comm.startswith("work") else {last}


def hold(pid, want, what, seconds):
    """Every thread has want(...) for the whole time (after it first does)."""
    deadline = time.monotonic() + 10
    while not all(a == want(pid, t, c) for t, (c, a) in affinities(pid).items()):
        if time.monotonic() > deadline:
            fail(f"{what}: {affinities(pid)}")
        time.sleep(0.02)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        now = affinities(pid)
        if not all(a == want(pid, t, c) for t, (c, a) in now.items()):
            fail(f"{what}: changed to {now}")
        time.sleep(0.05)
    return affinities(pid)


def explain(policy_dir, pid):
    return livetest.explain(npu_tuned, policy_dir, pid)


with tempfile.TemporaryDirectory() as tmp:
    policy_dir, state_dir = os.path.join(tmp, "policies"), os.path.join(tmp, "state")
    os.mkdir(policy_dir)
    os.mkdir(state_dir, 0o700)
    with open(os.path.join(policy_dir, "test.json"), "w") as f:
        json.dump(policy, f)
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([npu_tuned, "--policy-dir", policy_dir, "--state-dir", state_dir, "-v"],
                              stdout=log, stderr=subprocess.STDOUT)
    targets = []

    def start(tag, *args, env=None):
        # One worker at a time: an engine-bound process still holds its planned share.
        for old in targets:
            old.kill()
            old.wait()
        t = subprocess.Popen([target_bin, "--control", "2", "--compute", "2", "--timeout", "60", *args, "--tag", str(tag)],
                             stdout=subprocess.PIPE, env=env)
        targets.append(t)
        if not t.stdout.readline().startswith(b"ready"):
            fail("threads-target did not start")
        return t

    try:
        livetest.wait_running(daemon, log.name)

        # auto + a worker that binds itself right after start
        t = start(1, "--self-bind-ms", "300")
        if t.stdout.readline().strip() != b"bound":
            fail("threads-target did not bind itself")
        masks = hold(t.pid, self_bound, "auto: the engine's own masks", 2.5)
        print(f"ok: auto: the worker keeps exactly the masks it set: {masks}")
        if f"pid {t.pid} binds its own threads" not in open(log.name).read():
            fail(f"auto: the daemon did not say it steps back: {open(log.name).read()}")
        plan = explain(policy_dir, t.pid)
        if plan["binding"] != "engine" or "bound by the engine" not in plan.get("engine_report", ""):
            fail(f"auto: --explain: {plan}")
        text = subprocess.run([npu_tuned, "--policy-dir", policy_dir, "--explain", str(t.pid)],
                              capture_output=True, text=True, timeout=20).stdout
        if "binding:       bound by the engine" not in text:
            fail(f"auto: --explain text: {text}")
        print(f"ok: auto: explain: {plan['binding_reason']}; {plan['engine_report']}")

        # auto + the engine's switch in the environment: never narrowed
        t = start(1, env=dict(os.environ, SGLANG_NUMA_BIND_V2="1"))
        hold(t.pid, lambda p, tid, c: original, "auto + SGLANG_NUMA_BIND_V2=1: untouched", 2.5)
        plan = explain(policy_dir, t.pid)
        if plan["binding"] != "engine" or "SGLANG_NUMA_BIND_V2=1" not in plan["binding_reason"]:
            fail(f"auto + switch: --explain: {plan}")
        print(f"ok: auto + switch: never narrowed; explain: {plan['binding_reason']}")

        # auto + a worker that binds nothing: pinned after the watch window
        t = start(1)
        livetest.wait_placed(t.pid, 5, first, last, timeout=10)
        if f"pid {t.pid} did not bind its threads within 1500 ms" not in open(log.name).read():
            fail(f"auto, no self-binding: not said: {open(log.name).read()}")
        print("ok: auto: a worker that binds nothing is pinned by role after the watch window")

        # daemon mode + the self-binding worker: placed as today (reassert)
        t = start(2, "--self-bind-ms", "300")
        t.stdout.readline()
        time.sleep(0.5)
        placed = livetest.wait_placed(t.pid, 5, first, last, timeout=10)
        print(f"ok: daemon: the self-binding worker is placed as today: {placed}")
        if explain(policy_dir, t.pid)["binding"] != "daemon":
            fail("daemon: --explain does not say npu-tuned binds")
        daemon.terminate()
        if daemon.wait(10) != 0:
            fail("daemon did not stop cleanly")
    finally:
        for t in targets:
            t.kill()
            t.wait()
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        print("--- daemon log ---")
        print(open(log.name).read())
print("binding-live: all passed")
