# SPDX-License-Identifier: GPL-2.0-only
"""Shared by the live placement tests (daemon-live.py, affinity-record-live.py): skip/fail,
the kernel's view of a process's threads, and the test policy that places threads-target
by role on this machine's two CPUs."""
import json
import os
import signal
import subprocess
import sys
import time


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


def require_root_and_two_cpus():
    """The two CPUs (control, compute) the test policy hands out; skips (77) when the
    machine cannot run the test, and says why."""
    if os.geteuid() != 0:
        skip("needs root (the proc connector and placing another process)")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        skip(f"needs 2 usable CPUs, this machine gives {len(cpus)}")
    return cpus[0], cpus[1]


def allowed(pid, tid):
    """The thread's Cpus_allowed_list as a set, as the kernel says."""
    with open(f"/proc/{pid}/task/{tid}/status", errors="surrogateescape") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                out = set()
                for part in line.split()[1].split(","):
                    a, _, b = part.partition("-")
                    out.update(range(int(a), int(b or a) + 1))
                return out
    return None


def threads(pid):
    """tid -> comm of every thread of pid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm", errors="surrogateescape") as f:  # any bytes
                out[int(tid)] = f.read().strip()
        except FileNotFoundError:
            pass
    return out


def tracer_of(pid):
    """The pid of the process ptracing pid (0: none), as its status says."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return 0


def affinities(pid):
    return {tid: (comm, allowed(pid, tid)) for tid, comm in threads(pid).items()}


def want(pid, tid, comm, control_cpu, compute_cpu):
    """The CPU set the test policy gives a thread of threads-target."""
    if tid == pid or comm.startswith("ctl-"):
        return {control_cpu}
    if comm.startswith("work-"):
        return {compute_cpu}
    return None


def wait_placed(pid, n_threads, control_cpu, compute_cpu, timeout=10.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = affinities(pid)
        if len(last) == n_threads and all(want(pid, t, c, control_cpu, compute_cpu) == a
                                          for t, (c, a) in last.items()):
            return last
        time.sleep(0.01)
    fail(f"threads of {pid} not placed within {timeout} s: {last}")


def placing_policy(comment, user="root"):
    """threads-target on node 0 by role: control (main thread, ctl-*) one CPU, compute the
    other; no host knobs, housekeeping 0 so both CPUs of a 2-CPU machine are handed out.
    user=None: the rule matches any user's threads-target."""
    match = {"exe": "*/threads-target", "user": user} if user else {"exe": "*/threads-target"}
    return {
        "version": 1,
        "comment": comment,
        "host": {"irq": {"housekeeping_cpus_per_node": 0, "steer_accelerator_irqs": False}},
        "processes": [{
            "name": "threads-target",
            "match": match,
            "accelerators": "none",
            "unattributed": {"action": "place", "nodes": "0"},
            "threads": {
                "control": {"main_thread": True, "names": ["ctl-*"], "cpus": 1},
                "compute": {"cpus": 1},
            },
            "memory": {"migrate": False},
            "restore_on_stop": True,
        }],
    }


def write_policy(policy_dir, policy):
    """policy as policy_dir/test.json, 0644 whatever the umask (the daemon refuses a policy
    file others may write); returns its path, for a test that rewrites it."""
    path = os.path.join(policy_dir, "test.json")
    with open(path, "w") as f:
        json.dump(policy, f)
    os.chmod(path, 0o644)
    return path


def kill_all(*procs):
    """Kills and reaps each of procs that is still running (None: one never started): the
    cleanup a live test does whatever happened."""
    for p in procs:
        if p and p.poll() is None:
            p.kill()
            p.wait()


class Run:
    """A temporary policy and state directory, daemons started in them, one target."""

    def __init__(self, npu_tuned, target_bin, policy, tmp):
        self.npu_tuned, self.target_bin = npu_tuned, target_bin
        self.tmp = tmp
        self.policy_dir = os.path.join(tmp, "policies")
        self.state_dir = os.path.join(tmp, "state")
        os.mkdir(self.policy_dir)
        os.mkdir(self.state_dir, 0o700)
        write_policy(self.policy_dir, policy)
        self.log = open(os.path.join(tmp, "daemon.log"), "w+")
        self.daemon = None
        self.target = None

    def start_daemon(self):
        self.log.write("--- start ---\n")
        self.log.flush()
        start = self.log.tell()
        self.daemon = subprocess.Popen([self.npu_tuned, "--policy-dir", self.policy_dir, "--state-dir", self.state_dir,
                                        "-v"], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(self.log.name) as f:
                f.seek(start)
                if "Running:" in f.read():
                    return
            if self.daemon.poll() is not None:
                fail(f"daemon exited {self.daemon.returncode}: {open(self.log.name).read()}")
            time.sleep(0.02)
        fail("daemon did not start within 10 s")

    def kill_daemon(self):
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait(10)
        self.daemon = None

    def stop_daemon(self):
        self.daemon.send_signal(signal.SIGTERM)
        rc = self.daemon.wait(10)
        self.daemon = None
        if rc != 0:
            fail(f"daemon exited {rc} on SIGTERM")

    def restore(self):
        r = subprocess.run([self.npu_tuned, "--restore", "--state-dir", self.state_dir], stdout=self.log,
                           stderr=subprocess.STDOUT)
        if r.returncode != 0:
            fail(f"npu-tuned --restore exited {r.returncode}: {open(self.log.name).read()}")

    def start_target(self, late=True, mover=False):
        args = [self.target_bin, "--control", "2", "--compute", "2", "--timeout", "60"]
        if late:
            args += ["--late-ms", "500"]
        if mover:
            args += ["--move-on-usr1", "1"]
        self.target = subprocess.Popen(args, stdout=subprocess.PIPE)
        if not self.target.stdout.readline().startswith(b"ready"):
            fail("threads-target did not start")
        return self.target.pid

    def close(self):
        if self.target:
            self.target.kill()
            self.target.wait()
        if self.daemon and self.daemon.poll() is None:
            self.daemon.kill()
            self.daemon.wait()
        self.log.seek(0)
        print("--- daemon log ---")
        print(self.log.read())


def explain(npu_tuned, policy_dir, pid):
    """npu-tuned --explain PID --json with the test's policy, parsed."""
    import json
    import subprocess
    ex = subprocess.run([npu_tuned, "--policy-dir", policy_dir, "--explain", str(pid), "--json"],
                        capture_output=True, text=True, timeout=20)
    if ex.returncode != 0:
        fail(f"--explain exited {ex.returncode}: {ex.stderr}")
    return json.loads(ex.stdout)


def wait_running(daemon, log_path, timeout=15.0):
    """Until the daemon logs "Running:"; fails with its log when it exits or takes too long."""
    deadline = time.monotonic() + timeout
    while "Running:" not in open(log_path).read():
        if time.monotonic() > deadline or daemon.poll() is not None:
            fail(f"daemon did not start: {open(log_path).read()}")
        time.sleep(0.02)
