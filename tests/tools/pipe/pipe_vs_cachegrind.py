#!/usr/bin/env python3
"""The pipe tool's instruction counts against Valgrind's Ir, per procedure.

    pipe_vs_cachegrind.py --atomx ATOMX PROG [--workload SCRIPT] [--runs N] [--allow-differ PROC] [-- ARGS...]

pipe counts instructions as (block executions x instructions in the block);
callgrind (--dump-instr=yes) counts each instruction executed.  For every
procedure of PROG that Valgrind can name (a sized function symbol) and atomx
moved, the two must be equal, except at rep-prefixed string instructions,
which Valgrind counts once per iteration and pipe once per execution: those
are set aside on both sides (their callgrind Ir, and their block's count).
Also checks the program's output is unchanged.  --runs N and
--allow-differ PROC work as in tests/branch/branch_vs_cachegrind.py
(procedures whose counts vary between runs, or that behave differently
under Valgrind, are listed and not compared).  Exit status 0 when equal.
"""
import argparse
import bisect
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile


def function_symbols(prog):
    out = subprocess.run(["readelf", "-W", "-s", prog], capture_output=True, text=True, check=True).stdout
    syms = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND" and int(f[2], 0) > 0:
            syms.add((int(f[1], 16), int(f[1], 16) + int(f[2], 0), f[7].split("@")[0]))
    return sorted(syms)


def canonical_names(syms):
    """Aliases become one name; f.cold joins f (Valgrind names a cold part after its parent)."""
    by_start = collections.defaultdict(list)
    for start, _, name in syms:
        by_start[start].append(name)
    canon = {n: sorted(names)[0] for names in by_start.values() for n in names}
    for n in list(canon):
        if n.endswith(".cold") and n[:-5] in canon:
            canon[n] = canon[n[:-5]]
    return canon


def rep_addresses(prog):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", prog], capture_output=True, text=True, check=True).stdout
    addrs = set()
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) >= 2 and f[1].split() and f[1].split()[0] in ("rep", "repz", "repnz", "repe", "repne"):
            addrs.add(int(f[0].strip().rstrip(":"), 16))
    return addrs


def callgrind_ir(path, object_name):
    """(function, address, Ir) of every cost line of object_name (callgrind,
    --dump-instr=yes; addresses are the file's link-time addresses)."""
    names, ob, fn, last, skip = {}, None, None, [0, 0], False
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("calls="):
                skip = True  # the next line is the call's inclusive cost
                continue
            head, _, rest = line.partition("=")
            if head in ("ob", "fn", "cob", "cfn", "fl", "fi", "fe", "cfi", "cfl") and rest.startswith("("):
                ident, _, name = rest.partition(")")
                key = (head.lstrip("c") if head in ("cob", "cfn") else head, ident)
                if name.strip():
                    names[key] = name.strip()
                if head == "ob":
                    ob = names.get(key)
                elif head == "fn":
                    fn = names.get(key)
                    if fn and "'" in fn and fn.rsplit("'", 1)[1].isdigit():
                        fn = fn.rsplit("'", 1)[0]  # recursion levels
                continue
            if not line or not (line[0].isdigit() or line[0] in "+-*"):
                continue
            parts = line.split()
            for i in range(2):
                p = parts[i]
                if p != "*":
                    last[i] = last[i] + int(p) if p[0] in "+-" else int(p, 0)
            if skip:
                skip = False
                continue
            if ob and os.path.basename(ob) == object_name and len(parts) > 2:
                yield fn, last[0], int(parts[2])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--workload")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--allow-differ", action="append", default=[], metavar="PROC")
    ap.add_argument("prog")
    ap.add_argument("args", nargs="*")
    o = ap.parse_args()
    prog = os.path.abspath(o.prog)
    name = os.path.basename(prog)
    work = tempfile.mkdtemp(prefix="atomx-pipe.")
    atom, report = os.path.join(work, name + ".atom"), os.path.join(work, "report.json")
    r = subprocess.run([o.atomx, prog, "-T", "pipe", "-o", atom, "-q", "--report", report], capture_output=True, text=True)
    if r.returncode:
        print(f"FAIL {o.prog}: atomx failed:\n{r.stderr}")
        return 1
    with open(report) as f:
        unmoved = {p["name"] for p in json.load(f).get("unmoved", [])}
    cgdir, counts = os.path.join(work, "cg"), os.path.join(work, "counts")
    os.mkdir(cgdir)
    bindir = os.path.join(work, "bin")
    os.mkdir(bindir)
    binary = os.path.join(bindir, name)
    os.mkdir(os.path.join(work, "cgb"))  # same path length for Valgrind's copy (argv[0])
    cg_binary = os.path.join(work, "cgb", name)
    shutil.copy(prog, cg_binary)
    wrappers = {
        "native": f'exec -a "$0" "{prog}" "$@"\n',
        "atom": f'(exec -a "$0" "{atom}" "$@"); rc=$?\n'
                'for f in pipe.json pipe.json.*; do [ -f "$f" ] && mv "$f" "$PIPE_COUNTS/$f.$$.$(date +%s%N)"; done\n'
                'rm -f pipe.out pipe.out.*; exit $rc\n',
        # --skip-plt=no: callgrind's default charges the PLT stub's
        # instructions to the call instruction.
        "cachegrind": f'exec valgrind -q --tool=callgrind --dump-instr=yes --skip-plt=no --demangle=no '
                      f'--callgrind-out-file="{cgdir}/cg.%p" "{cg_binary}" "$@"\n',
    }
    wl = os.path.abspath(o.workload) if o.workload else None
    results = {}
    for k, (kind, body) in enumerate(wrappers.items()):
        with open(binary, "w") as f:
            f.write("#!/bin/bash\n" + body)
        os.chmod(binary, 0o755)
        for run in range(o.runs if kind == "atom" else 1):
            d = os.path.join(work, f"run{k}.{run}.d")
            os.mkdir(d)
            env = dict(os.environ)
            if kind == "atom":
                env["PIPE_COUNTS"] = f"{counts}.{run}"
                os.mkdir(env["PIPE_COUNTS"])
            cmd = ["bash", wl, binary] if wl else [binary] + o.args
            p = subprocess.run(cmd, cwd=d, capture_output=True, timeout=o.timeout, env=env)
            results.setdefault(kind, (p.returncode, p.stdout, p.stderr))
    failures = []
    if results["atom"] != results["native"]:
        failures.append(f"program output changed (status {results['native'][0]} -> {results['atom'][0]})")
    if results["cachegrind"] != results["native"]:
        print("note: the program behaves differently under Valgrind (its output differs)")
    syms = function_symbols(prog)
    canon = canonical_names(syms)
    starts = [s for s, _, _ in syms]

    def proc_of(pc):
        i = bisect.bisect_right(starts, pc) - 1
        return canon[syms[i][2]] if i >= 0 and syms[i][0] <= pc < syms[i][1] else None

    reps = sorted(rep_addresses(prog))
    runs, rep_execs = [], 0
    for run in range(o.runs):
        tool = collections.Counter()
        files = os.listdir(f"{counts}.{run}")
        if not files:
            failures.append("the tool wrote no pipe.json")
        for fn in files:
            with open(os.path.join(f"{counts}.{run}", fn)) as f:
                j = json.load(f)
            for b in j["blocks"]:
                pc, end = int(b["pc"], 16), int(b["end"], 16)
                nrep = bisect.bisect_left(reps, end) - bisect.bisect_left(reps, pc)
                tool[proc_of(pc)] += b["count"] * (b["instructions"] - nrep)
                if run == 0:
                    rep_execs += b["count"] * nrep
        runs.append(tool)
    tool = runs[0]
    varying = sorted({n for r in runs[1:] for n in set(r) | set(tool) if r[n] != tool[n] and n})
    names = {canon[n] for _, _, n in syms if n not in unmoved}
    cg, cg_rep = collections.Counter(), 0
    repset = set(reps)
    for fn in os.listdir(cgdir):
        # By address, not callgrind's names: it calls _start "(below main)",
        # and leaves some local functions unnamed.
        for _, addr, ir in callgrind_ir(os.path.join(cgdir, fn), name):
            func = proc_of(addr)
            if func in names:
                if addr in repset:
                    cg_rep += ir
                else:
                    cg[func] += ir
    compared = sorted(names - set(o.allow_differ) - set(varying))
    for n in compared:
        if tool[n] != cg[n]:
            failures.append(f"{n}: pipe {tool[n]} instructions, Valgrind Ir {cg[n]}")
    if failures:
        print(f"FAIL {o.prog}: {len(failures)} difference(s) over {len(compared)} procedures; kept {work}")
        for f in failures[:40]:
            print("   ", f)
        return 1
    if unmoved:
        print(f"note: not compared (left in place by atomx): {', '.join(sorted(unmoved))}")
    if varying:
        print(f"note: not compared (counts differ between the {o.runs} runs): {', '.join(varying)}")
    shutil.rmtree(work)
    print(f"PASS {o.prog}: {len(compared)} procedures, {sum(tool[n] for n in compared)} of {sum(tool.values())} "
          f"instructions executed compared, all equal to Valgrind's Ir (set aside: {rep_execs} executions of rep "
          f"instructions, {cg_rep} Ir)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
