#!/usr/bin/env python3
"""The layer check: every #include of the compiler and the simulator stays inside the layer DAG.

The DAG is written down once, in layers.txt at the repository root (its header says how). The
build runs this script before it compiles any layer library (cmake/layers.cmake: lpu_layers), so
an include that points from a layer to one above it, or to a layer it does not depend on,
fails `cmake --build` with the file, the line and the two layers:

  compiler/isa/program.h:41: layer 'isa' includes "loopir/loop_ir.h" (compiler/loopir/loop_ir.h)
  of layer 'loopir', which 'isa' does not depend on (isa -> public: types ops, private: support)

(one line). The other messages: "a layer above it ('codegen' depends on 'isa')" for a
back-edge, "a private dependency of ..." for a header that includes what only its .cpp files
may, "belongs to no layer" for a file no path of the layers file covers.

The programs on top (apps/) are checked too, as clients: a `client` line names their paths, the
layers they may include (`uses:`, and what those expose) and the system headers they must never
reach (`never:`, e.g. SystemC's), directly or through any project header they include:

  apps/lpu/main.cpp:3: client 'apps' includes "model/host.h" (sim/model/host.h) of layer 'sim',
  which it does not use (apps -> uses: jobs generate sweep servesim)
  apps/lpu/main.cpp:3: client 'apps' includes "model/host.h" (sim/model/host.h), which brings in
  <systemc> (sim/model/engine.h:5), a header 'apps' must never include

Visibility follows CMake's PUBLIC/PRIVATE: a header may include its own layer and what its
public layers expose (their public layers, transitively); a source file also its private
layers and what those expose. Every C++ file under the include roots must belong to a layer,
and the layers file stays true: each dependency it lists is included by some file of the layer,
a public one by a header.

Usage: check_layers.py [--root DIR] [--layers FILE] [--manifest FILE] [--cmake-out FILE]
                       [--stamp FILE] [--dag-only] [--quiet]
  --manifest   lines "LAYER FILE": the sources CMake compiles into lpu_LAYER (checked against
               the layers file)
  --cmake-out  write the DAG as CMake variables (LPU_LAYERS, LPU_LAYER_<name>_PUBLIC/_PRIVATE)
  --stamp      written when the check passes (the build's output), removed first
  --dag-only   only read and check the layers file (what CMake does at configure time)
Exit status 0 when everything is in order, 1 on any violation, 2 on a malformed layers file.
"""
import argparse
import os
import re
import sys

HEADER_EXT = (".h", ".hh", ".hpp", ".inc", ".ipp")
SOURCE_EXT = (".cpp", ".cc", ".cxx")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


class LayersError(Exception):
    pass


class Client:
    """Files on top of every layer (a program): they may include the layers of `uses` and what
    those expose, never a header that reaches a `never` header."""

    def __init__(self, name, line):
        self.name = name
        self.line = line
        self.paths = []
        self.uses = []
        self.never = []

    def describe(self):
        return f"{self.name} -> uses: " + " ".join(self.uses)

    def forbids(self, spelled_name):
        return any(spelled_name == n or (n.endswith("/") and spelled_name.startswith(n)) for n in self.never)


class Layer:
    def __init__(self, name, line):
        self.name = name
        self.line = line
        self.paths = []
        self.public = []
        self.private = []

    def describe(self):
        parts = []
        if self.public:
            parts.append("public: " + " ".join(self.public))
        if self.private:
            parts.append("private: " + " ".join(self.private))
        return f"{self.name} -> " + (", ".join(parts) if parts else "nothing")


def parse_layers(path, root):
    """Reads the layers file: `roots DIR...` and one `NAME PATH... [public: ...] [private: ...]`
    per layer, lowest first; lines that start with blanks continue the one above."""
    records = []  # (line number, tokens)
    with open(path, encoding="utf-8") as f:
        for num, raw in enumerate(f, 1):
            text = raw.split("#", 1)[0].rstrip()
            if not text.strip():
                continue
            if text[0].isspace():
                if not records:
                    raise LayersError(f"{path}:{num}: a continuation line with nothing to continue")
                records[-1][1].extend(text.split())
            else:
                records.append((num, text.split()))
    roots, layers, order, clients = [], {}, [], []
    for num, tokens in records:
        head, rest = tokens[0], tokens[1:]
        if head == "roots":
            roots.extend(rest)
            continue
        if head == "client":
            clients.append(parse_client(path, root, num, rest, layers))
            continue
        if not NAME_RE.match(head):
            raise LayersError(f"{path}:{num}: '{head}' is not a layer name ([a-z][a-z0-9_]*)")
        if head in layers:
            raise LayersError(f"{path}:{num}: layer '{head}' is defined twice (also line {layers[head].line})")
        layer = Layer(head, num)
        target = layer.paths
        for tok in rest:
            if tok == "public:":
                target = layer.public
            elif tok == "private:":
                target = layer.private
            else:
                target.append(tok)
        if not layer.paths:
            raise LayersError(f"{path}:{num}: layer '{head}' has no paths")
        for dep in layer.public + layer.private:
            if dep == head:
                raise LayersError(f"{path}:{num}: layer '{head}' depends on itself")
            if dep not in layers:
                # Lowest first: a dependency is always defined above, so the DAG has no cycle.
                raise LayersError(f"{path}:{num}: layer '{head}' depends on '{dep}', which is not a layer "
                                  "defined above it (layers are listed lowest first)")
        dup = set(layer.public) & set(layer.private)
        if dup:
            raise LayersError(f"{path}:{num}: layer '{head}' lists {' '.join(sorted(dup))} as public and private")
        for p in layer.paths:
            if not os.path.exists(os.path.join(root, p)):
                raise LayersError(f"{path}:{num}: layer '{head}': path {p} does not exist")
        layers[head] = layer
        order.append(head)
    if not roots:
        raise LayersError(f"{path}: no `roots` line (the include roots)")
    owner = {}
    for name in order:
        for p in layers[name].paths:
            key = os.path.normpath(p)
            if key in owner:
                raise LayersError(f"{path}: {p} is a path of both '{owner[key]}' and '{name}'")
            owner[key] = name
    for c in clients:
        for p in c.paths:
            key = os.path.normpath(p)
            if key in owner:
                raise LayersError(f"{path}:{c.line}: {p} is a path of layer '{owner[key]}' and of client '{c.name}'")
    return roots, layers, order, owner, clients


def parse_client(path, root, num, tokens, layers):
    """`client NAME [PATH...] uses: LAYER... [never: HEADER...]` (after the layers it uses); the
    paths default to the directory NAME."""
    if not tokens or not NAME_RE.match(tokens[0]):
        raise LayersError(f"{path}:{num}: a client line is `client NAME [PATH...] uses: LAYER... [never: HEADER...]`")
    c = Client(tokens[0], num)
    target = c.paths
    for tok in tokens[1:]:
        if tok == "uses:":
            target = c.uses
        elif tok == "never:":
            target = c.never
        else:
            target.append(tok)
    c.paths = c.paths or [c.name]  # `client apps uses: ...`: the directory of that name
    if not c.uses:
        raise LayersError(f"{path}:{num}: client '{c.name}' needs `uses:` layers")
    for dep in c.uses:
        if dep not in layers:
            raise LayersError(f"{path}:{num}: client '{c.name}' uses '{dep}', which is not a layer defined above it")
    for p in c.paths:
        if not os.path.exists(os.path.join(root, p)):
            raise LayersError(f"{path}:{num}: client '{c.name}': path {p} does not exist")
    return c


def layer_of(rel, owner):
    """The layer of a repository-relative file: its longest matching path."""
    p = os.path.normpath(rel)
    while True:
        if p in owner:
            return owner[p]
        parent = os.path.dirname(p)
        if parent == p or not parent:
            return None
        p = parent


def visibility(layers, order):
    """exposed[L]: layers a header of L may include besides L (public, transitively);
    usable[L]: layers a source file of L may include; reach[L]: everything L depends on."""
    exposed, usable, reach = {}, {}, {}
    for name in order:  # lowest first, so every dependency is done
        l = layers[name]
        exposed[name] = set()
        for d in l.public:
            exposed[name] |= {d} | exposed[d]
        usable[name] = set(exposed[name])
        for d in l.private:
            usable[name] |= {d} | exposed[d]
        reach[name] = set()
        for d in l.public + l.private:
            reach[name] |= {d} | reach[d]
    return exposed, usable, reach


def resolve(root, including, kind, name, roots):
    candidates = []
    if kind == '"':
        candidates.append(os.path.join(os.path.dirname(including), name))
    candidates += [os.path.join(r, name) for r in roots]
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None  # a system or generated header


def read_includes(root, rel):
    """(line number, '"' or '<', name) of every #include of root/rel."""
    out = []
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for num, line in enumerate(f, 1):
            m = INCLUDE_RE.match(line)
            if m:
                out.append((num, m.group(1), m.group(2)))
    return out


def cpp_files(root, top):
    """The C++ files under root/top (a directory or one file), repository-relative."""
    if os.path.isfile(os.path.join(root, top)):
        return [os.path.normpath(top)] if top.endswith(HEADER_EXT + SOURCE_EXT) else []
    files = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn.endswith(HEADER_EXT + SOURCE_EXT):
                files.append(os.path.relpath(os.path.join(dirpath, fn), root))
    return files


def check_client(root, lf, c, roots, layers, owner, exposed):
    """The problems of one client: includes outside `uses` (and what it exposes), and any
    include that reaches a `never` header through the project's headers."""
    problems = []
    allowed = set()
    for d in c.uses:
        allowed |= {d} | exposed[d]
    mine = [os.path.normpath(p) for p in c.paths]
    reaches = {}  # project file -> (forbidden header, "file:line") or None

    def forbidden_reach(rel, stack=()):
        if rel in reaches:
            return reaches[rel]
        reaches[rel] = None  # a cycle of includes reaches nothing new
        for num, kind, name in read_includes(root, rel):
            if c.forbids(name):
                reaches[rel] = (name, f"{rel}:{num}")
                break
            target = resolve(root, rel, kind, name, roots)
            if target is not None and forbidden_reach(target):
                reaches[rel] = reaches[target]
                break
        return reaches[rel]

    used = set()
    files = sorted({f for p in c.paths for f in cpp_files(root, p)})
    for rel in files:
        for num, kind, name in read_includes(root, rel):
            spelled = f'"{name}"' if kind == '"' else f"<{name}>"
            where = f"{rel}:{num}: client '{c.name}' includes {spelled}"
            if c.forbids(name):
                problems.append(f"{where}, a header '{c.name}' must never include")
                continue
            target = resolve(root, rel, kind, name, roots)
            if target is None:
                continue
            if any(target == m or target.startswith(m + os.sep) for m in mine):
                continue  # its own files are checked in their turn
            dst = layer_of(target, owner)
            if dst is None:
                problems.append(f"{where} ({target}), which belongs to no layer")
                continue
            used.add(dst)
            if dst not in allowed:
                problems.append(f"{where} ({target}) of layer '{dst}', which it does not use ({c.describe()})")
                continue
            bad = forbidden_reach(target)
            if bad:
                problems.append(f"{where} ({target}), which brings in <{bad[0]}> ({bad[1]}), "
                                f"a header '{c.name}' must never include")
    for d in c.uses:
        if d not in used:
            problems.append(f"{lf}:{c.line}: client '{c.name}' uses '{d}', but none of its files includes "
                            "one of its headers (drop it)")
    return problems


def check(root, layers_path, manifest=None):
    roots, layers, order, owner, clients = parse_layers(layers_path, root)
    exposed, usable, reach = visibility(layers, order)
    problems = []
    files = sorted({f for r in roots for f in cpp_files(root, r)})
    includes = 0
    used = {name: {} for name in order}  # layer -> {layer it includes: included from a header?}
    for rel in files:
        src_layer = layer_of(rel, owner)
        if src_layer is None:
            problems.append(f"{rel}: belongs to no layer (add it, or its directory, to a layer in "
                            f"{os.path.relpath(layers_path, root)})")
            continue
        is_header = rel.endswith(HEADER_EXT)
        allowed = exposed[src_layer] if is_header else usable[src_layer]
        for num, kind, name in read_includes(root, rel):
            target = resolve(root, rel, kind, name, roots)
            if target is None:
                continue
            includes += 1
            dst_layer = layer_of(target, owner)
            spelled = f'"{name}"' if kind == '"' else f"<{name}>"
            if dst_layer is None:
                problems.append(f"{rel}:{num}: layer '{src_layer}' includes {spelled} ({target}), "
                                "which belongs to no layer")
                continue
            if dst_layer != src_layer:
                used[src_layer][dst_layer] = used[src_layer].get(dst_layer, False) or is_header
            if dst_layer == src_layer or dst_layer in allowed:
                continue
            head = (f"{rel}:{num}: layer '{src_layer}' includes {spelled} ({target}) "
                    f"of layer '{dst_layer}'")
            if src_layer in reach[dst_layer]:
                why = f"a layer above it ('{dst_layer}' depends on '{src_layer}')"
            elif dst_layer in reach[src_layer]:
                if is_header and dst_layer in usable[src_layer]:
                    why = (f"a private dependency of '{src_layer}': a header may include only what its "
                           "public layers expose (make it public, or include it from the .cpp)")
                else:
                    why = (f"which '{src_layer}' reaches only through private dependencies of its "
                           f"layers (name '{dst_layer}' among the layers of '{src_layer}')")
            else:
                why = f"which '{src_layer}' does not depend on"
            problems.append(f"{head}, {why} ({layers[src_layer].describe()})")
    # The DAG stays true: every dependency is used, and a public one from a header.
    lf = os.path.relpath(layers_path, root)
    for name in order:
        l = layers[name]
        for d in l.public + l.private:
            if d not in used[name]:
                problems.append(f"{lf}:{l.line}: layer '{name}' depends on '{d}', but no file of '{name}' "
                                "includes one of its headers (drop it)")
            elif d in l.public and not used[name][d]:
                problems.append(f"{lf}:{l.line}: layer '{name}' lists '{d}' as public, but only its .cpp files "
                                "include it (make it private)")
    for c in clients:
        problems += check_client(root, lf, c, roots, layers, owner, exposed)
        files += [f for p in c.paths for f in cpp_files(root, p)]
    if manifest:
        with open(manifest, encoding="utf-8") as f:
            for num, line in enumerate(f, 1):
                parts = line.split()
                if len(parts) != 2:
                    continue
                lib_layer, src = parts
                rel = os.path.relpath(os.path.abspath(os.path.join(root, src)), root)
                actual = layer_of(rel, owner)
                if lib_layer not in layers:
                    problems.append(f"{rel}: compiled into lpu_{lib_layer}, which is not a layer")
                elif actual != lib_layer:
                    problems.append(f"{rel}: compiled into lpu_{lib_layer}, but "
                                    f"{os.path.relpath(layers_path, root)} puts it in layer '{actual}'")
    return problems, len(files), includes, layers, order


def write_cmake(path, layers, order):
    lines = ["# Generated by scripts/check_layers.py from layers.txt: do not edit.",
             f"set(LPU_LAYERS {' '.join(order)})"]
    for name in order:
        lines.append(f"set(LPU_LAYER_{name}_PUBLIC {' '.join(layers[name].public)})")
        lines.append(f"set(LPU_LAYER_{name}_PRIVATE {' '.join(layers[name].private)})")
    text = "\n".join(lines) + "\n"
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--root", default=os.path.dirname(here))
    ap.add_argument("--layers")
    ap.add_argument("--manifest")
    ap.add_argument("--cmake-out")
    ap.add_argument("--stamp")
    ap.add_argument("--dag-only", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    layers_path = os.path.abspath(args.layers or os.path.join(root, "layers.txt"))
    if args.stamp and os.path.exists(args.stamp):
        os.remove(args.stamp)
    try:
        if args.dag_only:
            _, layers, order, _, _ = parse_layers(layers_path, root)
            if args.cmake_out:
                write_cmake(args.cmake_out, layers, order)
            return 0
        problems, nfiles, nincludes, layers, order = check(root, layers_path, args.manifest)
    except (LayersError, OSError) as e:
        print(f"check_layers: {e}", file=sys.stderr)
        return 2
    if args.cmake_out:
        write_cmake(args.cmake_out, layers, order)
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        print(f"check_layers: {len(problems)} problem(s) with the layer DAG of "
              f"{os.path.relpath(layers_path, root)} (docs/layers.md)", file=sys.stderr)
        return 1
    if args.stamp:
        with open(args.stamp, "w", encoding="utf-8") as f:
            f.write("ok\n")
    if not args.quiet:
        print(f"check_layers: {nfiles} files, {nincludes} project includes, {len(order)} layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
