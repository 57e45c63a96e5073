#!/usr/bin/env python3
"""The dyninst tool against Valgrind's Ir (instructions executed), per function.

    dyninst_vs_callgrind.py --atomx ATOMX PROG [--workload SCRIPT] [--runs N]
                            [--set-aside PROC=REASON]... [-- ARGS...]

Instruments PROG with `atomx -T dyninst`, runs it and the original under
callgrind (--dump-instr=yes) with the same workload (vgharness.py), and
checks for every function of PROG that atomx instruments that the tool's
instruction count (the sum over its blocks of executions x instructions, from
dyninst.json) equals callgrind's Ir exactly, and that the program's output is
unchanged.

rep-prefixed string instructions count once per execution, as the CPU's
instructions-retired counter counts them and dyninst does, while Valgrind
counts one Ir per arrival (each iteration jumps back to the instruction).
Their executions are taken from callgrind's jumps (Ir less the jumps from
the instruction to itself, vgharness.Run.rep_executions) and compared per
function too, on their own: a function's rep executions (the tool's counted
from the blocks that hold them, objdump finding them) must equal
callgrind's, and so must its instructions with each rep instruction counted
once per execution.

--runs N, --set-aside 'PROC=REASON', --min-share PCT: what is compared is
decided by tests/setaside.py (a procedure that varies between the runs
must be set aside with its reason).
Exit status 0 when everything matches; 1 with the differing functions listed.
"""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vgharness import Run, Symbols, rep_addresses, harness_args, setaside  # noqa: E402


def tool_counts(jsons, sym, reps):
    """function -> instructions without rep ones, function -> rep executions."""
    total, rep = collections.Counter(), collections.Counter()
    for j in jsons:
        for b in j["blocks"]:
            if not b["count"]:
                continue
            pc, end = int(b["pc"], 16), int(b["end"], 16)
            name = sym(pc)
            if name is None:
                continue
            r = sum(1 for a in range(pc, end) if a in reps)
            total[name] += b["count"] * b["insts"]
            rep[name] += b["count"] * r
    return total, rep


def main():
    o = harness_args(__doc__.split("\n\n")[0]).parse_args()
    # --skip-plt=no: by default callgrind charges the PLT stub's instructions
    # to the call instruction that went through it.
    run = Run(o.atomx, o.prog, "dyninst", workload=o.workload, args=o.args, runs=o.runs, timeout=o.timeout,
              valgrind_opts=["--skip-plt=no"], keep=o.keep)
    try:
        try:
            run.run()
        except RuntimeError as e:
            print(f"FAIL {o.prog}: {e}")
            return 1
        failures = []
        if (msg := run.output_changed()):
            failures.append(msg)
        if run.results["callgrind"] != run.results["native"]:
            print("note: the program behaves differently under Valgrind (its output differs)")
        sym = Symbols(run.prog)
        reps = rep_addresses(run.prog)
        per_run = []
        for r in range(o.runs):
            jsons = list(run.json_outputs(r))
            if not jsons:
                failures.append("the tool wrote no dyninst.json")
            failures += run.out_problems(r)
            per_run.append(tool_counts(jsons, sym, reps))
        tool, tool_rep = per_run[0]
        names = {sym.canon[n] for _, _, n in sym.syms if n not in run.unmoved}
        cg, cg_rep = collections.Counter(), collections.Counter()
        # By address: callgrind names some functions its own way ("(below main)").
        rep_exec = run.rep_executions()
        for _, addr, ir in run.callgrind("Ir"):
            fn = sym(addr)
            if fn in names and addr not in reps:
                cg[fn] += ir
        for addr, n in rep_exec.items():
            if sym(addr) in names:
                cg[sym(addr)] += n
                cg_rep[sym(addr)] += n
        sel = setaside.Selection(names, [t for t, _ in per_run], lambda n: tool[n], o.set_aside, o.min_share,
                                 sym.canon, "instructions executed")
        failures += sel.problems
        failures += sel.stale(lambda n: n in names and tool[n] and tool[n] == cg[n] and tool_rep[n] == cg_rep[n])
        compared = sel.compared
        for n in compared:
            if tool[n] != cg[n]:
                failures.append(f"{n}: dyninst {tool[n]}, Valgrind Ir {cg[n]} ({tool[n] - cg[n]:+d})")
            if tool_rep[n] != cg_rep[n]:
                failures.append(f"{n}: rep-prefixed instructions executed {tool_rep[n]} times to dyninst,"
                                f" {cg_rep[n]} to callgrind ({tool_rep[n] - cg_rep[n]:+d})")
        for line in sel.notes():
            print("note:", line)
        if run.unmoved:
            print(f"note: not compared (left in place by atomx, not instrumented): {', '.join(sorted(run.unmoved))}")
        if failures:
            print(f"FAIL {o.prog}: {len(failures)} problem(s) over {len(compared)} functions compared")
            for f in failures[:40]:
                print("   ", f)
            return 1
        print(f"PASS {o.prog}: {len(compared)} functions, {sel.summary()}, equal to Valgrind's Ir"
              f" (rep-prefixed instructions counted once per execution: {sum(tool_rep[n] for n in compared)}"
              f" executions in {sum(1 for n in compared if tool_rep[n])} functions, equal to callgrind's)")
        return 0
    finally:
        run.close()


if __name__ == "__main__":
    sys.exit(main())
