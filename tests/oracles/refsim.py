#!/usr/bin/env python3
"""An independent cache simulator, driven by Valgrind lackey's address
stream, against atomx's `-T cachesim`, per function, exactly.

    refsim.py --atomx ATOMX --config FILE [--config FILE ...] [--stdin FILE]
              [--set-aside 'FUNC=REASON' ...] PROG [ARGS...]

What it does:
  1. `valgrind --tool=lackey --trace-mem=yes` runs the original PROG once;
     of its stream it keeps the instructions of PROG's own code (lackey's
     `I` lines inside PROG's function symbols, `nm -S`) and their data
     references (` L`, ` S`, ` M` lines), each attributed to the function
     containing its instruction;
  2. `atomx PROG -T cachesim` rewrites PROG once, and the rewritten file
     runs once per --config file (ATOMX_CACHE_CONFIG) under Valgrind too
     (lackey, tracing nothing): the rewritten program then has the code,
     stack and static data addresses of lackey's run, where Valgrind, not
     the kernel, places them (paths, working directories and options of
     the same lengths, the same environment).  Its
     heap is not the original's (under Valgrind the runtime leaves ld.so's
     allocation pointers alone, docs/rewriting.md, so loading the analysis
     object allocates on the program's heap before main), so both runs allocate every block with its own mmap
     (GLIBC_TUNABLES=glibc.malloc.mmap_threshold=0): a heap block then
     starts 16 bytes into a page in both runs, whichever page that is, and
     since every level of every configuration spans at most a page (sets x
     line <= 4096, checked) the simulation of either run's addresses is
     the same;
  3. every configuration of every file is simulated on the kept stream
     here, and each function's Ir, Dr, Dw and misses per level (`ir`,
     `dr`, `dw` of each level, as cachesim.json writes them) must equal
     cachesim.json's exactly.  A difference is printed as
         FAIL ... [CONFIG] FUNC: LEVEL EVENT atomx N, reference M

The simulator (class Cache) is written from docs/cachesim.md alone, as
plainly as possible: a list of line numbers per set, most recent (LRU) or
newest (FIFO, random) first.  Its conventions, each docs/cachesim.md's:
  - a reference touches every line of [addr, addr + min(size, line)) (one
    or two), in order, and is one miss if any of them missed; a miss goes on
    to the next level of its path with the same address, size and kind;
  - LRU: a hit moves the line to the front; FIFO and random: a hit moves
    nothing; a fill goes to the front; when the set is full the victim is
    the last (LRU, FIFO) or, for random, way `x % assoc` of the set as it
    is ordered here, where x is the next value of xorshift64 (x ^= x << 13,
    x ^= x >> 7, x ^= x << 17, modulo 2**64), one generator per level and
    per configuration, seeded 0x9e3779b97f4a7c15 and stepped once per
    replacement in a full set (a set that is not full takes the line with
    no draw);
  - write-allocate=no: a write miss installs nothing at that level;
  - instruction fetches go I1 (or U1) then the outer levels, data D1 (or
    U1) then the outer levels; outer levels are shared;
  - order: per execution of one of atomx's basic blocks (`atomx dump`), the
    block's instruction fetches first, then its data references in program
    order, reads before writes within an instruction (lackey's M, a
    read-modify-write, is one read; a locked one comes as L then M: two
    reads);
  - a rep-prefixed instruction is fetched once per execution (lackey
    prints an I per iteration: repeats of the same rep instruction are one
    execution) and makes one reference per operand per iteration;
  - register-by-register bit tests (bt %reg,%reg...), which Valgrind runs
    through memory below the stack pointer, make no reference (the CPU
    makes none; tests/tools/cache/cache_vs_cachegrind.py finds them).

--offline: atomx's side is the offline simulator instead, `atomx cachesim
TRACE --config FILE --libc none` (docs/cachesim.md, "Offline") over a trace
recorded with data: `atomx trace --data --instrument` writes the traced
program (beside the rewritten one's path, of the same length), which runs
once under Valgrind as the rewritten program does in 2. (the same
environment, ATOMX_TRACE_DIR naming the trace directory in both runs), so
that the trace's regenerated addresses -- the code at Valgrind's load base,
its stack, the heap's page offsets -- are those of lackey's stream; every
configuration file is then simulated over that one trace and compared as in
3.  The traced run needs --vex-iropt-register-updates=allregs-at-mem-access
(both runs have it, so their options keep their lengths): the recorder's
SIGSEGV handler reads the register that holds the stream cursor from the
signal's context (docs/trace.md, "Buffers"), and at Valgrind's default only
the stack and frame pointers are exact at a faulting access -- the handler
saw a stale register, did not recognise its own fault, and the program
died at its first witness store.

Test hooks: ATOMX_TEST_MISCOUNT (atomx's side, include/atomx/json.hpp) and
ATOMX_TEST_REFSIM_DROP=N (this side: the N-th kept data reference of the
stream is dropped) must each make it fail naming function, level and count;
offline, ATOMX_TEST_REGEN_REF=N too (the regenerator moves a stream's N-th
data reference a line up, a read made a write: src/trace/Regenerate.cpp).
"""
import argparse
import bisect
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "tools", "cache"))
sys.path.insert(0, os.path.join(TESTS, "tools", "dyninst"))
from cache_vs_cachegrind import register_bit_tests  # noqa: E402
from vgharness import rep_addresses  # noqa: E402

SEED = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1
VALGRIND_PIE_BASE = 0x108000  # where Valgrind loads a PIE's first segment (amd64)


# ---- the configuration format (docs/cachesim.md) ------------------------

class Level:
    def __init__(self, name, size, assoc, line, policy="lru", wa=True):
        self.name, self.size, self.assoc, self.line = name, size, assoc, line
        self.policy, self.wa = policy, wa


def number(v):
    m = re.fullmatch(r"(\d+)(K|KB|k|kB|KiB|M|MB|MiB|G|GB|GiB)?", v)
    if not m:
        raise ValueError(f"bad number '{v}'")
    return int(m.group(1)) << {None: 0, "K": 10, "KB": 10, "k": 10, "kB": 10, "KiB": 10,
                               "M": 20, "MB": 20, "MiB": 20, "G": 30, "GB": 30, "GiB": 30}[m.group(2)]


def parse_config(text):
    """[(name, [Level...])] in the file's order."""
    configs = []

    def current():
        if not configs:
            configs.append([str(len(configs) + 1), []])
        return configs[-1][1]
    for raw in text.splitlines():
        w = raw.split("#")[0].split()
        if not w:
            continue
        if w[0] == "config":
            configs.append([w[1] if len(w) > 1 else str(len(configs) + 1), []])
        elif w[0].startswith("--"):
            for o in w:
                name, _, v = o[2:].partition("=")
                s, a, ln = (int(x) for x in v.split(","))
                levels = current()
                levels[:] = [x for x in levels if x.name != name]  # a later option replaces an earlier one
                levels.append(Level(name, s, a, ln))
                levels.sort(key=lambda x: x.name == "LL")
        elif w[0] in ("I1", "D1", "U1", "L2", "L3", "LL"):
            kv = dict(x.split("=", 1) for x in w[1:])
            line = number(kv["line"])
            size = number(kv["size"])
            assoc = size // line if kv["assoc"] == "full" else int(kv["assoc"])
            current().append(Level(w[0], size, assoc, line, kv.get("policy", "lru"),
                                   kv.get("write-allocate", "yes") == "yes"))
        else:
            raise ValueError(f"refsim does not simulate '{w[0]}' (context switches are not modelled here)")
    return [(n, lv) for n, lv in configs]


# ---- the simulator ------------------------------------------------------

class Cache:
    def __init__(self, level):
        self.level = level
        self.nsets = level.size // (level.line * level.assoc)
        self.sets = collections.defaultdict(list)  # set index -> line numbers, front first
        self.x = SEED

    def draw(self):
        x = self.x
        x ^= (x << 13) & MASK64
        x ^= x >> 7
        x ^= (x << 17) & MASK64
        self.x = x
        return x

    def touch(self, line, fill):
        """One line: True on a miss."""
        s = self.sets[line % self.nsets]
        if line in s:
            if self.level.policy == "lru":
                s.remove(line)
                s.insert(0, line)
            return False
        if fill:
            if len(s) == self.level.assoc:
                if self.level.policy == "random":
                    del s[self.draw() % self.level.assoc]
                else:
                    s.pop()  # the least recent (LRU) or the oldest (FIFO)
            s.insert(0, line)
        return True

    def ref(self, addr, size, write):
        L = self.level.line
        first, last = addr // L, (addr + max(1, min(size, L)) - 1) // L
        fill = not write or self.level.wa
        miss = False
        for line in range(first, last + 1):
            miss |= self.touch(line, fill)
        return miss


class Hierarchy:
    def __init__(self, name, levels):
        self.name = name
        self.levels = levels
        caches = {lv.name: Cache(lv) for lv in levels}
        outer = [caches[lv.name] for lv in levels if lv.name[1] != "1"]
        first = {lv.name: caches[lv.name] for lv in levels if lv.name[1] == "1"}
        i1 = first.get("I1") or first.get("U1")
        d1 = first.get("D1") or first.get("U1")
        self.ipath = [i1] + outer if i1 else []
        self.dpath = [d1] + outer if d1 else []

    @staticmethod
    def walk(path, addr, size, write, counts, kind):
        for c in path:
            if not c.ref(addr, size, write):
                return
            counts[(c.level.name, kind)] += 1


# ---- the stream ---------------------------------------------------------

def text_section(prog):
    """(start, end) of PROG's .text: the code atomx simulates (.init, .fini
    and the PLT are not procedures of the program, docs/cachesim.md)."""
    for line in subprocess.run(["readelf", "-SW", prog], capture_output=True, text=True, check=True).stdout.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+\.text\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m:
            return int(m.group(1), 16), int(m.group(1), 16) + int(m.group(2), 16)
    raise RuntimeError(f"{prog}: no .text section")


def function_symbols(prog):
    """[(start, end, name)] of the function symbols in PROG's .text (nm -S):
    a symbol without a size (crtstuff's frame_dummy ...) runs to the next
    one, as Valgrind names its code."""
    lo, hi = text_section(prog)
    syms = []
    for line in subprocess.run(["nm", "-S", "--defined-only", prog], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        f = line.split()
        if len(f) in (3, 4) and f[-2] in "tTwWiI" and lo <= int(f[0], 16) < hi:
            syms.append((int(f[0], 16), int(f[1], 16) if len(f) == 4 else 0, f[-1]))
    syms.sort()
    out = []
    for k, (start, size, name) in enumerate(syms):
        end = start + size if size else (syms[k + 1][0] if k + 1 < len(syms) else hi)
        if end > start:
            out.append((start, min(end, hi), name))
    return out


def leaders(atomx, prog):
    """atomx's block starts (`atomx dump`): the order convention's blocks."""
    text = subprocess.run([atomx, "dump", prog], capture_output=True, text=True, check=True).stdout
    return {int(m.group(1), 16) for m in re.finditer(r"^\s+block \d+ 0x([0-9a-f]+)\.\.", text, re.M)}


def elf_bias(prog):
    h = subprocess.run(["readelf", "-h", prog], capture_output=True, text=True, check=True).stdout
    return VALGRIND_PIE_BASE if re.search(r"Type:\s+DYN", h) else 0


def block_executions(path, prog, atomx, syms):
    """Yields (instructions, data) per execution of one of PROG's blocks:
    instructions [(pc, size, function)], data [(addr, size, write, function)]
    in the order simulated (module docstring)."""
    bias = elf_bias(prog)
    starts = [s for s, _, _ in syms]
    blocks = leaders(atomx, prog)
    reps = rep_addresses(prog)
    bit_tests = register_bit_tests(prog)
    drop = int(os.environ.get("ATOMX_TEST_REFSIM_DROP", "0"))
    kept = 0
    insts, data = [], []
    cur = None          # the current program instruction (pc, size, function), None outside PROG
    inst_refs = []      # its data references, reads first at the end
    prev_end = None     # where the last kept instruction ended (None: something else ran since)

    def close_inst():
        if cur is not None:
            inst_refs.sort(key=lambda r: r[2])  # reads before writes (stable)
            data.extend(inst_refs)
        inst_refs.clear()

    with open(path) as f:
        for line in f:
            if line.startswith("I"):
                a, _, s = line[3:].partition(",")
                pc, size = int(a, 16) - bias, int(s)
                if cur is not None and pc == cur[0] and pc in reps:
                    close_inst()  # the next iteration of the same rep instruction: no fetch
                    continue
                close_inst()
                i = bisect.bisect_right(starts, pc) - 1
                if i < 0 or pc >= syms[i][1]:
                    cur, prev_end = None, None
                    continue
                if pc in blocks or pc != prev_end:
                    if insts:
                        yield insts, data
                    insts, data = [], []
                cur = (pc, size, syms[i][2])
                insts.append((pc + bias, size, syms[i][2]))  # simulated at its run-time address
                prev_end = pc + size
            elif line.startswith(" ") and cur is not None and cur[0] not in bit_tests:
                kind = line[1]
                a, _, s = line[3:].partition(",")
                kept += 1
                if kept == drop:
                    continue
                inst_refs.append((int(a, 16), int(s), kind == "S", cur[2]))
            elif line.startswith("=="):
                continue
    close_inst()
    if insts:
        yield insts, data


def simulate(configs, executions):
    """{config name: {function: Counter}}; events Ir, Dr, Dw and
    (LEVEL, 'ir'|'dr'|'dw') misses."""
    hs = [Hierarchy(n, lv) for n, lv in configs]
    out = {h.name: collections.defaultdict(collections.Counter) for h in hs}
    for insts, data in executions:
        for h in hs:
            res = out[h.name]
            if h.ipath:
                for pc, size, fn in insts:
                    Hierarchy.walk(h.ipath, pc, size, False, res[fn], "ir")
            if h.dpath:
                for addr, size, write, fn in data:
                    Hierarchy.walk(h.dpath, addr, size, write, res[fn], "dw" if write else "dr")
        for pc, size, fn in insts:
            for h in hs:
                out[h.name][fn]["Ir"] += 1
        for addr, size, write, fn in data:
            for h in hs:
                out[h.name][fn]["Dw" if write else "Dr"] += 1
    return out


# ---- atomx's side and the comparison -------------------------------------

def atomx_counts(doc, index, syms):
    """{function: Counter} of configuration `index` of a cachesim.json, in
    simulate()'s keys (procedures named by the symbol holding their pc)."""
    starts = [s for s, _, _ in syms]
    out = collections.defaultdict(collections.Counter)
    for p in doc["configurations"][index]["procedures"]:
        pc = int(p["pc"], 16)
        i = bisect.bisect_right(starts, pc) - 1
        fn = syms[i][2] if i >= 0 and pc < syms[i][1] else p["name"]
        c = out[fn]
        for e in ("Ir", "Dr", "Dw"):
            c[e] += p[e]
        for level, kinds in p["misses"].items():
            for kind, n in kinds.items():
                c[(level, kind)] += n
    return out


def cache_tool_counts(doc, syms):
    """{function: Counter} of the cache tool's cache.json (tools/cache):
    each instruction's reads, writes and D1 misses, in simulate()'s keys,
    by the symbol holding its pc (the tool counts no instructions: Ir is
    not compared)."""
    starts = [s for s, _, _ in syms]
    out = collections.defaultdict(collections.Counter)
    for i in doc["instructions"]:
        pc = int(i["pc"], 16)
        k = bisect.bisect_right(starts, pc) - 1
        fn = syms[k][2] if k >= 0 and pc < syms[k][1] else i["procedure"]
        c = out[fn]
        c["Dr"] += i["reads"]
        c["Dw"] += i["writes"]
        c[("D1", "dr")] += i["read_misses"]
        c[("D1", "dw")] += i["write_misses"]
    return out


def show(key):
    return key if isinstance(key, str) else f"{key[0]} {key[1]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--config", action="append", default=[], metavar="FILE",
                    help="a configuration file (each is one run of the rewritten program)")
    ap.add_argument("--tool", choices=("cachesim", "cache"), default="cachesim",
                    help="cache: the ATOM paper's cache tool (tools/cache), one D1 of --geometry, compared"
                         " per function in Dr, Dw and D1 misses (it counts no instructions)")
    ap.add_argument("--geometry", default="32768,8,64", metavar="SIZE,ASSOC,LINE",
                    help="--tool cache: its D1 (default cachegrind's, 32768,8,64)")
    ap.add_argument("--stdin", help="the program's standard input")
    ap.add_argument("--stdin-bytes", type=int, metavar="N", help="only the first N bytes of --stdin")
    ap.add_argument("--missing-ok", action="store_true",
                    help="exit 77 (ctest's skip) when PROG does not exist (a corpus program not built)")
    ap.add_argument("--set-aside", action="append", default=[], metavar="FUNC=REASON",
                    help="leave FUNC out of the comparison, for REASON (printed)")
    ap.add_argument("--offline", action="store_true",
                    help="compare with `atomx cachesim` over a trace recorded with --data (module docstring)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    ap.add_argument("prog")
    ap.add_argument("args", nargs="*")
    o = ap.parse_args()
    if o.tool == "cachesim" and not o.config:
        ap.error("--config FILE is required with --tool cachesim")
    if o.tool == "cache" and (o.config or o.offline):
        ap.error("--tool cache takes --geometry, not --config or --offline")
    return compare(o)


def compare(o):
    aside = dict(a.split("=", 1) for a in o.set_aside)
    prog = os.path.abspath(o.prog)
    if o.missing_ok and not os.path.exists(prog):
        print(f"no corpus: {prog} (corpus/build.sh)")
        return 77
    base = os.path.basename(prog)
    work = tempfile.mkdtemp(prefix="atomx-refsim.")
    failures = []
    try:
        # Equal-length paths: the program's path, argv[0] and the
        # configuration's name are on the initial stack, and the stack's
        # addresses must be lackey's.  The runs' working directories too
        # (r00, r01 ...): with "ro" for lackey's, the rewritten program's
        # stack was 16 bytes off in some environments (funcptrs and
        # rdynamic under ctest: every difference came from _start's writes).
        for d in ("o", "a", "c", "r00"):
            os.mkdir(os.path.join(work, d))
        orig, atom = os.path.join(work, "o", base), os.path.join(work, "a", base)
        shutil.copy(prog, orig)
        stdin = os.path.join(work, "stdin")
        with open(o.stdin or os.devnull, "rb") as f, open(stdin, "wb") as t:
            t.write(f.read(o.stdin_bytes) if o.stdin_bytes else f.read())
        report = os.path.join(work, "report.json")
        # --libc none: lackey's stream holds the program's own references, and
        # libc's model is checked against cachegrind (tool.cachesim.libc).
        # The cache tool: its one D1, fixed at the rewrite; a configuration
        # file of that level alone is what the reference simulates (and,
        # unread by the tool, what ATOMX_CACHE_CONFIG names in every run).
        if o.tool == "cache":
            size, assoc, line = o.geometry.split(",")
            tool_args = ["--size", size, "--assoc", assoc, "--line", line]
            o.config = [os.path.join(work, "d1.cache")]
            with open(o.config[0], "w") as f:
                f.write(f"D1 size={size} assoc={assoc} line={line}\n")
        else:
            tool_args = ["--libc", "none"]
        r = subprocess.run([o.atomx, orig, "-T", o.tool, "-o", atom, "-q", "--report", report, "--"] + tool_args,
                           capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL {o.prog}: atomx failed:\n{r.stderr}")
            return 1
        trace = os.path.join(work, "t")
        if o.offline:
            # The traced program in the rewritten one's place (the rewrite
            # above still gives the report: what atomx leaves in place, the
            # same for the trace's rewrite).
            r = subprocess.run([o.atomx, "trace", "-q", "--data", "--instrument", atom, "-o", trace, "--", orig],
                               capture_output=True, text=True)
            if r.returncode:
                print(f"FAIL {o.prog}: atomx trace failed:\n{r.stderr}")
                return 1
        with open(report) as f:
            unmoved = [(u["address"], u["address"] + u["size"], u["name"], u["reason"]) for u in json.load(f)["unmoved"]]
        configs = []
        for k, path in enumerate(o.config, 1):
            dst = os.path.join(work, "c", f"{k:02d}.cache")
            shutil.copy(path, dst)
            with open(path) as f:
                configs.append((os.path.basename(path), dst, parse_config(f.read())))
            for name, levels in configs[-1][2]:
                for lv in levels:
                    if lv.size // lv.assoc > 4096:
                        print(f"FAIL {path}: configuration '{name}': {lv.name} spans {lv.size // lv.assoc} bytes"
                              " (size / assoc): more than a page, the heap's addresses would matter")
                        return 1

        def run(cmd, cwd, config):
            env = dict(os.environ, ATOMX_CACHE_CONFIG=config, GLIBC_TUNABLES="glibc.malloc.mmap_threshold=0")
            if o.offline:  # in both runs: the same environment
                env["ATOMX_TRACE_DIR"] = trace
            env.pop("ATOMX_TEST_REFSIM_DROP", None)
            env.pop("ATOMX_TEST_REGEN_REF", None)
            env.pop("ATOMX_TEST_REFSIM_IROPT", None)
            with open(stdin, "rb") as f:
                p = subprocess.run(cmd, cwd=cwd, env=env, stdin=f, capture_output=True, timeout=1800)
            return p.returncode, p.stdout
        stream = os.path.join(work, "lackey.txt")
        # Both runs under the same tool, with options of the same lengths
        # (under --tool=none the rewritten program's stack was seen to lie
        # elsewhere in ctest's environment; the rewritten run's log, lackey's
        # counts, is not read).
        exact_regs = ["--vex-iropt-register-updates=allregs-at-mem-access"] if o.offline else []
        # Valgrind's optimiser drops a load whose value nothing reads (a
        # `pop` whose register is written next: sqlite3's wherePathSolver,
        # sqlite3Select, sqlite3RefillIndex), and lackey then prints no L
        # for it, while the CPU, and atomx, make it: at --vex-iropt-level=0
        # every load stays.  (ATOMX_TEST_REFSIM_IROPT=1 leaves the default,
        # for its must-fail twin.)
        if not os.environ.get("ATOMX_TEST_REFSIM_IROPT"):
            exact_regs.append("--vex-iropt-level=0")
        # Online, both programs run from one path (x/PROG), each copied there
        # before its run: argv[0] is then the same string, not only of the
        # same length (lua interns it: a string of other bytes hashes to
        # another bucket of its string table, and internshrstr's chains
        # differed).  The traced program of --offline stays at its own path.
        os.mkdir(os.path.join(work, "x"))
        exe = os.path.join(work, "x", base)

        def place(path):
            if o.offline:
                return path
            shutil.copy(path, exe)
            return exe
        native = run(["valgrind", "-q", "--tool=lackey", "--trace-mem=yes", "--basic-counts=no", "--vex-guest-chase=no"] +
                     exact_regs + [f"--log-file={stream}", place(orig)] + o.args,
                     os.path.join(work, "r00"), os.path.join(work, "c", "00.cache"))
        if o.offline:  # one traced run; every configuration file over its trace
            os.mkdir(os.path.join(work, "r01"))
            got = run(["valgrind", "-q", "--tool=lackey", "--trace-mem=no", "--basic-counts=yes", "--vex-guest-chase=no"] +
                      exact_regs + [f"--log-file={stream[:-4]}.001", atom] + o.args,
                      os.path.join(work, "r01"), configs[0][1])
            if got != native:
                failures.append(f"[trace] the traced program's output or status differs from the original's"
                                f" (status {native[0]} -> {got[0]})")

        # A procedure atomx leaves in place is not instrumented: like a
        # library's code, it is not simulated (docs/cachesim.md).
        syms = [x for x in function_symbols(prog) if not any(lo <= x[0] < hi for lo, hi, _, _ in unmoved)]
        for _, _, name, why in unmoved:
            print(f"note: {name} not simulated on either side: atomx leaves it in place ({why})")
        ref = simulate([(f"{k}:{n}", lv) for k, (_, _, parsed) in enumerate(configs, 1) for n, lv in parsed],
                       block_executions(stream, orig, o.atomx, syms))
        summary = []
        for k, (label, path, parsed) in enumerate(configs, 1):
            if o.offline:
                report = os.path.join(work, f"offline.{k:02d}.json")
                r = subprocess.run([o.atomx, "cachesim", trace, "--config", path, "--libc", "none", "--json", report,
                                    "-q", "-o", os.path.join(work, f"offline.{k:02d}.txt")], capture_output=True, text=True)
                if r.returncode:
                    failures.append(f"[{label}] atomx cachesim failed: {r.stderr.strip()}")
                    continue
            else:
                d = os.path.join(work, f"r{k:02d}")
                os.mkdir(d)
                got = run(["valgrind", "-q", "--tool=lackey", "--trace-mem=no", "--basic-counts=yes", "--vex-guest-chase=no"] +
                          exact_regs + [f"--log-file={stream[:-4]}.{k:03d}", place(atom)] + o.args, d, path)
                if got != native:
                    failures.append(f"[{label}] the rewritten program's output or status differs from the original's"
                                    f" (status {native[0]} -> {got[0]})")
                report = os.path.join(d, f"{o.tool}.json")
            try:
                with open(report) as f:
                    doc = json.load(f)
            except (OSError, ValueError) as e:
                failures.append(f"[{label}] no {os.path.basename(report)}: {e}")
                continue
            for index, (name, levels) in enumerate(parsed):
                if o.tool == "cache":
                    tool, mine = cache_tool_counts(doc, syms), ref[f"{k}:{name}"]
                    for c in mine.values():
                        c.pop("Ir", None)
                else:
                    tool, mine = atomx_counts(doc, index, syms), ref[f"{k}:{name}"]
                where = f"[{label}: {name}]"
                for fn in sorted(set(tool) | set(mine)):
                    if fn in aside:
                        continue
                    for key in sorted(set(tool[fn]) | set(mine[fn]), key=show):
                        if tool[fn][key] != mine[fn][key]:
                            failures.append(f"{where} {fn}: {show(key)} atomx {tool[fn][key]}, reference {mine[fn][key]}")
                totals = collections.Counter()
                for fn, c in mine.items():
                    if fn not in aside:
                        totals.update(c)
                summary.append(f"  {where} {len(mine)} functions; " +
                               ", ".join(f"{show(key)} {n}" for key, n in sorted(totals.items(), key=lambda kv: show(kv[0]))))
        for fn, why in sorted(aside.items()):
            print(f"note: {fn} set aside: {why}")
        print("\n".join(summary))
        if failures:
            print(f"FAIL {o.prog}: {len(failures)} difference(s) from the reference simulator")
            for f in failures[:40]:
                print("   ", f)
            return 1
        what = "the cache tool's Dr, Dw and D1 misses" if o.tool == "cache" else "Ir, Dr, Dw and misses per level"
        print(f"PASS {o.prog}: every function's {what} {'(atomx cachesim over the trace) ' if o.offline else ''}equal the reference's in"
              f" {sum(len(p) for _, _, p in configs)} configurations")
        return 0
    finally:
        if o.keep:
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
