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
And, from objdump instead of the tool: every instruction with a memory
operand that Valgrind executed in a compared procedure must be in
unalign.json, with objdump's number of operands (two for movs and cmps);
the tool may not leave out an access nor say how many operands it has.
Instructions of procedures named with --set-aside are not compared; a
procedure whose counts vary between --runs N runs and is not set aside
fails (tests/setaside.py).
Exit status 0 when everything matches.
"""
import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "dyninst"))
from vgharness import Run, Symbols, disassembly, rep_addresses, harness_args, setaside, REP_PREFIXES  # noqa: E402


# What the tool does not count (tools/unalign/README.md, "Not counted"):
# no access (lea, nops), prefetches and cache hints, gathers and scatters,
# accesses over 64 bytes (fxsave, xsave and their restores).
NOT_ACCESSES = re.compile(r"^(lea|nop|prefetch|clflush|clwb|clflushopt|cldemote|v?p?gather|v?p?scatter|"
                          r"fxsave|fxrstor|xsave|xrstor|bnd)")


def memory_instructions(prog):
    """pc -> (operands, text) of every instruction objdump shows with an
    explicit memory operand ("(" in AT&T syntax but %st(N), or a %fs: absolute
    address) that the tool counts; operands: 2 for movs and cmps."""
    insts = {}
    for addr, text in disassembly(prog):
        words = text.split()
        while words and words[0] in REP_PREFIXES + ("lock", "notrack", "bnd", "data16", "addr32", "cs", "ds", "ss", "es"):
            words = words[1:]  # prefixes (cs nopw: a padding nop)
        if not words or NOT_ACCESSES.match(words[0]):
            continue
        operands = " ".join(words[1:])
        if "%gs:" in operands:
            continue
        # x87 registers are written %st(N): no memory (fcomi %st(1),%st).
        n = re.sub(r"%st\(\d\)", "", operands).count("(")
        if n == 0 and "%fs:" not in operands:
            continue
        insts[addr] = (2 if n >= 2 else 1, text)
    return insts


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
        # The instructions objdump says access memory, executed by Valgrind
        # in the compared procedures: each in the tool's output, with
        # objdump's operand count.
        listed = 0
        for pc, (ops, text) in sorted(memory_instructions(run.prog).items()):
            if not ir[pc] or sym(pc) not in chosen or pc in reps:
                continue
            listed += 1
            i = insts.get(pc)
            if i is None:
                failures.append(f"{pc:#x} in {sym(pc)} ({text}): executed {ir[pc]} times (Valgrind), "
                                "not in unalign.json")
            elif (2 if i.get("size2") else 1) != ops:
                failures.append(f"{pc:#x} in {sym(pc)} ({text}): {ops} memory operand(s) by objdump, "
                                f"{2 if i.get('size2') else 1} by the tool")
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
              f" ({sel.summary()}); the {listed} executed instructions objdump shows accessing memory all"
              f" there; {total} accesses, {un} unaligned, {sp} split")
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
