#!/usr/bin/env python3
"""Report 9 of the ease tool against the branch tool: every conditional
branch's executions and taken count.

    ease_vs_branch.py --atomx ATOMX PROG [ARGS...]

Instruments PROG twice, with `atomx -T ease` and with `atomx -T branch`
(which counts each branch's outcomes on its own counters: taken and not
taken on both edges, or a call where a branch lacks one), runs both with
the same arguments, and checks that ease.json's branches (executed = its
block's count, taken = its taken edge's count) equal branch.json's (taken +
not_taken, taken) at every address, over every process; and that the
per-condition table ("branches taken") sums ease's branches.  A branch
whose taken edge leaves the procedure has no taken count in ease (null);
its executions are still compared.
Exit status 0 when everything matches.
"""
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "dyninst"))
from vgharness import Run  # noqa: E402


def collect(atomx, prog, tool, args):
    # One scratch prefix for both tools: the program sees paths (argv[0]) of one length.
    run = Run(atomx, prog, tool, args=args, discard=[f"{tool}.out", "btaken.out", "ease.html", "ease.cg", "ease.out"],
              scratch="atomx-ease-vs-branch.")
    try:
        run.run(with_valgrind=False)
        return list(run.json_outputs(0)), run.output_changed()
    finally:
        run.close()


def main():
    if len(sys.argv) < 4 or sys.argv[1] != "--atomx":
        print(__doc__)
        return 2
    atomx, prog, args = sys.argv[2], sys.argv[3], sys.argv[4:]
    ease, e_msg = collect(atomx, prog, "ease", args)
    branch, b_msg = collect(atomx, prog, "branch", args)
    problems = [m for m in (e_msg, b_msg) if m]
    mine, theirs = collections.Counter(), collections.Counter()
    uncounted = set()
    by_condition = collections.Counter()
    for j in ease:
        for b in j["branches"]:
            mine[(b["pc"], "executed")] += b["executed"]
            if b["taken"] is None:
                uncounted.add(b["pc"])
            else:
                mine[(b["pc"], "taken")] += b["taken"]
                by_condition[b["condition"]] += b["taken"]
    table = collections.Counter()
    for j in ease:
        table.update(j["tables"].get("branches taken", {}))
    if +table != +by_condition:
        problems.append(f"the per-condition table {dict(table)} is not the sum of the branches {dict(by_condition)}")
    for j in branch:
        for b in j["branches"]:
            theirs[(b["pc"], "executed")] += b["taken"] + b["not_taken"]
            if b["pc"] not in uncounted:
                theirs[(b["pc"], "taken")] += b["taken"]
    if not ease or not branch:
        problems.append("a tool wrote no JSON")
    for key in sorted(set(mine) | set(theirs)):
        if mine[key] != theirs[key]:
            problems.append(f"{key[0]} {key[1]}: ease {mine[key]}, branch {theirs[key]}")
    if problems:
        print(f"FAIL {prog}: {len(problems)} problem(s)")
        for p in problems[:40]:
            print("   ", p)
        return 1
    executed = sum(v for (pc, k), v in mine.items() if k == "executed")
    taken = sum(v for (pc, k), v in mine.items() if k == "taken")
    print(f"PASS {prog}: {len({pc for pc, _ in mine})} branches, executed {executed}, taken {taken}, equal to the branch"
          f" tool's ({len(uncounted)} without a taken edge: executions only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
