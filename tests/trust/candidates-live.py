#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A flood of candidates from one user must not keep a real worker from being managed
(docs/trust.md, "Bounded work").

The real npu-tuned runs the shipped default policy. As `nobody`, a program named python3
(its executable matches the rules' "*/python3*", its command line none of them: a process
that may retitle into a worker, so a candidate) forks 5,000 children that sleep; each is
a candidate too. Then a real worker starts as root (`exec -a VLLM::Worker_TP0 python3`);
it must be matched within 1 s. Before the budgets, the candidates filled the watcher's
table (4096) and the worker was never managed.
Needs root and the proc connector: skips (77) and says which otherwise.
Usage: candidates-live.py NPU_TUNED NPT_FORKER"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

npu_tuned, forker = sys.argv[1], sys.argv[2]
N = int(os.environ.get("NPT_CANDIDATES", "5000"))
if os.geteuid() != 0:
    print("SKIP: needs root (the proc connector)")
    sys.exit(77)
src = os.environ.get("NPU_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
python = shutil.which("python3")


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


with tempfile.TemporaryDirectory() as tmp:
    os.chmod(tmp, 0o755)
    bindir = os.path.join(tmp, "bin")
    os.mkdir(bindir, 0o755)
    fake = os.path.join(bindir, "python3")
    shutil.copy(forker, fake)
    os.chmod(fake, 0o755)
    policy_dir = os.path.join(tmp, "policies")
    os.mkdir(policy_dir)
    shutil.copy(os.path.join(src, "policies", "default.json"), policy_dir)
    state_dir = os.path.join(tmp, "state")
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([npu_tuned, "--policy-dir", policy_dir, "--state-dir", state_dir, "-v"],
                              stdout=log, stderr=subprocess.STDOUT)
    flood = worker = None

    def daemon_log():
        log.seek(0)
        return log.read()

    try:
        deadline = time.monotonic() + 10
        while "Running:" not in daemon_log():
            if daemon.poll() is not None or time.monotonic() > deadline:
                fail(f"daemon did not start: {daemon_log()[-2000:]}")
            time.sleep(0.02)
        # With a visible-devices variable, so that its children are worth inheriting from.
        flood = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", fake, str(N)],
                                 stdout=subprocess.PIPE, start_new_session=True,
                                 env={"PATH": "/usr/bin:/bin", "ASCEND_RT_VISIBLE_DEVICES": "0"})
        if not flood.stdout.readline().startswith(b"forked"):
            fail("the flood did not start")
        time.sleep(1.0)  # the daemon has seen the forks
        t0 = time.monotonic()
        worker = subprocess.Popen(["bash", "-c", f'exec -a VLLM::Worker_TP0 {python} -c "import time; time.sleep(60)"'],
                                  env={**os.environ, "ASCEND_RT_VISIBLE_DEVICES": "0"})
        while f"matched pid={worker.pid} " not in daemon_log():
            if time.monotonic() - t0 > 1.0:
                stats = [line for line in daemon_log().splitlines() if "candidate" in line.lower()][-3:]
                fail(f"the real worker {worker.pid} was not managed within 1 s with {N} candidates of nobody: "
                     f"{stats}")
            time.sleep(0.005)
        print(f"ok: the real worker was managed {1000 * (time.monotonic() - t0):.0f} ms after it started, "
              f"with {N} candidates of nobody")
    finally:
        if worker:
            worker.kill()
            worker.wait()
        if flood:
            os.killpg(flood.pid, signal.SIGKILL)
            flood.wait()
        daemon.terminate()
        daemon.wait(timeout=20)
print("candidates-live: all passed")
