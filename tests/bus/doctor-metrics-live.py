#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""What an operator sees of the live daemon, with Debian's real Prometheus tools:
  - npu-tuned --metrics-textfile writes its metrics into a directory that a
    prometheus-node-exporter of our own (127.0.0.1, a free port, only its textfile
    collector) reads; after threads-target is placed, a scrape shows
    npu_tuned_build_info, npu_tuned_placements_total, npu_tuned_managed_processes of the
    rule and the exec reaction count with the values the daemon's D-Bus properties give,
    and the collector reports no error; promtool check metrics passes on the scrape;
  - npu-tunectl doctor over the bus: the daemon OK, the process's threads where its plan
    says; a reload with a broken policy: doctor FAILs the daemon and the policy (exit 1)
    with npu-tuned --check-policy as the fix, and the scrape counts the failure;
  - SIGTERM: the metrics file goes, and the scrape has no npu_tuned_ metric left.
Needs root in the initial namespaces, 2 CPUs, prometheus-node-exporter and promtool
(tools/install-deps.sh --test); skips (77) otherwise. It pins a real process: not in
parallel with other live tests.
Usage: doctor-metrics-live.py NPU_TUNED NPU_TUNECTL THREADS_TARGET"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "placement"))
import buslib  # noqa: E402
import livetest  # noqa: E402
from buslib import expect, fail, skip  # noqa: E402

npu_tuned, tunectl, target_bin = sys.argv[1:4]
buslib.require_tools()
exporter = shutil.which("prometheus-node-exporter")
promtool = shutil.which("promtool")
if not exporter or not promtool:
    skip("prometheus-node-exporter or promtool (Debian packages prometheus-node-exporter, prometheus) is not "
         "installed (tools/install-deps.sh --test installs them)")
control_cpu, compute_cpu = livetest.require_root_and_two_cpus()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def samples(text):
    """{'name{labels}': value} of a scrape."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def wait_scrape(port, cond, what, timeout=10.0):
    """A scrape for which cond(samples) holds (the daemon writes a second after a change)."""
    end = time.monotonic() + timeout
    while True:
        text = scrape(port)
        s = samples(text)
        if cond(s):
            return text, s
        if time.monotonic() > end:
            fail(f"{what}: not in the scrape after {timeout} s:\n{text}")
        time.sleep(0.2)


tmp = tempfile.mkdtemp(prefix="npu-doctor-metrics-")
os.chmod(tmp, 0o755)
bus = buslib.Bus()
daemon = target = node = None
log_path = os.path.join(tmp, "daemon.log")
try:
    policy_dir, state_dir, textfiles = (os.path.join(tmp, x) for x in ("policies", "state", "textfile"))
    os.mkdir(policy_dir)
    os.mkdir(state_dir, 0o700)
    os.mkdir(textfiles, 0o755)
    prom = os.path.join(textfiles, "npu-tuned.prom")
    # A copy under a name of its own, matched by the rule: a threads-target another test left
    # running (up to its 60 s timeout) must not be placed by this daemon and change its counts.
    own_target = os.path.join(tmp, "npu-doctor-target")
    shutil.copy(target_bin, own_target)
    os.chmod(own_target, 0o755)
    policy = livetest.placing_policy("doctor-metrics-live: its own threads-target by role")
    policy["processes"][0]["match"]["exe"] = "*/npu-doctor-target"
    path = livetest.write_policy(policy_dir, policy)
    daemon = buslib.start_daemon(bus, npu_tuned, policy_dir, state_dir, log_path, args=("--metrics-textfile", prom))
    expect(os.path.exists(prom) and "npu_tuned_build_info" in open(prom).read(), f"{prom} written at the start")

    port = free_port()
    node = subprocess.Popen([exporter, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                             "--collector.textfile", f"--collector.textfile.directory={textfiles}",
                             "--web.disable-exporter-metrics"],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "node-exporter.log"), "w"))
    end = time.monotonic() + 10
    while True:
        try:
            scrape(port)
            break
        except OSError:
            if node.poll() is not None or time.monotonic() > end:
                fail(f"prometheus-node-exporter did not answer on 127.0.0.1:{port}:\n"
                     + open(os.path.join(tmp, "node-exporter.log")).read())
            time.sleep(0.1)
    expect(True, f"prometheus-node-exporter on 127.0.0.1:{port}, textfile collector on {textfiles}")

    target = subprocess.Popen([own_target, "--control", "2", "--compute", "2", "--timeout", "60"], stdout=subprocess.PIPE)
    if not target.stdout.readline().startswith(b"ready"):
        fail("threads-target did not start")
    livetest.wait_placed(target.pid, 5, control_cpu, compute_cpu)
    expect(True, f"threads-target {target.pid} placed by role (kernel)")

    # The scrape against the daemon's own counters (D-Bus), once the write after the
    # placement has happened.
    stats = bus.get_json("Stats")
    managed = int(bus.get("ManagedProcesses").split()[1])
    exec_count = {k[0]: k[1] for k in bus.get_json("ReactionTimes")}["exec"]
    version = bus.get("Version").split()[1].strip('"')
    key = 'npu_tuned_managed_processes{accelerators="",rule="threads-target"}'
    text, s = wait_scrape(port, lambda s: s.get("npu_tuned_placements_total", 0) >= stats[3] and key in s,
                          "the placement")
    stats = bus.get_json("Stats")
    text, s = wait_scrape(port, lambda s: s.get("npu_tuned_placements_total") == stats[3]
                          and s.get('npu_tuned_reaction_seconds_count{kind="exec"}') == exec_count, "the D-Bus counters")
    expect(s.get(f'npu_tuned_build_info{{version="{version}"}}') == 1, f"npu_tuned_build_info{{version=\"{version}\"}} 1")
    expect(s["npu_tuned_placements_total"] == stats[3] >= 1, f"npu_tuned_placements_total {stats[3]}, as Stats says")
    expect(s[key] >= 1 and sum(v for k, v in s.items() if k.startswith("npu_tuned_managed_processes{")) == managed,
           f"npu_tuned_managed_processes of rule threads-target: {s[key]}, {managed} in all as ManagedProcesses says")
    expect(s['npu_tuned_reaction_seconds_count{kind="exec"}'] == exec_count >= 1
           and s['npu_tuned_reaction_seconds_bucket{kind="exec",le="+Inf"}'] == exec_count
           and s['npu_tuned_reaction_seconds_sum{kind="exec"}'] > 0,
           f"npu_tuned_reaction_seconds (histogram) of exec: {exec_count} as ReactionTimes says")
    expect(s["npu_tuned_process_events_total"] > 0 and s["npu_tuned_knobs_owned"] == 0
           and s["npu_tuned_policy_reload_failures_total"] == 0, "process events counted; no knob owned; no reload failed")
    expect(s.get("node_textfile_scrape_error") == 0
           and any(k.startswith("node_textfile_mtime_seconds{") and "npu-tuned.prom" in k for k in s),
           "node_exporter read npu-tuned.prom without error")
    expect(not re.search(r'^npu_tuned_\w+\{[^}]*pid=', text, re.M), "no pid label")
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    expect(p.returncode == 0, f"promtool check metrics on the scrape: {p.stdout}{p.stderr}".strip())
    print("\n".join(line for line in text.splitlines() if line.startswith("npu_tuned_")
                    and "_bucket" not in line))

    # doctor over the bus: the daemon and where the threads are.
    p = bus.run([tunectl, "doctor", "--json", "--policy-dir", policy_dir, "--state-dir", state_dir], check=False)
    res = {i["id"]: i for i in json.loads(p.stdout)}
    expect(p.returncode == 0 and res["daemon"]["status"] == "ok" and "managed process" in res["daemon"]["evidence"],
           f"doctor: the daemon OK: {res['daemon']}")
    expect(res["placement-threads"]["status"] == "ok", f"doctor: every thread where its plan says: {res['placement-threads']}")
    expect(res["journal"]["status"] == "ok", f"doctor: no journal left behind: {res['journal']}")

    # A reload with a broken policy: refused, the previous one kept.
    with open(path, "w") as f:
        f.write('{ "version": 1, "processes": [ { "name": "x", "match": { "comm": "a" }, "bogus": 1 } ] }')
    err, msg = bus.call_error("Reload")
    expect(err == "org.nputuned1.Error.PolicyInvalid", f"Reload() with a broken policy: {err}")
    p = bus.run([tunectl, "doctor", "--json", "--policy-dir", policy_dir, "--state-dir", state_dir], check=False)
    res = {i["id"]: i for i in json.loads(p.stdout)}
    expect(p.returncode == 1 and res["daemon"]["status"] == "fail" and "--check-policy" in res["daemon"]["fix"]
           and res["policy"]["status"] == "fail" and "npu-tuned --check-policy" in res["policy"]["fix"],
           f"doctor after it: daemon and policy FAIL, exit 1, fix npu-tuned --check-policy: {res['daemon']}, {res['policy']}")
    text, s = wait_scrape(port, lambda s: s.get("npu_tuned_policy_reload_failures_total") == 1, "the reload failure")
    expect(s["npu_tuned_policy_reloads_total"] == 1, "npu_tuned_policy_reload_failures_total 1 of 1 reload")

    daemon.send_signal(signal.SIGTERM)
    expect(daemon.wait(20) == 0, "SIGTERM: exit 0")
    daemon = None
    expect(not os.path.exists(prom), "the metrics file is gone with the daemon")
    expect("npu_tuned_" not in scrape(port), "the scrape has no npu_tuned_ metric left")
finally:
    for proc in (target, node):
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
    if daemon and daemon.poll() is None:
        daemon.kill()
        daemon.wait()
        print(open(log_path).read())
    bus.close()
    shutil.rmtree(tmp, ignore_errors=True)
