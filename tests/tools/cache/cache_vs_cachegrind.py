#!/usr/bin/env python3
"""The cache tool against Valgrind cachegrind's D1 simulation, per procedure.

    cache_vs_cachegrind.py --atomx ATOMX [--size 8K --assoc 1 --line 32]
        [--exact-misses PROC ... | --all-misses-exact] [--miss-tolerance PCT]
        PROG [--workload SCRIPT] [-- ARGS...]

Instruments PROG with `atomx -T cache -- --size S --assoc A --line L`, runs
it and the original under `valgrind --tool=cachegrind --cache-sim=yes
--D1=S,A,L` with the same workload (ARGS, or a corpus workload script run in
an empty directory), and compares, for every procedure of PROG that atomx
instruments and Valgrind can name (a sized function symbol):

  - accesses, always exactly: the tool's reads == Dr and writes == Dw
    (cachegrind's model: a read-modify-write operand is one read, a locked
    one two, rep string instructions one access per iteration);
  - D1 misses: exactly (read misses == D1mr, write misses == D1mw) for the
    procedures named by --exact-misses (or all, --all-misses-exact): those
    whose accesses run with no library call in between, so that both caches
    see the same stream; for the others, the misses summed over all compared
    procedures must be within --miss-tolerance percent of cachegrind's
    (ld.so and libc are not instrumented by atomx, but share cachegrind's
    cache: their accesses evict lines of the program and load lines it uses).

The program's own output (stdout, stderr, exit status) must be unchanged.
--allow-differ PROC skips a procedure whose accesses depend on the run
(time, thread scheduling, the machine).  Exit status 0 when all agree.
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
    """(start, end, name) of every sized function symbol, from readelf."""
    out = subprocess.run(["readelf", "-W", "-s", prog], capture_output=True, text=True, check=True).stdout
    syms = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND":
            start, size = int(f[1], 16), int(f[2], 0)
            if size > 0:
                syms.add((start, start + size, f[7].split("@")[0]))
    return sorted(syms)


def canonical_names(syms):
    """Aliases (one address) become one name; `f.cold` joins `f`, whose
    costs Valgrind's debug info gives to `f`."""
    by_start = collections.defaultdict(list)
    for start, _, name in syms:
        by_start[start].append(name)
    canon = {}
    for names in by_start.values():
        for n in names:
            canon[n] = sorted(names)[0]
    for n in list(canon):
        if n.endswith(".cold") and n[:-5] in canon:
            canon[n] = canon[n[:-5]]
    return canon


def cachegrind_costs(path):
    """fn -> [Dr, D1mr, Dw, D1mw] from a cachegrind.out file."""
    costs = collections.defaultdict(lambda: [0, 0, 0, 0])
    fn = None
    cols = None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                ev = line.split()[1:]
                cols = [ev.index(e) for e in ("Dr", "D1mr", "Dw", "D1mw")]
            elif line.startswith("fn="):
                fn = line[3:].strip()
            elif line[:1].isdigit() and fn is not None:
                v = line.split()[1:]
                c = costs[fn]
                for k, i in enumerate(cols):
                    if i < len(v):
                        c[k] += int(v[i])
    return costs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--size", default="8192")
    ap.add_argument("--assoc", default="1")
    ap.add_argument("--line", default="32")
    ap.add_argument("--workload")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--exact-misses", action="append", default=[], metavar="PROC")
    ap.add_argument("--all-misses-exact", action="store_true")
    ap.add_argument("--miss-tolerance", type=float, default=None, metavar="PCT")
    ap.add_argument("--allow-differ", action="append", default=[], metavar="PROC")
    ap.add_argument("--runs", type=int, default=1, metavar="N",
                    help="run the instrumented workload N times; procedures whose accesses differ between "
                         "runs (time, randomness, thread scheduling) are listed and not compared")
    ap.add_argument("--tool-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for the tool (--no-merge, --verify-merge, --policy fifo ...)")
    ap.add_argument("prog")
    ap.add_argument("args", nargs="*")
    o = ap.parse_args()
    prog = os.path.abspath(o.prog)
    size = int(o.size[:-1]) * 1024 if o.size[-1] in "kK" else int(o.size)
    work = tempfile.mkdtemp(prefix="atomx-cache.")
    try:
        atom = os.path.join(work, os.path.basename(prog) + ".atom")
        report = os.path.join(work, "report.json")
        r = subprocess.run([o.atomx, prog, "-T", "cache", "-o", atom, "-q", "--report", report, "--",
                            "--size", str(size), "--assoc", o.assoc, "--line", o.line] + o.tool_arg,
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {o.prog}: atomx failed:\n{r.stderr}")
            return 1
        with open(report) as f:
            unmoved = {p["name"] for p in json.load(f).get("unmoved", [])}
        outs, cgdir = os.path.join(work, "outs"), os.path.join(work, "cg")
        os.mkdir(cgdir)
        # Every run sees the same program path, argv[0] and cwd length
        # (programs print them): bin/NAME is a wrapper for each run.
        bindir = os.path.join(work, "bin")
        os.mkdir(bindir)
        binary = os.path.join(bindir, os.path.basename(prog))
        os.mkdir(os.path.join(work, "cgb"))
        cg_binary = os.path.join(work, "cgb", os.path.basename(prog))
        shutil.copy(prog, cg_binary)
        wrappers = {
            "native": f'exec -a "$0" "{prog}" "$@"\n',
            "atom": f'(exec -a "$0" "{atom}" "$@"); rc=$?\n'
                    'for f in cache.json cache.json.*; do [ -f "$f" ] && mv "$f" "$ATOMX_CACHE_OUTS/$f.$$.$(date +%s%N)"; done\n'
                    'rm -f cache.out cache.out.*\nexit $rc\n',
            "cachegrind": f'exec valgrind -q --tool=cachegrind --cache-sim=yes --D1={size},{o.assoc},{o.line} '
                          '--I1=32768,8,64 --LL=8388608,16,64 '
                          f'--demangle=no --cachegrind-out-file="{cgdir}/cg.%p" "{cg_binary}" "$@"\n',
        }
        wl = os.path.abspath(o.workload) if o.workload else None
        results = {}
        for k, (name, body) in enumerate(wrappers.items()):
            with open(binary, "w") as f:
                f.write("#!/bin/bash\n" + body)
            os.chmod(binary, 0o755)
            for run in range(o.runs if name == "atom" else 1):
                d = os.path.join(work, f"run{k}.{run}")  # paths of one length: programs print them
                os.mkdir(d)
                os.makedirs(f"{outs}.{run}", exist_ok=True)
                cmd = ["bash", wl, binary] if wl else [binary] + o.args
                p = subprocess.run(cmd, cwd=d, capture_output=True, timeout=o.timeout,
                                   env=dict(os.environ, ATOMX_CACHE_OUTS=f"{outs}.{run}"))
                results.setdefault(name, (p.returncode, p.stdout, p.stderr))
        failures = []
        if results["atom"] != results["native"]:
            rc_n, out_n, err_n = results["native"]
            rc_a, out_a, err_a = results["atom"]
            failures.append(f"program output changed (status {rc_n} -> {rc_a}, stdout same: {out_n == out_a}, "
                            f"stderr same: {err_n == err_a})")
        if results["cachegrind"][:2] != results["native"][:2]:  # stderr has Valgrind's warnings
            print("note: the program behaves differently under Valgrind (its output differs)")
        syms = function_symbols(prog)
        canon = canonical_names(syms)
        starts = [s for s, _, _ in syms]

        def proc_of(pc):
            i = bisect.bisect_right(starts, pc) - 1
            return canon[syms[i][2]] if i >= 0 and syms[i][0] <= pc < syms[i][1] else None

        runs = []
        for run in range(o.runs):
            tool = collections.defaultdict(lambda: [0, 0, 0, 0])  # reads, read misses, writes, write misses
            runs.append(tool)
            files = os.listdir(f"{outs}.{run}")
            if not files:
                failures.append("the tool wrote no cache.json")
            for fn in files:
                with open(os.path.join(f"{outs}.{run}", fn)) as f:
                    data = json.load(f)
                v = data.get("verify_merge")
                if v and v["wrong"]:
                    failures.append(f"--verify-merge: {v['wrong']} of {v['checked']} computed addresses wrong, "
                                    f"first at {v['first_wrong']}")
                for i in data["instructions"]:
                    name = proc_of(int(i["pc"], 16))
                    if name:
                        t = tool[name]
                        t[0] += i["reads"]; t[1] += i["read_misses"]; t[2] += i["writes"]; t[3] += i["write_misses"]
        tool = runs[0]
        varying = sorted({n for r in runs[1:] for n in set(r) | set(tool) if (r[n][0], r[n][2]) != (tool[n][0], tool[n][2])})
        if varying:
            print(f"note: not compared (accesses differ between the {o.runs} runs): {', '.join(varying)}")
        cg = collections.defaultdict(lambda: [0, 0, 0, 0])
        for fn in os.listdir(cgdir):
            for func, c in cachegrind_costs(os.path.join(cgdir, fn)).items():
                func = canon.get(func)
                if func:
                    for k in range(4):
                        cg[func][k] += c[k]
        names = {canon[n] for _, _, n in syms if n not in unmoved}
        # Valgrind names the code below main "(below main)", with libc's.
        compared = sorted(names - {canon.get(n, n) for n in o.allow_differ} - set(varying) - {canon.get("_start")})
        exact = set(compared) if o.all_misses_exact else {canon.get(n, n) for n in o.exact_misses}
        for n in exact - set(compared):
            failures.append(f"{n}: asked to compare exactly, but not a compared procedure")
        for n in compared:
            t, c = tool[n], cg[n]
            if (t[0], t[2]) != (c[0], c[2]):
                failures.append(f"{n}: accesses: tool reads {t[0]} writes {t[2]}, cachegrind Dr {c[0]} Dw {c[2]}")
            elif n in exact and (t[1], t[3]) != (c[1], c[3]):
                failures.append(f"{n}: misses: tool read {t[1]} write {t[3]}, cachegrind D1mr {c[1]} D1mw {c[3]}")
        acc = sum(tool[n][0] + tool[n][2] for n in compared)
        tm = sum(tool[n][1] + tool[n][3] for n in compared)
        cm = sum(cg[n][1] + cg[n][3] for n in compared)
        diff = 100.0 * abs(tm - cm) / cm if cm else 0.0
        if o.miss_tolerance is not None and diff > o.miss_tolerance:
            worst = sorted(compared, key=lambda n: -abs(tool[n][1] + tool[n][3] - cg[n][1] - cg[n][3]))[:5]
            failures.append(f"misses differ by {diff:.2f}% (> {o.miss_tolerance}%): tool {tm}, cachegrind {cm}; most: " +
                            ", ".join(f"{n} {tool[n][1] + tool[n][3]} vs {cg[n][1] + cg[n][3]}" for n in worst))
        geo = f"D1={size},{o.assoc},{o.line}"
        if failures:
            print(f"FAIL {o.prog} [{geo}]: {len(failures)} difference(s) over {len(compared)} procedures")
            for f in failures[:40]:
                print("   ", f)
            return 1
        print(f"PASS {o.prog} [{geo}]: {len(compared)} procedures, {acc} accesses equal to cachegrind's Dr+Dw; "
              f"misses {tm} vs cachegrind {cm} ({diff:.2f}% apart), exact in {len(exact)} procedure(s)")
        return 0
    finally:
        if o.keep:
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
