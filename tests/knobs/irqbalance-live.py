#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""npu-tuned beside the real irqbalance (Debian's) on this machine's IRQs.

A policy declares a PCI device with MSI IRQs (the virtio balloon, by default) an
accelerator kind, so npu-tuned steers its IRQs to the node's housekeeping CPU (the first)
and keeps the other IRQs off the inference CPU (the second). irqbalance runs first, with a
1 s interval, as it would on a host. Asserted from /proc/irq/N/smp_affinity_list and from
irqbalance's own answer to "setup" on its socket:
  - npu-tuned tells it (its log says so; irqbalance reports the steered IRQs banned and the
    inference CPU banned);
  - after irqbalance rescans and rebalances (SIGHUP, then 3 of its intervals) every steered
    IRQ is still where npu-tuned put it and no balanced IRQ is on the inference CPU;
  - npu-tuned stops: irqbalance's banned IRQs and CPUs are what they were before, a CPU
    ban another client of the socket had set included.
Every IRQ affinity is saved first and written back at the end. Needs root, 2 CPUs,
irqbalance, and a PCI device with writable MSI IRQs: skips (77) and says which otherwise.
Usage: irqbalance-live.py NPU_TUNED"""
import glob
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "placement"))
import livetest  # noqa: E402
from livetest import fail, skip  # noqa: E402

npu_tuned = sys.argv[1]


if os.geteuid() != 0:
    skip("needs root (IRQ affinity, irqbalance's socket)")
cpus = sorted(os.sched_getaffinity(0))
if len(cpus) != 2:
    skip(f"needs exactly 2 CPUs to tell housekeeping from inference, has {len(cpus)}")
housekeeping, inference = cpus
irqbalance = shutil.which("irqbalance") or "/usr/sbin/irqbalance"
if not os.access(irqbalance, os.X_OK):
    skip("irqbalance is not installed (tools/install-deps.sh --test installs it)")
if subprocess.run(["pgrep", "-x", "irqbalance"], capture_output=True).returncode == 0:
    skip("an irqbalance already runs on this machine")


def cpulist(s):
    out = set()
    for part in filter(None, s.strip().split(",")):
        a, _, b = part.partition("-")
        out.add(int(a)) if not b else out.update(range(int(a), int(b) + 1))
    return out


def writable(irq):
    path = f"/proc/irq/{irq}/smp_affinity_list"
    try:
        with open(path, "w") as f:
            f.write(open(path).read())
        return True
    except OSError:
        return False


device = None
for dev in sorted(glob.glob("/sys/bus/pci/devices/*")):
    irqs = sorted(int(i) for i in os.listdir(f"{dev}/msi_irqs")) if os.path.isdir(f"{dev}/msi_irqs") else []
    if irqs and all(writable(i) for i in irqs):
        device = (os.path.basename(dev), open(f"{dev}/vendor").read().strip()[2:], open(f"{dev}/device").read().strip()[2:], irqs)
        if device[1:3] == ("1af4", "1045"):  # the balloon: nobody minds where its IRQs go
            break
if not device:
    skip("no PCI device with writable MSI IRQs")
bdf, vendor, dev_id, steered = device

saved = {}
for d in glob.glob("/proc/irq/[0-9]*"):
    try:
        saved[d] = open(d + "/smp_affinity_list").read().strip()
    except OSError:
        pass


def restore_irqs():
    for d, v in saved.items():
        try:
            with open(d + "/smp_affinity_list", "w") as f:
                f.write(v)
        except OSError:
            pass


def ask(pid, text):
    """Send one command to irqbalance's socket, as root; its reply."""
    names = [f"/run/irqbalance/irqbalance{pid}.sock".encode(), b"\0irqbalance%d.sock" % pid, b"\0" * 108]
    for name in names:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(name)
        except OSError:
            s.close()
            continue
        s.sendmsg([text.encode()], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, struct.pack("iII", os.getpid(), 0, 0))])
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
        s.close()
        return reply
    fail("cannot reach irqbalance's socket")


def setup(pid):
    """irqbalance's own view: (banned IRQs, banned CPUs)."""
    words = ask(pid, "setup").decode().split()
    irqs = {int(words[i + 1]) for i, w in enumerate(words) if w == "IRQ"}
    mask = int(words[words.index("BANNED") + 1].replace(",", ""), 16)
    return irqs, {c for c in range(64) if mask >> c & 1}


def affinity(irq):
    return cpulist(open(f"/proc/irq/{irq}/smp_affinity_list").read())


policy = {
    "version": 1,
    "comment": "irqbalance-live: a PCI device with MSI IRQs stands in for an accelerator",
    "accelerators": {"kinds": [{"name": "fake", "pci_id": f"{vendor}:{dev_id}"}],
                     "numa_node_overrides": [{"pci": bdf, "node": 0}]},
    "host": {"irq": {"manage": True, "housekeeping_cpus_per_node": 1, "keep_off_inference_cpus": True,
                     "steer_accelerator_irqs": True}},
    "processes": [],
}
ib = daemon = None
with tempfile.TemporaryDirectory() as tmp:
    try:
        policy_dir, state_dir = os.path.join(tmp, "p"), os.path.join(tmp, "s")
        os.mkdir(policy_dir)
        os.mkdir(state_dir, 0o700)
        with open(os.path.join(policy_dir, "test.json"), "w") as f:
            json.dump(policy, f)
        ib = subprocess.Popen([irqbalance, "--foreground", "--interval=1"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        time.sleep(2.5)
        if ib.poll() is not None:
            skip(f"irqbalance exited ({ib.returncode}) on this machine")
        # Another client of the socket bans the inference CPU first: npu-tuned must give
        # that ban back on stop, not irqbalance's own configuration (which has none).
        ask(ib.pid, f"settings cpus {inference}")
        deadline = time.monotonic() + 5
        while inference not in (before := setup(ib.pid))[1] and time.monotonic() < deadline:
            time.sleep(0.2)
        if inference not in before[1]:
            fail(f"irqbalance did not take another client's CPU ban: {before}")
        print(f"irqbalance {ib.pid} before: banned IRQs {sorted(before[0])}, banned CPUs {sorted(before[1])} "
              f"(CPU {inference} by another client)")
        # Control (measured, not asserted: it depends on irqbalance's load figures): the
        # same writes without telling irqbalance, then its rescan.
        balanced = [int(d.split("/")[-1]) for d in saved if d.split("/")[-1].isdigit() and writable(int(d.split("/")[-1]))]
        for irq in balanced:
            with open(f"/proc/irq/{irq}/smp_affinity_list", "w") as f:
                f.write(str(housekeeping))
        ib.send_signal(signal.SIGHUP)
        time.sleep(3.5)
        undone = [irq for irq in balanced if affinity(irq) != {housekeeping}]
        print(f"control: without being told, irqbalance moved {len(undone)} of {len(balanced)} IRQs off CPU "
              f"{housekeeping} within 3.5 s of its rescan: {undone}")
        restore_irqs()

        log = open(os.path.join(tmp, "daemon.log"), "w+")
        daemon = subprocess.Popen([npu_tuned, "--policy-dir", policy_dir, "--state-dir", state_dir, "-v"],
                                  stdout=log, stderr=subprocess.STDOUT)
        livetest.wait_running(daemon, log.name)
        text = open(log.name).read()
        if f"Told irqbalance (pid {ib.pid})" not in text:
            fail(f"the daemon did not tell irqbalance: {text}")
        placed = {irq: affinity(irq) for irq in steered}
        if any(a != {housekeeping} for a in placed.values()):
            fail(f"npu-tuned did not steer {bdf}'s IRQs to CPU {housekeeping}: {placed}")
        time.sleep(1.5)  # irqbalance takes the new CPU ban at its next rescan
        told = setup(ib.pid)
        if not set(steered) <= told[0] or inference not in told[1]:
            fail(f"irqbalance does not report the ban: IRQs {sorted(told[0])}, CPUs {sorted(told[1])}")
        print(f"ok: irqbalance reports banned IRQs {sorted(told[0])} and banned CPUs {sorted(told[1])}")

        ib.send_signal(signal.SIGHUP)  # rescan and rebalance now, then 3 more intervals
        time.sleep(3.5)
        if ib.poll() is not None:
            fail("irqbalance died")
        moved = {irq: affinity(irq) for irq in steered if affinity(irq) != {housekeeping}}
        if moved:
            fail(f"irqbalance moved steered IRQs: {moved}")
        on_inference = [int(os.path.basename(d)) for d in saved if d.split("/")[-1].isdigit() and writable(int(d.split("/")[-1]))
                        and affinity(int(d.split("/")[-1])) == {inference}]
        if on_inference:
            fail(f"IRQs on the inference CPU {inference} after irqbalance's rebalance: {on_inference}")
        print(f"ok: after irqbalance's rescan and 3 intervals: {bdf}'s IRQs {steered} still on CPU {housekeeping}, "
              f"none only on CPU {inference}")

        daemon.terminate()
        if daemon.wait(15) != 0:
            fail(f"daemon exit status {daemon.returncode}")
        # Settings take effect at irqbalance's rescan: before it, "setup" still shows the
        # CPU ban npu-tuned had set, which here equals the one before (the inference CPU).
        ib.send_signal(signal.SIGHUP)
        time.sleep(2.5)
        deadline = time.monotonic() + 5
        while (after := setup(ib.pid)) != before and time.monotonic() < deadline:
            time.sleep(0.2)
        if after != before:
            fail(f"irqbalance's settings after stop: {after}, before: {before}")
        if "Gave irqbalance" not in open(log.name).read():
            fail("the daemon did not say it gave irqbalance its settings back")
        print(f"ok: npu-tuned stopped: irqbalance has its own settings back (banned IRQs {sorted(after[0])}, "
              f"CPUs {sorted(after[1])})")
    finally:
        if daemon and daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        if ib and ib.poll() is None:
            ib.terminate()
            ib.wait(10)
        restore_irqs()
        if daemon:
            print("--- daemon log ---")
            print(open(os.path.join(tmp, "daemon.log")).read()[-4000:])
print("irqbalance-live: all passed")
