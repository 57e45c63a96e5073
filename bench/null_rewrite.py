#!/usr/bin/env python3
"""Null-rewrite benchmark: what moving all code costs, at rewrite time and at run time.

    bench/null_rewrite.py [--only NAME] [--runs N] [--out DIR] [--peers] ...

For every corpus variant (corpus/build.sh --list):

 1. rewrite cost: `atomx B -o OUT --report R.json -q`, --rewrite-runs times
    (default 5); median wall time around the process, median analyze+rewrite
    seconds from the report, MB of code rewritten per second, file and text
    growth, share of procedures and bytes moved;
 2. run-time overhead: the program's workload (corpus/workloads/<prog>.sh),
    run with every configuration ("runner") in rounds; in round r the runners
    go in an order rotated by r (native, rewritten / rewritten, native / ...),
    each run in a fresh scratch directory with the binary installed under the
    same path.  Each run is timed as a whole (time.perf_counter around the
    subprocess); ratio per round = runner time / native time of that round.
    Reported: median ratio, min/max ratio, median native time.  The stdout
    (and exit status) of every run is compared with the native run of the same
    round; a difference flags the row.
 3. a Markdown table (one row per variant + geometric means) on stdout and in
    DIR/null_rewrite.md, the same data and all raw timings in
    DIR/null_rewrite.json.

Rounds are swept over all variants (round 1 of every variant, then round 2,
...), so a slow drift in machine load spreads over all rows instead of
spoiling one.  A time budget (--budget minutes, default 10) stops starting new
sweeps once --min-runs (default 4) are done and the next two sweeps would not
fit (rounds are added two at a time, so both orders of a pair stay equally
frequent); --budget 0 always runs --runs rounds.

Runners: RUNNERS below.  A runner turns a corpus binary into a binary to
install and an optional command prefix (a wrapper script then runs
`PREFIX... BINARY ARGS...`).  To add one (an ATOM tool, qemu, another
valgrind tool) write a prepare function and append a Runner.
Python 3 standard library only.
"""

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPUS = REPO / "corpus"


def log(msg):
    print(f"[null_rewrite {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Runners
# ---------------------------------------------------------------------------

@dataclass
class Prepared:
    """What a runner made of a corpus binary."""
    binary: Optional[Path] = None       # installed as <scratch>/bin/<prog>
    prefix: list = field(default_factory=list)  # command prefix; [] = run directly
    cost: Optional[dict] = None          # build/rewrite cost, if the runner has one
    error: Optional[str] = None          # set if the runner cannot run this variant


@dataclass
class Runner:
    name: str                   # short id, used in the JSON
    title: str                  # column title in the table
    prepare: Callable           # (Variant, args) -> Prepared
    max_runs: Callable = lambda args: args.runs   # rounds this runner takes part in
    timeout_factor: float = 1.0  # workload timeout multiplier (slow runners)


def prepare_native(v, args):
    return Prepared(binary=v.binary)


def prepare_atomx_null(v, args):
    """Rewrite with the null tool --rewrite-runs times; measure the cost."""
    out = v.work / "atomx-null" / v.prog
    rep = v.work / "atomx-null" / "report.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    walls, internal, digests, report = [], [], set(), None
    for _ in range(args.rewrite_runs):
        for f in (out, rep):
            if f.exists():
                f.unlink()
        cmd = [str(args.atomx), str(v.binary), "-o", str(out), "--report", str(rep), "-q"]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=args.timeout)
        walls.append(time.perf_counter() - t0)
        if p.returncode != 0 or not out.exists() or not rep.exists():
            msg = p.stdout.decode(errors="replace").strip().splitlines()
            return Prepared(error=f"atomx exited {p.returncode}: " + (msg[-1] if msg else "no output"))
        report = json.loads(rep.read_text())
        internal.append(report["analyze_seconds"] + report["rewrite_seconds"])
        digests.add(hashlib.sha256(out.read_bytes()).hexdigest())
    r = report
    wall = statistics.median(walls)
    cost = {
        "rewrite_runs": len(walls),
        "wall_seconds": walls,
        "internal_seconds": internal,
        "median_wall_seconds": wall,
        "median_internal_seconds": statistics.median(internal),
        "code_mb_per_second_wall": r["code_bytes"] / 1e6 / wall,
        "code_mb_per_second_internal": r["code_bytes"] / 1e6 / max(statistics.median(internal), 1e-9),
        "procedures": r["procedures"],
        "moved_procedures": r["moved_procedures"],
        "code_bytes": r["code_bytes"],
        "moved_code_bytes": r["moved_code_bytes"],
        "new_code_bytes": r["new_code_bytes"],
        "input_file_bytes": r["input_file_bytes"],
        "output_file_bytes": r["output_file_bytes"],
        "moved_procedures_share": r["moved_procedures"] / r["procedures"] if r["procedures"] else None,
        "moved_bytes_share": r["moved_code_bytes"] / r["code_bytes"] if r["code_bytes"] else None,
        "file_growth": r["output_file_bytes"] / r["input_file_bytes"] - 1,
        "text_growth": r["new_code_bytes"] / r["code_bytes"] - 1 if r["code_bytes"] else None,
        "output_deterministic": len(digests) == 1,
        "unmoved": r.get("unmoved", [])[:50],
    }
    return Prepared(binary=out, cost=cost)


def prepare_valgrind_none(v, args):
    if not shutil.which("valgrind"):
        return Prepared(error="valgrind not installed")
    # Valgrind 3.19 gives up on clang 15's DWARF 5 ("Possibly corrupted
    # debuginfo file"), so it gets a copy without debug sections; they are
    # not loaded at run time, the code and data are the very same bytes.
    out = v.work / "valgrind-none" / v.prog
    out.parent.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(["objcopy", "--strip-debug", str(v.binary), str(out)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        return Prepared(error="objcopy --strip-debug failed: " + p.stdout.strip()[:200])
    return Prepared(binary=out, prefix=["valgrind", "--tool=none", "-q"])


NATIVE = Runner("native", "native", prepare_native)
ATOMX_NULL = Runner("atomx-null", "atomx null", prepare_atomx_null)
VALGRIND_NONE = Runner("valgrind-none", "valgrind none", prepare_valgrind_none,
                       max_runs=lambda args: min(args.peer_runs, args.runs), timeout_factor=20)


def runners_for(args):
    """The configurations to compare; the first one is the baseline of every ratio."""
    rs = [NATIVE, ATOMX_NULL]
    if args.peers:
        rs.append(VALGRIND_NONE)
    return rs


# ---------------------------------------------------------------------------
# Variants and workload runs
# ---------------------------------------------------------------------------

@dataclass
class Variant:
    name: str
    prog: str
    binary: Path
    workload: Path
    work: Path
    error: Optional[str] = None
    prepared: dict = field(default_factory=dict)       # runner name -> Prepared
    runs: dict = field(default_factory=dict)           # runner name -> list of run dicts
    rounds: list = field(default_factory=list)         # per round: {runner: run index}


def list_variants(args):
    p = subprocess.run([str(CORPUS / "build.sh"), "--list"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"null_rewrite: corpus/build.sh --list failed: {p.stderr.strip()}")
    names = [n.strip() for n in p.stdout.splitlines() if n.strip()]
    if args.only:
        names = [n for n in names if args.only in n]
    return names


def run_workload(v, runner, timeout):
    """One whole workload run with one runner, in a fresh scratch directory.

    Same layout and environment as corpus/check.sh: the binary is always
    <d>/bin/<prog>, cwd <d>/run, HOME <d>/home, TMPDIR <d>/tmp, env -i.
    """
    d = v.work / "scratch"
    prep = v.prepared[runner.name]
    for sub in ("bin", "run", "home", "tmp", "wrap", "out"):
        shutil.rmtree(d / sub, ignore_errors=True)
        (d / sub).mkdir(parents=True)
    exe = d / "bin" / v.prog
    shutil.copyfile(prep.binary, exe)
    exe.chmod(0o755)
    target = exe
    if prep.prefix:
        # The program itself still runs as <d>/bin/<prog> (same argv[0] as native).
        target = d / "wrap" / v.prog
        target.write_text("#!/bin/sh\nexec " + " ".join(shlex.quote(a) for a in prep.prefix)
                          + " " + shlex.quote(str(exe)) + ' "$@"\n')
        target.chmod(0o755)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(d / "home"),
           "TMPDIR": str(d / "tmp"), "LC_ALL": "C", "LANG": "C", "TZ": "UTC"}
    cmd = ["timeout", "-k", "10", str(int(timeout)), "bash", str(v.workload), str(target)]
    with open(d / "out" / "stdout", "wb") as so, open(d / "out" / "stderr", "wb") as se:
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=d / "run", env=env, stdin=subprocess.DEVNULL, stdout=so, stderr=se)
        t1 = time.perf_counter()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    stdout = (d / "out" / "stdout").read_bytes()
    stderr = (d / "out" / "stderr").read_bytes()
    return {
        "seconds": t1 - t0,
        "cpu_seconds": (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
        "status": p.returncode,
        "timed_out": p.returncode in (124, 137),
        "stdout_sha256": hashlib.sha256(stdout).hexdigest(),
        "stderr_sha256": hashlib.sha256(stderr).hexdigest(),
        "_stdout": stdout,
    }


def first_difference(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}: {x[:100]!r} vs {y[:100]!r}"
    return f"{len(la)} vs {len(lb)} lines"


def do_round(v, r, runners, args):
    """Round r of variant v: every active runner once, order rotated by r."""
    active = [rn for rn in runners if rn.name in v.prepared and v.prepared[rn.name].error is None
              and (rn is runners[0] or r < rn.max_runs(args))]
    if len(active) < 2 or active[0] is not runners[0]:
        return 0.0
    k = r % len(active)
    order = active[k:] + active[:k]
    t0 = time.perf_counter()
    done = {}
    for rn in order:
        res = run_workload(v, rn, args.timeout * rn.timeout_factor)
        res["round"] = r
        res["position"] = order.index(rn)
        v.runs.setdefault(rn.name, []).append(res)
        done[rn.name] = res
    base = done[runners[0].name]
    for name, res in done.items():
        if name == runners[0].name:
            continue
        res["ratio"] = res["seconds"] / base["seconds"]
        res["cpu_ratio"] = res["cpu_seconds"] / base["cpu_seconds"] if base["cpu_seconds"] > 0 else None
        res["stdout_match"] = res["_stdout"] == base["_stdout"]
        res["status_match"] = res["status"] == base["status"]
        res["stderr_match"] = res["stderr_sha256"] == base["stderr_sha256"]
        if not res["stdout_match"]:
            res["stdout_difference"] = first_difference(base["_stdout"], res["_stdout"])
    for res in done.values():
        del res["_stdout"]
    v.rounds.append({n: len(v.runs[n]) - 1 for n in done})
    return time.perf_counter() - t0


def estimate_round(v, r, runners, args):
    """Expected duration of round r of v, from the mean run time so far."""
    total = 0.0
    for rn in runners:
        if rn.name not in v.prepared or v.prepared[rn.name].error is not None:
            continue
        if rn is not runners[0] and r >= rn.max_runs(args):
            continue
        runs = v.runs.get(rn.name, [])
        if runs:
            total += statistics.mean(x["seconds"] for x in runs)
        else:  # never ran: guess from native times and the timeout factor
            nat = v.runs.get(runners[0].name, [])
            total += (statistics.mean(x["seconds"] for x in nat) if nat else 5.0) * min(rn.timeout_factor, 10)
    return total


# ---------------------------------------------------------------------------
# Summaries and output
# ---------------------------------------------------------------------------

def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def summarize(v, runners):
    s = {"variant": v.name, "program": v.prog, "binary": str(v.binary), "error": v.error,
         "rounds": len(v.rounds), "runners": {}}
    base = runners[0].name
    for rn in runners:
        prep = v.prepared.get(rn.name)
        runs = v.runs.get(rn.name, [])
        e = {"error": prep.error if prep else None, "cost": prep.cost if prep else None,
             "prefix": prep.prefix if prep else None, "runs": runs}
        if runs:
            e["median_seconds"] = statistics.median(x["seconds"] for x in runs)
            e["median_cpu_seconds"] = statistics.median(x["cpu_seconds"] for x in runs)
        if rn.name != base and runs:
            ratios = [x["ratio"] for x in runs]
            cpu = [x["cpu_ratio"] for x in runs if x["cpu_ratio"] is not None]
            e.update({
                "pairs": len(ratios),
                "median_ratio": statistics.median(ratios),
                "min_ratio": min(ratios),
                "max_ratio": max(ratios),
                "median_cpu_ratio": statistics.median(cpu) if cpu else None,
                "stdout_mismatches": sum(not x["stdout_match"] for x in runs),
                "status_mismatches": sum(not x["status_match"] for x in runs),
                "stderr_mismatches": sum(not x["stderr_match"] for x in runs),
                "timeouts": sum(x["timed_out"] for x in runs),
            })
        s["runners"][rn.name] = e
    nat = v.runs.get(base, [])
    s["native_stdout_stable"] = len({x["stdout_sha256"] for x in nat}) <= 1
    return s


def pct(x, digits=1):
    return "—" if x is None else f"{100 * x:+.{digits}f}%"


def share(x):
    return "—" if x is None else f"{100 * x:.1f}%"


def ratio_cell(e):
    return "—" if not e or "median_ratio" not in e else f"{e['median_ratio']:.3f}"


def build_table(summaries, runners):
    peers = runners[1:]
    main = ATOMX_NULL.name
    head = ["variant", "procs moved", "bytes moved", "rewrite s (wall)", "analyze+rewrite s",
            "code MB/s", "file growth", "text growth", "native s", "pairs",
            "atomx null ratio", "min–max", "CPU ratio"]
    others = [rn for rn in peers if rn.name != main]
    for rn in others:
        head += [f"{rn.title} ratio", f"{rn.title} runs"]
    head.append("check")
    rows = []
    for s in summaries:
        e = s["runners"].get(main, {})
        c = e.get("cost") or {}
        nat = s["runners"].get(runners[0].name, {})
        problems = []
        if s["error"]:
            problems.append(s["error"])
        for rn in peers:
            pe = s["runners"].get(rn.name, {})
            if pe.get("error"):
                problems.append(f"{rn.title}: {pe['error']}")
            for key, what in (("stdout_mismatches", "STDOUT DIFFERS"), ("status_mismatches", "EXIT STATUS DIFFERS"),
                              ("timeouts", "TIMEOUT")):
                if pe.get(key):
                    problems.append(f"{rn.title}: {what} ({pe[key]}/{pe['pairs']})")
        if not s.get("native_stdout_stable", True):
            problems.append("native stdout not deterministic")
        row = [s["variant"],
               share(c.get("moved_procedures_share")), share(c.get("moved_bytes_share")),
               f"{c['median_wall_seconds']:.3f}" if c else "—",
               f"{c['median_internal_seconds']:.3f}" if c else "—",
               f"{c['code_mb_per_second_wall']:.2f}" if c else "—",
               pct(c.get("file_growth")), pct(c.get("text_growth")),
               f"{nat['median_seconds']:.2f}" if "median_seconds" in nat else "—",
               str(e.get("pairs", 0)),
               ratio_cell(e),
               f"{e['min_ratio']:.3f}–{e['max_ratio']:.3f}" if "min_ratio" in e else "—",
               f"{e['median_cpu_ratio']:.3f}" if e.get("median_cpu_ratio") else "—"]
        for rn in others:
            pe = s["runners"].get(rn.name, {})
            row += [ratio_cell(pe), str(pe.get("pairs", 0))]
        row.append("ok" if not problems else "**" + "; ".join(problems) + "**")
        rows.append(row)

    # summary row: geometric means of the ratios, totals of the counts
    costs = [s["runners"].get(main, {}).get("cost") for s in summaries]
    costs = [c for c in costs if c]
    g = {}
    for rn in peers:
        g[rn.name] = geomean([s["runners"].get(rn.name, {}).get("median_ratio") for s in summaries])
    gcpu = geomean([s["runners"].get(main, {}).get("median_cpu_ratio") for s in summaries])
    if costs:
        tp = sum(c["procedures"] for c in costs)
        tb = sum(c["code_bytes"] for c in costs)
        row = ["**geometric mean** (counts: total)",
               share(sum(c["moved_procedures"] for c in costs) / tp if tp else None),
               share(sum(c["moved_code_bytes"] for c in costs) / tb if tb else None),
               f"{geomean([c['median_wall_seconds'] for c in costs]):.3f}",
               f"{geomean([c['median_internal_seconds'] for c in costs]):.3f}",
               f"{geomean([c['code_mb_per_second_wall'] for c in costs]):.2f}",
               pct(geomean([1 + c["file_growth"] for c in costs]) - 1),
               pct(geomean([1 + c["text_growth"] for c in costs if c["text_growth"] is not None]) - 1),
               "—", "—",
               f"**{g[main]:.3f}**" if g.get(main) else "—", "—",
               f"{gcpu:.3f}" if gcpu else "—"]
        for rn in others:
            row += [f"**{g[rn.name]:.3f}**" if g.get(rn.name) else "—", "—"]
        row.append("")
        rows.append(row)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines), g, gcpu


def sh(cmd):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    except OSError:
        return None


def machine_info(args):
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {
        "nproc": sh(["nproc"]),
        "cpu_model": model,
        "kernel": platform.release(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "atomx_commit": sh(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]),
        "atomx_tree_dirty": bool(sh(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"])),
        "atomx_binary": str(args.atomx),
        "atomx_binary_mtime": datetime.datetime.fromtimestamp(args.atomx.stat().st_mtime).astimezone()
                                      .isoformat(timespec="seconds"),
        "atomx_version": sh([str(args.atomx), "--version"]),
        "python": platform.python_version(),
        "loadavg_start": Path("/proc/loadavg").read_text().split()[:3],
    }
    if args.peers:
        info["valgrind"] = sh(["valgrind", "--version"])
    return info


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", metavar="NAME", help="only variants whose name contains NAME")
    ap.add_argument("--runs", type=int, default=7, help="rounds (native/rewritten pairs) per variant, at most (default 7)")
    ap.add_argument("--min-runs", type=int, default=4, help="rounds the time budget never cuts below (default 4)")
    ap.add_argument("--budget", type=float, default=10,
                    help="minutes: stop starting new sweeps of rounds when the next two would not fit, "
                         "once --min-runs are done; 0 = no limit (default 10)")
    ap.add_argument("--rewrite-runs", type=int, default=5, help="atomx runs per variant for the rewrite cost (default 5)")
    ap.add_argument("--peers", action="store_true", help="also run valgrind --tool=none (nulgrind)")
    ap.add_argument("--peer-runs", type=int, default=3, help="rounds with the peers (default 3)")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default bench/results)")
    ap.add_argument("--atomx", type=Path, default=Path(os.environ.get("ATOMX", REPO / "build" / "bin" / "atomx")))
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("ATOMX_CHECK_TIMEOUT", 300)),
                    help="seconds per workload run (valgrind: x20) and per rewrite (default 300)")
    args = ap.parse_args()
    args.min_runs = max(1, min(args.min_runs, args.runs))
    if not args.atomx.is_file():
        sys.exit(f"null_rewrite: no atomx at {args.atomx} (build it, or pass --atomx)")
    t_start = time.perf_counter()
    deadline = t_start + args.budget * 60 if args.budget > 0 else None
    corpus_dir = Path(os.environ.get("ATOMX_CORPUS_DIR", Path.home() / ".cache" / "atomx-corpus"))
    runners = runners_for(args)
    info = machine_info(args)
    names = list_variants(args)
    if not names:
        sys.exit("null_rewrite: no variant matches (see corpus/build.sh --list)")

    work = Path(tempfile.mkdtemp(prefix="atomx-bench."))
    try:
        variants = []
        for n in names:
            prog = n.split("-")[0]
            v = Variant(n, prog, corpus_dir / "bin" / n, CORPUS / "workloads" / f"{prog}.sh", work / n)
            v.work.mkdir(parents=True)
            if not os.access(v.binary, os.X_OK):
                v.error = "not built"
            elif not v.workload.is_file():
                v.error = "no workload"
            variants.append(v)

        # phase 1: prepare every runner for every variant (rewrite cost)
        log(f"{len(variants)} variants, runners: {', '.join(r.name for r in runners)}")
        for v in variants:
            if v.error:
                log(f"{v.name}: {v.error}")
                continue
            for rn in runners:
                try:
                    v.prepared[rn.name] = rn.prepare(v, args)
                except (subprocess.TimeoutExpired, OSError, ValueError, KeyError) as ex:
                    v.prepared[rn.name] = Prepared(error=f"{type(ex).__name__}: {ex}")
                p = v.prepared[rn.name]
                if p.error:
                    log(f"{v.name}: {rn.name}: {p.error}")
            c = v.prepared.get(ATOMX_NULL.name)
            if c and c.cost:
                log(f"{v.name}: rewrite {c.cost['median_wall_seconds']:.3f}s, "
                    f"moved {c.cost['moved_procedures']}/{c.cost['procedures']} procedures")

        # phase 2: sweeps of rounds over all variants
        live = [v for v in variants if not v.error]
        stop_reason = f"--runs {args.runs} reached"
        for r in range(args.runs):
            # The budget is checked before every second round only, so that
            # native-first and native-second rounds stay balanced (the second
            # run of a pair tends to be a little faster).
            if r >= args.min_runs and r % 2 == 0 and deadline is not None:
                nxt = [q for q in (r, r + 1) if q < args.runs]
                need = sum(estimate_round(v, q, runners, args) for v in live for q in nxt)
                left = deadline - time.perf_counter()
                if need > left:
                    stop_reason = (f"time budget: after {r} rounds, the next {len(nxt)} sweep(s) (~{need:.0f}s) "
                                   f"would not fit in the {max(left, 0):.0f}s left")
                    log(stop_reason)
                    break
            t0 = time.perf_counter()
            for v in live:
                do_round(v, r, runners, args)
            log(f"round {r + 1}/{args.runs} done in {time.perf_counter() - t0:.0f}s "
                f"(elapsed {time.perf_counter() - t_start:.0f}s)")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    summaries = [summarize(v, runners) for v in variants]
    table, g, gcpu = build_table(summaries, runners)
    elapsed = time.perf_counter() - t_start
    info["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    settings = {"runs": args.runs, "min_runs": args.min_runs, "budget_minutes": args.budget,
                "rewrite_runs": args.rewrite_runs, "peers": args.peers, "peer_runs": args.peer_runs,
                "only": args.only, "timeout": args.timeout}
    rounds = sorted({s["rounds"] for s in summaries if not s["error"]})
    header = (f"Null-rewrite benchmark, {info['date']}: {info['nproc']} CPUs ({info['cpu_model']}), "
              f"Linux {info['kernel']}, atomx {info['atomx_commit']}"
              f"{' (+ uncommitted changes)' if info['atomx_tree_dirty'] else ''}; "
              f"load average {' '.join(info['loadavg_start'])} at start, {' '.join(info['loadavg_end'])} at end.\n"
              f"Rounds per variant: {', '.join(map(str, rounds)) or '0'} ({stop_reason}); "
              f"rewrite runs: {args.rewrite_runs}; benchmark wall time {elapsed / 60:.1f} min.\n"
              f"Ratios: runner / native whole-workload wall time per round; median over the rounds. "
              f"CPU ratio: the same with user+sys CPU time.")
    md = header + "\n\n" + table + "\n"
    print(md)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "null_rewrite.md").write_text(md)
    doc = {"machine": info, "settings": settings, "elapsed_seconds": elapsed, "stop_reason": stop_reason,
           "runners": [{"name": r.name, "title": r.title} for r in runners],
           "geomean_ratio": g, "geomean_cpu_ratio_atomx_null": gcpu, "variants": summaries}
    (args.out / "null_rewrite.json").write_text(json.dumps(doc, indent=1) + "\n")
    log(f"wrote {args.out / 'null_rewrite.md'} and {args.out / 'null_rewrite.json'} "
        f"({elapsed / 60:.1f} min)")
    bad = any("**" in line.split("|")[-2] for line in table.splitlines()[2:] if line.count("|") > 2)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
