#!/usr/bin/env python3
"""The pipe tool against stalls computed by hand, per basic block.

    expected_stalls.py --atomx ATOMX KERNELS

KERNELS is kernels.S + kernels_main.c built with -Wl,--emit-relocs; its
driver calls every kernel 1000 times.  For each kernel, the blocks pipe.json
reports (address order) must have exactly the execution counts, instruction
counts and stall cycles below, worked out by hand from the model in
tools/pipe/README.md (the schedules are in kernels.S's comments), for the
default latencies and for `--load 2 --div 10`.  Also checks that the
program's output is unchanged, the per-procedure and total figures add up,
pipe.out says what pipe.json says (tests/tools/out_check.py), and that a bad option is refused with a message.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import out_check  # noqa: E402

REPS = 1000
# kernel -> [(executions, instructions, stalls per execution)] for each block, in address order.
DEFAULT = {
    "k_independent": [(1000, 5, 0)],
    "k_load_use": [(1000, 4, 3)],
    "k_mul_chain": [(1000, 5, 4)],
    "k_div": [(1000, 5, 24)],
    "k_loop": [(10, 2, 0), (1000, 5, 2), (10, 1, 0)],
    "k_chase": [(1000, 4, 6)],
    "k_fp": [(1000, 7, 37)],
    "k_flags": [(1000, 4, 3)],
    "k_stack": [(1000, 6, 0)],
    "k_branchy": [(1000, 2, 0), (750, 3, 3), (250, 3, 0)],
}
# --load 2 --div 10: a load's result is ready 2 cycles after it issues, a division's 10.
FAST = dict(DEFAULT, **{
    "k_load_use": [(1000, 4, 1)],
    "k_div": [(1000, 5, 9)],
    "k_loop": [(10, 2, 0), (1000, 5, 0), (10, 1, 0)],  # add (%rsi),%rax t0 rdy 2; mov %rax,%rdx t2: no stall
    "k_chase": [(1000, 4, 2)],
    "k_fp": [(1000, 7, 35)],  # mulsd t2 (stall 1), addsd t6, divsd t10, sqrtsd t25, movapd t40
    "k_flags": [(1000, 4, 1)],
    "k_branchy": [(1000, 2, 0), (750, 3, 1), (250, 3, 0)],
})


def symbols(prog):
    out = subprocess.run(["readelf", "-W", "-s", prog], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[7].startswith("k_"):
            syms[f[7]] = (int(f[1], 16), int(f[1], 16) + int(f[2], 0))
    return syms


def run(atomx, prog, work, tool_args, expected):
    atom = os.path.join(work, "k.atom")
    r = subprocess.run([atomx, prog, "-T", "pipe", "-o", atom, "-q", "--"] + tool_args, capture_output=True, text=True)
    if r.returncode:
        return [f"atomx failed: {r.stderr.strip()}"]
    native = subprocess.run([prog, str(REPS)], capture_output=True, text=True)
    mine = subprocess.run([atom, str(REPS)], capture_output=True, text=True, cwd=work)
    fails = []
    if (native.returncode, native.stdout) != (mine.returncode, mine.stdout):
        fails.append(f"output changed: {native.stdout!r} -> {mine.stdout!r}")
    with open(os.path.join(work, "pipe.json")) as f:
        j = json.load(f)
    fails += out_check.check("pipe", os.path.join(work, "pipe.json"))  # pipe.out says what pipe.json says
    syms = symbols(prog)
    procs = {p["name"]: p for p in j["procedures"]}
    for name, want in expected.items():
        lo, hi = syms[name]
        got = sorted((int(b["pc"], 16), b["count"], b["instructions"], b["stalls"]) for b in j["blocks"]
                     if lo <= int(b["pc"], 16) < hi)
        got = [g[1:] for g in got]
        if got != want:
            fails.append(f"{name} {' '.join(tool_args)}: blocks (count, insts, stalls) {got}, expected {want}")
        p = procs.get(name, {})
        if (p.get("instructions"), p.get("stalls")) != (sum(c * n for c, n, _ in want), sum(c * s for c, _, s in want)):
            fails.append(f"{name}: procedure totals {p}")
    if j["instructions"] != sum(b["count"] * b["instructions"] for b in j["blocks"]) or \
            j["stalls"] != sum(b["count"] * b["stalls"] for b in j["blocks"]) or \
            j["cycles"] != j["instructions"] + j["stalls"]:
        fails.append("totals do not add up")
    return fails


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("prog")
    o = ap.parse_args()
    prog = os.path.abspath(o.prog)
    fails = []
    with tempfile.TemporaryDirectory(prefix="atomx-pipe.") as work:
        fails += run(o.atomx, prog, work, [], DEFAULT)
        fails += run(o.atomx, prog, work, ["--load", "2", "--div", "10"], FAST)
        r = subprocess.run([o.atomx, prog, "-T", "pipe", "-o", os.path.join(work, "bad"), "-q", "--", "--load", "x"],
                           capture_output=True, text=True)
        if r.returncode == 0 or "--load needs a number" not in r.stderr:
            fails.append(f"--load x accepted or unclear message: {r.stderr.strip()!r}")
    if fails:
        print(f"FAIL {o.prog}:")
        for f in fails:
            print("   ", f)
        return 1
    n = sum(len(v) for v in DEFAULT.values())
    print(f"PASS {o.prog}: {n} blocks of {len(DEFAULT)} kernels, two latency settings, equal to the hand-computed stalls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
