#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The affinity record is written before the first pin, without fsync, and only when the
rule restores something.

The real npu-tuned places threads-target by role (as affinity-record-live.py), with the
state directory on the filesystem the test's temporary directory is on (a disk one here).
Asserted from the kernel and the state directory:
  1. the moment this test sees the main thread pinned (polling its Cpus_allowed_list), the
     record is already there, whole, with the main thread's true original; kill -9 of the
     daemon right then, and `npu-tuned --restore` gives every thread its original back (so
     the unsynced record loses nothing when the daemon dies);
  2. with restore_on_stop: false nothing at all is written to the state directory while the
     process is placed (polled throughout), and SIGTERM leaves the threads placed;
  3. an unreadable record last written before this boot (torn by a power loss: records are
     not fsync'ed) is discarded by --restore; the same one written in this boot is kept
     for a human to inspect;
  4. a placed thread that changes role is moved after its record is rewritten: the daemon
     killed (strace injects SIGKILL into its next sched_setaffinity, so the record is
     written and the set never made) leaves the thread on its old set, and --restore still
     gives it its original;
  5. a placement of 6 threads in 2 roles writes the record once (strace counts the
     creates and renames), and the record lists the plan's sets; the process's stat and
     status are each read once, its thread list never (strace counts the opens);
  6. the cgroup mount table is read when the daemon starts, and for a placement only when
     the kernel says it changed (strace, attached after the start, counts the opens of
     /proc/self/mounts: none for the first placement nor the second, one after a tmpfs
     mount);
  7. the first record is created under its own name and written by one write(): the daemon
     killed at that write (strace, -P on the record) leaves an empty record and no thread
     pinned, and --restore removes the empty record (and a stale temp file) and leaves
     the threads as they are;
  8. after a first placement the next process's first record goes into the ready record
     (STATE_DIR/affinity-ready, made empty after that first pin) by one pwrite() before its
     pin, and is renamed to its own name after it: the daemon killed at that pwrite leaves
     the ready record empty and nothing pinned; killed at the rename (the main thread
     pinned, its record only in the ready one), --restore adopts it and gives every thread
     its original; each time no affinity file is left.
Needs root in the initial namespaces (and mount(8)), 2 online CPUs and strace (Debian's, in the test
dependencies): skips (77) and says which otherwise.
Usage: affinity-record-order-live.py NPU_TUNED THREADS_TARGET"""
import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

npu_tuned, target_bin = sys.argv[1], sys.argv[2]

import livetest
from livetest import affinities, allowed, fail, placing_policy, require_root_and_two_cpus

control_cpu, compute_cpu = require_root_and_two_cpus()
original = set(os.sched_getaffinity(0))
policy = placing_policy("affinity-record-order-live: place threads-target by role")


def records(state_dir):
    """The records in state_dir (not the temp file of one being rewritten meanwhile)."""
    return sorted(n for n in os.listdir(state_dir) if n.startswith("affinity-") and n.endswith(".json"))


# 1. Record before the pin: present the instant the pin is visible, and enough after kill -9.
with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
    run = livetest.Run(npu_tuned, target_bin, policy, tmp)
    try:
        run.start_daemon()
        pid = run.start_target(late=False)
        deadline = time.monotonic() + 10
        while allowed(pid, pid) == original:
            if time.monotonic() > deadline:
                fail(f"pid {pid} was not pinned within 10 s")
        seen = records(run.state_dir)
        run.kill_daemon()
        if seen != [f"affinity-{pid}.json"]:
            fail(f"the main thread was pinned before its record existed: state dir held {seen}")
        with open(os.path.join(run.state_dir, seen[0])) as f:
            rec = json.load(f)
        main = [t for t in rec["threads"] if t["tid"] == pid]
        want = ",".join(str(c) for c in sorted(original))
        if len(original) == 2:
            want = f"{min(original)}-{max(original)}"
        if not main or main[0]["original"] != want:
            fail(f"the record does not hold the main thread's original {want}: {rec}")
        print(f"ok: the main thread was pinned only after {seen[0]} held its original")
        time.sleep(0.2)
        if allowed(pid, pid) == original:
            fail("the main thread lost its pin after kill -9 (was the daemon killed?)")
        run.restore()
        for tid, (comm, a) in affinities(pid).items():
            if a != original:
                fail(f"after kill -9 at the first pin and --restore, thread {tid} ({comm}) has {sorted(a)}")
        print("ok: kill -9 at the first pin, then --restore: every thread back on its original")
    finally:
        run.close()

# 2. restore_on_stop: false writes nothing.
keep = copy.deepcopy(policy)
keep["processes"][0]["restore_on_stop"] = False
with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
    run = livetest.Run(npu_tuned, target_bin, keep, tmp)
    try:
        run.start_daemon()
        pid = run.start_target(late=True)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:  # through the first burst and the late thread
            written = [n for n in os.listdir(run.state_dir) if n.startswith("affinity-")]  # a record or its temp file
            if written:
                fail(f"a rule that restores nothing had {written} written")
            time.sleep(0.001)
        placed = livetest.wait_placed(pid, 6, control_cpu, compute_cpu)
        run.stop_daemon()
        if affinities(pid) != placed or records(run.state_dir):
            fail(f"restore_on_stop: false: after SIGTERM {affinities(pid)}, records {records(run.state_dir)}")
        print("ok: restore_on_stop: false: no record written, the placement kept after SIGTERM")
    finally:
        run.close()

# 3. A torn record: discarded when it predates this boot, kept when it does not.
with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
    state = os.path.join(tmp, "state")
    os.mkdir(state, 0o700)
    path = os.path.join(state, "affinity-4000000.json")
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:  # as the daemon writes them
        f.write('{"version":1,"boot_id":"')  # cut short
    r = subprocess.run([npu_tuned, "--restore", "--state-dir", state], capture_output=True, text=True)
    if not os.path.exists(path):
        fail(f"a torn record written in this boot was removed: {r.stdout}{r.stderr}")
    os.utime(path, (0, 0))  # last written in 1970: before this boot
    r = subprocess.run([npu_tuned, "--restore", "--state-dir", state], capture_output=True, text=True)
    if os.path.exists(path) or r.returncode != 0:
        fail(f"a torn record from an earlier boot was not discarded (rc {r.returncode}): {r.stdout}{r.stderr}")
    print("ok: a torn record from an earlier boot is discarded, one from this boot kept")
# 4. Killed between the record of a move and the move itself.
strace = shutil.which("strace")
if not strace:
    print("SKIP: strace is not installed (tools/install-deps.sh --test installs it)")
    sys.exit(77)


def strace_attached(pid, *args):
    """strace -f attached to pid with args, once it is (its TracerPid says so)."""
    tracer = subprocess.Popen([strace, "-qq", "-f", "-p", str(pid), *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while livetest.tracer_of(pid) != tracer.pid:
        if time.monotonic() > deadline or tracer.poll() is not None:
            tracer.kill()
            fail(f"strace did not attach to pid {pid}: {tracer.stderr.read() if tracer.poll() is not None else ''}")
        time.sleep(0.01)
    return tracer


def end_traced(tracer, child, run):
    """The end of a traced case, whatever happened: the tracer (None: not started), the
    gated child (None: none), then the run."""
    if tracer:
        tracer.kill()
        tracer.wait()
    if child:
        try:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    run.close()


with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
    run = livetest.Run(npu_tuned, target_bin, policy, tmp)
    tracer = None
    try:
        run.start_daemon()
        pid = run.start_target(late=False, mover=True)
        placed = livetest.wait_placed(pid, 6, control_cpu, compute_cpu)
        mover = [t for t, (comm, _) in placed.items() if comm == "work-mover"][0]
        # SIGKILL in place of the daemon's next sched_setaffinity: the one that moves the mover.
        tracer = strace_attached(run.daemon.pid, "-e", "trace=sched_setaffinity",
                                 "-e", "inject=sched_setaffinity:error=EPERM:signal=SIGKILL:when=1")
        os.kill(pid, signal.SIGUSR1)  # work-mover renames itself ctl-moved: control now
        try:
            run.daemon.wait(10)
        except subprocess.TimeoutExpired:
            fail("the daemon was not killed at its sched_setaffinity for the renamed thread")
        run.daemon = None
        comm, now = affinities(pid)[mover]
        if comm != "ctl-moved" or now != {compute_cpu}:
            fail(f"the kill did not land between the record and the move: thread {mover} ({comm}) has {sorted(now)}")
        run.restore()
        for tid, (comm, a) in affinities(pid).items():
            if a != original:
                fail(f"killed between a move's record and its set, then --restore: thread {tid} ({comm}) has {sorted(a)}")
        print("ok: killed between a move's record and its set, then --restore: every thread back on its original")
    finally:
        end_traced(tracer, None, run)
# 5. One write per placement: the record lists the plan's role sets, so the threads placed
# after the main thread (the burst, renames, a late one) need no write of their own.
with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
    run = livetest.Run(npu_tuned, target_bin, policy, tmp)
    tracer = None
    try:
        run.start_daemon()
        trace = os.path.join(tmp, "renames")
        tracer = strace_attached(run.daemon.pid, "-o", trace, "-e", "trace=rename,renameat,renameat2,openat")
        pid = run.start_target(late=True)
        livetest.wait_placed(pid, 6, control_cpu, compute_cpu)
        time.sleep(0.3)
        tracer.terminate()
        tracer.wait()
        tracer = None
        with open(trace) as f:
            lines = f.readlines()
        opens = [line for line in lines if "openat(" in line]
        # A write is a create of the record under its own name (the first) or a rename of
        # its temp file onto it (a rewrite).
        creates = [line for line in opens if f'"affinity-{pid}.json"' in line and "O_CREAT" in line and "= -1" not in line]
        renames = [line for line in lines if "rename" in line and f'"affinity-{pid}.json"' in line and "= 0" in line]
        if len(creates) != 1 or renames:
            fail(f"placing 6 threads in 2 roles wrote the record {len(creates) + len(renames)} times, not once by a create "
                 f"under its own name: {creates + renames}")
        # What the match and the placement read of the process, once each: its stat (the
        # pidfd is opened before it, so it needs no second read) and its status (the
        # match's uid and the claim's credentials). Its thread list not at all: at its exec
        # it has the main thread alone, and every later thread comes by its FORK event.
        for what, want_reads in (("stat", 1), ("status", 1), ("task", 0)):
            reads = [line for line in opens if f'"proc/{pid}/{what}"' in line]
            if len(reads) != want_reads:
                fail(f"the daemon opened /proc/{pid}/{what} {len(reads)} times, not {want_reads}: {reads}")
        with open(os.path.join(run.state_dir, f"affinity-{pid}.json")) as f:
            rec = json.load(f)
        if sorted(rec.get("sets", [])) != sorted({str(control_cpu), str(compute_cpu), want}):
            fail(f"the record does not list the plan's sets: {rec}")
        print("ok: 6 threads placed in 2 roles, the record written once (created, no rename), listing the plan's sets; "
              "stat and status read once, the thread list never")
    finally:
        end_traced(tracer, None, run)
# 6. The cgroup mount table (daemon/placement/process-cpuset.c) is read at the start, and again
# only when the kernel reports a change (POLLPRI on the open /proc/self/mounts): the first two
# placements read it not at all, a placement after a mount reads it once.
with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
    run = livetest.Run(npu_tuned, target_bin, policy, tmp)
    tracer = None
    mnt = os.path.join(tmp, "mnt")
    mounted = False
    try:
        run.start_daemon()
        trace = os.path.join(tmp, "opens")
        tracer = strace_attached(run.daemon.pid, "-o", trace, "-e", "trace=openat")

        def mounts_reads():
            with open(trace) as f:
                return sum(1 for line in f if '"proc/self/mounts"' in line and "= -1" not in line)

        def place_one():
            pid = run.start_target(late=False)
            livetest.wait_placed(pid, 5, control_cpu, compute_cpu)
            run.target.kill()
            run.target.wait()
            run.target = None
            time.sleep(0.2)  # its exit handled, and strace's output written
            return mounts_reads()

        first = place_one()
        if first != 0:
            fail(f"the first placement read /proc/self/mounts ({first} opens), which the start had read")
        second = place_one()
        if second != first:
            fail(f"a placement with the mount table unchanged read /proc/self/mounts again ({first} -> {second} opens)")
        os.mkdir(mnt)
        subprocess.run(["mount", "-t", "tmpfs", "npu-tuned-test", mnt], check=True)
        mounted = True
        third = place_one()
        if third != second + 1:
            fail(f"the placement after a mount read /proc/self/mounts {third - second} times, not once")
        print(f"ok: the mount table not read for the first placement nor the second, once after a mount ({first}, {second}, {third} opens)")
    finally:
        if tracer:
            tracer.kill()
            tracer.wait()
        if mounted:
            subprocess.run(["umount", mnt])
        run.close()
def gated_target():
    """A threads-target that waits for the write end returned (a tracer attached first) to exec."""
    go_r, go_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(go_w)
        os.read(go_r, 1)
        os.execv(target_bin, [target_bin, "--control", "2", "--compute", "2", "--timeout", "60"])
    os.close(go_r)
    return child, go_w


# 7. Killed at the write of a first record: the record is created under its own name and
# written by one write() before any pin, so the file is empty and nothing is pinned.
with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
    run = livetest.Run(npu_tuned, target_bin, policy, tmp)
    tracer = None
    child = None
    try:
        run.start_daemon()
        child, go_w = gated_target()
        record = os.path.join(run.state_dir, f"affinity-{child}.json")
        tracer = strace_attached(run.daemon.pid, "-P", record, "-e", "trace=write",
                                 "-e", "inject=write:signal=SIGKILL:when=1")
        os.write(go_w, b"x")
        os.close(go_w)
        try:
            run.daemon.wait(10)
        except subprocess.TimeoutExpired:
            fail("the daemon was not killed at the write of the first record")
        run.daemon = None
        if not os.path.exists(record) or os.path.getsize(record) != 0:
            fail(f"killed at the write of the first record: {record} is not there empty: {os.listdir(run.state_dir)}")
        time.sleep(0.2)  # the target's threads are up
        pinned = {tid: a for tid, (comm, a) in affinities(child).items() if a != original}
        if pinned:
            fail(f"killed before the first record was written, yet threads were pinned: {pinned}")
        stale = os.path.join(run.state_dir, "affinity-4000001.json.tmp")
        with open(stale, "w") as f:
            f.write('{"version":1,')  # a rewrite a death cut short
        run.restore()
        left = sorted(os.listdir(run.state_dir))
        if any(n.startswith("affinity-") for n in left):
            fail(f"--restore left {left} (the empty record and the stale temp file should be gone)")
        if any(a != original for _, a in affinities(child).values()):
            fail(f"--restore of an empty record changed the target's threads: {affinities(child)}")
        print("ok: killed at the first record's write: an empty record, nothing pinned; --restore removes it and a stale temp file")
    finally:
        end_traced(tracer, child, run)

# 8. The ready record, the first record of every process after the first: one pwrite()
# before the pin, a rename after it; killed at either, nothing is lost.
def place_one_and_end(run):
    pid = run.start_target(late=False)
    livetest.wait_placed(pid, 5, control_cpu, compute_cpu)
    run.target.kill()
    run.target.wait()
    run.target = None
    time.sleep(0.2)  # its exit handled


for kill_at in ("pwrite64", "renameat"):
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        run = livetest.Run(npu_tuned, target_bin, policy, tmp)
        tracer = None
        child = None
        try:
            run.start_daemon()
            place_one_and_end(run)
            ready = os.path.join(run.state_dir, "affinity-ready")
            if not os.path.exists(ready) or os.path.getsize(ready) != 0:
                fail(f"after a first placement there is no empty ready record: {os.listdir(run.state_dir)}")
            child, go_w = gated_target()
            # The fill is the only pwrite64 on the ready record; the rename onto the child's
            # record the only renameat of a placement of 4 threads in 2 roles (case 5).
            where = ["-P", ready] if kill_at == "pwrite64" else []
            tracer = strace_attached(run.daemon.pid, *where, "-e", f"trace={kill_at}",
                                     "-e", f"inject={kill_at}:signal=SIGKILL:when=1")
            os.write(go_w, b"x")
            os.close(go_w)
            try:
                run.daemon.wait(10)
            except subprocess.TimeoutExpired:
                fail(f"the daemon was not killed at the {kill_at} of the ready record")
            run.daemon = None
            time.sleep(0.2)  # the target's threads are up
            pinned = {tid: a for tid, (comm, a) in affinities(child).items() if a != original}
            left = records(run.state_dir)
            if kill_at == "pwrite64":
                if os.path.getsize(ready) != 0 or left or pinned:
                    fail(f"killed at the ready record's write: its size {os.path.getsize(ready)}, records {left}, "
                         f"pinned {pinned} (want empty, none, none)")
            else:
                with open(ready) as f:
                    rec = json.load(f)
                if rec.get("pid") != child or left or child not in pinned:
                    fail(f"killed at the ready record's rename: it holds {rec}, records {left}, pinned {pinned} (want "
                         f"pid {child}'s record, no other, its main thread pinned)")
            run.restore()
            left = sorted(n for n in os.listdir(run.state_dir) if n.startswith("affinity-"))
            if left:
                fail(f"killed at the ready record's {kill_at}, --restore left {left}")
            moved = {tid: (comm, sorted(a)) for tid, (comm, a) in affinities(child).items() if a != original}
            if moved:
                fail(f"killed at the ready record's {kill_at}, then --restore: threads not on their original: {moved}")
            what = "empty, nothing pinned" if kill_at == "pwrite64" else "the main thread pinned, the record in it"
            print(f"ok: killed at the ready record's {kill_at} ({what}); --restore leaves every thread on its "
                  "original and no affinity file")
        finally:
            end_traced(tracer, child, run)
print("affinity-record-order-live: all passed")
