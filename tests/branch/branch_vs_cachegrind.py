#!/usr/bin/env python3
"""The paper's branch tool against Valgrind's Bc (conditional branches), per procedure.

    branch_vs_cachegrind.py --atomx ATOMX [--tool paper|modern] PROG [--workload SCRIPT] [-- ARGS...]

Instruments PROG with tools/paper/branch_{inst,anal}.c (ATOM's Figures 2 and
3; its counters are not atomic, so for threaded programs use --tool modern:
the same tool in the C++ API, tools/branch/, as `atomx -T branch`), runs the
instrumented program and the original under
`valgrind --tool=cachegrind --branch-sim=yes` with the same workload, and
checks, for every procedure of PROG that Valgrind can name (a function symbol
with a size), that taken + not-taken counted by the tool equals cachegrind's
Bc for that function exactly; and that the program's own output (stdout,
stderr, exit status) is unchanged.

The workload is either ARGS (one run of PROG) or a corpus workload script
(corpus/workloads/NAME.sh, run in an empty directory with the binary's path);
every process of it is counted (btaken.out is collected after each run, and
cachegrind writes one file per process).

The Bc counts come from callgrind --branch-sim=yes --dump-instr=yes, per
instruction, because two things must be set aside: (1) cachegrind, by
default, misses conditional branches its translator chases into one
superblock (gzip's longest_match: 67.3M Bc instead of 95.4M; with
--vex-guest-chase=no cachegrind agrees with callgrind's 95.4M); (2) Valgrind
counts every iteration of a rep-prefixed string instruction as a conditional
branch, and one for each atomic read-modify-write (lock prefix, xchg with
memory: the retry check of the compare-and-swap it emulates them with),
while to atomx (as to ATOM) these are no branches: the Bc at those addresses
(found with objdump) is reported apart.

What is compared is decided by tests/setaside.py, the policy every
per-procedure oracle shares: --set-aside 'PROC=REASON' leaves out a
procedure whose behaviour depends on the file itself (cet's find_props
walks the program headers, and the rewritten file has more), on addresses
or time, or on thread scheduling (corpus/set_aside.txt names those of the
corpus programs).  --runs N runs the instrumented program's workload N
times: a procedure whose counts differ between those runs and is not set
aside fails.  With --vary-schedule every other of those runs has one CPU,
so that its threads run one at a time as they do under Valgrind: a
procedure whose counts depend on how threads interleave then differs
between the runs.  --min-share PCT: the branches compared must be at
least PCT% of those the tool counted.

Exit status 0 when everything matches; 1 with the differing procedures listed.
"""
import argparse
import collections
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import callgrind_file  # noqa: E402
import setaside  # noqa: E402
TOOLS = {
    # ATOM's Figures 2 and 3: plain counters, so single-threaded programs only.
    "paper": [os.path.join(ROOT, "tools/paper/branch_inst.c"), os.path.join(ROOT, "tools/paper/branch_anal.c")],
    # The same tool in the C++ API, with atomic counters: for threaded
    # programs.  Shipped with atomx (tools/branch): atomx -T branch.
    "modern": ["-T", "branch"],
}


def function_symbols(prog):
    """(start, end, name) of every sized function symbol, from readelf."""
    out = subprocess.run(["readelf", "-W", "-s", prog], capture_output=True, text=True, check=True).stdout
    syms = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND":
            start, size = int(f[1], 16), int(f[2], 0) if not f[2].startswith("0x") else int(f[2], 16)
            if size > 0:
                syms.add((start, start + size, f[7].split("@")[0]))
    return sorted(syms)


def canonical_names(syms):
    """name -> the name counts are compared under.  Aliases (symbols at one
    address, like C1/C2 constructors) become one name, the first in sorted
    order; `f.cold` joins `f`, because Valgrind counts a cold part under its
    parent function."""
    by_start = collections.defaultdict(list)
    for start, _, name in syms:
        by_start[start].append(name)
    canon = {}
    for names in by_start.values():
        first = sorted(names)[0]
        for n in names:
            canon[n] = first
    for n in list(canon):
        if n.endswith(".cold") and n[:-5] in canon:
            canon[n] = canon[n[:-5]]
    return canon


REP_PREFIXES = ("rep", "repz", "repnz", "repe", "repne")


@functools.lru_cache(maxsize=None)
def disassembly(prog):
    """(address, text) of every instruction `objdump -d` shows in prog, in
    address order: the one reading of objdump that every checker classifying
    instructions uses (read once per program)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", prog], capture_output=True, text=True,
                         check=True).stdout
    insts = []
    for line in out.splitlines():
        f = line.split("\t")
        text = "\t".join(f[1:]).strip()
        if len(f) < 2 or not text:
            continue
        try:
            insts.append((int(f[0].strip().rstrip(":"), 16), text))
        except ValueError:
            continue
    return tuple(insts)


def valgrind_only_branches(prog):
    """Addresses of instructions Valgrind counts conditional branches at that
    are none to atomx (or ATOM), from objdump: rep/repz/repnz-prefixed string
    instructions (one Bc per iteration) and atomic read-modify-writes (lock
    prefix, xchg with memory: Valgrind emulates them with a compare-and-swap
    whose retry check it counts)."""
    addrs = set()
    for addr, text in disassembly(prog):
        first = text.split()[0]
        if first in REP_PREFIXES + ("lock",) or (first.startswith("xchg") and "(" in text):
            addrs.add(addr)
    return addrs


def callgrind_costs(path, object_name, event):
    """(function, instruction address, cost of `event`) of every cost line of
    object_name in a callgrind file written with --dump-instr=yes
    (tests/callgrind_file.py reads it)."""
    return callgrind_file.costs(path, object_name, event)


def write_wrapper(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/bash\n" + body)
    os.chmod(path, 0o755)


def run_workload(binary_or_wrapper, args, workload, cwd, timeout, env=None, one_cpu=False):
    if workload:
        cmd = ["bash", workload, binary_or_wrapper]
    else:
        cmd = [binary_or_wrapper] + args
    # One CPU for the whole workload (the affinity is inherited): its
    # threads then run one at a time, as under Valgrind.
    pin = (lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})) if one_cpu else None
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout,
                       env=dict(os.environ, **(env or {})), preexec_fn=pin)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--workload")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--tool", choices=sorted(TOOLS), default="paper",
                    help="paper: tools/paper (not thread-safe); modern: tools/branch (atomic counters)")
    ap.add_argument("--tool-files", nargs=2, metavar=("INST", "ANAL"),
                    help="the paper's tool from these two files instead (the self-test gives a wrong one)")
    setaside.add_arguments(ap)
    ap.add_argument("--runs", type=int, default=1, metavar="N",
                    help="run the instrumented workload N times; a procedure whose counts differ between "
                         "the runs and is not set aside fails")
    ap.add_argument("--vary-schedule", action="store_true",
                    help="pin every other run of the instrumented workload to one CPU, so that procedures "
                         "whose counts depend on thread scheduling differ between the runs")
    ap.add_argument("prog")
    ap.add_argument("args", nargs="*")
    o = ap.parse_args()
    set_aside = setaside.parse(o.set_aside, ap)
    prog = os.path.abspath(o.prog)
    work = tempfile.mkdtemp(prefix="atomx-branch.")
    try:
        atom = os.path.join(work, os.path.basename(prog) + ".atom")
        report = os.path.join(work, "report.json")
        tool_args = o.tool_files if o.tool_files else TOOLS[o.tool]
        r = subprocess.run([o.atomx, prog] + tool_args + ["-o", atom, "-q", "--report", report], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {o.prog}: atomx failed:\n{r.stderr}")
            return 1
        # Procedures atomx left in place carry no instrumentation.
        with open(report) as f:
            unmoved = {p["name"] for p in json.load(f).get("unmoved", [])}
        counts = os.path.join(work, "counts")
        cgdir = os.path.join(work, "cg")
        os.mkdir(cgdir)
        # Every run sees the same program path (programs print argv[0], and
        # some, like gzip, behave differently by name): work/bin/NAME is the
        # original, then a wrapper for the instrumented program, then one
        # for cachegrind.  Each run of the instrumented program leaves
        # btaken.out in its cwd: the wrapper moves it aside.
        bindir = os.path.join(work, "bin")
        os.mkdir(bindir)
        binary = os.path.join(bindir, os.path.basename(prog))
        # Valgrind cannot set argv[0]: its copy has the same name, in a
        # directory whose path has the same length.
        os.mkdir(os.path.join(work, "cgb"))
        cg_binary = os.path.join(work, "cgb", os.path.basename(prog))
        shutil.copy(prog, cg_binary)
        wrappers = {
            "native": f'exec -a "$0" "{prog}" "$@"\n',
            "atom": f'(exec -a "$0" "{atom}" "$@"); rc=$?\n'
                    # btaken.out.PID: written by a forked child (AtomxOutputPath)
                    # ($ATOMX_BRANCH_COUNTS: one directory per run of the workload)
                    'for f in btaken.out btaken.out.*; do [ -f "$f" ] && mv "$f" "$ATOMX_BRANCH_COUNTS/$f.$$.$(date +%s%N)"; done\n'
                    'exit $rc\n',
            "cachegrind": f'exec valgrind -q --tool=callgrind --branch-sim=yes --dump-instr=yes --demangle=no '
                          f'--callgrind-out-file="{cgdir}/cg.%p" "{cg_binary}" "$@"\n',
        }
        wl = os.path.abspath(o.workload) if o.workload else None
        results = {}
        for k, (name, body) in enumerate(wrappers.items()):
            write_wrapper(binary, body)
            for run in range(o.runs if name == "atom" else 1):
                # Paths of equal length: programs store and print them
                # (sqlite3 makes the database path absolute).
                d = os.path.join(work, f"run{k}.{run}.d")
                os.mkdir(d)
                env = {}
                if name == "atom":
                    env["ATOMX_BRANCH_COUNTS"] = f"{counts}.{run}"
                    os.mkdir(env["ATOMX_BRANCH_COUNTS"])
                one_cpu = name == "atom" and o.vary_schedule and run % 2 == 1
                r = run_workload(binary, o.args, wl, d, o.timeout, env, one_cpu)
                results.setdefault(name, r)
        failures = []
        if results["atom"] != results["native"]:
            rc_n, out_n, err_n = results["native"]
            rc_a, out_a, err_a = results["atom"]
            failures.append(f"program output changed (status {rc_n} -> {rc_a}, stdout same: {out_n == out_a}, "
                            f"stderr same: {err_n == err_a})")
        if results["cachegrind"] != results["native"]:
            # Valgrind is not the CPU: x87 long double has 64-bit precision
            # under it, for one; procedures on such paths count differently.
            print("note: the program behaves differently under Valgrind (its output differs)")
        # The tool's counts per procedure, per run.
        syms = function_symbols(prog)
        canon = canonical_names(syms)
        starts = [s for s, _, _ in syms]
        import bisect
        def proc_of(pc):
            i = bisect.bisect_right(starts, pc) - 1
            if i >= 0 and syms[i][0] <= pc < syms[i][1]:
                return syms[i][2]
            return None
        runs = []
        for run in range(o.runs):
            tool = collections.Counter()
            files = os.listdir(f"{counts}.{run}")
            if not files:
                failures.append("the tool wrote no btaken.out")
            for fn in files:
                with open(os.path.join(f"{counts}.{run}", fn)) as f:
                    next(f)
                    for line in f:
                        pc, taken, not_taken = line.split()
                        name = proc_of(int(pc, 16))
                        if name:
                            tool[canon[name]] += int(taken) + int(not_taken)
            runs.append(tool)
        tool = runs[0]
        # Valgrind's Bc per function of PROG, over every process, without the
        # branches only Valgrind sees (valgrind_only_branches).
        valgrind_only = valgrind_only_branches(prog)
        names = {canon[n] for _, _, n in syms if n not in unmoved}
        cg = collections.Counter()
        valgrind_only_bc = collections.Counter()
        for fn in os.listdir(cgdir):
            for func, addr, bc in callgrind_costs(os.path.join(cgdir, fn), os.path.basename(prog), "Bc"):
                func = canon.get(func)
                if func in names:
                    (valgrind_only_bc if addr in valgrind_only else cg)[func] += bc
        sel = setaside.Selection(names, runs, lambda n: tool[n], set_aside, o.min_share, canon,
                                 "conditional branches executed")
        failures += sel.problems
        for name in sel.compared:
            if tool[name] != cg[name]:
                failures.append(f"{name}: tool {tool[name]}, Valgrind Bc {cg[name]}")
        for line in sel.notes():
            print("note:", line)
        if unmoved:
            print(f"note: not compared (left in place by atomx, not instrumented): {', '.join(sorted(unmoved))}")
        if failures:
            print(f"FAIL {o.prog}: {len(failures)} problem(s) over {len(sel.compared)} procedures compared")
            for f in failures[:40]:
                print("   ", f)
            return 1
        print(f"PASS {o.prog}: {len(sel.compared)} procedures, {sel.summary()}, all equal to Valgrind's Bc"
              f" (apart: {sum(valgrind_only_bc.values())} Bc of rep and atomic instructions)")
        return 0
    finally:
        if o.keep:
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
