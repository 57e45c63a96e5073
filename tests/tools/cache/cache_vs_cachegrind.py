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
    one two, rep string instructions one access per iteration), less the
    accesses cachegrind counts for register-by-register bit tests, which
    Valgrind runs through a stack slot (BIT_TEST_ACCESSES; their executions
    from a second run, under callgrind), and with the reads of the pops
    whose load Valgrind's optimiser drops (dead_pops) counted back in;
  - D1 misses: exactly (read misses == D1mr, write misses == D1mw) for the
    procedures named by --exact-misses (or all, --all-misses-exact): those
    whose accesses run with no library call in between, so that both caches
    see the same stream; for the others, the misses summed over all compared
    procedures must be within --miss-tolerance percent of cachegrind's
    (ld.so and libc are not instrumented by atomx, but share cachegrind's
    cache: their accesses evict lines of the program and load lines it uses);
  - D1 misses per procedure, with --proc-miss-tolerance PCT: every
    procedure holding at least --proc-miss-share percent (0.1) of
    cachegrind's misses must be within PCT percent of cachegrind's, unless
    named with --miss-aside 'PROC=REASON' (a procedure whose data libc also
    reads or writes: gzip's inflate_codes copies with memcpy, which loads
    the lines into cachegrind's cache only).  The table of those procedures
    (tool, cachegrind, how far apart, the spread between the tool's runs)
    is printed.

The program's own output (stdout, stderr, exit status) must be unchanged
(the runs, native, instrumented and under cachegrind:
tests/tools/dyninst/vgharness.py).
--set-aside 'PROC=REASON' skips a procedure whose accesses depend on the
run (time, thread scheduling, the machine); one whose accesses vary between
--runs N runs and is not set aside fails (tests/setaside.py).  Exit status
0 when all agree.
"""
import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "dyninst"))
from vgharness import Run, Symbols, harness_args, setaside, disassembly, callgrind_file  # noqa: E402

# Valgrind runs a bit test of a register by a register (bt %rax,%rcx) through
# memory: it stores the register in a stack slot and tests the bit there, so
# cachegrind counts data accesses for it: one read and one write for bt, two
# reads (the modify counts as a read) and a write for bts, btr and btc.  The
# CPU, and the tool, access no memory.  (An immediate bit offset is done in
# the register.)
BIT_TEST_ACCESSES = {"bt": (1, 1), "bts": (2, 1), "btr": (2, 1), "btc": (2, 1)}


def register_bit_tests(prog):
    """{address: (reads, writes) cachegrind counts} of PROG's register-by-
    register bit tests (objdump)."""
    out = {}
    for addr, text in disassembly(prog):
        words = text.split(None, 1)
        m = words[0].rstrip("lqw")
        if m in BIT_TEST_ACCESSES and len(words) > 1 and words[1].startswith("%") and "(" not in words[1]:
            out[addr] = BIT_TEST_ACCESSES[m]
    return out


# Every name of a general register, by its 64-bit name; the first two are
# the names whose write replaces all of it (64 and 32 bits).
REG_NAMES = {r: (r, e, w, b) for r, e, w, b in
             [("rax", "eax", "ax", "al"), ("rbx", "ebx", "bx", "bl"), ("rcx", "ecx", "cx", "cl"),
              ("rdx", "edx", "dx", "dl"), ("rsi", "esi", "si", "sil"), ("rdi", "edi", "di", "dil"),
              ("rbp", "ebp", "bp", "bpl")] + [(f"r{i}", f"r{i}d", f"r{i}w", f"r{i}b") for i in range(8, 16)]}
REG_NAMES["rax"] += ("ah",); REG_NAMES["rbx"] += ("bh",); REG_NAMES["rcx"] += ("ch",); REG_NAMES["rdx"] += ("dh",)
# Writes whose destination register is only written (all of it when 32 or 64 bits).
WHOLE_WRITES = {"mov", "movl", "movq", "movabs", "lea", "leal", "leaq", "movzbl", "movzwl", "movzbw", "movsbl",
                "movswl", "movslq", "movsbq", "movswq", "movzbq", "movzwq"}
# Instructions that read or write general registers objdump does not show.
IMPLICIT_REGISTERS = {"cltq", "cqto", "cltd", "cwtl", "cwtd", "cbtw", "div", "divl", "divq", "idiv", "idivl",
                      "idivq", "mul", "mull", "mulq", "cpuid", "rdtsc", "rdtscp", "syscall", "leave", "enter",
                      "xlat", "cmpxchg", "cmpxchgl", "cmpxchgq", "cmpxchg8b", "cmpxchg16b", "xgetbv", "rdpid"}


def dead_pops(prog):
    """Addresses of PROG's `pop REG` whose load Valgrind's optimiser drops,
    so that cachegrind counts no Dr for it: REG is written whole (a 32- or
    64-bit destination, or xor/sub of itself) before anything reads it, on
    the straight path after the pop, through one direct `jmp` (Valgrind
    chases it into the superblock; through a second one the load stays:
    sqlite3ExprCodeTarget's `pop %rax` at 0xabaa1, Dr one more than counted
    so in --full oracles-c).  The path stops, the load kept, at any other
    jump, call or return, at an instruction that names REG otherwise, and
    at one that uses registers objdump does not show.  (gcc discards a
    call's stack arguments so: `pop %rax; pop %rdx; jmp` to `mov
    %r12d,%eax` in xz's lzma_mf_bt4_find, whose %rdx stays live: its pop is
    counted.)  A later `pop REG` writes REG whole too: `pop %r13; pop
    %r14; jmp` to a path that returns through `pop %r13`... (sqlite3's
    yy_reduce after sqlite3SrcListIndexedBy, at 0xd5041: Dr 2 more than
    cachegrind's in --full oracles-c, both loads dropped by Valgrind;
    ATOMX_TEST_NO_POP_OVERWRITE=1 turns this case off, for its twin).
    objdump's reading, as register_bit_tests."""
    pop_overwrites = not os.environ.get("ATOMX_TEST_NO_POP_OVERWRITE")
    insts = disassembly(prog)
    index = {a: k for k, (a, _) in enumerate(insts)}
    out = set()
    for k, (addr, text) in enumerate(insts):
        w = text.split()
        if w[0] not in ("pop", "popq") or len(w) != 2 or w[1][1:] not in REG_NAMES:
            continue
        names = REG_NAMES[w[1][1:]]
        j, seen, jumped = k + 1, set(), False
        while j is not None and j < len(insts) and j not in seen and len(seen) < 64:
            seen.add(j)
            op, _, ops = insts[j][1].partition(" ")
            ops = ops.split("#")[0].strip()
            if any(w.startswith("nop") for w in insts[j][1].split()[:3]):  # no access (padding: nopl 0x0(%rax))
                j += 1
                continue
            target = re.fullmatch(r"([0-9a-f]+) <[^>]*>", ops)
            if op in ("jmp", "jmpq") and target and not jumped:
                j, jumped = index.get(int(target.group(1), 16)), True
                continue
            if (op.startswith(("j", "call", "ret", "loop", "rep", "lock", "bnd", "notrack", "int", "hlt", "ud"))
                    or op in IMPLICIT_REGISTERS or (op.startswith("imul") and "," not in ops)):
                break
            regs = set(re.findall(r"%(\w+)", ops))
            if not regs & set(names):
                j += 1
                continue
            src, _, dst = ops.rpartition(",")
            src_regs = set(re.findall(r"%(\w+)", src))
            whole = dst.startswith("%") and dst[1:] in names[:2]
            if whole and ((op in WHOLE_WRITES and not src_regs & set(names))
                          or (pop_overwrites and op in ("pop", "popq") and not src)
                          or (op.rstrip("lq") in ("xor", "sub") and src == dst)):
                out.add(addr)
            break
    return out


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
    ap = harness_args(__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="8192")
    ap.add_argument("--assoc", default="1")
    ap.add_argument("--line", default="32")
    ap.add_argument("--exact-misses", action="append", default=[], metavar="PROC")
    ap.add_argument("--all-misses-exact", action="store_true")
    ap.add_argument("--miss-tolerance", type=float, default=None, metavar="PCT")
    ap.add_argument("--proc-miss-tolerance", type=float, default=None, metavar="PCT",
                    help="each procedure's misses within PCT%% of cachegrind's (those holding --proc-miss-share)")
    ap.add_argument("--proc-miss-share", type=float, default=0.1, metavar="PCT",
                    help="--proc-miss-tolerance applies to procedures with at least PCT%% of cachegrind's misses")
    ap.add_argument("--miss-aside", action="append", default=[], metavar="PROC=REASON",
                    help="leave PROC's misses out of --proc-miss-tolerance, for REASON (its accesses are still compared)")
    ap.add_argument("--tool-arg", action="append", default=[], metavar="ARG",
                    help="one more argument for the tool (--no-merge, --verify-merge, --policy fifo ...)")
    o = ap.parse_args()
    size = int(o.size[:-1]) * 1024 if o.size[-1] in "kK" else int(o.size)
    geometry = ["--size", str(size), "--assoc", o.assoc, "--line", o.line]
    # cache.out: the workload's directory holds only what the program wrote.
    run = Run(o.atomx, o.prog, "cache", tool_args=geometry + o.tool_arg, workload=o.workload, args=o.args,
              runs=o.runs, timeout=o.timeout, valgrind="cachegrind",
              valgrind_opts=["--cache-sim=yes", f"--D1={size},{o.assoc},{o.line}", "--I1=32768,8,64",
                             "--LL=8388608,16,64"],
              discard=["cache.out"], keep=o.keep)
    try:
        try:
            run.run()
        except RuntimeError as e:
            print(f"FAIL {o.prog}: {e}")
            return 1
        failures = []
        if (msg := run.output_changed()):
            failures.append(msg)
        if run.results["cachegrind"][:2] != run.results["native"][:2]:  # stderr has Valgrind's warnings
            print("note: the program behaves differently under Valgrind (its output differs)")
        sym = Symbols(run.prog)
        runs = []
        for r in range(o.runs):
            tool = collections.defaultdict(lambda: [0, 0, 0, 0])  # reads, read misses, writes, write misses
            runs.append(tool)
            jsons = list(run.json_outputs(r))
            if not jsons:
                failures.append("the tool wrote no cache.json")
            for data in jsons:
                v = data.get("verify_merge")
                if v and v["wrong"]:
                    failures.append(f"--verify-merge: {v['wrong']} of {v['checked']} computed addresses wrong, "
                                    f"first at {v['first_wrong']}")
                for i in data["instructions"]:
                    name = sym(int(i["pc"], 16))
                    if name:
                        t = tool[name]
                        t[0] += i["reads"]; t[1] += i["read_misses"]; t[2] += i["writes"]; t[3] += i["write_misses"]
        tool = runs[0]
        canon = sym.canon
        cg = collections.defaultdict(lambda: [0, 0, 0, 0])
        for path in run.valgrind_files():
            for func, c in cachegrind_costs(path).items():
                func = canon.get(func)
                if func:
                    for k in range(4):
                        cg[func][k] += c[k]
        # Cachegrind's accesses of register bit tests, which are none: their
        # executions from a callgrind run of the same workload (only when
        # the program has some).
        # The pops whose load Valgrind drops (dead_pops) are counted back in.
        bit_tests = register_bit_tests(run.prog)
        dead = dead_pops(run.prog) if not os.environ.get("ATOMX_TEST_NO_DEAD_POPS") else set()  # (its twin)
        phantom = collections.Counter()
        if bit_tests or dead:
            for path in run.callgrind_again():
                for func, addr, ir in callgrind_file.costs(path, os.path.basename(run.prog), "Ir"):
                    if addr in bit_tests and sym(addr):
                        r, w = bit_tests[addr]
                        cg[sym(addr)][0] -= r * ir
                        cg[sym(addr)][2] -= w * ir
                        phantom[sym(addr)] += ir
                    if addr in dead and sym(addr):
                        cg[sym(addr)][0] += ir
        names = {canon[n] for _, _, n in sym.syms if n not in run.unmoved}
        # Valgrind names the code below main "(below main)", with libc's.
        names.discard(canon.get("_start"))
        # Accesses must not vary between runs (misses may: addresses do).
        sel = setaside.Selection(names, [{n: (r[n][0], r[n][2]) for n in r} for r in runs],
                                 lambda n: tool[n][0] + tool[n][2], o.set_aside, o.min_share, canon, "accesses")
        failures += sel.problems
        compared = sel.compared
        for line in sel.notes():
            print("note:", line)
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
        # Per procedure: misses within --proc-miss-tolerance of cachegrind's,
        # for the procedures that hold a share of them, unless named with a
        # reason (--miss-aside).  The table is printed either way.
        per_proc = []
        if o.proc_miss_tolerance is not None:
            miss_aside = {canon.get(n, n): why for n, why in setaside.parse(o.miss_aside).items()}
            floor = cm * o.proc_miss_share / 100.0
            for n in sorted(compared, key=lambda n: -(cg[n][1] + cg[n][3])):
                t, c = tool[n][1] + tool[n][3], cg[n][1] + cg[n][3]
                if max(t, c) < floor or max(t, c) == 0:
                    continue
                spread = max(r[n][1] + r[n][3] for r in runs) - min(r[n][1] + r[n][3] for r in runs)
                apart = 100.0 * (t - c) / c if c else float("inf")
                verdict = "set aside: " + miss_aside[n] if n in miss_aside else \
                    ("ok" if abs(apart) <= o.proc_miss_tolerance else "OUT")
                per_proc.append(f"  {n[:44]:44} {t:12} {c:12} {apart:+8.2f}% {spread:10}  {verdict}")
                if verdict == "OUT":
                    failures.append(f"{n}: misses {t}, cachegrind {c} ({apart:+.2f}%, more than"
                                    f" {o.proc_miss_tolerance}%; {spread} apart between the tool's runs)")
            for n in miss_aside:
                if n not in compared:
                    failures.append(f"--miss-aside {n}: not a compared procedure")
            print(f"misses per procedure (those with >= {o.proc_miss_share}% of cachegrind's {cm}; tolerance"
                  f" {o.proc_miss_tolerance}%):\n  {'procedure':44} {'tool':>12} {'cachegrind':>12} {'apart':>9}"
                  f" {'runs spread':>10}")
            print("\n".join(per_proc))
        geo = f"D1={size},{o.assoc},{o.line}"
        if failures:
            print(f"FAIL {o.prog} [{geo}]: {len(failures)} problem(s) over {len(compared)} procedures compared")
            for f in failures[:40]:
                print("   ", f)
            return 1
        print(f"PASS {o.prog} [{geo}]: {len(compared)} procedures, {sel.summary()}, equal to cachegrind's Dr+Dw; "
              f"misses {tm} vs cachegrind {cm} ({diff:.2f}% apart), exact in {len(exact)} procedure(s)"
              + (f", within {o.proc_miss_tolerance}% in {len(per_proc)} procedure(s)" if per_proc else "")
              + (f"; less cachegrind's accesses of {sum(phantom.values())} register bit tests (none to the CPU)"
                 if phantom else ""))
        return 0
    finally:
        run.close()


if __name__ == "__main__":
    sys.exit(main())
