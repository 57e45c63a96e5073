#!/usr/bin/env python3
"""Tool-suite benchmark: the slowdown of every shipped atomx tool, next to ATOM's Figure 6 and the peers.

    bench/tools.py [--only PROG,...] [--tools a,b] [--peers SET] [--runs N] [--budget MIN] ...

For every selected corpus program (default: lua, sqlite3, muparser, bc --
single-threaded with libreadline and libtinfo loaded, so inline counters
are a plain `inc` -- the gcc-O2 variants) and every tool shipped with atomx (share/atomx/tools/*; or
--tools), the program is instrumented once with `atomx BIN -T NAME -o OUT -q`
(timed: the instrumentation cost), then its workload (corpus/workloads/) runs
in rounds with every configuration: native, atomx null, atomx with each tool,
and the peers that do the same job on the same workload (Valgrind's tools,
strace, ltrace, BOLT's instrumentation, QEMU user mode).

Pairing: in each round a configuration's run is sandwiched between two native
runs (N X1 N X2 N ... N, the order of the X rotated and reversed from round to
round); its ratio is its time over the mean of the two natives around it.
The time measured is the program's own: a wrapper (installed for every
configuration, native included) adds up the wall time of each invocation of
the program, so the awk/cp/shell parts of the workload do not dilute the
ratio (the whole-workload ratio is in the JSON too).  The table gives the
median ratio over the rounds; rounds are swept over the programs like
bench/null_rewrite.py, whose run environment (env -i, scratch directories,
the binary always at <scratch>/bin/<prog>) is reused as is.

Output: DIR/tools.md (Markdown) and DIR/tools.json (every raw timing, the
machine, the atomx commit, the settings).  Exit status 1 if a row is flagged
(stdout or exit status differing from native, a timeout, a tool writing no
output, a configuration that failed to build).  Python 3 standard library only.
"""

import argparse
import json
import os
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
from typing import Callable, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import null_rewrite as nr  # noqa: E402  (shared: geomean, machine info, corpus paths)

REPO, CORPUS = nr.REPO, nr.CORPUS

# ATOM (Srivastava & Eustace, PLDI 1994 / WRL 94/2), Figure 6: execution time
# of the instrumented SPEC92 programs relative to the uninstrumented ones, on
# an Alpha AXP 3000/400; with the instrumentation points and number of
# arguments of the same figure.
FIG6 = {
    "branch":  (3.03, "each conditional branch", 3),
    "cache":   (11.84, "each memory reference", 1),
    "dyninst": (2.91, "each basic block", 3),
    "gprof":   (2.70, "each procedure/each basic block", 2),
    "inline":  (1.03, "each call site", 1),
    "io":      (1.01, "before/after write procedure", 4),
    "malloc":  (1.02, "before/after malloc procedure", 1),
    "pipe":    (1.80, "each basic block", 2),
    "prof":    (2.33, "each procedure/each basic block", 2),
    "syscall": (1.01, "before/after each system call", 2),
    "unalign": (2.93, "each basic block", 3),
}

DEFAULT_PROGRAMS = ["lua", "sqlite3", "muparser", "bc"]

LOG_NAME = "tools"   # bench/trace.py, which imports this module, logs as "trace"
log = lambda msg: print(f"[{LOG_NAME} {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Peers: (id, column title, rows it stands beside, how to run it)
# "{OUT}" in a prefix is the run's tool-output directory (fresh every run).
# ---------------------------------------------------------------------------

@dataclass
class Peer:
    name: str
    title: str
    rows: tuple                 # tool rows this peer is shown beside ("null" = the null rewrite row)
    prefix: list = field(default_factory=list)
    need: str = ""              # program that must be installed
    valgrind: bool = False      # runs a --strip-debug copy (Valgrind 3.19 vs clang's DWARF 5)
    timeout_factor: float = 20
    sets: tuple = ("valgrind", "all")   # --peers sets that include it
    doc: str = ""


VG = ["valgrind", "-q", "--log-file={OUT}/vg.%p"]
PEERS = [
    Peer("valgrind-none", "valgrind none", ("null",), VG + ["--tool=none"], "valgrind", True,
         doc="nulgrind: Valgrind's translation alone"),
    Peer("qemu", "qemu-x86_64", ("null",), ["qemu-x86_64"], "qemu-x86_64", timeout_factor=10,
         sets=("cheap", "valgrind", "all"), doc="QEMU user mode without plugins: the translator alone"),
    Peer("qemu-bb", "qemu + bb plugin", ("branch", "dyninst", "prof"), [], "qemu-x86_64", timeout_factor=20,
         sets=("cheap", "valgrind", "all"),
         doc="QEMU user mode with bench/qemu_bbcount.c: a callback per executed block counting blocks and instructions"),
    Peer("cachegrind", "cachegrind", ("dyninst", "prof", "pipe"),
         VG + ["--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file={OUT}/cg.%p"], "valgrind", True,
         doc="--cache-sim=no: instruction counts per line"),
    Peer("cachegrind-branch", "cachegrind --branch-sim", ("branch",),
         VG + ["--tool=cachegrind", "--cache-sim=no", "--branch-sim=yes", "--cachegrind-out-file={OUT}/cg.%p"],
         "valgrind", True, doc="--cache-sim=no --branch-sim=yes"),
    Peer("cachegrind-cache", "cachegrind --cache-sim", ("cache", "unalign"),
         VG + ["--tool=cachegrind", "--cache-sim=yes", "--cachegrind-out-file={OUT}/cg.%p"], "valgrind", True,
         doc="--cache-sim=yes: every memory reference through a cache model"),
    Peer("callgrind", "callgrind", ("gprof", "prof", "inline"),
         VG + ["--tool=callgrind", "--callgrind-out-file={OUT}/cl.%p"], "valgrind", True,
         doc="call graph and per-instruction costs"),
    Peer("lackey", "lackey", ("dyninst", "branch"), VG + ["--tool=lackey"], "valgrind", True,
         timeout_factor=60, sets=("all", "slow"), doc="counts blocks, instructions, conditional branches; very slow"),
    Peer("strace", "strace -c -f", ("syscall", "io"), ["strace", "-f", "-c", "-o", "{OUT}/strace.txt"], "strace",
         timeout_factor=10, sets=("cheap", "valgrind", "all"), doc="system call summary"),
    Peer("ltrace", "ltrace malloc", ("malloc",),
         ["ltrace", "-f", "-c", "-e", "malloc+free+calloc+realloc", "-o", "{OUT}/ltrace.txt"], "ltrace",
         timeout_factor=60, sets=("all", "slow"), doc="a breakpoint on every allocation call; very slow"),
    Peer("bolt", "BOLT instrument", ("branch", "dyninst", "prof"), [], "", timeout_factor=5,
         sets=("cheap", "valgrind", "all"), doc="llvm-bolt -instrument: edge counters in the binary"),
]
PEER_BY_NAME = {p.name: p for p in PEERS}
PEER_SETS = {"none": [], "cheap": [p.name for p in PEERS if "cheap" in p.sets],
             "valgrind": [p.name for p in PEERS if "valgrind" in p.sets],
             "all": [p.name for p in PEERS]}


# ---------------------------------------------------------------------------
# Configurations of one program
# ---------------------------------------------------------------------------

@dataclass
class Config:
    name: str                   # "native", "atomx-null", "atomx:branch", "peer:callgrind"
    kind: str                   # native | atomx | peer
    row: str = ""               # tool name (atomx) / peer id (peer)
    binary: Optional[Path] = None
    prefix: list = field(default_factory=list)
    baseline: Optional[Path] = None   # the native binary of its pairs (None: the program's)
    timeout_factor: float = 1.0
    cost: Optional[dict] = None
    error: Optional[str] = None
    note: Optional[str] = None
    runs: list = field(default_factory=list)
    run: Optional[Callable] = None    # (Program, Config, args, round) -> run dict; None: run_workload as is


@dataclass
class Program:
    prog: str
    variant: str
    binary: Path
    workload: Path
    work: Path
    error: Optional[str] = None
    configs: list = field(default_factory=list)     # Config, excluding the natives
    natives: dict = field(default_factory=dict)     # baseline path -> list of native runs
    native_files: Optional[set] = None              # files a native run leaves in its cwd
    keep_invocations: bool = False                  # runs also list each invocation's seconds


def shipped_tools(atomx):
    """Tools atomx ships: BUILD/share/atomx/tools/NAME/ holding NAME_inst.*; else `atomx --help`."""
    d = atomx.resolve().parent.parent / "share" / "atomx" / "tools"
    if d.is_dir():
        return sorted(t.name for t in d.iterdir() if t.is_dir() and list(t.glob(f"{t.name}_inst.*")))
    out = nr.sh([str(atomx), "--help"]) or ""
    names, inside = [], False
    for line in out.splitlines():
        if "-T NAME" in line:
            inside = True
        elif inside and line.startswith("        ") and not line.startswith("         "):
            names.append(line.split()[0])
        elif inside and line.startswith("  atomx"):
            break
    return names


def is_pie(path):
    with open(path, "rb") as f:
        hdr = f.read(18)
    return hdr[16] == 3   # e_type ET_DYN


def timed(cmd, timeout):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=timeout)
    return p, time.perf_counter() - t0


def last_line(p):
    msg = p.stdout.decode(errors="replace").strip().splitlines()
    return msg[-1][:300] if msg else "no output"


def prepare_atomx(pr, row, args):
    """atomx BIN [-T NAME] [--counters MODE] [--defer-end] -o OUT -q [-- ARGS]: once; its wall time
    is the instrumentation cost.  `row` is NAME, or NAME@MODE for --counters MODE, either with
    +defer for --defer-end (the workload's run, then `atomx end` on the dumps it left, timed apart)."""
    base, _, variant = row.partition("+")
    tool, _, mode = base.partition("@")
    out = pr.work / f"atomx-{row}" / pr.prog
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(args.atomx), str(pr.binary)] + ([] if tool == "null" else ["-T", tool]) + ["-o", str(out), "-q"]
    if mode:
        cmd += ["--counters", mode]
    if variant == "defer":
        cmd += ["--defer-end"]
    elif variant:
        raise SystemExit(f"tools.py: unknown row variant +{variant} in {row} (+defer)")
    extra = args.tool_args.get(tool)
    if extra:
        cmd += ["--"] + extra
    c = Config("atomx-null" if tool == "null" else f"atomx:{row}", "atomx", row, timeout_factor=args.atomx_factor)
    p, wall = timed(cmd, args.timeout)
    if p.returncode != 0 or not out.exists():
        c.error = f"atomx exited {p.returncode}: {last_line(p)}"
    else:
        c.binary = out
        c.cost = {"instrument_seconds": wall, "command": cmd[:1] + ["BIN"] + cmd[2:],
                  "output_bytes": out.stat().st_size, "input_bytes": pr.binary.stat().st_size}
        if variant == "defer":
            c.run = run_deferred
    return c


def run_deferred(pr, c, args, r):
    """The workload of a --defer-end program, then `atomx end` on every directory its processes
    left dumps in: the end's wall time is end_seconds, apart from the program's."""
    res = run_workload(pr, c.binary, c.prefix, args.timeout * c.timeout_factor)
    run_dir = pr.work / "scratch" / "run"
    dirs = sorted({f.parent for f in run_dir.rglob("atomx-end.*")})
    t0 = time.perf_counter()
    failed = [d for d in dirs if subprocess.run([str(args.atomx), "end", "-q", str(d)]).returncode != 0]
    res["end_seconds"] = time.perf_counter() - t0
    res["end_dumps_left"] = len(list(run_dir.rglob("atomx-end.*")))
    res["_files"] = {str(f.relative_to(run_dir)) for f in run_dir.rglob("*")}
    if failed:
        res["end_failed"] = [str(d) for d in failed]
    return res


def strip_debug(pr):
    """Valgrind 3.19 gives up on clang 15's DWARF 5; the code and data stay the same bytes."""
    out = pr.work / "stripped" / pr.prog
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        p = subprocess.run(["objcopy", "--strip-debug", str(pr.binary), str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            raise ValueError("objcopy --strip-debug failed: " + p.stdout.strip()[:200])
    return out


def bolt_binary():
    # llvm-bolt looks for its runtime (libbolt_rt_instr.a) in ../lib of the path it
    # was started as: Debian's /usr/bin/llvm-bolt-16 symlink would send it to /usr/lib
    # ("library not found"), so run the resolved /usr/lib/llvm-16/bin/llvm-bolt.
    for b in ("llvm-bolt-16", "llvm-bolt"):
        w = shutil.which(b)
        if w:
            return str(Path(w).resolve())
    b = "/usr/lib/llvm-16/bin/llvm-bolt"
    return b if os.access(b, os.X_OK) else None


def prepare_bolt(pr, args, variants):
    c = Config("peer:bolt", "peer", "bolt", timeout_factor=PEER_BY_NAME["bolt"].timeout_factor)
    bolt = bolt_binary()
    if not bolt:
        c.error = "llvm-bolt not installed (bench/setup.sh installs the peers)"
        return c
    src = pr.binary
    if is_pie(src):
        # BOLT 16's instrumentation runtime crashes in PIE programs (support came in
        # LLVM 17), so the program's non-PIE variant stands in, paired with its own native.
        alt = [v for v in variants if v.startswith(pr.prog + "-") and v.endswith("-nopie")
               and os.access(args.corpus_bin / v, os.X_OK)]
        if not alt:
            c.error = f"PIE binary (BOLT 16 cannot instrument PIE) and no {pr.prog}-*-nopie variant built"
            return c
        alt.sort(key=lambda v: (args.variant not in v, v))
        src = args.corpus_bin / alt[0]
        c.baseline = src
        c.note = f"on {alt[0]}"
    out = pr.work / "bolt" / pr.prog
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [bolt, str(src), "-instrument", f"-instrumentation-file={pr.work / 'scratch' / 'toolout' / 'bolt.fdata'}",
           "-o", str(out)]
    p, wall = timed(cmd, args.timeout)
    if p.returncode != 0 or not out.exists():
        c.error = f"llvm-bolt exited {p.returncode}: {last_line(p)}"
        return c
    c.binary, c.cost = out, {"instrument_seconds": wall, "tool": bolt}
    return c


def qemu_plugin(work):
    """Build bench/qemu_bbcount.c once (Debian's qemu-user ships no plugin .so)."""
    so = work / "libbbcount.so"
    if not so.exists():
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            raise ValueError("no C compiler to build the QEMU plugin")
        p = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(so), str(HERE / "qemu_bbcount.c")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            raise ValueError("building the QEMU plugin failed: " + p.stdout.strip()[-200:])
    return so


def prepare_peer(pr, peer, args, variants):
    if peer.name == "bolt":
        return prepare_bolt(pr, args, variants)
    if peer.name == "qemu-bb":
        c = Config("peer:qemu-bb", "peer", "qemu-bb", timeout_factor=peer.timeout_factor, binary=pr.binary)
        if not shutil.which("qemu-x86_64"):
            c.error = "qemu-x86_64 not installed (bench/setup.sh installs the peers)"
        else:
            c.prefix = ["qemu-x86_64", "-plugin", f"{qemu_plugin(pr.work.parent)},out={{OUT}}/qemu-bb.txt"]
        return c
    c = Config(f"peer:{peer.name}", "peer", peer.name, prefix=list(peer.prefix), timeout_factor=peer.timeout_factor)
    if peer.need and not shutil.which(peer.need):
        c.error = f"{peer.need} not installed (bench/setup.sh installs the peers)"
        return c
    c.binary = strip_debug(pr) if peer.valgrind else pr.binary
    return c


# ---------------------------------------------------------------------------
# One workload run (the environment of corpus/check.sh and null_rewrite.py)
# ---------------------------------------------------------------------------

def run_workload(pr, binary, prefix, timeout, env=None, before="", after="", poll=None):
    """One workload run; the program's own time is summed over its invocations.

    env: extra environment variables; before/after: shell lines the wrapper runs
    before and after each invocation, outside the timed part ($rc holds the
    program's status in after); poll: called every 0.5 s while the workload runs,
    a string it returns stops the run (the whole process group is killed) and is
    recorded as "stopped".
    """
    d = pr.work / "scratch"
    for sub in ("bin", "run", "home", "tmp", "wrap", "out", "toolout", "meta"):
        shutil.rmtree(d / sub, ignore_errors=True)
        (d / sub).mkdir(parents=True)
    exe = d / "bin" / pr.prog
    shutil.copyfile(binary, exe)
    exe.chmod(0o755)
    times = d / "meta" / "times"
    # Every configuration (native too) runs through the same wrapper, which
    # adds up the wall time of each program invocation.  The program still
    # runs as <d>/bin/<prog>, so argv[0] and every path are the same.
    pre = " ".join(shlex.quote(a.replace("{OUT}", str(d / "toolout"))) for a in prefix)
    wrap = d / "wrap" / pr.prog
    wrap.write_text("#!/bin/bash\n" + (before + "\n" if before else "") + "t0=$EPOCHREALTIME\n"
                    f"{pre} {shlex.quote(str(exe))} \"$@\"\nrc=$?\n"
                    f"echo \"$t0 $EPOCHREALTIME\" >>{shlex.quote(str(times))}\n"
                    + (after + "\n" if after else "") + "exit $rc\n")
    wrap.chmod(0o755)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(d / "home"),
           "TMPDIR": str(d / "tmp"), "LC_ALL": "C", "LANG": "C", "TZ": "UTC", **(env or {})}
    cmd = ["timeout", "-k", "10", str(int(timeout)), "bash", str(pr.workload), str(wrap)]
    stopped = None
    with open(d / "out" / "stdout", "wb") as so, open(d / "out" / "stderr", "wb") as se:
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        # Own session, so that an interrupted benchmark takes the whole workload down with it.
        p = subprocess.Popen(cmd, cwd=d / "run", env=env, stdin=subprocess.DEVNULL, stdout=so, stderr=se,
                             start_new_session=True)
        try:
            if poll is None:
                p.wait()
            else:
                while True:
                    try:
                        p.wait(timeout=0.5)
                        break
                    except subprocess.TimeoutExpired:
                        stopped = poll()
                        if stopped:
                            os.killpg(p.pid, signal.SIGKILL)
                            p.wait()
                            for _ in range(100):   # until the whole group is gone (its files final)
                                try:
                                    os.killpg(p.pid, signal.SIGKILL)
                                except ProcessLookupError:
                                    break
                                time.sleep(0.05)
                            break
        except BaseException:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise
        t1 = time.perf_counter()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    prog_s, calls, each = 0.0, 0, []
    if times.exists():
        for line in times.read_text().splitlines():
            a, b = line.split()
            prog_s += float(b) - float(a)
            calls += 1
            each.append(float(b) - float(a))
    stdout = (d / "out" / "stdout").read_bytes()
    res = {
        "program_seconds": prog_s,
        "invocations": calls,
        "workload_seconds": t1 - t0,
        "cpu_seconds": (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
        "status": p.returncode,
        "timed_out": p.returncode in (124, 137),
        "stderr_bytes": (d / "out" / "stderr").stat().st_size,
        "_stdout": stdout,
        "_files": {str(f.relative_to(d / "run")) for f in (d / "run").rglob("*")},
    }
    if pr.keep_invocations:
        res["invocation_seconds"] = each
    if stopped:
        res["stopped"] = stopped
    return res


def do_round(pr, r, args):
    """Round r of a program: per baseline binary, N X1 N X2 ... N; orders rotate with r."""
    live = [c for c in pr.configs if c.error is None and r < (args.peer_runs if c.kind == "peer" else args.runs)]
    groups = {}
    for c in live:
        groups.setdefault(c.baseline or pr.binary, []).append(c)
    keys = list(groups)
    keys = keys[r % len(keys):] + keys[:r % len(keys)] if keys else []
    for base in keys:
        cs = groups[base]
        k = r % len(cs)
        cs = cs[k:] + cs[:k]
        if r % 2:
            cs.reverse()
        nat = []

        def native():
            res = run_workload(pr, base, [], args.timeout)
            res["round"] = r
            if base == pr.binary and pr.native_files is None:
                pr.native_files = res["_files"]
            nat.append(res)
            return res

        before = native()
        for c in cs:
            res = c.run(pr, c, args, r) if c.run else \
                run_workload(pr, c.binary, c.prefix, args.timeout * c.timeout_factor)
            after = native()
            res["round"] = r
            for key in ("program", "workload", "cpu"):
                s = f"{key}_seconds"
                den = (before[s] + after[s]) / 2
                res[f"{key}_ratio"] = res[s] / den if den > 0 else None
            res["stdout_match"] = res["_stdout"] == before["_stdout"]
            res["status_match"] = res["status"] == before["status"]
            if not res["stdout_match"]:
                res["stdout_difference"] = nr.first_difference(before["_stdout"], res["_stdout"])
            res["new_files"] = sorted(res["_files"] - (pr.native_files or before["_files"]))[:20]
            c.runs.append(res)
            log(f"{pr.prog} round {r + 1}: {c.name} {res['program_seconds']:.2f}s, ratio {res['program_ratio']:.2f}"
                + ("" if res["stdout_match"] and res["status_match"] else " (OUTPUT DIFFERS)"))
            before = after
        for x in nat:
            x.pop("_stdout", None)
            x.pop("_files", None)
        pr.natives.setdefault(str(base), []).extend(nat)
        for c in cs:
            c.runs[-1].pop("_stdout", None)
            c.runs[-1].pop("_files", None)


def estimate_round(pr, r, args):
    nat = [x["workload_seconds"] for xs in pr.natives.values() for x in xs]
    n = statistics.mean(nat) if nat else 5.0
    total, groups = 0.0, set()
    for c in pr.configs:
        if c.error or r >= (args.peer_runs if c.kind == "peer" else args.runs):
            continue
        groups.add(c.baseline or pr.binary)
        total += n + (statistics.mean(x["workload_seconds"] for x in c.runs) if c.runs
                      else n * min(c.timeout_factor, 15))
    return total + n * len(groups)


# ---------------------------------------------------------------------------
# Summaries and tables
# ---------------------------------------------------------------------------

def summarize_config(c):
    e = {"name": c.name, "kind": c.kind, "row": c.row, "error": c.error, "note": c.note, "cost": c.cost,
         "prefix": c.prefix, "baseline": str(c.baseline) if c.baseline else None,
         "runs": [{k: v for k, v in x.items() if not k.startswith("_")} for x in c.runs]}
    if c.runs:
        med = lambda k: statistics.median(x[k] for x in c.runs if x.get(k) is not None) \
            if any(x.get(k) is not None for x in c.runs) else None
        ratios = [x["program_ratio"] for x in c.runs if x["program_ratio"] is not None]
        e.update({
            "pairs": len(c.runs),
            "median_ratio": med("program_ratio"),
            "min_ratio": min(ratios) if ratios else None,
            "max_ratio": max(ratios) if ratios else None,
            "median_workload_ratio": med("workload_ratio"),
            "median_cpu_ratio": med("cpu_ratio"),
            "median_program_seconds": med("program_seconds"),
            "stdout_mismatches": sum(not x["stdout_match"] for x in c.runs),
            "status_mismatches": sum(not x["status_match"] for x in c.runs),
            "timeouts": sum(x["timed_out"] for x in c.runs),
            "tool_outputs": sorted({f for x in c.runs for f in x["new_files"]})[:20],
        })
        if any("end_seconds" in x for x in c.runs):  # --defer-end: atomx end after the workload
            e["median_end_seconds"] = med("end_seconds")
            e["median_end_ratio"] = statistics.median(
                x["end_seconds"] / (x["program_seconds"] / x["program_ratio"]) for x in c.runs
                if x.get("end_seconds") is not None and x.get("program_ratio"))
            e["end_failures"] = sum(bool(x.get("end_failed")) or bool(x.get("end_dumps_left")) for x in c.runs)
            e["note"] = (c.note + "; " if c.note else "") + (
                f"then atomx end: {e['median_end_seconds']:.2f} s, {e['median_end_ratio']:.2f}x the native "
                f"program time")
    return e


def problems_of(e, title, flags_only=False):
    """Problems of a configuration.  Only atomx's are flags (exit status 1); a peer that is
    not installed, cannot handle the binary or breaks the program is a note (its cell says so)."""
    if e.get("kind") == "peer" and flags_only:
        return []
    out = []
    if e.get("error") and e.get("kind") == "peer":
        out.append(f"{title} skipped: {e['error']}")
    elif e.get("error"):
        out.append(f"{title}: {e['error']}")
    for key, what in (("stdout_mismatches", "STDOUT DIFFERS"), ("status_mismatches", "EXIT STATUS DIFFERS"),
                      ("timeouts", "TIMEOUT")):
        if e.get(key):
            out.append(f"{title}: {what} ({e[key]}/{e['pairs']})")
    if e.get("end_failures"):
        out.append(f"{title}: ATOMX END FAILED ({e['end_failures']}/{e['pairs']})")
    if e.get("kind") == "atomx" and e.get("row") != "null" and e.get("pairs") and not e.get("tool_outputs"):
        out.append(f"{title}: no tool output file")
    return out


def fmt(x, d=2):
    return "—" if x is None else f"{x:.{d}f}"


def build_tables(progs, summaries, rows_wanted, peers):
    """Main table (rows = tools, "null" first if wanted), the per-program detail table, geo. means, flagged?"""
    pnames = [p.prog for p in progs if not p.error]
    head = ["tool", "ATOM Fig. 6"] + [f"atomx {p}" for p in pnames] + ["**atomx geo. mean**", "instr. s"]
    head += [PEER_BY_NAME[p].title for p in peers] + ["check"]
    rows, geo, flagged = [], {}, False
    for tool in rows_wanted:
        cname = "atomx-null" if tool == "null" else f"atomx:{tool}"
        es = [summaries[p].get(cname, {}) for p in pnames]
        g = nr.geomean([e.get("median_ratio") for e in es])
        gi = nr.geomean([(e.get("cost") or {}).get("instrument_seconds") for e in es])
        geo[cname] = g
        probs, flags = [], []
        for p, e in zip(pnames, es):
            probs += problems_of(e, p)
            flags += problems_of(e, p, True)
        base = tool.partition("+")[0].partition("@")[0]
        fig = FIG6.get(base)
        row = ["null (no tool)" if tool == "null" else tool.replace("@", " --counters ").replace("+defer", " --defer-end"),
               f"{fig[0]:.2f}" if fig else "—"]
        row += [fmt(e.get("median_ratio")) for e in es] + [f"**{fmt(g)}**", fmt(gi, 3)]
        for pid in peers:
            if base not in PEER_BY_NAME[pid].rows:
                row.append("")
                continue
            pes = [summaries[p].get(f"peer:{pid}", {}) for p in pnames]
            for p, e in zip(pnames, pes):
                probs += problems_of(e, f"{PEER_BY_NAME[pid].title} on {p}")
                flags += problems_of(e, f"{PEER_BY_NAME[pid].title} on {p}", True)
            # a peer run whose output differs from native (the peer broke the program) has no ratio
            ok = [e.get("median_ratio") for e in pes if not e.get("stdout_mismatches") and not e.get("status_mismatches")]
            pg = nr.geomean(ok)
            geo[f"peer:{pid}"] = pg
            broken = sum(1 for e in pes if e.get("stdout_mismatches") or e.get("status_mismatches"))
            row.append(fmt(pg) + (f" ({broken} failed)" if broken and pg else "") if pg or not broken else "fails")
        rows.append(row + ["ok" if not probs else ("**" + "; ".join(probs) + "**" if flags else "; ".join(probs))])
        flagged |= bool(flags)
    main = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    main += ["| " + " | ".join(r) + " |" for r in rows]

    # detail: every configuration of every program
    dh = ["configuration"] + [f"{p} ratio (min–max, pairs)" for p in pnames] + ["notes"]
    detail = ["| " + " | ".join(dh) + " |", "|" + "|".join("---" for _ in dh) + "|"]
    names = []
    for p in pnames:
        names += [n for n in summaries[p] if n not in names]
    for n in names:
        cells, notes = [], []
        for p in pnames:
            e = summaries[p].get(n)
            if not e:
                cells.append("—")
                continue
            if e.get("median_ratio") is not None:
                bad = e.get("stdout_mismatches") or e.get("status_mismatches")
                cells.append(("output differs: " if bad else "")
                             + f"{e['median_ratio']:.2f} ({e['min_ratio']:.2f}–{e['max_ratio']:.2f}, {e['pairs']})")
            else:
                cells.append("—")
            notes += problems_of(e, p)
            if e.get("note"):
                notes.append(f"{p}: {e['note']}")
        detail.append("| " + " | ".join([n] + cells + ["; ".join(notes)]) + " |")
    return "\n".join(main), "\n".join(detail), geo, flagged


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def sweeps(live, args, t_start, deadline):
    for r in range(args.runs):
        # Checked every second round only, so native-first and -second orders stay balanced.
        if r >= args.min_runs and r % 2 == 0 and deadline is not None:
            nxt = [q for q in (r, r + 1) if q < args.runs]
            need = sum(estimate_round(p, q, args) for p in live for q in nxt)
            left = deadline - time.perf_counter()
            if need > left:
                args.stop_reason = (f"time budget: after {r} rounds, the next {len(nxt)} (~{need:.0f}s) "
                                    f"would not fit in the {max(left, 0):.0f}s left")
                log(args.stop_reason)
                break
        t0 = time.perf_counter()
        for p in live:
            do_round(p, r, args)
        el = time.perf_counter() - t_start
        log(f"round {r + 1}/{args.runs} done in {time.perf_counter() - t0:.0f}s (elapsed {el / 60:.1f} min)")
        if r == 0 and args.min_runs > 1:
            need = sum(estimate_round(p, q, args) for p in live for q in range(1, args.min_runs))
            over = deadline is not None and time.perf_counter() + need > deadline
            log(f"the {args.min_runs - 1} more rounds of --min-runs {args.min_runs} need ~{need / 60:.0f} min"
                + (f", beyond the {args.budget:g}-minute budget: they run anyway (fewer --tools/--only, or "
                   f"--min-runs/--peer-runs, make it shorter)" if over else ""))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="peers: " + "; ".join(f"{p.name} ({p.doc})" for p in PEERS)
                                 + ".  Sets: cheap = " + ",".join(PEER_SETS["cheap"])
                                 + "; valgrind = cheap + Valgrind's none/cachegrind/callgrind; all = everything"
                                 " (adds lackey, ltrace: slow).")
    ap.add_argument("--only", metavar="PROG,...",
                    help=f"programs (gzip, lua, ...) or variants (lua-clang-O2); 'all' = every program "
                         f"(default: {','.join(DEFAULT_PROGRAMS)})")
    ap.add_argument("--variant", default="gcc-O2", help="variant suffix used for program names (default gcc-O2)")
    ap.add_argument("--tools", metavar="a,b", help="tools to run (default: every tool atomx ships; none = only the null row)")
    ap.add_argument("--tool-args", metavar="NAME=ARGS", action="append", default=[],
                    help="arguments for a tool's Instrument (repeatable), e.g. cache='--size 8k'")
    ap.add_argument("--no-null", action="store_true", help="leave out the atomx null-rewrite row")
    ap.add_argument("--counters", default="auto", metavar="MODE,...",
                    help="instrument each tool once per inline-counter mode (atomx --counters: auto, plain, atomic, "
                         "per-thread); a mode other than auto is a row of its own, 'TOOL --counters MODE' (default auto)")
    ap.add_argument("--defer-end", action="store_true",
                    help="also each tool rewritten with --defer-end, a row of its own ('TOOL --defer-end'): the "
                         "workload, then `atomx end` on the dumps it left, whose time the notes give apart; a tool "
                         "that calls analysis code while the program runs cannot defer its end (its row says so)")
    ap.add_argument("--peers", default="cheap", metavar="SET|a,b",
                    help="peers: a set (none; cheap, the default: qemu, qemu-bb, strace, bolt; valgrind; all) of which "
                         "only the peers beside a selected row run, or a list of names, which run in any case")
    ap.add_argument("--runs", type=int, default=7, help="rounds per configuration, at most (default 7)")
    ap.add_argument("--min-runs", type=int, default=5, help="rounds the time budget never cuts below (default 5)")
    ap.add_argument("--peer-runs", type=int, help="rounds for the peers (default: as many as --runs)")
    ap.add_argument("--budget", type=float, default=20,
                    help="minutes: no new sweep pair once --min-runs are done and the next two would not fit; "
                         "0 = no limit (default 20)")
    ap.add_argument("--dry-run", action="store_true",
                    help="instrument and prepare every configuration, report failures and instrumentation "
                         "times, run no workload")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default bench/results)")
    ap.add_argument("--atomx", type=Path, default=Path(os.environ.get("ATOMX", REPO / "build" / "bin" / "atomx")))
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("ATOMX_CHECK_TIMEOUT", 300)),
                    help="seconds per native workload run and per instrumentation (peers: x their factor)")
    ap.add_argument("--atomx-factor", type=float, default=20, help="timeout multiplier for atomx tools (default 20)")
    args = ap.parse_args()
    if not args.atomx.is_file():
        sys.exit(f"tools.py: no atomx at {args.atomx} (build it, or pass --atomx / ATOMX=)")
    args.atomx = args.atomx.resolve()
    if args.runs < 1:
        sys.exit("tools.py: --runs must be >= 1")
    args.min_runs = max(1, min(args.min_runs, args.runs))
    args.peer_runs = args.runs if args.peer_runs is None else max(1, min(args.peer_runs, args.runs))
    ta = {}
    for s in args.tool_args:
        if "=" not in s:
            sys.exit(f"tools.py: --tool-args wants NAME=ARGS, got {s!r}")
        k, v = s.split("=", 1)
        ta[k] = shlex.split(v)
    args.tool_args = ta
    args.corpus_bin = Path(os.environ.get("ATOMX_CORPUS_DIR", Path.home() / ".cache" / "atomx-corpus")) / "bin"
    return args


def main():
    args = parse_args()
    shipped = shipped_tools(args.atomx)
    if args.tools:
        tools = [t.strip() for t in args.tools.split(",") if t.strip() and t.strip() != "none"]
        bad = [t for t in tools if t not in shipped]
        if bad:
            sys.exit(f"tools.py: not shipped with {args.atomx}: {', '.join(bad)} (shipped: {', '.join(shipped) or 'none'})")
    else:
        tools = shipped
    # paper order first (Figure 6), then any other tool
    tools = [t for t in FIG6 if t in tools] + sorted(t for t in tools if t not in FIG6)
    modes = [m.strip() for m in args.counters.split(",") if m.strip()]
    bad = [m for m in modes if m not in ("auto", "plain", "atomic", "per-thread")]
    if bad or not modes:
        sys.exit(f"tools.py: --counters takes auto, plain, atomic, per-thread, not {', '.join(bad) or 'nothing'}")
    tool_rows = [t if m == "auto" else f"{t}@{m}" for t in tools for m in modes]
    if args.defer_end:
        tool_rows = [r for t in tool_rows for r in (t, f"{t}+defer")]
    rows = set(tools) | ({"null"} if not args.no_null else set())
    if args.peers in PEER_SETS:
        # a set: only the peers that stand beside a selected row
        peers = [p for p in PEER_SETS[args.peers] if rows & set(PEER_BY_NAME[p].rows)]
    else:  # named peers always run (without their rows, they show in the detail table only)
        peers = [p.strip() for p in args.peers.split(",") if p.strip()]
        bad = [p for p in peers if p not in PEER_BY_NAME]
        if bad:
            sys.exit(f"tools.py: unknown peer(s) {', '.join(bad)}; known: {', '.join(PEER_BY_NAME)}")
    if not tools and args.no_null and not peers:
        sys.exit("tools.py: nothing to measure (no tool shipped or selected, --no-null, no peer)")

    variants = [n for n in (nr.sh([str(CORPUS / "build.sh"), "--list"]) or "").split() if n]
    if not variants:
        sys.exit("tools.py: corpus/build.sh --list gave nothing")
    wanted = DEFAULT_PROGRAMS if not args.only else \
        sorted({v.split("-")[0] for v in variants}) if args.only == "all" else args.only.split(",")
    chosen = []
    for w in wanted:
        w = w.strip()
        v = w if w in variants else f"{w}-{args.variant}"
        if v not in variants:
            sys.exit(f"tools.py: no corpus variant {v} (see corpus/build.sh --list)")
        chosen.append(v)

    t_start = time.perf_counter()
    deadline = t_start + args.budget * 60 if args.budget > 0 else None
    info = nr.machine_info(argparse.Namespace(atomx=args.atomx, peers=False))
    for p in peers:
        if p == "bolt":
            b = bolt_binary()
            v = [l.strip() for l in (nr.sh([b, "--version"]) or "").splitlines() if "version" in l.lower()] if b else []
            info["bolt"] = f"{b}: {v[0]}" if b and v else b
        elif PEER_BY_NAME[p].need and shutil.which(PEER_BY_NAME[p].need):
            v = nr.sh([PEER_BY_NAME[p].need, "--version"]) or ""
            info[PEER_BY_NAME[p].need] = v.splitlines()[0] if v else None
    if "qemu" in peers or "qemu-bb" in peers:
        ql = nr.sh(["sh", "-c", "dpkg -L qemu-user 2>/dev/null | grep -i 'plugin.*\\.so$'"])
        info["qemu_plugins"] = ql.split() if ql else []

    work = Path(tempfile.mkdtemp(prefix="atomx-bench-tools."))
    progs = []
    try:
        for v in chosen:
            prog = v.split("-")[0]
            pr = Program(prog, v, args.corpus_bin / v, CORPUS / "workloads" / f"{prog}.sh", work / v)
            pr.work.mkdir(parents=True)
            progs.append(pr)
            if not os.access(pr.binary, os.X_OK):
                pr.error = "not built (corpus/build.sh)"
            elif not pr.workload.is_file():
                pr.error = "no workload"
        log(f"programs: {', '.join(chosen)}; tools: {', '.join(tools) or 'none'}; peers: {', '.join(peers) or 'none'}")

        # phase 1: instrument / prepare every configuration once
        for pr in progs:
            if pr.error:
                log(f"{pr.variant}: {pr.error}")
                continue
            for t in ([] if args.no_null else ["null"]) + tool_rows:
                try:
                    c = prepare_atomx(pr, t, args)
                except (subprocess.TimeoutExpired, OSError) as ex:
                    c = Config(f"atomx:{t}", "atomx", t, error=f"{type(ex).__name__}: {ex}")
                pr.configs.append(c)
                log(f"{pr.variant}: atomx {t}: " + (c.error or f"instrumented in {c.cost['instrument_seconds']:.2f}s"))
            for pid in peers:
                try:
                    c = prepare_peer(pr, PEER_BY_NAME[pid], args, variants)
                except (subprocess.TimeoutExpired, OSError, ValueError) as ex:
                    c = Config(f"peer:{pid}", "peer", pid, error=f"{type(ex).__name__}: {ex}")
                pr.configs.append(c)
                if c.error or c.note:
                    log(f"{pr.variant}: {pid}: {c.error or c.note}")

        # phase 2: sweeps of rounds over the programs (Ctrl-C / SIGTERM: stop, report what was measured)
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        live = [p for p in progs if not p.error]
        stop_reason = f"--runs {args.runs} reached"
        try:
            if args.dry_run:
                args.stop_reason = "--dry-run: instrumented only"
            else:
                sweeps(live, args, t_start, deadline)
        except KeyboardInterrupt:
            stop_reason = "interrupted"
            log("interrupted: writing what was measured")
        else:
            stop_reason = getattr(args, "stop_reason", stop_reason)
    finally:
        shutil.rmtree(work, ignore_errors=True)


    summaries = {p.prog: {c.name: summarize_config(c) for c in p.configs} for p in progs if not p.error}
    main_t, detail_t, geo, flagged = build_tables(progs, summaries, ([] if args.no_null else ["null"]) + tool_rows, peers)
    elapsed = time.perf_counter() - t_start
    info["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    rounds = sorted({len(c.runs) for p in progs for c in p.configs if c.runs})
    header = (f"Tool-suite benchmark, {info['date']}: {info['nproc']} CPUs ({info['cpu_model']}), "
              f"Linux {info['kernel']}, atomx {info['atomx_commit']}"
              f"{' (+ uncommitted changes)' if info['atomx_tree_dirty'] else ''}; load average "
              f"{' '.join(info['loadavg_start'])} at start, {' '.join(info['loadavg_end'])} at end; "
              f"{elapsed / 60:.1f} min.\n"
              f"Programs: {', '.join(p.variant + (' (' + p.error + ')' if p.error else '') for p in progs)}; "
              f"pairs per configuration: {', '.join(map(str, rounds)) or '0'} ({stop_reason}).\n"
              f"Ratios: the program's own wall time (all its invocations in the workload) with the "
              f"configuration over the mean of the two native runs around it, median over the rounds; "
              f"geometric mean over the programs.  ATOM Fig. 6: SPEC92 on an Alpha AXP 3000/400 (1994).  "
              f"instr. s: atomx -T NAME wall time (geo. mean).  Peers stand beside the tools that compute "
              f"the same thing"
              + (f"; qemu-x86_64 is plain user mode (Debian's qemu-user ships "
                 f"{'no plugin .so' if not info.get('qemu_plugins') else 'plugins ' + ', '.join(info['qemu_plugins'])}), "
                 f"qemu + bb plugin runs bench/qemu_bbcount.c, built here" if "qemu_plugins" in info else "") + ".")
    md = header + "\n\n" + main_t + "\n\nEvery configuration, per program: median ratio (min–max, pairs).\n\n" \
        + detail_t + "\n"
    print(md)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tools.md").write_text(md)
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    doc = {"machine": info, "settings": settings, "elapsed_seconds": elapsed, "stop_reason": stop_reason,
           "tools": tools, "peers": [{"name": p, "title": PEER_BY_NAME[p].title, "rows": PEER_BY_NAME[p].rows,
                                      "prefix": PEER_BY_NAME[p].prefix, "doc": PEER_BY_NAME[p].doc} for p in peers],
           "atom_figure6": {t: {"ratio": f[0], "points": f[1], "arguments": f[2]} for t, f in FIG6.items()},
           "geomean_ratio": geo,
           "programs": [{"program": p.prog, "variant": p.variant, "binary": str(p.binary), "error": p.error,
                         "natives": p.natives, "configs": summaries.get(p.prog, {})} for p in progs]}
    (args.out / "tools.json").write_text(json.dumps(doc, indent=1) + "\n")
    log(f"wrote {args.out / 'tools.md'} and {args.out / 'tools.json'} ({elapsed / 60:.1f} min)")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
