#!/usr/bin/env python3
"""Find import cycles between the modules of a Rust crate's src/ (docs/DESIGN.md, "Layers").

A module (one file) imports another when it names it in a path: `use crate::a::b`,
`super::x`, `self::x`, or a child by its bare name (`use sqlite::x`). A parent's `pub use`
of its own child counts too (STRICT=1, the default here): no module may import a module that
imports it back, re-exports included. Inline `#[cfg(test)] mod tests` blocks are left out.
Prints each cycle (a strongly connected component) and exits 1 when there is one. With
`--edges` it prints every import instead, one `EDGE FROM TO` line each (module paths,
`crate` for the crate root), for the layering check (tests/it/layers.rs). `main.rs` is
the binary, not a module of the library, and is left out.

    python3 contrib/dev/import-cycles.py src
    python3 contrib/dev/import-cycles.py src --edges
"""
import os, re, sys
args = [a for a in sys.argv[1:] if a != '--edges']
EDGES = '--edges' in sys.argv[1:]
root = args[0]
STRICT = int(os.environ.get("STRICT", "1"))
files = {}
for d, _, fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            p = os.path.join(d, f)
            if os.path.relpath(p, root) == 'main.rs': continue
            rel = os.path.relpath(p, root)[:-3]
            parts = rel.split('/')
            if parts[-1] == 'mod': parts = parts[:-1]
            if parts == ['lib'] or parts == ['main']: parts = []
            files['::'.join(parts)] = p
mods = set(files)
def resolve(cur, path):
    segs = path.split('::')
    if segs[0] == 'crate': base = []; segs = segs[1:]
    elif segs[0] == 'super':
        base = cur.split('::') if cur else []
        while segs and segs[0] == 'super': base = base[:-1]; segs = segs[1:]
    elif segs[0] == 'self': base = cur.split('::') if cur else []; segs = segs[1:]
    else: return None
    best = None
    for i in range(len(segs)+1):
        m = '::'.join(base + segs[:i])
        if m in mods: best = m
    return best
edges = {m: set() for m in mods}
for m, p in files.items():
    src = open(p).read()
    src = re.sub(r'#\[cfg\(test\)\]\s*mod tests \{.*', '', src, flags=re.S)  # unit tests aside
    for line in src.split('\n'):
        s = line.strip()
        if s.startswith('//'): continue
        s = re.sub(r'pub\(in [^)]*\)', 'pub', s)  # a visibility bound, not an import
        reexport = s.startswith('pub use')
        # a use of a child module by its bare name (`use sqlite::x`, `pub use ask::y`)
        mu = re.match(r'(?:pub(?:\([^)]*\))? )?use (\w+)::', s)
        if mu and mu.group(1) not in ('crate', 'super', 'self', 'std', 'core'):
            s = s.replace('use ' + mu.group(1) + '::', 'use self::' + mu.group(1) + '::', 1)
        for mt in re.finditer(r'\b((?:crate|super|self)(?:::\w+)+)(?:::\{([^}]*)\})?', s):
            paths = [mt.group(1)]
            if mt.group(2):
                paths = [mt.group(1) + '::' + x.strip().split(' ')[0] for x in mt.group(2).split(',') if x.strip()]
            for path in paths:
                t = resolve(m, path.replace('::self', ''))
                if t is None or t == m: continue
                # a parent re-exporting its own child is not an import back
                if reexport and STRICT == 0 and t.startswith(m + "::" if m else ""): continue
                if m and t == m.rsplit('::', 1)[0] if '::' in m else False: pass
                edges[m].add(t)
if EDGES:
    for a in sorted(edges):
        for b in sorted(edges[a]):
            print('EDGE', a or 'crate', b or 'crate')
    sys.exit(0)
# cycles via Tarjan SCC
idx = {}; low = {}; st = []; on = set(); sccs = []; c = [0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in edges[v]:
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: sccs.append(comp)
for v in mods:
    if v not in idx: sc(v)
only = args[1] if len(args) > 1 else ''
for comp in sccs:
    if only and not any(x.startswith(only) for x in comp): continue
    print('CYCLE:', sorted(comp))
    for a in comp:
        for b in edges[a]:
            if b in comp: print('   ', a, '->', b)
print('modules', len(mods), 'cycles', len(sccs))
sys.exit(1 if sccs else 0)
