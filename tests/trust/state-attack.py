#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Attacks on the state directory (docs/trust.md, "State"): files another user planted must
never make npu-tuned write or pin anything.

  fake   A planted knob journal whose entry points path= at a file it should not
         (a root-owned "victim"), below a fake root: refused in a world-writable or
         nobody-owned state directory, in a symlinked one, and, in a trusted directory,
         the entry's path is derived from its backend and id, never taken as written.
  live   A planted affinity record for a root process in a world-writable state
         directory: `--restore` must not re-pin it (the process's real affinity is
         read back). Acts on a child of this test only.

Usage: state-attack.py NPU_TUNED fake|live
"""
import os
import pwd
import subprocess
import sys
import tempfile

NPU_TUNED, MODE = sys.argv[1], sys.argv[2]
NOBODY = pwd.getpwnam("nobody").pw_uid
FAILED = []


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xffffffffffffffff
    return h


def journal(root, path, original="pwned", desired="never"):
    body = ("npu-tuned-journal 1\nboot_id \nroot %s\n" % root +
            "knob seq=1 backend=thp id=thp/enabled path=%s cpu=-1 format=plain state=applied "
            "error=0 original=%s desired=%s prior=\n" % (path, original, desired)).encode()
    return body + b"end entries=1 fnv1a64=%016x\n" % fnv1a64(body)


def check(what, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + what + (": " + detail if detail and not ok else ""))
    if not ok:
        FAILED.append(what)


def restore(state_dir, root):
    return subprocess.run([NPU_TUNED, "--root", root, "--state-dir", state_dir, "--restore"],
                          capture_output=True, text=True, timeout=30)


def plant(state_dir, name, data, owner=0, mode=0o600):
    p = os.path.join(state_dir, name)
    with open(p, "wb") as f:
        f.write(data)
    os.chown(p, owner, owner)
    os.chmod(p, mode)


def fake():
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "root")
        os.mkdir(root)
        victim = os.path.join(root, "victim")
        with open(victim, "w") as f:
            f.write("never\n")

        def victim_untouched():
            with open(victim) as f:
                ok = f.read() == "never\n"
            with open(victim, "w") as f:
                f.write("never\n")  # each case starts from the same victim
            return ok

        # 1. World-writable state directory (as /tmp is for everyone).
        sd = os.path.join(tmp, "ww")
        os.mkdir(sd)
        os.chmod(sd, 0o777)
        plant(sd, "knobs.journal", journal(root, "/victim"))
        before = sorted(os.listdir(sd))
        p = restore(sd, root)
        check("world-writable state dir: --restore fails", p.returncode != 0, p.stderr)
        check("world-writable state dir: says why", "writable" in p.stderr, p.stderr)
        check("world-writable state dir: victim untouched", victim_untouched())
        check("world-writable state dir: nothing written there", sorted(os.listdir(sd)) == before,
              str(os.listdir(sd)))

        # 2. A state directory another user owns (made by nobody, mode 0700).
        sd = os.path.join(tmp, "nobodys")
        os.mkdir(sd, 0o700)
        plant(sd, "knobs.journal", journal(root, "/victim"))
        os.chown(sd, NOBODY, NOBODY)
        p = restore(sd, root)
        check("nobody-owned state dir: --restore fails", p.returncode != 0, p.stderr)
        check("nobody-owned state dir: victim untouched", victim_untouched())
        check("nobody-owned state dir: nothing written there", os.listdir(sd) == ["knobs.journal"],
              str(os.listdir(sd)))

        # 3. The state directory is a symlink (to a trusted-looking directory).
        real = os.path.join(tmp, "real")
        os.mkdir(real, 0o700)
        plant(real, "knobs.journal", journal(root, "/victim"))
        link = os.path.join(tmp, "link")
        os.symlink(real, link)
        p = restore(link, root)
        check("symlinked state dir: --restore fails", p.returncode != 0, p.stderr)
        check("symlinked state dir: victim untouched", victim_untouched())

        # 4. A trusted directory, but a journal file another user owns / can write.
        sd = os.path.join(tmp, "badfile")
        os.mkdir(sd, 0o700)
        plant(sd, "knobs.journal", journal(root, "/victim"), owner=NOBODY)
        p = restore(sd, root)
        check("nobody-owned journal: --restore fails", p.returncode != 0, p.stderr)
        check("nobody-owned journal: victim untouched", victim_untouched())
        plant(sd, "knobs.journal", journal(root, "/victim"), mode=0o666)
        p = restore(sd, root)
        check("world-writable journal: --restore fails", p.returncode != 0, p.stderr)
        check("world-writable journal: victim untouched", victim_untouched())

        # 5. A trusted directory and file whose entry names the wrong path: the path comes
        # from the backend and the id (thp/enabled), never from the journal.
        sd = os.path.join(tmp, "trusted")
        os.mkdir(sd, 0o700)
        plant(sd, "knobs.journal", journal(root, "/victim"))
        p = restore(sd, root)
        check("journal path that is not its id's: victim untouched", victim_untouched(), p.stderr)
        check("journal path that is not its id's: reported", "not the file of" in p.stderr, p.stderr)


def affinity_of(pid):
    return os.sched_getaffinity(pid)


def live():
    if os.cpu_count() < 2 or len(os.sched_getaffinity(0)) < 2:
        print("SKIP: needs 2 usable CPUs")
        sys.exit(77)
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot_id = f.read().strip()
    child = subprocess.Popen(["sleep", "60"])
    try:
        with open("/proc/%d/stat" % child.pid) as f:
            start = int(f.read().rsplit(")", 1)[1].split()[19])
        before = affinity_of(child.pid)
        cpus = sorted(before)
        applied = "%d-%d" % (cpus[0], cpus[-1]) if cpus == list(range(cpus[0], cpus[-1] + 1)) else \
            ",".join(map(str, cpus))
        record = ('{"version":1,"boot_id":"%s","pid":%d,"start_time":%d,"restore_on_stop":true,'
                  '"threads":[{"tid":%d,"original":"%d","applied":"%s"}]}\n'
                  % (boot_id, child.pid, start, child.pid, cpus[0], applied)).encode()
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            sd = os.path.join(tmp, "ww")
            os.mkdir(sd)
            os.chmod(sd, 0o777)
            # Planted by nobody, as another user would.
            subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "sh", "-c",
                            'cat > "$1"', "sh", os.path.join(sd, "affinity-%d.json" % child.pid)],
                           input=record, check=True)
            p = restore(sd, "/")
            check("planted affinity record: --restore fails", p.returncode != 0, p.stderr)
            check("planted affinity record: the process keeps its affinity", affinity_of(child.pid) == before,
                  "%s -> %s" % (sorted(before), sorted(affinity_of(child.pid))))
            check("planted affinity record: left in place", os.path.exists(
                os.path.join(sd, "affinity-%d.json" % child.pid)))
    finally:
        child.kill()
        child.wait()


{"fake": fake, "live": live}[MODE]()
if FAILED:
    print("%d check(s) failed" % len(FAILED))
    sys.exit(1)
