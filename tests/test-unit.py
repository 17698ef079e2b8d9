#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The systemd unit as built (units/npu-tuned.service.in): `systemd-analyze verify` says
nothing about it (its commands pointed at the built binaries, as they exist here), and
`systemd-analyze security --offline=yes` rates its exposure at most 2.5. Whether the
hardened unit still does all its work is proven under a real systemd in the guest
(tests/vm/scenarios/systemd-unit.sh). Skips (77) without systemd-analyze.
Usage: test-unit.py BUILD_DIR NPU_TUNED"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

build, exe = sys.argv[1], os.path.abspath(sys.argv[2])
if not shutil.which("systemd-analyze"):
    print("SKIP: systemd-analyze is not installed (the systemd package)")
    sys.exit(77)
with open(os.path.join(build, "units", "npu-tuned.service")) as f:
    unit = f.read()
m = re.search(r"^ExecStart=(\S+)$", unit, re.M)
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "npu-tuned.service")
    with open(path, "w") as f:
        f.write(unit.replace(m.group(1), exe))
    v = subprocess.run(["systemd-analyze", "verify", "--man=no", path], capture_output=True, text=True)
    out = (v.stdout + v.stderr).strip()
    if v.returncode != 0 or out:
        print(f"FAIL: systemd-analyze verify (exit {v.returncode}):\n{out}")
        sys.exit(1)
    print("ok: systemd-analyze verify: clean")
    s = subprocess.run(["systemd-analyze", "security", "--offline=yes", path], capture_output=True, text=True)
    level = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", s.stdout + s.stderr)
    if not level and "unrecognized option '--offline" in s.stderr:
        # systemd before 250 (Debian 11: 247) rates only loaded units, not a file.
        print("SKIP (part): this systemd-analyze has no security --offline (systemd >= 250): exposure not rated")
    elif not level:
        print(f"FAIL: no exposure level in:\n{s.stdout}{s.stderr}")
        sys.exit(1)
    elif float(level.group(1)) > 2.5:
        print(f"FAIL: exposure {level.group(1)} > 2.5:\n{s.stdout}")
        sys.exit(1)
    else:
        print(f"ok: systemd-analyze security --offline=yes: exposure {level.group(1)} (at most 2.5)")
print("PASS")
