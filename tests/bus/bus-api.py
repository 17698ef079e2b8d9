#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""org.nputuned1 on a private system bus with the project's own bus policy, the real
npu-tuned on a fake root (tests/knobs/knobtest.py: 2 nodes, 2 NPUs, every knob), driven by
busctl, dbus-send and npu-tunectl:
  - every property, read by root and by nobody, against the fake tree and the knob files;
  - the interface: npu-tuned --bus-introspect == units/org.nputuned1.Manager.xml == what
    the running daemon introspects;
  - every method; bad arguments get named errors (NoSuchProcess, NotManaged,
    NotAvailable, InvalidArgs);
  - signals: KnobChanged and PropertiesChanged(Knobs) on a reload that changes a knob,
    KnobDrift when someone else writes one;
  - Reload() with a broken policy: PolicyInvalid, PolicyReloaded(false, why), the old
    policy kept and no knob file touched;
  - Reload(), Rescan(), Release() as nobody: AccessDenied from the bus policy; and on a bus
    without that policy, AccessDenied from the daemon's own check of the caller;
  - npu-tunectl status/knobs/topology/explain (tables and --json) and its exit codes,
    also when no daemon runs;
  - SIGTERM restores the knobs.
Usage: bus-api.py NPU_TUNED NPU_TUNECTL"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "knobs"))
import buslib  # noqa: E402
import knobtest  # noqa: E402
from buslib import IFACE, expect, fail  # noqa: E402

npu_tuned, tunectl = sys.argv[1], sys.argv[2]
buslib.require_tools()


def tunectl_run(bus, *args, run_as=None):
    return bus.run([tunectl, "--bus=session" if bus.flag == "--user" else "--bus=system", *args], run_as=run_as,
                   check=False)


def start_daemon(root, policy, state, bus_arg, env):
    d = knobtest.Daemon(npu_tuned, root, policy, state, env=env, args=(bus_arg,))
    if not d.wait_ready():
        fail(f"npu-tuned exited before READY:\n{d.output()}")
    return d


tmp = tempfile.mkdtemp(prefix="npu-bus-api-")
bus = buslib.Bus()
try:
    root, policy, state = knobtest.fake_host(tmp)
    thp = os.path.join(root, knobtest.THP, "enabled")

    # No daemon yet: one clear line and exit 3; topology and check-policy still work.
    p = tunectl_run(bus, "status")
    expect(p.returncode == 3 and "npu-tuned is not running" in p.stderr and len(p.stderr.splitlines()) == 1,
           f"npu-tunectl status without a daemon: exit 3, one line ({p.stderr.strip()})")
    p = tunectl_run(bus, "topology")
    expect(p.returncode == 0 and "NODE" in p.stdout, "npu-tunectl topology works without a daemon")
    p = tunectl_run(bus, "check-policy", os.path.join(policy, "50-host.json"))
    expect(p.returncode == 0 and p.stdout.startswith("OK"), "npu-tunectl check-policy works without a daemon")

    before = knobtest.snapshot(root)
    d = start_daemon(root, policy, state, "--bus=system", bus.env)
    try:
        # The interface: file == --bus-introspect == live.
        with open(buslib.INTERFACE_XML) as f:
            installed = f.read()
        printed = subprocess.run([npu_tuned, "--bus-introspect"], capture_output=True, text=True, check=True).stdout
        expect(printed == installed, "npu-tuned --bus-introspect prints units/org.nputuned1.Manager.xml")
        live = bus.busctl("introspect", "--xml-interface", buslib.NAME, buslib.PATH).stdout
        a, b = buslib.interface_members(installed), buslib.interface_members(live)
        expect(a == b and len(a) == 25, f"the daemon's live interface is the installed XML ({len(a)} members)"
               + ("" if a == b else f": only in the file {a - b}, only live {b - a}"))

        # Properties, as root and as nobody.
        version = subprocess.run([npu_tuned, "--version"], capture_output=True, text=True).stdout.split()[1]
        expect(bus.get("Version") == f's "{version}"', f"Version is {version}")
        expect(bus.get("State") == 's "running"', "State is running")
        expect(bus.get("DryRun") == "b false", "DryRun is false")
        files = bus.get_json("PolicyFiles")
        expect(files == [os.path.join(policy, "50-host.json")], f"PolicyFiles: {files}")
        nodes = bus.get_json("Nodes")
        expect([n[0] for n in nodes] == [0, 1] and nodes[0][1] == "0-3" and nodes[0][2] > 0,
               f"Nodes: {nodes}")
        accels = bus.get_json("Accelerators")
        expect(sorted((a[0], a[2], a[3]) for a in accels) == [("ascend", "0000:81:00.0", 1), ("ascend", "0000:c1:00.0", 0)],
               f"Accelerators: {accels}")
        knobs = {k[0]: k for k in bus.get_json("Knobs")}
        t = knobs.get("thp/enabled")
        with open(thp) as f:
            thp_now = f.read().strip()
        expect(t and t[3] == "never" and t[4] == "applied" and knobtest.kernel_value(thp_now, "selected") == "never",
               f"Knobs: thp/enabled {t}, and the file holds {thp_now!r}")
        managed_irq = knobs.get(f"irq/{knobtest.MANAGED_IRQ}")
        expect(managed_irq is None or managed_irq[4] in ("skipped", "refused"),
               f"Knobs: the managed IRQ is not owned ({managed_irq})")
        expect(bus.get("ManagedProcesses") == "u 0", "ManagedProcesses is 0 (no watcher on a fake root)")
        stats = bus.get_json("Stats")
        expect(len(stats) == 5, f"Stats: {stats}")
        p = bus.busctl("get-property", buslib.NAME, buslib.PATH, IFACE, "State", "Knobs", run_as="nobody")
        expect(p.stdout.startswith('s "running"'), "nobody reads the properties")

        # Methods.
        topo = json.loads(bus.call("GetTopology").stdout.split(" ", 1)[1].strip().strip('"').encode().decode("unicode_escape"))
        local = json.loads(subprocess.run([npu_tuned, "--root", root, "--policy-dir", policy, "--print-topology", "--json"],
                                          capture_output=True, text=True, check=True).stdout)
        expect([n["id"] for n in topo["nodes"]] == [n["id"] for n in local["nodes"]]
               and [a["pci"] for a in topo["accelerators"]] == [a["pci"] for a in local["accelerators"]],
               "GetTopology() is --print-topology --json of the same root")
        p = bus.call("ListProcesses", run_as="nobody")
        expect(p.stdout.strip() == "a(utssssa(ss)sd) 0", "ListProcesses() (as nobody): none on a fake root")
        p = bus.call("Explain", "u", str(os.getpid()), run_as="nobody")
        ex = json.loads(p.stdout.split(" ", 1)[1].strip().strip('"').encode().decode("unicode_escape"))
        expect(p.stdout.startswith("s ") and ex.get("managed") is False and ex.get("reason"),
               f"Explain(pid) (as nobody): the JSON only, not managed, with a reason: {ex}")
        err, msg = bus.call_error("Explain", "uint32:0")
        expect(err == "org.freedesktop.DBus.Error.InvalidArgs", f"Explain(0): {err}")
        err, msg = bus.call_error("Explain", "string:1")
        expect(err == "org.freedesktop.DBus.Error.InvalidArgs", f"Explain(a string): {err}")
        err, msg = bus.call_error("Release", f"uint32:{os.getpid()}")
        expect(err == "org.nputuned1.Error.NotAvailable", f"Release() without the watcher: {err}")
        err, msg = bus.call_error("Rescan")
        expect(err == "org.nputuned1.Error.NotAvailable", f"Rescan() without the watcher: {err}")

        # Unprivileged: the bus policy refuses.
        for method, args in (("Reload", []), ("Rescan", []), ("Release", [f"uint32:{os.getpid()}"])):
            err, msg = bus.call_error(method, *args, run_as="nobody")
            expect(err == "org.freedesktop.DBus.Error.AccessDenied", f"{method}() as nobody: {err}")
        p = tunectl_run(bus, "reload", run_as="nobody")
        expect(p.returncode == 4 and p.stderr == "npu-tunectl reload: refused: it needs root\n",
               f"npu-tunectl reload as nobody: exit 4, {p.stderr!r}")

        # Reload: the same policy (nothing to change), then a broken one.
        mon = bus.monitor()
        bus.call("Reload")
        mon.wait_for(r'member=PolicyReloaded.*?boolean true\s+string "Policy reloaded."')
        expect(True, "Reload(): PolicyReloaded(true)")
        # A changed knob: KnobChanged, and PropertiesChanged with the new Knobs.
        knobtest.policy(policy, thp_defrag="madvise", reconcile_interval_ms=200)
        bus.call("Reload")
        mon.wait_for(r'member=KnobChanged\s+string "thp/defrag"\s+string "/sys/kernel/mm/transparent_hugepage/defrag"'
                     r'\s+string "madvise"')
        mon.wait_for(r'member=PropertiesChanged.*?string "org.nputuned1.Manager".*?string "Knobs"')
        expect(True, "Reload() with THP defrag changed: KnobChanged(thp/defrag, ..., madvise), PropertiesChanged(Knobs)")
        with open(os.path.join(policy, "50-host.json"), "w") as f:
            f.write('{"version": 1, "host": { broken')
        snap = knobtest.snapshot(root)
        err, msg = bus.call_error("Reload")
        expect(err == "org.nputuned1.Error.PolicyInvalid" and "50-host.json" in msg,
               f"Reload() with a broken policy: {err}: {msg}")
        mon.wait_for(r'member=PolicyReloaded.*?boolean false\s+string "Policy reload failed, previous policy kept: [^"]*50-host.json')
        expect(True, "PolicyReloaded(false, why) names the file")
        expect(knobtest.snapshot(root) == snap, "a failed reload touches no knob file")
        knobs = {k[0]: k for k in bus.get_json("Knobs")}
        expect(knobs["thp/enabled"][4] == "applied" and bus.get_json("PolicyFiles") == files,
               "the old policy is kept (PolicyFiles, Knobs)")
        mon.close()

        # npu-tunectl against the daemon.
        p = tunectl_run(bus, "status")
        expect(p.returncode == 0 and "State: running" in p.stdout and "50-host.json" in p.stdout
               and "2 NUMA node(s), 2 accelerator(s)" in p.stdout, "npu-tunectl status")
        print(p.stdout)
        st = json.loads(tunectl_run(bus, "--json", "status").stdout)
        expect(st["state"] == "running" and st["nodes"] == 2 and st["knobs_owned"] > 0, "npu-tunectl --json status")
        p = tunectl_run(bus, "knobs")
        lines = p.stdout.splitlines()
        expect(p.returncode == 0 and lines[0].split() == ["KNOB", "STATUS", "ORIGINAL", "APPLIED", "NOTE"]
               and any(line.split()[:2] == ["thp/enabled", "applied"] for line in lines)
               and "\033" not in p.stdout, "npu-tunectl knobs: a table, no colour when not a tty")
        kj = json.loads(tunectl_run(bus, "--json", "knobs").stdout)
        expect(any(k["name"] == "thp/enabled" and k["applied"] == "never" for k in kj), "npu-tunectl --json knobs")
        p = tunectl_run(bus, "topology")
        expect(p.returncode == 0 and "0000:c1:00.0" in p.stdout, "npu-tunectl topology asks the daemon (its fake root)")
        p = tunectl_run(bus, "explain", str(os.getpid()))
        expect(p.returncode == 0 and "not managed: the process watcher is off" in p.stdout,
               "npu-tunectl explain: not managed below a --root")
        p = tunectl_run(bus, "explain", "x")
        expect(p.returncode == 2, "npu-tunectl explain x: usage, exit 2")

        # Someone else writes a knob we own: KnobDrift, status changed-by-other.
        mon = bus.monitor()
        with open(thp, "w") as f:
            f.write("always")
        mon.wait_for(r'member=KnobDrift\s+string "thp/enabled"\s+string "[^"]*"\s+string "never"\s+string "always"')
        knobs = {k[0]: k for k in bus.get_json("Knobs")}
        expect(knobs["thp/enabled"][4] == "changed-by-other",
               "a knob changed by someone else: KnobDrift(thp/enabled, ..., never, always), status changed-by-other")
        mon.close()
        with open(thp, "w") as f:
            f.write("never")  # ours again, so that the stop restores it
    finally:
        d.kill(signal.SIGTERM)
        rc = d.wait()
        log = d.output()
        d.close()
    expect(rc == 0, f"npu-tuned exited {rc} on SIGTERM")
    expect(knobtest.snapshot(root) == before, "SIGTERM restored every knob file")

    # A bus without the project's policy: the daemon itself refuses nobody. And a knob the
    # kernel refuses (an immutable file: EPERM even for root, as numa_balancing is under a
    # unit without CAP_SYS_ADMIN) is reported as refused, not owned.
    open_bus = buslib.Bus(permissive=True)
    numa = os.path.join(root, "proc/sys/kernel/numa_balancing")
    immutable = shutil.which("chattr") and subprocess.run(["chattr", "+i", numa]).returncode == 0
    try:
        knobtest.policy(policy)
        d = start_daemon(root, policy, state, "--bus=session", open_bus.env)
        try:
            if immutable:
                knobs = {k[0]: k for k in open_bus.get_json("Knobs")}
                nb = knobs["sysctl/kernel.numa_balancing"]
                with open(numa) as f:
                    held = f.read().strip()
                expect(nb[4] == "refused" and "not permitted" in nb[5] and held == "1"
                       and open_bus.get("State") == 's "degraded"'
                       and "refused by the kernel (not owned" in d.output(),
                       f"a knob the kernel refuses (EPERM): status refused, State degraded, not counted as owned ({nb})")
            else:
                print("note: chattr +i does not work here: the EPERM knob case is not checked")
            for method, args in (("Reload", []), ("Rescan", []), ("Release", [f"uint32:{os.getpid()}"])):
                err, msg = open_bus.call_error(method, *args, run_as="nobody")
                expect(err == "org.freedesktop.DBus.Error.AccessDenied" and "needs root" in msg,
                       f"{method}() as nobody on a bus that lets it through: the daemon says {err}")
            p = tunectl_run(open_bus, "status", run_as="nobody")
            expect(p.returncode == 0, "nobody may still read (npu-tunectl --bus=session status)")
        finally:
            d.kill(signal.SIGTERM)
            d.wait()
            d.close()
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", numa])
        open_bus.close()

    # No bus at all: the daemon says so once and runs.
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={tmp}/no-such-socket")
    d = start_daemon(root, policy, state, "--bus=system", env)
    d.kill(signal.SIGTERM)
    d.wait()
    out = d.output()
    d.close()
    expect(out.count("running without D-Bus") == 1, "without a bus: one line, and the daemon runs")
finally:
    bus.close()
    shutil.rmtree(tmp, ignore_errors=True)
print("PASS")
