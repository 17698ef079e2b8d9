#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The DaemonSet's pod template as `podman run` options, one per line, for the container
test (test-container.sh). `podman kube play` would be the direct way, but Debian 12's podman
(4.3) ignores hostPID there, and the pod would run in its own PID namespace; so each field
of the template becomes the option that does the same. A field this does not know is an
error (a new one in the manifest must be translated here, not dropped); the fields that
mean something only to a cluster's scheduler are listed and skipped.
The test's changes: the image (the one just built), the host directory of the state volume
(the test's own, so no other npu-tuned on the host is disturbed), and the ConfigMap, which
becomes the host directory POLICY_DIR (the test's policy files, as the kubelet would
project the ConfigMap's keys).
Usage: podman-args.py MANIFEST IMAGE STATE_DIR POLICY_DIR NAME"""
import sys

import yaml

manifest, image, state_dir, policy_dir, name = sys.argv[1:6]
docs = {d["kind"]: d for d in yaml.safe_load_all(open(manifest)) if d}
spec = dict(docs["DaemonSet"]["spec"]["template"]["spec"])
scheduler_only = {"priorityClassName", "tolerations", "nodeSelector", "dnsPolicy", "automountServiceAccountToken",
                  "enableServiceLinks"}
args = ["--name", name]


def take(d, key, default=None):
    return d.pop(key, default)


if take(spec, "hostPID"):
    args.append("--pid=host")
if take(spec, "hostNetwork"):
    args.append("--network=host")
grace = take(spec, "terminationGracePeriodSeconds", 30)
args.append(f"--stop-timeout={grace}")
volumes = {v["name"]: v for v in take(spec, "volumes", [])}
(c,) = take(spec, "containers")
for k in scheduler_only:
    spec.pop(k, None)
if spec:
    sys.exit(f"podman-args: pod fields not translated: {sorted(spec)}")

c = dict(c)
take(c, "name")
take(c, "image")
take(c, "imagePullPolicy")
sc = dict(take(c, "securityContext", {}))
if take(sc, "privileged"):
    args.append("--privileged")
if take(sc, "allowPrivilegeEscalation") is False:
    args.append("--security-opt=no-new-privileges")
if take(sc, "readOnlyRootFilesystem"):
    args += ["--read-only", "--read-only-tmpfs=false"]  # no tmpfs on /run, /tmp: as the kubelet does
caps = take(sc, "capabilities", {})
for cap in caps.get("drop", []):
    args.append(f"--cap-drop={cap}")
for cap in caps.get("add", []):
    args.append(f"--cap-add={cap}")
if sc:
    sys.exit(f"podman-args: securityContext fields not translated: {sorted(sc)}")
res = take(c, "resources", {})
if "memory" in res.get("limits", {}):
    mem = res["limits"]["memory"].replace("Mi", "m").replace("Gi", "g")
    args.append(f"--memory={mem}")
for m in take(c, "volumeMounts", []):
    v = volumes.pop(m["name"])
    if "configMap" in v:
        src = policy_dir
    elif "hostPath" in v:
        src = state_dir if m["name"] == "state" else v["hostPath"]["path"]
    else:
        sys.exit(f"podman-args: volume {m['name']}: only hostPath and configMap are translated")
    opts = ["ro" if m.get("readOnly") else "rw"]
    if m.get("mountPropagation") == "HostToContainer":
        opts.append("rslave")
    args.append(f"--volume={src}:{m['mountPath']}:{','.join(opts)}")
if volumes:
    sys.exit(f"podman-args: volumes not mounted: {sorted(volumes)}")
cargs = take(c, "args", [])
if c:
    sys.exit(f"podman-args: container fields not translated: {sorted(c)}")
print("\n".join(args + [image] + cargs))
