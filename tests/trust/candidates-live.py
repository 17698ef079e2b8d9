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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trustlive import AS_NOBODY, Daemon, fail, install, require_root  # noqa: E402

npu_tuned, forker = sys.argv[1], sys.argv[2]
N = int(os.environ.get("NPT_CANDIDATES", "5000"))
require_root()
python = shutil.which("python3")

with tempfile.TemporaryDirectory() as tmp:
    fake = install(tmp, forker, "python3")
    daemon = Daemon(npu_tuned, tmp, "10-default.json")
    flood = worker = None
    try:
        # With a visible-devices variable, so that its children are worth inheriting from.
        flood = subprocess.Popen(AS_NOBODY + [fake, str(N)], stdout=subprocess.PIPE, start_new_session=True,
                                 env={"PATH": "/usr/bin:/bin", "ASCEND_RT_VISIBLE_DEVICES": "0"})
        if not flood.stdout.readline().startswith(b"forked"):
            fail("the flood did not start")
        time.sleep(1.0)  # the daemon has seen the forks
        t0 = time.monotonic()
        worker = subprocess.Popen(["bash", "-c", f'exec -a VLLM::Worker_TP0 {python} -c "import time; time.sleep(60)"'],
                                  env={**os.environ, "ASCEND_RT_VISIBLE_DEVICES": "0"})
        while f"matched pid={worker.pid} " not in daemon.log():
            if time.monotonic() - t0 > 1.0:
                fail(f"the real worker {worker.pid} was not managed within 1 s with {N} candidates of nobody")
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
        daemon.stop()
print("candidates-live: all passed")
