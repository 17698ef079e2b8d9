#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""meson install into a DESTDIR puts every file in its Debian place and nothing else:
npu-tuned in sbin, npu-tunectl in bin, the unit, the bus policy, the interface XML (the
same as npu-tuned --bus-introspect prints), the shipped policy and the examples, the three
man pages, the bash completion. The installed unit starts the installed npu-tuned.
Usage: test-install.py BUILD_DIR"""
import json
import os
import subprocess
import sys
import tempfile

build = sys.argv[1]


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


opts = {o["name"]: o["value"] for o in json.loads(subprocess.run(
    ["meson", "introspect", "--buildoptions", build], capture_output=True, text=True, check=True).stdout)}
prefix = opts["prefix"]
with tempfile.TemporaryDirectory() as dest:
    p = subprocess.run(["meson", "install", "-C", build, "--destdir", dest, "--no-rebuild", "--quiet"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"meson install exited {p.returncode}: {p.stdout}{p.stderr}")
    found = set()
    for d, _, files in os.walk(dest):
        for f in files:
            found.add("/" + os.path.relpath(os.path.join(d, f), dest))
    share = f"{prefix}/{opts['datadir']}"
    want = {
        f"{prefix}/{opts['sbindir']}/npu-tuned",
        f"{prefix}/{opts['bindir']}/npu-tunectl",
        f"{share}/dbus-1/system.d/org.nputuned1.conf",
        f"{share}/dbus-1/interfaces/org.nputuned1.Manager.xml",
        f"{share}/npu-tuned/policies/10-default.json",
        f"{share}/npu-tuned/examples/50-atlas-800i-a2.json",
        f"{share}/npu-tuned/examples/50-nvidia-hgx.json",
        f"{prefix}/{opts['mandir']}/man8/npu-tuned.8",
        f"{prefix}/{opts['mandir']}/man1/npu-tunectl.1",
        f"{prefix}/{opts['mandir']}/man5/npu-tuned.policy.5",
    }
    unit = [f for f in found if f.endswith("/systemd/system/npu-tuned.service")]
    completion = [f for f in found if f.endswith("/bash-completion/completions/npu-tunectl")]
    missing = want - found
    extra = found - want - set(unit) - set(completion)
    if missing or extra or len(unit) != 1 or len(completion) != 1:
        fail(f"installed files: missing {sorted(missing)}, unexpected {sorted(extra)}, unit {unit}, completion {completion}")
    print(f"ok: {len(found)} files, each in its place (prefix {prefix}, unit {unit[0]}, completion {completion[0]})")
    with open(dest + unit[0]) as f:
        text = f.read()
    exe = f"{prefix}/{opts['sbindir']}/npu-tuned"
    if f"ExecStart={exe}" not in text or f"ExecStopPost={exe} --restore" not in text:
        fail(f"the unit does not start {exe}")
    intro = subprocess.run([dest + exe, "--bus-introspect"], capture_output=True, text=True, check=True).stdout
    with open(f"{dest}{share}/dbus-1/interfaces/org.nputuned1.Manager.xml") as f:
        if f.read() != intro:
            fail("the installed interface XML is not what npu-tuned --bus-introspect prints")
    for tool in (exe, f"{prefix}/{opts['bindir']}/npu-tunectl"):
        v = subprocess.run([dest + tool, "--version"], capture_output=True, text=True)
        if v.returncode != 0 or not v.stdout.startswith(os.path.basename(tool)):
            fail(f"{tool} --version: {v.stdout}{v.stderr}")
    print("ok: the unit starts the installed npu-tuned; the interface XML is its --bus-introspect; both tools run")
print("PASS")
