#!/usr/bin/env python3
"""A whole workload traced with no preparation (`atomx trace -- COMMAND`).

    workload.py --atomx ATOMX [--programs N] [--untraced-argv WORD]... [--vfork] [--follow]
                [--data] -- COMMAND [ARGS...]

Runs COMMAND natively, under `strace -f -e trace=execve` (natively: strace
is the oracle of which programs the workload execs), and traced together
with the naive tracer (`atomx trace --with naive_inst.cpp naive_anal.c`: a
call before every block, in the very same processes), and checks:
  - the traced workload's status, stdout and stderr are the native ones;
  - the trace holds N programs or more (--programs), each stream tied to
    one of them by the event log (`program K HOW PATH`);
  - every stream, regenerated alone (a directory with the trace's other
    files and that one stream) with the program the trace ties it to,
    regenerates to its end, and its block sequence equals, entry for entry,
    the naive tracer's same thread of the same process and program
    (naive.PID.TID.K, K as in thread.TID-K.axt; what `regen --untraced`
    lists for that program left out of the naive tracer's);
  - the execs the trace's event log records (`program K exec PATH`,
    `untraced PATH ARGV...`) are strace's successful execve calls: the
    same programs, as many times each; an untraced one with strace's argv;
  - each --untraced-argv command line (its words joined by spaces) is one
    of the untraced processes `atomx regen --untraced` lists.
--data: the workload is traced with data references (`atomx trace --data`),
and the naive tracer also calls before every instruction that accesses
memory (its `data` argument, data_oracle.py's): each stream's data
references, regenerated alone, must equal the naive tracer's same thread's,
entry for entry (instruction, R/W/M, address, size).
A failure names the process, its program and the thread.  Exit status 0
when everything matches; 1 with the differences listed.
--vfork: the workload vforks; the naive tracer asks for the process id at
every block (ATOMX_NAIVE_VFORK=1), so that a vfork child's blocks are its own.
ATOMX_TEST_WRONG_PROGRAM=1 (the must-fail twin) reads every stream with the
next program of the trace; ATOMX_TEST_REGEN_REF=N (with --data) moves the
Nth reference of every stream; ATOMX_TEST_DROP_UNTRACED=1 makes the supervisor
leave out its untraced lines.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import data_oracle  # noqa: E402


def run(cmd, env=None, timeout=300):
    p = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def unescape(word):
    """A word of an `untraced` line: \\ooo octal escapes (driver::escapeWord)."""
    if word == "\\000":
        return ""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), word)


def strace_execs(path):
    """Successful execve calls in an `strace -f -s 65536` file: [(path, argv)]."""
    started, out = {}, []
    with open(path) as f:
        for line in f:
            m = re.match(r"(\d+)\s+(.*)", line)
            pid, rest = (m.group(1), m.group(2)) if m else ("0", line)
            call = re.match(r'execve\("((?:[^"\\]|\\.)*)", \[(.*?)\](?:, .*)?(?:<unfinished \.\.\.>|\) += (-?\d+))', rest)
            if call:
                args = [bytes(a, "utf-8").decode("unicode_escape") for a in re.findall(r'"((?:[^"\\]|\\.)*)"', call.group(2))]
                entry = (bytes(call.group(1), "utf-8").decode("unicode_escape"), args)
                if call.group(3) is None:
                    started[pid] = entry
                elif call.group(3) == "0":
                    out.append(entry)
                continue
            resumed = re.match(r"<\.\.\. execve resumed>.*\) += (-?\d+)", rest)
            if resumed and pid in started:
                entry = started.pop(pid)
                if resumed.group(1) == "0":
                    out.append(entry)
    return out


def trace_events(trace):
    """The event log in file order: [(pid, tid, kind, detail)]."""
    out = []
    with open(os.path.join(trace, "events")) as f:
        for line in f:
            ns, pid, tid, kind, *rest = line.rstrip("\n").split(" ", 4)
            out.append((int(pid), int(tid), kind, rest[0] if rest else ""))
    return out


def stream_owner(events):
    """{stream file: (pid, program K)}: its process, and the program that
    process ran when it opened the stream (1 when no line names one)."""
    running, out = {}, {}
    for pid, _, kind, detail in events:
        if kind == "program":
            running[pid] = int(detail.split()[0])
        elif kind == "untraced":
            running[pid] = 0
        elif kind == "stream":
            out[detail] = (pid, running.get(pid, 1))
    return out


def alone(trace, stream, w):
    """A directory with the trace's other files and that one stream."""
    d = tempfile.mkdtemp(dir=w, prefix="stream.")
    for f in os.listdir(trace):
        if not f.endswith(".axt") or f == stream:
            os.symlink(os.path.join(trace, f), os.path.join(d, f))
    return d


def regen_alone(atomx, d):
    """[block start, ...] of the stream of directory d (alone()), and the problems."""
    p = subprocess.run([atomx, "regen", d, "--blocks", "-q"], capture_output=True, text=True)
    blocks = []
    for line in p.stdout.splitlines():
        f = line.split()
        if f[1] not in ("call", "signal", "sigreturn") and f[-1] != "continued":
            blocks.append(int(f[1], 16))
    problems = [l for l in p.stderr.splitlines() if "problem" in l or "error" in l]
    if p.returncode != 0 and not problems:
        problems.append(f"atomx regen exited {p.returncode}: {p.stderr.strip()[-300:]}")
    return blocks, problems


def untraced_listing(atomx, trace):
    """`regen --untraced`: {program K: [(start, end)]}, [(pid, [path, argv...])]."""
    p = subprocess.run([atomx, "regen", trace, "--untraced"], capture_output=True, text=True)
    spans, processes, k = collections.defaultdict(list), [], 1
    for line in p.stdout.splitlines():
        f = line.split(" ")
        if f[0] == "program":
            k = int(f[1])
        elif f[0] == "process":
            processes.append((int(f[1]), f[2:]))
        else:
            spans[k].append((int(f[1], 16), int(f[2], 16)))
    return spans, processes, p.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--programs", type=int, default=1)
    ap.add_argument("--untraced-argv", action="append", default=[])
    ap.add_argument("--vfork", action="store_true")
    ap.add_argument("--follow", action="store_true", help="atomx trace -f (COMMAND's program is instrumentable)")
    ap.add_argument("--data", action="store_true", help="atomx trace --data: compare each stream's data references too")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    o = ap.parse_args()
    cmd = o.command[1:] if o.command[:1] == ["--"] else o.command
    atomx = os.path.abspath(o.atomx)
    w = tempfile.mkdtemp(prefix="atomx-workload.")
    failures = []
    try:
        native = run(cmd)
        st = run(["strace", "-f", "-qq", "-s", "65536", "-e", "trace=execve", "-o", os.path.join(w, "strace")] + cmd)
        if st[:2] != native[:2]:
            failures.append(f"the workload under strace differs from native (status {native[0]} -> {st[0]})")
        trace, naive_dir = os.path.join(w, "trace"), os.path.join(w, "naive")
        os.mkdir(naive_dir)
        tool = [x for f in ("naive_inst.cpp", "naive_anal.c") for x in ("--with", os.path.join(HERE, f))]
        if o.data:
            tool = ["--data"] + tool + ["--with-arg", "data"]
        traced = run([atomx, "trace", "-q"] + (["-f"] if o.follow else []) + ["--cache-dir", os.path.join(w, "cache"), "-o", trace] + tool + ["--"] + cmd,
                     dict(os.environ, ATOMX_NAIVE_DIR=naive_dir, ATOMX_NAIVE_VFORK="1" if o.vfork else ""))
        if traced != native:
            failures.append(f"the workload's output changed when traced (status {native[0]} -> {traced[0]},"
                            f" stdout same: {native[1] == traced[1]}, stderr same: {native[2] == traced[2]})"
                            + (f"\n      {traced[2][-400:]!r}" if traced[2] != native[2] else ""))
        manifest = dict(l.split(" ", 1) for l in open(os.path.join(trace, "manifest")).read().splitlines())
        paths = {1: manifest["program"]}
        for key, value in manifest.items():
            if key.startswith("program-") and key[8:].isdigit():
                paths[int(key[8:])] = value.split(" ", 3)[3]
        if len(paths) < o.programs:
            failures.append(f"the trace holds {len(paths)} program(s), {o.programs} expected: {sorted(paths.values())}")
        events = trace_events(trace)
        owner = stream_owner(events)
        spans, processes, status = untraced_listing(atomx, trace)
        if status != 0:
            failures.append(f"atomx regen --untraced exited {status}")
        # Each stream against the naive tracer's file of the same process,
        # thread and program (K: the programs exec'd in that thread before).
        naive = {}
        for f in os.listdir(naive_dir):
            if f.startswith("naive.") and f != "naive.index":
                naive[tuple(map(int, f.split(".")[1:]))] = os.path.join(naive_dir, f)
        compared = set()
        references = 0
        streams = sorted(f for f in os.listdir(trace) if f.startswith("thread.") and f.endswith(".axt"))
        for s in streams:
            tid, _, k = s[len("thread."):-len(".axt")].partition("-")
            tid, k = int(tid), int(k or 0)
            if s not in owner:
                failures.append(f"{s}: no `stream` event names its process")
                continue
            pid, prog = owner[s]
            who = f"process {pid} running {os.path.basename(paths.get(prog, '?'))} (program {prog}), thread {tid} ({s})"
            d = alone(trace, s, w)
            blocks, problems = regen_alone(atomx, d)
            failures += [f"{who}: {p}" for p in problems]
            compared.add((pid, tid, k))
            outside = spans.get(prog, [])
            inside = lambda a: not any(b <= a < e for b, e in outside)  # noqa: E731
            expected, expected_refs = [], []
            if (pid, tid, k) in naive:
                with open(naive[pid, tid, k], "rb") as fh:
                    text = fh.read().split(b"\0", 1)[0].decode()
                for line in text.splitlines():
                    x = line.split()
                    if len(x) == 1 and inside(int(x[0], 16)):
                        expected.append(int(x[0], 16))
                    elif x[0] == "X":
                        failures.append(f"{who}: the naive tracer cannot give the references of the instruction at {x[1]}")
                    elif x[0] in ("R", "W", "M") and inside(int(x[1], 16)):
                        expected_refs.append(data_oracle.Ref(int(x[1], 16), x[0], int(x[2], 16), int(x[3])))
            if blocks != expected:
                at = next((i for i, (a, b) in enumerate(zip(blocks, expected)) if a != b), min(len(blocks), len(expected)))
                failures.append(f"{who}: {len(blocks)} blocks regenerated, the naive tracer's {len(expected)}; "
                                f"first difference at block {at}")
            if o.data:
                threads, signals, problems = data_oracle.regen_refs(atomx, d)
                failures += [f"{who}: {p}" for p in problems]
                refs = threads.get(tid, [])
                expected_refs = data_oracle.without_faults(expected_refs, refs, signals.get(tid, []))
                references += len(expected_refs)
                if refs != expected_refs:
                    at = next((i for i, (a, b) in enumerate(zip(refs, expected_refs)) if a != b),
                              min(len(refs), len(expected_refs)))
                    show = data_oracle.show
                    failures.append(f"{who}: reference {at} of {len(expected_refs)} differs: regen "
                                    f"{show(refs[at] if at < len(refs) else None)}, naive "
                                    f"{show(expected_refs[at] if at < len(expected_refs) else None)} (regen has {len(refs)})")
        if o.data and references == 0:
            failures.append("no data reference to compare")
        for key in sorted(set(naive) - compared):
            with open(naive[key], "rb") as fh:
                if fh.read().split(b"\0", 1)[0].split():
                    failures.append(f"process {key[0]}, thread {key[1]} (naive.{key[0]}.{key[1]}.{key[2]}): "
                                    "the naive tracer saw blocks, the trace has no stream")
        # The execs: the event log's against strace's.
        logged = []
        for pid, _, kind, detail in events:
            if kind == "untraced":
                words = [unescape(x) for x in detail.split(" ")]
                logged.append((words[0], words[1:]))
        seen = collections.Counter()
        for pid, _, kind, detail in events:
            if kind == "program" and detail.split(" ")[1] == "exec":
                seen[detail.split(" ", 2)[2]] += 1
        expected_execs = strace_execs(os.path.join(w, "strace"))
        real = lambda p: os.path.realpath(p)  # noqa: E731
        untraced_seen = collections.Counter((real(p), tuple(a)) for p, a in logged)
        traced_seen = collections.Counter({real(p): n for p, n in seen.items()})
        for p, a in expected_execs:
            key = (real(p), tuple(a))
            if untraced_seen[key]:
                untraced_seen[key] -= 1
            elif traced_seen[real(p)]:
                traced_seen[real(p)] -= 1
            else:
                failures.append(f"exec of {p} {a} (strace) is not in the trace's event log")
        for (p, a), n in untraced_seen.items():
            if n:
                failures.append(f"untraced exec of {p} {list(a)} in the trace's event log, not in strace's")
        for words in o.untraced_argv:
            if not any(" ".join(argv[1:]) == words for _, argv in processes):
                failures.append(f"`atomx regen --untraced` does not list an untraced process running `{words}`: "
                                f"{[' '.join(a[1:]) for _, a in processes]}")
        if failures:
            for f in failures:
                print(f"FAIL {f}")
            return 1
        print(f"PASS {len(streams)} stream(s) of {len(paths)} program(s) equal to the naive tracer's"
              + (f" ({references} data references)" if o.data else "") + ", "
              f"{len(expected_execs)} exec(s) as strace saw them ({len(logged)} untraced)")
        return 0
    finally:
        if o.keep:
            print(f"kept {w}")
        else:
            shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
