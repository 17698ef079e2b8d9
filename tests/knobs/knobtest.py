# SPDX-License-Identifier: GPL-2.0-only
"""Shared pieces of the host knob integration tests: a fake sysfs/procfs tree with every
knob npu-tuned owns, a reader that shows each knob as the kernel would, and a way to run
the daemon on it and wait for READY=1.

How the fake tree differs from the kernel, and how the tests compare:
- sysfs shows a bracketed choice file ("always [madvise] never") whatever was written to
  it; a plain file keeps what was written ("never"). kernel_value() therefore takes the
  bracketed word of a choice file, or the file's only word when it has no brackets, which
  is what the kernel would show as selected in both cases.
- /proc/irq/*/smp_affinity prints a zero-padded mask of nr_cpu_ids bits ("000000ff"); a
  fake file keeps the text written ("91"). Masks are compared as sets of CPUs.
- Root may write any file here; sysfs refuses files without write permission bits. The
  managed IRQ is a 0444 file, which npu-tuned must leave alone because of its mode.
- A sysfs store is atomic: the kernel shows the old value or the new one. A write to a
  fake file is open(O_TRUNC) then write(): a SIGKILL between the two leaves an empty file,
  a state no kernel shows. complete_torn_writes() finishes such a write with the value the
  journal says was being written (what the kernel would then show) and the kill matrix
  reports how often that happened.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

THP = "sys/kernel/mm/transparent_hugepage"
CPUFREQ = "sys/devices/system/cpu/cpufreq"
PCI = "sys/bus/pci/devices"
ACCELS = [  # (PCI address, node, dev_id, MSI vectors, link files)
    ("0000:c1:00.0", 0, 0, range(100, 108), {"l0s_aspm": "1", "l1_aspm": "1", "l1_1_aspm": "1", "l1_2_aspm": "0"}),
    ("0000:81:00.0", 1, 1, range(108, 116), {"l0s_aspm": "0", "l1_aspm": "1"}),
]
N_CPUS = 8           # CPU 7 is offline
OFFLINE = {7}
GENERIC_IRQS = 40    # IRQs 0..39; 100..115 are the accelerators'
MANAGED_IRQ = 9      # read-only smp_affinity: the kernel places it
ASCEND_NAMES = ["sq_send_trigger_irq", "cq_update_irq", "mb_irq", "tsdrv_irq"]

# Every knob file, its format, as the kernel shows them.
def knob_files():
    files = {
        f"{THP}/enabled": "selected",
        f"{THP}/defrag": "selected",
        f"{THP}/khugepaged/defrag": "plain",
        "proc/sys/kernel/numa_balancing": "plain",
        "sys/module/pcie_aspm/parameters/policy": "selected",
        "proc/irq/default_smp_affinity": "cpumask",
    }
    for cpu in range(N_CPUS):
        files[f"{CPUFREQ}/policy{cpu}/scaling_governor"] = "plain"
    for irq in list(range(GENERIC_IRQS)) + [v for a in ACCELS for v in a[3]]:
        files[f"proc/irq/{irq}/smp_affinity"] = "cpumask"
    for pci, _, _, _, links in ACCELS:
        for f in links:
            files[f"{PCI}/{pci}/link/{f}"] = "plain"
    return files


def write(root, rel, text, mode=0o644):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def build(root, irqbalance=False):
    """The machine: 2 NUMA nodes x 4 CPUs, CPU 7 offline, one Ascend NPU per node."""
    online = sorted(set(range(N_CPUS)) - OFFLINE)
    cpu = "sys/devices/system/cpu"
    write(root, f"{cpu}/online", "0-6\n")
    write(root, f"{cpu}/present", f"0-{N_CPUS - 1}\n")
    write(root, f"{cpu}/possible", f"0-{N_CPUS - 1}\n")
    for c in range(N_CPUS):
        write(root, f"{cpu}/cpu{c}/online", "0\n" if c in OFFLINE else "1\n")
        if c not in OFFLINE:
            write(root, f"{cpu}/cpu{c}/topology/physical_package_id", f"{c // 4}\n")
            write(root, f"{cpu}/cpu{c}/topology/core_id", f"{c % 4}\n")
        # One cpufreq policy per CPU; the offline CPU's policy is inactive (no affected CPU).
        pol = f"{CPUFREQ}/policy{c}"
        write(root, f"{pol}/affected_cpus", "\n" if c in OFFLINE else f"{c}\n")
        write(root, f"{pol}/related_cpus", f"{c}\n")
        write(root, f"{pol}/scaling_governor", "powersave\n")
        # policy3's driver offers no "performance" (a governor the driver does not offer).
        write(root, f"{pol}/scaling_available_governors",
              "powersave\n" if c == 3 else "performance powersave\n")
    node = "sys/devices/system/node"
    write(root, f"{node}/online", "0-1\n")
    write(root, f"{node}/possible", "0-1\n")
    for n, cpus in ((0, "0-3"), (1, "4-6")):
        write(root, f"{node}/node{n}/cpulist", cpus + "\n")
        write(root, f"{node}/node{n}/meminfo",
              f"Node {n} MemTotal:       16777216 kB\nNode {n} MemFree:        8388608 kB\n")
        write(root, f"{node}/node{n}/distance", "10 21\n" if n == 0 else "21 10\n")
    write(root, "proc/meminfo", "MemTotal:       33554432 kB\nMemFree:        16777216 kB\n")
    write(root, "proc/sys/kernel/random/boot_id", "0b5e55ed-fa4e-4b00-8000-000000000001\n")

    write(root, f"{THP}/enabled", "always [madvise] never\n")
    write(root, f"{THP}/defrag", "always defer defer+madvise [madvise] never\n")
    write(root, f"{THP}/khugepaged/defrag", "1\n")
    write(root, "proc/sys/kernel/numa_balancing", "1\n")
    write(root, "sys/module/pcie_aspm/parameters/policy", "[default] performance powersave powersupersave \n")

    names = {}
    for pci, n, dev_id, vectors, links in ACCELS:
        d = f"{PCI}/{pci}"
        write(root, f"{d}/vendor", "0x19e5\n")
        write(root, f"{d}/device", "0xd801\n")
        write(root, f"{d}/class", "0x120000\n")
        write(root, f"{d}/numa_node", f"{n}\n")
        write(root, f"{d}/local_cpulist", "0-3\n" if n == 0 else "4-7\n")
        write(root, f"sys/bus/pci/drivers/devdrv_device_driver/{pci}/dev_id", f"{dev_id}\n")
        for i, v in enumerate(vectors):
            write(root, f"{d}/msi_irqs/{v}", "msix\n")
            names[v] = f"PCI-MSIX-{pci} {i}-edge {ASCEND_NAMES[i % len(ASCEND_NAMES)]}"
        for f, v in links.items():
            write(root, f"{d}/link/{f}", v + "\n")

    write(root, "proc/irq/default_smp_affinity", "ff\n")
    irqs = list(range(GENERIC_IRQS)) + [v for a in ACCELS for v in a[3]]
    for irq in irqs:
        mask = "ff"
        if irq in (5, 6):
            mask = "06"      # only inference CPUs: must go to the housekeeping CPUs
        if irq == 7:
            mask = "80"      # only the offline CPU 7: no online CPU left once off inference
        write(root, f"proc/irq/{irq}/smp_affinity", mask + "\n",
              0o444 if irq == MANAGED_IRQ else 0o644)
        names.setdefault(irq, f"IO-APIC {irq}-edge dev{irq}")
    lines = ["           " + "".join(f"CPU{c:<8}" for c in online)]
    for irq in irqs:
        lines.append(f"{irq:4}: " + "".join(f"{0:10} " for _ in online) + " " + names[irq])
    lines.append(" NMI: " + "".join(f"{0:10} " for _ in online) + "  Non-maskable interrupts")
    write(root, "proc/interrupts", "\n".join(lines) + "\n")
    if irqbalance:
        write(root, "proc/4242/comm", "irqbalance\n")
    write(root, "proc/1/comm", "init\n")


def policy(dir_, **override):
    host = {
        "governor": "performance",
        "governor_scope": "all",
        "thp_enabled": "never",
        "thp_defrag": "defer",
        "khugepaged_defrag": 0,
        "irq_manage": True,
        "irq_housekeeping_cpus_per_node": 1,
        "irq_keep_off_inference_cpus": True,
        "irq_steer_accelerator_irqs": True,
        "aspm_policy": "performance",
        "aspm_accelerator_link": "off",
        "numa_balancing": 0,
        "reassert": False,
    }
    options = {}
    if "reconcile_interval_ms" in override:
        options["reconcile_interval_ms"] = override.pop("reconcile_interval_ms")
    host.update(override)
    os.makedirs(dir_, exist_ok=True)
    path = os.path.join(dir_, "50-host.json")
    with open(path, "w") as f:
        json.dump({"version": 1, "host": schema_host(host), "options": options}, f)
    os.chmod(path, 0o644)


def schema_host(h):
    """The flat knob settings above as policy schema v1's "host" object (man
    npu-tuned.policy(5)); None (or -1 for the 0/1 switches) leaves a knob alone."""
    def put(obj, key, value):
        if value is not None and value != -1:
            obj[key] = value
    cpufreq, thp, irq, aspm, host = {}, {}, {}, {}, {}
    put(cpufreq, "governor", h.get("governor"))
    if cpufreq:
        put(cpufreq, "cpus", h.get("governor_scope"))
    put(thp, "enabled", h.get("thp_enabled"))
    put(thp, "defrag", h.get("thp_defrag"))
    put(thp, "khugepaged_defrag", h.get("khugepaged_defrag"))
    put(irq, "manage", h.get("irq_manage"))
    put(irq, "housekeeping_cpus_per_node", h.get("irq_housekeeping_cpus_per_node"))
    put(irq, "keep_off_inference_cpus", h.get("irq_keep_off_inference_cpus"))
    put(irq, "steer_accelerator_irqs", h.get("irq_steer_accelerator_irqs"))
    put(aspm, "policy", h.get("aspm_policy"))
    link = h.get("aspm_accelerator_link")
    put(aspm, "accelerator_link", link.replace("-", "_") if link else None)
    for key, obj in (("cpufreq", cpufreq), ("thp", thp), ("irq", irq), ("pcie_aspm", aspm)):
        if obj:
            host[key] = obj
    put(host, "numa_balancing", h.get("numa_balancing"))
    put(host, "reassert", h.get("reassert"))
    return host


def save_knob_bytes(root):
    """The raw contents of every knob file, to put back with reset_knob_bytes()."""
    saved = {}
    for rel in knob_files():
        with open(os.path.join(root, rel), "rb") as f:
            saved[rel] = f.read()
    return saved


def reset_knob_bytes(root, saved):
    """Put every knob file back as saved (cheaper than copying the whole tree per run)."""
    for rel, data in saved.items():
        path = os.path.join(root, rel)
        with open(path, "rb") as f:
            if f.read() == data:
                continue
        with open(path, "wb") as f:
            f.write(data)


def parse_mask(text):
    cpus, bit = set(), 0
    for group in reversed(text.strip().split(",")):
        v = int(group, 16)
        for i in range(32):
            if v >> i & 1:
                cpus.add(bit + i)
        bit += 32
    return frozenset(cpus)


def kernel_value(text, fmt):
    """What the kernel would show as this knob's value (see the module docstring)."""
    text = text.strip()
    if fmt == "selected":
        words = text.split()
        chosen = [w[1:-1] for w in words if w.startswith("[") and w.endswith("]")]
        if chosen:
            assert len(chosen) == 1, f"two selected values in {text!r}"
            return chosen[0]
        assert len(words) == 1, f"no selected value in {text!r}"
        return words[0]
    if fmt == "cpumask":
        return parse_mask(text)
    return text


def snapshot(root):
    out = {}
    for rel, fmt in knob_files().items():
        path = os.path.join(root, rel)
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
            try:
                out[rel] = kernel_value(text, fmt)
            except (ValueError, AssertionError):
                out[rel] = ("unparseable", text)
    return out


def journal_entries(state_dir):
    """path -> desired value of the knob lines of the journal (format in libtune/knobs/journal.c)."""
    from urllib.parse import unquote
    entries = {}
    try:
        with open(os.path.join(state_dir, "knobs.journal")) as f:
            for line in f:
                if line.startswith("knob "):
                    fields = dict(kv.split("=", 1) for kv in line.split()[1:])
                    entries[unquote(fields["path"]).lstrip("/")] = unquote(fields["desired"])
    except FileNotFoundError:
        pass
    return entries


def complete_torn_writes(root, state_dir):
    """Finish writes a SIGKILL cut between O_TRUNC and write() (see the module docstring).
    Returns the number completed; raises if an empty knob file has no journal entry."""
    torn = 0
    entries = None
    for rel in knob_files():
        path = os.path.join(root, rel)
        if os.path.exists(path) and os.path.getsize(path) == 0:
            if entries is None:
                entries = journal_entries(state_dir)
            assert rel in entries, f"{rel} is empty and the journal does not own it"
            with open(path, "w") as f:
                f.write(entries[rel])
            torn += 1
    return torn


def diff(a, b):
    return {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}


def fake_host(tmp):
    """A fake root with the standard policy, in tmp: (root, policy dir, state dir)."""
    root, policy_dir, state = (os.path.join(tmp, x) for x in ("root", "policy", "state"))
    build(root)
    policy(policy_dir)
    os.mkdir(state, 0o700)
    return root, policy_dir, state


class Daemon:
    """npu-tuned on a fake root, with a notify socket to wait for READY=1."""

    def __init__(self, exe, root, policy_dir, state_dir, env=None, args=(), verbose=False):
        self.tmp = tempfile.mkdtemp(prefix="npu-notify-")
        self.sock_path = os.path.join(self.tmp, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.sock_path)
        e = dict(os.environ)
        e.pop("JOURNAL_STREAM", None)
        e["NOTIFY_SOCKET"] = self.sock_path
        e.update(env or {})
        cmd = [exe, "--root", root, "--policy-dir", policy_dir, "--state-dir", state_dir, "--no-watch", *args]
        if verbose:
            cmd.append("-v")
        self.log_path = os.path.join(self.tmp, "log")
        self.log = open(self.log_path, "w+")
        self.proc = subprocess.Popen(cmd, env=e, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=10.0):
        """True at READY=1; False if the process died first."""
        self.sock.settimeout(0.005)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                msg = self.sock.recv(4096).decode()
                if "READY=1" in msg.split("\n"):
                    return True
            except socket.timeout:
                pass
            if self.proc.poll() is not None:
                return False
        raise TimeoutError("npu-tuned did not become ready:\n" + self.output())

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, timeout=20.0):
        return self.proc.wait(timeout)

    def output(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.sock.close()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def restore(exe, root, state_dir, env=None):
    e = dict(os.environ)
    e.pop("JOURNAL_STREAM", None)
    for k in list(e):
        if k.startswith("NPU_TUNED_TEST_"):
            del e[k]
    e.update(env or {})
    return subprocess.run([exe, "--restore", "--root", root, "--state-dir", state_dir],
                          env=e, capture_output=True, text=True, timeout=30)


def fail(why, log=""):
    print(f"FAIL: {why}\n{log}")
    raise SystemExit(1)


def expect(cond, what, log=""):
    """Fail with the log unless cond; say "ok" otherwise."""
    if not cond:
        fail(what, log)
    print(f"ok: {what}")
