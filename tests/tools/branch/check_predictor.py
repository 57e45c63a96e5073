#!/usr/bin/env python3
"""The branch tool's 2-bit predictor against an independent simulation.

    check_predictor.py --atomx ATOMX PATTERN_PROG

PATTERN_PROG is pattern.c: its function step() holds one conditional branch,
taken exactly when its argument is not 'T', and it runs once per character
of a pattern, REPS times over.  For several patterns (hand-picked ones whose
misprediction counts are worked out by hand below, and a seeded random one)
this instruments the program with `atomx -T branch`, runs it, and checks
step()'s entry in branch.json (taken, not taken, mispredicted) against
simulate() and, where given, the hand-computed figures; that btaken.out
carries the same taken/not-taken counts for every branch as branch.json;
and that branch.out's totals agree with branch.json.
Exit status 0 when everything matches.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile


def simulate(outcomes, state=1):
    """The classic 2-bit saturating counter, written independently of the
    tool: states 0..3, predict taken at >= 2, start weakly not taken (1)."""
    miss = 0
    for taken in outcomes:
        if (state >= 2) != taken:
            miss += 1
        state = min(state + 1, 3) if taken else max(state - 1, 0)
    return miss


# (pattern, reps, (taken, not taken, mispredicted) worked out by hand or None).
# 'N' makes step()'s branch taken, 'T' not taken.
random.seed(1994)
CASES = [
    ("T", 100, (0, 100, 0)),     # never taken: the initial state predicts it
    ("N", 100, (100, 0, 1)),     # always taken: one miss while 1 -> 2
    ("TN", 50, (50, 50, 50)),    # T: 1 -> 0 right; N: 0 predicts not taken, wrong, -> 1; ...
    ("NT", 50, (50, 50, 100)),   # N: 1 -> 2 wrong; T: 2 predicts taken, wrong, -> 1: every one wrong
    ("NNNT", 25, (75, 25, 26)),  # a loop of 4: first N wrong (1 -> 2), then only each T (3 -> 2)
    ("NNTT", 30, (60, 60, 90)),  # 1 -N-> 2 (miss) -N-> 3 -T-> 2 (miss) -T-> 1 (miss): 3 per period
    ("".join(random.choice("NT") for _ in range(300)), 3, None),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("prog")
    o = ap.parse_args()
    work = tempfile.mkdtemp(prefix="atomx-branchpred.")
    failures = []
    try:
        atom = os.path.join(work, "pattern.atom")
        r = subprocess.run([o.atomx, o.prog, "-T", "branch", "-o", atom, "-q"], capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL: atomx failed:\n{r.stderr}")
            return 1
        for pattern, reps, hand in CASES:
            label = f"{pattern[:12]}{'...' if len(pattern) > 12 else ''} x{reps}"
            for f in ("branch.json", "branch.out", "btaken.out"):
                if os.path.exists(os.path.join(work, f)):
                    os.remove(os.path.join(work, f))
            native = subprocess.run([o.prog, pattern, str(reps)], capture_output=True)
            p = subprocess.run([atom, pattern, str(reps)], capture_output=True, cwd=work)
            if (p.returncode, p.stdout, p.stderr) != (native.returncode, native.stdout, native.stderr):
                failures.append(f"{label}: program output changed")
                continue
            with open(os.path.join(work, "branch.json")) as f:
                j = json.load(f)
            steps = [b for b in j["branches"] if b["proc"] == "step"]
            if len(steps) != 1:
                failures.append(f"{label}: {len(steps)} branches in step(), expected 1")
                continue
            b = steps[0]
            outcomes = [c != "T" for _ in range(reps) for c in pattern]
            want = (sum(outcomes), len(outcomes) - sum(outcomes), simulate(outcomes))
            got = (b["taken"], b["not_taken"], b["mispredicted"])
            if got != want:
                failures.append(f"{label}: tool (taken, not taken, mispredicted) {got}, simulation {want}")
            if hand and hand != want:
                failures.append(f"{label}: simulation {want} disagrees with the hand-computed {hand}")
            # btaken.out (the paper's format) carries the same counts.
            with open(os.path.join(work, "btaken.out")) as f:
                lines = f.read().splitlines()
            bt = {int(x.split()[0], 16): (int(x.split()[1]), int(x.split()[2])) for x in lines[1:]}
            js = {int(x["pc"], 16): (x["taken"], x["not_taken"]) for x in j["branches"]}
            if lines[0] != "PC \t Taken \t Not Taken " or bt != js:
                failures.append(f"{label}: btaken.out differs from branch.json")
            # branch.out's totals.
            with open(os.path.join(work, "branch.out")) as f:
                text = f.read()
            m = re.search(r"executed\s+(\d+)", text)
            mm = re.search(r"mispredicted\s+(\d+)", text)
            executed = sum(x["taken"] + x["not_taken"] for x in j["branches"])
            if not m or int(m.group(1)) != executed or j["executed"] != executed or \
                    not mm or int(mm.group(1)) != j["mispredicted"] or \
                    j["mispredicted"] != sum(x["mispredicted"] for x in j["branches"]):
                failures.append(f"{label}: branch.out / branch.json totals disagree")
            print(f"  {label:20} taken {got[0]:4} not taken {got[1]:4} mispredicted {got[2]:4}"
                  f"   (simulation {want[2]}{', by hand ' + str(hand[2]) if hand else ''})")
        if failures:
            print("FAIL:")
            for f in failures:
                print("   ", f)
            return 1
        print(f"PASS: {len(CASES)} patterns, step()'s branch matches the 2-bit counter simulation")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
