#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A user who holds their own process's mmap_lock must not stop the daemon (docs/trust.md,
"Nothing a process does can block the loop").

As `nobody`, mmap-trap mounts FUSE in its own user and mount namespace, maps the file, and
parks a thread in a read of /proc/self/mem on a page its server answers only after HOLD s;
a second thread's mmap() queues behind it, so any reader of the lock (root's read of
/proc/PID/cmdline, environ, numa_maps) sleeps until then. It renames itself once, an event
the daemon re-reads it on (the test policy matches its exe). The real npu-tuned, with the
policy that places threads-target by role on this machine's two CPUs; one trap per check:
  (a) a root threads-target started 0.5 s after the trap is armed is placed within 500 ms,
      and the watchdog pings (WATCHDOG_USEC=2 s; sd-event pings every 1/2 to 3/4 of it)
      never pause longer than 0.95 of the interval (systemd acts at the whole of it);
  (b) SIGTERM stops the daemon within 1 s;
  (c) a daemon started while the trap holds sends READY=1 within 2 s (its start-up scan
      reads the trapped process);
  (d) npu-tuned --explain of the trapped process answers within 1 s and says on stderr
      what it could not read;
  (e) D-Bus Explain() of the trapped process (a private system bus) answers within 1 s.
Before the change (the loop read /proc directly) each took until the server answered.
Needs root, /dev/fuse, user namespaces and the proc connector: skips (77), saying which.
Usage: mmap-lock-live.py NPU_TUNED THREADS_TARGET MMAP_TRAP"""
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "placement"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bus"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import buslib  # noqa: E402
import livetest  # noqa: E402
from livetest import fail, placing_policy, require_root_and_two_cpus, skip  # noqa: E402
from trustlive import AS_NOBODY, install  # noqa: E402

npu_tuned, target_bin, trap_bin = sys.argv[1], sys.argv[2], sys.argv[3]
HOLD_S = int(os.environ.get("NPT_TRAP_HOLD_S", "6"))
WATCHDOG_USEC = 2000000

control_cpu, compute_cpu = require_root_and_two_cpus()
if shutil.which("setpriv") is None:
    skip("needs setpriv (util-linux) to run the trap as nobody")
try:
    if not stat.S_ISCHR(os.stat("/dev/fuse").st_mode):
        skip("/dev/fuse is no character device")
except FileNotFoundError:
    skip("no /dev/fuse (the fuse module is not loaded)")
if not os.path.exists("/proc/self/ns/user"):
    skip("the kernel has no user namespaces")

results = []


def check(ok, what):
    results.append(ok)
    print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)


class Notify:
    """A NOTIFY_SOCKET: every datagram's lines, with when they came."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.05)
        self.path = path
        self.messages = []  # (monotonic time, line)
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            t = time.monotonic()
            self.messages += [(t, line) for line in data.decode(errors="replace").split("\n") if line]

    def first(self, line, since):
        return next((t for t, m in list(self.messages) if m == line and t >= since), None)

    def times(self, line, since, until):
        return [t for t, m in list(self.messages) if m == line and since <= t <= until]

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


def no_leak_check(env):
    """Under ASan, LeakSanitizer stops every thread at exit (ptrace), and a worker written
    off in the kernel does not stop until the trap lets it go: that wait is the
    sanitizer's, not npu-tuned's (which exit_group() ends at once). Off for the programs
    that meet the trap."""
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    return env


class Daemon:
    def __init__(self, tmp, name, policy_dir, watchdog=False):
        self.notify = Notify(os.path.join(tmp, name + ".notify"))
        env = dict(os.environ, NOTIFY_SOCKET=self.notify.path)
        env.pop("JOURNAL_STREAM", None)
        if watchdog:
            env["WATCHDOG_USEC"] = str(WATCHDOG_USEC)
        no_leak_check(env)
        self.log = open(os.path.join(tmp, name + ".log"), "w+")
        self.started = time.monotonic()
        self.proc = subprocess.Popen([npu_tuned, "--policy-dir", policy_dir, "--state-dir", os.path.join(tmp, "state"),
                                      "-v"], env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout):
        """Seconds from the start to READY=1, or None within timeout."""
        deadline = self.started + timeout
        while time.monotonic() < deadline:
            t = self.notify.first("READY=1", self.started)
            if t is not None:
                return t - self.started
            if self.proc.poll() is not None:
                fail(f"the daemon exited {self.proc.returncode}: {self.text()}")
            time.sleep(0.01)
        return None

    def text(self):
        self.log.seek(0)
        return self.log.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.notify.close()
        print(f"--- {self.log.name} ---\n{self.text()}")


class Trap:
    """mmap-trap as nobody: exec'd (the daemon sees it), then armed on demand."""

    def __init__(self, tmp):
        self.proc = subprocess.Popen(AS_NOBODY + [os.path.join(tmp, "bin", "mmap-trap"), os.path.join(tmp, "fuse"),
                                                  os.path.join(tmp, "mnt"), str(HOLD_S)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.proc.stdout.readline().decode()
        if line.startswith("SKIP:"):
            skip(f"mmap-trap: {line[5:].strip()}")
        if not line.startswith("ready"):
            fail(f"mmap-trap did not start: {line!r}, exit {self.proc.poll()}")
        self.pid = self.proc.pid

    def arm(self):
        """Hold the lock now; returns when the trap is armed (and renamed)."""
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.flush()
        if not self.proc.stdout.readline().startswith(b"armed"):
            fail("mmap-trap was not armed")
        self.armed = time.monotonic()
        # The trap holds: root's read of its cmdline would wait.
        return self.armed

    def close(self):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(HOLD_S + 5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def placed_within(pid, timeout):
    """Seconds until every thread of threads-target has its CPUs by role, or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        aff = livetest.affinities(pid)
        if len(aff) == 5 and all(livetest.want(pid, t, c, control_cpu, compute_cpu) == a for t, (c, a) in aff.items()):
            return time.monotonic() - t0
        time.sleep(0.005)
    return None


with tempfile.TemporaryDirectory() as tmp:
    install(tmp, trap_bin, "mmap-trap")
    # threads-target under a name of this test's own: another live test's daemon on the
    # same host (its policy matches */threads-target) neither places it nor shares its CPUs.
    target_copy = install(tmp, target_bin, "mmap-lock-target")
    fuse = os.path.join(tmp, "fuse")
    # /dev/fuse is root's alone here (0600 on some distributions): a node of nobody's
    # own, as a user could be given one.
    os.mknod(fuse, 0o666 | stat.S_IFCHR, os.makedev(10, 229))
    os.chmod(fuse, 0o666)
    os.mkdir(os.path.join(tmp, "mnt"))
    shutil.chown(os.path.join(tmp, "mnt"), "nobody")
    os.mkdir(os.path.join(tmp, "state"), 0o700)
    policy_dir = os.path.join(tmp, "policies")
    os.mkdir(policy_dir, 0o755)
    policy = placing_policy("mmap-lock-live: threads-target by role; the trap is matched, so it is read")
    policy["processes"][0]["match"]["exe"] = target_copy
    policy["processes"].append({
        "name": "trap",
        "match": {"exe": "*/mmap-trap"},
        "accelerators": "none",
        "unattributed": {"action": "place", "nodes": "0"},
        "memory": {"migrate": False},
    })
    with open(os.path.join(policy_dir, "test.json"), "w") as f:
        json.dump(policy, f)
    os.chmod(os.path.join(policy_dir, "test.json"), 0o644)

    daemons, traps, target = [], [], None
    try:
        # (a) placing another process, and the watchdog, while the trap holds.
        d1 = Daemon(tmp, "d1", policy_dir, watchdog=True)
        daemons.append(d1)
        if d1.wait_ready(10) is None:
            fail("the daemon did not start")
        trap = Trap(tmp)
        traps.append(trap)
        time.sleep(0.5)  # the daemon has read it at its exec
        armed = trap.arm()
        time.sleep(0.5)
        target = subprocess.Popen([target_copy, "--control", "2", "--compute", "2", "--timeout", "60"],
                                  stdout=subprocess.PIPE)
        if not target.stdout.readline().startswith(b"ready"):
            fail("threads-target did not start")
        took = placed_within(target.pid, HOLD_S + 5)
        check(took is not None and took < 0.5,
              f"(a) threads-target placed {took if took is None else round(took * 1000)} ms after its start, "
              f"the trap armed {HOLD_S} s (limit 500 ms)")
        time.sleep(max(0.0, armed + HOLD_S - time.monotonic()))
        pings = d1.notify.times("WATCHDOG=1", armed, armed + HOLD_S)
        gaps = [b - a for a, b in zip([armed] + pings, pings + [armed + HOLD_S])]
        gap = max(gaps)
        # sd-event pings every 1/2 to 3/4 of the interval; a loop that stalls shows as a
        # longer pause, and systemd kills at the interval.
        check(gap < 0.95 * WATCHDOG_USEC / 1e6,
              f"(a) watchdog pings during the hold: {len(pings)}, longest pause {gap * 1000:.0f} ms "
              f"(interval {WATCHDOG_USEC // 1000} ms, pings every 1/2-3/4 of it; limit {0.95 * WATCHDOG_USEC / 1000:.0f} ms)")
        trap.close()

        # (b) SIGTERM while the trap holds.
        trap = Trap(tmp)
        traps.append(trap)
        time.sleep(0.5)
        trap.arm()
        time.sleep(0.5)
        t0 = time.monotonic()
        d1.proc.send_signal(signal.SIGTERM)
        try:
            rc = d1.proc.wait(HOLD_S + 5)
        except subprocess.TimeoutExpired:
            rc = None
        took = time.monotonic() - t0
        check(rc == 0 and took < 1.0, f"(b) SIGTERM stopped the daemon in {took * 1000:.0f} ms, exit {rc} (limit 1 s)")
        trap.close()

        # (c) a daemon starting while a trap holds.
        trap = Trap(tmp)
        traps.append(trap)
        trap.arm()
        d2 = Daemon(tmp, "d2", policy_dir)
        daemons.append(d2)
        ready = d2.wait_ready(HOLD_S + 5)
        check(ready is not None and ready < 2.0,
              f"(c) a daemon started during the hold sent READY=1 after "
              f"{'never' if ready is None else f'{ready * 1000:.0f} ms'} (limit 2 s)")
        trap.close()
        d2.proc.send_signal(signal.SIGTERM)
        d2.proc.wait(10)

        # (d) npu-tuned --explain of the trapped process (no daemon on a bus: it reads the
        # process itself, as the daemon's Explain() of a process it has not read does).
        trap = Trap(tmp)
        traps.append(trap)
        trap.arm()
        env = no_leak_check(dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=f"unix:path={os.path.join(tmp, 'no-bus')}"))
        t0 = time.monotonic()
        try:
            ex = subprocess.run([npu_tuned, "--policy-dir", policy_dir, "--explain", str(trap.pid), "--json"],
                                env=env, capture_output=True, text=True, timeout=HOLD_S + 10)
            took, rc, err = time.monotonic() - t0, ex.returncode, ex.stderr
        except subprocess.TimeoutExpired:
            took, rc, err = time.monotonic() - t0, None, ""
        said = "took over" in err
        check(rc == 0 and took < 1.0 and said,
              f"(d) npu-tuned --explain of the trapped process answered in {took * 1000:.0f} ms, exit {rc} "
              f"(limit 1 s), saying what it could not read: {'yes' if said else 'no'}")
        if not said:
            print(err)
        trap.close()

        # (e) D-Bus Explain() of the trapped process, on a private system bus.
        if all(shutil.which(t) for t in ("dbus-daemon", "busctl")):
            bus = buslib.Bus()
            try:
                state3 = os.path.join(tmp, "state-bus")
                os.mkdir(state3, 0o700)
                d3 = buslib.start_daemon(bus, npu_tuned, policy_dir, state3, os.path.join(tmp, "d3.log"))
                trap = Trap(tmp)
                traps.append(trap)
                time.sleep(0.5)
                trap.arm()
                time.sleep(0.2)  # the daemon has taken the rename
                t0 = time.monotonic()
                p = bus.busctl("call", buslib.NAME, buslib.PATH, buslib.IFACE, "Explain", "u", str(trap.pid), check=False)
                took = time.monotonic() - t0
                check(p.returncode == 0 and took < 1.0,
                      f"(e) Explain() of the trapped process over D-Bus answered in {took * 1000:.0f} ms, "
                      f"exit {p.returncode} (limit 1 s)")
                trap.close()
                d3.send_signal(signal.SIGTERM)
                d3.wait(10)
            finally:
                print(f"--- d3.log ---\n{open(os.path.join(tmp, 'd3.log')).read()}")
                bus.close()
        else:
            print("skip (e): no dbus-daemon or busctl for a private bus")
    finally:
        if target:
            target.kill()
            target.wait()
        for t in traps:
            if t.proc.poll() is None:
                t.proc.kill()
                t.proc.wait()
        for d in daemons:
            d.close()
    sys.exit(0 if all(results) else 1)
