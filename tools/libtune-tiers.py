#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""libtune's dependency tiers (libtune/tiers.ini).

include-farm SRCROOT OUTDIR
    For each tier, OUTDIR/TIER/npu-tuned/ holds symlinks to the public headers the tier may
    include (its own and those of the tiers it uses). The build compiles a tier with only
    that directory on its include path, so an include that goes the wrong way fails to
    compile. Fails when the table is inconsistent or a public header is in no tier.
check SRCROOT
    The same rules read from the sources: every '#include "npu-tuned/X.h"' of a tier's
    sources (libtune/TIER/*.[ch]) and of its public headers names a header of the tier or
    of a tier it uses (also a header nobody in the tier includes yet); an external
    library's header is included, and its dependency linked in libtune/TIER/meson.build,
    only by a tier whose "libs" name it.
"""
import configparser
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"npu-tuned/([^"]+)\.h"', re.M)
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s*<([^>]+)>', re.M)
# The external libraries a tier may name in "libs": the headers that belong to each, and
# the meson dependency that links it.
LIBS = {
    "json-c": {"headers": re.compile(r"^(json\.h|json-c/)"), "dep": "jsonc_dep"},
    "libnuma": {"headers": re.compile(r"^(numa\.h|numaif\.h)$"), "dep": "numa_dep"},
    "libcpupower": {"headers": re.compile(r"^(cpufreq\.h|cpupower\.h|cpuidle\.h)$"), "dep": "cpupower_dep"},
}
MESON_DEPS = re.compile(r"dependencies\s*:\s*\[([^\]]*)\]")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiers_table import TierError, check_uses  # noqa: E402


def load(srcroot):
    cp = configparser.ConfigParser()
    with open(os.path.join(srcroot, "libtune", "tiers.ini")) as f:
        cp.read_file(f)
    tiers, owner = {}, {}
    for name in cp.sections():
        uses = cp[name].get("uses", "").split()
        headers = cp[name].get("headers", "").split()
        libs = cp[name].get("libs", "").split()
        for lib in libs:
            if lib not in LIBS:
                raise TierError(f"tiers.ini: {name} names unknown library {lib} (known: {' '.join(LIBS)})")
        tiers[name] = {"uses": uses, "headers": headers, "libs": libs}
        for h in headers:
            if h in owner:
                raise TierError(f"tiers.ini: header {h}.h is in both {owner[h]} and {name}")
            owner[h] = name
    check_uses(tiers, "tiers.ini", "tier")
    incdir = os.path.join(srcroot, "include", "npu-tuned")
    for f in sorted(os.listdir(incdir)):
        if f.endswith(".h") and f[:-2] not in owner:
            raise TierError(f"include/npu-tuned/{f} is in no tier: add it to libtune/tiers.ini")
    for h in owner:
        if not os.path.isfile(os.path.join(incdir, h + ".h")):
            raise TierError(f"tiers.ini: include/npu-tuned/{h}.h does not exist")
    for d in sorted(os.listdir(os.path.join(srcroot, "libtune"))):
        if os.path.isdir(os.path.join(srcroot, "libtune", d)) and d not in tiers:
            raise TierError(f"libtune/{d}/ is not a tier of libtune/tiers.ini")
    return tiers, owner


def allowed(tiers, name):
    return {name, *tiers[name]["uses"]}


def include_farm(srcroot, outdir):
    tiers, owner = load(srcroot)
    incdir = os.path.abspath(os.path.join(srcroot, "include", "npu-tuned"))
    for name in tiers:
        d = os.path.join(outdir, name, "npu-tuned")
        os.makedirs(d, exist_ok=True)
        want = {h + ".h" for h, t in owner.items() if t in allowed(tiers, name)}
        for f in os.listdir(d):
            if f not in want:
                os.unlink(os.path.join(d, f))
        for f in sorted(want):
            link, target = os.path.join(d, f), os.path.join(incdir, f)
            if os.path.islink(link) and os.readlink(link) == target:
                continue
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(target, link)


def includes(path):
    with open(path, errors="replace") as f:
        text = f.read()
    for m in INCLUDE.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group(1)


def check(srcroot):
    tiers, owner = load(srcroot)
    problems = []

    def verify_libs(path, tier, shown):
        with open(path, errors="replace") as f:
            text = f.read()
        for m in SYSTEM_INCLUDE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            for lib, spec in LIBS.items():
                if spec["headers"].match(m.group(1)) and lib not in tiers[tier]["libs"]:
                    problems.append(f"{shown}:{line}: {tier} includes <{m.group(1)}> of {lib}, which the tier does not list"
                                    f" (libs: {' '.join(tiers[tier]['libs']) or 'none'})")

    def verify(path, tier, shown):
        verify_libs(path, tier, shown)
        for line, h in includes(path):
            if h not in owner:
                problems.append(f"{shown}:{line}: npu-tuned/{h}.h is not a public header of any tier")
            elif owner[h] not in allowed(tiers, tier):
                problems.append(f"{shown}:{line}: {tier} includes npu-tuned/{h}.h of tier {owner[h]}"
                                f" (a {tier} file may use: {' '.join(sorted(allowed(tiers, tier)))})")

    for h, tier in sorted(owner.items()):
        verify(os.path.join(srcroot, "include", "npu-tuned", h + ".h"), tier, f"include/npu-tuned/{h}.h")
    n = 0
    for tier in tiers:
        d = os.path.join(srcroot, "libtune", tier)
        if not os.path.isdir(d):
            continue
        build = os.path.join(d, "meson.build")
        if os.path.isfile(build):
            with open(build) as f:
                deps = set()
                for m in MESON_DEPS.finditer(f.read()):
                    deps.update(x.strip() for x in m.group(1).split(",") if x.strip())
            want = {LIBS[lib]["dep"] for lib in tiers[tier]["libs"]}
            for dep in sorted(deps - want):
                problems.append(f"libtune/{tier}/meson.build: links {dep}, which tiers.ini does not list for {tier}")
            for dep in sorted(want - deps):
                problems.append(f"libtune/{tier}/meson.build: does not link {dep}, which tiers.ini lists for {tier}")
        for f in sorted(os.listdir(d)):
            if f.endswith((".c", ".h")):
                n += 1
                verify(os.path.join(d, f), tier, f"libtune/{tier}/{f}")
    loose = [f for f in os.listdir(os.path.join(srcroot, "libtune")) if f.endswith((".c", ".h"))]
    for f in sorted(loose):
        problems.append(f"libtune/{f}: a source outside every tier folder")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"ok: {n} sources and {len(owner)} public headers in {len(tiers)} tiers include only what their tier may use")
    return 0


def main(argv):
    try:
        if len(argv) == 3 and argv[0] == "include-farm":
            include_farm(argv[1], argv[2])
            return 0
        if len(argv) == 2 and argv[0] == "check":
            return check(argv[1])
    except TierError as e:
        print(f"libtune tiers: {e}", file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
