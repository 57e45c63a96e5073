#!/usr/bin/env python3
"""unalign's access counts against Valgrind's instruction counts, per instruction.

    unalign_vs_callgrind.py --atomx ATOMX PROG [--workload SCRIPT] [--runs N]
                            [--set-aside PROC=REASON]... [--min-share PCT] [-- ARGS...]

For a corpus program there is no hand-computed layout, so this checks what
an independent count can check: instruments PROG with `atomx -T unalign`,
runs it and the original under callgrind (--dump-instr=yes --skip-plt=no)
with the same workload (tests/tools/dyninst/vgharness.py), and requires for
every instruction in unalign.json that is not rep-prefixed: accesses =
Valgrind's Ir at that address (its executions) x the number of operands the
tool counts there (1, or 2 with size2), i.e. no access missed or counted
twice; and that the program's output is unchanged.  The unaligned and split
totals are printed, with the instructions responsible (at most 10).
Instructions of procedures named with --set-aside are not compared; a
procedure whose counts vary between --runs N runs and is not set aside
fails (tests/setaside.py).
Exit status 0 when everything matches.
"""
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "dyninst"))
from vgharness import Run, Symbols, rep_addresses, harness_args, setaside  # noqa: E402


def main():
    o = harness_args(__doc__.split("\n\n")[0]).parse_args()
    run = Run(o.atomx, o.prog, "unalign", workload=o.workload, args=o.args, runs=o.runs, timeout=o.timeout,
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
        sym = Symbols(run.prog)
        reps = rep_addresses(run.prog)
        per_run = []
        for r in range(o.runs):
            insts = {}
            jsons = list(run.json_outputs(r))
            if not jsons:
                failures.append("the tool wrote no unalign.json")
            for j in jsons:
                for i in j["instructions"]:
                    pc = int(i["pc"], 16)
                    a = insts.setdefault(pc, dict(i, accesses=0, unaligned=0, split=0))
                    for k in ("accesses", "unaligned", "split"):
                        a[k] += i[k]
            per_run.append(insts)
        insts = per_run[0]
        # Per procedure (the tool's name for it, or the symbol's): what
        # setaside.Selection decides on.  Accesses per instruction must
        # agree between runs, so the per-run value is the sorted list.
        def proc(pc, i):
            return sym(pc) or i["proc"]
        per_proc = []
        for r in per_run:
            m = collections.defaultdict(list)
            for pc, i in r.items():
                m[proc(pc, i)].append((pc, i["accesses"]))
            per_proc.append({k: sorted(v) for k, v in m.items()})
        weight = collections.Counter()
        for pc, i in insts.items():
            weight[proc(pc, i)] += i["accesses"]
        sel = setaside.Selection(set(per_proc[0]), per_proc, lambda n: weight[n], o.set_aside, o.min_share,
                                 sym.canon, "accesses")
        failures += sel.problems
        chosen = set(sel.compared)
        ir = collections.Counter()
        for _, addr, n in run.callgrind("Ir"):
            ir[addr] += n
        compared = 0
        for pc, i in sorted(insts.items()):
            if pc in reps or proc(pc, i) not in chosen:
                continue
            ops = 2 if i.get("size2") else 1
            compared += 1
            if i["accesses"] != ir[pc] * ops:
                failures.append(f"{i['pc']} in {i['proc']} ({i['inst']}): {i['accesses']} accesses,"
                                f" Valgrind executed it {ir[pc]} times x {ops} operand(s)")
        for line in sel.notes():
            print("note:", line)
        if failures:
            print(f"FAIL {o.prog}: {len(failures)} problem(s) over {compared} instructions compared")
            for f in failures[:40]:
                print("   ", f)
            return 1
        total = sum(i["accesses"] for i in insts.values())
        un = sum(i["unaligned"] for i in insts.values())
        sp = sum(i["split"] for i in insts.values())
        print(f"PASS {o.prog}: {compared} instructions, accesses = Valgrind's executions x operands"
              f" ({sel.summary()}); {total} accesses, {un} unaligned, {sp} split")
        worst = sorted((i for i in insts.values() if i["unaligned"] or i["split"]),
                       key=lambda i: -(i["unaligned"] + i["split"]))
        for i in worst[:10]:
            print(f"    {i['pc']} {i['proc']}: {i['inst']}: {i['unaligned']} unaligned, {i['split']} split"
                  f" of {i['accesses']}")
        return 0
    finally:
        run.close()


if __name__ == "__main__":
    sys.exit(main())
