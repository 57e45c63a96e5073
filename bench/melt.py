#!/usr/bin/env python3
"""bench/melt.py: how fast `atomx melt` mines, and in how much memory.

For each target size (instructions, default 1e7 and 1e8; --sizes
1e7,1e8,1e9), gzip-gcc-O2 from the corpus compresses generated text sized to
run about that many instructions (--program and --bytes-per-size change it),
traced with `atomx trace`.  Then, on that trace:
  regen   `atomx regen TRACE --summary`: regeneration alone, the floor;
  seed    `atomx melt TRACE --method seed` (two regenerations: coverage,
          then melting at the knee);
  exact   `atomx melt TRACE --method exact` (one regeneration).
Each runs --runs times (default 3); the table has the median wall time,
instructions mined per second (executed instructions / wall time), and the
peak resident memory (the largest ru_maxrss of the runs, from wait4 on that
process alone) in MB and in bytes per executed instruction.
Output: a Markdown table on stdout and in bench/results/melt.md, the raw
figures in bench/results/melt.json (--out DIR), with the machine and commit.
"""
import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd, stdout=subprocess.DEVNULL):
    """Wall seconds and peak RSS (bytes) of one process, by wait4."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {err.strip()}")
    return wall, usage.ru_maxrss * 1024


def text(path, size):
    rnd = random.Random(16)
    words = ("melting trace sequence the of and instruction frequent loop enqueue queue node distance path "
             "threshold chunk coverage knee histogram block").split()
    with open(path, "w") as f:
        n = 0
        while n < size:
            line = " ".join(rnd.choice(words) for _ in range(12)) + "\n"
            f.write(line)
            n += len(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", default=os.path.join(ROOT, "build/bin/atomx"))
    ap.add_argument("--program", default=os.path.join(os.environ.get("ATOMX_CORPUS_DIR", os.path.expanduser(
        "~/.cache/atomx-corpus")), "bin/gzip-gcc-O2"))
    ap.add_argument("--sizes", default="1e7,1e8")
    ap.add_argument("--instructions-per-byte", type=float, default=146.0,
                    help="gzip -6's instructions per input byte on this text (measured: 146)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    a = ap.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in (float(s) for s in a.sizes.split(",")):
            src = os.path.join(tmp, f"in-{size:g}.txt")
            text(src, int(size / a.instructions_per_byte))
            trace = os.path.join(tmp, f"trace-{size:g}")
            with open(os.devnull, "w") as null:
                subprocess.run([a.atomx, "trace", "-q", "-o", trace, "--", a.program, "-n", "-6", "-c", src],
                               check=True, stdout=null)
            summary = subprocess.run([a.atomx, "regen", trace, "--summary"], check=True, capture_output=True,
                                     text=True).stdout.split()
            executed = int(summary[summary.index("instructions") + 1])
            stream = int(summary[summary.index("stream-bytes") + 1])
            row = {"target": size, "input_bytes": os.path.getsize(src), "instructions": executed,
                   "stream_bytes": stream, "modes": {}}
            for mode, cmd in (("regen", [a.atomx, "regen", trace, "--summary"]),
                              ("seed", [a.atomx, "melt", trace, "--method", "seed"]),
                              ("exact", [a.atomx, "melt", trace, "--method", "exact"])):
                walls, peaks = [], []
                for _ in range(a.runs):
                    w, m = run(cmd)
                    walls.append(w)
                    peaks.append(m)
                row["modes"][mode] = {"walls": walls, "peaks": peaks, "wall": statistics.median(walls),
                                      "peak": max(peaks)}
                print(f"{size:g} {mode}: {statistics.median(walls):.2f} s, {max(peaks) / 2**20:.0f} MB",
                      file=sys.stderr)
            rows.append(row)

    lines = ["| instructions | trace bytes | method | wall s | M instructions/s | peak MB | bytes/instruction |",
             "| ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        for mode, m in r["modes"].items():
            lines.append(f"| {r['instructions']:,} | {r['stream_bytes']:,} | {mode} | {m['wall']:.2f} | "
                         f"{r['instructions'] / m['wall'] / 1e6:.0f} | {m['peak'] / 2**20:.1f} | "
                         f"{m['peak'] / r['instructions']:.3f} |")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                                text=True).stdout.strip())
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    head = (f"atomx melt on {os.path.basename(a.program)} -n -6 (atomx {commit}{' +changes' if dirty else ''}, "
            f"{cpu}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, {time.strftime('%Y-%m-%d')}; "
            f"median of {a.runs} runs; peak: largest ru_maxrss)")
    table = head + "\n\n" + "\n".join(lines) + "\n"
    print(table)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "melt.md"), "w") as f:
        f.write(table)
    with open(os.path.join(a.out, "melt.json"), "w") as f:
        json.dump({"program": a.program, "commit": commit, "dirty": dirty, "cpu": cpu, "cores": os.cpu_count(),
                   "kernel": platform.release(), "date": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": a.runs,
                   "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
