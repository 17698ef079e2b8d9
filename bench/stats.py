#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Summarise per-run samples of several configurations taken in turns, as a table with
ratios to a baseline's median.

  stats.py [--unit us|ms] [--scale S] [--baseline NAME]... [--lower-is-better] DIR NAME...

DIR/NAME.txt holds one sample per line (a number, or "unplaced" for a run that failed);
numbers are multiplied by --scale (e.g. 1e-3 for ns -> us). Prints the percentiles asked
for (--pcts), the failed runs, and NAME's --ratio-pct percentile (default the median) over
each baseline's (--baseline may be given more than once: a column each, in that order;
one that is not among the NAMEs is left out)."""
import argparse
import os


def pct(xs, p):
    if not xs:
        return float("nan")
    i = min(len(xs) - 1, int(p / 100.0 * len(xs)))
    return xs[i]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--unit", default="us")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--baseline", action="append", default=[])
    ap.add_argument("--pcts", default="50,90,99,100")
    ap.add_argument("--ratio-pct", type=float, default=50.0, help="the percentile the ratio column compares")
    ap.add_argument("dir")
    ap.add_argument("names", nargs="+")
    a = ap.parse_args()
    pcts = [float(p) for p in a.pcts.split(",")]
    rows = {}
    for name in a.names:
        vals, failed = [], 0
        path = os.path.join(a.dir, name + ".txt")
        if os.path.exists(path):
            for line in open(path):
                line = line.strip()
                if not line:
                    continue
                try:
                    vals.append(float(line) * a.scale)
                except ValueError:
                    failed += 1
        rows[name] = (sorted(vals), failed)
    bases = [b for b in dict.fromkeys(a.baseline or [a.names[0]]) if b in rows] or [a.names[0]]
    base_meds = [pct(rows[b][0], a.ratio_pct) for b in bases]
    head = ["config", "runs"] + [("p%g" % p if p < 100 else "max") + " " + a.unit for p in pcts] + ["failed"]
    head += ["p%g / %s" % (a.ratio_pct, b) for b in bases]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name in a.names:
        vals, failed = rows[name]
        med = pct(vals, a.ratio_pct)
        cells = [name, str(len(vals) + failed)] + ["%.0f" % pct(vals, p) if a.unit != "ms" else "%.2f" % pct(vals, p) for p in pcts]
        cells.append("%d/%d" % (failed, len(vals) + failed))
        for base_med in base_meds:
            ratio = med / base_med if base_med and base_med == base_med and med == med else float("nan")
            cells.append("%.2f" % ratio)
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
