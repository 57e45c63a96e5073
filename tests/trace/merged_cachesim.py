#!/usr/bin/env python3
"""merged_cachesim.py --atomx ATOMX --config FILE [--unmerged] PROGRAM ARGS...

`atomx cachesim TRACE --merged` (one hierarchy, every level shared, fed in
the trace's merged order; docs/trace.md, "Ordering threads and
processes") against tests/oracles/refsim.py's simulator, written from
docs/cachesim.md alone, fed here with `atomx regen TRACE --merge`'s
instructions in their order: each instruction's fetch at its address and
its length (objdump's, from the program file; PROGRAM is built without
PIE, so addresses are run-time addresses).  The trace is recorded without
data: instruction fetches only.  atomx skips a fetch wholly inside the
line the block's previous instruction ended in (a sure hit: it changes no
cache of any policy), so the misses per level, not the hits, must be
equal, for every configuration of FILE.  --unmerged runs cachesim without
--merged (each thread its own first levels, threads one after another):
the must-fail twin, which must differ.  Prints PASS, or FAIL: and what
differs (exit 1).
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracles"))
import refsim  # noqa: E402


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    return r.stdout


def lengths(program):
    """pc -> instruction length, from objdump."""
    out = {}
    for line in run(["objdump", "-d", "--insn-width=16", program]).splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\t((?:[0-9a-f]{2} )+)", line)
        if m:
            out[int(m.group(1), 16)] = len(m.group(2).split())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--unmerged", action="store_true")
    ap.add_argument("program")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    program = os.path.abspath(a.program)
    configs = refsim.parse_config(open(a.config).read())
    size = lengths(program)
    with tempfile.TemporaryDirectory(prefix="atomx-mcs.") as work:
        trace = os.path.join(work, "trace")
        args = [x.replace("@WORK@", work) for x in a.args]
        run([a.atomx, "trace", "-q", "-o", trace, "--", program] + args)
        doc_path = os.path.join(work, "cs.json")
        run([a.atomx, "cachesim", trace, "--config", a.config, "-q", "-o", os.devnull, "--json", doc_path]
            + ([] if a.unmerged else ["--merged"]))
        doc = json.load(open(doc_path))
        merged = run([a.atomx, "regen", "-q", trace, "--merge"])
    hs = [refsim.Hierarchy(n, lv) for n, lv in configs]
    want = [collections.Counter() for _ in hs]
    fetches = 0
    for line in merged.splitlines():
        f = line.split(" ")
        if len(f) != 2 or f[1] == "call" or line.startswith(" "):
            continue
        pc = int(f[1], 16)
        if pc not in size:
            fail(f"objdump has no instruction at {f[1]} (merged line '{line}')")
        fetches += 1
        for h, c in zip(hs, want):
            if h.ipath:
                refsim.Hierarchy.walk(h.ipath, pc, size[pc], False, c, "ir")
    for k, (name, _) in enumerate(configs):
        got = collections.Counter()
        ir = 0
        for p in doc["configurations"][k]["procedures"]:
            ir += p["Ir"]
            for level, kinds in p["misses"].items():
                got[(level, "ir")] += kinds.get("ir", 0)
        if ir != fetches:
            fail(f"[{name}] Ir: atomx {ir}, the merged trace {fetches}")
        for key in sorted(set(got) | set(want[k])):
            if got[key] != want[k][key]:
                fail(f"[{name}] {key[0]} instruction misses: atomx cachesim {got[key]}, reference (merged order) "
                     f"{want[k][key]}")
    print(f"PASS: {len(configs)} configurations, {fetches} instructions: the misses of every level equal the "
          "reference's in the merged order")


if __name__ == "__main__":
    main()
