#!/usr/bin/env python3
"""The unalign tool against hand-computed expectations.

    check_unalign.py --atomx ATOMX [--exact-accesses] [--stack] TEST_PROG
    check_unalign.py --atomx ATOMX --zero PROG [ARGS...]

TEST_PROG is unalign_test.c: every access of its test functions is at a
known offset from a 64-byte-aligned buffer, with a known size.  expected()
below lays the same accesses out again and derives, per function, how many
accesses there are, how many are unaligned (address not a multiple of the
largest power of two <= size) and how many cross a 64-byte line.  The test
instruments TEST_PROG with `atomx -T unalign`, runs it, and requires, per
function, exactly those unaligned and split counts, and no unaligned or
split access anywhere else; with --exact-accesses (an optimised build, where
the test functions make no other memory access) the access counts exactly,
else at least those.  With --stack (the tool's option: implicit stack slots
of push/pop/call/ret counted too) each test function's ret adds one aligned
access per call.  It also checks that unalign.out's totals match
unalign.json and that the program's output is unchanged.

--zero: PROG is ordinary code that makes no unaligned access (a pitfall
program): the tool must report accesses and zero unaligned ones.
Exit status 0 when everything matches.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def judge(addr, size):
    align = 1
    while align * 2 <= size:
        align *= 2
    return addr % align != 0, addr % 64 + size > 64


def expected():
    """function -> [accesses, unaligned, split]; addresses are offsets from
    the 64-byte-aligned buf (see unalign_test.c's main)."""
    e = collections.defaultdict(lambda: [0, 0, 0])

    def access(func, addr, size):
        u, s = judge(addr, size)
        e[func][0] += 1
        e[func][1] += u
        e[func][2] += s

    for i in range(128):
        access("sweep32", i, 4)
    for k in range(32):
        access("store64", 512 + 3 + 8 * k, 8)
    for k in range(40):  # packed records of 15 bytes: tag, s, i, l at 0, 1, 3, 7
        base = 1024 + 15 * k
        for off, size in ((0, 1), (1, 2), (3, 4), (7, 8)):
            access("packed_fill", base + off, size)
        for off, size in ((1, 2), (3, 4), (7, 8)):
            access("packed_sum", base + off, size)
    for j in range(16):
        access("sse_loads", 2048 + 4 * j, 16)
    # rep movsl, %rcx = 10: its first elements (dst buf+3073, src buf+3200);
    # then %rcx = 0: no access.
    access("rep_copy", 3072 + 1, 4)
    access("rep_copy", 3200, 4)
    for k in range(16):
        access("aligned_work", 3584 + 8 * k, 8)
        access("aligned_work", 3840 + 4 * k, 4)
        access("aligned_work", 3584 + 8 * k, 8)
        access("aligned_work", 3840 + 4 * k, 4)
    return e


CALLS = {"sweep32": 1, "store64": 1, "packed_fill": 1, "packed_sum": 1, "sse_loads": 1, "rep_copy": 2,
         "aligned_work": 1}


def run_tool(atomx, prog, args, tool_args, work):
    atom = os.path.join(work, "prog.atom")
    cmd = [atomx, prog, "-T", "unalign", "-o", atom, "-q"] + (["--"] + tool_args if tool_args else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"atomx failed:\n{r.stderr}")
    native = subprocess.run([prog] + args, capture_output=True, cwd=work)
    p = subprocess.run([atom] + args, capture_output=True, cwd=work)
    failures = []
    if (p.returncode, p.stdout, p.stderr) != (native.returncode, native.stdout, native.stderr):
        failures.append("program output changed")
    with open(os.path.join(work, "unalign.json")) as f:
        j = json.load(f)
    with open(os.path.join(work, "unalign.out")) as f:
        text = f.read()
    totals = [sum(i[k] for i in j["instructions"]) for k in ("accesses", "unaligned", "split")]
    shown = [int(m.group(1)) if (m := re.search(rf"{w}\s+(\d+)", text)) else None
             for w in ("accesses", "unaligned", "cache-line split")]
    if totals != [j["accesses"], j["unaligned"], j["split"]] or shown != totals:
        failures.append(f"totals disagree: instructions {totals}, unalign.json "
                        f"{[j['accesses'], j['unaligned'], j['split']]}, unalign.out {shown}")
    return j, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--exact-accesses", action="store_true")
    ap.add_argument("--stack", action="store_true")
    ap.add_argument("--zero", action="store_true")
    ap.add_argument("prog")
    ap.add_argument("args", nargs="*")
    o = ap.parse_args()
    work = tempfile.mkdtemp(prefix="atomx-unalign.")
    try:
        try:
            j, failures = run_tool(o.atomx, os.path.abspath(o.prog), o.args, ["--stack"] if o.stack else [], work)
        except (RuntimeError, OSError, ValueError) as e:
            print(f"FAIL {o.prog}: {e}")
            return 1
        got = collections.defaultdict(lambda: [0, 0, 0])
        for i in j["instructions"]:
            g = got[i["proc"]]
            g[0] += i["accesses"]
            g[1] += i["unaligned"]
            g[2] += i["split"]
        if o.zero:
            if j["accesses"] == 0:
                failures.append("no accesses counted")
            for i in j["instructions"]:
                if i["unaligned"] or i["split"]:
                    failures.append(f"{i['pc']} in {i['proc']} ({i['inst']}): {i['unaligned']} unaligned,"
                                    f" {i['split']} split of {i['accesses']}")
        else:
            want = expected()
            for func in sorted(set(want) | set(got)):
                w = list(want.get(func, [0, 0, 0]))
                if o.stack and func in CALLS:
                    w[0] += CALLS[func]  # the ret's read of the return address
                g = got.get(func, [0, 0, 0])
                if func not in want:
                    if g[1] or g[2]:
                        failures.append(f"{func}: {g[1]} unaligned, {g[2]} split, expected none")
                    continue
                ok = g[1:] == w[1:] and (g[0] == w[0] if o.exact_accesses else g[0] >= w[0])
                print(f"  {func:14} accesses {g[0]:4} unaligned {g[1]:4} split {g[2]:3}"
                      f"   expected {'' if o.exact_accesses else '>= '}{w[0]} / {w[1]} / {w[2]}")
                if not ok:
                    failures.append(f"{func}: (accesses, unaligned, split) {tuple(g)}, expected {tuple(w)}")
        if failures:
            print(f"FAIL {o.prog}:")
            for f in failures[:40]:
                print("   ", f)
            return 1
        print(f"PASS {o.prog}: {j['accesses']} accesses, {j['unaligned']} unaligned, {j['split']} split"
              + (", as computed" if not o.zero else ""))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
