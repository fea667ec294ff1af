#!/usr/bin/env python3
"""Import cycles between the files of each crate (usage: scripts/import-cycles.py [--max N] [REPO]). A file
imports another when it names an item by a crate:: or super:: path outside its tests. Prints each set of
files that import each other in a cycle, and the largest; with --max N, fails (exit 1) when the largest
spans more than N files (the test command runs it so)."""
import os, re, sys
args = sys.argv[1:]
limit = None
if args[:1] == ['--max']:
    limit = int(args[1]); args = args[2:]
root = args[0] if args else '.'
crates = [c for c in sorted(os.listdir(root)) if os.path.isfile(os.path.join(root, c, 'Cargo.toml')) and os.path.isdir(os.path.join(root, c, 'src'))]
def modpath(rel):
    p = rel[:-3].split('/')
    if p[-1] in ('mod', 'lib', 'main'): p = p[:-1]
    return tuple(p)
worst = 0
for c in crates:
    src = os.path.join(root, c, 'src'); files = {}
    for dp, _, fs in os.walk(src):
        for f in fs:
            if f.endswith('.rs'):
                rel = os.path.relpath(os.path.join(dp, f), src); files[modpath(rel)] = rel
    edges = {m: set() for m in files}
    for m, rel in files.items():
        text = open(os.path.join(src, rel)).read()
        cut = text.find('#[cfg(test)]')
        if cut >= 0: text = text[:cut]
        text = re.sub(r'//[^\n]*', '', text)
        refs = []
        for mt in re.finditer(r'\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)', text):
            parts = mt.group(2).split('::')[1:]
            base = () if mt.group(1) == 'crate' else m[:-1]
            refs.append(base + tuple(parts))
        # `use crate::x::{a, b::c}` groups
        for mt in re.finditer(r'\b(crate|super)::([A-Za-z_][A-Za-z0-9_:]*)::\{([^}]*)\}', text):
            base = (() if mt.group(1) == 'crate' else m[:-1]) + tuple(mt.group(2).split('::'))
            for item in mt.group(3).split(','):
                item = item.strip().split(' ')[0]
                if item and item != 'self': refs.append(base + tuple(item.split('::')))
        for r in refs:
            for k in range(len(r), 0, -1):
                if r[:k] in files and r[:k] != m:
                    edges[m].add(r[:k]); break
    # Tarjan
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)
    def strong(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index: strong(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(comp)
    for v in files:
        if v not in index: strong(v)
    for comp in out:
        worst = max(worst, len(comp))
        print(f"{c}: a cycle of {len(comp)} files: " + ", ".join(sorted(files[x] for x in comp)))
print(f"largest cycle: {worst} files")
if limit is not None and worst > limit:
    print(f"import-cycles: a cycle of {worst} files is more than {limit}: break it (docs/ARCHITECTURE.md says how the others were)", file=sys.stderr)
    sys.exit(1)
