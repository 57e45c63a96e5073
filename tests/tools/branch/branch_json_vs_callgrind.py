#!/usr/bin/env python3
"""branch.json against Valgrind's Bc (conditional branches), per function.

    branch_json_vs_callgrind.py --atomx ATOMX PROG [--workload SCRIPT] [--runs N]
                                [--set-aside PROC=REASON]... [-- ARGS...]

The approach of tests/branch/branch_vs_cachegrind.py (which checks
btaken.out), applied to the extended tool's branch.json: instruments PROG
with `atomx -T branch`, runs it and the original under callgrind
--branch-sim=yes with the same workload (tests/tools/dyninst/vgharness.py),
and checks for every function atomx instruments that taken + not_taken summed
over its branches in branch.json equals Valgrind's Bc exactly (without the
Bc Valgrind counts at rep-prefixed and atomic instructions, which are no
branches: see that script), that every branch has mispredicted <= taken +
not_taken, and that the program's output is unchanged.  Prints the tool's
predictor accuracy beside Valgrind's own branch simulator's, for reference
only (different predictors: Valgrind's is a 16K-entry table of 2-bit
counters indexed by address, shared by all branches).
Exit status 0 when everything matches.
"""
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "dyninst"))
from vgharness import Run, Symbols, valgrind_only_branches, harness_args, setaside  # noqa: E402


def main():
    o = harness_args(__doc__.split("\n\n")[0]).parse_args()
    run = Run(o.atomx, o.prog, "branch", workload=o.workload, args=o.args, runs=o.runs, timeout=o.timeout,
              valgrind_opts=["--branch-sim=yes"], keep=o.keep)
    try:
        try:
            run.run()
        except RuntimeError as e:
            print(f"FAIL {o.prog}: {e}")
            return 1
        failures = []
        if (msg := run.output_changed()):
            failures.append(msg)
        sym = Symbols(run.prog)
        per_run = []
        executed = miss = 0
        for r in range(o.runs):
            tool = collections.Counter()
            jsons = list(run.json_outputs(r))
            if not jsons:
                failures.append("the tool wrote no branch.json")
            for j in jsons:
                for b in j["branches"]:
                    n = b["taken"] + b["not_taken"]
                    if b["mispredicted"] > n:
                        failures.append(f"branch {b['pc']}: {b['mispredicted']} mispredictions of {n}")
                    if r == 0:
                        executed += n
                        miss += b["mispredicted"]
                    if (name := sym(int(b["pc"], 16))):
                        tool[name] += n
            per_run.append(tool)
        tool = per_run[0]
        valgrind_only = valgrind_only_branches(run.prog)
        names = {sym.canon[n] for _, _, n in sym.syms if n not in run.unmoved}
        cg, cg_set_aside = collections.Counter(), 0
        bcm = 0
        for fn, addr, bc in run.callgrind("Bc"):
            fn = sym.canon.get(fn)
            if fn in names:
                if addr in valgrind_only:
                    cg_set_aside += bc
                else:
                    cg[fn] += bc
        for fn, addr, m in run.callgrind("Bcm"):
            if sym.canon.get(fn) in names and addr not in valgrind_only:
                bcm += m
        sel = setaside.Selection(names, per_run, lambda n: tool[n], o.set_aside, o.min_share, sym.canon,
                                 "conditional branches executed")
        failures += sel.problems
        compared = sel.compared
        for n in compared:
            if tool[n] != cg[n]:
                failures.append(f"{n}: branch.json {tool[n]}, Valgrind Bc {cg[n]}")
        for line in sel.notes():
            print("note:", line)
        if failures:
            print(f"FAIL {o.prog}: {len(failures)} problem(s) over {len(compared)} functions compared")
            for f in failures[:40]:
                print("   ", f)
            return 1
        acc = 100.0 * (1 - miss / executed) if executed else 0.0
        vacc = 100.0 * (1 - bcm / sum(cg.values())) if sum(cg.values()) else 0.0
        print(f"PASS {o.prog}: {len(compared)} functions, {sel.summary()}, equal to Valgrind's Bc"
              f" (apart: {cg_set_aside} Bc of rep and atomic instructions);"
              f" 2-bit predictor accuracy {acc:.2f}% (Valgrind's simulator: {vacc:.2f}%)")
        return 0
    finally:
        run.close()


if __name__ == "__main__":
    sys.exit(main())
