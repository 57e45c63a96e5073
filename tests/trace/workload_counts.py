#!/usr/bin/env python3
"""workload_counts.py --atomx ATOMX [--merge] -- COMMAND...

`atomx regen --counts` and `--cachegrind-out` on a workload's trace
(docs/trace.md, "Tracing a whole workload"), checked per program.  COMMAND
(a pipeline of two different instrumentable programs) is traced whole;
the oracle is the plain text trace (`TID PC` lines, each thread's own
regeneration with its own program), each thread's lines given to the
program its process exec'd as the event log says (`program K exec PATH`,
read here, not by atomx), so:
  - `--counts` must give, for each program K, after its `program K PATH`
    line (none for the first), exactly the text trace's count of each
    address of K's threads;
  - `--cachegrind-out CG` must write CG for program 1 and CG.K for program
    K, each read by cg_annotate (the format's own reader), its cmd: line
    naming K's file, its total Ir that of K's threads, and its Ir per
    function equal to the text trace's instructions of K's threads that
    fall in that function's symbol (nm of K's file; atomx's procedures are
    the symbols, a `.cold` part its own);
--merge: the same outputs through `regen --merge` (one shard of every
thread) must be the same.
--cachesim CONFIG: and `atomx cachesim TRACE --config CONFIG --json`
(and with --merged) must give each function of program K its threads' Ir
as above, under its own name for the first program and `FILE:NAME` (FILE
K's file name) for the others, and no other function any Ir.
The twin runs atomx with ATOMX_TEST_COUNTS_ONE_PROGRAM=1 (every program's
counts under the first, as before they were per program): the program
whose counts differ is named.
"""
import argparse
import json
import bisect
import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise SystemExit(f"FAIL {' '.join(map(str, cmd))} exited {r.returncode}:\n{r.stderr[-2000:]}")
    return r.stdout


def symbols(path):
    """(start, size, name) of the function symbols of `path`, sorted by start; a symbol nm gives no size
    (crtstuff's deregister_tm_clones, frame_dummy, ...) reaches to the next one."""
    syms = []
    for line in run(["nm", "-S", "--defined-only", str(path)]).splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTwW":
            syms.append([int(f[0], 16), int(f[1], 16), f[3]])
        elif len(f) == 3 and f[1] in "tTwW":
            syms.append([int(f[0], 16), None, f[2]])
    syms.sort(key=lambda s: s[0])
    for i, s in enumerate(syms):
        if s[1] is None:
            s[1] = syms[i + 1][0] - s[0] if i + 1 < len(syms) else 1
    return [tuple(s) for s in syms if s[1] > 0]


def function_of(syms, starts, pc):
    i = bisect.bisect_right(starts, pc) - 1
    if i >= 0 and syms[i][0] <= pc < syms[i][0] + syms[i][1]:
        return syms[i][2]
    return None


def parse_counts(text):
    """{K: {pc: n}} from --counts' output."""
    out, k = collections.defaultdict(dict), 1
    for line in text.splitlines():
        f = line.split()
        if f[0] == "program":
            k = int(f[1])
            out[k]
        else:
            out[k][int(f[0], 16)] = int(f[1])
    return out


def parse_cachegrind(path):
    """(cmd, total Ir, {fn: Ir}) of a cachegrind file (Ir the first event)."""
    cmd, total, per, fn = None, None, collections.Counter(), None
    for line in path.read_text().splitlines():
        if line.startswith("cmd:"):
            cmd = line[4:].strip()
        elif line.startswith("fn="):
            fn = line[3:]
        elif line.startswith("summary:"):
            total = int(line.split()[1])
        elif line and line[0].isdigit() and fn is not None:
            per[fn] += int(line.split()[1])
    return cmd, total, per


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--cachesim", metavar="CONFIG")
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        t = Path(work) / "t"
        r = subprocess.run([a.atomx, "trace", "-q", "--no-schedule", "-o", str(t), "--", *a.cmd],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            print(f"FAIL atomx trace exited {r.returncode}:\n{r.stderr[-2000:]}")
            return 1
        # Which program each process ran: the event log's `program K exec PATH` lines.
        program_of_pid, path_of = {}, {}
        for line in (t / "events").read_text().splitlines():
            f = line.split()
            if len(f) >= 6 and f[3] == "program":
                program_of_pid[int(f[1])] = int(f[4])
                path_of[int(f[4])] = f[6] if f[5] in ("exec", "fork") else f[5]
        pid_of_tid = {}
        for line in (t / "events").read_text().splitlines():
            f = line.split()
            pid_of_tid.setdefault(int(f[2]), int(f[1]))
        if len(path_of) < 2:
            print(f"FAIL the workload ran {len(path_of)} traced program(s); the test wants two or more")
            return 1
        # The oracle: the text trace's lines per program.
        oracle = collections.defaultdict(collections.Counter)
        for line in run([a.atomx, "regen", "-q", str(t)]).splitlines():
            f = line.split()
            if len(f) == 2 and not line.startswith(" ") and f[1] not in ("call",):
                oracle[program_of_pid[pid_of_tid[int(f[0])]]][int(f[1], 16)] += 1
        problems = []
        env = dict(os.environ)
        for mode in ([], ["--merge"]):
            cg = Path(work) / f"cg{'-merged' if mode else ''}"
            counts = parse_counts(run([a.atomx, "regen", "-q", str(t), *mode, "--counts", "--cachegrind-out", str(cg)], env=env))
            for k in sorted(path_of):
                what = f"{' '.join(['regen', *mode])}: program {k} ({Path(path_of[k]).name})"
                got, want = counts.get(k, {}), oracle[k]
                if got != want:
                    diff = sorted(pc for pc in set(got) | set(want) if got.get(pc, 0) != want.get(pc, 0))
                    pc = diff[0]
                    problems.append(f"{what}: --counts differs from its threads' text trace at {len(diff)} address(es), "
                                    f"first {pc:#x}: {got.get(pc, 0)} against {want.get(pc, 0)}")
                f = cg if k == 1 else Path(f"{cg}.{k}")
                if not f.exists():
                    problems.append(f"{what}: no cachegrind file {f.name}")
                    continue
                run(["cg_annotate", str(f)])
                cmd, total, per = parse_cachegrind(f)
                if not cmd or not cmd.startswith(path_of[k]):
                    problems.append(f"{what}: {f.name}'s cmd: line is {cmd!r}, not program {k}'s file")
                if total != sum(want.values()):
                    problems.append(f"{what}: {f.name}'s total Ir is {total}, its threads ran {sum(want.values())}")
                syms = symbols(path_of[k])
                starts = [s[0] for s in syms]
                by_fn = collections.Counter()
                for pc, n in want.items():
                    by_fn[function_of(syms, starts, pc) or "???"] += n
                differ = sorted(fn for fn in set(per) | set(by_fn) if per.get(fn, 0) != by_fn.get(fn, 0))
                if differ:
                    fn = differ[0]
                    problems.append(f"{what}: {f.name}'s Ir of {len(differ)} function(s) differ from nm's symbols over "
                                    f"the text trace, first {fn}: {per.get(fn, 0)} against {by_fn.get(fn, 0)}")
        if a.cachesim:
            want = collections.Counter()
            for k in sorted(path_of):
                syms = symbols(path_of[k])
                starts = [s[0] for s in syms]
                for pc, n in oracle[k].items():
                    fn = function_of(syms, starts, pc) or "???"
                    want[fn if k == 1 else f"{Path(path_of[k]).name}:{fn}"] += n
            for mode in ([], ["--merged"]):
                j = Path(work) / f"cachesim{'-merged' if mode else ''}.json"
                run([a.atomx, "cachesim", "-q", str(t), *mode, "--config", a.cachesim, "--json", str(j), "-o", os.devnull],
                    env=env)
                for c in json.loads(j.read_text())["configurations"]:
                    got = collections.Counter({p["name"]: p["Ir"] for p in c["procedures"] if p["Ir"]})
                    differ = sorted(fn for fn in set(got) | set(want) if got.get(fn, 0) != want.get(fn, 0))
                    if differ:
                        fn = differ[0]
                        problems.append(f"{' '.join(['cachesim', *mode])} [{c['name']}]: the Ir of {len(differ)} "
                                        f"function(s) differ from nm's symbols over the text trace per program, first "
                                        f"{fn}: {got.get(fn, 0)} against {want.get(fn, 0)}")
        for p in problems:
            print(f"FAIL {p}")
        if problems:
            return 1
        print(f"{len(path_of)} programs: " + ", ".join(
            f"{k} {Path(path_of[k]).name} {sum(oracle[k].values())} instructions, {len(oracle[k])} addresses"
            for k in sorted(path_of)) + ": --counts and the cachegrind files (cg_annotate) equal the text trace per "
            "program, with and without --merge" + (", and so does atomx cachesim's Ir per function (with and without "
                                                    "--merged)" if a.cachesim else ""))
        return 0


if __name__ == "__main__":
    sys.exit(main())
