#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""npu-tunectl doctor on generated trees (tests/fixtures/gen-fakeroot.py), each built to
trip one check: the check's status, and that its fix names the right policy key or
command; and one clean tree, tuned as the reference deployment's policy asks, where
nothing fails (exit 0). The daemon is out of reach (a bus address that does not exist),
as on a host where it is not running.
Usage: doctor-trees.py NPU_TUNECTL NPU_TUNED"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "knobs"))
import knobtest  # noqa: E402

tunectl, npu_tuned = sys.argv[1:3]
SOURCE = os.environ.get("NPU_SOURCE_ROOT", os.path.join(here, "..", ".."))
GEN = os.path.join(SOURCE, "tests", "fixtures", "gen-fakeroot.py")
ATLAS_POLICY = os.path.join(SOURCE, "policies", "50-atlas-800i-a2.json")
ENV = dict(os.environ, NPU_TUNECTL_BUS="session", DBUS_SESSION_BUS_ADDRESS="unix:path=/nonexistent/bus")
passed = 0


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


def expect(cond, what):
    global passed
    if not cond:
        fail(what)
    passed += 1
    print(f"ok: {what}")


tmp = tempfile.mkdtemp(prefix="npu-doctor-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
trees = {}


def tree(machine):
    """A fresh copy of a generated tree (each generated once)."""
    if machine not in trees:
        trees[machine] = os.path.join(tmp, "gen-" + machine)
        subprocess.run([sys.executable, GEN, machine, trees[machine]], check=True, stdout=subprocess.DEVNULL)
    n = len(os.listdir(tmp))
    dst = os.path.join(tmp, f"t{n}")
    shutil.copytree(trees[machine], dst, symlinks=True)
    return dst


def put(root, rel, text, mode=0o644):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if os.path.exists(p):
        os.chmod(p, 0o644)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, mode)


def fake_process(root, pid, comm, cmdline=None, environ=""):
    put(root, f"proc/{pid}/stat", f"{pid} ({comm}) S 1 {pid} {pid} 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n")
    put(root, f"proc/{pid}/status", f"Name:\t{comm}\nTgid:\t{pid}\nPid:\t{pid}\nPPid:\t1\nUid:\t0\t0\t0\t0\n"
                                    "Gid:\t0\t0\t0\t0\n")
    put(root, f"proc/{pid}/comm", comm + "\n")
    put(root, f"proc/{pid}/cmdline", (cmdline or comm).replace(" ", "\0") + "\0")
    put(root, f"proc/{pid}/environ", environ.replace(" ", "\0") + ("\0" if environ else ""))
    put(root, f"proc/{pid}/cgroup", "0::/system.slice/x.service\n")


def policy_dir(*docs):
    d = os.path.join(tmp, f"p{len(os.listdir(tmp))}")
    os.mkdir(d)
    for i, doc in enumerate(docs):
        if isinstance(doc, str) and os.path.exists(doc):
            shutil.copy(doc, os.path.join(d, os.path.basename(doc)))
        else:
            with open(os.path.join(d, f"{60 + i}-test.json"), "w") as f:
                f.write(doc if isinstance(doc, str) else json.dumps(doc))
    return d


def doctor(root, policies=None, state=None, rc=None):
    state = state or os.path.join(tmp, "no-state")
    cmd = [tunectl, "doctor", "--json", "--root", root, "--state-dir", state]
    for p in policies or [policy_dir()]:
        cmd += ["--policy-dir", p]
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
    if rc is not None and p.returncode != rc:
        fail(f"{' '.join(cmd)}: exit {p.returncode}, not {rc}:\n{p.stdout}\n{p.stderr}")
    out = json.loads(p.stdout)
    for item in out:
        if set(item) != {"id", "status", "evidence", "fix"} or item["status"] not in ("ok", "warn", "fail"):
            fail(f"not a check: {item}")
    return {item["id"]: item for item in out}, p.returncode


def check(results, cid, status, fix_has=(), evidence_has=()):
    item = results.get(cid)
    expect(item and item["status"] == status and all(s in (item["fix"] or "") for s in fix_has)
           and all(s in item["evidence"] for s in evidence_has),
           f"{cid}: {status}, fix names {list(fix_has)}: {item}")


def knobtest_mask(cpu, nbits):
    """The kernel's "%*pb" of one CPU: 32-bit chunks, most significant first."""
    chunks = (nbits + 31) // 32
    return ",".join("%08x" % ((1 << (cpu - 32 * c)) if 32 * c <= cpu < 32 * (c + 1) else 0)
                    for c in range(chunks - 1, -1, -1))


def tune_clean(root):
    """The reference deployment's tuning, as the knobs would hold it with its policy."""
    thp = "sys/kernel/mm/transparent_hugepage"
    put(root, f"{thp}/enabled", "always madvise [never]\n")
    put(root, f"{thp}/khugepaged/defrag", "0\n")
    put(root, "proc/sys/kernel/numa_balancing", "0\n")
    for cpu in range(192):
        put(root, f"sys/devices/system/cpu/cpufreq/policy{cpu}/scaling_governor", "performance\n")
    for bdf in ("0000:81:00.0", "0000:82:00.0", "0000:c1:00.0", "0000:c2:00.0"):
        put(root, f"sys/bus/pci/devices/{bdf}/link/l0s_aspm", "0\n")
    # Accelerator IRQs on their node's housekeeping CPU (node 0: CPU 0, node 2: CPU 48).
    # IRQ 50-57 are the vectors of the NPUs on node 2 (0000:81, 0000:82), 58-65 of node 0's.
    for irq in range(50, 66):
        cpu = 0 if irq >= 58 else 48
        put(root, f"proc/irq/{irq}/smp_affinity", knobtest_mask(cpu, 192) + "\n")


try:
    # The clean tree: the reference deployment's policy, its knobs as it sets them.
    root = tree("atlas-800i-a2")
    tune_clean(root)
    atlas = policy_dir(ATLAS_POLICY)
    res, rc = doctor(root, [atlas], rc=0)
    expect(all(i["status"] != "fail" for i in res.values()), "clean Atlas tree: no check fails, exit 0")
    for cid in ("policy", "accelerator-numa", "memory", "thp", "cpufreq", "numa-balancing", "smt", "aspm",
                "irq-affinity", "irq-unmovable", "tuners", "engine-binding", "unmatched", "kernel-log", "journal"):
        check(res, cid, "ok")
    check(res, "memory", "ok", evidence_has=("min_free_mib 8192",))

    # The generated Atlas tree as the firmware leaves it, the default policy.
    root = tree("atlas-800i-a2")
    res, rc = doctor(root, rc=0)
    check(res, "memory", "warn", ('"min_free_mib": 4096', '"migrate": true'), ("node 0", "3276 MiB"))
    check(res, "thp", "warn", ('"khugepaged_defrag": 0',))
    check(res, "cpufreq", "warn", ('"governor": "performance"',), ("schedutil",))
    check(res, "numa-balancing", "warn", ('"numa_balancing": 0',))
    check(res, "aspm", "warn", ('"accelerator_link": "l1_only"',), ("0000:c1:00.0",))
    check(res, "irq-affinity", "warn", ('"manage": true', '"steer_accelerator_irqs": true'), ("IRQ 50-65",))
    check(res, "daemon", "warn", ("systemctl enable --now npu-tuned",))

    # An accelerator whose firmware reports no node: FAIL, and the override to add.
    root = tree("atlas-800i-a2-unknown-node")
    res, rc = doctor(root, rc=1)
    check(res, "accelerator-numa", "fail", ('"numa_node_overrides"', '"pci": "0000:c2:00.0"', '"node": 0'))
    expect(rc == 1, "an accelerator without a node: exit 1")
    override = {"version": 1, "accelerators": {"numa_node_overrides": [{"pci": "0000:c2:00.0", "node": 0}]}}
    res, rc = doctor(root, [policy_dir(override)], rc=0)
    check(res, "accelerator-numa", "ok", evidence_has=("policy override",))

    # THP always, defrag always.
    root = tree("atlas-800i-a2")
    put(root, "sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n")
    put(root, "sys/kernel/mm/transparent_hugepage/defrag", "[always] defer defer+madvise madvise never\n")
    res, _ = doctor(root)
    check(res, "thp", "warn", ('"enabled": "never"', '"defrag": "madvise"'), ("[always]",))

    # CPUs capped below their maximum frequency under performance.
    root = tree("atlas-800i-a2")
    for cpu in range(192):
        put(root, f"sys/devices/system/cpu/cpufreq/policy{cpu}/scaling_governor", "performance\n")
        put(root, f"sys/devices/system/cpu/cpufreq/policy{cpu}/scaling_max_freq", "1800000\n")
    res, _ = doctor(root)
    check(res, "cpufreq", "warn", ("cpupower -c", "frequency-set -u 2600000kHz"), ("1800000",))

    # SMT siblings in one inference pool (HGX: 2 threads a core).
    root = tree("nvidia-hgx")
    res, _ = doctor(root)
    check(res, "smt", "warn", ("/sys/devices/system/cpu/smt/control",), ("threads of one core",))

    # An accelerator IRQ the kernel manages (its smp_affinity read-only).
    root = tree("atlas-800i-a2")
    os.chmod(os.path.join(root, "proc/irq/60/smp_affinity"), 0o444)
    res, _ = doctor(root)
    check(res, "irq-unmovable", "warn", ("isolcpus=managed_irq",), ("accelerator IRQ 60",))

    # Other tuners: irqbalance without a control socket, tuned with the scheduler plugin, numad.
    root = tree("atlas-800i-a2")
    fake_process(root, 700, "irqbalance", "/usr/sbin/irqbalance --foreground")
    fake_process(root, 701, "tuned", "/usr/bin/python3 -Es /usr/sbin/tuned -l -P")
    fake_process(root, 702, "numad", "/usr/bin/numad")
    put(root, "etc/tuned/active_profile", "throughput-performance\n")
    put(root, "usr/lib/tuned/throughput-performance/tuned.conf", "[main]\nsummary=x\n[scheduler]\nisolated_cores=1\n")
    res, _ = doctor(root)
    check(res, "irqbalance", "warn", ("IRQBALANCE_BANNED_CPULIST=", "/etc/default/irqbalance"))
    check(res, "tuned", "warn", ("[scheduler]",), ("throughput-performance", "scheduler plugin"))
    check(res, "numad", "warn", ("systemctl disable --now numad",))
    put(root, "run/irqbalance/irqbalance700.sock", "")
    res, _ = doctor(root)
    check(res, "irqbalance", "ok", evidence_has=("irqbalance700.sock",))

    # A server that binds itself (SGLang's NUMA bind) under a rule that pins it too; one
    # that looks like a server and matches no rule.
    root = tree("atlas-800i-a2")
    fake_process(root, 800, "python3", "python3 -m sglang.launch_server --model-path /m --tp 2",
                 "SGLANG_NUMA_BIND_V2=1 PATH=/usr/bin")
    fake_process(root, 801, "python3", "python3 -m vllm.entrypoints.openai.api_server --model /m")
    pins = {"version": 1, "processes": [{"name": "sglang-pinned", "match": {"cmdline": "sglang"},
                                         "accelerators": ["ascend:0"], "binding": "daemon"}]}
    res, _ = doctor(root, [policy_dir(pins)])
    check(res, "engine-binding", "warn", ('"name": "sglang-pinned"', '"binding": "engine"'), ("SGLANG_NUMA_BIND_V2=1",))
    check(res, "unmatched", "warn", ('"match"', '"cmdline"'), ("pid 801", "vllm.entrypoints"))
    # A comm that is not text: escaped in the evidence.
    fake_process(root, 802, "python3\x1b[31m", "python3 -m vllm.entrypoints.openai.api_server \x1b[2J")
    res, _ = doctor(root, [policy_dir(pins)])
    expect("\x1b" not in json.dumps(res) and "\\x1b" in res["unmatched"]["evidence"],
           "a process's control characters are escaped in the evidence")

    # Machine checks and AER errors in the kernel log; the boot lines of the same subsystems are not.
    root = tree("atlas-800i-a2")
    put(root, "dev/kmsg", "6,1,10,-;pcieport 0000:00:00.0: AER: enabled with IRQ 30\n"
                          "6,2,11,-;NMI watchdog: Enabled. Permanently consumes one hw-PMU counter.\n"
                          "3,3,500,-;mce: [Hardware Error]: Machine check events logged\n"
                          " SUBSYSTEM=machinecheck\n"
                          "3,4,600,-;pcieport 0000:80:00.0: AER: Uncorrected (Non-Fatal) error received: 0000:81:00.0\n")
    res, _ = doctor(root)
    check(res, "kernel-log", "warn", ("journalctl -k",), ("1 machine-check, 0 NMI, 1 AER", "Uncorrected"))

    # An invalid policy: FAIL, and --check-policy to find out why.
    root = tree("atlas-800i-a2")
    res, rc = doctor(root, [policy_dir('{ "version": 1, "host": { "thp": { "enabled": "sometimes" } } }')], rc=1)
    check(res, "policy", "fail", ("npu-tuned --check-policy",), ("host.thp.enabled",))

    # A journal left by a daemon killed before it could give its knobs back.
    root = tree("atlas-800i-a2")
    state = os.path.join(tmp, "state")
    os.mkdir(state, 0o700)
    d = knobtest.Daemon(npu_tuned, root, atlas, state, args=("--bus=none",))
    try:
        expect(d.wait_ready(), "npu-tuned started on the Atlas tree with the reference deployment's policy")
        d.kill(signal.SIGKILL)
        d.wait()
    finally:
        d.close()
    res, rc = doctor(root, [atlas], state=state, rc=1)
    check(res, "journal", "fail", ("npu-tuned --restore",), ("knobs.journal", "no npu-tuned runs"))
    with open(os.path.join(state, "knobs.journal"), "a") as f:
        f.write("garbage\n")
    res, rc = doctor(root, [atlas], state=state, rc=1)
    check(res, "journal", "fail", ("knobs.journal",), ("does not parse",))

    # Usage errors: exit 2.
    p = subprocess.run([tunectl, "status", "--root", "/"], env=ENV, capture_output=True, text=True)
    expect(p.returncode == 2 and "doctor's options" in p.stderr, "--root with another command: usage error (2)")
    p = subprocess.run([tunectl, "doctor", "extra"], env=ENV, capture_output=True, text=True)
    expect(p.returncode == 2, "doctor with an argument: usage error (2)")
    # The text form: a status word, the id, the evidence; the fix under it.
    p = subprocess.run([tunectl, "doctor", "--root", tree("atlas-800i-a2-unknown-node"), "--policy-dir", policy_dir()],
                       env=ENV, capture_output=True, text=True)
    lines = p.stdout.splitlines()
    expect(p.returncode == 1 and any(line.startswith("FAIL accelerator-numa ") for line in lines)
           and any(line.strip().startswith('fix: "accelerators": { "numa_node_overrides"') for line in lines),
           "text: FAIL accelerator-numa and its fix line")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print(f"{passed} checks passed")
