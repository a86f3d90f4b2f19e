#!/usr/bin/env python3
"""The file-level module graph of a crate and its cycles.

    python3 scripts/module-graph.py actors/src     # the engine
    python3 scripts/module-graph.py src            # the binary
    python3 scripts/module-graph.py actors/src --edges   # every edge too

A file depends on another when it names an item of it: `crate::a::b`,
`super::x`, `self::x`, or a child module by its bare name (`child::f`),
`#[path]` modules included. Test code (from the first `#[cfg(test)]` of a
file) is left out. It prints each strongly connected set of files (a
cycle: every file in it reaches every other), largest first, then a
summary line. Text-based (regular expressions, not a Rust parser): a
measure to compare trees with, not a proof.
"""
import os
import re
import sys


def load(root):
    files = {}
    for dp, _, names in os.walk(root):
        for f in names:
            if f.endswith(".rs"):
                p = os.path.join(dp, f)
                files[os.path.relpath(p, root)] = open(p, encoding="utf-8").read()
    return files


def modpath(rel):
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def code(src):
    text = "\n".join(l for l in src.split("\n") if not l.strip().startswith("//"))
    cut = text.find("#[cfg(test)]")
    return text[:cut] if cut >= 0 else text


PATH_MOD = re.compile(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;')
MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
PATH = re.compile(r"\b(crate|super|self)((?:::\w+)+)")
GROUP = re.compile(r"\b(crate|super|self)((?:::[a-z_][a-z0-9_]*)*)::\{([^;]*?)\}", re.S)


def graph(root):
    files = load(root)
    mods = {modpath(r): r for r in files}
    # `#[path = "x.rs"] mod m;` makes x.rs the module m of the includer.
    for r, src in files.items():
        for target, name in PATH_MOD.findall(src):
            rel = os.path.normpath(os.path.join(os.path.dirname(r), target))
            if rel in files:
                mods[modpath(r) + (name,)] = rel
    file_mod = {}
    for m, r in mods.items():
        if r not in file_mod or len(m) > len(file_mod[r]):
            file_mod[r] = m

    def resolve(path):
        for k in range(len(path), 0, -1):
            if tuple(path[:k]) in mods:
                return mods[tuple(path[:k])]
        return None

    edges = {r: set() for r in files}
    for r, src in files.items():
        me = list(file_mod.get(r, modpath(r)))
        text = code(src)

        def add(base, segs):
            if base == "crate":
                path = segs
            elif base == "self":
                path = me + segs
            else:
                up = me[:-1]
                while segs and segs[0] == "super":
                    up, segs = up[:-1], segs[1:]
                path = up + segs
            t = resolve(path)
            if t and t != r:
                edges[r].add(t)

        for base, pre, items in GROUP.findall(text):
            pre = [s for s in pre.split("::") if s]
            for item in items.split(","):
                item = item.strip().split(" as ")[0].replace("{", "").replace("}", "")
                segs = [s for s in item.split("::") if s and s != "self"]
                if segs:
                    add(base, pre + segs)
        for base, segs in PATH.findall(text):
            add(base, [s for s in segs.split("::") if s])
        children = set(MOD.findall(text)) | {n for _, n in PATH_MOD.findall(text)}
        for name in children:
            for m in re.finditer(r"(?<![:\w])" + name + r"((?:::\w+)+)", text):
                t = resolve(me + [name] + [s for s in m.group(1).split("::") if s])
                if t and t != r:
                    edges[r].add(t)
            for m in re.finditer(r"(?<![:\w])" + name + r"::\{([^;]*?)\}", text, re.S):
                for item in m.group(1).split(","):
                    item = item.strip().split(" as ")[0].replace("{", "").replace("}", "")
                    segs = [s for s in item.split("::") if s and s != "self"]
                    t = resolve(me + [name] + segs)
                    if t and t != r:
                        edges[r].add(t)
    return edges


def cycles(edges):
    sys.setrecursionlimit(10000)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            c = []
            while True:
                w = stack.pop()
                on.discard(w)
                c.append(w)
                if w == v:
                    break
            if len(c) > 1:
                out.append(sorted(c))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out, key=lambda c: (-len(c), c))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "actors/src"
    edges = graph(root)
    if "--edges" in sys.argv:
        for f in sorted(edges):
            for t in sorted(edges[f]):
                print(f"{f} -> {t}")
    sets = cycles(edges)
    for c in sets:
        print(len(c), " ".join(c))
    n_edges = sum(len(t) for t in edges.values())
    print(
        f"{root}: {len(edges)} files, {n_edges} edges, {len(sets)} cycles, "
        f"{sum(len(c) for c in sets)} files in cycles, largest {max((len(c) for c in sets), default=0)}"
    )


if __name__ == "__main__":
    main()
