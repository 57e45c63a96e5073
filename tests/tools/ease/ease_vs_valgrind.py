#!/usr/bin/env python3
"""The ease tool against Valgrind: instructions (Ir), memory references
(Dr + Dw) and conditional branches (Bc) per function.

    ease_vs_valgrind.py --atomx ATOMX PROG [--workload SCRIPT] [--runs N]
                        [--set-aside PROC=REASON]... [-- ARGS...]

Instruments PROG with `atomx -T ease`, runs it and the original under
callgrind with Valgrind's cache and branch counting on (--cache-sim=yes
--branch-sim=yes: the events cachegrind counts, Ir Dr Dw Bc, by the same
VEX instrumentation, but per instruction: --dump-instr=yes), and checks for
every function of PROG that atomx instruments that ease.json's blocks
(executions x static costs) give exactly Valgrind's Ir, Dr + Dw and Bc, and
that the program's output is unchanged.

Where the two count apart by convention, per instruction, Valgrind's side is
put in ease's terms (docs: tools/ease/README.md):
  - a rep-prefixed string instruction counts once per execution in ease
    (Ir 1; one reference per memory operand: movs and cmps 2, the others
    1; Bc 0), once per iteration in Valgrind: its executions come from
    callgrind's jumps (vgharness.Run.rep_executions);
  - an atomic read-modify-write (lock prefix, xchg with memory) is one
    memory reference and no branch in ease; Valgrind emulates it with a
    compare-and-swap (two references, one Bc): its Ir stands for each.
Dr and Dw are compared as a sum: cachegrind counts a modify (add %eax,(%rdi))
as a Dr, callgrind as a Dw; ease.cg follows cachegrind.
Exit status 0 when everything matches; 1 with the differing functions listed.
"""
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "dyninst"))
from vgharness import Symbols, harness_args, setaside, start, verdict, disassembly, REP_PREFIXES  # noqa: E402
import callgrind_file  # noqa: E402  (vgharness puts tests/ on the path)

EVENTS = ("Ir", "refs", "Bc")


def conventions(prog):
    """{address: (kind, memory operands)} of rep-prefixed and atomic instructions."""
    out = {}
    for addr, text in disassembly(prog):
        words = text.split()
        if words[0] in REP_PREFIXES:
            out[addr] = ("rep", 2 if words[1].startswith(("movs", "cmps")) else 1)
        elif words[0] == "lock" or (words[0].startswith("xchg") and "(" in text):
            out[addr] = ("atomic", 1)
    return out


def tool_counts(jsons, sym):
    c = collections.defaultdict(collections.Counter)
    for j in jsons:
        for b in j["blocks"]:
            name = sym(int(b["pc"], 16))
            if b["count"] and name is not None:
                c[name]["Ir"] += b["count"] * b["insts"]
                c[name]["refs"] += b["count"] * (b["Dr"] + b["Dw"])
                c[name]["Bc"] += b["count"] * b["Bc"]
    return c


def valgrind_counts(run, sym, names, special):
    c = collections.defaultdict(collections.Counter)
    execs = {}
    for path in run.valgrind_files():

        for ev in callgrind_file.read(path):
            if type(ev) is not callgrind_file.Cost or not ev.ob or os.path.basename(ev.ob) != os.path.basename(run.prog):
                continue
            fn = sym(ev.addr)
            if fn not in names:
                continue
            if ev.addr in special:
                execs.setdefault(ev.addr, 0)
                if special[ev.addr][0] == "atomic":
                    execs[ev.addr] += ev.costs.get("Ir", 0)
                continue
            c[fn]["Ir"] += ev.costs.get("Ir", 0)
            c[fn]["refs"] += ev.costs.get("Dr", 0) + ev.costs.get("Dw", 0)
            c[fn]["Bc"] += ev.costs.get("Bc", 0)
    reps = run.rep_executions()
    for addr, (kind, operands) in special.items():
        n = reps.get(addr, 0) if kind == "rep" else execs.get(addr, 0)
        fn = sym(addr)
        if fn in names and n:
            c[fn]["Ir"] += n
            c[fn]["refs"] += n * operands
    return c


def main():
    o = harness_args(__doc__.split("\n\n")[0]).parse_args()
    run, failures = start(o, "ease", valgrind_opts=["--skip-plt=no", "--cache-sim=yes", "--branch-sim=yes"],
                          discard=["ease.out", "ease.html", "ease.cg"])
    try:
        if failures is None:
            return 1
        sym = Symbols(run.prog)
        outputs = [list(run.json_outputs(r)) for r in range(o.runs)]
        if not all(outputs):
            failures.append("the tool wrote no ease.json")
        per_run = [tool_counts(jsons, sym) for jsons in outputs]
        tool = per_run[0]
        names = {sym.canon[n] for _, _, n in sym.syms if n not in run.unmoved}
        vg = valgrind_counts(run, sym, names, conventions(run.prog))
        sel = setaside.Selection(names, [{n: tuple(t[n][e] for e in EVENTS) for n in t} for t in per_run],
                                 lambda n: tool[n]["Ir"], o.set_aside, o.min_share, sym.canon, "instructions executed")
        failures += sel.problems
        for n in sel.compared:
            for e in EVENTS:
                if tool[n][e] != vg[n][e]:
                    failures.append(f"{n}: {e} ease {tool[n][e]}, Valgrind {vg[n][e]} ({tool[n][e] - vg[n][e]:+d})")
        totals = {e: sum(tool[n][e] for n in sel.compared) for e in EVENTS}
        return verdict(o.prog, failures, sel, f"; Ir {totals['Ir']}, Dr+Dw {totals['refs']}, Bc {totals['Bc']} equal to Valgrind's")
    finally:
        run.close()


if __name__ == "__main__":
    sys.exit(main())
