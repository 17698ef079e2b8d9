#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Print one 'N passed, N failed, N skipped' line for meson test logs (CI's closing line).

Skips are listed by name with their reason line: a skip must only mean a capability that is
truly absent on the machine."""
import json
import sys

passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        f = open(path, encoding="utf-8")
    except OSError:
        continue
    with f:
        for line in f:
            t = json.loads(line)
            r = t.get("result")
            if r in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif r == "SKIP":
                skipped += 1
                out = (t.get("stdout") or "").strip().splitlines()
                print(f"skipped: {t['name']}: {out[-1] if out else 'no reason printed'}")
            else:
                failed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
