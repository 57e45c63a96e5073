#!/usr/bin/env python3
"""Data-trace benchmark (`bench/trace.py --data`): what `atomx trace --data` costs per memory reference.

    bench/trace.py --data [--only PROG,...] [--runs N] [--peers all|none|NAME,...] [--sweep-configs K] ...

For every selected corpus program (default: gzip, bzip2, lzip, xz, gcc-O2)
the program is instrumented once with `atomx trace -q --data --instrument OUT
-o DIR -- PROG`, then its workload (corpus/workloads/) runs in the environment
of bench/tools.py (env -i, fresh scratch directories), each configuration
sandwiched between native runs (N X1 N X2 ... N, orders rotating per round),
ratio over the mean of the two natives around it, median over the rounds
(tools.do_round, as bench/trace.py and bench/tools.py do):

  stored      OUT with ATOMX_TRACE_DIR=<a fresh trace directory per round>;
  discarded   OUT without ATOMX_TRACE_DIR (the stores run, the bytes are
              thrown away);
  peers (--peer-runs rounds, default 1), all in the same run:
    drmemtrace  DynamoRIO's offline tracer (drrun -t drmemtrace -offline
                -outdir); its raw files (*.raw.lz4, already compressed) are
                measured and deleted after each invocation;
    drcachesim  DynamoRIO's online cache simulator (-cores 1, 32K/8 L1s,
                1M/16 LL, 64 B lines, no prefetcher);
    lackey      valgrind --tool=lackey --trace-mem=yes, the trace to
                /dev/null (its writing cost only);
    cachegrind  valgrind --tool=cachegrind --cache-sim=yes.
  Peers come from ../shared/peers (DynamoRIO, unpacked into --dr) and
  Debian (valgrind); one that is missing is a note.

On round 1's trace directory (the whole workload: every process's streams):
`atomx regen DIR --summary` (--regen-runs times, median wall) gives the
references (data-refs: the program's own; library-refs: libc's modelled
ones), blocks, witnesses, stream bytes and recorded values; `atomx cachesim
DIR --config ONE -j 1` one configuration on one core; `atomx cachesim DIR
--sweep K_CONFIGS -j 1` and `-j 2`, and `mpirun -np 2 ... -j 1` when atomx
was built with MPI.  Then, "without loop counts", the workload once more
with ATOMX_TRACE_NO_EVALUATED=1 (instrumented and regenerated with it: no
evaluated predicates, docs/trace.md): its witnesses per block and bytes per
reference beside the main figures.  References per second = (data-refs + library-refs) x
configurations / wall time.

Output: OUT/trace-data.md (tables, notes, the machine) and
OUT/trace-data.json (every raw figure).  Exit status 1 if a row is flagged
(an output or status differing from native, a regeneration that failed).
Python 3 standard library only.
"""

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True
import null_rewrite as nr  # noqa: E402
import tools  # noqa: E402
import trace as tr  # noqa: E402  (instrument's conventions, regen_summary, compressor-free helpers)

log = tools.log
REPO, CORPUS = nr.REPO, nr.CORPUS

DEFAULT_PROGRAMS = ["gzip", "bzip2", "lzip", "xz"]
# Targets (issue 37, "Done means").
TARGET_RAW = 0.5          # stream bytes per memory reference
TARGET_COMPRESSED = 0.1   # stored (zstd) bytes per memory reference
TARGET_RATIO = 1.5        # recording, trace stored, x native
TARGET_REGEN = 200e6      # references regenerated per second
TARGET_CACHESIM = 100e6   # references simulated per second per configuration per core
MISS = " ✗"

ONE_CONFIG = """config one
I1 size=32K assoc=8 line=64
D1 size=32K assoc=8 line=64
LL size=1M assoc=16 line=64
"""
SWEEP_CONFIGS = [
    "I1 size=32K assoc=8 line=64\nD1 size=32K assoc=8 line=64\nLL size=1M assoc=16 line=64",
    "I1 size=16K assoc=4 line=32\nD1 size=16K assoc=4 line=32\nLL size=512K assoc=8 line=64",
    "U1 size=64K assoc=8 line=64\nLL size=2M assoc=16 line=64",
    "I1 size=8K assoc=2 line=64\nD1 size=8K assoc=2 line=64\nL2 size=256K assoc=8 line=64 shared=no\n"
    "LL size=4M assoc=16 line=64",
    "D1 size=48K assoc=12 line=64\nLL size=8M assoc=16 line=64 policy=fifo",
    "I1 size=4K assoc=1 line=64\nD1 size=4K assoc=1 line=64",
    "U1 size=256K assoc=4 line=128",
    "D1 size=32K assoc=8 line=64 policy=random\nLL size=1M assoc=16 line=64",
]


# --short: one invocation per program on a generated text (the corpus
# workloads run for seconds natively: minutes to hours under the peers).
SHORT = {"gzip": "-6 -c", "bzip2": "-9 -c", "lzip": "-6 -c", "xz": "-6 -c"}


def short_workload(pr, args):
    """A workload script (the corpus's calling convention: `bash SCRIPT WRAPPER`, cwd a scratch directory)."""
    script = pr.work / "short.sh"
    script.write_text(
        "#!/bin/bash\nset -e\n"
        f"awk 'BEGIN {{ x = 7; while (n < {args.short_kb * 1024}) {{ x = (x * 16807) % 2147483647; "
        "w = sprintf(\"w%x \", x % 5000); printf \"%s\", w; n += length(w); if (x % 11 == 0) print \"\" } }' >text.txt\n"
        f"\"$1\" {SHORT[pr.prog]} text.txt >out.bin\n")
    return script


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", action="store_true", help="(selects this benchmark in bench/trace.py)")
    ap.add_argument("--only", metavar="PROG,...", help=f"programs (default {','.join(DEFAULT_PROGRAMS)})")
    ap.add_argument("--variant", default="gcc-O2")
    ap.add_argument("--short", action="store_true",
                    help="instead of corpus/workloads/PROG.sh, one invocation on a generated text of --short-kb KB"
                         f" (compressors: {', '.join(SHORT)})")
    ap.add_argument("--short-kb", type=int, default=256)
    ap.add_argument("--runs", type=int, default=5, help="rounds of stored/discarded (default 5)")
    ap.add_argument("--peer-runs", type=int, default=1, help="rounds with the peers (default 1)")
    ap.add_argument("--peers", default="all", help="none, all, or drmemtrace,drcachesim,lackey,cachegrind")
    ap.add_argument("--regen-runs", type=int, default=3, help="timed `regen --summary` and cachesim runs (median)")
    ap.add_argument("--sweep-configs", type=int, default=2, help=f"configurations of the sweep (<= {len(SWEEP_CONFIGS)})")
    ap.add_argument("--dr", type=Path, default=Path.home() / ".cache" / "peers" / "dr-min",
                    help="DynamoRIO's directory (../shared/peers/README.md)")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--atomx", type=Path, default=Path(os.environ.get("ATOMX", REPO / "build" / "bin" / "atomx")))
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("ATOMX_CHECK_TIMEOUT", 300)))
    ap.add_argument("--atomx-factor", type=float, default=5)
    ap.add_argument("--peer-factor", type=float, default=200, help="timeout multiplier for the peers (default 200)")
    args = ap.parse_args(argv)
    args.atomx = args.atomx.resolve()
    if not args.atomx.is_file():
        sys.exit(f"trace.py --data: no atomx at {args.atomx}")
    args.peer_runs = max(1, min(args.peer_runs, args.runs))
    args.sweep_configs = max(1, min(args.sweep_configs, len(SWEEP_CONFIGS)))
    names = ["drmemtrace", "drcachesim", "lackey", "cachegrind"]
    want = [p.strip() for p in args.peers.split(",") if p.strip()]
    args.peers = [] if want in (["none"], []) else names if want == ["all"] else want
    bad = [p for p in args.peers if p not in names]
    if bad:
        sys.exit(f"trace.py --data: unknown peer(s) {', '.join(bad)}; known: none, {', '.join(names)}, all")
    args.corpus_bin = Path(os.environ.get("ATOMX_CORPUS_DIR", Path.home() / ".cache" / "atomx-corpus")) / "bin"
    return args


# ---------------------------------------------------------------------------
# Configurations
# ---------------------------------------------------------------------------

def instrument(pr, args):
    out = pr.work / "traced" / pr.prog
    mdir = pr.work / "trace.manifest"
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(args.atomx), "trace", "-q", "--data", "--cache-dir", str(pr.work / "cache"), "--instrument", str(out),
           "-o", str(mdir), "--", str(pr.binary)]
    stored = tools.Config("atomx:stored", "atomx", "stored", timeout_factor=args.atomx_factor, run=run_stored)
    discarded = tools.Config("atomx:discarded", "atomx", "discarded", timeout_factor=args.atomx_factor)
    p, wall = tools.timed(cmd, args.timeout)
    if p.returncode != 0 or not out.exists() or not (mdir / "manifest").exists():
        stored.error = discarded.error = f"atomx trace --data --instrument exited {p.returncode}: {tools.last_line(p)}"
        return [stored, discarded]
    pr.manifest = mdir / "manifest"
    stored.binary = discarded.binary = out
    stored.cost = {"instrument_seconds": wall}
    return [stored, discarded]


def without_loop_counts(pr, args):
    """The workload once more, traced with ATOMX_TRACE_NO_EVALUATED=1 (no evaluated predicates: a loop's branch
    writes a witness per iteration, as before loop counts; docs/trace.md), instrumented and regenerated with it:
    its `regen --summary` and compressed bytes, on the same build."""
    env = dict(os.environ, ATOMX_TRACE_NO_EVALUATED="1")
    out, mdir, tdir = pr.work / "noeval" / pr.prog, pr.work / "noeval.manifest", pr.work / "noeval.trace"
    out.parent.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([str(args.atomx), "trace", "-q", "--data", "--cache-dir", str(pr.work / "cache"), "--instrument",
                        str(out), "-o", str(mdir), "--", str(pr.binary)], env=env, capture_output=True, text=True,
                       timeout=args.timeout)
    if p.returncode != 0 or not (mdir / "manifest").exists():
        return {"error": f"atomx trace --instrument (without loop counts) exited {p.returncode}: {p.stderr[-300:]}"}
    shutil.rmtree(tdir, ignore_errors=True)
    tdir.mkdir(parents=True)
    shutil.copyfile(mdir / "manifest", tdir / "manifest")
    res = tools.run_workload(pr, out, [], args.timeout * args.atomx_factor, env={"ATOMX_TRACE_DIR": str(tdir)})
    g = subprocess.run([str(args.atomx), "regen", str(tdir), "--summary"], env=env, capture_output=True, text=True,
                       timeout=args.timeout * 10)
    m = {"summary": tr.parse_summary(g.stdout), "summary_line": g.stdout.strip()[:500],
         "compressed_bytes": sum(f.stat().st_size for f in tdir.glob("*.axt"))}
    if g.returncode != 0 or res.get("status") not in (0, None):
        m["error"] = f"without loop counts: regen exited {g.returncode}: {g.stderr[-300:]}"
    shutil.rmtree(tdir, ignore_errors=True)
    return m


def run_stored(pr, c, args, r):
    """A workload run recording into a fresh trace directory; round 1's is kept for the offline measurements."""
    tdir = pr.work / "traces" / f"r{r}"
    shutil.rmtree(tdir, ignore_errors=True)
    tdir.mkdir(parents=True)
    shutil.copyfile(pr.manifest, tdir / "manifest")
    res = tools.run_workload(pr, c.binary, [], args.timeout * c.timeout_factor, env={"ATOMX_TRACE_DIR": str(tdir)})
    axt = list(tdir.glob("*.axt"))
    res["trace_files"] = len(axt)
    res["compressed_bytes"] = sum(f.stat().st_size for f in axt)
    if r == 0:
        pr.kept = tdir
    else:
        shutil.rmtree(tdir, ignore_errors=True)
    return res


def run_sized(pr, c, args, r):
    """A peer run whose output directory ({OUT}) is measured and emptied after each invocation."""
    out = pr.work / "scratch" / "toolout"
    sizes = pr.work / "scratch" / "meta" / "sizes"
    after = (f"du -sb {shlex.quote(str(out))} | cut -f1 >>{shlex.quote(str(sizes))}; "
             f"rm -rf {shlex.quote(str(out))}/*")
    res = tools.run_workload(pr, c.binary, c.prefix, args.timeout * c.timeout_factor, after=after)
    res["trace_bytes"] = sum(int(x) for x in sizes.read_text().split()) if sizes.exists() else None
    return res


def peer_configs(pr, args):
    dr = args.dr / "bin64" / "drrun"
    vg = shutil.which("valgrind")
    cs = []
    for name in args.peers:
        c = tools.Config(f"peer:{name}", "peer", name, binary=pr.binary, timeout_factor=args.peer_factor)
        if name in ("drmemtrace", "drcachesim") and not os.access(dr, os.X_OK):
            c.error = f"no DynamoRIO at {args.dr} (../shared/peers/README.md)"
        elif name in ("lackey", "cachegrind") and not vg:
            c.error = "no valgrind"
        elif name == "drmemtrace":
            c.prefix, c.run = [str(dr), "-t", "drmemtrace", "-offline", "-outdir", "{OUT}", "--"], run_sized
        elif name == "drcachesim":
            c.prefix = [str(dr), "-t", "drcachesim", "-cores", "1", "-L1I_size", "32K", "-L1I_assoc", "8",
                        "-L1D_size", "32K", "-L1D_assoc", "8", "-LL_size", "1M", "-LL_assoc", "16", "-line_size",
                        "64", "-data_prefetcher", "none", "--"]
        elif name == "lackey":
            c.prefix = [vg, "-q", "--tool=lackey", "--trace-mem=yes", "--log-file=/dev/null"]
        elif name == "cachegrind":
            c.prefix = [vg, "-q", "--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file=/dev/null"]
        cs.append(c)
    return cs


# ---------------------------------------------------------------------------
# Offline: regeneration and cache simulation on round 1's trace
# ---------------------------------------------------------------------------

def timed_runs(cmd, n, timeout, env=None):
    """Median wall time of n runs of cmd (None if any failed), and the last run's problem."""
    walls = []
    for _ in range(n):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout, env=env)
        walls.append(time.perf_counter() - t0)
        if p.returncode != 0:
            return None, f"{' '.join(cmd[:3])} ... exited {p.returncode}: {p.stderr.strip()[-300:]}", p.stdout
    return statistics.median(walls), None, p.stdout


def has_mpi(atomx):
    out = subprocess.run(["ldd", str(atomx)], capture_output=True, text=True).stdout
    return "libmpi" in out and shutil.which("mpirun") is not None


def offline(pr, args, work):
    m = {}
    tdir = getattr(pr, "kept", None)
    if tdir is None:
        m["error"] = "no trace kept (round 1's stored run failed?)"
        return m
    m["compressed_bytes"] = sum(f.stat().st_size for f in tdir.glob("*.axt"))
    walls = []
    for _ in range(args.regen_runs):
        g = tr.regen_summary(args, tdir)
        if g.get("status") != 0 or not g.get("summary"):
            m["error"] = f"regen --summary failed: {(g.get('stderr') or g.get('error') or '')[-300:]}"
            return m
        walls.append(g["seconds"])
        m["summary_line"] = g["stdout"]
    s = tr.parse_summary(m["summary_line"])
    m["summary"] = s
    m["regen_seconds"] = statistics.median(walls)
    refs = s.get("data-refs", 0) + s.get("library-refs", 0)
    m["references"] = refs
    one, sweep = work / "one.cache", work / "sweep.cache"
    one.write_text(ONE_CONFIG)
    sweep.write_text("".join(f"config c{k}\n{t}\n" for k, t in enumerate(SWEEP_CONFIGS[:args.sweep_configs])))
    base = [str(args.atomx), "cachesim", str(tdir), "-q", "-o", os.devnull]
    long = args.timeout * 20
    m["cachesim_seconds"], err, _ = timed_runs(base + ["--config", str(one), "-j", "1"], args.regen_runs, long)
    for j in (1, 2):
        m[f"sweep_j{j}_seconds"], e2, _ = timed_runs(base + ["--sweep", str(sweep), "-j", str(j)], args.regen_runs, long)
        err = err or e2
    if has_mpi(args.atomx):
        m["sweep_mpi2_seconds"], e3, _ = timed_runs(["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", "2"]
                                                    + base + ["--sweep", str(sweep), "-j", "1"], args.regen_runs, long)
        err = err or e3
    if err:
        m["cachesim_error"] = err
    shutil.rmtree(tdir, ignore_errors=True)
    return m


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------

def f(x, d=2, miss=False):
    return "—" if x is None else f"{x:.{d}f}{MISS if miss else ''}"


def rate(n, s):
    return n / s if n and s else None


def metrics_of(pr, summ, m, args):
    st, dc = summ.get("atomx:stored", {}), summ.get("atomx:discarded", {})
    s = m.get("summary") or {}
    refs = m.get("references") or 0
    data = {
        "references": refs, "data_refs": s.get("data-refs"), "library_refs": s.get("library-refs"),
        "raw_bytes_per_ref": rate(s.get("stream-bytes"), refs),
        "compressed_bytes_per_ref": rate(m.get("compressed_bytes"), refs),
        "recorded_values_per_ref": rate(s.get("recorded-values"), refs),
        "value_bytes_share": rate(s.get("value-bytes"), s.get("stream-bytes")),
        "witnesses_per_block": rate(s.get("witnesses"), s.get("blocks")),
        "evaluated_per_block": rate(s.get("evaluated"), s.get("blocks")),
        "stored_ratio": st.get("median_ratio"), "discarded_ratio": dc.get("median_ratio"),
        "regen_refs_per_s": rate(refs, m.get("regen_seconds")),
        "cachesim_refs_per_s": rate(refs, m.get("cachesim_seconds")),
        "sweep_j1_refs_per_s": rate(refs * args.sweep_configs, m.get("sweep_j1_seconds")),
        "sweep_j2_refs_per_s": rate(refs * args.sweep_configs, m.get("sweep_j2_seconds")),
        "sweep_mpi2_refs_per_s": rate(refs * args.sweep_configs, m.get("sweep_mpi2_seconds")),
    }
    w = (m.get("without_loop_counts") or {}).get("summary") or {}
    data["witnesses_per_block_without"] = rate(w.get("witnesses"), w.get("blocks"))
    data["raw_bytes_per_ref_without"] = rate(w.get("stream-bytes"), (w.get("data-refs") or 0) + (w.get("library-refs") or 0))
    data["compressed_bytes_per_ref_without"] = rate((m.get("without_loop_counts") or {}).get("compressed_bytes"),
                                                    (w.get("data-refs") or 0) + (w.get("library-refs") or 0))
    data["sweep_speedup_j2"] = rate(m.get("sweep_j1_seconds"), m.get("sweep_j2_seconds"))
    data["sweep_speedup_mpi2"] = rate(m.get("sweep_j1_seconds"), m.get("sweep_mpi2_seconds"))
    peers = {}
    for name in args.peers:
        e = summ.get(f"peer:{name}", {})
        p = {"ratio": e.get("median_ratio"), "error": e.get("error")}
        if name == "drmemtrace" and e.get("runs"):
            b = e["runs"][0].get("trace_bytes")
            p["trace_bytes"] = b
            p["bytes_per_ref"] = rate(b, refs)
        peers[name] = p
    data["peers"] = peers
    return data


def tables(progs, rows, args):
    flagged = []
    t = ["| program | refs (M) | raw B/ref (without loop counts) | compr. B/ref (without) | values/ref (bytes share) | "
         "witnesses/block (without loop counts) | "
         "stored × | discarded × | regen M refs/s | cachesim M refs/s (1 config, 1 core) | "
         f"sweep {args.sweep_configs} configs M refs/s -j1 / -j2 (speed-up) | mpirun -np 2 |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for pr in progs:
        d = rows.get(pr.prog)
        if pr.error or d is None:
            t.append(f"| {pr.variant} | {pr.error or 'no data'} |" + " |" * 10)
            flagged.append(f"{pr.variant}: {pr.error or 'no data'}")  # a run that measured nothing fails the run
            continue
        if d.get("error"):
            flagged.append(f"{pr.variant}: {d['error']}")
        mps = lambda x: None if x is None else x / 1e6  # noqa: E731
        raw, comp = d["raw_bytes_per_ref"], d["compressed_bytes_per_ref"]
        st, rg, cs = d["stored_ratio"], d["regen_refs_per_s"], d["cachesim_refs_per_s"]
        t.append(
            f"| {pr.variant} | {f(mps(d['references']), 1)} | {f(raw, 3, raw is not None and raw > TARGET_RAW)} "
            f"({f(d['raw_bytes_per_ref_without'], 3)}) | "
            f"{f(comp, 3, comp is not None and comp > TARGET_COMPRESSED)} ({f(d['compressed_bytes_per_ref_without'], 3)}) | "
            f"{f(d['recorded_values_per_ref'], 3)} ({f(100 * d['value_bytes_share'] if d['value_bytes_share'] is not None else None, 0)}%) | "
            f"{f(d['witnesses_per_block'], 3)} ({f(d['witnesses_per_block_without'], 3)}) | "
            f"{f(st, 2, st is not None and st > TARGET_RATIO)} | "
            f"{f(d['discarded_ratio'])} | {f(mps(rg), 0, rg is not None and rg < TARGET_REGEN)} | "
            f"{f(mps(cs), 0, cs is not None and cs < TARGET_CACHESIM)} | "
            f"{f(mps(d['sweep_j1_refs_per_s']), 0)} / {f(mps(d['sweep_j2_refs_per_s']), 0)} "
            f"({f(d['sweep_speedup_j2'])}×) | "
            + (f"{f(mps(d['sweep_mpi2_refs_per_s']), 0)} ({f(d['sweep_speedup_mpi2'])}×)"
               if d['sweep_mpi2_refs_per_s'] else "not built with MPI") + " |")
    p = ["| program | " + " | ".join(
        {"drmemtrace": "drmemtrace offline × (raw B/ref)", "drcachesim": "drcachesim ×", "lackey": "lackey --trace-mem ×",
         "cachegrind": "cachegrind --cache-sim=yes ×"}[n] for n in args.peers) + " | atomx stored × |",
         "|---|" + "---:|" * (len(args.peers) + 1)]
    for pr in progs:
        d = rows.get(pr.prog)
        if not d:
            continue
        cells = []
        for n in args.peers:
            e = d["peers"].get(n, {})
            if e.get("error"):
                cells.append(f"({e['error'][:40]})")
                continue
            c = f(e.get("ratio"), 1)
            if n == "drmemtrace":
                c += f" ({f(e.get('bytes_per_ref'), 2)})"
            cells.append(c)
        p.append(f"| {pr.variant} | " + " | ".join(cells) + f" | {f(d['stored_ratio'])} |")
    geo = {}
    for k in ("raw_bytes_per_ref", "compressed_bytes_per_ref", "stored_ratio", "discarded_ratio", "regen_refs_per_s",
              "cachesim_refs_per_s"):
        xs = [rows[pr.prog][k] for pr in progs if rows.get(pr.prog) and rows[pr.prog].get(k)]
        geo[k] = nr.geomean(xs) if xs else None
    return "\n".join(t), "\n".join(p) if args.peers else "", geo, flagged


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    wanted = DEFAULT_PROGRAMS if not args.only else args.only.split(",")
    t_start = time.perf_counter()
    info = nr.machine_info(argparse.Namespace(atomx=args.atomx, peers=bool(args.peers)))
    info["dynamorio"] = str(args.dr) if (args.dr / "bin64" / "drrun").exists() else None
    info["mpi"] = has_mpi(args.atomx)
    work = Path(tempfile.mkdtemp(prefix="atomx-bench-trace-data."))
    progs, summaries, rows = [], {}, {}
    try:
        for w in wanted:
            v = f"{w}-{args.variant}"
            pr = tools.Program(w, v, args.corpus_bin / v, CORPUS / "workloads" / f"{w}.sh", work / v)
            pr.work.mkdir(parents=True)
            if args.short:
                if w not in SHORT:
                    sys.exit(f"trace.py --data --short: no short workload for {w} (known: {', '.join(SHORT)})")
                pr.workload = short_workload(pr, args)
            progs.append(pr)
            if not os.access(pr.binary, os.X_OK):
                pr.error = "not built (corpus/build.sh)"
                continue
            pr.configs += instrument(pr, args)
            pr.configs += peer_configs(pr, args)
            for c in pr.configs:
                if c.error:
                    log(f"{v}: {c.name}: {c.error}")
        live = [p for p in progs if not p.error]
        log(f"programs: {', '.join(p.variant for p in progs)}; peers: {', '.join(args.peers) or 'none'}; work in {work}")
        for r in range(args.runs):
            for pr in live:
                tools.do_round(pr, r, args)
        for pr in live:
            summaries[pr.prog] = {c.name: tools.summarize_config(c) for c in pr.configs}
            m = offline(pr, args, pr.work)
            m["without_loop_counts"] = without_loop_counts(pr, args)
            log(f"{pr.variant}: offline {json.dumps({k: v for k, v in m.items() if k != 'summary'})[:400]}")
            rows[pr.prog] = metrics_of(pr, summaries[pr.prog], m, args)
            rows[pr.prog]["offline"] = m
            for e in summaries[pr.prog].values():
                if e.get("stdout_mismatches") or e.get("status_mismatches"):
                    rows[pr.prog].setdefault("problems", []).append(f"{e['name']}: output or status differs")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    main_t, peer_t, geo, flagged = tables(progs, rows, args)
    for pr in progs:
        row = rows.get(pr.prog) or {}
        if row and row.get("raw_bytes_per_ref") is None:  # a run that measured nothing fails the benchmark
            why = (row.get("offline") or {}).get("error") or row.get("error") or "no trace measured"
            flagged.append(f"{pr.variant}: nothing measured: {why}")
        for pb in row.get("problems", []):
            if not pb.startswith("peer:"):
                flagged.append(f"{pr.variant}: {pb}")
    elapsed = time.perf_counter() - t_start
    info["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    misses = []
    for k, label, bad in (("raw_bytes_per_ref", f"≤ {TARGET_RAW} raw bytes per reference", lambda x: x > TARGET_RAW),
                          ("compressed_bytes_per_ref", f"≤ {TARGET_COMPRESSED} compressed bytes per reference",
                           lambda x: x > TARGET_COMPRESSED),
                          ("stored_ratio", f"recording ≤ {TARGET_RATIO}× native", lambda x: x > TARGET_RATIO),
                          ("regen_refs_per_s", "regeneration ≥ 200 M references/s", lambda x: x < TARGET_REGEN),
                          ("cachesim_refs_per_s", "cachesim ≥ 100 M references/s per configuration per core",
                           lambda x: x < TARGET_CACHESIM)):
        measured = [pr for pr in progs if rows.get(pr.prog) and rows[pr.prog].get(k) is not None]
        missed = [pr.variant for pr in measured if bad(rows[pr.prog][k])]
        unmeasured = [pr.variant for pr in progs if pr not in measured]
        said = ([f"missed by {', '.join(missed)}"] if missed else []) + \
               ([f"not measured for {', '.join(unmeasured)}"] if unmeasured else [])
        misses.append(f"- {label}: " + ("; ".join(said) if said else "met by every program"))
    header = (f"Data-trace benchmark (`bench/trace.py --data`), {info['date']}: {info['nproc']} CPUs "
              f"({info['cpu_model']}), Linux {info['kernel']}, atomx {info['atomx_commit']}"
              f"{' (+ uncommitted changes)' if info['atomx_tree_dirty'] else ''}; load average "
              f"{' '.join(info['loadavg_start'])} at start, {' '.join(info['loadavg_end'])} at end; "
              f"{elapsed / 60:.1f} min.  Rounds: {args.runs} (atomx), {args.peer_runs} (peers).  Workloads: "
              + (f"--short, one invocation each on a generated {args.short_kb} KB text ({', '.join(f'{k} {v}' for k, v in SHORT.items())})"
                 if args.short else "corpus/workloads") + ".  MPI: "
              f"{'yes' if info['mpi'] else 'atomx built without it'}.")
    notes = [
        "Targets (issue 37): ≤ 0.5 bytes per memory reference raw, ≤ 0.1 compressed; recording ≤ 1.5× native with "
        "the trace stored; regeneration ≥ 200 M references/s; cache simulation ≥ 100 M references/s per "
        "configuration per core.  ✗ marks a cell that misses its target.",
        "refs: the workload's data references in the program's own code (`data-refs` of `atomx regen --summary` on "
        "round 1's trace, every process of the workload) plus libc's modelled ones (`library-refs`).  raw B/ref: the "
        "stream bytes before compression / refs; compr.: the trace directory's *.axt (zstd chunks) / refs; "
        "values/ref: the register values and addresses the recorder stored (8 bytes each) per reference, and "
        "their bytes' share of the raw stream; witnesses/block: path witnesses per executed block.  In parentheses, "
        "without loop counts: the same workload once more, instrumented and regenerated with "
        "ATOMX_TRACE_NO_EVALUATED=1 (no evaluated predicates: a counted loop's branch writes a witness per "
        "iteration; docs/trace.md, \"Evaluated predicates\"), on the same build.",
        "×: the program's own wall time over the mean of the native runs around it, median over the rounds "
        "(pairs; bench/README.md).  stored: ATOMX_TRACE_DIR set, a fresh directory per round; discarded: the "
        "same instrumented binary without it.",
        "regen: refs / median wall time of `atomx regen DIR --summary`.  cachesim: refs / wall time of `atomx "
        "cachesim DIR --config ONE -j 1` (I1, D1 32K/8, LL 1M/16, 64 B lines; instruction fetches simulated too, "
        f"not counted as references).  sweep: {args.sweep_configs} configurations × refs / wall time of `--sweep` "
        "with -j 1 and -j 2 (speed-up: -j1's time over -j2's).",
        "Peers, one run each in the same rounds: drmemtrace offline (its raw *.raw.lz4 bytes, already "
        "compressed, over atomx's reference count: drmemtrace also traces libc and the loader, and writes "
        "instruction fetches), drcachesim online, lackey --trace-mem=yes writing to /dev/null, cachegrind "
        "--cache-sim=yes.",
        "Targets missed:\n" + "\n".join(misses),
    ]
    md = (header + "\n\n" + main_t + "\n\n" + (f"Peers (× native):\n\n{peer_t}\n\n" if peer_t else "")
          + "\n\n".join(notes) + "\n" + ("\nFlagged:\n" + "\n".join(f"- {x}" for x in flagged) + "\n" if flagged else ""))
    print(md)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "trace-data.md").write_text(md)
    doc = {"machine": info, "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
           "elapsed_seconds": elapsed, "geomean": geo, "rows": rows,
           "configs": summaries, "natives": {p.prog: p.natives for p in progs}}
    (args.out / "trace-data.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    log(f"wrote {args.out / 'trace-data.md'} ({elapsed / 60:.1f} min)")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
