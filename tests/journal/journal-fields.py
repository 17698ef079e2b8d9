#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Structured journal entries, read from the journal's own native protocol: npu-tuned runs
(on a fake root, tests/knobs/knobtest.py) in a private mount namespace whose
/run/systemd/journal/socket is this test's datagram socket, with JOURNAL_STREAM naming its
stderr, as systemd runs a service. Asserted: a knob applied, a knob changed by someone
else, a knob restored, a policy reloaded and a reload that failed are entries with their
MESSAGE_ID, NPU_TUNED_KNOB=, PRIORITY= and MESSAGE=; plain lines still go to stderr with
a "<N>" prefix; without JOURNAL_STREAM nothing is sent to the socket.
Needs root (a mount namespace); skips (77) otherwise.
Usage: journal-fields.py NPU_TUNED"""
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "knobs"))
import knobtest  # noqa: E402
from knobtest import expect, fail  # noqa: E402

exe = sys.argv[1]
SRC = os.environ.get("NPU_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
IDS = dict(re.findall(r'#define NPU_MESSAGE_(\w+) "([0-9a-f]{32})"', open(os.path.join(SRC, "daemon", "events", "events.h")).read()))


def parse(datagram):
    """The native protocol: KEY=value lines, or KEY\\n<le64 size><value>\\n."""
    out, i = {}, 0
    while i < len(datagram):
        nl = datagram.index(b"\n", i)
        line = datagram[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            i = nl + 1
        else:
            (size,) = struct.unpack("<Q", datagram[nl + 1:nl + 9])
            k, v = line, datagram[nl + 9:nl + 9 + size]
            i = nl + 9 + size + 1
        out[k.decode()] = v.decode(errors="replace")
    return out


if os.geteuid() != 0 or not shutil.which("unshare"):
    print("SKIP: needs root and unshare (a private mount namespace for the journal socket)")
    sys.exit(77)

with tempfile.TemporaryDirectory() as tmp:
    root, policy, state, jdir = (os.path.join(tmp, x) for x in ("root", "policy", "state", "journal"))
    knobtest.build(root)
    knobtest.policy(policy, reconcile_interval_ms=100)
    os.mkdir(state, 0o700)
    os.mkdir(jdir)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(os.path.join(jdir, "socket"))
    sock.settimeout(0.05)
    stderr_path = os.path.join(tmp, "stderr")
    err = open(stderr_path, "w")
    st = os.fstat(err.fileno())
    env = dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
    script = ('mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/journal && '
              f'mount --bind {jdir} /run/systemd/journal && exec "$@"')
    d = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", exe, "--root", root,
                          "--policy-dir", policy, "--state-dir", state, "--no-watch", "--bus=none"],
                         env=env, stdout=err, stderr=err)
    entries = []
    done = threading.Event()

    def reader():
        # Read all the time, as journald does: a unix datagram socket queues only a few.
        while not done.is_set():
            try:
                entries.append(parse(sock.recv(65536)))
            except socket.timeout:
                pass

    threading.Thread(target=reader, daemon=True).start()

    def collect(until, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(0.02)
            found = [e for e in list(entries) if until(e)]
            if found:
                return found[0]
            if d.poll() is not None:
                break
        fail(f"no such journal entry; got {len(entries)}: {[e.get('MESSAGE') for e in entries][-10:]}",
             open(stderr_path).read())

    try:
        e = collect(lambda e: e.get("NPU_TUNED_KNOB") == "thp/enabled" and "->" in e.get("MESSAGE", ""))
        expect(e["MESSAGE_ID"] == IDS["KNOB_APPLIED"] and e["PRIORITY"] == "6" and e["SYSLOG_IDENTIFIER"] == "npu-tuned"
               and e["MESSAGE"] == "thp/enabled: madvise -> never",
               f"knob applied: MESSAGE_ID={e['MESSAGE_ID']} NPU_TUNED_KNOB=thp/enabled \"{e['MESSAGE']}\"")
        with open(os.path.join(root, knobtest.THP, "enabled"), "w") as f:
            f.write("always")
        e = collect(lambda e: e.get("MESSAGE_ID") == IDS["KNOB_CHANGED_BY_OTHER"])
        expect(e["NPU_TUNED_KNOB"] == "thp/enabled" and e["PRIORITY"] == "5" and "changed by someone else" in e["MESSAGE"],
               f"knob changed by someone else: \"{e['MESSAGE']}\"")
        d.send_signal(signal.SIGHUP)
        e = collect(lambda e: e.get("MESSAGE_ID") == IDS["POLICY_RELOADED"])
        expect(e["MESSAGE"] == "Policy reloaded." and e["PRIORITY"] == "6", "policy reloaded")
        with open(os.path.join(policy, "50-host.json"), "w") as f:
            f.write("{ broken")
        d.send_signal(signal.SIGHUP)
        e = collect(lambda e: e.get("MESSAGE_ID") == IDS["POLICY_RELOADED"] and e["PRIORITY"] == "3")
        expect(e["MESSAGE"].startswith("Policy reload failed, previous policy kept: ") and "50-host.json" in e["MESSAGE"],
               f"reload failed: \"{e['MESSAGE'][:90]}...\"")
        d.send_signal(signal.SIGTERM)
        e = collect(lambda e: e.get("MESSAGE_ID") == IDS["KNOB_APPLIED"] and "restored" in e.get("MESSAGE", ""))
        expect(d.wait(10) == 0, f"restored on SIGTERM, as entries too (\"{e['MESSAGE']}\")")
        text = open(stderr_path).read()
        expect(re.search(r"^<6>Host knobs", text, re.M) and "->" not in text,
               "plain lines go to the stream with a <N> prefix; events only to the journal")
    finally:
        done.set()
        if d.poll() is None:
            d.kill()
            d.wait()
    # Without JOURNAL_STREAM naming stderr: plain stderr, events included.
    out = subprocess.run([exe, "--root", root, "--state-dir", os.path.join(tmp, "none"), "--restore"],
                         env=dict(os.environ, JOURNAL_STREAM="1:1"), capture_output=True, text=True, timeout=20)
    expect(out.returncode == 0 and "npu-tuned:" in out.stderr and "<6>" not in out.stderr,
           "a stale JOURNAL_STREAM (not our stderr): plain stderr")
print("PASS")
