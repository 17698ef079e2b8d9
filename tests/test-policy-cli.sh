#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# npu-tuned --check-policy / --print-policy and the daemon's start with a policy, through
# the real binary: exit codes, the exact problem lines, the shipped policies, and every
# example of man/npu-tuned.policy.5.
# Usage: test-policy-cli.sh NPU_TUNED  (NPU_SOURCE_ROOT in the environment)
set -u

bin=$1
src=${NPU_SOURCE_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
umask 022
failures=0

fail() {
        echo "FAIL: $*"
        failures=$((failures + 1))
}

# expect RC STDERR_FILE_CONTENT -- ARGS...: exact exit code and standard error
expect() {
        want_rc=$1
        want_err=$2
        shift 3
        "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ "$rc" = "$want_rc" ] || fail "npu-tuned $*: exit $rc, expected $want_rc; stderr: $(cat "$tmp/err")"
        if [ "$want_err" != "-" ]; then
                printf '%s\n' "$want_err" >"$tmp/want"
                [ -n "$want_err" ] || : >"$tmp/want"
                cmp -s "$tmp/err" "$tmp/want" || fail "npu-tuned $*: stderr differs:
$(diff "$tmp/want" "$tmp/err")"
        fi
}

# The shipped policies, each alone (host warnings allowed: this machine is not theirs).
for p in 10-default 50-atlas-800i-a2 50-nvidia-hgx; do
        expect 0 - -- --check-policy "$src/policies/$p.json"
        grep -q '^OK: 1 file, [0-9]* process rules, 0 accelerator kinds, 0 NUMA overrides' "$tmp/out" ||
                fail "$p.json: summary: $(cat "$tmp/out")"
done
# ... and as installed: a host policy or the site drop-in on top of the default.
expect 0 - -- --check-policy "$src/policies/10-default.json" "$src/policies/50-atlas-800i-a2.json"
expect 0 - -- --check-policy "$src/policies/10-default.json" "$src/tests/policy/dropin-site.json"
grep -q '^OK: 2 files, 6 process rules' "$tmp/out" || fail "drop-in: $(cat "$tmp/out")"
# An empty file and a directory without policies: each said for what it is.
: >"$tmp/empty.json"
mkdir -p "$tmp/nopolicies"
expect 1 "$tmp/empty.json: the file is empty: a policy is a JSON object (npu-tuned.policy(5))
$tmp/nopolicies: no *.json policy files in this directory" -- --check-policy "$tmp/empty.json" "$tmp/nopolicies"
# every-key.json is the guest's (an edu device on node 1): on this host it has host
# problems only, and --check-policy fails exactly as the daemon refuses to start with it.
expect 1 - -- --check-policy "$src/tests/policy/every-key.json"
grep -v -e 'on this host' -e ': warning: ' "$tmp/err" | grep -q . && fail "every-key.json: problems beyond this host's: $(cat "$tmp/err")"

# --check-policy passes exactly the policies the daemon starts with (below the same root:
# a generated 1-node, 4-CPU host, so no knob of this machine is touched).
python3 "$src/tests/fixtures/gen-fakeroot.py" minimal-1node "$tmp/small" >/dev/null
agree() { # NAME JSON: check-policy's exit status and whether the daemon starts, compared
        mkdir -p "$tmp/agree-$1" "$tmp/agree-state-$1"
        printf '%s\n' "$2" >"$tmp/agree-$1/p.json"
        "$bin" --root "$tmp/small" --check-policy "$tmp/agree-$1/p.json" >"$tmp/out" 2>"$tmp/err"
        check=$?
        timeout -s TERM 2 "$bin" --root "$tmp/small" --bus=none --state-dir "$tmp/agree-state-$1" \
                --policy-dir "$tmp/agree-$1" >/dev/null 2>&1
        daemon=$?
        case "$check,$daemon" in
        0,124 | 1,1) echo "ok: $1: --check-policy exit $check, the daemon $([ $daemon = 1 ] && echo refuses || echo starts)" ;;
        *) fail "$1: --check-policy exit $check but the daemon exit $daemon (124: it ran): $(cat "$tmp/err")" ;;
        esac
}
agree cpus-missing '{ "version": 1, "processes": [ { "name": "u", "match": { "exe": "/u" }, "accelerators": "none",
  "unattributed": { "action": "place", "cpus": "96-119" } } ] }'
agree two-roles-two-cpus '{ "version": 1, "processes": [ { "name": "u", "match": { "exe": "/u" }, "accelerators": "none",
  "unattributed": { "action": "place", "nodes": "0" },
  "threads": { "control": { "main_thread": true, "cpus": 1 }, "compute": { "cpus": 1 } } } ] }'
agree no-such-accelerator '{ "version": 1, "processes": [ { "name": "w", "match": { "exe": "/w" }, "accelerators": [ "ascend:3" ] } ] }'
agree override-elsewhere '{ "version": 1, "accelerators": { "numa_node_overrides": [ { "pci": "0000:c1:00.0", "node": 0 } ] } }'
agree syntax '{ "version": 1, "processes": [ { "name": "w", "match": { "exe": "/w" } }, ] }'
# One-shot modes exit; conflicting modes and options of another mode are usage errors.
python3 "$src/tests/fixtures/gen-fakeroot.py" atlas-800i-a2 "$tmp/atlas-dry" >/dev/null
timeout 20 "$bin" --root "$tmp/atlas-dry" --policy-dir "$src/policies" --state-dir "$tmp/dry-state" --dry-run \
        >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 0 ] || fail "--dry-run --root: exit $rc (124: it did not exit): $(cat "$tmp/err")"
grep -q '^cpufreq (192 policies, CPUs 0-191): ' "$tmp/out" || fail "--dry-run: governors not on one line: $(head -5 "$tmp/out")"
grep -q '^irq/default (default for new IRQs): 0-191 -> ' "$tmp/out" || fail "--dry-run: IRQ masks not as CPU lists: $(grep irq/default "$tmp/out")"
[ "$(wc -l <"$tmp/out")" -lt 80 ] || fail "--dry-run: $(wc -l <"$tmp/out") lines on the Atlas tree"
echo "ok: --dry-run --root exits 0, $(wc -l <"$tmp/out") lines on the Atlas tree"
for args in "--restore --print-topology" "--print-policy --check-policy x" "--dry-run --restore" "--json" \
            "--follow" "--print-policy --json" "--explain 1 --restore"; do
        # shellcheck disable=SC2086
        "$bin" $args >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ "$rc" = 2 ] || fail "npu-tuned $args: exit $rc, expected 2 (a usage error): $(cat "$tmp/err")"
        grep -q -e 'cannot be used together' -e 'goes with' "$tmp/err" || fail "npu-tuned $args: no reason: $(cat "$tmp/err")"
done
echo "ok: conflicting modes and misplaced options are usage errors (exit 2)"

# The offline --explain says loudly when a daemon runs that it cannot ask (another bus).
mkdir -p "$tmp/held"
"$bin" --root "$tmp/small" --bus=none --state-dir "$tmp/held" >"$tmp/held.log" 2>&1 &
held=$!
for _ in $(seq 100); do [ -e "$tmp/held/knobs.lock" ] && grep -q " $held " /proc/locks && break; sleep 0.05; done
env -u DBUS_SESSION_BUS_ADDRESS "$bin" --explain $$ --state-dir "$tmp/held" --bus=session --json >"$tmp/out" 2>"$tmp/err"
rc=$?
kill "$held"; wait "$held"
[ "$rc" = 0 ] || fail "--explain with a daemon elsewhere: exit $rc: $(cat "$tmp/err")"
grep -q "WARNING: npu-tuned (pid $held) runs with the state directory $tmp/held but does not answer on the session bus" "$tmp/err" ||
        fail "--explain does not say a daemon runs elsewhere: $(cat "$tmp/err")"
grep -q "\"daemon_elsewhere\":$held" "$tmp/out" || fail "--explain --json: no daemon_elsewhere: $(cat "$tmp/out")"
echo "ok: --explain says a daemon (pid $held) runs that it cannot ask"
# That daemon said at start that there is no accelerator and what it means, and at stop
# what it gave back.
grep -q 'No accelerator found: rules that place processes next to their accelerators leave them alone here' "$tmp/held.log" ||
        fail "start: no word on the missing accelerators: $(cat "$tmp/held.log")"
grep -q 'Stopped: 0 managed process(es) released .*, 0 host knob(s) given back (none was changed)' "$tmp/held.log" ||
        fail "stop: no word on what was given back: $(cat "$tmp/held.log")"

# The housekeeping CPU the planner keeps on a node counts whether or not IRQs are managed:
# control 2 + compute 2 do not fit in 4 CPUs less 1 housekeeping, and --check-policy says
# so (before: it counted housekeeping only with IRQ management on, and said nothing while
# the daemon gave the process 3 CPUs).
agree roles-fit '{ "version": 1, "processes": [ { "name": "u", "match": { "exe": "/u" }, "accelerators": "auto",
  "unattributed": { "action": "place", "nodes": "0" },
  "threads": { "control": { "main_thread": true, "cpus": 2 }, "compute": { "cpus": 2 } } } ] }'
grep -q 'control (2) and compute (2) CPUs do not fit in one NUMA node of this host (the largest, node 0, has 4 CPUs, 1 of them housekeeping' "$tmp/err" ||
        fail "roles-fit: no warning counting the housekeeping CPU: $(cat "$tmp/err")"


# Problems: one exact line each, exit 1.
expect 1 "$src/tests/policy/bad-typo.json: host.thp.defarg: unknown key (did you mean \"defrag\"?) (line 4, column 34)" \
        -- --check-policy "$src/tests/policy/bad-typo.json"
expect 1 "$src/tests/policy/bad-syntax.json: JSON syntax error: unexpected character (line 6, column 1)" \
        -- --check-policy "$src/tests/policy/bad-syntax.json"
f=$src/tests/policy/bad-many.json
expect 1 "$f: options.reconcile_interval_ms: must be between 100 and 3600000, got 10 (line 3, column 16)
$f: processes[0].match.comm: can never match: a comm is at most 15 bytes and this glob needs 16 (the kernel cuts names to 15 bytes: match the start, e.g. with a trailing '*', or match the title with cmdline) (line 5, column 36)
$f: processes[3].threads.control.cpus: expected a number of CPUs, got the string \"2\" (write it without quotes) (line 11, column 56)
$f: processes[2].unattributed.cpus: CPUs 6-7 are also claimed by rule \"api\" (line 9, column 44)" \
        -- --check-policy "$f"

# A rule any user can satisfy that believes every match (docs/trust.md): a warning.
cat >"$tmp/any.json" <<'JSON'
{
  "version": 1,
  "processes": [
    { "name": "open", "match": { "exe": "*/python3*" }, "claims": "any" }
  ]
}
JSON
expect 0 "$tmp/any.json: processes[0].claims: warning: is \"any\" and the rule names no user or cgroup: any user can start a process it matches and take CPUs next to an accelerator; add match.user or match.cgroup, or leave claims \"verified\" (docs/trust.md) (line 4, column 57)" \
        -- --check-policy "$tmp/any.json"
rm "$tmp/any.json"
# Shared pages moved for a rule any user can satisfy: a warning; the shipped Atlas example
# moves none (docs/trust.md, "Trust tiers").
cat >"$tmp/shared.json" <<'JSON'
{
  "version": 1,
  "processes": [
    { "name": "w", "match": { "exe": "*/python3*" }, "memory": { "migrate": true, "shared": true } }
  ]
}
JSON
expect 0 - -- --check-policy "$tmp/shared.json"
grep -q '^.*processes\[0\].memory: warning: moves shared pages (shared: true) and the rule names no user or cgroup' "$tmp/err" ||
        fail "no warning for memory.shared on a rule anyone can satisfy: $(cat "$tmp/err")"
sed -i 's|"match": { "exe": "\*/python3\*" }|"match": { "exe": "*/python3*", "user": "root" }|' "$tmp/shared.json"
expect 0 - -- --check-policy "$tmp/shared.json"
grep -q 'moves shared pages' "$tmp/err" && fail "a warning for memory.shared on a rule that names its user: $(cat "$tmp/err")"
"$bin" --check-policy "$src/policies/50-atlas-800i-a2.json" 2>&1 | grep -q 'moves shared pages' &&
        fail "the shipped Atlas example moves shared pages for a rule anyone can satisfy"
rm "$tmp/shared.json"
# An unanchored ".*" on the command line: quadratic on a long one; a warning.
cat >"$tmp/slow.json" <<'JSON'
{
  "version": 1,
  "processes": [
    { "name": "slow", "match": { "exe": "*/python3*", "cmdline": "prog .*--id" } }
  ]
}
JSON
expect 0 - -- --check-policy "$tmp/slow.json"
grep -q 'processes\[0\].match.cmdline: warning: is not anchored' "$tmp/err" || fail "no warning for an unanchored .*: $(cat "$tmp/err")"
rm "$tmp/slow.json"

# Usage errors: exit 2. Paths that are not there, or hold no policy: exit 1.
expect 2 "npu-tuned: --check-policy needs at least one file or directory" -- --check-policy
expect 1 "$tmp/nope: cannot open: No such file or directory" -- --check-policy "$tmp/nope"
mkdir "$tmp/empty"
expect 1 "$tmp/empty: no *.json policy files in this directory" -- --check-policy "$tmp/empty"

# Permissions, as the daemon (root) would see them.
if [ "$(id -u)" = 0 ]; then
        cp "$src/policies/10-default.json" "$tmp/open.json"
        chmod 0666 "$tmp/open.json"
        expect 1 "$tmp/open.json: writable by group and others (mode 0666): refusing it (chmod go-w $tmp/open.json)" \
                -- --check-policy "$tmp/open.json"
        rm "$tmp/open.json"
else
        echo "SKIP: permission checks need root"
fi

# --print-policy: the merged policy, which loads back.
mkdir "$tmp/dir" "$tmp/printed"
cp "$src/policies/10-default.json" "$tmp/dir/10-default.json"
cp "$src/tests/policy/dropin-site.json" "$tmp/dir/50-site.json"
expect 0 - -- --print-policy --policy-dir "$tmp/dir"
cp "$tmp/out" "$tmp/printed/merged.json"
grep -q '"governor": "performance"' "$tmp/printed/merged.json" || fail "--print-policy: no governor"
if grep -q '"name": "triton"' "$tmp/printed/merged.json"; then fail "--print-policy: disabled rule printed"; fi
expect 0 - -- --check-policy "$tmp/printed/merged.json"
expect 0 - -- --print-policy --policy-dir "$tmp/printed"
sed 1,3d "$tmp/out" >"$tmp/second"
sed 1,3d "$tmp/printed/merged.json" >"$tmp/first"
cmp -s "$tmp/first" "$tmp/second" || fail "--print-policy does not load back to the same policy"
expect 0 "npu-tuned: no policy file found, this is the embedded default policy
npu-tuned: cannot read the topology below /nonexistent-root-for-test (No such file or directory): skipped the checks against this host" \
        -- --print-policy --policy-dir "$tmp/empty" --root /nonexistent-root-for-test
cp "$src/tests/policy/bad-typo.json" "$tmp/dir/60-typo.json"
expect 1 "$tmp/dir/60-typo.json: host.thp.defarg: unknown key (did you mean \"defrag\"?) (line 4, column 34)" \
        -- --print-policy --policy-dir "$tmp/dir"

# File order, as an operator installs it: the shipped 10-default.json, the Atlas example
# linked into /etc under its own name (50-...) and a site drop-in 60-site.json lowering one
# value. The drop-in sorts last and wins; the example's values win over the default's;
# --check-policy and --print-policy say which file set each value and what it replaced.
mkdir -p "$tmp/order/usr" "$tmp/order/etc"
cp "$src/policies/10-default.json" "$tmp/order/usr/"
ln -s "$src/policies/50-atlas-800i-a2.json" "$tmp/order/etc/50-atlas-800i-a2.json"
site=$tmp/order/etc/60-site.json
printf '{\n  "version": 1,\n  "processes": [\n    { "name": "vllm-worker",\n      "memory": { "min_free_mib": 64 } }\n  ]\n}\n' >"$site"
expect 0 - -- --check-policy "$tmp/order/usr" "$tmp/order/etc"
grep -q '^OK: 3 files' "$tmp/out" || fail "order: $(cat "$tmp/out")"
grep -q 'is overridden' "$tmp/err" && fail "order: a warning on the intended override: $(cat "$tmp/err")"
grep -Fxq "  processes[vllm-worker].memory.min_free_mib = 64  <- $site:5" "$tmp/out" ||
        fail "order: min_free_mib's origin: $(grep min_free "$tmp/out")"
grep -Fxq "      replaces 8192  <- $tmp/order/etc/50-atlas-800i-a2.json:40" "$tmp/out" ||
        fail "order: what the drop-in replaced: $(grep -A2 'vllm-worker].memory.min_free' "$tmp/out")"
grep -Fxq "  processes[vllm-worker].memory.migrate = true  <- $tmp/order/etc/50-atlas-800i-a2.json:38" "$tmp/out" ||
        fail "order: the example does not win over the default: $(grep 'vllm-worker].memory.migrate' "$tmp/out")"
expect 0 - -- --print-policy --policy-dir "$tmp/order/usr" --policy-dir "$tmp/order/etc"
python3 -c '
import json, sys
w = [r for r in json.load(open(sys.argv[1]))["processes"] if r["name"] == "vllm-worker"][0]
assert w["memory"]["min_free_mib"] == 64 and w["memory"]["migrate"] is True and w["threads"]["compute"]["cpus"] == 3, w
' "$tmp/out" || fail "--print-policy: the merged vllm-worker rule is not the drop-in over the example over the default"
grep -Fq "  processes[vllm-worker].memory.min_free_mib = 64  <- $site:5" "$tmp/err" ||
        fail "--print-policy does not say where min_free_mib comes from: $(cat "$tmp/err")"
# The same drop-in beside a copy of the example under an unnumbered name: the copy sorts
# after 60-site.json and silently took the drop-in's value back. Now it still does (name
# order is the rule), but the warning names both files and the fix.
rm "$tmp/order/etc/50-atlas-800i-a2.json"
cp "$src/policies/50-atlas-800i-a2.json" "$tmp/order/etc/atlas-800i-a2.json"
expect 0 - -- --check-policy "$tmp/order/usr" "$tmp/order/etc"
grep -Fq "$site: processes[0].memory.min_free_mib: warning: 64 is overridden by 8192 from $tmp/order/etc/atlas-800i-a2.json (line 40), which is read after it: files merge in the order of their names, whatever their directory; name a drop-in so that it sorts after the files it adapts (60-site.json after 50-atlas-800i-a2.json) (line 5, column 19)" "$tmp/err" ||
        fail "no warning for the overridden drop-in value: $(cat "$tmp/err")"
grep -Fxq "      replaces 64  <- $site:5 (not a shipped file: see the warning)" "$tmp/out" ||
        fail "order: the overridden drop-in value is not shown: $(grep -A2 'vllm-worker].memory.min_free' "$tmp/out")"

# The daemon refuses to start with a bad policy, and says so.
"$bin" --no-watch --policy-dir "$tmp/dir" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] || fail "daemon with a bad policy: exit $rc"
grep -q 'Refusing to start with an invalid policy' "$tmp/err" || fail "daemon with a bad policy: $(cat "$tmp/err")"
grep -q 'host.thp.defarg: unknown key' "$tmp/err" || fail "daemon does not name the problem: $(cat "$tmp/err")"
# ... and with no policy file, runs the embedded default and says so.
timeout -s TERM 2 "$bin" --no-watch --policy-dir "$tmp/empty" >"$tmp/out" 2>"$tmp/err"
grep -q 'Using the embedded default policy' "$tmp/err" || fail "daemon without policy: $(cat "$tmp/err")"

# Every example of the man page is a valid policy (drop-in examples on top of the default).
man=$src/man/npu-tuned.policy.5
mkdir "$tmp/man"
awk -v dir="$tmp/man" '
        /^\.\\" policy-(dropin-)?example: / { name = $3; kind = ($2 == "policy-dropin-example:") ? "dropin" : "plain"; next }
        name != "" && /^\.EX$/ { out = dir "/" kind "-" name ".json"; next }
        out != "" && /^\.EE$/ { close(out); out = ""; name = ""; next }
        out != "" { gsub(/\\-/, "-"); gsub(/\\e/, "\\"); gsub(/\\&/, ""); print > out }
' "$man"
# They are written for the reference deployment's host: checked against its generated
# tree (--check-policy checks as the daemon would start on the host below --root).
python3 "$src/tests/fixtures/gen-fakeroot.py" atlas-800i-a2 "$tmp/atlas" >/dev/null
n=0
for f in "$tmp"/man/*.json; do
        [ -e "$f" ] || break
        n=$((n + 1))
        case $f in
        */dropin-*) expect 0 - -- --root "$tmp/atlas" --check-policy "$src/policies/10-default.json" "$f" ;;
        *) expect 0 - -- --root "$tmp/atlas" --check-policy "$f" ;;
        esac
done
[ "$n" -ge 5 ] || fail "only $n examples found in $man"

if [ "$failures" -gt 0 ]; then
        echo "$failures failure(s)"
        exit 1
fi
echo "all passed ($n man page examples)"
