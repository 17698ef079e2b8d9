#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""npu-tunectl as a user meets it (issue 25), against the real npu-tuned on a fake root
(tests/knobs/knobtest.py) on a private system bus with the project's bus policy:
  - options anywhere (npu-tunectl status --json), "--" ends them, a hint on a usage error;
  - --json for every command: reload, rescan, release, check-policy, policy, monitor too;
    an answered failure is {"ok": false, "error", "message"};
  - JSON output: an empty array is [], '/' is not escaped;
  - exit codes: 3 when the bus refuses the connection, 4 and "refused: it needs root"
    for a refused reload;
  - NPU_TUNECTL_BUS=system|session, and --bus= over it;
  - status: PID (the name owner's), uptime, last reload, policy warnings;
  - policy: the running daemon's policy files, merged, with their provenance;
  - monitor --json: a PolicyReloaded line for a Reload(), and a clean exit on SIGINT.
(The completion: tests/test-completion.sh.)
Usage: tunectl-cli.py NPU_TUNED NPU_TUNECTL"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "knobs"))
import buslib  # noqa: E402
import knobtest  # noqa: E402
from buslib import expect, fail  # noqa: E402

npu_tuned, tunectl = sys.argv[1], sys.argv[2]
buslib.require_tools()


def run(bus, *args, run_as=None, env=None):
    """npu-tunectl ARGS on bus's system bus (NPU_TUNECTL_BUS unset unless env sets it)."""
    e = dict(bus.env)
    e.pop("NPU_TUNECTL_BUS", None)
    e.update(env or {})
    cmd = [tunectl, *args]
    if run_as:
        import pwd
        pw = pwd.getpwnam(run_as)
        cmd = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups", *cmd]
    return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=20)


def load(p, what):
    try:
        return json.loads(p.stdout)
    except ValueError:
        fail(f"{what}: not JSON (exit {p.returncode}): {p.stdout!r} {p.stderr!r}")


tmp = tempfile.mkdtemp(prefix="npu-tunectl-cli-")
bus = buslib.Bus()
try:
    root, policy, state = knobtest.fake_host(tmp)
    host_file = os.path.join(policy, "50-host.json")

    # Usage errors: a hint; options after the command; "--" ends the options.
    p = run(bus, "status", "--frob")
    expect(p.returncode == 2 and "npu-tunectl --help" in p.stderr, f"an unknown option: exit 2 and a hint ({p.stderr.strip()!r})")
    p = run(bus, "no-such-command")
    expect(p.returncode == 2 and "npu-tunectl --help" in p.stderr, "an unknown command: exit 2 and a hint")
    p = run(bus, "--", "status", "--json")
    expect(p.returncode == 2, "after --, --json is an argument: status takes none, exit 2")

    # check-policy --json, no daemon needed.
    p = run(bus, "check-policy", host_file, "--json")
    cj = load(p, "check-policy FILE --json")
    expect(p.returncode == 0 and cj["ok"] is True and cj["summary"].startswith("OK: 1 file"),
           f"check-policy FILE --json: {cj}")
    broken = os.path.join(tmp, "broken.json")
    with open(broken, "w") as f:
        f.write('{"version": 1, "host": { broken')
    p = run(bus, "--json", "check-policy", broken)
    cj = load(p, "check-policy BROKEN --json")
    expect(p.returncode == 1 and cj["ok"] is False and any("broken.json" in x for x in cj["problems"]),
           f"check-policy --json of a broken file: exit 1, ok false, the problem named ({cj})")

    d = knobtest.Daemon(npu_tuned, root, policy, state, env=bus.env, args=("--bus=system",))
    if not d.wait_ready():
        fail(f"npu-tuned exited before READY:\n{d.output()}")
    try:
        # Options anywhere.
        p = run(bus, "status", "--json")
        st = load(p, "status --json")
        expect(p.returncode == 0 and st["state"] == "running", "npu-tunectl status --json: options after the command")

        # status: PID, uptime, last reload, warnings.
        expect(st["pid"] == d.proc.pid, f"status --json: pid {st['pid']} is the daemon's ({d.proc.pid})")
        expect(isinstance(st["uptime_sec"], int) and 0 <= st["uptime_sec"] < 120 and st["started_at_usec"] > 0,
               f"status --json: uptime {st['uptime_sec']} s")
        expect(st["last_reload"] is None and isinstance(st["policy_warnings"], int),
               f"status --json: no reload yet, {st['policy_warnings']} warning(s)")
        p = run(bus, "status")
        expect(p.returncode == 0 and f"PID: {d.proc.pid}" in p.stdout and "Uptime: " in p.stdout
               and "Last reload: none since the start" in p.stdout and "Warnings: " in p.stdout,
               "npu-tunectl status: PID, Uptime, Last reload, Warnings")
        print(p.stdout)

        # JSON output: [] and no escaped '/'.
        p = run(bus, "processes", "--json")
        expect(p.returncode == 0 and p.stdout == "[]\n", f"processes --json with none: [] ({p.stdout!r})")
        p = run(bus, "knobs", "--json")
        expect(p.returncode == 0 and '"thp/enabled"' in p.stdout and "\\/" not in p.stdout,
               "knobs --json: thp/enabled, '/' not escaped")
        p = run(bus, "status", "--json")
        expect('"policy_files": [' in p.stdout and "\\/" not in p.stdout, "status --json: paths not escaped")

        # monitor --json: subscribed, then a Reload() shows as one JSON line.
        mon_out = open(os.path.join(tmp, "monitor.out"), "w+")
        mon_err = open(os.path.join(tmp, "monitor.err"), "w+")
        e = dict(bus.env)
        e.pop("NPU_TUNECTL_BUS", None)
        mon = subprocess.Popen([tunectl, "monitor", "--json"], env=e, stdout=mon_out, stderr=mon_err)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "Monitoring" not in open(mon_err.name).read():
            if mon.poll() is not None:
                fail(f"monitor exited {mon.returncode}: {open(mon_err.name).read()}")
            time.sleep(0.05)

        # reload --json (root): {"ok": true, "message"}.
        p = run(bus, "reload", "--json")
        rj = load(p, "reload --json")
        expect(p.returncode == 0 and rj == {"ok": True, "message": "Policy reloaded."}, f"reload --json: {rj}")

        line = None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not line:
            for ln in open(mon_out.name).read().splitlines():
                ev = json.loads(ln)
                if ev.get("event") == "PolicyReloaded":
                    line = ev
            time.sleep(0.05)
        expect(line and line["ok"] is True and line["message"] == "Policy reloaded.",
               f"monitor --json: a PolicyReloaded line for the Reload() ({line})")
        mon.send_signal(signal.SIGINT)
        rc = mon.wait(10)
        expect(rc == 0, f"monitor exits 0 on SIGINT ({rc})")

        # Text monitor: one line a signal.
        mon_out.seek(0)
        mon_out.truncate()
        mon_err.seek(0)
        mon_err.truncate()
        mon = subprocess.Popen([tunectl, "monitor"], env=e, stdout=mon_out, stderr=mon_err)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "Monitoring" not in open(mon_err.name).read():
            time.sleep(0.05)
        knobtest.policy(policy, thp_defrag="madvise")
        run(bus, "reload")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "PolicyReloaded" not in open(mon_out.name).read():
            time.sleep(0.05)
        text = open(mon_out.name).read()
        expect("KnobChanged thp/defrag = madvise" in text and "PolicyReloaded taken: Policy reloaded." in text,
               f"monitor: KnobChanged and PolicyReloaded lines:\n{text}")
        mon.send_signal(signal.SIGTERM)
        expect(mon.wait(10) == 0, "monitor exits 0 on SIGTERM")

        st = load(run(bus, "status", "--json"), "status --json after a reload")
        lr = st["last_reload"]
        expect(lr and lr["ok"] is True and lr["message"] == "Policy reloaded." and lr["time_usec"] >= st["started_at_usec"],
               f"status --json: the last reload ({lr})")
        p = run(bus, "status")
        expect("taken: Policy reloaded." in p.stdout, "status: Last reload ..., taken: Policy reloaded.")

        # A refused reload: exit 1, the daemon's answer as JSON, and status says so.
        with open(host_file) as f:
            good = f.read()
        with open(host_file, "w") as f:
            f.write('{"version": 1, "host": { broken')
        p = run(bus, "reload", "--json")
        rj = load(p, "reload --json of a broken policy")
        expect(p.returncode == 1 and rj["ok"] is False and rj["error"] == "org.nputuned1.Error.PolicyInvalid"
               and "50-host.json" in rj["message"], f"reload --json of a broken policy: exit 1, {rj}")
        st = load(run(bus, "status", "--json"), "status --json after a refused reload")
        expect(st["last_reload"]["ok"] is False and "previous policy kept" in st["last_reload"]["message"],
               f"status --json: the refused reload ({st['last_reload']})")
        expect("refused: Policy reload failed" in run(bus, "status").stdout, "status: Last reload ..., refused: ...")
        with open(host_file, "w") as f:
            f.write(good)
        run(bus, "reload")
        p = run(bus, "explain", "x")
        expect(p.returncode == 2 and "npu-tunectl --help" in p.stderr, "explain x: exit 2 and a hint")

        # rescan/release --json: the daemon's answer (no watcher on a fake root) as JSON.
        for args in (("rescan",), ("release", str(os.getpid()))):
            p = run(bus, *args, "--json")
            j = load(p, f"{args[0]} --json")
            expect(p.returncode == 1 and j["ok"] is False and j["error"] == "org.nputuned1.Error.NotAvailable"
                   and j["message"], f"{args[0]} --json: exit 1 and {j}")

        # policy: the running daemon's files, merged, with where values come from.
        p = run(bus, "policy", "--json")
        pj = load(p, "policy --json")
        expect(p.returncode == 0 and pj["source"] == "daemon" and pj["files"] == [host_file]
               and pj["policy"]["host"]["thp"]["defrag"] == "madvise" and "\\/" not in p.stdout,
               f"policy --json: the daemon's files {pj.get('files')}, thp.defrag madvise")
        extra = os.path.join(policy, "60-extra.json")
        with open(extra, "w") as f:
            json.dump({"version": 1, "host": {"thp": {"defrag": "defer"}}}, f)
        os.chmod(extra, 0o644)
        run(bus, "reload")
        p = run(bus, "policy")
        expect(p.returncode == 0 and json.loads(p.stdout)["host"]["thp"]["defrag"] == "defer"
               and "thp.defrag" in p.stderr and "60-extra.json" in p.stderr and "replaces" in p.stderr,
               f"policy: the merged policy on stdout, provenance on stderr:\n{p.stderr}")
        pj = load(run(bus, "--json", "policy"), "policy --json with two files")
        expect(len(pj["files"]) == 2 and any("60-extra.json" in x for x in pj["provenance"]),
               f"policy --json: provenance {pj['provenance'][:3]}")

        # Refused: a clear line and exit 4.
        p = run(bus, "reload", run_as="nobody")
        expect(p.returncode == 4 and p.stderr == "npu-tunectl reload: refused: it needs root\n",
               f"reload as nobody: exit 4, {p.stderr!r}")
        p = run(bus, "status", run_as="nobody")
        expect(p.returncode == 0, "nobody reads status")

        # NPU_TUNECTL_BUS: the daemon's bus given as the "session" bus; --bus= overrides.
        env = {"NPU_TUNECTL_BUS": "session", "DBUS_SESSION_BUS_ADDRESS": bus.address,
               "DBUS_SYSTEM_BUS_ADDRESS": f"unix:path={tmp}/no-such-bus"}
        p = run(bus, "status", env=env)
        expect(p.returncode == 0 and "on the session bus" in p.stdout, f"NPU_TUNECTL_BUS=session ({p.stderr.strip()})")
        p = run(bus, "status", "--bus=system", env=env)
        expect(p.returncode == 3, f"--bus=system overrides NPU_TUNECTL_BUS ({p.returncode})")
        p = run(bus, "status", env=dict(env, NPU_TUNECTL_BUS="bogus"))
        expect(p.returncode == 2 and "NPU_TUNECTL_BUS" in p.stderr, "NPU_TUNECTL_BUS=bogus: exit 2, named")


        # The daemon stops: monitor says so and exits 3, not waiting for nothing.
        mon_err.seek(0)
        mon_err.truncate()
        mon = subprocess.Popen([tunectl, "monitor"], env=e, stdout=subprocess.DEVNULL, stderr=mon_err)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "Monitoring" not in open(mon_err.name).read():
            time.sleep(0.05)
        d.kill(signal.SIGTERM)
        d.wait()
        try:
            rc = mon.wait(10)
        except subprocess.TimeoutExpired:
            mon.kill()
            rc = None
        expect(rc == 3 and "npu-tuned left the system bus" in open(mon_err.name).read(),
               f"monitor: the daemon stops, exit 3 ({rc})")
    finally:
        d.kill(signal.SIGTERM)
        d.wait()
        d.close()

    # A bus whose policy lets only root in: nobody is refused the connection: exit 3.
    buslib.CONFIG = buslib.CONFIG.replace('<allow user="*"/>', '<allow user="root"/>')
    closed = buslib.Bus()
    try:
        p = run(closed, "status", run_as="nobody")
        expect(p.returncode == 3 and "cannot reach npu-tuned" in p.stderr and len(p.stderr.splitlines()) == 1,
               f"a bus that refuses the connection: exit 3, one line ({p.returncode}: {p.stderr.strip()!r})")
        p = run(closed, "topology", run_as="nobody")
        expect(p.returncode == 0 and "NODE" in p.stdout, "topology on a bus that refuses the connection: this machine's")
    finally:
        closed.close()
finally:
    bus.close()
    shutil.rmtree(tmp, ignore_errors=True)
print("PASS")
