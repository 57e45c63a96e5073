#!/usr/bin/env python3
"""cachesim against Valgrind cachegrind's I1/D1/LL simulation, per procedure.

    cachesim_vs_cachegrind.py --atomx ATOMX --geometry "--I1=S,A,L --D1=S,A,L --LL=S,A,L" [--geometry ...]
        [--exact PROC ... | --all-exact] [--miss-tolerance PCT] [--tool-arg ARG] PROG [ARGS...]

Instruments PROG ONCE with `atomx -T cachesim`, and runs it
  - once with ATOMX_CACHE_CONFIG naming a file that holds every --geometry
    as a configuration of its own, written as cachegrind's options
    (`config gK` then the --geometry line): several simulated in one run;
  - once more per geometry, the same instrumented file with a file holding
    that geometry only: another configuration is another run, not another
    rewrite;
and the original under `valgrind --tool=cachegrind --cache-sim=yes` once per
geometry.  For every configuration of every run, per procedure of PROG that
atomx instruments and Valgrind names (a sized function symbol):

  - references, always exactly: Ir (a rep-prefixed string instruction once
    per execution on both sides: Valgrind counts one Ir per iteration, its
    executions are its Ir less its jumps to itself, from a callgrind run),
    Dr and Dw (less the accesses cachegrind counts for register-by-register
    bit tests, which the CPU does not make, and with the pops' reads
    Valgrind's optimiser drops counted back in: tests/tools/cache);
  - misses, exactly (I1mr, ILmr, D1mr, DLmr, D1mw, DLmw) for the procedures
    named by --exact (or all, --all-exact): those that start from a known
    cache state and whose references run with no library call in between;
  - misses summed over the compared procedures, per event, within
    --miss-tolerance percent of cachegrind's, or --miss-slack misses (16:
    a few lines' worth, for small counts) (libc and ld.so share
    cachegrind's caches but are not simulated by cachesim), less those of
    the procedures named with --miss-aside 'PROC=REASON' (whose data libc
    also touches: corpus/set_aside.txt).
The program's output must be unchanged.  Exit status 0 when all agree.
"""
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "dyninst"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cache"))
from vgharness import Run, Symbols, harness_args, setaside, callgrind_file, rep_addresses, _wrapper  # noqa: E402
from cache_vs_cachegrind import register_bit_tests, dead_pops  # noqa: E402

MISSES = ["I1mr", "ILmr", "D1mr", "DLmr", "D1mw", "DLmw"]
EVENTS = ["Ir", "Dr", "Dw"] + MISSES


def cachegrind_events(path):
    """fn -> {event: count} from a cachegrind.out file."""
    costs = collections.defaultdict(collections.Counter)
    fn, names = None, []
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith("fn="):
                fn = line[3:].strip()
            elif line[:1].isdigit() and fn is not None:
                for name, v in zip(names, line.split()[1:]):
                    costs[fn][name] += int(v)
    return costs


def tool_events(datas, config, sym):
    """canonical procedure -> {event: count} of configuration `config` of
    cachesim.json files (one per process), in cachegrind's event names (the
    hierarchies tested have I1, D1 and LL: I1mr is I1's ir misses, ILmr
    LL's ...)."""
    out = collections.defaultdict(collections.Counter)
    for p in (p for data in datas for p in data["configurations"][config]["procedures"]):
        name = sym(int(p["pc"], 16))
        if not name:
            continue
        m = p["misses"]
        e = out[name]
        e["Ir"] += p["Ir"]; e["Dr"] += p["Dr"]; e["Dw"] += p["Dw"]
        e["I1mr"] += m.get("I1", {}).get("ir", 0); e["ILmr"] += m.get("LL", {}).get("ir", 0)
        e["D1mr"] += m.get("D1", {}).get("dr", 0); e["DLmr"] += m.get("LL", {}).get("dr", 0)
        e["D1mw"] += m.get("D1", {}).get("dw", 0); e["DLmw"] += m.get("LL", {}).get("dw", 0)
    return out


def main():
    ap = harness_args(__doc__.split("\n\n")[0])
    ap.add_argument("--geometry", action="append", required=True, metavar="'--I1=.. --D1=.. --LL=..'")
    ap.add_argument("--exact", action="append", default=[], metavar="PROC")
    ap.add_argument("--all-exact", action="store_true")
    ap.add_argument("--miss-tolerance", type=float, default=None, metavar="PCT")
    ap.add_argument("--event-tolerance", action="append", default=[], metavar="EVENT=PCT",
                    help="EVENT's total (I1mr, DLmr ...) within PCT%% instead of --miss-tolerance; "
                         "PCT 'none': the total is printed, not compared (corpus_oracle.sh says why, per program)")
    ap.add_argument("--miss-slack", type=int, default=16, metavar="N",
                    help="a total within N misses of cachegrind's passes whatever --miss-tolerance says")
    ap.add_argument("--miss-aside", action="append", default=[], metavar="PROC=REASON",
                    help="leave PROC's misses out of the totals, for REASON (its references are still compared)")
    ap.add_argument("--tool-arg", action="append", default=[], metavar="ARG")
    o = ap.parse_args()
    geometries = [g.split() for g in o.geometry]
    run = Run(o.atomx, o.prog, "cachesim", tool_args=o.tool_arg, workload=o.workload, args=o.args, runs=o.runs,
              timeout=o.timeout, valgrind="cachegrind", valgrind_opts=["--cache-sim=yes"] + geometries[0],
              discard=["cachesim.cg", "cachesim.*.cg"], keep=o.keep)
    failures = []
    try:
        # Every geometry as a configuration of one file: cachegrind's options.
        every = os.path.join(run.work, "every.cache")
        with open(every, "w") as f:
            for k, g in enumerate(geometries):
                f.write(f"config g{k}\n{' '.join(g)}\n")
        os.environ["ATOMX_CACHE_CONFIG"] = every
        try:
            run.run()
        except RuntimeError as e:
            print(f"FAIL {o.prog}: {e}")
            return 1
        if (msg := run.output_changed()):
            failures.append(msg)
        failures += run.out_problems(0)
        sym = Symbols(run.prog)
        canon = sym.canon
        names = {canon[n] for _, _, n in sym.syms if n not in run.unmoved}
        names.discard(canon.get("_start"))  # Valgrind: "(below main)"

        # Cachegrind, once per geometry (the first in run.run()).
        cg_runs = [run.valgrind_files()]
        for k, g in enumerate(geometries[1:], 1):
            out = os.path.join(run.work, f"cg{k}")
            os.mkdir(out)
            _wrapper(run._binary, f"exec valgrind -q --tool=cachegrind --cache-sim=yes --demangle=no {' '.join(g)}"
                                  f' --cachegrind-out-file="{out}/cg.%p" "{run._cg_binary}" "$@"\n')
            d = os.path.join(run.work, f"run8.{k}.d")  # as long as the others
            os.mkdir(d)
            run._workload(d)
            cg_runs.append([os.path.join(out, fn) for fn in sorted(os.listdir(out))])

        # Valgrind's Ir of rep-prefixed instructions is one per iteration,
        # cachesim's one per execution; its Dr/Dw of register bit tests are
        # none to the CPU.  Both from one callgrind run.
        # And it drops the load of a pop whose register is overwritten
        # unread (dead_pops): the CPU, and cachesim, make it.
        reps = rep_addresses(run.prog)
        bit_tests = register_bit_tests(run.prog)
        dead = dead_pops(run.prog) if not os.environ.get("ATOMX_TEST_NO_DEAD_POPS") else set()  # (its twin)
        rep_extra, phantom = collections.Counter(), collections.defaultdict(collections.Counter)
        callgrind_ir = collections.Counter()
        # Ir from callgrind always: cachegrind chases branches into one
        # superblock and counts some instructions twice there (muparser's
        # IsHexValue: 2,194,368 against 2,029,330, which callgrind and the
        # prof and gprof oracles count).
        files = run.callgrind_again()
        base = os.path.basename(run.prog)
        ex = callgrind_file.executions(files, base, reps) if reps else {}
        for path in files:
            for func, addr, ir in callgrind_file.costs(path, base, "Ir"):
                if sym(addr):
                    callgrind_ir[sym(addr)] += ir
                if addr in reps and sym(addr):
                    rep_extra[sym(addr)] += ir  # (less the executions, once per address, below)
                if addr in bit_tests and sym(addr):
                    r, w = bit_tests[addr]
                    phantom[sym(addr)]["Dr"] += r * ir
                    phantom[sym(addr)]["Dw"] += w * ir
                if addr in dead and sym(addr):
                    phantom[sym(addr)]["Dr"] -= ir

        for addr, n in ex.items():
            if sym(addr):
                rep_extra[sym(addr)] -= n

        def cachegrind(k):
            cg = collections.defaultdict(collections.Counter)
            for path in cg_runs[k]:
                for func, c in cachegrind_events(path).items():
                    if canon.get(func):
                        cg[canon[func]].update(c)
            for n in cg:
                # callgrind's Ir and jumps (cachegrind's Ir of a rep instruction
                # is not its arrivals, and chasing counts some twice)
                cg[n]["Ir"] = callgrind_ir[n] - rep_extra[n]
                cg[n].subtract(phantom[n])
            return cg

        # The instrumented file again, one geometry per run (no rewrite).
        single = []
        for k, g in enumerate(geometries):
            cfg = os.path.join(run.work, f"g{k}.cache")
            with open(cfg, "w") as f:
                f.write(" ".join(g) + "\n")
            # Each process's cachesim.json into a directory of its own.
            _wrapper(run._binary, f'(exec -a {run.argv0} "{run.atom}" "$@"); rc=$?\n'
                                  'd="$ATOMX_TOOL_OUT/$$.$(date +%s%N)"\n'
                                  '[ -f cachesim.json ] && mkdir -p "$d" && mv cachesim.json "$d/"\n'
                                  'rm -f cachesim.out cachesim.cg\nexit $rc\n')
            d = os.path.join(run.work, f"run7.{k}.d")
            os.mkdir(d)
            env = dict(os.environ, ATOMX_CACHE_CONFIG=cfg, ATOMX_TOOL_OUT=os.path.join(run.work, f"alone.{k}"))
            p = run._workload(d, env)
            if (p.returncode, p.stdout) != run.results["native"][:2]:
                failures.append(f"geometry {k} alone: program output changed")
            datas = []
            for root, _, files in os.walk(env["ATOMX_TOOL_OUT"]):
                for fn in files:
                    with open(os.path.join(root, fn)) as f:
                        datas.append(json.load(f))
            single.append(datas)

        exact_names = {canon.get(n, n) for n in o.exact}
        event_tolerance = {e: None if v == "none" else float(v) for e, _, v in (t.partition("=") for t in o.event_tolerance)}
        miss_aside = {canon.get(n, n): why for n, why in setaside.parse(o.miss_aside).items()}
        for n, why in miss_aside.items():
            print(f"note: {n}: misses left out of the totals: {why}")
        summary = []
        for k, g in enumerate(geometries):
            cg = cachegrind(k)
            cases = [(f"g{k} of {len(geometries)} in one run", list(run.json_outputs(0)), k),
                     (f"g{k} alone", single[k], 0)]
            for label, datas, index in cases:
                if not datas:
                    failures.append(f"[{label}] no cachesim.json")
                    continue
                tool = tool_events(datas, index, sym)
                sel = setaside.Selection(names, [{n: tuple(tool[n][e] for e in ("Ir", "Dr", "Dw")) for n in tool}],
                                         lambda n: tool[n]["Ir"], o.set_aside, o.min_share, canon, "instructions")
                failures.extend(f"[{label}] {p}" for p in sel.problems)
                compared = sel.compared
                exact = set(compared) if o.all_exact else exact_names
                for n in exact - set(compared):
                    failures.append(f"[{label}] {n}: asked to compare exactly, but not a compared procedure")
                for n in sorted(compared):
                    t, c = tool[n], cg[n]
                    for e in ("Ir", "Dr", "Dw") + (tuple(MISSES) if n in exact else ()):
                        if t[e] != c[e]:
                            failures.append(f"[{label}] {n}: {e} {t[e]}, cachegrind {c[e]}")
                totals = []
                in_totals = [n for n in compared if n not in miss_aside]
                for e in MISSES:
                    tm = sum(tool[n][e] for n in in_totals)
                    cm = sum(cg[n][e] for n in in_totals)
                    apart = 100.0 * abs(tm - cm) / cm if cm else (0.0 if tm == 0 else 100.0)
                    tol = event_tolerance.get(e, o.miss_tolerance)
                    totals.append(f"{e} {tm}/{cm}" + (" (not compared)" if e in event_tolerance and tol is None else ""))
                    if tol is not None and apart > tol and abs(tm - cm) > o.miss_slack:
                        failures.append(f"[{label}] total {e}: {tm}, cachegrind {cm} ({apart:.2f}% apart,"
                                        f" more than {tol}%)")
                    if (tol is None or apart > tol) and abs(tm - cm) > o.miss_slack:
                        # Where the difference lies: the procedures that make most of it.
                        top = sorted(in_totals, key=lambda n: -abs(tool[n][e] - cg[n][e]))[:6]
                        summary.append(f"  [{label}] {e} differs most in: " + ", ".join(
                            f"{n} {tool[n][e]}/{cg[n][e]}" for n in top if tool[n][e] != cg[n][e]))
                summary.append(f"  [{label}] {' '.join(g)}: {len(compared)} procedures, misses (tool/cachegrind): "
                               + ", ".join(totals))
        print("\n".join(summary))
        if failures:
            print(f"FAIL {o.prog}: {len(failures)} problem(s)")
            for f in failures[:40]:
                print("   ", f)
            return 1
        print(f"PASS {o.prog}: Ir, Dr, Dw per procedure equal to cachegrind's in {len(geometries)} geometries"
              f" (one rewrite, {len(geometries) + 1} runs); misses exact in {len(exact_names) if not o.all_exact else 'all'}"
              f" procedure(s)" + (f", totals within {o.miss_tolerance}%" if o.miss_tolerance is not None else ""))
        return 0
    finally:
        run.close()


if __name__ == "__main__":
    sys.exit(main())
