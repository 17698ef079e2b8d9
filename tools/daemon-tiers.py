#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The daemon's folders and the way their includes may go (daemon/tiers.ini).

uses SRCROOT FOLDER
    The folders FOLDER's sources may include from, itself first, one per line, as paths
    relative to daemon/ (daemon/meson.build puts exactly these on the folder's include
    path, so a wrong-way include does not compile).
check SRCROOT
    The same rules read from the sources: every '#include "X.h"' of a folder's files names
    a header of the folder or of a folder it uses; no header name is in two folders; every
    folder of daemon/ is in the table; the table has no cycle and spells out what each
    folder uses through another; only the manager's own files (core/manager*.c) and main
    (core/npu-tuned.c) name the Manager.
"""
import configparser
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"/]+\.h)"', re.M)
MANAGER = re.compile(r"\bManager\s*\*")
# Headers the build makes (meson's config.h), not of any folder.
GENERATED = {"config.h"}


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiers_table import TierError, check_uses  # noqa: E402


def load(srcroot):
    cp = configparser.ConfigParser()
    with open(os.path.join(srcroot, "daemon", "tiers.ini")) as f:
        cp.read_file(f)
    tiers = {}
    for name in cp.sections():
        path = cp[name].get("path", os.path.join("daemon", name))
        tiers[name] = {"uses": cp[name].get("uses", "").split(), "path": path, "program": "path" in cp[name]}
    check_uses(tiers, "daemon/tiers.ini", "folder", lambda u: not tiers[u]["program"])
    ddir = os.path.join(srcroot, "daemon")
    for d in sorted(os.listdir(ddir)):
        if os.path.isdir(os.path.join(ddir, d)) and d not in tiers:
            raise TierError(f"daemon/{d}/ is not a folder of daemon/tiers.ini")
    return tiers


def sources(srcroot, path):
    full = os.path.join(srcroot, path)
    if not os.path.isdir(full):
        return []
    return sorted(f for f in os.listdir(full) if f.endswith((".c", ".h")))


def check(srcroot):
    tiers = load(srcroot)
    owner, problems = {}, []
    for name, t in tiers.items():
        if t["program"]:
            continue
        for f in sources(srcroot, t["path"]):
            if not f.endswith(".h"):
                continue
            if f in owner:
                problems.append(f"daemon/{name}/{f}: a header of that name is in daemon/{owner[f]}/ too")
            owner[f] = name
    for name, t in tiers.items():
        allowed = {name, *t["uses"]}
        for f in sources(srcroot, t["path"]):
            rel = os.path.join(t["path"], f)
            with open(os.path.join(srcroot, rel)) as fh:
                text = fh.read()
            for m in INCLUDE.finditer(text):
                h = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                if h in GENERATED:
                    continue
                if h not in owner:
                    if not t["program"]:
                        problems.append(f"{rel}:{line}: includes {h}, which is in no daemon folder")
                    continue
                if owner[h] not in allowed:
                    problems.append(f"{rel}:{line}: {name} includes {h} of folder {owner[h]} "
                                    f"({name} may use: {' '.join(t['uses']) or 'nothing'})")
            if name != "npu-tunectl" and not (name == "core" and (f.startswith("manager") or f == "npu-tuned.c")):
                for m in MANAGER.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    problems.append(f"{rel}:{line}: names the Manager; only core/manager*.c and core/npu-tuned.c may")
    if problems:
        raise TierError("\n".join(problems))


def main(argv):
    try:
        if len(argv) == 4 and argv[1] == "uses":
            tiers = load(argv[2])
            if argv[3] not in tiers:
                raise TierError(f"{argv[3]} is not a folder of daemon/tiers.ini")
            t = tiers[argv[3]]
            for u in [argv[3], *t["uses"]]:
                print(os.path.relpath(os.path.join(argv[2], tiers[u]["path"]), os.path.join(argv[2], "daemon"))
                      if u != argv[3] or not t["program"] else ".")
            return 0
        if len(argv) == 3 and argv[1] == "check":
            check(argv[2])
            return 0
    except (TierError, OSError, configparser.Error) as e:
        print(e, file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
