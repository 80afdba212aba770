#!/usr/bin/env python3
"""File-level import graph of one crate's `src/`, and its import circles.

Usage: scripts/import_graph.py shared/core/src [--dot]

Reads every `crate::a::b` and `super::x` path in each file (use lines and inline paths),
resolves it to the file that defines that module, and prints the strongly connected
components of more than one file (each is an import circle). `--dot` prints the graph
in Graphviz form instead. Exit status 1 when a circle has more than two files, so a
check can hold the line (issue 37: no circle of more than two files in core).
"""
import os
import re
import sys


def modules(src):
    """Map module path tuple -> file, for every .rs file under src."""
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib"):
                parts = parts[:-1]
            mods[tuple(parts)] = rel
    return mods


PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
GROUP = re.compile(r"\b(crate|super)::\{([^;]*?)\};", re.S)


def own_module(rel):
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib"):
        return tuple(parts[:-1]), True
    return tuple(parts), False


def resolve(mods, path, aliases=None):
    """The longest prefix of path that is a module with a file; a name a `mod.rs`/`lib.rs`
    re-exports (`pub use x::Y`) resolves to where it comes from."""
    for n in range(len(path), 0, -1):
        if tuple(path[:n]) in mods:
            if aliases and n < len(path) and (tuple(path[:n]), path[n]) in aliases:
                return resolve(mods, aliases[(tuple(path[:n]), path[n])], aliases)
            return mods[tuple(path[:n])]
    if aliases and path and ((), path[0]) in aliases:
        return resolve(mods, aliases[((), path[0])], aliases)
    return None


REEXPORT = re.compile(r"pub use ([A-Za-z_][A-Za-z0-9_:]*?)(?:::\{([^}]*)\}|::([A-Za-z_][A-Za-z0-9_]*))\s*;")


def reexports(src, mods):
    """(module, name) -> path of the item it re-exports, from `pub use` in directory modules."""
    aliases = {}
    for key, rel in mods.items():
        if not rel.endswith(("mod.rs", "lib.rs")):
            continue
        text = open(os.path.join(src, rel)).read()
        for m in REEXPORT.finditer(text):
            base = [p for p in m.group(1).split("::") if p]
            if base and base[0] == "crate":
                base = base[1:]
            elif base and base[0] == "self":
                base = list(key) + base[1:]
            else:
                base = list(key) + base
            names = m.group(2).split(",") if m.group(2) else [m.group(3)]
            for n in names:
                n = n.strip()
                if n and n != "self" and "::" not in n:
                    aliases[(key, n)] = base + [n]
    return aliases


def edges(src, mods, why=None):
    aliases = reexports(src, mods)
    out = {rel: set() for rel in mods.values()}
    for key, rel in mods.items():
        text = open(os.path.join(src, rel)).read()
        # strip line comments so doc examples do not count
        text = re.sub(r"//[^\n]*", "", text)
        me, is_dir = own_module(rel)
        # `mod.rs`/`lib.rs` files: `super` is the parent of the directory.
        parent = me[:-1]
        targets = []
        for m in GROUP.finditer(text):
            base = [] if m.group(1) == "crate" else list(parent)
            for item in re.split(r",(?![^{]*\})", m.group(2)):
                item = item.strip()
                if not item:
                    continue
                head = re.split(r"::|\s", item)
                targets.append(base + [h for h in head if h and h != "{"][:2])
        for m in PATH.finditer(text):
            base = [] if m.group(1) == "crate" else list(parent)
            rest = [p for p in m.group(2).split("::") if p]
            while rest and rest[0] == "super":
                base = base[:-1]
                rest = rest[1:]
            targets.append(base + rest)
        for t in targets:
            f = resolve(mods, t, aliases)
            if f and f != rel and not is_child(rel, f):
                out[rel].add(f)
                if why is not None:
                    why.setdefault((rel, f), set()).add("::".join(t))
    return out


def is_child(parent_rel, child_rel):
    """A module's own `mod.rs` naming its children is not an import."""
    p, is_dir = own_module(parent_rel)
    c, _ = own_module(child_rel)
    return is_dir and c[: len(p)] == p and len(c) > len(p)


def sccs(graph):
    index, low, stack, on, result = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            result.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return result


def main():
    src = sys.argv[1]
    mods = modules(src)
    graph = edges(src, mods)
    if "--dot" in sys.argv:
        print("digraph core {")
        for a in sorted(graph):
            for b in sorted(graph[a]):
                print(f'  "{a}" -> "{b}";')
        print("}")
        return 0
    circles = [c for c in sccs(graph) if len(c) > 1]
    print(f"{len(graph)} files, {sum(len(v) for v in graph.values())} imports, "
          f"{len(circles)} circles; largest {max((len(c) for c in circles), default=0)} files")
    for c in sorted(circles, key=len, reverse=True):
        print(f"  circle of {len(c)}: " + ", ".join(c))
    return 1 if any(len(c) > 2 for c in circles) else 0


if __name__ == "__main__":
    sys.exit(main())
