#!/usr/bin/env python3
"""Signals in a loop that records nothing per iteration, placed exactly.

    loops_signals.py --atomx ATOMX [--data] PROG

PROG is tests/trace/loops.c's program, run as `PROG signals log`: a 20-us
timer's handler interrupts spin_asm's loop, whose iteration count is %rcx
from the loop's first instruction on, and prints at which %rcx it found
the loop each time (`spin-signal RCX` on stderr, in order; the handler
logs only while %r11 says the thread is between the loop's first
instruction and the one after it).  In a data trace the loop's branch is
an evaluated predicate (docs/trace.md), so every iteration is at one
stream position: only the registers recorded with each mark
(ATOMX_TRACE_MARK_REGISTER) tell them apart.

Checks, on one traced run:
  - stdout is the native run's;
  - `atomx regen --blocks` regenerates the thread with no problem;
  - each signal the regenerated path shows in that stretch (the loop's
    instructions and the one after it) is at the iteration the handler
    saw: the number of times the loop's first instruction began a block
    line since spin_asm was entered (a signal before an iteration's first
    instruction: that many; after it: the cut block's line counts it);
  - at least 20 such signals, and with --data, the summary's `evaluated`
    is at least the loop's iterations (1,000,000).
A failure names the first signal that differs.  Exit 0 when all hold.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def loop_range(prog):
    """(entry, loop start, the instruction after the loop) of spin_asm."""
    nm = subprocess.run(["nm", "-S", prog], capture_output=True, text=True, check=True).stdout
    start, size = next((int(f[0], 16), int(f[1], 16)) for f in (l.split() for l in nm.splitlines())
                       if len(f) == 4 and f[3] == "spin_asm")
    dis = subprocess.run(["objdump", "-d", f"--start-address={start}", f"--stop-address={start + size}", prog],
                         capture_output=True, text=True, check=True).stdout
    insns = []
    for line in dis.splitlines():
        head, _, rest = line.partition(":\t")
        if rest and head.strip():
            insns.append((int(head.strip(), 16), rest))
    first = next(i for i, (_, t) in enumerate(insns) if "0x5a5a" in t) + 1
    after = next(a for a, t in insns if "sub" in t and "%r11" in t)
    return start, insns[first][0], after


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--data", action="store_true")
    ap.add_argument("prog")
    o = ap.parse_args()
    entry, loop, after = loop_range(o.prog)
    w = tempfile.mkdtemp(prefix="atomx-loops.")
    try:
        native = subprocess.run([o.prog, "signals", "log"], capture_output=True, text=True, timeout=300)
        trace = os.path.join(w, "trace")
        traced = subprocess.run([o.atomx, "trace", "-q", "--cache-dir", os.path.join(w, "cache"), "-o", trace]
                                + (["--data"] if o.data else []) + ["--", o.prog, "signals", "log"],
                                capture_output=True, text=True, timeout=300)
        failures = []
        if (traced.returncode, traced.stdout) != (native.returncode, native.stdout):  # (stderr: the signals vary)
            failures.append(f"the traced program's status or stdout differ from the native run's"
                            f" ({traced.returncode}: {traced.stderr[-300:]!r})")
        seen = [int(l.split()[1]) for l in traced.stderr.splitlines() if l.startswith("spin-signal ")]
        regen = subprocess.run([o.atomx, "regen", trace, "--blocks"], capture_output=True, text=True, timeout=300)
        if regen.returncode != 0:
            failures.append(f"regen exited {regen.returncode}: {regen.stderr.strip()[-400:]}")
        placed, begun = [], 0
        for line in regen.stdout.splitlines():
            f = line.split()
            if len(f) >= 4 and f[1] == "signal":
                pc = int(f[3], 16)
                if loop <= pc <= after:
                    placed.append(begun)
            elif len(f) >= 3 and f[1] not in ("call", "sigreturn", "signal"):
                start = int(f[1], 16)
                if start == entry:
                    begun = 0
                elif start == loop:
                    begun += 1
        for k, (a, b) in enumerate(zip(placed, seen)):
            if a != b:
                failures.append(f"signal {k + 1} in spin_asm's loop: regenerated at iteration {a},"
                                f" the program's handler found %rcx = {b}")
                break
        if len(placed) != len(seen):
            failures.append(f"{len(placed)} signals regenerated in spin_asm's loop, the handler saw {len(seen)}")
        if len(seen) < 20:
            failures.append(f"only {len(seen)} signals interrupted spin_asm's loop")
        if o.data:
            summary = subprocess.run([o.atomx, "regen", trace, "--summary"], capture_output=True, text=True).stdout.split()
            evaluated = int(summary[summary.index("evaluated") + 1]) if "evaluated" in summary else 0
            if evaluated < 1000000:
                failures.append(f"only {evaluated} evaluated branches: spin_asm's loop is not evaluated")
        if failures:
            print(f"FAIL {o.prog}: {len(failures)} problem(s)")
            for f in failures:
                print("   ", f)
            return 1
        print(f"PASS {o.prog}: {len(seen)} signals in spin_asm's loop, each regenerated at the iteration"
              f" the handler saw")
        return 0
    finally:
        shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
