#!/usr/bin/env python3
"""check_layers.py LAYERS_TXT ROOT [--never LAYER=OTHER]...

Checks every #include of the project against the layer graph the build
writes to LAYERS_TXT (one line per node: "name: dir... | dependency...",
dirs relative to ROOT): the libraries of src/ (src/CMakeLists.txt), the
public headers (include/atomx), the runtime (runtime/), the command line
(tools/atomx) and the shipped tools (tools/NAME).  A file belongs to the
node with the longest directory containing it.  Both forms are checked,
#include "..." and #include <...>: an include is resolved as the compiler
would find it in the project (beside the including file for "...", then
ROOT/src, ROOT/include, ROOT); an include found nowhere in the project is
a system header and is not checked.  A file may include its own node's
files, those of the nodes its node depends on, directly or through others,
and the public headers (include/atomx, which themselves include only
public headers); anything else is reported.  Exits 1 if there is any.
--never LAYER=OTHER also fails when LAYER depends on OTHER, directly or
through others (a rule the graph itself must keep: the melt layer reads
traces and never reaches the rewriter).
"""
import os
import re
import sys

PUBLIC = "atomx_public"
SOURCES = (".h", ".hpp", ".c", ".cpp", ".cc", ".S", ".inc")
INCLUDE = re.compile(r'\s*#\s*include\s*([<"])([^">]+)[">]')


def read_layers(path):
    layers = {}  # name -> (dirs, deps)
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            name, rest = line.split(":", 1)
            dirs, _, deps = rest.partition("|")
            layers[name.strip()] = ([d.rstrip("/") for d in dirs.split()], deps.split())
    return layers


def main():
    args = sys.argv[1:]
    never = []
    while "--never" in args:
        i = args.index("--never")
        never.append(args[i + 1].split("=", 1))
        del args[i:i + 2]
    layers_txt, root = args[0], os.path.abspath(args[1])
    layers = read_layers(layers_txt)
    # directory (relative to root) -> node; the longest one owns a file.
    owner_of_dir = {d: name for name, (dirs, _) in layers.items() for d in dirs}

    def owner(rel):
        best = None
        for d, name in owner_of_dir.items():
            if (rel == d or rel.startswith(d + "/")) and (best is None or len(d) > len(best[0])):
                best = (d, name)
        return best[1] if best else None

    def reachable(name, seen=None):
        seen = set() if seen is None else seen
        if name in seen or name not in layers:
            return seen
        seen.add(name)
        for dep in layers[name][1]:
            reachable(dep, seen)
        return seen

    def resolve(including, quoted, path):
        """The included file relative to root, or None for a system header."""
        bases = ([os.path.dirname(including)] if quoted else []) + [os.path.join(root, "src"),
                                                                     os.path.join(root, "include"), root]
        for base in bases:
            full = os.path.normpath(os.path.join(base, path))
            if os.path.isfile(full) and full.startswith(root + os.sep):
                return os.path.relpath(full, root)
        # Not in this tree: a header of a layer directory that is not there
        # (the checker's own test trees) still names its layer.
        first = path.split("/", 1)[0]
        for candidate in ("src/" + first, "include/" + first, first):
            if candidate in owner_of_dir and "/" in path:
                return os.path.join(candidate, path.split("/", 1)[1])
        return None

    errors, files = [], 0
    for name, other in never:
        if name not in layers:
            errors.append(f"--never {name}={other}: no layer {name} in {layers_txt}")
        elif other in reachable(name) - {name}:
            errors.append(f"{name} depends on {other} (--never {name}={other})")
    src = os.path.join(root, "src")
    if os.path.isdir(src):
        for d in sorted(os.listdir(src)):
            if os.path.isdir(os.path.join(src, d)) and owner("src/" + d) is None:
                errors.append(f"src/{d}/ belongs to no layer in {layers_txt}")
    for d, name in sorted(owner_of_dir.items()):
        top = os.path.join(root, d)
        for dirpath, _, names in os.walk(top):
            for fname in sorted(names):
                if not fname.endswith(SOURCES):
                    continue
                full = os.path.join(dirpath, fname)
                rel = os.path.relpath(full, root)
                if owner(rel) != name:
                    continue  # a deeper directory's node checks it
                files += 1
                allowed = reachable(name) | {PUBLIC} if name != PUBLIC else {PUBLIC}
                with open(full, errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = resolve(full, m.group(1) == '"', m.group(2))
                        if target is None:
                            continue
                        to = owner(target)
                        if to is None:
                            errors.append(f"{rel}:{n}: {name} includes {m.group(2)} ({target}), which belongs to no layer")
                        elif to not in allowed:
                            errors.append(f"{rel}:{n}: {name} includes {m.group(2)}, which belongs to {to}, "
                                          f"a layer {name} does not depend on")
    for e in errors:
        print(e)
    print(f"layering: {files} files in {len(owner_of_dir)} directories of {len(layers)} layers checked, "
          f"{len(errors)} wrong include(s)")
    return 1 if errors or files == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
