#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The watcher's files call one way (daemon/watcher/watcher-internal.h, "Order").

Reads the symbols of the compiled watcher library (nm), not the sources: a call, a
callback handed to sd-event or the connector, and a table all show as an undefined symbol
that another file defines, and a macro or a comment cannot fool it. Each file may use
only files before it in the order written at the top of watcher-internal.h; a file
missing from that order, or a circle, fails.

usage: watcher-file-order.py LIBRARY.a HEADER [--graph]
"""
import os
import re
import shutil
import subprocess
import sys


def file_of(member):
    # meson names the objects "watcher_<file>.c.o" (the folder, then the file)
    m = re.search(r'([^/_]+(?:-[^/_]+)*)\.c\.o$', member)
    return m.group(1) if m else member


def symbols(library):
    nm = os.environ.get('NM', 'nm')
    if not shutil.which(nm):
        print(f'{nm} not found: skipped')
        sys.exit(77)
    out = subprocess.run([nm, '-A', library], check=True, capture_output=True, text=True).stdout
    defined, used = {}, {}
    for line in out.splitlines():
        # "lib.a:member.o:0000 T name" or "lib.a:member.o:                 U name"
        m = re.match(r'^[^:]+:([^:]+):\s*(?:[0-9a-fA-F]+\s+)?([A-Za-z])\s+(\S+)$', line)
        if not m:
            continue
        f, kind, name = file_of(m.group(1)), m.group(2), m.group(3)
        used.setdefault(f, set())
        if kind == 'U':
            used[f].add(name)
        elif kind in 'TDRB':
            defined[name] = f
    graph = {f: {} for f in used}
    for f, names in used.items():
        for name in names:
            g = defined.get(name)
            if g and g != f:
                graph[f].setdefault(g, []).append(name)
    return graph


def declared_order(header):
    text = open(header, encoding='utf-8').read()
    m = re.search(r'Order \(lowest first\):(.*?)\*/', text, re.S)
    if not m:
        sys.exit(f'{header}: no "Order (lowest first):" comment')
    return re.findall(r'\b((?:watcher|proc)-[a-z-]+)\.c\b', m.group(1))


def find_cycle(graph):
    state, stack = {}, []

    def visit(f):
        state[f] = 1
        stack.append(f)
        for g in sorted(graph.get(f, {})):
            if state.get(g) == 1:
                return stack[stack.index(g):] + [g]
            if g not in state:
                c = visit(g)
                if c:
                    return c
        stack.pop()
        state[f] = 2
        return None

    for f in sorted(graph):
        if f not in state:
            c = visit(f)
            if c:
                return c
    return None


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    graph = symbols(sys.argv[1])
    order = declared_order(sys.argv[2])
    if '--graph' in sys.argv[3:]:
        for f in (order + sorted(set(graph) - set(order))):
            for g, names in sorted(graph.get(f, {}).items()):
                print(f'{f}.c -> {g}.c: {", ".join(sorted(names))}')
    failed = False
    for f in sorted(set(graph) - set(order)):
        print(f'{f}.c is not in the order of {sys.argv[2]}')
        failed = True
    cycle = find_cycle(graph)
    if cycle:
        print('circle: ' + ' -> '.join(f + '.c' for f in cycle))
        failed = True
    rank = {f: i for i, f in enumerate(order)}
    for f, targets in sorted(graph.items()):
        for g, names in sorted(targets.items()):
            if f in rank and g in rank and rank[g] >= rank[f]:
                print(f'{f}.c uses {g}.c, which comes after it in the order: {", ".join(sorted(names))}')
                failed = True
    if failed:
        sys.exit(1)
    print('one way: ' + ' <- '.join(f + '.c' for f in order))


if __name__ == '__main__':
    main()
