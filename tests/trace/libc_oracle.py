#!/usr/bin/env python3
"""A data trace's library references (`atomx trace --data`) against an
LD_PRELOAD shim that logs the calls in the same run.

    libc_oracle.py --atomx ATOMX --shim libc_shim.so [--async NAME:LEN]... PROG [ARGS...]

Instruments PROG for a data trace (`atomx trace --data --instrument OUT`),
runs OUT once with the trace directory and with libc_shim.so preloaded
(libc_shim.c: each call of memcpy, mempcpy, memmove, memset, bzero, bcopy,
calloc, strlen, strnlen, stpcpy, strcpy, strncpy, strcmp, strncmp, memcmp,
bcmp and __memcmpeq from the main program logs the ranges it reads and
writes, measured by the shim itself), and checks:
  - the program's status and stdout are the native ones;
  - `atomx regen` regenerates every thread to its end;
  - per thread (the stream thread.TID is the shim's TID), in order, every
    library call the regenerated text shows (` L NAME` followed by its
    ` LR ADDR SIZE` / ` LW ADDR SIZE` pieces, in the lines of thread TID)
    reads and writes the very ranges the shim logged for that call: the
    pieces, joined, make one contiguous range per kind (the model's pieces:
    front to back; a comparison's reads alternate between its two operands,
    piece by piece, and make one range each);
  - --async NAME:LEN (repeated): the calls of NAME that read LEN bytes are a
    signal handler's, which may come anywhere -- also between the shim's
    entry and its log line, or inside a call whose references the trace
    gives when it returns -- so they are compared apart: each thread has
    the same ones, as a multiset, and the other calls in order;
  - every one of those functions was called at least once.
A failure names the thread, the call's number and function, and both
sides' ranges.  Exit status 0 when everything matches; 1 otherwise.
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile

FUNCTIONS = {"memcpy", "mempcpy", "memmove", "memset", "bzero", "bcopy", "calloc", "strlen", "strnlen", "stpcpy", "strcpy",
             "strncpy", "strcmp", "strncmp", "memcmp", "bcmp", "__memcmpeq"}
COMPARISONS = {"strcmp", "strncmp", "memcmp", "bcmp", "__memcmpeq"}  # two operands read


def fmt(r):
    return f"{r[0]} {r[1]:#x} {r[2]}" if r[2] else f"{r[0]} - 0"


def regen_calls(atomx, trace, fails):
    """{tid: [[name, reads, writes]]}: each modelled call's pieces."""
    p = subprocess.run([atomx, "regen", trace], capture_output=True, text=True)
    if p.returncode != 0:
        fails.append(f"FAIL atomx regen exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    for l in p.stderr.splitlines():
        if "problem" in l:
            fails.append(f"FAIL regen: {l}")
    calls = collections.defaultdict(list)
    tid, last = None, None
    for line in p.stdout.splitlines():
        if line.startswith(" L "):  # a library call of thread `tid`
            last = [line.split()[1], [], []]
            calls[tid].append(last)
            continue
        if line.startswith(" L"):
            kind, addr, size = line.split()
            if last is None:
                fails.append(f"FAIL thread {tid}: library reference `{line.strip()}` before any library call")
                continue
            last[1 if kind == "LR" else 2].append((int(addr, 16), int(size)))
            continue
        if line.startswith(" "):
            continue
        tid, last = int(line.split()[0]), None
    return calls


def joined(kind, pieces):
    """The one range (kind, address, length) that `pieces` make front to
    back, or a string saying why they do not."""
    if not pieces:
        return (kind, 0, 0)
    addr, n = pieces[0][0], 0
    for a, s in pieces:
        if a != addr + n:
            return f"{kind} pieces not contiguous at {a:#x} (expected {addr + n:#x})"
        n += s
    return (kind, addr, n)


def regen_ranges(call):
    """(name, range...) of a regenerated call: its reads joined (one range
    per operand of a comparison: the pieces alternate), then its writes."""
    name, reads, writes = call
    if name in COMPARISONS:
        return (name, joined("R", reads[0::2]), joined("R", reads[1::2]), joined("W", writes))
    return (name, joined("R", reads), joined("W", writes))


def shim_calls(path):
    calls = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            t, name, *ranges = line.split()
            calls[int(t)].append((name,) + tuple((k, int(a, 16) if a != "-" else 0, int(n))
                                                 for k, a, n in zip(ranges[0::3], ranges[1::3], ranges[2::3])))
    return calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--async", dest="asynchronous", action="append", default=[], metavar="NAME:LEN")
    ap.add_argument("prog")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    atomx, prog = os.path.realpath(a.atomx), os.path.realpath(a.prog)
    fails = []
    with tempfile.TemporaryDirectory() as w:
        native = subprocess.run([prog] + a.args, cwd=w, capture_output=True, text=True)
        r = subprocess.run([atomx, "trace", "-q", "--data", "--instrument", "out", "-o", "trace", "--", prog], cwd=w,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"FAIL atomx trace --instrument: exit status {r.returncode}\n{r.stderr[-2000:]}")
        log = os.path.join(w, "shim.log")
        env = dict(os.environ, ATOMX_TRACE_DIR=os.path.join(w, "trace"), LIBC_SHIM_LOG=log,
                   LD_PRELOAD=os.path.realpath(a.shim))
        traced = subprocess.run([os.path.join(w, "out")] + a.args, cwd=w, env=env, capture_output=True, text=True)
        if (traced.returncode, traced.stdout) != (native.returncode, native.stdout):
            fails.append(f"FAIL traced run: status {traced.returncode} and stdout {traced.stdout[:200]!r}, "
                         f"native {native.returncode} and {native.stdout[:200]!r}")
        if not os.path.exists(log):
            sys.exit("FAIL the shim logged nothing (was it preloaded?)")
        shim = shim_calls(log)
        regen = regen_calls(atomx, os.path.join(w, "trace"), fails)
        seen = set()
        compared = 0
        asynchronous = {(x.split(":")[0], int(x.split(":")[1])) for x in a.asynchronous}
        handled = 0
        for n, tid in enumerate(sorted(set(shim) | set(regen)), 1):
            mine = [regen_ranges(c) for c in regen.get(tid, [])]
            theirs = shim.get(tid, [])
            if asynchronous:  # a handler's calls: the same multiset, anywhere
                is_async = lambda c: isinstance(c[1], tuple) and (c[0], c[1][2]) in asynchronous
                a_mine, a_theirs = sorted(c for c in mine if is_async(c)), sorted(c for c in theirs if is_async(c))
                if a_mine != a_theirs:
                    fails.append(f"FAIL thread {n} (tid {tid}): the handler's calls differ: regen {len(a_mine)}, "
                                 f"shim {len(a_theirs)}; first different: regen "
                                 f"{next((x for x, y in zip(a_mine + [None], a_theirs + [None]) if x != y), None)}, shim "
                                 f"{next((y for x, y in zip(a_mine + [None], a_theirs + [None]) if x != y), None)}")
                handled += len(a_mine)
                mine = [c for c in mine if not is_async(c)]
                theirs = [c for c in theirs if not is_async(c)]
            for k in range(max(len(mine), len(theirs))):
                if k >= len(mine) or k >= len(theirs):
                    extra = mine[k][0] if k < len(mine) else theirs[k][0]
                    fails.append(f"FAIL thread {n} (tid {tid}): regen has {len(mine)} library calls, the shim "
                                 f"{len(theirs)} (the first unmatched: call {k + 1}, {extra})")
                    break
                got, want = mine[k], theirs[k]
                name = got[0]
                compared += 1
                seen.add(name)
                if got != want:
                    show = lambda c: " ".join([c[0]] + [x if isinstance(x, str) else fmt(x) for x in c[1:]])
                    fails.append(f"FAIL thread {n} (tid {tid}): library call {k + 1}: regen {show(got)}, "
                                 f"shim {show(want)}")
                    break
        missing = FUNCTIONS - seen
        if missing and not fails:
            fails.append(f"FAIL never called (nothing compared for them): {' '.join(sorted(missing))}")
    for f in fails:
        print(f)
    if fails:
        return 1
    print(f"PASS {os.path.basename(prog)}: {compared} library calls in {len(shim)} thread(s) equal to the shim's" +
          (f", and {handled} calls of signal handlers" if a.asynchronous else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
