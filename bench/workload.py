#!/usr/bin/env python3
"""Workload benchmark: a whole multi-process workload traced by `atomx trace`, beside DynamoRIO's drmemtrace.

    bench/workload.py [--short] [--runs N] [--mb MB] [--make-mb MB] [--only pipeline,make] [--peers drmemtrace|none]
    bench/workload.py --log-share [--mb MB] [--make-mb MB]   (the schedule log's share of the trace alone)

Two workloads of corpus programs (CORPUS_BIN: $ATOMX_CORPUS_DIR/bin, default
~/.cache/atomx-corpus/bin, the --variant gcc-O2 builds copied to a bin
directory as gzip, bzip2 and lzip, first on PATH), on pseudo-English text
from corpus/workloads/_common.sh's gen_text (fixed seeds, so every run
does the same work):

  pipeline   sh -c 'gzip -n -c in.txt | bzip2 -c | lzip -c >out.lz'  (--mb MB of input)
  make       make -j2: six jobs, two files each compressed by gzip -9, bzip2
             and lzip (--make-mb MB per file), each job through make's sh

Configurations, each run in a fresh scratch directory under `env -i` (PATH,
HOME, TMPDIR, LC_ALL=C, TZ=UTC):

  native            the workload as it is
  stored            atomx trace -q --cache-dir C -o DIR -- WORKLOAD (every process followed,
                    each instrumentable program run as its instrumented copy, the privileged
                    schedule log on: this machine runs the benchmark as root)
  stored-nosched    the same with --no-schedule
  data, data-nosched   the same two with --data
  followed-discarded   atomx trace -- env -u ATOMX_TRACE_DIR WORKLOAD: followed and instrumented as
                    stored, the log on, but the programs' stores discarded (no trace dir in their
                    environment): the supervisor's and the log's cost without the stores
  discarded         the instrumented copies (atomx trace --instrument) first on PATH, no
                    ATOMX_TRACE_DIR: the witness stores run, their bytes are thrown away
                    (docs/trace.md); no supervisor, no log
  discarded-data    the same with --data copies
  drmemtrace        DynamoRIO 11.3's drrun -t drmemtrace -offline -outdir O -- WORKLOAD
                    (--peers; DR follows children through sh and make by default);
                    ~/.cache/peers/dr-min, unpacked from ../shared/peers as its README says

Time: wall time of the whole workload (time.perf_counter() around the
process).  Each configuration's run is paired with a native run right
before or after it (the order alternates from round to round and from
configuration to configuration), its ratio is the pair's; a configuration's
slowdown is the median of its --runs pairwise ratios (min and max beside it).
A warm-up run of every configuration comes first, untimed (it fills the
program cache: first-use instrumentation is reported apart).

Trace metrics, from the first round's trace of each stored configuration
(none with --no-regen): `atomx regen DIR --summary` (instructions: the
traced programs' own code, not libc or the loader; raw stream bytes) and
its wall time (regeneration speed); for stored and data (the schedule log
on), `atomx regen DIR --merge --summary` (merge speed; exit status 1 if a
thread's order is known only in part) and the log's header and frames
(its records: the context switches logged, and those lost); compressed
bytes are the .axt files as the recorder wrote them (zstd), the schedule
log's are TRACE/schedule's (zstd frames since its version 2).  drmemtrace's bytes are its raw/*.raw.lz4
files (already lz4-compressed) per process, measured then deleted each
round; its bytes per instruction use atomx's instruction count of the same
workload (what DR records beyond it -- libc, the loader, sh and make -- is
in its numerator, as in bench/trace.py), and are also given for the traced
programs' processes alone (not sh, not make).

Targets (issue 38): whole workload <= 1.5x native with data references
stored; schedule log <= 1% of the trace.  Cells that miss are marked.

Output: DIR/workload.md and DIR/workload.json (every raw timing, the
machine, the atomx commit, the settings), DIR = --out (default
bench/results).  Exit status 1 if a row is flagged: a configuration whose
output files differ from native's or that exited non-zero, a regeneration
that failed.  Python 3 standard library only.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import null_rewrite as nr  # noqa: E402  (machine info)
import trace as tr  # noqa: E402  (summary parsing, compressor, human sizes)

REPO = nr.REPO
TARGET_RATIO_DATA = 1.5   # whole workload, data references stored, x native
TARGET_SCHEDULE_SHARE = 0.01
MISS = " ✗"
PROGRAMS = ("gzip", "bzip2", "lzip")
ATOMX_CONFIGS = {            # name: atomx trace options
    "stored": [],
    "stored-nosched": ["--no-schedule"],
    "data": ["--data"],
    "data-nosched": ["--data", "--no-schedule"],
}
REGENERATED = ("stored", "data")  # merge speed measured on these (the --no-schedule ones: regen --summary only)
DISCARDED = {"discarded": "bin-traced", "discarded-data": "bin-traced-data"}


def log(msg):
    print(f"[workload {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def gen_text(seed, nbytes, path):
    """corpus/workloads/_common.sh's gen_text, enough lines for nbytes (about 61.5 bytes a line), cut there."""
    lines = int(nbytes / 55) + 100
    p = subprocess.run(["bash", "-c", f'set -euo pipefail; . "$1"; gen_text {seed} {lines}', "bash",
                        str(REPO / "corpus/workloads/_common.sh")], stdout=subprocess.PIPE, check=True)
    if len(p.stdout) < nbytes:
        sys.exit(f"workload.py: gen_text {seed} {lines} gave {len(p.stdout)} bytes, fewer than {nbytes}")
    path.write_bytes(p.stdout[:nbytes])


MAKEFILE = """\
# six jobs: two files each through gzip -9, bzip2 and lzip (each recipe runs through sh: a redirection)
all: p1.gz p2.gz p3.bz2 p4.bz2 p5.lz p6.lz
p1.gz: {d}/p1.txt
\tgzip -n -9 -c $< >$@
p2.gz: {d}/p2.txt
\tgzip -n -9 -c $< >$@
p3.bz2: {d}/p3.txt
\tbzip2 -c $< >$@
p4.bz2: {d}/p4.txt
\tbzip2 -c $< >$@
p5.lz: {d}/p5.txt
\tlzip -c $< >$@
p6.lz: {d}/p6.txt
\tlzip -c $< >$@
"""


def workloads(args, data):
    w = {}
    if "pipeline" in args.only:
        w["pipeline"] = {"cmd": ["sh", "-c", f"gzip -n -c {data}/in.txt | bzip2 -c | lzip -c >out.lz"],
                         "outputs": ["out.lz"], "input_bytes": (data / "in.txt").stat().st_size}
    if "make" in args.only:
        w["make"] = {"cmd": ["make", "-s", "-j2", "-f", str(data / "Makefile")],
                     "outputs": ["p1.gz", "p2.gz", "p3.bz2", "p4.bz2", "p5.lz", "p6.lz"],
                     "input_bytes": sum((data / f"p{i}.txt").stat().st_size for i in range(1, 7))}
    return w


def prepare(args, work):
    """Inputs, the native bin directory, and the instrumented copies (--instrument; timed)."""
    data = work / "data"
    data.mkdir()
    gen_text(1, int(args.mb * 1e6), data / "in.txt")
    for i in range(1, 7):
        gen_text(10 + i, int(args.make_mb * 1e6), data / f"p{i}.txt")
    (data / "Makefile").write_text(MAKEFILE.format(d=data))
    native = work / "bin"
    native.mkdir()
    for p in PROGRAMS:
        src = args.corpus_bin / f"{p}-{args.variant}"
        if not src.exists():
            sys.exit(f"workload.py: {src} is missing (corpus/build.sh; ATOMX_CORPUS_DIR)")
        shutil.copy2(src, native / p)
    inst = {}
    for name, opts in (("bin-traced", []), ("bin-traced-data", ["--data"])):
        (work / name).mkdir()
        for p in PROGRAMS:
            cmd = [str(args.atomx), "trace", "-q", *opts, "--cache-dir", str(work / "icache"), "--instrument",
                   str(work / name / p), "-o", str(work / f"manifest-{name}-{p}"), "--", str(native / p)]
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL)
            inst[f"{name}/{p}"] = time.perf_counter() - t0
    return data, native, inst


def env_for(work, bindir, extra=None):
    e = {"PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin", "HOME": str(work / "home"), "LC_ALL": "C",
         "TZ": "UTC", "TMPDIR": str(work / "tmp")}
    e.update(extra or {})
    return e


class Runner:
    def __init__(self, args, work, data, native):
        self.args, self.work, self.data, self.native = args, work, data, native
        self.n = 0
        self.reference = {}   # workload: {output: bytes} of the first native run
        (work / "home").mkdir()
        (work / "tmp").mkdir()

    def command(self, wl, config, tdir):
        a = self.args
        if config == "native" or config in DISCARDED:
            return wl["cmd"]
        if config in ATOMX_CONFIGS:
            return [str(a.atomx), "trace", "-q", *ATOMX_CONFIGS[config], "--cache-dir", str(self.work / "cache"),
                    "-o", str(tdir), "--", *wl["cmd"]]
        if config == "followed-discarded":
            # docs/trace.md: a process whose environment lost ATOMX_TRACE_DIR runs its instrumented copy with the
            # stores discarded (env is coreutils': untraced)
            return [str(a.atomx), "trace", "-q", "--cache-dir", str(self.work / "cache"), "-o", str(tdir), "--",
                    "env", "-u", "ATOMX_TRACE_DIR", *wl["cmd"]]
        if config == "drmemtrace":
            return [str(a.dr / "bin64/drrun"), "-t", "drmemtrace", "-offline", "-outdir", str(tdir), "--",
                    *wl["cmd"]]
        raise ValueError(config)

    def run(self, wname, wl, config, keep=False):
        """One run in a fresh scratch directory: wall seconds, status, whether the outputs equal native's."""
        self.n += 1
        scratch = self.work / "scratch" / f"{self.n}"
        scratch.mkdir(parents=True)
        tdir = self.work / "traces" / f"{wname}.{config}.{self.n}"
        if config == "drmemtrace":
            tdir.mkdir(parents=True)
        else:
            tdir.parent.mkdir(parents=True, exist_ok=True)
        bindir = self.work / DISCARDED.get(config, "bin")
        cmd = self.command(wl, config, tdir)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=scratch, env=env_for(self.work, bindir), stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=self.args.timeout)
        wall = time.perf_counter() - t0
        outs = {o: (scratch / o).read_bytes() if (scratch / o).exists() else None for o in wl["outputs"]}
        if config == "native" and wname not in self.reference:
            self.reference[wname] = outs
        ref = self.reference.get(wname)
        res = {"config": config, "seconds": wall, "status": p.returncode,
               "outputs_equal": ref is None or outs == ref,
               "differing_outputs": sorted(o for o in outs if ref and outs[o] != ref.get(o))}
        if p.returncode != 0:
            res["stderr"] = p.stderr.decode(errors="replace")[-500:]
        shutil.rmtree(scratch)
        if config == "followed-discarded":
            shutil.rmtree(tdir, ignore_errors=True)
        if config in ATOMX_CONFIGS or config == "drmemtrace":
            res.update(trace_files(tdir, config))
            if keep:
                res["trace_dir"] = str(tdir)
            else:
                shutil.rmtree(tdir, ignore_errors=True)
        return res


def trace_files(tdir, config):
    if config == "drmemtrace":
        per = {}
        for d in tdir.glob("drmemtrace.*.dir"):
            prog = d.name.split(".")[1]
            per[prog] = per.get(prog, 0) + sum(f.stat().st_size for f in d.rglob("*.raw.lz4"))
        return {"dr_bytes": sum(per.values()), "dr_bytes_by_program": per,
                "dr_bytes_traced_programs": sum(v for k, v in per.items() if k in PROGRAMS),
                "dr_processes": len(list(tdir.glob("drmemtrace.*.dir")))}
    axt = list(tdir.glob("*.axt"))
    sched = tdir / "schedule"
    return {"axt_bytes": sum(f.stat().st_size for f in axt), "streams": len(axt),
            "schedule_bytes": sched.stat().st_size if sched.exists() else 0,
            "trace_dir_bytes": sum(f.stat().st_size for f in tdir.iterdir() if f.is_file())}


def timed_regen(args, tdir, extra):
    t0 = time.perf_counter()
    p = subprocess.run([str(args.atomx), "regen", str(tdir), *extra], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=args.timeout * 20)
    wall = time.perf_counter() - t0
    return {"seconds": wall, "status": p.returncode, "summary": tr.parse_summary(p.stdout),
            "stderr": p.stderr.strip()[-500:]}


def schedule_records(path):
    """(records, lost, record size) of a schedule log: the AtomxScheduleHeader (include/atomx/trace_format.h:
    magic, version, recordSize, reserved, lost), then (version 2) frames, each an AtomxScheduleFrame (magic,
    records, storedSize, checksum) and its zstd bytes; version 1: the records, uncompressed."""
    data = path.read_bytes()
    magic, version, size, _, lost = struct.unpack_from("<IIIIQ", data)
    if magic != 0x48535841 or not size:
        return None, None, None
    if version == 1:
        return (len(data) - 24) // size, lost, size
    at, n = 24, 0
    while at + 16 <= len(data):
        _, records, stored, _ = struct.unpack_from("<IIII", data, at)
        n, at = n + records, at + 16 + stored
    return n, lost, size


def measure_trace(args, res, merge=True):
    """Regeneration, merge and the schedule log of a kept trace."""
    tdir = Path(res["trace_dir"])
    m = {"regen": timed_regen(args, tdir, ["--summary"])}
    if merge and res["config"] in REGENERATED:
        m["merge"] = timed_regen(args, tdir, ["--merge", "--summary"])
    if res["schedule_bytes"]:
        m["switches"], m["switches_lost"], m["record_bytes"] = schedule_records(tdir / "schedule")
    shutil.rmtree(tdir, ignore_errors=True)
    return m


def log_share(args, runner, wls):
    """--log-share: the schedule log's share of each stored configuration's trace (one run each)."""
    L = ["| workload | configuration | instructions | trace bytes | switches | schedule bytes | schedule B / switch | "
         "schedule share |", "|---|---|---|---|---|---|---|---|"]
    for w, wl in wls.items():
        runner.run(w, wl, "stored")  # (warm-up: the program cache)
        for c in REGENERATED:
            x = runner.run(w, wl, c, True)
            m = measure_trace(args, x, merge=False)
            s = m["regen"]["summary"]
            share = x["schedule_bytes"] / x["trace_dir_bytes"]
            L.append(f"| {w} | {c} | {s['instructions'] if s else 0:,} | {x['trace_dir_bytes']:,} | {m.get('switches')} | "
                     f"{x['schedule_bytes']:,} | {f(x['schedule_bytes'] / m['switches'], 1) if m.get('switches') else '–'}"
                     f" | {share:.3%}{MISS if share > TARGET_SCHEDULE_SHARE else ''} |")
            log(L[-1])
    return "\n".join(L)


def configs_of(args):
    cs = list(ATOMX_CONFIGS) + ["followed-discarded"] + list(DISCARDED)
    if args.peers == "drmemtrace":
        cs.append("drmemtrace")
    return cs


def sweep(args, runner, wls):
    """Warm-up, then --runs rounds of pairs (native, X), the order alternating."""
    cs = configs_of(args)
    raw = {w: {"warmup": [], "pairs": {c: [] for c in cs}} for w in wls}
    for w, wl in wls.items():
        raw[w]["warmup"].append(runner.run(w, wl, "native"))
        for c in cs:
            r = runner.run(w, wl, c)
            raw[w]["warmup"].append(r)
            log(f"{w} warm-up {c}: {r['seconds']:.2f}s status {r['status']}")
    for rnd in range(args.runs):
        for w, wl in wls.items():
            for i, c in enumerate(cs):
                keep = rnd == 0 and c in ATOMX_CONFIGS
                if (rnd + i) % 2 == 0:
                    nat = runner.run(w, wl, "native")
                    x = runner.run(w, wl, c, keep)
                else:
                    x = runner.run(w, wl, c, keep)
                    nat = runner.run(w, wl, "native")
                x["ratio"] = x["seconds"] / nat["seconds"]
                raw[w]["pairs"][c].append({"native": nat, "x": x})
            log(f"{w} round {rnd + 1}: " + ", ".join(
                f"{c} {raw[w]['pairs'][c][-1]['x']['ratio']:.2f}x" for c in cs))
    for w in wls:   # regenerate after the sweeps: a run's native partner comes right after it
        for c in ATOMX_CONFIGS:
            x = raw[w]["pairs"][c][0]["x"]
            if "trace_dir" in x and args.no_regen:
                shutil.rmtree(x["trace_dir"], ignore_errors=True)
            elif "trace_dir" in x:
                x["measured"] = measure_trace(args, x)
                g, mg = x["measured"]["regen"], x["measured"].get("merge")
                log(f"{w} {c}: regen --summary {g['seconds']:.2f}s status {g['status']}"
                    + (f"; --merge --summary {mg['seconds']:.2f}s status {mg['status']}" if mg else ""))
    return raw


def summarize(args, raw):
    out = {}
    for w, r in raw.items():
        s = {"configs": {}, "problems": []}
        for c, pairs in r["pairs"].items():
            ratios = [p["x"]["ratio"] for p in pairs]
            e = {"ratio": med(ratios), "ratio_min": min(ratios, default=None), "ratio_max": max(ratios, default=None),
                 "seconds": med(p["x"]["seconds"] for p in pairs),
                 "native_seconds": med(p["native"]["seconds"] for p in pairs)}
            for p in pairs + [{"x": x} for x in r["warmup"] if x["config"] == c]:
                for x in (p["x"], p.get("native")):
                    if x and (x["status"] != 0 or not x["outputs_equal"]):
                        s["problems"].append(f"{x['config']}: status {x['status']}, outputs differing from native: "
                                             f"{x['differing_outputs']} {x.get('stderr', '')[-200:]}".strip())
            if c in ATOMX_CONFIGS and pairs and "measured" in pairs[0]["x"]:
                x = pairs[0]["x"]
                m = x["measured"]
                g, mg = m["regen"], m.get("merge")
                if g["status"] != 0 or not g["summary"]:
                    s["problems"].append(f"{c}: regen --summary exited {g['status']}: {g['stderr'][-200:]}")
                elif g["summary"]["incomplete-threads"]:
                    s["problems"].append(f"{c}: regen: {g['summary']['incomplete-threads']} incomplete thread(s)")
                n = g["summary"]["instructions"] if g["summary"] else None
                e["instructions"] = n
                e["streams"] = x["streams"]
                if n:
                    e["raw_bytes_per_instruction"] = g["summary"]["stream-bytes"] / n
                    e["compressed_bytes_per_instruction"] = x["axt_bytes"] / n
                    e["regen_instructions_per_second"] = n / g["seconds"]
                    if mg and mg["status"] == 0:
                        e["merge_instructions_per_second"] = n / mg["seconds"]
                    elif mg:
                        e["merge_error"] = f"exit {mg['status']}: {mg['stderr'][-200:]}"
                e["trace_bytes"] = x["trace_dir_bytes"]
                e["schedule_bytes"] = x["schedule_bytes"]
                if x["schedule_bytes"]:
                    e["switches"] = m.get("switches")
                    e["switches_lost"] = m.get("switches_lost")
                    e["schedule_share"] = x["schedule_bytes"] / x["trace_dir_bytes"]
                    if n:
                        e["schedule_bytes_per_instruction"] = x["schedule_bytes"] / n
                    if m.get("switches"):
                        e["schedule_bytes_per_switch"] = x["schedule_bytes"] / m["switches"]
            if c == "drmemtrace":
                e["dr_bytes"] = med(p["x"]["dr_bytes"] for p in pairs)
                e["dr_bytes_traced_programs"] = med(p["x"]["dr_bytes_traced_programs"] for p in pairs)
                e["dr_processes"] = pairs[0]["x"]["dr_processes"] if pairs else None
            s["configs"][c] = e
        n = s["configs"].get("stored", {}).get("instructions")
        dr = s["configs"].get("drmemtrace")
        if dr and n:
            dr["bytes_per_instruction"] = dr["dr_bytes"] / n
            dr["traced_programs_bytes_per_instruction"] = dr["dr_bytes_traced_programs"] / n
        out[w] = s
    return out


def f(x, d=2, miss=False):
    return "–" if x is None else f"{x:.{d}f}" + (MISS if miss else "")


def build_md(args, sums, raw, wls, machine, inst, cmdline):
    L = ["# Workload benchmark: a whole workload traced (`bench/workload.py`)", "",
         f"Produced by `{cmdline}` on {machine['date']} (atomx {machine['atomx_commit']}"
         f"{' dirty' if machine['atomx_tree_dirty'] else ''}, {machine['nproc']} CPUs, {machine['cpu_model']}, "
         f"kernel {machine['kernel']}; load average {' '.join(machine['loadavg_start'])} at start, "
         f"{' '.join(machine.get('loadavg_end', []))} at end).  Every raw timing is in workload.json.", ""]
    for w, wl in wls.items():
        L.append(f"- **{w}**: `{shlex.join(wl['cmd'])}`, {wl['input_bytes'] / 1e6:.1f} MB of input "
                 f"(gen_text), corpus programs {args.variant}.")
    L += ["", "## Slowdown of the whole workload (median of pairwise ratios to native)", "",
          f"{args.runs} pairs per cell (min–max in brackets); ✗: misses ≤ {TARGET_RATIO_DATA}× native "
          "(the target is for data references stored).", "",
          "| configuration | " + " | ".join(wls) + " |", "|---|" + "---|" * len(wls)]
    for c in ["native"] + configs_of(args):
        cells = []
        for w in wls:
            e = sums[w]["configs"].get(c)
            if c == "native":
                nat = med(x["native_seconds"] for x in sums[w]["configs"].values())
                cells.append(f"{f(nat)} s")
            elif e:
                miss = c.startswith("data") and e["ratio"] is not None and e["ratio"] > TARGET_RATIO_DATA
                cells.append(f"{f(e['ratio'], 2, miss)} ({f(e['ratio_min'])}–{f(e['ratio_max'])})")
        L.append(f"| {c} | " + " | ".join(cells) + " |")
    L += ["", "## The trace (first round's trace of each configuration)", "",
          "| workload | configuration | streams | instructions | raw B / instr | compressed B / instr | "
          "schedule B / instr | switches | schedule B / switch | schedule share | regen M instr/s | "
          "merge M instr/s |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for w in wls:
        for c in ATOMX_CONFIGS:
            e = sums[w]["configs"].get(c, {})
            share = e.get("schedule_share")
            mi = e.get("merge_instructions_per_second")
            L.append(f"| {w} | {c} | {e.get('streams', '–')} | {e.get('instructions') or 0:,} | "
                     f"{f(e.get('raw_bytes_per_instruction'), 4)} | {f(e.get('compressed_bytes_per_instruction'), 4)} | "
                     f"{f(e.get('schedule_bytes_per_instruction'), 6)} | {e.get('switches', '–')} | "
                     f"{f(e.get('schedule_bytes_per_switch'), 0)} | "
                     + ("–" if share is None else f"{share:.2%}" + (MISS if share > TARGET_SCHEDULE_SHARE else ""))
                     + f" | {f((e.get('regen_instructions_per_second') or 0) / 1e6, 0)} | "
                     + (f(mi / 1e6, 0) if mi else f"failed: {e['merge_error'][:80]}" if e.get("merge_error") else "–")
                     + " |")
    if args.peers == "drmemtrace":
        L += ["", "## drmemtrace beside it", "",
              "| workload | ×native | processes | raw.lz4 bytes | B / instr (all) | B / instr (gzip, bzip2, lzip "
              "processes) |", "|---|---|---|---|---|---|"]
        for w in wls:
            e = sums[w]["configs"].get("drmemtrace", {})
            L.append(f"| {w} | {f(e.get('ratio'))} ({f(e.get('ratio_min'))}–{f(e.get('ratio_max'))}) | "
                     f"{e.get('dr_processes', '–')} | {tr.human(e.get('dr_bytes') or 0)} | "
                     f"{f(e.get('bytes_per_instruction'), 3)} | {f(e.get('traced_programs_bytes_per_instruction'), 3)} |")
    L += ["", "Instrumentation on first use: `atomx trace --instrument` of each program (s): "
          + ", ".join(f"{k} {v:.2f}" for k, v in inst.items()) + "; the warm-up runs of the traced "
          "configurations (the first instruments the three programs into atomx trace's program cache, s): "
          + "; ".join(f"{w} " + ", ".join(f"{x['config']} {x['seconds']:.2f}" for x in raw[w]["warmup"]
                                        if x["config"] in ATOMX_CONFIGS) for w in wls) + ".", ""]
    L += ["How it is measured (bench/workload.py --help, bench/README.md):", "",
          "- stored, data: `atomx trace [--data] -o DIR -- WORKLOAD` as root: every process followed, the privileged "
          "schedule log on; *-nosched: `--no-schedule`; followed-discarded: `atomx trace -- env -u "
          "ATOMX_TRACE_DIR WORKLOAD` (followed and instrumented, the log on, the stores discarded); discarded(-data): "
          "the `--instrument` copies first on PATH without ATOMX_TRACE_DIR (no supervisor, no log).",
          "- Instructions: `atomx regen DIR --summary`'s, the traced programs' own code (not libc, the loader, sh, "
          "make); a pipeline's count varies a little from run to run (how the pipe's reads split the data).",
          "- compressed B / instr: the .axt files as the recorder wrote them (zstd); raw: the summary's stream "
          "bytes.  Schedule share: TRACE/schedule over the whole trace directory (streams, log, events, "
          "manifest) (the log is zstd frames since its version 2; B / switch: its bytes per record, one "
          "record of 192 bytes, AtomxScheduleRecord, per context switch of a followed thread).",
          "- regen / merge M instr/s: instructions over the wall time of `atomx regen DIR --summary` / "
          "`atomx regen DIR --merge --summary`.",
          "- drmemtrace: `drrun -t drmemtrace -offline -outdir O -- WORKLOAD` (children followed, sh and make "
          "included); bytes: raw/*.raw.lz4 (lz4-compressed, before drraw2trace) of every process, and of the "
          "gzip, bzip2 and lzip processes alone; per instruction over atomx's count of the same workload.", ""]
    probs = [f"{w}: {p}" for w in wls for p in sums[w]["problems"]]
    if probs:
        L += ["## Problems (flagged)", ""] + [f"- {p}" for p in probs] + [""]
    return "\n".join(L), bool(probs)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__.split("\n", 3)[3],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--atomx", type=Path, default=REPO / "build/bin/atomx", help="the atomx binary (%(default)s)")
    ap.add_argument("--corpus-bin", type=Path,
                    default=Path(os.environ.get("ATOMX_CORPUS_DIR", Path.home() / ".cache/atomx-corpus")) / "bin",
                    help="the built corpus ($ATOMX_CORPUS_DIR/bin; %(default)s)")
    ap.add_argument("--variant", default="gcc-O2", help="corpus variant of gzip, bzip2, lzip (%(default)s)")
    ap.add_argument("--dr", type=Path, default=Path.home() / ".cache/peers/dr-min",
                    help="DynamoRIO's unpacked root (%(default)s)")
    ap.add_argument("--peers", choices=("drmemtrace", "none"), default="drmemtrace",
                    help="measure drmemtrace too (%(default)s)")
    ap.add_argument("--only", default="pipeline,make", help="workloads, comma-separated (%(default)s)")
    ap.add_argument("--runs", type=int, help="pairs per configuration (3; --short: 2)")
    ap.add_argument("--mb", type=float, help="MB of the pipeline's input (1; --short: 0.1)")
    ap.add_argument("--make-mb", type=float, help="MB of each of make's six inputs (0.2; --short: 0.03)")
    ap.add_argument("--short", action="store_true",
                    help="quick check of the script (about a minute): 2 pairs, 0.1 MB pipeline input, "
                         "0.03 MB per make input (each also settable); its ratios are mostly atomx's and "
                         "DynamoRIO's fixed start-up costs")
    ap.add_argument("--no-regen", action="store_true",
                    help="time the runs only: no regen, --merge or schedule measurement "
                         "(the trace table left empty)")
    ap.add_argument("--log-share", action="store_true",
                    help="only the schedule log's share of the trace: each workload traced once as stored and "
                         "data (no native pairs, no merge), printed as a table; nothing written to --out")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run (%(default)s)")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="where workload.md/.json go (%(default)s)")
    ap.add_argument("--work", type=Path, help="scratch directory (default: a temporary one, deleted)")
    a = ap.parse_args()
    for k, full, short in (("runs", 3, 2), ("mb", 1.0, 0.1), ("make_mb", 0.2, 0.03)):
        if getattr(a, k) is None:
            setattr(a, k, short if a.short else full)
    a.only = [w for w in a.only.split(",") if w]
    a.atomx = a.atomx.resolve()
    if a.peers == "drmemtrace" and not (a.dr / "bin64/drrun").exists():
        log(f"no drrun in {a.dr} (unpack ../shared/peers/dynamorio-11.3.tar.zst): --peers none")
        a.peers = "none"
    return a


def main():
    args = parse_args()
    cmdline = "python3 bench/workload.py " + shlex.join(sys.argv[1:])
    work = Path(tempfile.mkdtemp(prefix="atomx-workload.")) if not args.work else args.work
    work.mkdir(parents=True, exist_ok=True)
    machine = nr.machine_info(argparse.Namespace(atomx=args.atomx, peers=False))
    try:
        data, native, inst = prepare(args, work)
        runner = Runner(args, work, data, native)
        wls = workloads(args, data)
        if args.log_share:
            print(log_share(args, runner, wls))
            return 0
        raw = sweep(args, runner, wls)
        sums = summarize(args, raw)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    machine["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    md, flagged = build_md(args, sums, raw, wls, machine, inst, cmdline)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "workload.md").write_text(md)
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    (args.out / "workload.json").write_text(json.dumps(
        {"command": cmdline, "machine": machine, "settings": settings, "instrument_seconds": inst,
         "workloads": {w: {"cmd": wl["cmd"], "input_bytes": wl["input_bytes"]} for w, wl in wls.items()},
         "summary": sums, "raw": raw}, indent=1, default=str))
    print(md)
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
