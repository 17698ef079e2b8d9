#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Live tests of the process watcher, with the kernel's real proc connector.

Usage: watcher-live.py TEST   (basic, reload, servers, devices, overrun, overrun-burst,
                               start-race, comm-filter,
                               pid-reuse, namespace, daemon-e2e)

Most tests drive watcher-probe (the real watcher with a consumer that prints one line per
callback) and assert on its lines; daemon-e2e and namespace run the real daemon. Every
process a test starts lives in its own session and is killed by process group on every
path (normal end, failure, SIGTERM from meson's timeout); pid-reuse restores
kernel.pid_max the same way. Exit 77 (skip) only when root or the initial namespaces are
missing, with the reason.
"""

import atexit
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ.get("NPU_WATCHER_TEST_DIR") or os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(BIN, "watcher-probe")
SERVER = os.path.realpath(os.path.join(BIN, "npt-server"))
PAUSE = os.path.realpath(os.path.join(BIN, "npt-pause"))
SPAWN = os.path.join(BIN, "npt-spawn")
PIDREUSE = os.path.join(BIN, "npt-pidreuse")
DAEMON = os.environ.get("NPU_DAEMON", "")
PID_MAX = "/proc/sys/kernel/pid_max"

# A small, fixed environment for the servers: nothing from the caller's leaks in.
BASE_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C"}


class Fail(Exception):
    pass


class Skip(Exception):
    pass


# ---- Cleanup on every path ----

_sessions = []  # Popen objects, each the leader of its own session/process group
_restore = []   # callables


def cleanup():
    for p in _sessions:
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
    for p in _sessions:
        try:
            p.wait(timeout=10)
        except Exception:
            pass
    _sessions.clear()
    while _restore:
        try:
            _restore.pop()()
        except Exception as e:  # keep restoring the rest
            print(f"cleanup: {e}", file=sys.stderr)


def _on_signal(signum, frame):
    cleanup()
    sys.exit(1)


atexit.register(cleanup)
for _s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_s, _on_signal)


def start(args, env=None, stdout=subprocess.DEVNULL, stderr=None):
    p = subprocess.Popen(args, env=env if env is not None else BASE_ENV, stdout=stdout, stderr=stderr,
                         stdin=subprocess.DEVNULL, start_new_session=True, text=True)
    _sessions.append(p)
    return p


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=10)


def check(cond, msg):
    if not cond:
        raise Fail(msg)


# ---- Line readers ----

class Line:
    def __init__(self, text):
        self.text = text
        words = text.split()
        self.kind = words[0] if words else ""
        self.f = {}
        for w in words[1:]:
            if "=" in w:
                k, v = w.split("=", 1)
                self.f[k] = v

    def __getitem__(self, k):
        return self.f[k]

    def get(self, k, d=None):
        return self.f.get(k, d)

    def int(self, k):
        return int(self.f[k])

    def __repr__(self):
        return self.text


class Reader:
    """Collects the lines of a stream in a thread; wait() for one that satisfies a test."""

    def __init__(self, stream, echo_prefix=None, parse=Line):
        self.lines = []
        self.cv = threading.Condition()
        self.closed = False
        self.parse = parse
        self.echo = echo_prefix
        self.t = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self.t.start()

    def _run(self, stream):
        for raw in stream:
            raw = raw.rstrip("\n")
            if self.echo and os.environ.get("WATCHER_LIVE_VERBOSE"):
                print(self.echo + raw, file=sys.stderr)
            with self.cv:
                self.lines.append(self.parse(raw))
                self.cv.notify_all()
        with self.cv:
            self.closed = True
            self.cv.notify_all()

    def wait(self, pred, timeout, what, start=0):
        deadline = time.monotonic() + timeout
        with self.cv:
            i = start
            while True:
                while i < len(self.lines):
                    if pred(self.lines[i]):
                        return self.lines[i]
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise Fail(f"timed out ({timeout}s) waiting for {what}; last lines: {self.lines[-8:]}")
                self.cv.wait(min(left, 0.5))

    def all(self, pred=lambda l: True):
        with self.cv:
            return [l for l in self.lines if pred(l)]

    def count(self):
        with self.cv:
            return len(self.lines)


class Probe:
    def __init__(self, args, env=None):
        self.p = start([PROBE] + args, stdout=subprocess.PIPE, env=env or BASE_ENV)
        self.r = Reader(self.p.stdout, "probe: ")
        first = self.r.wait(lambda l: l.kind in ("ready", "failed"), 15, "the probe to start")
        if first.kind == "failed":
            if first.get("error") == str(-110):
                raise Skip("the proc connector did not acknowledge: not in the initial user/PID namespace")
            raise Fail(f"the probe failed to start: {first}")
        self.ready_index = self.r.count()

    def wait(self, pred, timeout=10, what="a line", start=0):
        return self.r.wait(pred, timeout, what, start)

    def matched(self, pid, timeout=10, pred=lambda l: True):
        return self.wait(lambda l: l.kind == "matched" and l.int("pid") == pid and pred(l), timeout,
                         f"matched pid={pid}")

    def stats(self):
        n = self.r.count()
        os.kill(self.p.pid, signal.SIGUSR1)
        return self.wait(lambda l: l.kind == "stats", 10, "stats", start=n)

    def no_violations(self):
        v = self.r.all(lambda l: l.kind == "violation")
        check(not v, f"callbacks for a process that reuses a managed pid: {v[:5]}")

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=10)


def require_root():
    if os.geteuid() != 0:
        raise Skip("needs root (the proc connector, /proc/PID/environ of other users, kernel.pid_max)")


def environ_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read()
    except OSError:
        return None


def children_of(pid):
    out = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def wait_steps_ready(pid, timeout=10):
    """Wait until npt-server threads is ready for its SIGUSR1 steps: it blocks SIGUSR1
    before it starts early_thread, so once that thread exists a signal is safe (sent
    earlier, it would kill the process)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            for t in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{t}/comm") as f:
                    if f.read().strip() == "early_thread":
                        return
        except OSError:
            pass
        check(time.monotonic() < deadline, f"{pid} never started early_thread")
        time.sleep(0.02)


def thread_names(probe, pid):
    names = set()
    for l in probe.r.all(lambda l: l.get("pid") == str(pid)):
        if l.kind in ("thread", "thread_new"):
            names.add(l["comm"])
        elif l.kind == "thread_renamed":
            names.add(l["new"])
    return names


# ---- Tests ----

def t_basic():
    """A started process is seen and matched; a thread created later and a thread renamed
    later are seen; exits free the entry. Also: a process that predates the watcher is
    found by the initial scan, with the threads it already has."""
    require_root()
    early = start([SERVER, "threads"])
    time.sleep(0.3)
    probe = Probe(["--rule", "threads", "--exe", SERVER, "--cmdline", "npt-server threads$",
                   "--reconcile-ms", "500", "--check-identity"])
    m = probe.matched(early.pid, 5)
    check(m["rule"] == "threads", f"wrong rule: {m}")
    check(m.int("threads") == 2, f"expected main + early_thread at the scan: {m}")
    check("early_thread" in thread_names(probe, early.pid), "early_thread missing")

    s = start([SERVER, "threads"])
    m = probe.matched(s.pid, 5)
    check(m["env"] == "read" and m.int("threads") >= 1, f"unexpected match: {m}")

    wait_steps_ready(s.pid)
    n = probe.r.count()
    os.kill(s.pid, signal.SIGUSR1)
    t = probe.wait(lambda l: l.kind == "thread_new" and l.int("pid") == s.pid and l["comm"] != "early_thread",
                   5, "the thread created later", start=n)
    tid = t.int("tid")
    check(os.path.exists(f"/proc/{s.pid}/task/{tid}"), f"thread {tid} is not a thread of {s.pid}")
    os.kill(s.pid, signal.SIGUSR1)
    probe.wait(lambda l: l.kind == "thread_renamed" and l.int("tid") == tid and l["new"] == "renamed_later",
               5, "the rename")
    os.kill(s.pid, signal.SIGUSR1)
    probe.wait(lambda l: l.kind == "thread_exit" and l.int("tid") == tid, 5, "the thread's exit")
    probe.wait(lambda l: l.kind == "reconcile" and l.int("pid") == s.pid, 5, "a reconcile of the live process")

    # Not matched: another program, and the same program with other arguments (a retitle
    # candidate, kept only while it lives).
    others = [start(["/bin/sleep", "5"]), start([SERVER, "pause", "not-threads"])]
    for _ in range(20):
        subprocess.run(["/bin/true"], env=BASE_ENV)
    time.sleep(0.5)
    for o in others:
        check(not probe.r.all(lambda l: l.kind == "matched" and l.int("pid") == o.pid), f"{o.args} was matched")

    for p in (s, early):
        kill_group(p)
        probe.wait(lambda l, p=p: l.kind == "exit" and l.int("pid") == p.pid and l["reason"] == "exited", 5,
                   f"the exit of {p.pid}")
    for o in others:
        kill_group(o)
    time.sleep(0.3)
    st = probe.stats()
    check(st.int("managed") == 0, f"entries left after every managed process exited: {st}")
    check(st.int("candidates") == 0, f"candidates left after they exited: {st}")
    probe.no_violations()
    probe.stop()


def fake_accels():
    args = []
    for i in range(8):
        args += ["--accel", f"ascend:{i}"]
    for i in range(4):
        args += ["--accel", f"nvidia:{i}"]
    return args


def server_rules():
    return [
        "--rule", "vllm-worker", "--exe", SERVER, "--cmdline", "^VLLM::Worker_TP[0-9]+", "--rank-cmdline",
        "Worker_TP([0-9]+)",
        "--rule", "sglang-scheduler", "--exe", SERVER, "--cmdline", "^sglang::scheduler_TP", "--rank-cmdline",
        "scheduler_TP([0-9]+)",
        "--rule", "mindie-backend", "--exe", SERVER, "--cmdline", "mindie-backend", "--rank-cmdline",
        "--npu_device_id ([0-9]+)",
        "--rule", "tgi-shard", "--exe", SERVER, "--cmdline", "tgi-shard", "--rank-env", "RANK",
    ]


def t_servers():
    """Programs that behave like vLLM, SGLang, MindIE and TGI: retitle (argv, comm),
    overwrite environ, spawn or fork workers. The accelerators come from the environment
    captured at exec (or inherited), the rank from the title, arguments or environment."""
    require_root()
    probe = Probe(fake_accels() + server_rules() + ["--check-identity"])

    # vLLM-Ascend, TP=2 on NPUs 4 and 5: worker R uses visible[R].
    vllm = start([SERVER, "vllm", "2"], env=dict(BASE_ENV, ASCEND_RT_VISIBLE_DEVICES="4,5"))
    got = {}
    for _ in range(2):
        l = probe.wait(lambda l: l.kind == "matched" and l["rule"] == "vllm-worker" and l.int("pid") not in got,
                       10, "a vLLM worker")
        got[l.int("pid")] = l
    for pid, l in got.items():
        rank = l.int("rank")
        check(l["accels"] == f"ascend:{4 + rank}", f"worker TP{rank}: {l}")
        check(l["source"] == "env" and l["variable"] == "ASCEND_RT_VISIBLE_DEVICES", f"source: {l}")
        check(l["comm"] == "VLLM::Worker_TP", f"comm: {l}")
        # The helper really overwrote environ: reading it now would find nothing.
        env = environ_of(pid)
        check(env is not None and b"ASCEND_RT_VISIBLE_DEVICES" not in env, f"worker {pid} environ was not wiped")
    for pid in got:
        deadline = time.monotonic() + 5
        while not {"acl_thread", "hccl_watchdog_t"} <= thread_names(probe, pid):
            check(time.monotonic() < deadline, f"thread names of {pid}: {thread_names(probe, pid)}")
            time.sleep(0.1)
    check(not probe.r.all(lambda l: l.kind == "matched" and l.int("pid") == vllm.pid), "the API process matched")

    # SGLang: the launcher's environ is overwritten before it forks schedulers (no exec):
    # they inherit what was captured at the launcher's exec.
    sgl = start([SERVER, "sglang", "2"], env=dict(BASE_ENV, CUDA_VISIBLE_DEVICES="3,1",
                                                   CUDA_DEVICE_ORDER="PCI_BUS_ID"))
    got = {}
    for _ in range(2):
        l = probe.wait(lambda l: l.kind == "matched" and l["rule"] == "sglang-scheduler" and l.int("pid") not in got,
                       10, "an SGLang scheduler")
        got[l.int("pid")] = l
    for pid, l in got.items():
        rank = l.int("rank")
        check(l["accels"] == ("nvidia:3" if rank == 0 else "nvidia:1"), f"scheduler TP{rank}: {l}")
        check(l["source"] == "env-inherited", f"source: {l}")
        check(l.int("ppid") == sgl.pid, f"ppid: {l}")
    env = environ_of(sgl.pid)
    check(env is not None and b"CUDA_VISIBLE_DEVICES" not in env, "the launcher's environ was not wiped")

    # MindIE: the backend's --npu_device_id D picks visible[D].
    mindie = start([SERVER, "mindie", "1", "2"], env=dict(BASE_ENV, ASCEND_RT_VISIBLE_DEVICES="2,3,6,7"))
    got = {}
    for _ in range(2):
        l = probe.wait(lambda l: l.kind == "matched" and l["rule"] == "mindie-backend" and l.int("pid") not in got,
                       10, "a MindIE backend")
        got[l.int("pid")] = l
    check(sorted(l["accels"] for l in got.values()) == ["ascend:3", "ascend:6"], f"MindIE: {list(got.values())}")

    # TGI: shards get RANK in their environment; the rank picks RANK % n of the visible list.
    tgi = start([SERVER, "tgi", "3"], env=dict(BASE_ENV, CUDA_VISIBLE_DEVICES="2,3"))
    got = {}
    for _ in range(3):
        l = probe.wait(lambda l: l.kind == "matched" and l["rule"] == "tgi-shard" and l.int("pid") not in got,
                       10, "a TGI shard")
        got[l.int("pid")] = l
    for l in got.values():
        check(l["accels"] == f"nvidia:{[2, 3][l.int('rank') % 2]}", f"TGI shard: {l}")

    for p in (vllm, sgl, mindie, tgi):
        kill_group(p)
    time.sleep(0.5)
    check(probe.stats().int("managed") == 0, "workers left in the registry")
    probe.no_violations()
    probe.stop()


def t_devices():
    """Open device files, by st_rdev, re-checked until found (a server opens its device
    only after loading the model). A process holding only a non-accelerator device (like
    /dev/davinci_manager) stays unattributed."""
    require_root()
    tmp = tempfile.mkdtemp(prefix="wd-", dir="/tmp")  # dev_path holds 64 bytes
    _restore.append(lambda: subprocess.run(["rm", "-rf", tmp]))
    dev = os.path.join(tmp, "davinci3")
    manager = os.path.join(tmp, "davinci_manager")
    os.mknod(dev, 0o600 | stat.S_IFCHR, os.makedev(1, 7))      # the rdev of /dev/full
    os.mknod(manager, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # the rdev of /dev/null
    probe = Probe(["--accel", f"ascend:3:{dev}", "--accel", "ascend:0", "--accel", "nvidia:0",
                   "--rule", "dev", "--exe", SERVER, "--cmdline", "open-device",
                   "--device-retry-ms", "200", "--reconcile-ms", "1000"])
    late = start([SERVER, "open-device", dev, "1200"])
    m = probe.matched(late.pid, 5)
    check(m["source"] == "none", f"attributed before it opened anything: {m}")
    c = probe.wait(lambda l: l.kind == "changed" and l.int("pid") == late.pid, 8, "the device files to be found")
    check(c["source"] == "device-files" and c["accels"] == "ascend:3" and c.int("changes") & 4,
          f"device files: {c}")

    mgr = start([SERVER, "open-device", manager, "100"])
    m = probe.matched(mgr.pid, 5)
    time.sleep(2.5)
    ch = probe.r.all(lambda l: l.kind == "changed" and l.int("pid") == mgr.pid)
    check(not ch, f"attributed from a non-accelerator device: {ch}")
    for p in (late, mgr):
        kill_group(p)
    probe.stop()


def read_pids(path):
    with open(path) as f:
        return [int(x) for x in f.read().split()]


def t_overrun():
    """The watcher is stopped, 5,000 matching processes are started and kept alive, the
    watcher continues: all are found (ENOBUFS -> resync)."""
    require_root()
    n = 5000
    probe = Probe(["--rule", "pause", "--exe", PAUSE, "--max", "6000", "--rcvbuf-kib", "256",
                   "--reconcile-ms", "60000"])
    pidfile = tempfile.mktemp(prefix="watcher-overrun-", dir=BIN)
    _restore.append(lambda: os.path.exists(pidfile) and os.unlink(pidfile))
    os.kill(probe.p.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    spawner = start([SPAWN, str(n), "0", pidfile, PAUSE], stdout=subprocess.PIPE)
    out = Reader(spawner.stdout, "spawn: ", parse=lambda s: s)
    out.wait(lambda s: s.startswith("spawned"), 45, "5,000 processes to start")
    t_spawned = time.monotonic() - t0
    os.kill(probe.p.pid, signal.SIGCONT)
    pids = set(read_pids(pidfile))
    check(len(pids) == n, f"spawner started {len(pids)}")
    t1 = time.monotonic()
    deadline = t1 + 40
    while True:
        found = {l.int("pid") for l in probe.r.all(lambda l: l.kind == "matched")} & pids
        if len(found) == n:
            break
        check(time.monotonic() < deadline, f"found {len(found)} of {n}")
        time.sleep(0.2)
    t_found = time.monotonic() - t1
    st = probe.stats()
    check(st.int("overruns") >= 1 and st.int("resyncs") >= 1, f"no overrun/resync happened: {st}")
    print(f"overrun: {n} processes started in {t_spawned:.1f}s while the watcher was stopped; all found "
          f"{t_found:.2f}s after it continued; {st}")
    kill_group(spawner)
    deadline = time.monotonic() + 20
    while probe.stats().int("managed") > 0:
        check(time.monotonic() < deadline, "entries left after the processes were killed")
        time.sleep(0.3)
    # Killed processes linger as zombies until PID 1 reaps them.
    deadline = time.monotonic() + 20
    while True:
        left = [p for p in pids if os.path.exists(f"/proc/{p}")]
        if not left:
            break
        check(time.monotonic() < deadline, f"{len(left)} test processes survived")
        time.sleep(0.3)
    probe.stop()


def wait_found(probe, pids, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        found = {l.int("pid") for l in probe.r.all(lambda l: l.kind == "matched")} & pids
        if len(found) == len(pids):
            return
        check(time.monotonic() < deadline, f"{what}: found {len(found)} of {len(pids)}")
        time.sleep(0.2)


def t_overrun_burst():
    """An overrun of the default buffer (4 MiB asked, 8 MiB taken: more events than one
    read of 4,096 took) while the watcher is stopped, then a second wave of processes
    started while it catches up and resyncs: every one of both waves is found. The kernel
    drops every event of a congested socket, silently, until its queue is read empty; a
    resync run before that missed the second wave for good."""
    require_root()
    n1, n2 = 5200, 800
    probe = Probe(["--rule", "pause", "--exe", PAUSE, "--max", "8000", "--reconcile-ms", "60000"])
    files = []
    for w in (1, 2):
        files.append(tempfile.mktemp(prefix=f"watcher-burst{w}-", dir=BIN))
        _restore.append(lambda f=files[-1]: os.path.exists(f) and os.unlink(f))
    os.kill(probe.p.pid, signal.SIGSTOP)
    wave1 = start([SPAWN, str(n1), "0", files[0], PAUSE], stdout=subprocess.PIPE)
    Reader(wave1.stdout, "wave 1: ", parse=lambda s: s).wait(lambda s: s.startswith("spawned"), 60,
                                                              f"{n1} processes to start")
    os.kill(probe.p.pid, signal.SIGCONT)
    wave2 = start([SPAWN, str(n2), "300", files[1], PAUSE], stdout=subprocess.PIPE)
    Reader(wave2.stdout, "wave 2: ", parse=lambda s: s).wait(lambda s: s.startswith("spawned"), 60,
                                                              f"{n2} more processes to start")
    pids1, pids2 = set(read_pids(files[0])), set(read_pids(files[1]))
    check(len(pids1) == n1 and len(pids2) == n2, f"spawners started {len(pids1)} and {len(pids2)}")
    t1 = time.monotonic()
    wait_found(probe, pids1, 40, "the first wave")
    wait_found(probe, pids2, 20, "the second wave (started while the watcher resynced)")
    st = probe.stats()
    check(st.int("overruns") >= 1, f"no overrun happened: {st}")
    print(f"overrun-burst: {n1} + {n2} processes all found {time.monotonic() - t1:.2f}s after the watcher "
          f"continued; {st}")
    kill_group(wave1)
    kill_group(wave2)
    deadline = time.monotonic() + 20
    while probe.stats().int("managed") > 0:
        check(time.monotonic() < deadline, "entries left after the processes were killed")
        time.sleep(0.3)
    probe.stop()


def t_start_race():
    """Processes started continuously while the watcher starts are all found: by the scan
    after the subscription's ack, or by their events."""
    require_root()
    pidfile = tempfile.mktemp(prefix="watcher-race-", dir=BIN)
    _restore.append(lambda: os.path.exists(pidfile) and os.unlink(pidfile))
    spawner = start([SPAWN, "1500", "2000", pidfile, PAUSE], stdout=subprocess.PIPE)
    out = Reader(spawner.stdout, "spawn: ", parse=lambda s: s)
    time.sleep(0.7)
    probe = Probe(["--rule", "race", "--exe", PAUSE, "--reconcile-ms", "60000"])
    before = len(read_pids(pidfile))
    out.wait(lambda s: s.startswith("spawned"), 45, "the spawner to finish")
    pids = set(read_pids(pidfile))
    check(0 < before < len(pids), f"the watcher did not start while processes were being started ({before})")
    deadline = time.monotonic() + 15
    while True:
        found = {l.int("pid") for l in probe.r.all(lambda l: l.kind == "matched")} & pids
        if found == pids:
            break
        check(time.monotonic() < deadline, f"missed {len(pids - found)} of {len(pids)}: {sorted(pids - found)[:10]}")
        time.sleep(0.2)
    print(f"start-race: {len(pids)} processes, {before} started before the watcher was ready, all found")
    kill_group(spawner)
    probe.stop()


def t_pid_reuse():
    """With a small kernel.pid_max, a process B takes the pid of a managed process A
    whose exit event was lost (the watcher was stopped, its socket full): no callback is
    ever made for A once B holds the pid, and B is managed as itself."""
    require_root()
    with open(PID_MAX) as f:
        orig = f.read().strip()

    def restore():
        with open(PID_MAX, "w") as f:
            f.write(orig)
    _restore.append(restore)

    probe = Probe(["--rule", "reuse", "--exe", SERVER, "--cmdline", "npt-server reuse-(a|b)$",
                   "--rcvbuf-kib", "64", "--reconcile-ms", "200", "--check-identity"])
    with open(PID_MAX, "w") as f:
        f.write("4096")
    try:
        helper = start([PIDREUSE, "400", SERVER, "reuse-a", "--", SERVER, "reuse-b"], stdout=subprocess.PIPE)
        out = Reader(helper.stdout, "pidreuse: ", parse=Line)
        pid_a = out.wait(lambda l: l.kind == "a", 10, "process A").int("pid")
        a = probe.matched(pid_a, 5)
        start_a = a["start"]
        os.kill(probe.p.pid, signal.SIGSTOP)
        os.kill(helper.pid, signal.SIGUSR1)
        b = out.wait(lambda l: l.kind == "b", 40, "a process to reuse A's pid")
        check(b.get("pid") == str(pid_a), f"could not reuse pid {pid_a}: {b}")
        os.kill(probe.p.pid, signal.SIGCONT)
        mb = probe.matched(pid_a, 10, lambda l: l["start"] != start_a)
        time.sleep(1.5)  # several reconciles with B in place
    finally:
        restore()
        _restore.remove(restore)
    lines = probe.r.all(lambda l: l.get("pid") == str(pid_a))
    exits = [i for i, l in enumerate(lines) if l.kind == "exit" and l["start"] == start_a]
    check(len(exits) == 1, f"A's exit reported {len(exits)} times: {lines}")
    after = [l for l in lines[exits[0] + 1:] if l.get("start") == start_a]
    check(not after, f"callbacks for A after its exit: {after}")
    check(lines.index(mb) > exits[0], "B matched before A was released")
    check("reuse-b" in mb["cmdline"], f"B: {mb}")
    probe.no_violations()
    print(f"pid-reuse: pid {pid_a} reused after {b['tries']} forks; A released as "
          f"{lines[exits[0]]['reason']}; {probe.stats()}")
    kill_group(helper)
    probe.stop()


def t_namespace():
    """Under unshare -U or unshare -p --fork the daemon exits non-zero within a few
    seconds with a message naming the cause."""
    require_root()
    check(DAEMON and os.path.exists(DAEMON), "NPU_DAEMON not set")
    for cmd, word in ((["unshare", "-U", DAEMON], "user namespace"),
                      (["unshare", "-p", "--fork", DAEMON], "PID namespace")):
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=20, env=BASE_ENV)
        dt = time.monotonic() - t0
        check(r.returncode != 0, f"{cmd}: exit status 0")
        check(dt < 5, f"{cmd}: took {dt:.1f}s")
        check("initial user and PID namespaces" in r.stderr and word in r.stderr, f"{cmd}: message: {r.stderr}")
        print(f"namespace: {' '.join(cmd[:-1])}: exit {r.returncode} after {dt:.1f}s: {r.stderr.strip()}")


def write_policy(rules):
    """A policy directory holding one file with these process rules (root-owned, 0644)."""
    d = tempfile.mkdtemp(prefix="npu-watcher-policy-")
    path = os.path.join(d, "test.json")
    with open(path, "w") as f:
        json.dump({"version": 1, "processes": rules}, f)
    os.chmod(path, 0o644)
    return d


def t_daemon_e2e():
    """The real daemon: with a policy of no rules it watches and stops cleanly; with a JSON
    policy whose rule names a server, it matches the process, sees its threads and its exit."""
    require_root()
    empty = write_policy([])
    d = start([DAEMON, "-v", "--policy-dir", empty, "--state-dir", empty], stderr=subprocess.PIPE)
    r = Reader(d.stderr, "daemon: ", parse=lambda s: s)
    r.wait(lambda s: "Watching processes: 0 rule(s)" in s, 10, "the daemon to watch")
    d.send_signal(signal.SIGTERM)
    check(d.wait(timeout=10) == 0, "the daemon did not stop cleanly")

    pdir = write_policy([{"name": "e2e", "match": {"exe": SERVER, "cmdline": "npt-server threads$"},
                          "accelerators": "auto", "unattributed": {"action": "leave"}}])
    d = start([DAEMON, "-v", "--policy-dir", pdir, "--state-dir", pdir], stderr=subprocess.PIPE)
    r = Reader(d.stderr, "daemon: ", parse=lambda s: s)
    r.wait(lambda s: "Watching processes: 1 rule(s)" in s, 10, "the daemon to watch")
    s = start([SERVER, "threads"])
    r.wait(lambda l: f"matched pid={s.pid} " in l and "rule=e2e" in l, 5, "the daemon to match")
    wait_steps_ready(s.pid)
    os.kill(s.pid, signal.SIGUSR1)
    r.wait(lambda l: f"thread_new pid={s.pid} " in l, 5, "the daemon to see the new thread")
    kill_group(s)
    r.wait(lambda l: f"gone pid={s.pid} " in l and "reason=exited" in l, 5, "the daemon to see the exit")
    d.send_signal(signal.SIGTERM)
    check(d.wait(timeout=10) == 0, "the daemon did not stop cleanly")


def t_reload():
    """A policy reload (SIGHUP) re-matches every known process: one that no longer matches
    is released, one that matches now is managed, and the --explain path evaluates a single
    process without events."""
    require_root()
    probe = Probe(["--rule", "old", "--exe", SERVER, "--cmdline", "npt-server threads$",
                   "--then", "--rule", "new", "--exe", SERVER, "--cmdline", "npt-server pause reload$"])
    s1 = start([SERVER, "threads"])
    s2 = start([SERVER, "pause", "reload"])
    probe.matched(s1.pid, 5, lambda l: l["rule"] == "old")
    time.sleep(0.3)
    check(not probe.r.all(lambda l: l.kind == "matched" and l.int("pid") == s2.pid), "matched before the reload")
    n = probe.r.count()
    os.kill(probe.p.pid, signal.SIGHUP)
    probe.wait(lambda l: l.kind == "exit" and l.int("pid") == s1.pid and l["reason"] == "unmatched", 5,
               "the old rule's process to be released", start=n)
    probe.wait(lambda l: l.kind == "matched" and l.int("pid") == s2.pid and l["rule"] == "new", 5,
               "the new rule's process to be managed", start=n)
    r = probe.wait(lambda l: l.kind == "reloaded", 5, "the reload", start=n)
    check(r.int("r") == 0 and r.int("managed") == 1, f"reload: {r}")
    probe.stop()

    rules = ["--rule", "new", "--exe", SERVER, "--cmdline", "npt-server pause reload$"]
    out = subprocess.run([PROBE, "--evaluate", str(s2.pid)] + rules, capture_output=True, text=True, timeout=10)
    e = Line(next((x for x in out.stdout.splitlines() if x.startswith("evaluated")), ""))
    check(out.returncode == 0 and e.kind == "evaluated" and e["rule"] == "new" and e.int("pid") == s2.pid,
          f"evaluate: {out.stdout} {out.stderr}")
    out = subprocess.run([PROBE, "--evaluate", str(s1.pid)] + rules, capture_output=True, text=True, timeout=10)
    check(out.returncode == 4 and "error=-2" in out.stdout, f"evaluate of a non-matching process: {out.stdout}")
    for p in (s1, s2):
        kill_group(p)


def thread_named(pid, name, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{t}/comm") as f:
                    if f.read().strip() == name:
                        return int(t)
            except OSError:
                pass
        check(time.monotonic() < deadline, f"no thread of {pid} named {name} within {timeout}s")
        time.sleep(0.02)


def t_comm_filter():
    """The connector's socket filter: while no rule picks threads by name, a thread that
    renames itself thousands of times costs the watcher no event (the kernel drops them),
    and a main thread's rename is still heard (it can change a match: here the rank). A
    reload to a rule that names threads reads their names at once and hears every later
    rename."""
    require_root()
    n = 5000  # each event queued takes ~800 bytes of the 8 MiB buffer: no overrun
    rule = ["--rule", "storm", "--exe", SERVER, "--cmdline", "npt-server renames", "--rank-comm", "rank([0-9]+)"]
    probe = Probe(["--names-by-rule"] + rule + ["--then"] + rule + ["--thread-names", "storm*"])
    st = probe.stats()
    check(st.int("socket_filter") == 1, f"the socket filter is not attached: {st}")
    s = start([SERVER, "renames", str(n)])
    probe.matched(s.pid, 5)
    thread_named(s.pid, "storm_0")  # SIGUSR1 is blocked once it exists: safe to send

    e0 = probe.stats().int("events")
    os.kill(s.pid, signal.SIGUSR1)
    tid = thread_named(s.pid, "storm_done")
    time.sleep(0.3)
    st = probe.stats()
    check(st.int("events") - e0 < n // 10, f"{n} renames of a thread reached the watcher: {e0} -> {st}")
    check(st.int("overruns") == 0, f"the socket overran: {st}")
    check(not probe.r.all(lambda l: l.kind == "thread_renamed" and l.int("pid") == s.pid),
          "a thread's rename was heard with no rule that picks threads by name")

    n0 = probe.r.count()
    os.kill(s.pid, signal.SIGUSR1)
    probe.wait(lambda l: l.kind == "changed" and l.int("pid") == s.pid and l.int("rank") == 3, 5,
               "the main thread's rename (rank3) to be heard", start=n0)

    n0 = probe.r.count()
    os.kill(probe.p.pid, signal.SIGHUP)
    probe.wait(lambda l: l.kind == "reloaded", 5, "the reload", start=n0)
    probe.wait(lambda l: l.kind == "thread_renamed" and l.int("tid") == tid and l["new"] == "storm_done", 5,
               "the reload's resync to read the thread's name", start=n0)
    e0 = probe.stats().int("events")
    os.kill(s.pid, signal.SIGUSR1)
    probe.wait(lambda l: l.kind == "thread_renamed" and l.int("tid") == tid and l["new"] == "storm_again", 30,
               "the renames after the reload to be heard")
    st = probe.stats()
    check(st.int("events") - e0 >= n, f"fewer than the {n} renames were heard after the reload: {e0} -> {st}")
    check(st.int("overruns") == 0, f"the socket overran: {st}")
    kill_group(s)
    probe.stop()


def t_leader_exits():
    """A process matched at its exec whose main thread leaves while another runs on: a
    thread it starts after that is still seen (its pidfd asked, no longer the event stream),
    and its end, which sends no EXIT of its main thread, is seen at once by its pidfd, not
    at a reconcile (set to a minute here)."""
    require_root()
    probe = Probe(["--rule", "lead", "--exe", SERVER, "--cmdline", "npt-server leader-exits$",
                   "--reconcile-ms", "60000"])
    s = start([SERVER, "leader-exits"])
    probe.matched(s.pid, 5)
    deadline = time.monotonic() + 10
    while len(os.listdir(f"/proc/{s.pid}/task")) < 2:  # lead_worker up: the signals are blocked
        check(time.monotonic() < deadline, "lead_worker did not start")
        time.sleep(0.01)
    os.kill(s.pid, signal.SIGUSR2)
    while True:  # the main thread a zombie beside lead_worker (SIGUSR1 blocked in it)
        try:
            tasks = os.listdir(f"/proc/{s.pid}/task")
            with open(f"/proc/{s.pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            if len(tasks) == 2 and state == "Z":
                break
        except OSError:
            pass
        check(time.monotonic() < deadline, "the main thread did not leave")
        time.sleep(0.01)
    probe.wait(lambda l: l.kind == "thread_exit" and l.int("pid") == s.pid and l.int("tid") == s.pid, 5,
               "the main thread's exit")
    n = probe.r.count()
    os.kill(s.pid, signal.SIGUSR1)
    probe.wait(lambda l: l.kind == "thread_new" and l.int("pid") == s.pid, 5,
               "the thread started after the main thread left", start=n)
    t0 = time.monotonic()
    os.kill(s.pid, signal.SIGUSR1)
    probe.wait(lambda l: l.kind == "exit" and l.int("pid") == s.pid and l["reason"] == "exited", 5,
               "the end of the process", start=n)
    check(time.monotonic() - t0 < 2, f"its end was seen only after {time.monotonic() - t0:.1f} s")
    st = probe.stats()
    check(st.int("managed") == 0, f"an entry left after the process ended: {st}")
    probe.stop()


TESTS = {
    "basic": t_basic,
    "leader-exits": t_leader_exits,
    "reload": t_reload,
    "servers": t_servers,
    "devices": t_devices,
    "overrun": t_overrun,
    "overrun-burst": t_overrun_burst,
    "start-race": t_start_race,
    "pid-reuse": t_pid_reuse,
    "namespace": t_namespace,
    "daemon-e2e": t_daemon_e2e,
    "comm-filter": t_comm_filter,
}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in TESTS:
        print(__doc__, file=sys.stderr)
        return 2
    t0 = time.monotonic()
    try:
        TESTS[sys.argv[1]]()
    except Skip as e:
        print(f"SKIP {sys.argv[1]}: {e}")
        return 77
    except Fail as e:
        print(f"FAIL {sys.argv[1]}: {e}")
        return 1
    finally:
        cleanup()
    print(f"OK {sys.argv[1]} ({time.monotonic() - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
