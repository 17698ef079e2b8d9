# SPDX-License-Identifier: GPL-2.0-only
"""A private dbus-daemon for the bus tests, with the project's own bus policy
(units/org.nputuned1.conf) as the policy of a system bus, and the clients that drive it:
busctl (systemd's), dbus-send (for D-Bus error names, which busctl does not print) and
dbus-monitor (for signals). Every tool runs with DBUS_SYSTEM_BUS_ADDRESS pointing at it;
run_as="nobody" runs one as an unprivileged user."""
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SOURCE = os.environ.get("NPU_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
POLICY_CONF = os.path.join(SOURCE, "units", "org.nputuned1.conf")
INTERFACE_XML = os.path.join(SOURCE, "units", "org.nputuned1.Manager.xml")
NAME, PATH, IFACE = "org.nputuned1", "/org/nputuned1", "org.nputuned1.Manager"

# skip() and fail() are the live tests' own, so a bus test reports as every other does.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "placement"))
from livetest import fail, skip  # noqa: E402,F401  (the bus tests take them from here)


def start_daemon(bus, npu_tuned, policy_dir, state_dir, log_path, wrap=(), args=()):
    """npu-tuned -v on bus's system bus, as a Type=notify service: returned once it has
    sent READY=1. wrap: a command line to run it under (unshare ...); args: more options."""
    sock_path = os.path.join(state_dir + ".notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(0.05)
    env = dict(bus.env, NOTIFY_SOCKET=sock_path)
    env.pop("JOURNAL_STREAM", None)
    log = open(log_path, "w")
    d = subprocess.Popen([*wrap, npu_tuned, "--policy-dir", policy_dir, "--state-dir", state_dir, "--bus=system", "-v", *args],
                         env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            if "READY=1" in sock.recv(4096).decode().split("\n"):
                sock.close()
                return d
        except socket.timeout:
            pass
        if d.poll() is not None:
            break
    fail(f"npu-tuned did not become ready:\n{open(log_path).read()}")


def expect(cond, what):
    """Fail with what, or print it as passed."""
    if not cond:
        fail(what)
    print(f"ok: {what}")


def require_tools():
    for tool in ("dbus-daemon", "busctl", "dbus-send", "dbus-monitor", "setpriv"):
        if not shutil.which(tool):
            skip(f"{tool} is not installed (tools/install-deps.sh --test installs it)")
    if os.geteuid() != 0:
        skip("needs root (the daemon's bus name is root's, and the test runs clients as nobody)")


# The system bus's own rules (as /usr/share/dbus-1/system.conf has them), then the policy
# under test; permissive=True: a bus that lets everyone own and call anything, to show that
# the daemon checks the caller itself.
CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>{type}</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    {default_rules}
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <policy user="root">
    <allow eavesdrop="true"/>
    <allow eavesdrop="true" send_type="signal"/>
  </policy>
  {include}
</busconfig>
"""
SYSTEM_RULES = """<deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>"""
PERMISSIVE_RULES = """<allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>"""


class Bus:
    def __init__(self, permissive=False):
        self.dir = tempfile.mkdtemp(prefix="npu-bus-")
        os.chmod(self.dir, 0o755)  # nobody connects too
        self.socket = os.path.join(self.dir, "bus")
        conf = os.path.join(self.dir, "bus.conf")
        with open(conf, "w") as f:
            f.write(CONFIG.format(type="session" if permissive else "system", socket=self.socket,
                                  default_rules=PERMISSIVE_RULES if permissive else SYSTEM_RULES,
                                  include="" if permissive else f"<include>{POLICY_CONF}</include>"))
        self.proc = subprocess.Popen(["dbus-daemon", "--config-file", conf, "--nofork", "--nopidfile",
                                      "--print-address"], stdout=subprocess.PIPE, stderr=open(os.path.join(self.dir, "log"), "w"),
                                     text=True)
        self.address = self.proc.stdout.readline().strip()
        if not self.address:
            fail(f"dbus-daemon did not start with {conf}")
        var = "DBUS_SESSION_BUS_ADDRESS" if permissive else "DBUS_SYSTEM_BUS_ADDRESS"
        self.env = dict(os.environ)
        self.env[var] = self.address
        self.flag = "--user" if permissive else "--system"
        self.send_flag = "--session" if permissive else "--system"

    def run(self, args, run_as=None, check=True, timeout=20):
        if run_as:
            pw = pwd.getpwnam(run_as)
            args = ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups", *args]
        p = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            fail(f"{' '.join(args)} exited {p.returncode}: {p.stdout}{p.stderr}")
        return p

    def busctl(self, *args, run_as=None, check=True):
        return self.run(["busctl", self.flag, *args], run_as=run_as, check=check)

    def get(self, prop):
        """A property as busctl prints it, e.g. 's "running"'."""
        return self.busctl("get-property", NAME, PATH, IFACE, prop).stdout.strip()

    def get_json(self, prop):
        import json
        return json.loads(self.busctl("--json=short", "get-property", NAME, PATH, IFACE, prop).stdout)["data"]

    def call(self, method, *args, run_as=None, check=True):
        return self.busctl("call", NAME, PATH, IFACE, method, *args, run_as=run_as, check=check)

    def call_error(self, method, *args, run_as=None):
        """The D-Bus error name a call gets ("" when it succeeds)."""
        p = self.run(["dbus-send", self.send_flag, "--print-reply", f"--dest={NAME}", PATH, f"{IFACE}.{method}",
                      *args], run_as=run_as, check=False)
        m = re.search(r"Error (\S+):", p.stderr)
        return (m.group(1) if m else "", p.stderr.strip())

    def monitor(self):
        return Monitor(self)

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Monitor:
    """Signals of org.nputuned1.Manager, and PropertiesChanged of its object, as
    dbus-monitor prints them."""

    def __init__(self, bus):
        self.path = os.path.join(bus.dir, f"monitor-{time.monotonic_ns()}")
        self.out = open(self.path, "w+")
        self.proc = subprocess.Popen(["dbus-monitor", "--address", bus.address,
                                      f"type='signal',interface='{IFACE}'",
                                      f"type='signal',interface='org.freedesktop.DBus.Properties',path='{PATH}'"],
                                     stdout=self.out, stderr=subprocess.STDOUT)
        time.sleep(0.3)  # subscribed

    def text(self):
        self.out.flush()
        with open(self.path) as f:
            return f.read()

    def wait_for(self, pattern, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, self.text(), re.S)
            if m:
                return m
            time.sleep(0.05)
        fail(f"no signal matching {pattern!r} within {timeout} s; dbus-monitor saw:\n{self.text()}")

    def close(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait()
        self.out.close()


def interface_members(xml_text):
    """The Manager interface as a comparable set: (kind, name, signature, annotations)."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", xml_text))
    out = set()
    for iface in root.iter("interface"):
        if iface.get("name") != IFACE:
            continue
        for m in iface:
            args = tuple((a.get("name"), a.get("type"), a.get("direction")) for a in m.findall("arg"))
            notes = tuple(sorted((a.get("name"), a.get("value")) for a in m.findall("annotation")))
            out.add((m.tag, m.get("name"), m.get("type"), m.get("access"), args, notes))
    return out
