#!/usr/bin/env python3
"""The pipe tool's instruction counts against Valgrind's Ir, per procedure.

    pipe_vs_cachegrind.py --atomx ATOMX PROG [--workload SCRIPT] [--runs N] [--set-aside PROC=REASON]... [-- ARGS...]

pipe counts instructions as (block executions x instructions in the block);
callgrind (--dump-instr=yes) counts each instruction executed.  For every
procedure of PROG that Valgrind can name (a sized function symbol) and atomx
moved, the two must be equal, except at rep-prefixed string instructions,
which Valgrind counts once per iteration and pipe once per execution: those
are set aside on both sides (their callgrind Ir, and their block's count).
Also checks the program's output is unchanged (the runs, native,
instrumented and under callgrind: tests/tools/dyninst/vgharness.py).
--runs N, --set-aside 'PROC=REASON' and --min-share PCT: what is compared
is decided by tests/setaside.py.  Exit status 0 when equal.
"""
import bisect
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "dyninst"))
from vgharness import Run, Symbols, rep_addresses, harness_args, setaside  # noqa: E402


def main():
    o = harness_args(__doc__.split("\n\n")[0]).parse_args()
    # --skip-plt=no: callgrind's default charges the PLT stub's
    # instructions to the call instruction.
    run = Run(o.atomx, o.prog, "pipe", workload=o.workload, args=o.args, runs=o.runs, timeout=o.timeout,
              valgrind_opts=["--skip-plt=no"], keep=o.keep)
    try:
        run.run()
    except RuntimeError as e:
        print(f"FAIL {o.prog}: {e}")
        run.close()
        return 1
    failures = []
    native, atom = run.results["native"], run.results["atom"]
    if atom != native:
        failures.append(f"program output changed (status {native[0]} -> {atom[0]})")
    if run.results["callgrind"] != native:
        print("note: the program behaves differently under Valgrind (its output differs)")
    sym = Symbols(run.prog)
    reps = sorted(rep_addresses(run.prog))
    runs, rep_execs = [], 0
    for r in range(o.runs):
        tool = collections.Counter()
        jsons = list(run.json_outputs(r))
        if not jsons:
            failures.append("the tool wrote no pipe.json")
        failures += run.out_problems(r)
        for j in jsons:
            for b in j["blocks"]:
                pc, end = int(b["pc"], 16), int(b["end"], 16)
                nrep = bisect.bisect_left(reps, end) - bisect.bisect_left(reps, pc)
                tool[sym(pc)] += b["count"] * (b["instructions"] - nrep)
                if r == 0:
                    rep_execs += b["count"] * nrep
        runs.append(tool)
    tool = runs[0]
    names = {sym.canon[n] for _, _, n in sym.syms if n not in run.unmoved}
    cg, cg_rep = collections.Counter(), 0
    repset = set(reps)
    # By address, not callgrind's names: it calls _start "(below main)",
    # and leaves some local functions unnamed.
    for _, addr, ir in run.callgrind("Ir"):
        func = sym(addr)
        if func in names:
            if addr in repset:
                cg_rep += ir
            else:
                cg[func] += ir
    sel = setaside.Selection(names, runs, lambda n: tool[n], o.set_aside, o.min_share, sym.canon,
                             "instructions executed")
    failures += sel.problems
    compared = sel.compared
    for n in compared:
        if tool[n] != cg[n]:
            failures.append(f"{n}: pipe {tool[n]} instructions, Valgrind Ir {cg[n]}")
    for line in sel.notes():
        print("note:", line)
    if run.unmoved:
        print(f"note: not compared (left in place by atomx): {', '.join(sorted(run.unmoved))}")
    if failures:
        print(f"FAIL {o.prog}: {len(failures)} problem(s) over {len(compared)} procedures compared; kept {run.work}")
        for f in failures[:40]:
            print("   ", f)
        return 1
    run.close()
    print(f"PASS {o.prog}: {len(compared)} procedures, {sel.summary()}, all equal to Valgrind's Ir"
          f" (apart: {rep_execs} executions of rep instructions, {cg_rep} Ir)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
