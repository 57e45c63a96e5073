#!/usr/bin/env python3
"""Rewrite-speed benchmark: MB of code per second and where the time goes.

    bench/rewrite_speed.py [--runs N] [--out DIR] [--work DIR] [--corpus NAME...]

Inputs: a large C++ program with full debug information -- atomx itself,
relinked from build/ with -Wl,--emit-relocs into --work (its link command is
build/CMakeFiles/atomx.dir/link.txt; a RelWithDebInfo build has -g) -- and
the corpus's largest programs for comparison (sqlite3, lua; --corpus).

Each input is rewritten with the null tool, `atomx B -o OUT --report R.json
-q`, --runs times (default 7, at least 5), the inputs taking turns (run 1 of
every input, then run 2, ...) so a change of the machine's load spreads over
all rows; before each run (untimed) the previous output is removed and the
file systems synced, so no run competes with the writeback of the ones
before it.  Per input: the median wall time around the process, MB of code
(the report's code_bytes) per second of that wall time, the input and
output file sizes, the median of each phase of the report's "phases" and of
its total_seconds, and whether every output was byte-identical.  The load
average is recorded before and after.  Output: a Markdown table on stdout
and in DIR/rewrite_speed.md, every raw run in DIR/rewrite_speed.json.
Python 3 standard library only; machine_info comes from null_rewrite.py.
"""

import argparse
import hashlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
import null_rewrite  # noqa: E402  (machine_info, REPO)

REPO = null_rewrite.REPO
# The report's phases, in the order they run (the analysis's steps are
# "analyze.*"); a phase a report lacks counts 0.
PHASES = ["load", "analyze.relocations", "analyze.procedures", "analyze.decode", "analyze.unwind",
          "analyze.jumpTables", "analyze.codeReferences", "analyze.cfg", "analyze.movability", "layOutCode",
          "buildUnwindTables", "layOutSegments", "emitCode", "patchFile", "writeElf", "writeFile"]
DEFAULT_CORPUS = ["sqlite3-gcc-O2", "sqlite3-clang-O2", "lua-gcc-O3", "lua-gcc-O2"]


def log(msg):
    print(f"[rewrite_speed {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def relink_atomx(build, work):
    """build/bin/atomx linked again with --emit-relocs into WORK/atomx (kept while it is newer)."""
    link = build / "CMakeFiles" / "atomx.dir" / "link.txt"
    src = build / "bin" / "atomx"
    out = work / "atomx"
    if out.exists() and out.stat().st_mtime >= src.stat().st_mtime and out.stat().st_mtime >= link.stat().st_mtime:
        return out
    words = shlex.split(link.read_text())
    i = words.index("-o")
    words[i + 1] = str(out)
    words.insert(1, "-Wl,--emit-relocs")
    log(f"relinking atomx with --emit-relocs into {out}")
    subprocess.run(words, cwd=build, check=True)
    return out


def rewrite_once(atomx, binary, work):
    out, rep = work / "out", work / "report.json"
    for f in (out, rep):
        if f.exists():
            f.unlink()
    # The runs before wrote up to 100 MB each: let the kernel put them on disk
    # now rather than during this run (a user's one rewrite finds no such
    # backlog; this run's own writeback still happens after it, untimed).
    os.sync()
    t0 = time.perf_counter()
    p = subprocess.run([str(atomx), str(binary), "-o", str(out), "--report", str(rep), "-q"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"rewrite_speed: atomx {binary} exited {p.returncode}: {p.stdout.decode(errors='replace')[-500:]}")
    h = hashlib.sha256()
    with open(out, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return wall, json.loads(rep.read_text()), h.hexdigest()


def summarize(name, binary, runs):
    walls = [r["wall"] for r in runs]
    reports = [r["report"] for r in runs]
    last = reports[-1]
    wall = statistics.median(walls)
    phases = {p: statistics.median(r["phases"].get(p, 0.0) for r in reports) for p in PHASES}
    return {
        "input": name,
        "binary": str(binary),
        "runs": len(runs),
        "median_wall_seconds": wall,
        "min_wall_seconds": min(walls),
        "max_wall_seconds": max(walls),
        "code_bytes": last["code_bytes"],
        "moved_code_bytes": last["moved_code_bytes"],
        "code_mb_per_second": last["code_bytes"] / 1e6 / wall,
        "input_file_bytes": last["input_file_bytes"],
        "output_file_bytes": last["output_file_bytes"],
        "median_total_seconds": statistics.median(r["total_seconds"] for r in reports),
        "median_phase_seconds": phases,
        "output_deterministic": len({r["digest"] for r in runs}) == 1,
        "wall_seconds": walls,
    }


def table(rows):
    head = ["input", "code MB", "file MB", "wall s (median)", "min-max", "code MB/s", "total s", "analyze (sum)"] + \
           [p.replace("analyze.", "a.") for p in PHASES] + ["same bytes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in rows:
        tot = s["median_total_seconds"]
        cells = [s["input"], "%.2f" % (s["code_bytes"] / 1e6), "%.1f" % (s["input_file_bytes"] / 1e6),
                 "%.3f" % s["median_wall_seconds"], "%.3f-%.3f" % (s["min_wall_seconds"], s["max_wall_seconds"]),
                 "%.2f" % s["code_mb_per_second"], "%.3f" % tot]
        analyze = sum(v for p, v in s["median_phase_seconds"].items() if p.startswith("analyze."))
        cells.append("%.3f (%d%%)" % (analyze, round(100 * analyze / tot) if tot else 0))
        cells += ["%.3f (%d%%)" % (v, round(100 * v / tot) if tot else 0) for v in s["median_phase_seconds"].values()]
        cells.append("yes" if s["output_deterministic"] else "**no**")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7, help="rewrites per input (default 7, at least 5)")
    ap.add_argument("--atomx", type=Path, default=REPO / "build" / "bin" / "atomx")
    ap.add_argument("--build", type=Path, default=REPO / "build", help="build tree whose atomx is relinked")
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "atomx-rewrite-speed")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    ap.add_argument("--corpus", nargs="*", default=DEFAULT_CORPUS, help="corpus variants to compare with")
    args = ap.parse_args()
    args.runs = max(args.runs, 5)
    args.atomx = args.atomx.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    corpus_dir = Path(os.environ.get("ATOMX_CORPUS_DIR", Path.home() / ".cache" / "atomx-corpus")) / "bin"

    inputs = [("atomx (itself, -g)", relink_atomx(args.build.resolve(), args.work))]
    inputs += [(n, corpus_dir / n) for n in args.corpus if (corpus_dir / n).exists()]
    info = null_rewrite.machine_info(SimpleNamespace(atomx=args.atomx, peers=False))
    log(f"load average {' '.join(info['loadavg_start'])}; {len(inputs)} inputs x {args.runs} runs")
    runs = {name: [] for name, _ in inputs}
    scratch = args.work / "rewrite"
    scratch.mkdir(exist_ok=True)
    for k in range(args.runs):
        for name, binary in inputs:
            wall, report, digest = rewrite_once(args.atomx, binary, scratch)
            runs[name].append({"wall": wall, "report": {key: report[key] for key in
                                                       ("code_bytes", "moved_code_bytes", "input_file_bytes",
                                                        "output_file_bytes", "total_seconds", "phases")},
                               "digest": digest})
        log(f"run {k + 1}/{args.runs} done")
    info["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    rows = [summarize(name, binary, runs[name]) for name, binary in inputs]
    md = table(rows)
    header = (f"atomx {info['atomx_commit']}{' (+ uncommitted changes)' if info['atomx_tree_dirty'] else ''}, "
              f"{info['date']}, {info['nproc']} CPUs ({info['cpu_model']}), load average "
              f"{' '.join(info['loadavg_start'])} at start, {' '.join(info['loadavg_end'])} at end; "
              f"{args.runs} runs per input, medians.  Phases: median seconds (share of the median total_seconds); "
              f"a.X is the analysis's step analyze.X.")
    print(header + "\n\n" + md)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rewrite_speed.md").write_text(header + "\n\n" + md + "\n")
    (args.out / "rewrite_speed.json").write_text(json.dumps({"machine": info, "runs": args.runs, "rows": rows,
                                                             "raw": runs}, indent=1) + "\n")
    return 0 if all(r["output_deterministic"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
