#!/usr/bin/env python3
"""merged_cachesim.py --atomx ATOMX --config FILE [--data]
                    [--unmerged | --per-cpu [--cachesim-env VAR=VALUE] [--select-env VAR=VALUE]]
                    PROGRAM ARGS...

`atomx cachesim TRACE --merged` (one hierarchy fed in the trace's merged
order, its private levels one set per CPU the schedule log names, one set
without the log; docs/trace.md, "Ordering threads and processes") against
tests/oracles/refsim.py's simulator, written from docs/cachesim.md alone,
fed here with `atomx regen TRACE --merge --cpus`'s instructions in their
order, each routed to the private levels of the CPU its `cpu N` line
names (every level but the last, when the last is an outer level: the
configuration format's default sharing, docs/cachesim.md; a file with
`shared=` is refused here; CPU -1, unknown, is one more CPU), the last
level one for all: each instruction's fetch at its address and
its length (objdump's, from the program file; PROGRAM is built without
PIE, so addresses are run-time addresses).  The trace is recorded without
data: instruction fetches only.  atomx skips a fetch wholly inside the
line the block's previous instruction ended in (a sure hit: it changes no
cache of any policy), so the misses per level, not the hits, must be
equal, for every configuration of FILE.  --unmerged runs cachesim without
--merged (each thread its own first levels, threads one after another):
the must-fail twin, which must differ.

Per-CPU totals (the JSON's "cpus", the CPUs the log names) must equal the
reference's too.  --per-cpu: the program runs on CPUs 0 and 1 (taskset -c
0,1), the trace must have the privileged schedule log (docs/trace.md, "The
privileged schedule log"; else exit 77, skipped, as trace.schedule.* are)
and both CPUs must appear in the merged trace; `regen --merge --cpu N`
must then write, for N = 0 and 1, exactly the lines of the `--cpus`
trace's slices on CPU N, in order.  --data: the trace is recorded with
data, and the reference simulates each of atomx's blocks (`atomx dump`)
as atomx does: its fetches, then its references (` L` lines, libc's, are
left out on both sides: cachesim --libc none).  --cachesim-env VAR=VALUE sets VAR for atomx
cachesim alone (the twin: ATOMX_TEST_MERGE_ONE_CPU=1 puts every slice on
CPU 0), --select-env VAR=VALUE for the `--cpu N` runs alone (the same
hook: CPU 1's selection must come out different).  Prints PASS, or FAIL: and what differs (exit 1).
"""
import argparse
import collections
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracles"))
import refsim  # noqa: E402
from merge_oracle import fail, run  # noqa: E402  (the merge's own oracle, beside this file)


def lengths(program):
    """pc -> instruction length, and the locked instructions' pcs (a lock
    prefix, or xchg with memory), from objdump."""
    out, locked = {}, set()
    for line in run(["objdump", "-d", "--insn-width=16", program]).splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\t((?:[0-9a-f]{2} )+)\s*(.*)", line)
        if m:
            out[int(m.group(1), 16)] = len(m.group(2).split())
            if re.match(r"lock |xchg\s.*\(", m.group(3)):
                locked.add(int(m.group(1), 16))
    return out, locked


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--unmerged", action="store_true")
    ap.add_argument("--per-cpu", action="store_true")
    ap.add_argument("--data", action="store_true")
    ap.add_argument("--cachesim-env", action="append", default=[])
    ap.add_argument("--select-env", action="append", default=[])
    ap.add_argument("program")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    program = os.path.abspath(a.program)
    text = open(a.config).read()
    if "shared=" in text:
        fail(f"{a.config}: the reference shares the last level only (the default); this file says shared=")
    configs = refsim.parse_config(text)
    size, locked = lengths(program)
    leaders = refsim.leaders(a.atomx, program)  # atomx's blocks, whose fetches come before their references
    taskset = []
    if a.per_cpu:
        if not {0, 1} <= os.sched_getaffinity(0):
            print("SKIP: CPUs 0 and 1 are not both available here")
            sys.exit(77)
        taskset = ["taskset", "-c", "0,1"]
    env = dict(os.environ, **dict(v.split("=", 1) for v in a.cachesim_env))
    select_env = dict(os.environ, **dict(v.split("=", 1) for v in a.select_env))
    with tempfile.TemporaryDirectory(prefix="atomx-mcs.") as work:
        trace = os.path.join(work, "trace")
        args = [x.replace("@WORK@", work) for x in a.args]
        run(taskset + [a.atomx, "trace", "-q"] + (["--data"] if a.data else []) + ["-o", trace, "--", program] + args)
        if a.per_cpu and "schedule sync-points switches" not in open(os.path.join(trace, "manifest")).read().split("\n"):
            print("SKIP: no privileged schedule log in this run (root, BTF and atomx built with libbpf)")
            sys.exit(77)
        doc_path = os.path.join(work, "cs.json")
        run([a.atomx, "cachesim", trace, "--config", a.config, "--libc", "none", "-q", "-o", os.devnull, "--json", doc_path]
            + ([] if a.unmerged else ["--merged"]), env)
        doc = json.load(open(doc_path))
        merged = run([a.atomx, "regen", "-q", trace, "--merge", "--cpus"])
        selected = {n: run([a.atomx, "regen", "-q", trace, "--merge", "--cpu", str(n)], select_env)
                    for n in ((0, 1) if a.per_cpu else ())}
    # Per CPU of the `cpu N` lines: each configuration's hierarchy, the
    # last level (when outer) one Cache for all.
    per_cpu = {}
    shared = {}

    def hierarchies(cpu):
        if cpu not in per_cpu:
            per_cpu[cpu] = [refsim.Hierarchy(n, lv) for n, lv in configs]
            for k, h in enumerate(per_cpu[cpu]):
                last = h.levels[-1].name
                if last[1] == "1":
                    continue  # no outer level: all private
                one = shared.setdefault(k, refsim.Cache(h.levels[-1]))
                h.ipath = [one if c.level.name == last else c for c in h.ipath]
                h.dpath = [one if c.level.name == last else c for c in h.dpath]
        return per_cpu[cpu]
    want = [collections.Counter() for _ in configs]
    want_cpu = collections.defaultdict(lambda: [collections.Counter() for _ in configs])
    counts = {"fetches": 0, "Dr": 0, "Dw": 0}
    block = {"tid": None, "fetches": [], "refs": []}  # the block run being read

    def simulate():
        """The block run read: its fetches, then its references (atomx's
        order, docs/cachesim.md), through the current CPU's hierarchies."""
        for k, h in enumerate(hs or []):
            c = collections.Counter()
            for pc in block["fetches"]:
                c[("Ir", "")] += 1
                if h.ipath:
                    refsim.Hierarchy.walk(h.ipath, pc, size[pc], False, c, "ir")
            for addr, n, write in block["refs"]:
                c[("Dw" if write else "Dr", "")] += 1
                if h.dpath:
                    refsim.Hierarchy.walk(h.dpath, addr, n, write, c, "dw" if write else "dr")
            want[k].update(c)
            want_cpu[cpu][k].update(c)
        block["fetches"], block["refs"] = [], []

    cpu, hs = None, None
    for line in merged.splitlines():
        f = line.split(" ")
        if f[0] == "cpu":  # a slice: its block runs are atomx's own
            simulate()
            cpu = int(f[1])
            hs = hierarchies(cpu)
            continue
        if line.startswith(" "):  # a data reference (` L` lines: libc's, simulated by neither side: --libc none)
            if f[1] in ("R", "W", "M"):
                block["refs"].append((int(f[2], 16), int(f[3]), f[1] == "W"))
                counts["Dw" if f[1] == "W" else "Dr"] += 1
            continue
        if len(f) != 2 or f[1] == "call":
            continue
        if hs is None:
            fail(f"regen --merge --cpus: an instruction before any cpu line ('{line}')")
        pc = int(f[1], 16)
        if pc not in size:
            fail(f"objdump has no instruction at {f[1]} (merged line '{line}')")
        if pc in locked:
            fail(f"{f[1]} is a locked instruction: its M line does not say so (atomx counts it as two reads)")
        if pc in leaders or f[0] != block["tid"]:
            simulate()
        block["tid"] = f[0]
        block["fetches"].append(pc)
        counts["fetches"] += 1
    simulate()
    fetches = counts["fetches"]
    if a.per_cpu and not {0, 1} <= set(per_cpu):
        fail(f"the merged trace ran on CPUs {sorted(per_cpu)} only, not on both 0 and 1")
    for n, text in selected.items():
        on, mine = None, []
        for line in merged.splitlines():
            if line.startswith("cpu "):
                on = int(line.split()[1])
            elif on == n:
                mine.append(line)
        got = text.splitlines()
        if got != mine:
            k = next((i for i, (x, y) in enumerate(zip(got, mine)) if x != y), min(len(got), len(mine)))
            fail(f"regen --merge --cpu {n}: {len(got)} lines, the --cpus trace's CPU {n} slices {len(mine)}; line {k + 1}: "
                 f"'{got[k] if k < len(got) else '(none)'}' against '{mine[k] if k < len(mine) else '(none)'}'")
    kinds = {"ir": "instruction misses", "dr": "read misses", "dw": "write misses", "": ""}
    for k, (name, _) in enumerate(configs):
        got = collections.Counter()
        for p in doc["configurations"][k]["procedures"]:
            for e in ("Ir", "Dr", "Dw"):
                got[(e, "")] += p[e]
            for level, by in p["misses"].items():
                for kind, n in by.items():
                    got[(level, kind)] += n
        if got[("Ir", "")] != fetches:
            fail(f"[{name}] Ir: atomx {got[('Ir', '')]}, the merged trace {fetches}")
        for e in ("Dr", "Dw"):
            if got[(e, "")] != counts[e]:
                fail(f"[{name}] {e}: atomx {got[(e, '')]}, the merged trace {counts[e]}")
        for key in sorted(set(got) | set(want[k])):
            if got[key] != want[k][key]:
                fail(f"[{name}] {(key[0] + ' ' + kinds[key[1]]).strip()}: atomx cachesim {got[key]}, reference (merged order"
                     f"{', per CPU' if a.per_cpu else ''}) {want[k][key]}")
        cpus = {c["cpu"]: c for c in doc["configurations"][k].get("cpus", [])}
        for c in sorted(set(cpus) | {x for x in want_cpu if x >= 0}):
            row = cpus.get(c, {"Ir": 0, "Dr": 0, "Dw": 0, "misses": {}})
            mine = collections.Counter({(lv, kind): n for lv, by in row["misses"].items() for kind, n in by.items()})
            for e in ("Ir", "Dr", "Dw"):
                mine[(e, "")] = row[e]
            for key in sorted(set(mine) | set(want_cpu[c][k])):
                if mine[key] != want_cpu[c][k][key]:
                    fail(f"[{name}] CPU {c}: {(key[0] + ' ' + kinds[key[1]]).strip()}: atomx cachesim {mine[key]}, reference "
                         f"{want_cpu[c][k][key]}")
    on = f" on CPUs {sorted(per_cpu)}, each its own private levels"
    print(f"PASS: {len(configs)} configurations, {fetches} instructions, {counts['Dr']} reads, {counts['Dw']} writes{on}: "
          "the misses of every level equal the "
          "reference's in the merged order")


if __name__ == "__main__":
    main()
