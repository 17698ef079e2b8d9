#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The live daemon on a private system bus (the project's bus policy): it places
threads-target on this machine by role (tests/placement/livetest.py's policy), and the
bus reports what it applied. Asserted against the kernel (each thread's
Cpus_allowed_list), not only against the daemon:
  - ProcessPlaced is signalled for the process when it starts;
  - ListProcesses(), ManagedProcesses, Stats and npu-tunectl processes show it, with the
    CPUs its threads really have;
  - npu-tuned --explain PID and npu-tunectl explain ask the daemon (source "daemon") and
    report the CPUs the threads really have;
  - Explain() of no process: NoSuchProcess; of root's process as nobody: AccessDenied,
    not yours, whether it is managed or not;
  - Reload() with the same rules: PolicyReloaded(true), no ProcessReleased, the same CPUs;
  - Release() as nobody: AccessDenied, nothing moves; as root: every thread back on its
    original CPUs, ProcessReleased, and neither a Rescan() nor a restart of the daemon
    takes it back;
  - a process whose comm is not UTF-8 and holds terminal escapes: ListProcesses() and
    Explain() still answer every caller, with the comm escaped, and npu-tunectl's table
    sends no control character to the terminal;
  - SIGTERM: exit 0.
Needs root in the initial namespaces and 2 CPUs (skips, 77, otherwise). It pins real
processes: not in parallel with other live tests.
Usage: bus-live.py NPU_TUNED NPU_TUNECTL THREADS_TARGET"""
import json
import os
import shutil
import signal
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

npu_tuned, tunectl, target_bin = sys.argv[1:4]
buslib.require_tools()
control_cpu, compute_cpu = livetest.require_root_and_two_cpus()


tmp = tempfile.mkdtemp(prefix="npu-bus-live-")
bus = buslib.Bus()
daemon = target = None
log_path = os.path.join(tmp, "daemon.log")
try:
    policy_dir, state_dir = os.path.join(tmp, "policies"), os.path.join(tmp, "state")
    os.mkdir(policy_dir)
    os.mkdir(state_dir, 0o700)
    path = livetest.write_policy(policy_dir, livetest.placing_policy("bus-live: threads-target by role"))
    daemon = buslib.start_daemon(bus, npu_tuned, policy_dir, state_dir, log_path)
    mon = bus.monitor()
    original = livetest.allowed(os.getpid(), os.getpid())
    target = subprocess.Popen([target_bin, "--control", "2", "--compute", "2", "--timeout", "60"],
                              stdout=subprocess.PIPE)
    if not target.stdout.readline().startswith(b"ready"):
        fail("threads-target did not start")
    placed = livetest.wait_placed(target.pid, 5, control_cpu, compute_cpu)
    expect(True, f"threads-target {target.pid} placed by role (kernel): {sorted((c, sorted(a)) for c, a in placed.values())}")
    mon.wait_for(rf"member=ProcessPlaced\s+uint32 {target.pid}\s+uint64 \d+\s+string \"threads-target\"")
    expect(True, f"ProcessPlaced({target.pid}, ..., \"threads-target\", ...) signalled")

    procs = json.loads(bus.busctl("--json=short", "call", buslib.NAME, buslib.PATH, buslib.IFACE,
                                  "ListProcesses").stdout)["data"][0]
    mine = [p for p in procs if p[0] == target.pid]
    expect(len(mine) == 1 and mine[0][3] == "threads-target"
           and dict(mine[0][6]) == {"control": str(control_cpu), "compute": str(compute_cpu),
                                    "other": f"{min(control_cpu, compute_cpu)}-{max(control_cpu, compute_cpu)}"},
           f"ListProcesses(): {mine}")
    expect(bus.get("ManagedProcesses") == "u 1", "ManagedProcesses is 1")
    stats = bus.get_json("Stats")
    expect(stats[0] > 0 and stats[3] >= 1, f"Stats: events {stats[0]}, placements {stats[3]}")
    reactions = {k[0]: k for k in bus.get_json("ReactionTimes")}
    ex = reactions.get("exec")
    limits = [b[0] for b in ex[5]] if ex else []
    expect(set(reactions) == {"exec", "thread", "rename"} and ex and ex[1] >= 1 and 0 < ex[2] <= ex[3] <= ex[4]
           and ex[4] < 10 * 1000 ** 3 and sum(b[1] for b in ex[5]) == ex[1] and limits == sorted(limits)
           and all(b[1] > 0 for b in ex[5]) and ex[4] < limits[-1] <= ex[4] + ex[4] // 8 + 1,
           f"ReactionTimes: the placement's exec reaction is counted, p50 <= p99 <= max < 10 s, the non-empty "
           f"buckets add up to the count, the last one's limit within 1/8 above the max: {reactions}")
    handling = {k[0]: k for k in bus.get_json("HandlingTimes")}
    expect(set(handling) == set(reactions)
           and all(handling[k][1] == reactions[k][1] and handling[k][4] <= reactions[k][4] for k in reactions)
           and sum(b[1] for b in handling["exec"][5]) == ex[1],
           f"HandlingTimes: one per reaction, each at most its reaction's largest: {handling}")
    p = bus.run([tunectl, "processes"], run_as="nobody")
    lines = p.stdout.splitlines()
    expect(lines[0].split()[:3] == ["PID", "COMM", "RULE"]
           and any(line.split()[0] == str(target.pid) and line.split()[5:7] == [str(control_cpu), str(compute_cpu)]
                   for line in lines[1:]),
           "npu-tunectl processes (as nobody): the process, its control and compute CPUs")
    print(p.stdout)
    print(bus.run([tunectl, "status"]).stdout)

    for cmd in ([tunectl, "--json", "explain", str(target.pid)],
                [npu_tuned, "--policy-dir", policy_dir, "--explain", str(target.pid), "--json"]):
        ex = json.loads(bus.run(cmd).stdout)
        expect(ex["source"] == "daemon" and ex["managed"] and ex["rule"] == "threads-target"
               and ex["roles"]["control"] == str(control_cpu) and ex["roles"]["compute"] == str(compute_cpu)
               and ex["reasons"], f"{os.path.basename(cmd[0])} explain: the daemon's placement")
    text = bus.run([tunectl, "explain", str(target.pid)]).stdout
    expect("as the running npu-tuned placed it" in text, "npu-tunectl explain (text) says it is the daemon's")
    err, msg = bus.call_error("Explain", "uint32:4194303")
    expect(err == "org.nputuned1.Error.NoSuchProcess", f"Explain(no such process): {err}")
    # Another user's process: nothing of it that /proc would not show the caller, not even
    # whether a rule matches it (managed here, or not: the same answer).
    for pid in (target.pid, os.getpid()):
        err, msg = bus.call_error("Explain", f"uint32:{pid}", run_as="nobody")
        expect(err == "org.freedesktop.DBus.Error.AccessDenied" and "not yours" in msg and "threads-target" not in msg,
               f"Explain() of root's process {pid} as nobody: not yours ({err})")
    err, msg = bus.call_error("Release", f"uint32:{os.getpid()}")
    expect(err == "org.nputuned1.Error.NotManaged", f"Release(an unmanaged process): {err}")

    # A reload that changes no rule moves nothing: no ProcessReleased, the same CPUs.
    with open(path, "w") as f:
        json.dump(livetest.placing_policy("bus-live: reloaded, same rules"), f)
    bus.run([tunectl, "reload"])
    mon.wait_for(r'member=PolicyReloaded.*?boolean true')
    time.sleep(0.3)
    expect(mon.text().count("member=ProcessPlaced") == 1 and "member=ProcessReleased" not in mon.text(),
           "Reload() with the same rules: PolicyReloaded(true), the process is not released and placed again")
    livetest.wait_placed(target.pid, 5, control_cpu, compute_cpu, timeout=1)

    err, msg = bus.call_error("Release", f"uint32:{target.pid}", run_as="nobody")
    expect(err == "org.freedesktop.DBus.Error.AccessDenied", f"Release() as nobody: {err}")
    livetest.wait_placed(target.pid, 5, control_cpu, compute_cpu, timeout=1)
    p = bus.run([tunectl, "release", str(target.pid)])
    mon.wait_for(rf"member=ProcessReleased\s+uint32 {target.pid}\s+uint64 \d+\s+string \"released\"")
    now = livetest.affinities(target.pid)
    expect(all(a == original for _, a in now.values()),
           f"Release(): every thread back on its original CPUs {sorted(original)}, ProcessReleased signalled")
    ex = json.loads(bus.run([tunectl, "--json", "explain", str(target.pid)]).stdout)
    expect(not ex["managed"] and "released (D-Bus Release())" in ex["reason"],
           f"explain of the released process says it was released: {ex['reason']}")
    bus.call("Rescan")
    time.sleep(0.3)
    expect(bus.get("ManagedProcesses") == "u 0" and all(a == original for _, a in livetest.affinities(target.pid).values()),
           "after Rescan() the released process stays released")
    # A restart of the daemon is no exec of the process: it stays released.
    daemon.send_signal(signal.SIGTERM)
    expect(daemon.wait(10) == 0, "npu-tuned exited 0 on SIGTERM (to restart)")
    os.unlink(state_dir + ".notify")
    daemon = buslib.start_daemon(bus, npu_tuned, policy_dir, state_dir, log_path + ".2")
    time.sleep(0.3)
    expect(bus.get("ManagedProcesses") == "u 0" and all(a == original for _, a in livetest.affinities(target.pid).values())
           and "stay released until they exec again" in open(log_path + ".2").read(),
           "after a restart of the daemon the released process stays released")

    # Another process names itself with bytes that are not UTF-8 and a terminal escape
    # (its comm is the name it was run by): the API keeps working for everyone.
    bad_name = b"\xff\xfe\x1b]0;PWNED\x07"
    bad_path = os.path.join(os.fsencode(tmp), bad_name)
    os.symlink(os.path.abspath(target_bin), bad_path)
    bad = subprocess.Popen([bad_path, "--control", "1", "--compute", "1", "--timeout", "60"], stdout=subprocess.PIPE)
    try:
        if not bad.stdout.readline().startswith(b"ready"):
            fail("the badly named threads-target did not start")
        livetest.wait_placed(bad.pid, 3, control_cpu, compute_cpu)
        escaped = "\\xff\\xfe\\x1b]0;PWNED\\x07"
        procs = json.loads(bus.busctl("--json=short", "call", buslib.NAME, buslib.PATH, buslib.IFACE,
                                      "ListProcesses", run_as="nobody").stdout)["data"][0]
        expect([p[2] for p in procs if p[0] == bad.pid] == [escaped],
               f"ListProcesses() (as nobody) answers with a non-UTF-8 comm, escaped: {[p[2] for p in procs]}")
        ex = json.loads(bus.run([tunectl, "--json", "explain", str(bad.pid)]).stdout)
        expect(ex["comm"] == escaped, f"Explain() of it answers, its comm escaped: {ex['comm']!r}")
        out = bus.run([tunectl, "processes"], run_as="nobody").stdout
        expect("\x1b" not in out and "\x07" not in out and escaped in out,
               f"npu-tunectl processes sends no control character to the terminal: {out!r}")
    finally:
        bad.kill()
        bad.wait()
    mon.close()
    daemon.send_signal(signal.SIGTERM)
    expect(daemon.wait(10) == 0, "npu-tuned exited 0 on SIGTERM")
finally:
    livetest.kill_all(target, daemon)
    print("--- daemon log ---")
    print(open(log_path).read() if os.path.exists(log_path) else "")
    bus.close()
    shutil.rmtree(tmp, ignore_errors=True)
print("PASS")
