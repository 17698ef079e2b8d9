#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The DaemonSet manifest (deploy/kubernetes/npu-tuned-daemonset.yaml), field by field: no
Kubernetes schema checker is packaged in Debian 12 (kubeconform and kubeval are not;
kubernetes-client's kubectl validates against a cluster's API server), so this checks the
field names of every object against the API's (a misspelt field is silently dropped by a
lenient client), the values the daemon needs (host namespaces, the volumes, the
capabilities: the systemd unit's set less CAP_SYS_ADMIN), the scheduling (every taint
tolerated, system-node-critical, the grace period), and the ConfigMap's policies with
`npu-tuned --check-policy`. test-container.sh runs the pod template itself.
Usage: test-daemonset.py MANIFEST UNIT_TEMPLATE NPU_TUNED SHIPPED_POLICY"""
import os
import re
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    # The same rule as the other package tests: a missing tool is a skip that names it.
    print("SKIP: python3-yaml is not installed (tools/install-deps.sh --test)")
    sys.exit(77)

manifest, unit, npu_tuned, shipped = sys.argv[1:5]
failed = False


def check(what, cond, detail=""):
    global failed
    print(f"{'ok' if cond else 'FAIL'}: {what}{'' if cond else ': ' + str(detail)}")
    failed |= not cond


# The fields of the API objects the manifest uses (core/v1, apps/v1), to catch misspellings.
FIELDS = {
    "object": {"apiVersion", "kind", "metadata", "spec", "data"},
    "metadata": {"name", "namespace", "labels", "annotations"},
    "DaemonSetSpec": {"selector", "template", "updateStrategy", "minReadySeconds", "revisionHistoryLimit"},
    "PodSpec": {"hostPID", "hostNetwork", "hostIPC", "dnsPolicy", "automountServiceAccountToken",
                "enableServiceLinks", "priorityClassName", "terminationGracePeriodSeconds", "tolerations",
                "nodeSelector", "affinity", "containers", "initContainers", "volumes", "serviceAccountName"},
    "Container": {"name", "image", "imagePullPolicy", "command", "args", "env", "securityContext", "resources",
                  "volumeMounts", "ports", "livenessProbe", "readinessProbe"},
    "SecurityContext": {"privileged", "allowPrivilegeEscalation", "readOnlyRootFilesystem", "capabilities",
                        "runAsUser", "runAsNonRoot", "seccompProfile", "seLinuxOptions", "procMount"},
    "VolumeMount": {"name", "mountPath", "readOnly", "mountPropagation", "subPath"},
    "Volume": {"name", "hostPath", "configMap", "emptyDir"},
}


def fields(kind, obj):
    extra = set(obj) - FIELDS[kind]
    check(f"{kind}: only fields of the API", not extra, sorted(extra))


docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
kinds = {d["kind"]: d for d in docs}
check("three objects: Namespace, ConfigMap, DaemonSet", sorted(kinds) == ["ConfigMap", "DaemonSet", "Namespace"],
      sorted(kinds))
for d in docs:
    fields("object", d)
    fields("metadata", d["metadata"])
ns, cm, ds = kinds["Namespace"], kinds["ConfigMap"], kinds["DaemonSet"]
check("apiVersions", (ns["apiVersion"], cm["apiVersion"], ds["apiVersion"]) == ("v1", "v1", "apps/v1"))
name = ns["metadata"]["name"]
check("ConfigMap and DaemonSet in the Namespace", cm["metadata"]["namespace"] == ds["metadata"]["namespace"] == name)
check("the Namespace admits host namespaces (Pod Security: privileged)",
      ns["metadata"]["labels"].get("pod-security.kubernetes.io/enforce") == "privileged")

spec = ds["spec"]
fields("DaemonSetSpec", spec)
tmpl = spec["template"]
check("the selector matches the template's labels",
      all(tmpl["metadata"]["labels"].get(k) == v for k, v in spec["selector"]["matchLabels"].items()))
pod = tmpl["spec"]
fields("PodSpec", pod)
check("hostPID (it pins the host's threads)", pod.get("hostPID") is True)
check("hostNetwork (the proc connector delivers only in the initial network namespace)",
      pod.get("hostNetwork") is True)
check("dnsPolicy for a host-network pod", pod.get("dnsPolicy") == "ClusterFirstWithHostNet")
check("priorityClassName system-node-critical", pod.get("priorityClassName") == "system-node-critical")
check("terminationGracePeriodSeconds >= 30 (SIGTERM restores)", pod.get("terminationGracePeriodSeconds", 30) >= 30,
      pod.get("terminationGracePeriodSeconds"))
check("every taint tolerated", {"operator": "Exists"} in pod.get("tolerations", []), pod.get("tolerations"))
check("a nodeSelector for accelerator nodes", bool(pod.get("nodeSelector")))
check("no API token mounted", pod.get("automountServiceAccountToken") is False)

(c,) = pod["containers"]
fields("Container", c)
sc = c["securityContext"]
fields("SecurityContext", sc)
unit_caps = set(re.search(r"^CapabilityBoundingSet=(.*)$", open(unit).read(), re.M).group(1).split())
want_caps = {cap.removeprefix("CAP_") for cap in unit_caps} - {"SYS_ADMIN"}
check(f"capabilities: the unit's less SYS_ADMIN ({' '.join(sorted(want_caps))}), all others dropped",
      set(sc["capabilities"]["add"]) == want_caps and sc["capabilities"]["drop"] == ["ALL"], sc["capabilities"])
check("not privileged (placement); the comment says which knobs need it",
      sc.get("privileged") is False and "/proc/sys" in open(manifest).read() and "/proc/irq" in open(manifest).read())
check("no privilege escalation, read-only root", sc.get("allowPrivilegeEscalation") is False
      and sc.get("readOnlyRootFilesystem") is True)
check("a memory limit", "memory" in c.get("resources", {}).get("limits", {}))

vols = {v["name"]: v for v in pod["volumes"]}
for v in vols.values():
    fields("Volume", v)
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
for m in mounts.values():
    fields("VolumeMount", m)
check("every mount has its volume, every volume a mount",
      {m["name"] for m in mounts.values()} == set(vols), (sorted(vols), sorted(mounts)))


def host(path):
    m = mounts.get(path)
    return m and vols[m["name"]].get("hostPath", {}).get("path")


check("/run/npu-tuned: the host's (the next pod restores after a SIGKILL)", host("/run/npu-tuned") == "/run/npu-tuned"
      and not mounts["/run/npu-tuned"].get("readOnly"))
check("/sys: the host's", host("/sys") == "/sys")
check("/sys/fs/cgroup: the host's, read only", host("/sys/fs/cgroup") == "/sys/fs/cgroup"
      and mounts["/sys/fs/cgroup"].get("readOnly") is True)
pol = mounts.get("/etc/npu-tuned/policies.d")
check("/etc/npu-tuned/policies.d: the ConfigMap, read only", pol is not None and pol.get("readOnly") is True
      and vols[pol["name"]].get("configMap", {}).get("name") == cm["metadata"]["name"])
check("policy files root-writable only (mode 0644)", vols[pol["name"]]["configMap"].get("defaultMode") == 0o644)
check("a marked place for the metrics textfile volume", "metrics textfile" in open(manifest).read())

# Merged over the shipped policy, as the daemon in the image merges them.
with tempfile.TemporaryDirectory() as top:
    d, ship = os.path.join(top, "policies.d"), os.path.join(top, "policies")
    os.mkdir(d, 0o755)
    os.mkdir(ship, 0o755)
    with open(shipped) as f, open(os.path.join(ship, os.path.basename(shipped)), "w") as g:
        g.write(f.read())
    for key, text in cm["data"].items():
        check(f"ConfigMap key {key} is a policy file name", re.fullmatch(r"[0-9]{2}-[a-z0-9-]+\.json", key), key)
        with open(os.path.join(d, key), "w") as f:
            f.write(text)
    p = subprocess.run([npu_tuned, "--check-policy", ship, d], capture_output=True, text=True)
    check(f"npu-tuned --check-policy accepts the ConfigMap's {len(cm['data'])} policy file(s)", p.returncode == 0,
          p.stdout + p.stderr)
print("FAIL" if failed else "PASS")
sys.exit(1 if failed else 0)
