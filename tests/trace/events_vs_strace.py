#!/usr/bin/env python3
"""A trace's event log (`atomx regen --events`) against strace of the same run.

    events_vs_strace.py ATOMX PROG [ARGS...]

Traces PROG ARGS with `atomx trace` under `strace -f` and checks the log
against what strace saw the kernel do:
  - a `process` event for exactly the processes that exec'd the traced
    program (the instrumented file, or /proc/self/exe from one of them),
    each naming its parent;
  - a `fork CHILD` event for exactly the fork()s of those processes (a
    clone that shares neither memory nor the thread group), and a `forked`
    event in each child;
  - a `vfork CHILD` event for exactly their vfork()s through the GOT (the
    system call vfork: posix_spawn's clone is not one), and a `vforked`
    event in each child;
  - a `thread` event for exactly the threads they started (clones in the
    thread group), besides one per process, but for the recorder's writer
    threads: each named by a `writer TID` event, a clone in the thread
    group of that event's process;
  - an `exec FILE` event before each execve they made, with its file
    (but posix_spawn's, which libc makes from inside: its new process has
    its `process` event);
  - a `stream` event for each stream file in the trace, and no other;
  - in each process, times that do not decrease, and `exit` last.
Exit status 0 when all hold.
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

CALL = re.compile(r"^(\d+) +(\w+)\((.*)\) += (-?\d+)")
RESUMED = re.compile(r"^(\d+) +<\.\.\. (\w+) resumed>(.*)\) += (-?\d+)")
UNFINISHED = re.compile(r"^(\d+) +(\w+)\((.*) <unfinished \.\.\.>$")


def strace_calls(path):
    """(pid, syscall, arguments text, result) of every finished call, in the
    order the calls began: a call strace shows unfinished is placed where it
    began, so that a clone comes before anything its child does (under load
    the child's execve can be printed before its parent's clone returns)."""
    calls, pending = [], {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = UNFINISHED.match(line)
            if m:
                pending[m.group(1)] = len(calls)
                calls.append([int(m.group(1)), m.group(2), m.group(3), None])
                continue
            m = RESUMED.match(line)
            if m and m.group(1) in pending:
                call = calls[pending.pop(m.group(1))]
                call[2] += m.group(3)
                call[3] = int(m.group(4))
                continue
            m = CALL.match(line)
            if m:
                calls.append([int(m.group(1)), m.group(2), m.group(3), int(m.group(4))])
    return [tuple(c) for c in calls if c[3] is not None]


def main():
    atomx, prog, args = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3:]
    w = tempfile.mkdtemp(prefix="atomx-events.")
    try:
        cache, trace, log = os.path.join(w, "cache"), os.path.join(w, "trace"), os.path.join(w, "strace")
        base = [atomx, "trace", "-q", "--cache-dir", cache, "-o", trace, "--", prog] + args
        subprocess.run(base, cwd=w, capture_output=True, timeout=600)  # instruments (into the cache)
        subprocess.run(["strace", "-f", "-qq", "-s", "4096", "-o", log, "-e", "trace=execve,clone,clone3,fork,vfork"]
                       + base, cwd=w, capture_output=True, timeout=600)
        traced_file = next(os.path.join(cache, f) for f in os.listdir(cache) if ".trace." in f and "." not in f.split(".trace.")[1])
        events = []
        for line in subprocess.run([atomx, "regen", trace, "--events"], capture_output=True, text=True,
                                   check=True).stdout.splitlines():
            t, pid, tid, kind, *detail = line.split(None, 4)
            events.append((int(t), int(pid), int(tid), kind, detail[0] if detail else ""))

        # What strace saw: processes running the traced program, and what they did.
        traced, started, spawned = set(), set(), set()  # running the traced image; exec'd into it; posix_spawn's
        parent, group = {}, {}  # a task's parent (the task that cloned it); a thread's process
        want_forks, want_vforks, want_threads, want_execs = set(), set(), set(), []
        for pid, name, a, result in strace_calls(log):
            if name in ("clone", "clone3", "fork", "vfork") and result > 0:
                parent[result] = pid
                group[result] = group.get(pid, pid) if "CLONE_THREAD" in a else result
                if pid not in traced:
                    continue
                traced.add(result)  # the child runs its parent's image
                if "CLONE_THREAD" in a:
                    want_threads.add(result)
                elif name == "vfork":
                    want_vforks.add((pid, result))  # the program's, through the recorder's wrapper
                elif "CLONE_VM" in a:
                    spawned.add(result)  # posix_spawn: it execs from inside libc, unseen by the recorder
                else:
                    want_forks.add((pid, result))
            elif name == "execve":
                path = a.split('"')[1]
                if pid in traced and pid not in spawned:
                    want_execs.append((pid, path))
                if result == 0:
                    spawned.discard(pid)
                    if path == traced_file or (path == "/proc/self/exe" and pid in traced):
                        traced.add(pid)
                        started.add(pid)
                    else:
                        traced.discard(pid)
        problems = []

        def same(what, got, want):
            if got != want:
                problems.append(f"{what}: the log has {sorted(got - want)} that strace did not see, "
                                f"strace saw {sorted(want - got)} that the log lacks")

        processes = {(p, int(d)) for _, p, _, k, d in events if k == "process"}
        same("processes (pid, parent)", processes,
             {(p, parent[p]) for p in started})
        same("forks (parent, child)", {(p, int(d)) for _, p, _, k, d in events if k == "fork"}, want_forks)
        same("forked children (child, parent)", {(p, int(d)) for _, p, _, k, d in events if k == "forked"},
             {(c, p) for p, c in want_forks})
        same("vforks (parent, child)", {(p, int(d)) for _, p, _, k, d in events if k == "vfork"}, want_vforks)
        same("vforked children (child, parent)", {(p, int(d)) for _, p, _, k, d in events if k == "vforked"},
             {(c, p) for p, c in want_vforks})
        writers = {(p, int(d)) for _, p, _, k, d in events if k == "writer"}
        same("writer threads (process, thread)", writers, {(p, t) for p, t in writers if t in want_threads and group.get(t) == p})
        same("threads", {t for _, p, t, k, _ in events if k == "thread"},
             (want_threads - {t for _, t in writers}) | {p for p, _ in processes})
        got_execs = sorted((p, d) for _, p, _, k, d in events if k == "exec")
        if got_execs != sorted(want_execs):
            problems.append(f"execs: the log has {got_execs}, strace saw {sorted(want_execs)}")
        files = {f for f in os.listdir(trace) if f.endswith(".axt")}
        streams = [d for _, _, _, k, d in events if k == "stream"]
        if sorted(streams) != sorted(files):
            problems.append(f"stream events {sorted(streams)} but stream files {sorted(files)}")
        by_process = collections.defaultdict(list)
        for e in events:
            by_process[e[1]].append(e)
        for p, es in by_process.items():
            kinds = [k for _, _, _, k, _ in es]
            if "exit" in kinds and kinds.index("exit") != len(kinds) - 1:
                problems.append(f"process {p}: events after its exit: {kinds}")
            times = [t for t, *_ in es]
            if times != sorted(times):
                problems.append(f"process {p}: its events' times decrease")
        if not events:
            problems.append("no event log")
        if problems:
            print(f"FAIL {prog}: {len(problems)} problem(s)")
            for p in problems:
                print("   ", p)
            return 1
        print(f"PASS {prog}: {len(events)} events; {len(processes)} process(es), {len(want_forks)} fork(s),"
              f" {len(want_vforks)} vfork(s),"
              f" {len(want_threads) - len(writers)} thread(s) started, {len(writers)} writer thread(s),"
              f" {len(want_execs)} exec(s), {len(files)} stream(s),"
              " each as strace saw it")
        return 0
    finally:
        shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
