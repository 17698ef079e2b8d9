#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The driver as an attribution source, with the real watcher (tests/watcher/watcher-probe)
and the kernel's proc connector, the driver being a stand-in NVML (stub-nvml.c):

  - a matched process with no visible-devices variable and no device file open is
    unattributed; once the driver lists its pid on 0000:10:00.0 it is attributed to
    nvidia:0 "from the driver" (source driver, variable nvml);
  - a pid the driver lists that is no managed process changes nothing;
  - a later answer that no longer names it takes nothing back (a reload re-evaluates);
  - a query that hangs is killed at its deadline (2 s), said so on stderr, and leaves no
    process behind;
  - a process that began after a query began is not taken from that query's answer,
    though the answer names its pid (the pid may have been another process's when the
    driver looked), only from the next query's.

Needs root in the initial namespaces (the proc connector; the library must be root's):
skips (77) and says which otherwise.
Usage: driver-live.py WATCHER_PROBE NPT_SERVER DRIVER_QUERY STUB_NVML"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

probe_bin, server_bin, query_bin, stub = sys.argv[1:5]
stub_dir = os.path.join(os.path.dirname(stub), "driver")


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def skip(msg):
    print(f"SKIP: {msg}")
    sys.exit(77)


if os.geteuid() != 0:
    skip("needs root (the proc connector; the driver library must be root's)")


def untrusted_above(path):
    """The first directory above path that is not root's alone ("DIR (uid U, mode M)"), or None."""
    d = path
    while d != "/":
        d = os.path.dirname(d)
        st = os.stat(d)
        if st.st_uid != 0 or st.st_mode & 0o022:
            return f"{d} (uid {st.st_uid}, mode {st.st_mode & 0o7777:o})"
    return None


# The query loads no library below a directory others may write: where the build tree lies
# below one (a checkout under /tmp), the stub goes into a directory of root's under /run.
os.makedirs(stub_dir, exist_ok=True)
lib = os.path.realpath(tempfile.mkdtemp(prefix="lib.", dir=stub_dir))
above = untrusted_above(lib)
if above:
    shutil.rmtree(lib)
    lib = os.path.realpath(tempfile.mkdtemp(prefix="npu-tuned-driver-test.", dir="/run"))
    above_run = untrusted_above(lib)
    if above_run:
        shutil.rmtree(lib)
        skip(f"{above} is above the build tree and {above_run} above /run's: no library below either may be loaded")
    print(f"the build tree lies below {above}, which others may write: the stub is loaded from {lib}")
pids_file = os.path.join(lib, "stub-nvml-pids")  # the stub's switches, beside it
hang_file = os.path.join(lib, "stub-nvml-hang")
os.chmod(lib, 0o755)
shutil.copy(stub, os.path.join(lib, "libnvidia-ml.so.1"))
os.chmod(os.path.join(lib, "libnvidia-ml.so.1"), 0o644)

lines, lock = [], threading.Lock()


def reader(stream):
    for l in stream:
        with lock:
            lines.append(l.rstrip("\n"))


def fields(l):
    return dict(re.findall(r"(\w+)=(\S*)", l))


def wait_line(pred, timeout, what, start=0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with lock:
            for l in lines[start:]:
                if pred(l):
                    return l
        time.sleep(0.05)
    with lock:
        fail(f"no {what} within {timeout} s; the probe said:\n" + "\n".join(lines[-30:]))


procs = []
err = open(os.path.join(lib, "probe.err"), "w+")
try:
    probe = subprocess.Popen([probe_bin, "--accel", "nvidia:0", "--accel", "nvidia:1",
                              "--rule", "srv", "--exe", os.path.realpath(server_bin),
                              "--device-retry-ms", "100", "--reconcile-ms", "1000",
                              "--driver-query", query_bin, "--driver-library-dir", lib,
                              "--driver-interval-ms", "300", "-v",
                              "--then", "--rule", "srv", "--exe", os.path.realpath(server_bin)],
                             stdout=subprocess.PIPE, stderr=err, text=True, env={"PATH": "/usr/bin:/bin"},
                             start_new_session=True)
    procs.append(probe)
    threading.Thread(target=reader, args=(probe.stdout,), daemon=True).start()
    first = wait_line(lambda l: l.startswith(("ready", "failed")), 15, "ready line")
    if first.startswith("failed"):
        if fields(first).get("error") == str(-110):
            skip("the proc connector did not acknowledge: not in the initial namespaces")
        fail(f"the probe failed to start: {first}")

    srv = subprocess.Popen([server_bin, "pause"], env={"PATH": "/usr/bin:/bin"}, start_new_session=True)
    procs.append(srv)
    m = wait_line(lambda l: l.startswith("matched ") and fields(l)["pid"] == str(srv.pid), 10, "match")
    if fields(m)["source"] != "none":
        fail(f"attributed before the driver said anything: {m}")
    time.sleep(1.0)  # queries ran and named nobody
    with lock:
        early = [l for l in lines if l.startswith("changed ") and fields(l)["pid"] == str(srv.pid)]
    if early:
        fail(f"changed before the driver named it: {early}")
    print(f"ok: pid {srv.pid} matched, unattributed while the driver names nobody")

    # Another pid (no managed process) on the second GPU, and ours on the first.
    with open(pids_file, "w") as f:
        f.write(f"1 {os.getpid()}\n0 {srv.pid}\n")
    c = wait_line(lambda l: l.startswith("changed ") and fields(l)["pid"] == str(srv.pid), 10,
                  "the driver's attribution")
    f = fields(c)
    if f["source"] != "driver" or f["variable"] != "nvml" or f["accels"] != "nvidia:0" or not int(f["changes"]) & 4:
        fail(f"from the driver: {c}")
    print(f"ok: attributed from the driver: {c.split(' cmdline=')[0]}")
    with lock:
        others = [l for l in lines if fields(l).get("pid") == str(os.getpid())]
    if others:
        fail(f"a pid the driver named that is not managed showed up: {others}")

    # The driver forgets it (the next answer names other pids): the attribution stays. A
    # second unattributed process makes the watcher ask again; a reload then works out
    # every attribution anew, with that answer.
    os.unlink(pids_file)
    err.seek(0, os.SEEK_END)
    asked_from = err.tell()
    srv2 = subprocess.Popen([server_bin, "pause"], env={"PATH": "/usr/bin:/bin"}, start_new_session=True)
    procs.append(srv2)
    wait_line(lambda l: l.startswith("matched ") and fields(l)["pid"] == str(srv2.pid), 10, "second match")
    deadline = time.monotonic() + 8
    while True:
        err.seek(asked_from)
        if "The driver query named 2 process(es)" in err.read():
            break
        if time.monotonic() > deadline:
            fail("no new answer after the second match")
        time.sleep(0.05)
    with lock:
        n = len(lines)
    probe.send_signal(signal.SIGHUP)
    wait_line(lambda l: l.startswith("reloaded"), 10, "reloaded line", start=n)
    c = wait_line(lambda l: l.startswith("changed ") and fields(l)["pid"] == str(srv.pid), 10,
                  "the re-evaluation after the reload", start=n)
    f = fields(c)
    if f["source"] != "driver" or f["accels"] != "nvidia:0":
        fail(f"the reload, with an answer that no longer names it, took the driver's attribution back: {c}")
    print("ok: kept when a later answer does not name it (re-evaluated at a reload)")

    # A hanging library: killed at the deadline, said so, nothing left behind (the second
    # process is still unattributed: the watcher asks again).
    err.seek(0, os.SEEK_END)
    hang_from = err.tell()
    open(hang_file, "w").close()
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        err.seek(hang_from)
        if "did not answer within 2000 ms" in err.read():
            break
        time.sleep(0.1)
    else:
        err.seek(0)
        fail(f"no deadline message; stderr: {err.read()[-2000:]}")
    # The query that was killed (the last one asked before the message) is gone, reaped:
    # the next one may run already (the second process still waits, the library still hangs).
    err.seek(hang_from)
    text = err.read()
    said = text.index("did not answer within 2000 ms")
    killed = re.findall(r"Asking the driver which processes use which device \(pid (\d+)\)", text[:said])
    if not killed:
        fail(f"no query was asked before the deadline message: {text[-2000:]}")
    deadline = time.monotonic() + 3
    while os.path.exists(f"/proc/{killed[-1]}"):
        if time.monotonic() > deadline:
            fail(f"the killed query {killed[-1]} is still there (or not reaped) 3 s after the deadline")
        time.sleep(0.05)
    if probe.poll() is not None:
        fail(f"the probe died: {probe.returncode}")
    print("ok: a hanging query killed at 2 s, nothing left")

    # A process that began while a query ran: that answer names it, but only the next
    # query's is taken. The stand-in takes a second before it reads the pids; the
    # second process still waits (unattributed), so the watcher keeps asking.
    os.unlink(hang_file)
    delay_file = os.path.join(lib, "stub-nvml-delay")
    open(delay_file, "w").close()
    err.seek(0, os.SEEK_END)
    before = err.tell()
    deadline = time.monotonic() + 8
    while True:  # a query that begins from now on
        err.seek(before)
        text = err.read()
        if "Asking the driver" in text:
            break
        if time.monotonic() > deadline:
            fail("no query began")
        time.sleep(0.01)
    with lock:  # before the start: its match may be said before the next line here runs
        n = len(lines)
    late = subprocess.Popen([server_bin, "pause"], env={"PATH": "/usr/bin:/bin"}, start_new_session=True)
    procs.append(late)
    with open(pids_file, "w") as f:
        f.write(f"0 {late.pid}\n")
    wait_line(lambda l: l.startswith("matched ") and fields(l)["pid"] == str(late.pid), 10, "the late match", start=n)
    err.seek(0, os.SEEK_END)
    asked = err.tell()
    deadline = time.monotonic() + 8
    while True:  # that query's answer, which names the late process
        err.seek(before)
        text = err.read()
        if "The driver query named 1 process(es)" in text:
            break
        if time.monotonic() > deadline:
            fail(f"no answer naming the late process: {text[-1500:]}")
        time.sleep(0.05)
    time.sleep(0.5)
    with lock:
        early = [l for l in lines[n:] if l.startswith("changed ") and fields(l)["pid"] == str(late.pid)]
    if early:
        fail(f"taken from the answer of a query that began before it: {early}")
    c = wait_line(lambda l: l.startswith("changed ") and fields(l)["pid"] == str(late.pid), 10,
                  "the next query's attribution", start=n)
    if fields(c)["source"] != "driver":
        fail(f"the late process: {c}")
    print(f"ok: pid {late.pid}, begun while a query ran, taken only from the next query")
finally:
    for p in reversed(procs):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(timeout=10)
    err.seek(0)
    print("--- probe stderr (tail) ---")
    print(err.read()[-3000:])
    shutil.rmtree(lib, ignore_errors=True)
