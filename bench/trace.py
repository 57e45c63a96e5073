#!/usr/bin/env python3
"""Trace benchmark: what `atomx trace` costs to record and `atomx regen` to read back, beside lackey and QEMU.

    bench/trace.py [--only PROG,...] [--variant clang-O2] [--peers none|lackey|qemu|all] [--runs N] ...

For every selected corpus program (default: the gcc-O2 variants of gzip,
bzip2, xz, pbzip2, lua, sqlite3, lzip, muparser, bc), the program is instrumented
once with `atomx trace -q --cache-dir C --instrument OUT -o DIR -- PROG`
(timed), then its workload (corpus/workloads/) runs in rounds, in the
environment of bench/tools.py and bench/null_rewrite.py (env -i, fresh
scratch directories, the binary always at <scratch>/bin/<prog>), with:

  stored     OUT with ATOMX_TRACE_DIR=<a fresh trace directory per round>: the
             whole workload (every process) records into that directory;
  discarded  OUT without ATOMX_TRACE_DIR: the witness stores run, their bytes
             are thrown away;
  lackey     valgrind --tool=lackey --trace-superblocks=yes --log-file=F
             (--peers; one run by default, --peer-runs);
  qemu       qemu-x86_64 -d exec,nochain -D F: one log line per executed
             translation block, chaining off so that every block is logged.

Time: the program's own (the wall time of each of its invocations, summed; the
wrapper of bench/tools.py), each configuration sandwiched between native runs
(N X1 N X2 ... N), ratio over the mean of the two natives around it, median
over the rounds (tools.do_round and tools.sweeps, reused as they are).

Per program the report gives: witnesses per executed block and raw and
compressed trace bytes per executed instruction (`atomx regen DIR --summary`
on the directories of the first --regen-runs rounds), the recording slowdowns
(stored, discarded), regeneration speed (instructions per second of `atomx
regen DIR --summary`, median over those runs, and of the full text output,
`atomx regen DIR >/dev/null`, once, for at most --text-seconds), and
the same metrics for the peers, whose trace files are measured (raw, and
compressed with `zstd -1`, else `gzip -1`) and deleted after each program
invocation.  The denominator of every bytes-per-instruction figure is atomx's
instruction count of the same (deterministic) workload.  A peer run that
passes --peer-timeout or whose trace files pass --max-peer-bytes is stopped:
its figures are then measured over the program invocations that completed
(against the same invocations of the natives and atomx's instruction count
for them, from round 1's trace: "approx."), with lower bounds over those
invocations and the stopped one, and over the whole workload.

Targets (issue 15): recording with the trace stored <= 1.3x native; <= 0.05
compressed bytes per executed instruction; regeneration >= 200 M instructions
per second.  Cells that miss one are marked (a mark is not a flag).

--data runs the data-trace benchmark instead (bench/trace_data.py: `atomx
trace --data`, bytes per memory reference, recording, regeneration and
`atomx cachesim` speeds, beside DynamoRIO's drmemtrace and drcachesim,
lackey --trace-mem=yes and cachegrind; bench/results/trace-data.md).

Output: DIR/trace.md (tables and notes) and DIR/trace.json (every raw timing,
the machine, the atomx commit, the settings).  Exit status 1 if a row is
flagged: output or exit status of the traced program differing from native,
a regeneration that failed or left an incomplete thread, instrumentation that
failed, a timeout.  A peer that is missing, fails or is stopped is a note, not
a flag.  Python 3 standard library only.
"""

import argparse
import json
import os
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import null_rewrite as nr  # noqa: E402  (machine info, geometric mean, first_difference)
import tools  # noqa: E402  (run environment, wrapper, pairing, sweeps)

tools.LOG_NAME = "trace"
log = tools.log
REPO, CORPUS = nr.REPO, nr.CORPUS

DEFAULT_PROGRAMS = ["gzip", "bzip2", "xz", "pbzip2", "lua", "sqlite3", "lzip", "muparser", "bc"]
TARGET_RATIO = 1.3       # recording, trace stored, x native
TARGET_BYTES = 0.05      # compressed trace bytes per executed instruction
TARGET_REGEN = 200e6     # regenerated instructions per second
SUMMARY_KEYS = ("threads", "blocks", "instructions", "outside-calls", "stream-bytes", "incomplete-threads",
                "witnesses", "table-targets")
MISS = " ✗"


@dataclass
class TracePeer:
    name: str
    title: str
    need: str
    prefix: list
    valgrind: bool
    doc: str


PEERS = {
    "lackey": TracePeer("lackey", "lackey", "valgrind",
                        ["valgrind", "-q", "--tool=lackey", "--trace-superblocks=yes", "--log-file={OUT}/lackey.%p"],
                        True, "valgrind --tool=lackey --trace-superblocks=yes: a line 'SB ADDR' per superblock entered"),
    "qemu": TracePeer("qemu", "qemu", "qemu-x86_64",
                      ["qemu-x86_64", "-d", "exec,nochain", "-D", "{OUT}/qemu.%d.log"],
                      False, "qemu-x86_64 -d exec,nochain: a line per translation block executed, no chaining"),
}


@dataclass
class TProgram(tools.Program):
    manifest: Optional[Path] = None
    census: Optional[list] = None        # per invocation of round 0's stored run: the stream files it added
    census_dir: Optional[Path] = None    # that run's trace directory, kept for prefix regenerations
    prefix_cache: dict = field(default_factory=dict)
    pending: list = field(default_factory=list)  # (round, trace dir, run) still to regenerate


def parse_size(s):
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kKmMgGtT]?)[bB]?\s*", s)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {s!r} (e.g. 4G, 500M)")
    return int(float(m.group(1)) * 1000 ** " kmgt".index(m.group(2).lower() or " "))


def human(n):
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000


def compressor():
    """zstd -1 (the level atomx's recorder uses), else gzip -1: (label, argv prefix)."""
    z = shutil.which("zstd")
    if z:
        return "zstd -1", [z, "-1", "-q", "-c", "--"]
    g = shutil.which("gzip")
    if g:
        return "gzip -1", [g, "-1", "-c", "--"]
    return None, None


# ---------------------------------------------------------------------------
# atomx: instrument once, run with the trace stored / discarded, regenerate
# ---------------------------------------------------------------------------

def instrument(pr, args):
    out = pr.work / "traced" / pr.prog
    mdir = pr.work / "trace.manifest"
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(args.atomx), "trace", "-q", "--cache-dir", str(pr.work / "cache"), "--instrument", str(out),
           "-o", str(mdir), "--", str(pr.binary)]
    stored = tools.Config("atomx:stored", "atomx", "stored", timeout_factor=args.atomx_factor, run=run_stored)
    discarded = tools.Config("atomx:discarded", "atomx", "discarded", timeout_factor=args.atomx_factor)
    try:
        p, wall = tools.timed(cmd, args.timeout)
    except (subprocess.TimeoutExpired, OSError) as ex:
        stored.error = discarded.error = f"atomx trace --instrument: {type(ex).__name__}: {ex}"
        return [stored, discarded]
    if p.returncode != 0 or not out.exists() or not (mdir / "manifest").exists():
        stored.error = discarded.error = f"atomx trace --instrument exited {p.returncode}: {tools.last_line(p)}"
        return [stored, discarded]
    pr.manifest = mdir / "manifest"
    stored.binary = discarded.binary = out
    stored.cost = {"instrument_seconds": wall, "command": cmd[:6] + ["OUT", "-o", "DIR", "--", "BIN"],
                   "output_bytes": out.stat().st_size, "input_bytes": pr.binary.stat().st_size}
    return [stored, discarded]


def parse_summary(text):
    w = text.split()
    d = {}
    for k, v in zip(w[::2], w[1::2]):
        try:
            d[k] = int(v)
        except ValueError:
            pass
    return d if all(k in d for k in SUMMARY_KEYS) else None


def regen_summary(args, tdir):
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        p = subprocess.run([str(args.atomx), "regen", str(tdir), "--summary"], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=args.timeout * 10)
    except subprocess.TimeoutExpired:
        return {"seconds": time.perf_counter() - t0, "status": None, "error": "timeout", "summary": None}
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    s = parse_summary(p.stdout)
    return {"seconds": wall, "cpu_seconds": (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
            "status": p.returncode, "summary": s, "stdout": p.stdout.strip()[:500],
            "stderr": p.stderr.strip()[-1000:]}


def regen_text(args, tdir):
    """`atomx regen DIR >/dev/null` (a line per instruction), stopped after --text-seconds.

    The bytes written so far are the process's wchar (/proc/PID/io), sampled
    every second (the JSON keeps the samples); a stopped run's lines are those
    bytes over the mean line length of the output's first 4 MB (a second, short
    run through `head`)."""
    def wchar_of(pid):
        try:
            return int(dict(l.split(": ") for l in Path(f"/proc/{pid}/io").read_text().splitlines())["wchar"])
        except (OSError, KeyError, ValueError):
            return None

    t0 = time.perf_counter()
    samples, wchar, cut = [], None, False
    with open(os.devnull, "wb") as null, tempfile.TemporaryFile() as errf:
        p = subprocess.Popen([str(args.atomx), "regen", str(tdir)], stdin=subprocess.DEVNULL, stdout=null,
                             stderr=errf)
        while True:
            left = t0 + args.text_seconds - time.perf_counter()
            try:
                p.wait(timeout=max(0.0, min(1.0, left)))
                break
            except subprocess.TimeoutExpired:
                wchar = wchar_of(p.pid)
                samples.append([round(time.perf_counter() - t0, 2), wchar])
                if left <= 1.0:
                    cut = True
                    p.kill()
                    p.wait()
                    break
        wall = time.perf_counter() - t0
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    res = {"seconds": wall, "stopped": cut, "status": None if cut else p.returncode, "stderr": err.strip()[-500:],
           "wchar_samples": samples}
    if cut and wchar:
        q = subprocess.run(["sh", "-c", '"$1" regen "$2" 2>/dev/null | head -c 4000000', "sh", str(args.atomx),
                            str(tdir)], stdout=subprocess.PIPE)
        n = q.stdout.count(b"\n")
        res.update({"bytes": wchar, "sample_bytes_per_line": len(q.stdout) / n if n else None,
                    "lines": wchar / (len(q.stdout) / n) if n else None})
    return res


def run_stored(pr, c, args, r):
    """A workload run recording into a fresh trace directory, then its measurement (and regeneration)."""
    tdir = pr.work / "traces" / f"r{r}"
    shutil.rmtree(tdir, ignore_errors=True)
    tdir.mkdir(parents=True)
    shutil.copyfile(pr.manifest, tdir / "manifest")
    meta = pr.work / "scratch" / "meta"
    census = r == 0 and bool(args.peers)
    after = (f"ls {shlex.quote(str(tdir))} >{shlex.quote(str(meta))}/axt.$(wc -l <{shlex.quote(str(meta / 'times'))})"
             if census else "")
    res = tools.run_workload(pr, c.binary, [], args.timeout * c.timeout_factor,
                             env={"ATOMX_TRACE_DIR": str(tdir)}, after=after)
    axt = list(tdir.glob("*.axt"))
    res["trace_files"] = len(axt)
    res["compressed_bytes"] = sum(f.stat().st_size for f in axt)
    if r < args.regen_runs:
        # regenerated after the sweeps, not here: a run's native partner comes right after it
        pr.pending.append((r, tdir, res))
    if census:
        seen, per = set(), []
        for k in range(1, res["invocations"] + 1):
            f = meta / f"axt.{k}"
            names = set(f.read_text().split()) - {"manifest"} if f.exists() else set()
            per.append(sorted(names - seen))
            seen |= names
        pr.census, pr.census_dir = per, tdir
    elif r >= args.regen_runs:
        shutil.rmtree(tdir, ignore_errors=True)
    return res


def regenerate_pending(pr, args):
    """`atomx regen --summary` on the kept traces of the first --regen-runs rounds; text output on round 1's."""
    while pr.pending:
        r, tdir, res = pr.pending.pop(0)
        g = regen_summary(args, tdir)
        res["regen"] = g
        s = g.get("summary")
        log(f"{pr.prog} round {r + 1}'s trace: regen --summary {g['seconds']:.1f}s"
            + (f", {s['instructions'] / g['seconds'] / 1e6:.0f} M instr/s, {s['threads']} threads, "
               f"incomplete {s['incomplete-threads']}" if s else
               f": FAILED (status {g['status']}) {(g.get('stderr') or g.get('error') or '')[-200:]}"))
        if r == 0 and args.text_seconds > 0:
            t = regen_text(args, tdir)
            res["regen_text"] = t
            log(f"{pr.prog} round 1's trace: regen (text) {t['seconds']:.1f}s" + (
                f", stopped at --text-seconds: ~{(t.get('lines') or 0) / 1e6:.0f} M lines written" if t["stopped"]
                else f", status {t['status']}"))
        if tdir != pr.census_dir:
            shutil.rmtree(tdir, ignore_errors=True)


def prefix_instructions(pr, args, k):
    """Instructions (atomx's count) of the workload's first k program invocations, from round 0's trace."""
    if k in pr.prefix_cache:
        return pr.prefix_cache[k]
    if not pr.census or pr.census_dir is None or k > len(pr.census):
        return None
    if k == 0:
        return 0
    d = pr.work / f"prefix.{k}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    shutil.copyfile(pr.census_dir / "manifest", d / "manifest")
    for names in pr.census[:k]:
        for n in names:
            (d / n).symlink_to(pr.census_dir / n)
    g = regen_summary(args, d)
    shutil.rmtree(d, ignore_errors=True)
    s = g.get("summary")
    pr.prefix_cache[k] = s["instructions"] if s and g["status"] == 0 else None
    return pr.prefix_cache[k]


# ---------------------------------------------------------------------------
# Peers: run, measure and delete their trace files after each invocation
# ---------------------------------------------------------------------------

def prepare_peer(pr, peer, args):
    c = tools.Config(f"peer:{peer.name}", "peer", peer.name, prefix=list(peer.prefix), timeout_factor=15,
                     run=run_peer)
    if not shutil.which(peer.need):
        c.error = f"{peer.need} not installed (bench/setup.sh installs the peers)"
        return c
    if not args.compress_cmd:
        c.error = "neither zstd nor gzip installed to compress its trace"
        return c
    try:
        c.binary = tools.strip_debug(pr) if peer.valgrind else pr.binary
    except ValueError as ex:
        c.error = str(ex)
    return c


def run_peer(pr, c, args, r):
    d = pr.work / "scratch"
    out, meta = d / "toolout", d / "meta"
    q = lambda p: shlex.quote(str(p))
    comp = " ".join(shlex.quote(a) for a in args.compress_cmd)
    before = f"echo $EPOCHREALTIME >>{q(meta / 'starts')}"
    # After each invocation (outside the timed part): the trace files' raw and
    # compressed sizes, lackey's own instruction count, then delete them.
    after = (f"raw=0 comp=0 ins=0\n"
             f"for f in {q(out)}/*; do\n"
             f"  [ -f \"$f\" ] || continue\n"
             f"  raw=$((raw + $(stat -c %s \"$f\")))\n"
             f"  comp=$((comp + $({comp} \"$f\" | wc -c)))\n"
             f"  n=$(tail -c 4096 \"$f\" | sed -n 's/.*guest instrs: *\\([0-9,]*\\).*/\\1/p' | tr -d , | tail -n 1)\n"
             f"  ins=$((ins + ${{n:-0}}))\n"
             f"  rm -f -- \"$f\"\n"
             f"done\n"
             f"echo \"$raw $comp $ins\" >>{q(meta / 'peer')}")
    limit, t0 = args.max_peer_bytes, time.perf_counter()

    def poll():
        # Both limits stop the run here, with SIGKILL to the whole workload at once, so that
        # no wrapper goes on to measure and delete the files of the invocation it stopped.
        if time.perf_counter() - t0 > args.peer_timeout:
            return f"--peer-timeout {args.peer_timeout:g}s"
        try:
            total = sum(e.stat().st_size for e in os.scandir(out) if e.is_file())
        except OSError:
            return None
        return f"trace files passed --max-peer-bytes {human(limit)}" if total > limit else None

    # the timeout command is only a backstop here
    res = tools.run_workload(pr, c.binary, c.prefix, args.peer_timeout + 120, before=before, after=after, poll=poll)
    t_end = time.time()
    if res["timed_out"]:
        res["stopped"] = f"timeout {args.peer_timeout + 120:g}s"
    inv = []
    if (meta / "peer").exists():
        for line in (meta / "peer").read_text().splitlines():
            a = line.split()
            if len(a) == 3:
                inv.append({"raw_bytes": int(a[0]), "compressed_bytes": int(a[1]), "own_instructions": int(a[2])})
    left = [f for f in out.iterdir() if f.is_file()] if out.is_dir() else []
    partial = None
    if left:
        raw = sum(f.stat().st_size for f in left)
        cz = 0
        for f in left:
            p = subprocess.run(["sh", "-c", f'{comp} "$1" | wc -c', "sh", str(f)], stdout=subprocess.PIPE, text=True)
            cz += int(p.stdout.strip() or 0)
            f.unlink()
        partial = {"raw_bytes": raw, "compressed_bytes": cz, "own_instructions": 0}
    for i, s in enumerate(res.get("invocation_seconds", [])):
        if i < len(inv):
            inv[i]["seconds"] = s
    if partial and len(inv) < res["invocations"]:
        # stopped while measuring a finished invocation's files: they are that invocation's
        partial["seconds"] = res["invocation_seconds"][len(inv)]
        inv.append(partial)
        partial = None
    starts = (meta / "starts").read_text().split() if (meta / "starts").exists() else []
    if res.get("stopped") and len(starts) > res["invocations"]:
        partial = partial or {"raw_bytes": 0, "compressed_bytes": 0, "own_instructions": 0}
        partial["seconds"] = t_end - float(starts[res["invocations"]])
    res["peer_invocations"] = inv
    res["peer_partial"] = partial
    res["raw_bytes"] = sum(x["raw_bytes"] for x in inv) + (partial["raw_bytes"] if partial else 0)
    res["compressed_bytes"] = sum(x["compressed_bytes"] for x in inv) + (partial["compressed_bytes"] if partial else 0)
    log(f"{pr.prog} round {r + 1}: {c.row}: {res['program_seconds']:.1f}s, {res['invocations']} invocations, "
        f"{human(res['raw_bytes'])} of trace" + (f"; stopped: {res['stopped']}" if res.get("stopped") else ""))
    return res


# ---------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def natives_of_round(pr, r):
    return [x for x in pr.natives.get(str(pr.binary), []) if x.get("round") == r and x.get("invocation_seconds")]


def summarize_atomx(pr, cs):
    """Trace metrics of a program, from the stored configuration's runs."""
    st = cs.get("atomx:stored", {})
    t = {"problems": [], "notes": []}
    regens = [x["regen"] for x in st.get("runs", []) if x.get("regen")]
    ok = [(x, g) for x in st.get("runs", []) for g in [x.get("regen")] if g and g.get("summary")]
    for g in regens:
        s = g.get("summary")
        if g.get("status") != 0 or not s:
            t["problems"].append(f"regen failed (status {g.get('status')}): "
                                 + (g.get("stderr") or g.get("error") or "")[-200:].replace("\n", " "))
        elif s["incomplete-threads"]:
            t["problems"].append(f"regen: {s['incomplete-threads']} incomplete thread(s)")
    if not ok:
        return t
    x0, g0 = ok[0]
    s0 = g0["summary"]
    t["summary"] = s0
    n = s0["instructions"]
    t["instructions"] = n
    if len({g["summary"]["instructions"] for _, g in ok}) > 1:
        t["notes"].append("instruction counts differ between rounds (threads): "
                          + ", ".join(str(g["summary"]["instructions"]) for _, g in ok))
    t["witnesses_per_block"] = s0["witnesses"] / s0["blocks"] if s0["blocks"] else None
    t["raw_bytes_per_instruction"] = med(g["summary"]["stream-bytes"] / g["summary"]["instructions"]
                                         for _, g in ok if g["summary"]["instructions"])
    t["compressed_bytes_per_instruction"] = med(x["compressed_bytes"] / g["summary"]["instructions"]
                                                for x, g in ok if g["summary"]["instructions"])
    t["raw_bytes"] = s0["stream-bytes"]
    t["compressed_bytes"] = x0["compressed_bytes"]
    t["regen_instructions_per_second"] = med(g["summary"]["instructions"] / g["seconds"] for _, g in ok)
    t["regen_seconds"] = [g["seconds"] for _, g in ok]
    tx = x0.get("regen_text")
    if tx and tx["seconds"] > 0:
        if tx["stopped"] and tx.get("lines"):
            t["text_instructions_per_second"] = tx["lines"] / tx["seconds"]
            t["text_note"] = (f"text regen stopped after {tx['seconds']:.0f}s at ~{tx['lines'] / n:.0%} of the "
                              f"instructions: ~lines/s")
        elif tx["stopped"]:
            t["notes"].append("text regen stopped, progress unknown")
        elif tx["status"] != 0:
            t["problems"].append(f"regen (text) exited {tx['status']}: {tx['stderr'][-200:]}")
        else:
            t["text_instructions_per_second"] = n / tx["seconds"]
    return t


def summarize_peer(pr, e, args, total_instr):
    """Slowdown and bytes per instruction of a peer; estimates over the completed invocations if it was stopped."""
    out = {"runs": len(e.get("runs", []))}
    if e.get("error"):
        out["note"] = f"skipped: {e['error']}"
        return out
    runs = e.get("runs", [])
    if not runs:
        return out
    full = [x for x in runs if not x.get("stopped") and not x.get("timed_out")]
    good = [x for x in full if x.get("stdout_match") and x.get("status_match")]
    if full and not good:
        out["note"] = f"output differs from native ({full[0].get('stdout_difference', 'exit status')})"
        return out
    if good:
        out["complete"] = True
        out["ratio"] = med(x["program_ratio"] for x in good)
        out["raw_bytes"] = med(x["raw_bytes"] for x in good)
        out["compressed_bytes"] = med(x["compressed_bytes"] for x in good)
        own = med(sum(i["own_instructions"] for i in x["peer_invocations"]) for x in good)
        if own:
            out["own_instructions"] = own
        if total_instr:
            out["raw_per_instruction"] = out["raw_bytes"] / total_instr
            out["compressed_per_instruction"] = out["compressed_bytes"] / total_instr
        return out
    # Stopped: figures over the invocations that completed (k of them), lower bounds
    # over the first k+1 (the stopped one counted as far as it got) and over the
    # whole workload (what was written / done so far against all of it).
    x = runs[0]
    out["complete"] = False
    out["stopped"] = x["stopped"]
    inv, part = x["peer_invocations"], x.get("peer_partial") or {}
    k = len(inv)
    out["raw_bytes"], out["compressed_bytes"] = x["raw_bytes"], x["compressed_bytes"]
    nats = natives_of_round(pr, x["round"])
    if not nats:
        out["note"] = f"stopped ({x['stopped']}); no native invocation times"
        return out
    nat = [statistics.mean(v) for v in zip(*[n["invocation_seconds"] for n in nats])]
    out["invocations_done"], out["invocations"] = k, len(nat)
    pk = sum(i.get("seconds", 0) for i in inv)
    rk = sum(i["raw_bytes"] for i in inv)
    ck = sum(i["compressed_bytes"] for i in inv)
    if k and sum(nat[:k]) > 0:
        out["ratio"] = pk / sum(nat[:k])
    ik = prefix_instructions(pr, args, k) if k else 0
    own = sum(i["own_instructions"] for i in inv)
    if own:
        out["own_instructions_done"] = own
    if k and ik:
        out["instructions_done"] = ik
        out["instruction_share"] = ik / total_instr if total_instr else None
        out["raw_per_instruction"] = rk / ik
        out["compressed_per_instruction"] = ck / ik
    t_all = pk + part.get("seconds", 0)
    if k < len(nat):
        b = {"through_invocation": k + 1, "ratio": t_all / sum(nat[:k + 1])}
        ik1 = prefix_instructions(pr, args, k + 1)
        if ik1:
            b["raw_per_instruction"] = (rk + part.get("raw_bytes", 0)) / ik1
            b["compressed_per_instruction"] = (ck + part.get("compressed_bytes", 0)) / ik1
        out["bounds"] = b
    w = {"ratio": t_all / sum(nat)}
    if total_instr:
        w["raw_per_instruction"] = x["raw_bytes"] / total_instr
        w["compressed_per_instruction"] = x["compressed_bytes"] / total_instr
    out["whole_workload_bounds"] = w
    return out


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------

def f(x, d=2, miss=False):
    return "—" if x is None else f"{x:.{d}f}" + (MISS if miss else "")


def bpi(x, miss=False):
    if x is None:
        return "—"
    s = f"{x:.4f}" if x < 0.1 else f"{x:.3f}" if x < 10 else f"{x:.1f}"
    return s + (MISS if miss else "")


def atomx_problems(pr, cs, t):
    out = []
    for name, title in (("atomx:stored", "stored"), ("atomx:discarded", "discarded")):
        e = cs.get(name, {})
        if e.get("error"):
            out.append(f"{title}: {e['error']}")
        for key, what in (("stdout_mismatches", "STDOUT DIFFERS"), ("status_mismatches", "EXIT STATUS DIFFERS"),
                          ("timeouts", "TIMEOUT")):
            if e.get(key):
                out.append(f"{title}: {what} ({e[key]}/{e['pairs']})")
    if cs.get("atomx:stored", {}).get("pairs") and not t.get("summary") and not t["problems"]:
        out.append("no regeneration")
    return out + t["problems"]


def peer_cells(p):
    """(slowdown, raw B/instr, compressed B/instr, note) of a peer summary."""
    if p.get("note") and "invocations" not in p:
        return "—", "—", "—", p["note"]
    if p.get("complete"):
        note = "complete"
        if p.get("own_instructions"):
            note += f"; lackey counted {p['own_instructions'] / 1e6:,.0f} M instructions (with libc and the loader)"
        return f(p.get("ratio")), bpi(p.get("raw_per_instruction")), bpi(p.get("compressed_per_instruction")), note
    k, n = p.get("invocations_done"), p.get("invocations")
    span = lambda j: "invocation 1" if j == 1 else f"invocations 1–{j}"
    note = f"stopped ({p.get('stopped')}) in invocation {k + 1} of {n}"
    b, w = p.get("bounds") or {}, p.get("whole_workload_bounds") or {}
    if k:
        note += (f"; ≈: over {span(k)}"
                 + (f" ({p['instruction_share']:.0%} of the instructions)" if p.get("instruction_share") else ""))
        if p.get("own_instructions_done") and p.get("instructions_done"):
            note += (f", where lackey counted {p['own_instructions_done'] / 1e6:,.0f} M instructions (with libc and "
                     f"the loader) and atomx {p['instructions_done'] / 1e6:,.0f} M")
    if b:
        j = b["through_invocation"]
        note += (f"; {'≥: ' if not k else ''}over {span(j)} (the stopped one as far as it got): "
                 f"slowdown ≥ {b['ratio']:.0f}"
                 + (f", raw ≥ {bpi(b['raw_per_instruction'])}, compressed ≥ {bpi(b['compressed_per_instruction'])} "
                    f"B/instr" if "raw_per_instruction" in b else ""))
    if w:
        note += (f"; whole workload: slowdown ≥ {w['ratio']:.0f}"
                 + (f", raw ≥ {bpi(w['raw_per_instruction'])}, compressed ≥ {bpi(w['compressed_per_instruction'])} "
                    f"B/instr" if "raw_per_instruction" in w else ""))
    if k:
        return ("≈" + f(p["ratio"], 0) if p.get("ratio") else "—",
                "≈" + bpi(p["raw_per_instruction"]) if p.get("raw_per_instruction") else "—",
                "≈" + bpi(p["compressed_per_instruction"]) if p.get("compressed_per_instruction") else "—", note)
    return ("≥" + f(b["ratio"], 0) if b.get("ratio") else "—",
            "≥" + bpi(b["raw_per_instruction"]) if b.get("raw_per_instruction") else "—",
            "≥" + bpi(b["compressed_per_instruction"]) if b.get("compressed_per_instruction") else "—", note)


def build_tables(progs, summaries, metrics, peer_sums, peers, comp_label):
    head = ["program", "instructions", "native s", "pairs", f"**stored** ×native (≤ {TARGET_RATIO})", "min–max",
            "discarded ×native", "witnesses / block", "raw B / instr",
            f"**compressed B / instr** (≤ {TARGET_BYTES})", f"**regen M instr/s** (≥ {TARGET_REGEN / 1e6:.0f})",
            "text regen M instr/s", "instr. s", "check"]
    rows, flagged = [], False
    gm = {k: [] for k in ("stored", "discarded", "wpb", "raw", "comp", "regen", "text", "instr")}
    for pr in progs:
        if pr.error:
            rows.append([pr.variant] + ["—"] * (len(head) - 2) + [f"**{pr.error}**"])
            flagged = True
            continue
        cs, t = summaries[pr.prog], metrics[pr.prog]
        st, di = cs.get("atomx:stored", {}), cs.get("atomx:discarded", {})
        nat = [x["program_seconds"] for xs in pr.natives.values() for x in xs]
        probs = atomx_problems(pr, cs, t)
        flagged |= bool(probs)
        r, rd = st.get("median_ratio"), di.get("median_ratio")
        cb, rg = t.get("compressed_bytes_per_instruction"), t.get("regen_instructions_per_second")
        tx = t.get("text_instructions_per_second")
        for k, v in (("stored", r), ("discarded", rd), ("wpb", t.get("witnesses_per_block")),
                     ("raw", t.get("raw_bytes_per_instruction")), ("comp", cb), ("regen", rg), ("text", tx),
                     ("instr", (st.get("cost") or {}).get("instrument_seconds"))):
            gm[k].append(v)
        notes = probs + t["notes"] + ([t["text_note"]] if t.get("text_note") else [])
        rows.append([
            pr.variant,
            f"{t['instructions'] / 1e6:,.0f} M" if t.get("instructions") else "—",
            f(med(nat)), str(st.get("pairs", 0)),
            f(r, 3, r is not None and r > TARGET_RATIO),
            f"{st['min_ratio']:.2f}–{st['max_ratio']:.2f}" if st.get("min_ratio") is not None else "—",
            f(rd, 3), f(t.get("witnesses_per_block"), 3), bpi(t.get("raw_bytes_per_instruction")),
            bpi(cb, cb is not None and cb > TARGET_BYTES),
            f(rg / 1e6 if rg else None, 0, rg is not None and rg < TARGET_REGEN),
            ("~" if t.get("text_note") else "") + f(tx / 1e6 if tx else None, 0),
            f((st.get("cost") or {}).get("instrument_seconds"), 3),
            ("**" + "; ".join(probs) + "**" + ("; " if notes[len(probs):] else "") if probs else
             "ok" + ("; " if notes else "")) + "; ".join(notes[len(probs):])])
    g = {k: nr.geomean(v) for k, v in gm.items()}
    live = [pr for pr in progs if not pr.error]
    if len(live) > 1:
        rows.append(["**geometric mean**", "—", "—", "—",
                     f"**{f(g['stored'], 3, g['stored'] is not None and g['stored'] > TARGET_RATIO)}**", "—",
                     f(g["discarded"], 3), f(g["wpb"], 3), bpi(g["raw"]),
                     "**" + bpi(g["comp"], g["comp"] is not None and g["comp"] > TARGET_BYTES) + "**",
                     "**" + f(g["regen"] / 1e6 if g["regen"] else None, 0,
                              g["regen"] is not None and g["regen"] < TARGET_REGEN) + "**",
                     f(g["text"] / 1e6 if g["text"] else None, 0), f(g["instr"], 3), ""])
    main = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    main += ["| " + " | ".join(x) + " |" for x in rows]

    side = None
    if peers:
        sh = ["program", "tracer", "slowdown ×native", "raw B / instr", f"compressed B / instr ({comp_label})",
              "trace bytes raw / compressed", "notes"]
        side = ["| " + " | ".join(sh) + " |", "|" + "|".join("---" for _ in sh) + "|"]
        for pr in live:
            t, st = metrics[pr.prog], summaries[pr.prog].get("atomx:stored", {})
            r, cb = st.get("median_ratio"), t.get("compressed_bytes_per_instruction")
            side.append("| " + " | ".join([
                pr.variant, "atomx trace (stored)", f(r, 2, r is not None and r > TARGET_RATIO),
                bpi(t.get("raw_bytes_per_instruction")), bpi(cb, cb is not None and cb > TARGET_BYTES) + " (zstd -1 in the recorder)",
                f"{human(t['raw_bytes'])} / {human(t['compressed_bytes'])}" if t.get("raw_bytes") else "—",
                "only the program's own code (shared libraries are outside calls)"]) + " |")
            for pid in peers:
                p = peer_sums[pr.prog].get(pid, {})
                a, b, c, note = peer_cells(p)
                sizes = (f"{human(p['raw_bytes'])} / {human(p['compressed_bytes'])}"
                         if p.get("raw_bytes") is not None else "—")
                side.append("| " + " | ".join([pr.variant, PEERS[pid].title, a, b, c, sizes, note]) + " |")
    return "\n".join(main), ("\n".join(side) if side else None), g, flagged


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[2:]))
    ap.add_argument("--only", metavar="PROG,...",
                    help="programs (gzip, lua, ...) or variants (lua-clang-O2); 'all' = every program "
                         f"(default: {','.join(DEFAULT_PROGRAMS)})")
    ap.add_argument("--variant", default="gcc-O2", help="variant suffix used for program names (default gcc-O2)")
    ap.add_argument("--peers", default="all", metavar="none|lackey|qemu|all",
                    help="peers traced beside atomx (comma list allowed; default all)")
    ap.add_argument("--runs", type=int, default=7, help="rounds of the atomx configurations, at most (default 7)")
    ap.add_argument("--min-runs", type=int, default=5, help="rounds the time budget never cuts below (default 5)")
    ap.add_argument("--peer-runs", type=int, default=1, help="rounds with the peers (default 1)")
    ap.add_argument("--budget", type=float, default=30,
                    help="minutes: no new pair of sweeps once --min-runs are done and the next two would not "
                         "fit; 0 = no limit (default 30)")
    ap.add_argument("--regen-runs", type=int, default=3,
                    help="rounds whose trace is regenerated with --summary: the trace metrics and the regeneration "
                         "speed (median) come from these (default 3)")
    ap.add_argument("--text-seconds", type=float, default=60,
                    help="seconds at most for the one `atomx regen DIR` text run per program (round 1's trace); "
                         "0 = skip it (default 60)")
    ap.add_argument("--peer-timeout", type=float, default=300,
                    help="seconds per peer workload run; a run stopped there gives estimates (default 300)")
    ap.add_argument("--max-peer-bytes", type=parse_size, default=parse_size("4G"),
                    help="stop a peer run when its trace files on disk pass this size (they are deleted after each "
                         "program invocation; default 4G, never more than half the free space)")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default bench/results)")
    ap.add_argument("--atomx", type=Path, default=Path(os.environ.get("ATOMX", REPO / "build" / "bin" / "atomx")))
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("ATOMX_CHECK_TIMEOUT", 300)),
                    help="seconds per native workload run and per instrumentation; regen: x10 (default 300)")
    ap.add_argument("--atomx-factor", type=float, default=5, help="timeout multiplier for the traced runs (default 5)")
    args = ap.parse_args()
    if not args.atomx.is_file():
        sys.exit(f"trace.py: no atomx at {args.atomx} (build it, or pass --atomx / ATOMX=)")
    args.atomx = args.atomx.resolve()
    if args.runs < 1:
        sys.exit("trace.py: --runs must be >= 1")
    args.min_runs = max(1, min(args.min_runs, args.runs))
    args.peer_runs = max(1, min(args.peer_runs, args.runs))
    args.regen_runs = max(1, args.regen_runs)
    want = [p.strip() for p in args.peers.split(",") if p.strip()]
    if want in (["none"], []):
        args.peers = []
    elif want == ["all"]:
        args.peers = list(PEERS)
    else:
        bad = [p for p in want if p not in PEERS]
        if bad:
            sys.exit(f"trace.py: unknown peer(s) {', '.join(bad)}; known: none, {', '.join(PEERS)}, all")
        args.peers = want
    args.corpus_bin = Path(os.environ.get("ATOMX_CORPUS_DIR", Path.home() / ".cache" / "atomx-corpus")) / "bin"
    args.compress_label, args.compress_cmd = compressor()
    return args


def main():
    if "--data" in sys.argv[1:]:
        import trace_data  # the data-trace benchmark (bench/trace_data.py)
        return trace_data.main()
    args = parse_args()
    variants = [n for n in (nr.sh([str(CORPUS / "build.sh"), "--list"]) or "").split() if n]
    if not variants:
        sys.exit("trace.py: corpus/build.sh --list gave nothing")
    wanted = DEFAULT_PROGRAMS if not args.only or args.only == "all" else args.only.split(",")
    chosen = []
    for w in wanted:
        w = w.strip()
        v = w if w in variants else f"{w}-{args.variant}"
        if v not in variants:
            sys.exit(f"trace.py: no corpus variant {v} (see corpus/build.sh --list)")
        chosen.append(v)

    t_start = time.perf_counter()
    deadline = t_start + args.budget * 60 if args.budget > 0 else None
    info = nr.machine_info(argparse.Namespace(atomx=args.atomx, peers=False))
    for pid in args.peers:
        need = PEERS[pid].need
        if shutil.which(need):
            v = nr.sh([need, "--version"]) or ""
            info[need] = v.splitlines()[0] if v else None
    info["compressor"] = args.compress_label
    if args.compress_cmd:
        info["compressor_version"] = (nr.sh([args.compress_cmd[0], "--version"]) or "").splitlines()[0:1]

    work = Path(tempfile.mkdtemp(prefix="atomx-bench-trace."))
    if args.peers:
        free = shutil.disk_usage(work).free
        if args.max_peer_bytes > free // 2:
            log(f"--max-peer-bytes {human(args.max_peer_bytes)} lowered to half the free space, {human(free // 2)}")
            args.max_peer_bytes = free // 2
    progs = []
    stop_reason = f"--runs {args.runs} reached"
    try:
        for v in chosen:
            prog = v.split("-")[0]
            pr = TProgram(prog, v, args.corpus_bin / v, CORPUS / "workloads" / f"{prog}.sh", work / v,
                          keep_invocations=True)
            pr.work.mkdir(parents=True)
            progs.append(pr)
            if not os.access(pr.binary, os.X_OK):
                pr.error = "not built (corpus/build.sh)"
            elif not pr.workload.is_file():
                pr.error = "no workload"
        log(f"programs: {', '.join(chosen)}; peers: {', '.join(args.peers) or 'none'}; work in {work}")

        for pr in progs:
            if pr.error:
                log(f"{pr.variant}: {pr.error}")
                continue
            pr.configs += instrument(pr, args)
            c = pr.configs[0]
            log(f"{pr.variant}: atomx trace --instrument: "
                + (c.error or f"{c.cost['instrument_seconds']:.2f}s"))
            for pid in args.peers:
                c = prepare_peer(pr, PEERS[pid], args)
                pr.configs.append(c)
                if c.error:
                    log(f"{pr.variant}: {pid}: {c.error}")

        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        live = [p for p in progs if not p.error]
        try:
            tools.sweeps(live, args, t_start, deadline)
            stop_reason = getattr(args, "stop_reason", stop_reason)
        except KeyboardInterrupt:
            stop_reason = "interrupted"
            log("interrupted: writing what was measured")
        if stop_reason != "interrupted":
            try:
                for pr in live:
                    regenerate_pending(pr, args)
            except KeyboardInterrupt:
                stop_reason = "interrupted while regenerating"
                log("interrupted: writing what was measured")

        summaries, metrics, peer_sums = {}, {}, {}
        for pr in progs:
            if pr.error:
                continue
            summaries[pr.prog] = {c.name: tools.summarize_config(c) for c in pr.configs}
            for e in summaries[pr.prog].values():
                if e.get("kind") == "peer" and any(x.get("stopped") for x in e.get("runs", [])):
                    # a stopped run's ratio covers part of the workload: the figures are under "peers"
                    for k in ("median_ratio", "min_ratio", "max_ratio", "median_workload_ratio", "median_cpu_ratio"):
                        e.pop(k, None)
                    e["note"] = "stopped run(s): see this program's \"peers\""
            metrics[pr.prog] = summarize_atomx(pr, summaries[pr.prog])
            peer_sums[pr.prog] = {}
            for pid in args.peers:
                try:
                    peer_sums[pr.prog][pid] = summarize_peer(pr, summaries[pr.prog].get(f"peer:{pid}", {}), args,
                                                             metrics[pr.prog].get("instructions"))
                except KeyboardInterrupt:
                    peer_sums[pr.prog][pid] = {"note": "interrupted"}
    finally:
        shutil.rmtree(work, ignore_errors=True)

    main_t, side_t, geo, flagged = build_tables(progs, summaries, metrics, peer_sums, args.peers,
                                                args.compress_label)
    elapsed = time.perf_counter() - t_start
    info["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    rounds = sorted({len(c.runs) for p in progs for c in p.configs if c.runs and c.kind == "atomx"})
    regened = sorted({sum(1 for x in c.runs if x.get("regen")) for p in progs for c in p.configs
                      if c.name == "atomx:stored" and c.runs})
    header = (f"Trace benchmark, {info['date']}: {info['nproc']} CPUs ({info['cpu_model']}), "
              f"Linux {info['kernel']}, atomx {info['atomx_commit']}"
              f"{' (+ uncommitted changes)' if info['atomx_tree_dirty'] else ''}; load average "
              f"{' '.join(info['loadavg_start'])} at start, {' '.join(info['loadavg_end'])} at end; "
              f"{elapsed / 60:.1f} min.\n"
              f"Programs: {', '.join(p.variant + (' (' + p.error + ')' if p.error else '') for p in progs)}; "
              f"pairs per atomx configuration: {', '.join(map(str, rounds)) or '0'} ({stop_reason}); "
              f"traces regenerated: {', '.join(map(str, regened)) or '0'} per program; peer runs: {args.peer_runs if args.peers else 0}.")
    notes = [
        "Targets (issue 15): recording with the trace stored ≤ 1.3× native; ≤ 0.05 compressed bytes per executed "
        "instruction; regeneration ≥ 200 M instructions/s.  ✗ marks a cell that misses its target.",
        "×native: the program's own wall time (all its invocations in the workload) over the mean of the native "
        "runs just before and after it, median over the rounds.  stored: ATOMX_TRACE_DIR set, a fresh trace "
        "directory per round, the whole workload recording into it; discarded: the same binary without "
        "ATOMX_TRACE_DIR (the witness stores alone).",
        "From `atomx regen DIR --summary` (trace of round 1; B/instr and regen speed: median over the "
        f"regenerated rounds): instructions and blocks executed in the program's own code; witnesses / block; raw "
        f"B / instr = stream-bytes / instructions; compressed = the sizes of DIR/*.axt (zstd chunks) / "
        f"instructions; regen M instr/s = instructions / wall time of `regen --summary`.  Text regen: "
        f"`atomx regen DIR >/dev/null` (a line per instruction), once, for at most {args.text_seconds:g} s; "
        f"~: stopped there, lines per second, the lines estimated from the bytes written (/proc/PID/io wchar) "
        f"and the mean line length of the output's first 4 MB.",
    ]
    if args.peers:
        notes.append(
            f"Peers: {'; '.join(PEERS[p].doc for p in args.peers)}.  Their trace files are written into the "
            f"scratch directory, measured (raw, and compressed with `{args.compress_label}`) and deleted after "
            f"each program invocation; B / instr divides by atomx's instruction count of the same workload "
            f"(the peers also trace the shared libraries and the dynamic loader, which atomx leaves out, so "
            f"their bytes cover more code).  A run is stopped at --peer-timeout {args.peer_timeout:g}s or when "
            f"its files pass --max-peer-bytes {human(args.max_peer_bytes)}.  Then ≈ figures are over the program "
            f"invocations that completed, against the same invocations of the native runs and atomx's instruction "
            f"count for them (from round 1's trace, regenerated for those invocations only); ≥ figures (where no "
            f"invocation completed) are lower bounds over the invocations up to the stopped one, that one counted "
            f"as far as it got; the notes also give lower bounds for the whole workload (time and bytes so far "
            f"against all of it).")
    md = header + "\n\n" + main_t + "\n" + ("\nSide by side (one run per peer):\n\n" + side_t + "\n" if side_t else "") \
        + "\n" + "\n\n".join(notes) + "\n"
    print(md)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "trace.md").write_text(md)
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    doc = {"machine": info, "settings": settings, "elapsed_seconds": elapsed, "stop_reason": stop_reason,
           "targets": {"stored_ratio_at_most": TARGET_RATIO, "compressed_bytes_per_instruction_at_most": TARGET_BYTES,
                       "regen_instructions_per_second_at_least": TARGET_REGEN},
           "peers": {p: {"prefix": PEERS[p].prefix, "doc": PEERS[p].doc} for p in args.peers},
           "geomean": geo,
           "programs": [{"program": p.prog, "variant": p.variant, "binary": str(p.binary), "error": p.error,
                         "natives": p.natives, "trace": metrics.get(p.prog), "peers": peer_sums.get(p.prog),
                         "census_invocations": len(p.census) if p.census else None,
                         "configs": summaries.get(p.prog, {})} for p in progs]}
    (args.out / "trace.json").write_text(json.dumps(doc, indent=1) + "\n")
    log(f"wrote {args.out / 'trace.md'} and {args.out / 'trace.json'} ({elapsed / 60:.1f} min)")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
