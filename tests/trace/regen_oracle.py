#!/usr/bin/env python3
"""`atomx trace` + `atomx regen` against independent oracles.

    regen_oracle.py --atomx ATOMX [--callgrind | --cachegrind] [--stdin FILE] [--profile JSON]
                    [--set-aside PROC=REASON]... PROG [ARGS...]

Runs PROG ARGS natively, traced (`atomx trace -q`), and under the naive
tracer (naive_inst.cpp: a call before every block with its address), each
in its own directory of the same length, and checks:
  - the traced program's status, stdout and stderr are the native ones;
  - `atomx regen --blocks` regenerates every thread to its end, and its
    block sequence equals, entry for entry, the naive tracer's same thread
    of the same process (naive_anal.c writes a file per thread of each
    process and each program it exec'd; a forked child's starts with its
    parent's path up to the fork, as its stream does).  Ids differ between
    runs, so both are named by their place (keyed()): a process by its place
    in the process tree, children in the order they were made; a program by
    the execs before it in its thread; a thread by the order its process made
    its threads in.  A failure names the process, program and thread;
  - with --callgrind, the instructions regenerated at each address of the
    program's traced procedures equal callgrind's Ir there (a rep-prefixed
    instruction: its executions, Ir less its jumps to itself), on a run of
    the original program under callgrind with the same arguments;
  - with --cachegrind (implies --callgrind), the Ir of each of those
    procedures in `atomx regen --cachegrind-out`'s file equals the Ir
    cachegrind's own file gives the function on a run of the original
    (less, for a rep-prefixed instruction, its iterations after the first:
    Valgrind counts an Ir per iteration, callgrind's jumps say how many;
    cachegrind runs with --vex-guest-chase=no, without which it counts some
    instructions twice),
    names matched as cachegrind writes them (demangled; an alias or a
    `.cold` part under its function's name);
  - with --data and --cachegrind, the trace recorded with data: each of
    those procedures' Dr and Dw in the same file equal cachegrind's (its
    --cache-sim=yes run), Valgrind's conventions handled (data_check());
    --data-aside PROC=REASON leaves one out of that comparison only.
--vfork: the program calls vfork, whose child runs in its parent's memory
until it execs or ends: the naive tracer asks for its process id at every
block, so that the child's blocks go to a file of its own.
--processes: the program forks or execs: the trace must hold the streams of
two processes or programs (exec'd in a process) or more; callgrind runs
with --dump-before=*fork*, so that a forked child's file does not repeat its
parent's costs (cachegrind cannot: no --cachegrind with it).
--set-aside PROC=REASON leaves a procedure out of the callgrind comparison;
--threads-vary compares how often each block ran over all threads instead
of each thread's sequence (for a program whose threads share work
differently in each run).  Procedures the trace leaves out (`atomx regen
--untraced`: code that runs before the entry point, code left in place) are
left out of both comparisons.
Exit status 0 when everything matches; 1 with the differences listed.
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools", "dyninst"))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools", "cache"))
from vgharness import Symbols, rep_addresses, callgrind_file  # noqa: E402
from cache_vs_cachegrind import register_bit_tests  # noqa: E402


STDIN = None  # --stdin: every run of the program reads this file


def run(cmd, cwd, timeout, env=None):
    with open(STDIN or os.devnull, "rb") as stdin:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout, env=env, stdin=stdin)
    return p.returncode, p.stdout, p.stderr


def valgrind(o, prog, cwd, options):
    """PROG ARGS under valgrind OPTIONS (an output file option with %p: one
    file per process)."""
    return run(["valgrind", "-q", "--trace-children=yes"] + options + [prog] + o.args, cwd, o.timeout)


def regen_blocks(atomx, trace):
    """{thread: [block start, ...]}, and the problems regen reported."""
    p = subprocess.run([atomx, "regen", trace, "--blocks"], capture_output=True, text=True)
    threads = collections.defaultdict(list)
    for line in p.stdout.splitlines():
        f = line.split()
        # Outside calls and signals are not blocks; the rest of a block a
        # signal interrupted is not a block the naive tracer sees start.
        if f[1] not in ("call", "signal", "sigreturn") and f[-1] != "continued":
            threads[int(f[0])].append(int(f[1], 16))
    problems = [l for l in p.stderr.splitlines() if "problem" in l]
    if p.returncode != 0 and not problems:
        problems.append(f"atomx regen exited {p.returncode}: {p.stderr.strip()}")
    return threads, problems


def stream_dir(trace, stream, w):
    """A trace directory with the trace's files but its one stream `stream`
    (symbolic links, under w): what regenerates that stream alone."""
    d = tempfile.mkdtemp(dir=w, prefix="stream.")
    for f in os.listdir(trace):
        if not f.endswith(".axt") or f == stream:
            os.symlink(os.path.join(trace, f), os.path.join(d, f))
    return d


def stream_blocks(atomx, trace, stream, w):
    """[block start, ...] of one stream of the trace, regenerated alone (in
    a directory with the trace's other files and this one stream), and the
    problems regen reported."""
    threads, problems = regen_blocks(atomx, stream_dir(trace, stream, w))
    return [a for t in sorted(threads) for a in threads[t]], [f"{stream}: {p}" for p in problems]


def read_events(trace):
    """The trace's event log: [(ns, pid, tid, kind, arg)], in time order."""
    events = []
    with open(os.path.join(trace, "events")) as f:
        for line in f:
            ns, pid, tid, kind, *arg = line.split(None, 4)
            events.append((int(ns), int(pid), int(tid), kind, arg[0].strip() if arg else ""))
    return sorted(events)


def keyed(entries, parent):
    """Names each thread's sequence the same way in two runs of a program,
    whose process and thread ids differ: `entries` [(pid, tid, k, sequence,
    where)] (k: the programs exec'd in that thread before), `parent` {pid:
    ppid}.  A process is its place in the tree of the processes that left a
    sequence, each child by the order of its pid among its siblings' (the
    order they were made): "1" the first process, "1.2" its second child;
    a thread, its rank among the process's thread ids (the order threads were
    made; 1, the main thread).  Returns {(process, k, thread): (sequence,
    where)}."""
    pids = {e[0] for e in entries}
    children = collections.defaultdict(list)
    roots = []
    for p in sorted(pids):
        (children[parent[p]] if parent.get(p) in pids else roots).append(p)
    place = {}

    def name(p, at):
        place[p] = at
        for i, c in enumerate(children[p]):
            name(c, f"{at}.{i + 1}")
    for i, r in enumerate(roots):
        name(r, str(i + 1))
    tids = collections.defaultdict(set)
    for pid, tid, *_ in entries:
        tids[pid].add(tid)
    rank = {(p, t): i + 1 for p in tids for i, t in enumerate(sorted(tids[p]))}
    return {(place[pid], k, rank[pid, tid]): (seq, where) for pid, tid, k, seq, where in entries}


def stream_processes(trace):
    """From the event log: {pid: parent pid}, {stream file: pid}."""
    parent, pid_of = {}, {}
    for _, pid, tid, kind, arg in read_events(trace):
        if kind in ("process", "forked", "vforked"):
            parent[pid] = int(arg)
        elif kind in ("fork", "vfork"):
            parent[int(arg)] = pid
        elif kind == "stream":
            pid_of[arg] = pid
    return parent, pid_of


def trace_streams(atomx, trace, w):
    """Every stream of the trace regenerated, keyed as keyed() does (its
    process from the event log), and the problems regen reported."""
    parent, pid_of = stream_processes(trace)
    names = sorted(f for f in os.listdir(trace) if f.startswith("thread.") and f.endswith(".axt"))
    ids = [f[len("thread."):-len(".axt")].split("-") for f in names]
    problems = []
    if any(len(i) > 1 for i in ids):
        # A program exec'd in the same thread: the same thread id, so
        # each stream regenerated alone.
        seqs = {}
        for f in names:
            seqs[f], p = stream_blocks(atomx, trace, f, w)
            problems += p
    else:
        threads, problems = regen_blocks(atomx, trace)
        seqs = {f: threads.get(int(i[0]), []) for f, i in zip(names, ids)}
    entries = []
    for f, i in zip(names, ids):
        if f not in pid_of:
            problems.append(f"{f}: no `stream` event names its process")
            continue
        entries.append((pid_of[f], int(i[0]), int(i[1]) if len(i) > 1 else 0, seqs[f], f"stream {f}"))
    return keyed(entries, parent), problems


def naive_streams(naive_dir, outside):
    """The naive tracer's files (naive_anal.c), what the trace leaves out
    taken out, keyed as keyed() does."""
    parent = {}
    with open(os.path.join(naive_dir, "naive.index")) as f:
        for line in f:
            pid, ppid, _, _ = map(int, line.split())
            parent[pid] = ppid
    entries = []
    for f in sorted(os.listdir(naive_dir)):
        if f.startswith("naive.") and f != "naive.index":
            pid, tid, k = map(int, f.split(".")[1:])
            with open(os.path.join(naive_dir, f), "rb") as fh:
                text = fh.read().split(b"\0", 1)[0]  # the mapped file's size: NULs after the lines
            entries.append((pid, tid, k, [a for a in (int(l, 16) for l in text.split()) if not outside(a)], f))
    return keyed(entries, parent)


def who(key):
    """A thread's name in keyed()'s terms, for the failure messages."""
    process, k, thread = key
    return f"process {process}, program {k + 1}, thread {thread}"


def regen_thread_counts(atomx, trace):
    """{thread k (the kth its process made, 1 the main thread): {instruction
    address: executions}}, from `atomx regen`'s text (one process)."""
    p = subprocess.run([atomx, "regen", trace], capture_output=True, text=True)
    counts = collections.defaultdict(collections.Counter)
    for line in p.stdout.splitlines():
        f = line.split()
        if f[1] not in ("call", "signal", "sigreturn"):
            counts[int(f[0])][int(f[1], 16)] += 1
    return {k + 1: counts[t] for k, t in enumerate(sorted(counts))}


def regen_counts(atomx, trace):
    """{instruction address: executions} over every thread."""
    p = subprocess.run([atomx, "regen", trace, "--counts"], capture_output=True, text=True)
    return {int(a, 16): int(n) for a, n in (l.split() for l in p.stdout.splitlines())}


def cachegrind_functions(path, event="Ir"):
    """{function: the event's count} of a cachegrind output file (every
    file's lines; a line's missing last columns are zeros)."""
    counts = collections.Counter()
    fn = None
    column = None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
                if event not in events:
                    raise ValueError(f"{path}: no {event} in its events ({' '.join(events)})")
                column = 1 + events.index(event)
            elif line.startswith("fn="):
                fn = line[3:].rstrip("\n")
            elif line[:1].isdigit() and fn is not None:
                words = line.split()
                counts[fn] += int(words[column]) if column < len(words) else 0
    return counts


def cachegrind_lines(path):
    """{(function, source file's name, line): Ir} of a cachegrind output
    file; fi=/fe= (an inlined function's lines) change the file within a
    function.  Files by their last component: atomx writes the path the
    line table gives, cachegrind the one DWARF's directory entries make."""
    ir = collections.Counter()
    fl = fn = None
    with open(path) as f:
        for line in f:
            if line.startswith(("fl=", "fi=", "fe=")):
                fl = os.path.basename(line[3:].rstrip("\n"))
            elif line.startswith("fn="):
                fn = line[3:].rstrip("\n")
            elif line[:1].isdigit() and fn is not None:
                ln, n = line.split()[:2]
                # Line 0, "no source line" (clang gives it to code of no
                # statement): cachegrind keeps the file of its line-table
                # row, atomx writes it under ???; the same fact, one key.
                ir[(fn, fl, int(ln)) if int(ln) else (fn, "???", 0)] += int(n)
    return ir


def line_check(mine_file, theirs_dir, compared, canon, extra):
    """Oracle (c): Ir per source line of the compared functions, `atomx
    regen --cachegrind-out`'s file against cachegrind's on the program with
    its line table; `extra`: {(function, file, line): rep iterations after
    the first}, which cachegrind counts and atomx does not.  Returns (lines
    compared, problems)."""
    mine, theirs = collections.Counter(), collections.Counter()
    for (fn, fl, ln), n in cachegrind_lines(mine_file).items():
        if canon.get(fn, fn) in compared:
            mine[(canon.get(fn, fn), fl, ln)] += n
    for f in os.listdir(theirs_dir):
        for (fn, fl, ln), n in cachegrind_lines(os.path.join(theirs_dir, f)).items():
            if canon.get(fn) in compared:
                theirs[(canon[fn], fl, ln)] += n
    problems = []
    for key in sorted(set(mine) | set(theirs)):
        want = theirs[key] - extra[key]
        if mine[key] != want:
            fn, fl, ln = key
            problems.append(f"{fl}:{ln} ({fn}): Ir {mine[key]} in atomx regen's cachegrind file, cachegrind {theirs[key]}"
                            + (f" less {extra[key]} rep iterations" if extra[key] else ""))
    if not theirs:
        problems.append("cachegrind gave no line of the compared functions (is the program built with -g?)")
    return len(theirs), problems


def annotate_check(mine_file, total):
    """cg_annotate reads `atomx regen --cachegrind-out`'s file: it exits 0,
    its program total is the file's, and it annotates the source lines."""
    r = subprocess.run(["cg_annotate", mine_file], capture_output=True, text=True)
    problems = []
    if r.returncode != 0:
        problems.append(f"cg_annotate {os.path.basename(mine_file)} exited {r.returncode}: {r.stderr.strip()[:300]}")
    m = re.search(r"^\s*([\d,]+)\s.*PROGRAM TOTALS", r.stdout, re.M)
    if not m or int(m.group(1).replace(",", "")) != total:
        problems.append(f"cg_annotate's PROGRAM TOTALS {m.group(1) if m else 'missing'}, the file's lines sum to {total}")
    if "-- Auto-annotated source:" not in r.stdout:
        problems.append("cg_annotate annotated no source file")
    return problems


def cachegrind_check(o, prog, mine_file, cwd, w, sym, names, reps, cgfiles, base, lines_dir=None, addr_line=None):
    """Oracle (b): Ir per function, `atomx regen --cachegrind-out`'s file
    (mine_file) against cachegrind's own; returns (functions compared,
    {function set aside: the other objects that have one of its name},
    problems)."""
    theirs_file = os.path.join(w, "cachegrind.out")
    # Chasing branches into one superblock, cachegrind counts some
    # instructions twice (gzip's deflate: 2,847,875 Ir, callgrind and
    # --vex-guest-chase=no 2,832,707), as it misses some Bc
    # (tests/branch/branch_vs_cachegrind.py).  With --data, Dr and Dw too:
    # cachegrind counts them only when it simulates caches (--cache-sim=no
    # writes `events: Ir` alone).
    os.mkdir(theirs_file)
    valgrind(o, prog, cwd, ["--tool=cachegrind", f"--cache-sim={'yes' if o.data else 'no'}", "--vex-guest-chase=no",
                            f"--cachegrind-out-file={theirs_file}/cachegrind.out.%p"])
    # The names as cachegrind writes them: demangled, each mapped to the
    # demangled name of its canonical symbol (aliases, `.cold` parts).
    mangled = sorted(n for n in sym.canon if n.startswith("_Z"))  # as Valgrind: _GLOBAL__I_... stays
    plain = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True,
                           check=True).stdout.splitlines()
    demangle = dict(zip(mangled, plain))
    demangle.update((n, n) for n in sym.canon if not n.startswith("_Z"))
    canon = {demangle[n]: demangle[c] for n, c in sym.canon.items()}
    compared = {demangle[n] for n in names}
    # Iterations of rep-prefixed instructions after the first, per function.
    extra = collections.Counter()
    execs = callgrind_file.executions(cgfiles, base, reps)
    for cgout in cgfiles:
        for fn, addr, ir in callgrind_file.costs(cgout, base, "Ir"):
            if addr in reps and sym(addr) in names:
                extra[demangle[sym(addr)]] += ir
    for addr, n in execs.items():
        if sym(addr) in names:
            extra[demangle[sym(addr)]] -= n
    # A name another object also defines (lua's check_match, ld.so's):
    # cachegrind's files say nothing of objects, so it is set aside.
    shared = collections.defaultdict(set)
    for cgout in cgfiles:
        for ev in callgrind_file.read(cgout):
            if type(ev) is callgrind_file.Cost and ev.ob and os.path.basename(ev.ob) != base and ev.fn:
                shared[canon.get(ev.fn, ev.fn)].add(os.path.basename(ev.ob))
    aside = {fn: shared[fn] for fn in compared if fn in shared}
    compared -= set(aside)
    mine, theirs = collections.Counter(), collections.Counter()
    for fn, n in cachegrind_functions(mine_file).items():
        mine[canon.get(fn, fn)] += n
    for f in os.listdir(theirs_file):
        for fn, n in cachegrind_functions(os.path.join(theirs_file, f)).items():
            if canon.get(fn) in compared:
                theirs[canon[fn]] += n
    problems = []
    lines = 0
    if lines_dir:
        # Rep iterations after the first, per line: callgrind's Ir at each
        # rep-prefixed instruction less its executions.
        extra_line = collections.Counter()
        for cgout in cgfiles:
            for fn, addr, ir in callgrind_file.costs(cgout, base, "Ir"):
                if addr in reps and sym(addr) in names:
                    extra_line[(demangle[sym(addr)],) + addr_line(addr)] += ir
        for addr, n in execs.items():
            if sym(addr) in names:
                extra_line[(demangle[sym(addr)],) + addr_line(addr)] -= n
        lines, problems = line_check(mine_file, lines_dir, compared, canon, extra_line)
        problems += annotate_check(mine_file, sum(cachegrind_functions(mine_file).values()))
    for fn in sorted(compared):
        want = theirs[fn] - extra[fn]
        if mine[fn] != want:
            problems.append(f"function {fn}: Ir {mine[fn]} in atomx regen's cachegrind file, cachegrind {theirs[fn]}"
                            + (f" less {extra[fn]} rep iterations" if extra[fn] else ""))
    if o.data:
        data_aside = {canon.get(n, n) for n in (a.split("=", 1)[0] for a in o.data_aside)}
        problems += data_check(mine_file, theirs_file, compared - data_aside, canon, demangle, sym, names, cgfiles, base,
                               prog)
    return len([f for f in compared if theirs[f] or mine[f]]), lines, aside, problems


def data_check(mine_file, theirs_dir, compared, canon, demangle, sym, names, cgfiles, base, prog):
    """Oracle (d), --data: each compared function's Dr and Dw in `atomx
    regen --cachegrind-out`'s file against cachegrind's (--cache-sim=yes).
    Both count as Valgrind does (docs/cachesim.md): a read-modify-write
    operand one read, a locked one two, a rep string instruction's
    references once per iteration (cachegrind and atomx alike: nothing to
    subtract, unlike Ir).  Bit tests: a register bit offset into a memory
    operand (bt %eax,(%rdi); bts, btr, btc) is one access in both (cachegrind
    a byte at the bit's address: a read for bt, a modify, one read, for the
    others, two reads locked; atomx the operand at its effective address,
    the bit offset not added: a read or a read-modify-write), so counts
    agree (tests/trace/bit_tests.c); a register tested by a register
    (bt %eax,%ecx) is none in atomx
    and the CPU, whereas Valgrind runs it through a stack slot: cachegrind's
    accesses for those (tools/cache's BIT_TEST_ACCESSES, times each one's
    executions from callgrind) are subtracted from its figure."""
    bits = register_bit_tests(prog)
    extra = {"Dr": collections.Counter(), "Dw": collections.Counter()}
    if bits:
        for cgout in cgfiles:
            for fn, addr, ir in callgrind_file.costs(cgout, base, "Ir"):
                if addr in bits and sym(addr) in names:
                    extra["Dr"][demangle[sym(addr)]] += ir * bits[addr][0]
                    extra["Dw"][demangle[sym(addr)]] += ir * bits[addr][1]
    problems = []
    for event in ("Dr", "Dw"):
        mine, theirs = collections.Counter(), collections.Counter()
        for fn, n in cachegrind_functions(mine_file, event).items():
            mine[canon.get(fn, fn)] += n
        for f in os.listdir(theirs_dir):
            for fn, n in cachegrind_functions(os.path.join(theirs_dir, f), event).items():
                if canon.get(fn) in compared:
                    theirs[canon[fn]] += n
        if not sum(mine[fn] for fn in compared):
            problems.append(f"no {event} of the compared functions in atomx regen's cachegrind file (a trace with data?)")
        for fn in sorted(compared):
            want = theirs[fn] - extra[event][fn]
            if mine[fn] != want:
                problems.append(f"function {fn}: {event} {mine[fn]} in atomx regen's cachegrind file, cachegrind"
                                f" {theirs[fn]}" + (f" less {extra[event][fn]} for register bit tests"
                                                   if extra[event][fn] else ""))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--cachegrind", action="store_true")
    ap.add_argument("--callgrind-threads", action="store_true",
                    help="(implies --callgrind) also each thread's executions per instruction equal callgrind's Ir"
                         " in the same thread (--separate-threads=yes; threads by the order they were made)")
    ap.add_argument("--per-line", action="store_true",
                    help="with --cachegrind, on a program built with -g: compare each source line's Ir too, with"
                         " cachegrind's on the program with its line table, and read the file with cg_annotate")
    ap.add_argument("--set-aside", action="append", default=[])
    ap.add_argument("--processes", action="store_true",
                    help="the program forks or execs: the trace must hold the streams of two processes or programs"
                         " or more (each is compared with the naive tracer's same process, as every stream is)")
    ap.add_argument("--streams", type=int,
                    help="the trace must hold exactly this many thread streams (every process's, with --processes)")
    ap.add_argument("--signals", metavar="HANDLER,...",
                    help="the program takes asynchronous signals, whose handlers are these procedures (the first:"
                         " the one the kernel calls), and prints `ticks N` on stderr, N the handler's calls: compare"
                         " the status and stdout only, and with callgrind (--callgrind) without the handlers, not"
                         " with the naive tracer (not async-signal-safe); the handler's entries regenerated must be"
                         " N, and at least 50 signal marks must have cut the path")
    ap.add_argument("--vfork", action="store_true",
                    help="the program vforks: the naive tracer asks for its process id at every block"
                         " (ATOMX_NAIVE_VFORK=1), so that a vfork child, which shares its parent's memory, has"
                         " files of its own")
    ap.add_argument("--threads-vary", action="store_true",
                    help="the program shares work between threads differently in each run: compare"
                         " how often each block ran over all threads, not each thread's sequence")
    ap.add_argument("--data", action="store_true",
                    help="trace with `atomx trace --data`; with --cachegrind, each function's Dr and Dw in"
                         " `regen --cachegrind-out`'s file must equal cachegrind's too (--cache-sim=yes)")
    ap.add_argument("--data-aside", action="append", default=[], metavar="PROC=REASON",
                    help="with --data, leave PROC out of the Dr/Dw comparison only (its Ir still compared)")
    ap.add_argument("--profile", help="trace with `atomx trace --profile FILE` (the dyninst or prof tool's JSON)")
    ap.add_argument("--stdin", help="a file every run of PROG reads as its standard input (default: /dev/null)")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("prog")
    ap.add_argument("args", nargs="*")
    o = ap.parse_args()
    prog = os.path.abspath(o.prog)
    global STDIN
    STDIN = o.stdin and os.path.abspath(o.stdin)
    o.atomx = os.path.abspath(o.atomx)
    aside = dict(s.split("=", 1) for s in o.set_aside)
    o.callgrind |= o.cachegrind or o.callgrind_threads
    w = o.work = tempfile.mkdtemp(prefix="atomx-regen.")
    try:
        # Every run is of a copy, W/p/NAME, which Valgrind gets stripped.
        os.mkdir(os.path.join(w, "p"))
        prog = shutil.copy2(prog, os.path.join(w, "p", os.path.basename(prog)))
        dirs = {k: os.path.join(w, k + ".d") for k in ("n", "t", "v", "c", "g")}
        for d in dirs.values():
            os.mkdir(d)
        cache = os.path.join(w, "cache")
        trace = os.path.join(w, "trace")
        failures = []
        native = run([prog] + o.args, dirs["n"], o.timeout)
        profile = ["--profile", os.path.abspath(o.profile)] if o.profile else []
        traced = run([o.atomx, "trace", "-q", "--cache-dir", cache, "-o", trace] + profile + (["--data"] if o.data else [])
                     + ["--", prog] + o.args,
                     dirs["t"], o.timeout)
        handlers = o.signals.split(",") if o.signals else []
        if handlers:
            aside.update({h: "a signal handler: it runs as often as the timer fires" for h in handlers})
        if (traced[:2] != native[:2]) if handlers else (traced != native):
            failures.append(f"program output changed when traced (status {native[0]} -> {traced[0]},"
                            f" stdout same: {native[1] == traced[1]}, stderr same: {native[2] == traced[2]})"
                            + (f"\n      {traced[2][-400:]!r}" if traced[2] != native[2] else ""))
        naive_tool = [os.path.join(HERE, "naive_inst.cpp"), os.path.join(HERE, "naive_anal.c")]
        naive_dir = os.path.join(w, "naive")
        os.mkdir(naive_dir)
        # The naive tracer's analysis routine is not async-signal-safe: with
        # --signals, callgrind is the oracle, beside the handler's count.
        naive = native if handlers else \
            run([o.atomx, "run"] + naive_tool + ["-q", "--cache-dir", cache, "--", prog] + o.args, dirs["v"],
                o.timeout, dict(os.environ, ATOMX_NAIVE_DIR=naive_dir, ATOMX_NAIVE_VFORK="1" if o.vfork else ""))
        if naive != native:
            failures.append(f"program output changed under the naive tracer (status {native[0]} -> {naive[0]})")
        if handlers:
            regen, problems = regen_blocks(o.atomx, trace)
            failures += problems
            sym = Symbols(prog)
            starts = [st for st, _, n in sym.syms if sym.canon[n] == handlers[0]]
            entries = sum(1 for t in regen.values() for a in t if a in starts)
            ticks = [int(l.split()[1]) for l in traced[2].decode(errors="replace").splitlines() if l.startswith("ticks ")]
            marks = sum(1 for l in subprocess.run([o.atomx, "regen", trace, "--blocks"], capture_output=True,
                                                  text=True).stdout.splitlines() if l.split()[1:2] == ["signal"])
            if not ticks or entries != ticks[-1]:
                failures.append(f"{handlers[0]} regenerated {entries} times, the program counted {ticks} calls")
            if marks < 50:
                failures.append(f"only {marks} signal(s) interrupted traced code")
            print(f"{marks} signals cut the regenerated path; {handlers[0]} ran {entries} times")
        if o.streams is not None:
            summary = subprocess.run([o.atomx, "regen", trace, "--summary"], capture_output=True, text=True).stdout.split()
            streams = int(summary[summary.index("threads") + 1]) if "threads" in summary else 0
            if streams != o.streams:
                failures.append(f"{streams} thread stream(s) regenerated, {o.streams} expected")
        # What the trace leaves out (outside code: regen --untraced says why)
        # is left out of the naive tracer's sequence and of the comparison.
        untraced = subprocess.run([o.atomx, "regen", trace, "--untraced"], capture_output=True, text=True).stdout
        spans = [(int(f[1], 16), int(f[2], 16), f[0]) for f in (l.split(None, 3) for l in untraced.splitlines())]
        outside = lambda a: any(s <= a < e for s, e, _ in spans)  # noqa: E731
        # Each thread of each process compared with the naive tracer's same
        # thread, both named by their place (keyed(): ids differ between runs).
        regen, expected = {}, {}
        if not handlers:
            regen, problems = trace_streams(o.atomx, trace, w)
            failures += problems
            expected = naive_streams(naive_dir, outside)
        processes = {k[:2] for k in regen}  # (process, program)
        if o.processes and len(processes) < 2:
            failures.append(f"--processes: the trace holds the streams of {len(processes)} process(es) and program(s)")
        keys = sorted(k for k in set(regen) | set(expected) if regen.get(k, ([], ""))[0] or expected.get(k, ([], ""))[0])
        blocks = 0
        if o.threads_vary:
            mine = collections.Counter(a for t, _ in regen.values() for a in t)
            theirs = collections.Counter(a for t, _ in expected.values() for a in t)
            blocks = sum(theirs.values())
            for a in sorted(set(mine) | set(theirs)):
                if mine[a] != theirs[a]:
                    failures.append(f"block {hex(a)} ran {mine[a]} times in the regenerated threads, {theirs[a]} in the naive tracer's")
            keys = []
        for key in keys:
            if key not in expected or key not in regen:
                failures.append(f"{who(key)}: " + (f"regenerated ({regen[key][1]}), the naive tracer has no such thread"
                                                   if key in regen else f"the naive tracer's ({expected[key][1]}), no stream regenerated"))
                continue
            (a, stream), (b, _) = regen[key], expected[key]
            blocks += len(b)
            if a != b:
                k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
                failures.append(f"{who(key)}: block {k} of {len(b)} differs: regen {hex(a[k]) if k < len(a) else 'end'},"
                                f" naive {hex(b[k]) if k < len(b) else 'end'} (regen has {len(a)} blocks; {stream})")
        compared = 0
        if o.callgrind:
            mine = regen_counts(o.atomx, trace)
            ours = regen_thread_counts(o.atomx, trace) if o.callgrind_threads else {}
            mine_cg = os.path.join(w, "regen.cg")
            r = subprocess.run([o.atomx, "regen", trace, "--cachegrind-out", mine_cg], capture_output=True, text=True)
            if r.returncode != 0:
                failures.append(f"atomx regen --cachegrind-out exited {r.returncode}: {r.stderr.strip()}")
            report = os.path.join(w, "report.json")
            subprocess.run([o.atomx, prog, "-o", os.devnull, "-q", "--report", report], check=True)
            with open(report) as f:
                unmoved = {p["name"] for p in json.load(f).get("unmoved", [])}
            sym = Symbols(prog)
            names = {sym.canon[n] for s, _, n in sym.syms if n not in unmoved and not outside(s)} - set(aside)
            # Valgrind counts _start's code as "(below main)" with libc's, and
            # on clang's builds not at all: it is compared with the naive
            # tracer only (as the other callgrind oracles leave it out).
            names.discard(sym.canon.get("_start"))
            reps = rep_addresses(prog)
            # Valgrind runs the program without its DWARF (function symbols
            # kept): Valgrind 3.19 cannot read clang 14's DWARF 5, and names
            # functions by their symbols either way.  In place, at the same
            # path: the work of some programs depends on their path (gzip's
            # last_component, the strings lua hashes).  The trace no longer
            # matches its program file from here on.
            lines_dir = addr_line = None
            if o.per_line and o.cachegrind:
                # The line oracle first, while the program has its line
                # table (gcc's DWARF 5 Valgrind reads), and each rep-prefixed
                # instruction's line.
                lines_dir = os.path.join(w, "cachegrind.lines")
                os.mkdir(lines_dir)
                valgrind(o, prog, dirs["g"], ["--tool=cachegrind", "--cache-sim=no", "--vex-guest-chase=no",
                                              f"--cachegrind-out-file={lines_dir}/cachegrind.out.%p"])
                where = {}
                if reps:
                    out = subprocess.run(["addr2line", "-e", prog] + [hex(a) for a in sorted(reps)],
                                         capture_output=True, text=True, check=True).stdout.split()
                    for a, fl_ln in zip(sorted(reps), out):
                        fl, _, ln = fl_ln.rpartition(":")
                        where[a] = (os.path.basename(fl), int(ln) if ln.isdigit() else 0)
                addr_line = lambda a: where.get(a, ("??", 0))  # noqa: E731
            subprocess.run(["objcopy", "--strip-debug", prog], check=True)
            cgdir = os.path.join(w, "cg")
            os.mkdir(cgdir)
            valgrind(o, prog, dirs["c"], ["--tool=callgrind", "--dump-instr=yes", "--collect-jumps=yes", "--compress-pos=no",
                                        "--skip-plt=no", f"--callgrind-out-file={cgdir}/cg.%p"]
                     + (["--separate-threads=yes"] if o.callgrind_threads else [])
                     # A forked child's file would hold its parent's costs up
                     # to the fork too, which regen gives the parent only:
                     # each process dumps (and zeroes) its costs before fork.
                     + (["--dump-before=*fork*"] if o.processes else []))
            cgfiles = [os.path.join(cgdir, f) for f in sorted(os.listdir(cgdir))]
            base = os.path.basename(prog)

            def callgrind_counts(files):
                """{address of a compared procedure: executions} over `files`."""
                cg = collections.Counter()
                for cgout in files:
                    for fn, addr, ir in callgrind_file.costs(cgout, base, "Ir"):
                        if sym(addr) in names and addr not in reps:
                            cg[addr] += ir
                for addr, n in callgrind_file.executions(files, base, reps).items():
                    if sym(addr) in names:
                        cg[addr] += n
                return cg
            cg = callgrind_counts(cgfiles)
            mine = {a: n for a, n in mine.items() if sym(a) in names}
            diffs = [(a, mine.get(a, 0), cg.get(a, 0)) for a in sorted(set(mine) | set(cg)) if mine.get(a, 0) != cg.get(a, 0)]
            compared = sum(cg.values())
            for a, m, c in diffs[:20]:
                failures.append(f"{hex(a)} ({sym(a)}): regenerated {m} times, callgrind Ir {c}")
            if len(diffs) > 20:
                failures.append(f"... {len(diffs)} addresses differ in all")
            if o.callgrind_threads:
                # Valgrind numbers a process's threads in the order they
                # were made (cg.PID-01 the main thread's), as keyed() ranks
                # them: thread k of each with the regenerated thread k.
                theirs = {int(f.rsplit("-", 1)[1]): callgrind_counts([os.path.join(cgdir, f)])
                          for f in os.listdir(cgdir) if "-" in f}
                if sorted(theirs) != sorted(ours):
                    failures.append(f"threads: callgrind's {sorted(theirs)}, regenerated {sorted(ours)}")
                for k in sorted(set(theirs) & set(ours)):
                    m = {a: n for a, n in ours[k].items() if sym(a) in names}
                    d = [a for a in sorted(set(m) | set(theirs[k])) if m.get(a, 0) != theirs[k].get(a, 0)]
                    for a in d[:5]:
                        failures.append(f"thread {k}: {hex(a)} ({sym(a)}): regenerated {m.get(a, 0)} times,"
                                        f" callgrind Ir {theirs[k].get(a, 0)} in that thread")
                    if len(d) > 5:
                        failures.append(f"thread {k}: ... {len(d)} addresses differ in all")
            if o.cachegrind:
                functions, lines, shared, problems = cachegrind_check(o, prog, mine_cg, dirs["g"], w, sym, names, reps,
                                                                      cgfiles, base, lines_dir, addr_line)
                failures += problems
        if failures:
            print(f"FAIL {o.prog}: {len(failures)} problem(s)")
            for f in failures[:40]:
                print("   ", f)
            return 1
        print(f"PASS {o.prog}: " + (f"{len(regen)} stream(s) of {len(processes)} process(es) and program(s), {blocks} blocks equal to"
                                    f" the naive tracer's" if not handlers else "every thread, cut by signals")
              + (" (per block over all threads)" if o.threads_vary else "")
              + (f"; {compared} instructions, each address equal to callgrind's Ir" if o.callgrind else "")
              + (", thread by thread too" if o.callgrind_threads else "")
              + (f"; {functions} functions' Ir{', Dr and Dw' if o.data else ''} equal to cachegrind's"
                 if o.cachegrind else "")
              + (f", {lines} source lines' too, and cg_annotate reads the file" if o.cachegrind and o.per_line else "")
              + (f" (not compared, another object has one of the name: "
                 f"{', '.join(f'{k} ({min(v)})' for k, v in sorted(shared.items()))})" if o.cachegrind and shared else "")
              + (f"; set aside: {', '.join(f'{k} ({v})' for k, v in aside.items())}" if aside else "")
              + (f"; Dr/Dw set aside: {', '.join(o.data_aside)}" if o.data_aside else "")
              + (f"; untraced: {len(spans)} procedure(s) ({', '.join(n for _, _, n in spans[:4])}"
                 f"{', ...' if len(spans) > 4 else ''})" if spans else ""))
        return 0
    finally:
        if o.keep:
            print("kept", w)
        else:
            shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
