# SPDX-License-Identifier: GPL-2.0-only
"""Shared by the live attack tests in tests/trust/: a temporary place for binaries that
`nobody` can run (under the name an attack needs), and the real daemon started in a
temporary policy and state directory, with its log."""
import json
import os
import shutil
import subprocess
import sys
import time

AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


def require_root():
    if os.geteuid() != 0:
        print("SKIP: needs root (the proc connector, running processes as nobody)")
        sys.exit(77)
    if shutil.which("setpriv") is None:
        print("SKIP: needs setpriv (util-linux) to run the attacks as nobody")
        sys.exit(77)


def install(tmp, binary, name):
    """binary copied to TMP/bin/NAME, where nobody can run it (TMP made 0755)."""
    os.chmod(tmp, 0o755)
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir, 0o755, exist_ok=True)
    path = os.path.join(bindir, name)
    shutil.copy(binary, path)
    os.chmod(path, 0o755)
    return path


def start_as_nobody(argv, what, **popen):
    """argv run as nobody with pipes for stdin and stdout, once it has said "ready"."""
    proc = subprocess.Popen(AS_NOBODY + argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, **popen)
    if not proc.stdout.readline().startswith(b"ready"):
        proc.kill()
        proc.wait()
        fail(f"{what} did not start")
    return proc


class Daemon:
    """npu-tuned -v on a policy (a dict, or a shipped policy's file name), state in TMP."""

    def __init__(self, npu_tuned, tmp, policy):
        policy_dir = os.path.join(tmp, "policies")
        os.makedirs(policy_dir, exist_ok=True)
        if isinstance(policy, dict):
            with open(os.path.join(policy_dir, "test.json"), "w") as f:
                json.dump(policy, f)
        else:
            src = os.environ.get("NPU_SOURCE_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
            shutil.copy(os.path.join(src, "policies", policy), policy_dir)
        self.policy_dir = policy_dir
        self.log_file = open(os.path.join(tmp, "daemon.log"), "w+")
        self.proc = subprocess.Popen([npu_tuned, "--policy-dir", policy_dir, "--state-dir", os.path.join(tmp, "state"),
                                      "-v"], stdout=self.log_file, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while "Running:" not in self.log():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                fail(f"the daemon did not start: {self.log()[-2000:]}")
            time.sleep(0.02)

    def log(self):
        self.log_file.seek(0)
        return self.log_file.read()

    def cpu_s(self):
        """Its CPU time so far (utime + stime)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)
