#!/usr/bin/env python3
"""A data trace (`atomx trace --data`) against the naive tracer.

    data_oracle.py --atomx ATOMX [--stdin FILE] [--vfork] PROG [ARGS...]

Runs PROG ARGS natively, and once traced with --data together with the
naive tracer (`atomx trace --with`: naive_inst.cpp with its `data`
argument, a call before every instruction that accesses memory, with each
operand's effective address and size, and a rep string instruction's
count) -- one run, so that the two records see the same addresses -- each
in its own directory of the same length, and checks:
  - the program's status, stdout and stderr are the native ones;
  - `atomx regen` regenerates every thread to its end;
  - each thread's data references -- (instruction, R/W/M, address, size),
    in order -- equal, entry for entry, the naive tracer's same thread of
    the same process (named by their place, as regen_oracle.py does: ids
    differ between runs), the procedures the trace leaves out (`atomx regen
    --untraced`) taken out of the naive tracer's;
  - there is at least one reference.
A failure names the thread and the first reference that differs.  Exit
status 0 when everything matches; 1 with the differences listed.
"""
import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import regen_oracle  # noqa: E402
from regen_oracle import keyed, stream_dir, stream_processes, who  # noqa: E402

Ref = collections.namedtuple("Ref", "pc kind addr size")


def regen_refs(atomx, trace):
    """{tid: [Ref]} from `atomx regen`'s text, the signals each thread's
    references were cut by ({tid: [(index, pc)]}), and the problems regen
    reported."""
    p = subprocess.run([atomx, "regen", trace], capture_output=True, text=True)
    threads = collections.defaultdict(list)
    signals = collections.defaultdict(list)
    tid = pc = None
    for line in p.stdout.splitlines():
        if line.startswith(" L"):
            continue  # a library call's modelled reference (libc_oracle.py checks those)
        if line.startswith(" "):
            k, a, s = line.split()
            threads[tid].append(Ref(pc, k, int(a, 16), int(s)))
            continue
        f = line.split()
        if f[1] == "signal":
            signals[int(f[0])].append((len(threads[int(f[0])]), int(f[3], 16)))
        if f[1] in ("call", "signal", "sigreturn"):
            continue
        tid, pc = int(f[0]), int(f[1], 16)
    problems = [l for l in p.stderr.splitlines() if "problem" in l]
    if p.returncode != 0 and not problems:
        problems.append(f"atomx regen exited {p.returncode}: {p.stderr.strip()}")
    return threads, signals, problems


def trace_refs(atomx, trace, w):
    """Every stream's references, keyed as keyed() does, and the problems
    regen reported.  A program exec'd in a thread has a stream of its own
    with the same thread id (thread.TID-K.axt): then each stream is
    regenerated alone (regen_oracle.stream_dir)."""
    parent, pid_of = stream_processes(trace)
    names = sorted(f for f in os.listdir(trace) if f.startswith("thread.") and f.endswith(".axt"))
    alone = any("-" in f for f in names)
    problems = []
    if not alone:
        threads, signals, problems = regen_refs(atomx, trace)
    entries = []
    for f in names:
        ident = f[len("thread."):-len(".axt")].split("-")
        tid = int(ident[0])
        if f not in pid_of:
            problems.append(f"{f}: no `stream` event names its process")
            continue
        if alone:
            threads, signals, p = regen_refs(atomx, stream_dir(trace, f, w))
            problems += [f"{f}: {x}" for x in p]
        entries.append((pid_of[f], tid, int(ident[1]) if len(ident) > 1 else 0,
                        (threads.get(tid, []), signals.get(tid, [])), f"stream {f}"))
    return keyed(entries, parent), problems


def without_faults(naive, regen, signals):
    """The naive tracer's references less those of instructions that
    faulted: its call runs before an instruction, which then did not
    execute (a fault's handler ran instead: regen's `signal` line at that
    instruction, with no reference of it next; when the handler returns to
    it, it runs again, and the call does not)."""
    out, j = [], 0
    for at, pc in signals:
        while j < len(naive) and len(out) < at:
            out.append(naive[j])
            j += 1
        if j < len(naive) and naive[j].pc == pc and not (at < len(regen) and regen[at].pc == pc):
            while j < len(naive) and naive[j].pc == pc:
                j += 1
    return out + naive[j:]


def naive_refs(naive_dir, outside):
    parent = {}
    with open(os.path.join(naive_dir, "naive.index")) as f:
        for line in f:
            pid, ppid, _, _ = map(int, line.split())
            parent[pid] = ppid
    entries, odd = [], []
    for f in sorted(os.listdir(naive_dir)):
        if not f.startswith("naive.") or f == "naive.index":
            continue
        pid, tid, k = map(int, f.split(".")[1:])
        with open(os.path.join(naive_dir, f), "rb") as fh:
            text = fh.read().split(b"\0", 1)[0].decode()
        refs = []
        for line in text.splitlines():
            x = line.split()
            if x[0] == "X":
                odd.append(f"{f}: the naive tracer cannot give the references of the instruction at {x[1]}")
            elif x[0] in ("R", "W", "M"):
                pc = int(x[1], 16)
                if not outside(pc):
                    refs.append(Ref(pc, x[0], int(x[2], 16), int(x[3])))
        entries.append((pid, tid, k, refs, f))
    return keyed(entries, parent), odd


def show(r):
    return f"{r.kind} {r.addr:#x} {r.size} at {r.pc:#x}" if r else "end"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--stdin")
    ap.add_argument("--vfork", action="store_true", help="the naive tracer asks for its process id at every block")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("prog")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    o = ap.parse_args()
    regen_oracle.STDIN = o.stdin and os.path.abspath(o.stdin)
    atomx = os.path.abspath(o.atomx)
    w = tempfile.mkdtemp(prefix="atomx-data.")
    try:
        os.mkdir(os.path.join(w, "p"))
        prog = shutil.copy2(os.path.abspath(o.prog), os.path.join(w, "p", os.path.basename(o.prog)))
        dirs = {k: os.path.join(w, k + ".d") for k in ("n", "t")}
        for d in dirs.values():
            os.mkdir(d)
        cache, trace, naive_dir = (os.path.join(w, x) for x in ("cache", "trace", "naive"))
        os.mkdir(naive_dir)
        run = regen_oracle.run
        failures = []
        native = run([prog] + o.args, dirs["n"], o.timeout)
        # One run: the trace's stores and the naive tracer's calls in the
        # same process (atomx trace --with), so that every address is the
        # same in both records.
        tool = [os.path.join(HERE, "naive_inst.cpp"), os.path.join(HERE, "naive_anal.c")]
        with_tool = [x for f in tool for x in ("--with", f)] + ["--with-arg", "data"]
        traced = run([atomx, "trace", "-q", "--data", "--cache-dir", cache, "-o", trace] + with_tool + ["--", prog]
                     + o.args, dirs["t"], o.timeout,
                     dict(os.environ, ATOMX_NAIVE_DIR=naive_dir, ATOMX_NAIVE_VFORK="1" if o.vfork else ""))
        if traced != native:
            failures.append(f"program output changed when traced with data and the naive tracer (status {native[0]}"
                            f" -> {traced[0]})" + (f"\n      {traced[2][-400:]!r}" if traced[2] != native[2] else ""))
        untraced = subprocess.run([atomx, "regen", trace, "--untraced"], capture_output=True, text=True).stdout
        spans = [(int(f[1], 16), int(f[2], 16)) for f in (l.split(None, 3) for l in untraced.splitlines())]
        outside = lambda a: any(s <= a < e for s, e in spans)  # noqa: E731
        mine, problems = trace_refs(atomx, trace, w)
        failures += problems
        theirs, odd = naive_refs(naive_dir, outside)
        failures += odd
        total = 0
        for key in sorted(set(mine) | set(theirs)):
            ((a, sigs), where), (b, _) = mine.get(key, (([], []), "no stream")), theirs.get(key, ([], "no naive file"))
            b = without_faults(b, a, sigs)
            if not a and not b:
                continue
            if key not in mine or key not in theirs:
                failures.append(f"{who(key)}: {len(a)} references regenerated ({where}), the naive tracer has {len(b)}")
                continue
            total += len(b)
            if a != b:
                k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                failures.append(f"{who(key)}: reference {k} of {len(b)} differs: regen "
                                f"{show(a[k] if k < len(a) else None)}, naive {show(b[k] if k < len(b) else None)}"
                                f" (regen has {len(a)}; {where})")
        if total == 0:
            failures.append("no data reference to compare")
        if failures:
            print(f"FAIL {o.prog}:")
            for f in failures:
                print("    " + f)
            return 1
        print(f"PASS {o.prog}: {len(mine)} thread(s), {total} data references equal to the naive tracer's")
        return 0
    finally:
        shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
