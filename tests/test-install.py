#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""meson install into a DESTDIR puts every file in its Debian place and nothing else:
npu-tuned in sbin, npu-tunectl in bin, the unit, the bus policy, the interface XML (the
same as npu-tuned --bus-introspect prints), the shipped policy and the examples, the three
man pages, the bash completion; and the admin's empty drop-in directory
/etc/npu-tuned/policies.d (in /etc whatever the prefix). The installed unit starts the
installed npu-tuned. `meson install --strip` (the README's release install) leaves no
debugging information or symbol table in the two programs (checked with readelf when
binutils is installed).
Usage: test-install.py BUILD_DIR"""
import json
import os
import shutil
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


def meson_install(dest, *extra):
    # DESTDIR in the environment, not --destdir: meson before 0.57 (Debian 11) lacks the option.
    return subprocess.run(["meson", "install", "-C", build, "--no-rebuild", "--quiet", *extra],
                          capture_output=True, text=True, env=dict(os.environ, DESTDIR=dest))


meson_version = tuple(int(x) for x in subprocess.run(["meson", "--version"], capture_output=True, text=True,
                                                     check=True).stdout.split(".")[:2])
with tempfile.TemporaryDirectory() as dest:
    p = meson_install(dest)
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
        f"{prefix}/{opts['libexecdir']}/npu-tuned-driver-query",
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
    # The same rule as the top meson.build: a relative sysconfdir means /etc, not PREFIX/etc.
    sysconf = opts["sysconfdir"] if opts["sysconfdir"].startswith("/") else "/etc"
    dropins = f"{sysconf}/npu-tuned/policies.d"
    if not os.path.isdir(dest + dropins):
        fail(f"meson install did not create the drop-in directory {dropins}")
    if os.listdir(dest + dropins):
        fail(f"the drop-in directory {dropins} is not empty: {os.listdir(dest + dropins)}")
    print(f"ok: the drop-in directory {dropins} exists, empty")
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
programs = (f"{prefix}/{opts['sbindir']}/npu-tuned", f"{prefix}/{opts['bindir']}/npu-tunectl")
if not shutil.which("readelf"):
    print("SKIP (part): readelf is not installed (binutils): meson install --strip not checked")
elif meson_version < (0, 62):
    print("SKIP (part): this meson has no install --strip (0.62 added it; -Dstrip=true at setup instead)")
else:
    with tempfile.TemporaryDirectory() as dest:
        p = meson_install(dest, "--strip")
        if p.returncode != 0:
            fail(f"meson install --strip exited {p.returncode}: {p.stdout}{p.stderr}")
        for prog in programs:
            sections = subprocess.run(["readelf", "-S", "-W", dest + prog], capture_output=True, text=True, check=True).stdout
            left = [s for s in (".debug_info", ".symtab") if f" {s} " in sections]
            if left:
                fail(f"{prog} after meson install --strip still has {left}")
            v = subprocess.run([dest + prog, "--version"], capture_output=True, text=True)
            if v.returncode != 0:
                fail(f"{prog} --version after meson install --strip: {v.stdout}{v.stderr}")
        print(f"ok: meson install --strip: {', '.join(programs)} have no .debug_info or .symtab, and run")
print("PASS")
