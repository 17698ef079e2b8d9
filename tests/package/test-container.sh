#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The container image and the DaemonSet's pod, on this host, without any registry:
#  - the base image is a debootstrap'd Debian 12 root imported as debian:bookworm-slim
#    (container-base.sh); the Containerfile is built as it is, from a clean clone's files,
#    its build stage installing the -dev packages from Debian's mirror (--network=host);
#  - the image that runs has no compiler;
#  - the DaemonSet's pod template runs with the same settings (podman-args.py: host PID
#    and network namespaces, the capabilities, the volumes; the test's policy as the
#    ConfigMap): a host process matching the test's policy is placed by role (its threads'
#    Cpus_allowed_list), SIGTERM to the container restores it, a SIGKILL leaves it placed
#    and the next container, with the test's policy removed from its ConfigMap, restores it.
# usage: test-container.sh SOURCE_ROOT BUILD_ROOT THREADS_TARGET
set -euo pipefail
src=$(cd "$1" && pwd) target_exe=$3
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
[[ $(id -u) == 0 ]] || skip "needs root (the host's PID namespace, the proc connector)"
command -v podman >/dev/null || skip "podman is not installed (tools/install-deps.sh --test)"
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed"
(($(nproc) >= 2)) || skip "needs 2 CPUs (one for each role)"

tmp=$(mktemp -d /tmp/npu-container.XXXXXX)
name=npu-tuned-test-${tmp##*.}
image=localhost/npu-tuned:test
target=
cleanup() {
	podman rm -f -t 0 "$name" >/dev/null 2>&1 || true
	[[ -n $target ]] && kill "$target" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# What this host's podman needs, and only here (a private configuration for the test):
# runc where the cgroup v2 hierarchy of a hybrid host has controllers (crun refuses to run there),
# and resource limits no higher than this process may raise them to (no CAP_SYS_RESOURCE).
conf=$tmp/containers.conf
printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=4096:4096"]\n' "$(ulimit -Hn)" "$(ulimit -Hn)" >"$conf"
export CONTAINERS_CONF=$conf
runtime=()
if [[ -n $(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null) ]] && command -v runc >/dev/null; then
	runtime=(--runtime runc) # podman build does not read it from containers.conf
fi
podman() { command podman "${runtime[@]}" "$@"; }

"$here/container-base.sh" || { rc=$?; ((rc == 77)) && exit 77; echo "FAIL: container-base.sh exited $rc"; exit 1; }

# ---- the image ----
"$src/packaging/export-tree.sh" "$src" "$tmp/src" >/dev/null
t0=$SECONDS
built=0
for try in 1 2; do
	if podman build --pull=never --network=host -t "$image" -f Containerfile "$tmp/src" >"$tmp/build.log" 2>&1; then
		built=1
		break
	fi
	tail -5 "$tmp/build.log"
	grep -q 'Temporary failure resolving\|Could not resolve\|Failed to fetch' "$tmp/build.log" &&
		skip "the build stage cannot reach Debian's mirror (apt-get, --network=host)"
	echo "podman build failed (try $try)"
done
((built)) || { tail -40 "$tmp/build.log"; echo "FAIL: podman build"; exit 1; }
size=$(podman image inspect --format '{{.Size}}' "$image")
ok "podman build: $image in $((SECONDS - t0)) s, $((size / 1000000)) MB ($size bytes)"
runc_in() { podman run --rm --pull=never --entrypoint "$1" "$image" "${@:2}"; }
[[ $(runc_in /usr/sbin/npu-tuned --version) == "npu-tuned 0.1.0" ]] && ok "the image runs npu-tuned --version" || bad "npu-tuned --version"
runc_in /usr/bin/npu-tunectl --help >/dev/null && ok "the image has npu-tunectl" || bad "npu-tunectl --help"
compilers=$(runc_in /bin/sh -c 'for c in gcc cc c99 meson ninja; do command -v $c; done; ls /usr/include 2>/dev/null | head -3' || true)
[[ -z $compilers ]] && ok "no compiler, build tool or header in the image" || bad "build tools in the image: $compilers"

# ---- the pod, on this host ----
# A copy of threads-target under a name of its own: only this test's policy matches it,
# whatever other npu-tuned instances run on the host.
exe_name=npu-ctr-target-${tmp##*.}
cp "$target_exe" "$tmp/$exe_name"
mkdir -p "$tmp/policies" "$tmp/no-policies" "$tmp/state"
chmod 0755 "$tmp/policies" "$tmp/no-policies"
cat >"$tmp/policies/60-test.json" <<JSON
{
  "version": 1,
  "comment": "container test: the test's process by role, control CPU 0, compute CPU 1",
  "host": { "irq": { "housekeeping_cpus_per_node": 0, "steer_accelerator_irqs": false } },
  "processes": [{
    "name": "container-target",
    "match": { "exe": "*/$exe_name", "user": "root" },
    "accelerators": "none",
    "unattributed": { "action": "place", "nodes": "0" },
    "threads": { "control": { "main_thread": true, "names": ["ctl-*"], "cpus": 1 }, "compute": { "cpus": 1 } },
    "memory": { "migrate": false },
    "restore_on_stop": true
  }]
}
JSON
chmod 0644 "$tmp/policies/60-test.json"
"$tmp/$exe_name" --control 2 --compute 2 --timeout 600 >/dev/null &
target=$!
sleep 0.3
orig=$(sed -n 's/^Cpus_allowed_list:\s*//p' "/proc/$target/status")

allowed() { sed -n 's/^Cpus_allowed_list:\s*//p' "/proc/$target/task/$1/status"; }
by_role() { # main and ctl-* on 0, work-* on 1
	local t c a
	for t in "/proc/$target/task/"*; do
		c=$(cat "$t/comm") a=$(allowed "${t##*/}")
		case $c in
		npu-ctr-target* | ctl-*) [[ $a == 0 ]] || return 1 ;;
		work-*) [[ $a == 1 ]] || return 1 ;;
		esac
	done
}
all_original() {
	local t
	for t in "/proc/$target/task/"*; do [[ $(allowed "${t##*/}") == "$orig" ]] || return 1; done
}
threads() { local t; for t in "/proc/$target/task/"*; do printf '%s:%s ' "$(cat "$t/comm")" "$(allowed "${t##*/}")"; done; }
wait_for() { local n=$(($1 * 10)); shift; while ((n-- > 0)); do "$@" && return 0; sleep 0.1; done; return 1; }
run_pod() { # POLICY_DIR: the DaemonSet's container, as the kubelet would start it
	local args
	mapfile -t args < <("$here/podman-args.py" "$src/deploy/kubernetes/npu-tuned-daemonset.yaml" "$image" "$tmp/state" "$1" "$name")
	((${#args[@]})) || return 1
	podman run -d --pull=never "${args[@]}" >/dev/null
}
log_count() { podman logs "$name" 2>&1 | grep -c -- "$1" || true; }
t0=$SECONDS

run_pod "$tmp/policies" || { echo "FAIL: podman run"; exit 1; }
if wait_for 20 by_role; then
	ok "placed by role from the pod (kernel: main and ctl-* on CPU 0, work-* on CPU 1): $(threads)"
else
	bad "not placed by role: $(threads)"
	podman logs "$name" 2>&1 | tail -20
fi
n=$(log_count "Running in a container (podman) in the host's PID namespace")
((n == 1)) && ok "the daemon said once that it runs in a container in the host's PID namespace" || bad "container line $n times"
n=$(log_count "No D-Bus system bus")
((n == 1)) && ok "the daemon said once that there is no system bus, and runs on" || bad "no-bus line $n times"
[[ -n $(ls "$tmp/state"/affinity-*.json 2>/dev/null) ]] && ok "the affinity record is in the host's state directory" || bad "no affinity record in $tmp/state"

podman stop -t 60 "$name" >/dev/null
status=$(podman inspect --format '{{.State.ExitCode}}' "$name")
((status == 0)) && ok "SIGTERM: the daemon exited 0" || bad "SIGTERM: exit status $status"
all_original && ok "SIGTERM: every thread has its original CPUs back ($orig)" || bad "after SIGTERM: $(threads)"
podman rm "$name" >/dev/null

run_pod "$tmp/policies"
wait_for 20 by_role && ok "a new pod placed it again" || bad "second pod: not placed: $(threads)"
podman kill -s KILL "$name" >/dev/null
podman wait "$name" >/dev/null 2>&1 || true
by_role && ok "SIGKILL: nothing restored by the dead daemon (still by role)" || bad "after SIGKILL: $(threads)"
podman rm "$name" >/dev/null
run_pod "$tmp/no-policies"
if wait_for 20 all_original; then
	ok "the next pod (the test's rule gone from its ConfigMap) restored it from the host's state directory: $(threads)"
else
	bad "the next pod did not restore it: $(threads)"
	podman logs "$name" 2>&1 | tail -20
fi
podman stop -t 60 "$name" >/dev/null
[[ -z $(ls "$tmp/state"/affinity-*.json 2>/dev/null) ]] && ok "no affinity record left" || bad "records left: $(ls "$tmp/state")"
echo "pods: $((SECONDS - t0)) s"
finish
