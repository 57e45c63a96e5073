#!/usr/bin/env python3
"""check_layers.py LAYERS_TXT SRC_DIR [--never LAYER=OTHER]...

Checks every #include "dir/..." in SRC_DIR/<dir>/ against the layer graph
that src/CMakeLists.txt writes to LAYERS_TXT (one line per library:
"name: dir... | dependency..."): a file may include headers of its own
layer and of the layers its layer depends on, directly or through others,
never of a layer above it.  Prints every offending include and exits 1 if
there is one.  --never LAYER=OTHER also fails when LAYER depends on OTHER,
directly or through others (a rule the graph itself must keep: the melt
layer reads traces and never reaches the rewriter).
"""
import os
import re
import sys


def read_layers(path):
    layers = {}  # name -> (dirs, deps)
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            name, rest = line.split(":", 1)
            dirs, _, deps = rest.partition("|")
            layers[name.strip()] = (dirs.split(), deps.split())
    return layers


def main():
    args = sys.argv[1:]
    never = []
    while "--never" in args:
        i = args.index("--never")
        never.append(args[i + 1].split("=", 1))
        del args[i:i + 2]
    layers_txt, src = args[0], args[1]
    layers = read_layers(layers_txt)
    owner = {d: name for name, (dirs, _) in layers.items() for d in dirs}

    def reachable(name, seen=None):
        seen = set() if seen is None else seen
        if name in seen or name not in layers:
            return seen
        seen.add(name)
        for dep in layers[name][1]:
            reachable(dep, seen)
        return seen

    errors, files = [], 0
    for name, other in never:
        if name not in layers:
            errors.append(f"--never {name}={other}: no layer {name} in {layers_txt}")
        elif other in reachable(name) - {name}:
            errors.append(f"{name} depends on {other} (--never {name}={other})")
    for d in sorted(os.listdir(src)):
        path = os.path.join(src, d)
        if not os.path.isdir(path):
            continue
        if d not in owner:
            errors.append(f"src/{d}/ belongs to no layer in {layers_txt}")
            continue
        allowed = {x for name in reachable(owner[d]) for x in layers[name][0]}
        for fname in sorted(os.listdir(path)):
            if not fname.endswith((".h", ".cpp")):
                continue
            files += 1
            with open(os.path.join(path, fname)) as f:
                for n, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s+"(([^/"]+)/[^"]*)"', line)
                    if m and m.group(2) in owner and m.group(2) not in allowed:
                        errors.append(f"src/{d}/{fname}:{n}: {owner[d]} includes {m.group(1)}, which belongs to "
                                      f"{owner[m.group(2)]}, a layer {owner[d]} does not depend on")
    for e in errors:
        print(e)
    print(f"layering: {files} files in {len(owner)} directories checked, {len(errors)} wrong include(s)")
    return 1 if errors or files == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
