#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Calls and inclusive instruction counts (Ir) of named functions, from a callgrind output
file: the sum over every call site of the 'calls=' lines and the cost that follows them.

  callgrind-calls.py CALLGRIND_OUT FUNCTION...

Prints one line per function: name, calls, inclusive Ir, Ir per call."""
import re
import sys


def main():
    path, wanted = sys.argv[1], sys.argv[2:]
    names = {}  # "(id)" -> name, shared by fn= and cfn=
    calls = {w: 0 for w in wanted}
    cost = {w: 0 for w in wanted}
    events = ["Ir"]
    callee, pending = None, False
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("events:"):
                events = line.split()[1:]
                continue
            m = re.match(r"^c?fn=(\(\d+\))?\s*(.*)$", line)
            if m:
                ident, name = m.group(1), m.group(2)
                if ident and name:
                    names[ident] = name
                elif ident:
                    name = names.get(ident, ident)
                if line.startswith("cfn="):
                    callee = name
                continue
            if line.startswith("calls="):
                n = int(line.split("=", 1)[1].split()[0])
                if callee in calls:
                    calls[callee] += n
                    pending = True
                continue
            if pending:
                # The line after calls=: position(s) then the inclusive cost of those calls.
                parts = line.split()
                ir = events.index("Ir") if "Ir" in events else 0
                npos = len(parts) - len(events)
                if len(parts) > npos + ir >= 0:
                    cost[callee] += int(parts[npos + ir])
                pending = False
    for w in wanted:
        per = cost[w] / calls[w] if calls[w] else float("nan")
        print(f"{w} calls={calls[w]} ir={cost[w]} ir_per_call={per:.0f}")


if __name__ == "__main__":
    main()
