#!/usr/bin/env python3
"""A data trace's references of bit tests with a register bit offset
against the addresses the program computes itself.

    bit_offsets.py --atomx ATOMX PROG

Runs `PROG print` (tests/trace/bit_offsets.c) under `atomx trace --data`;
it prints, for each bit test it runs, the address and size of the word that
holds the bit (address + size * floor(offset / (8 * size)), computed in C),
and requires the regenerated references of PROG's bt/bts/btr/btc
instructions with a memory operand (found with objdump), in order, to be
exactly those.  A failure names the instruction, its offset in the run and
both sides' address and size.  Exit status 0 when all match, 1 otherwise.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def bit_test_pcs(prog):
    """The addresses of PROG's bit tests whose first operand is memory."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", prog], capture_output=True, text=True, check=True).stdout
    pcs = {}
    for line in out.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(?:lock\s+)?(bt[src]?[wlq]?)\s+%\w+,(.*\(.*)$", line)
        if m:
            pcs[int(m.group(1), 16)] = m.group(2)
    return pcs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("prog")
    a = ap.parse_args()
    prog = os.path.realpath(a.prog)
    pcs = bit_test_pcs(prog)
    if not pcs:
        sys.exit(f"FAIL no bit test with a memory operand in {prog}")
    with tempfile.TemporaryDirectory() as w:
        r = subprocess.run([a.atomx, "trace", "-q", "--data", "-o", "trace", "--", prog, "print"], cwd=w,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"FAIL atomx trace: exit status {r.returncode}\n{r.stderr[-2000:]}")
        want = [(int(x, 16), int(n)) for x, n in (l.split() for l in r.stdout.splitlines())]
        g = subprocess.run([a.atomx, "regen", os.path.join(w, "trace")], capture_output=True, text=True)
        if g.returncode != 0:
            sys.exit(f"FAIL atomx regen: exit status {g.returncode}\n{g.stderr[-2000:]}")
    got, pc = [], None
    for line in g.stdout.splitlines():
        if not line.startswith(" "):
            f = line.split()
            pc = int(f[1], 16) if len(f) == 2 and re.fullmatch(r"[0-9a-f]+", f[1]) else None
        elif pc in pcs and re.match(r" [RWM] ", line):
            _, addr, size = line.split()
            got.append((pc, int(addr, 16), int(size)))
    fails = []
    for k in range(max(len(got), len(want))):
        if k >= len(got) or k >= len(want):
            fails.append(f"FAIL the trace has {len(got)} bit-test references, the program printed {len(want)}")
            break
        p, addr, size = got[k]
        if (addr, size) != want[k]:
            fails.append(f"FAIL bit test {k + 1} ({pcs[p]} at {p:#x}): trace {addr:#x} {size}, "
                         f"the program {want[k][0]:#x} {want[k][1]}")
            if len(fails) >= 5:
                break
    for f in fails:
        print(f)
    if fails:
        return 1
    print(f"PASS {os.path.basename(prog)}: {len(got)} bit-test references at the words the program computed "
          f"({len(pcs)} instructions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
