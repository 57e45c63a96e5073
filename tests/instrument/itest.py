#!/usr/bin/env python3
"""Instrumentation tests for atomx: itest.py --atomx A --build DIR --programs DIR TEST

Each test builds a program (or takes a tests/programs binary), instruments it
with a tool from tools/, runs the original and the instrumented program in
empty directories under the same name, requires identical stdout, stderr and
exit status, and checks the analysis output against expectations computed
from the program's own behaviour, objdump and nm -- never from atomx."""
import argparse, collections, json, math, os, re, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "tools")
PROGS = os.path.join(HERE, "progs")
A = None


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def eq(actual, expected, what):
    if actual != expected:
        raise Fail(f"{what}: expected {expected!r}, got {actual!r}")


VARIANT_FLAGS = {"O2": ["-O2", "-fPIE", "-pie"], "O0": ["-O0", "-fPIE", "-pie"],
                 "nopie": ["-O2", "-fno-pie", "-no-pie"]}


def build(src, variant, work, extra=()):
    cxx = src.endswith(".cpp")
    out = os.path.join(work, os.path.splitext(os.path.basename(src))[0])
    cmd = [os.environ.get("CXX" if cxx else "CC", "c++" if cxx else "cc")] + VARIANT_FLAGS[variant] + \
          ["-g", "-Wall", os.path.join(PROGS, src), "-o", out, "-Wl,--emit-relocs", "-pthread"] + list(extra)
    subprocess.run(cmd, check=True)
    return out


def instrument(prog, inst, anal, work, args=(), expect_ok=True, options=()):
    out = prog + ".atomx"
    cmd = [A, prog, os.path.join(TOOLS, inst), os.path.join(TOOLS, anal), "-o", out, "-q"] + list(options)
    if args:
        cmd += ["--"] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if expect_ok:
        check(r.returncode == 0, f"atomx failed ({r.returncode}): {r.stderr.strip()}")
        return out
    return r


def run(exe, work, tag, args=(), timeout=600):
    """Runs exe as ./NAME in the empty directory work/tag; returns (stdout, stderr, status, dir)."""
    d = os.path.join(work, tag)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    name = os.path.basename(exe).replace(".atomx", "")
    shutil.copy2(exe, os.path.join(d, name))
    r = subprocess.run(["./" + name] + list(args), cwd=d, capture_output=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return r.stdout, r.stderr, r.returncode, d


def run_both(prog, inst_exe, work, args=()):
    n = run(prog, work, "native", args)
    i = run(inst_exe, work, "inst", args)
    eq(i[2], n[2], "exit status of the instrumented program")
    if i[0] != n[0]:
        raise Fail("stdout differs:\n--- native\n%s\n--- instrumented\n%s" % (n[0][-2000:].decode(errors="replace"), i[0][-2000:].decode(errors="replace")))
    if i[1] != n[1]:
        raise Fail("stderr differs:\n--- native\n%s\n--- instrumented\n%s" % (n[1][-2000:].decode(errors="replace"), i[1][-2000:].decode(errors="replace")))
    return n, i


# ---------------------------------------------------------------- objdump/nm
def symbols(prog):
    out = subprocess.run(["nm", prog], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3:
            syms[p[2]] = int(p[0], 16)
    return syms


Insn = collections.namedtuple("Insn", "addr length text target targetsym func")


def disassemble(prog):
    """Every instruction: address, length, text, direct target (+symbol), containing function."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-w", prog], capture_output=True, text=True,
                         check=True).stdout
    insns, func = [], None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            func = m.group(2)
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if not m or func is None:
            continue
        text = m.group(2).strip()
        t = re.search(r"\b(?:call|jmp|j[a-z]+|loop[a-z]*)\s+([0-9a-f]+) <([^>]+)>", text)
        insns.append(Insn(int(m.group(1), 16), 0, text, int(t.group(1), 16) if t else None,
                          t.group(2) if t else None, func))
    res = []
    for k, i in enumerate(insns):
        nxt = insns[k + 1].addr if k + 1 < len(insns) else i.addr + 1
        res.append(i._replace(length=nxt - i.addr))
    return res


def func_insns(dis, name):
    return [i for i in dis if i.func == name]


def first_callee(dis, addr, names):
    """The first call/jmp to one of `names` at or after addr (same function)."""
    start = next((k for k, i in enumerate(dis) if i.addr == addr), None)
    if start is None:
        return f"<{addr:#x}: not an instruction address>"
    for i in dis[start:]:
        if i.func != dis[start].func:
            break
        if i.targetsym in names:
            return i.targetsym
    return None


def read_lines(path):
    check(os.path.exists(path), f"no analysis output {os.path.basename(path)}")
    with open(path) as f:
        return f.read().splitlines()


def s64(v):
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


# ---------------------------------------------------------------- tests
def t_clobber(work, name, variant, period="1"):
    """The clobber tool on a tests/programs binary: output as expected/NAME.out."""
    prog = os.path.join(ARGS.programs, variant, name)
    local = os.path.join(work, name)
    shutil.copy2(prog, local)
    exe = instrument(local, "clobber_inst.cpp", "clobber_anal.c", work, [period])
    n, i = run_both(local, exe, work)
    expected = open(os.path.join(HERE, "..", "programs", "expected", name + ".out"), "rb").read()
    eq(i[0] + b"[exit status %d]\n" % i[2], expected, "output vs expected/%s.out" % name)


def t_counters(work, name, variant, counters=None):
    """Inline counters before every instruction and on every edge of a tests/programs binary, beside
    a call per block: the output is as expected/NAME.out, every block's inline count equals the call
    path's, instructions and out-edges agree with their blocks, and every block's and edge's count
    derived from the fewest counters (Counters::count) equals its increment's (except where a
    program leaves a block in the middle: signals_setjmp's siglongjmp out of a fault handler).
    `counters`: atomx --counters MODE (default: atomx chooses)."""
    prog = os.path.join(ARGS.programs, variant, name)
    local = os.path.join(work, name)
    shutil.copy2(prog, local)
    exe = instrument(local, "counters_inst.cpp", "counters_anal.c", work,
                     options=["--counters", counters] if counters else [])
    n, i = run_both(local, exe, work)
    expected = open(os.path.join(HERE, "..", "programs", "expected", name + ".out"), "rb").read()
    eq(i[0] + b"[exit status %d]\n" % i[2], expected, "output vs expected/%s.out" % name)
    check_counters_out(i[3], name, early_expected=name in ("avx", "init_fini"), exact=name != "signals_setjmp")


def check_counters_out(directory, name, early_expected=False, exact=True):
    """Every counters.out* in `directory` (one per process) says the inline counters agree with the calls."""
    outs = [f for f in os.listdir(directory) if f.startswith("counters.out")]
    check(outs, "no counters.out")
    for f in outs:
        lines = read_lines(os.path.join(directory, f))
        m = re.match(r"differences: blocks (\d+) instructions (\d+) edges (\d+)$", lines[-1])
        check(m, f"{f}: no summary line: {lines[-3:]}")
        check(int(re.match(r"blocks \d+ executed (\d+)", lines[-4]).group(1)) > 0, f"{f}: no block counted")
        eq(int(m.group(1)), 0, f"{f}: blocks whose inline count differs from the call's ({lines[:3]})")
        m2 = re.match(r"memory instructions (\d+) misaligned (\d+) crossing (\d+) differences (\d+)$", lines[-3])
        check(m2, f"{f}: no memory line: {lines[-4:]}")
        eq(int(m2.group(4)), 0, f"{f}: conditional increments that differ from the call's ({lines[:3]})")
        # Blocks that only the inline counters see: code ld.so runs before the entry point, where
        # calls are skipped (avx's IFUNC resolver, init_fini's .preinit_array).
        early = int(re.match(r"blocks counted before start (\d+)$", lines[-2]).group(1))
        eq(early > 0, early_expected, f"{f}: blocks counted before ProgramBefore ({early})")
        if exact:
            eq((int(m.group(2)), int(m.group(3))), (0, 0), f"{f}: instruction and edge differences ({lines[:3]})")
        # Counters::count: every block's and edge's count, derived from the fewest counters, equals
        # its own increment's.
        m3 = re.match(r"exact counts: (\d+) differences, (\d+) edges not known; (\d+) increments for (\d+) blocks",
                      lines[-5])
        check(m3, f"{f}: no exact counts line: {lines[-5:]}")
        if exact:
            eq(int(m3.group(1)), 0, f"{f}: exact counts that differ from the increments' ({lines[:3]})")
    return outs


def t_thread_counts(work, variant, counters=None):
    """Per-thread counters under stress (progs/thread_counts.c: 8 threads in the same blocks, early
    exits, 200 short threads reusing stacks, a fork from a thread, a signal handler as a thread's
    first code, nested thread starts): the counters check's inline counts equal its calls', in the
    parent and in the forked child, and atomx says it counted per thread."""
    prog = build("thread_counts.c", variant, work)
    out = prog + ".atomx"
    cmd = [A, prog, os.path.join(TOOLS, "counters_inst.cpp"), os.path.join(TOOLS, "counters_anal.c"), "-o", out]
    if counters:
        cmd += ["--counters", counters]
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, f"atomx failed ({r.returncode}): {r.stderr.strip()}")
    check("inline counter increment(s), per-thread through %gs (it imports pthread_create)" in r.stderr,
          f"the summary does not say per-thread: {r.stderr.strip()[-600:]}")
    n, i = run_both(prog, out, work)
    outs = check_counters_out(i[3], "thread_counts")
    eq(len(outs), 2, "counters.out files (the program and its forked child)")


def t_unless(work, name, variant, geometry=(), build_src=None):
    """Routine::beforeUnless against a naive oracle in the same run (tools/unless_inst.cpp): before
    every memory instruction and at every block, a call every time that says whether the inline
    MRU test should pass (on shadow tables of its own, which it updates as the test's swap and the
    filtered call would), and the call made only when it fails; per instruction and per block the
    calls made equal the calls due, the tables equal their shadows, the fast path skips most
    calls, and the output is unchanged (the tests sit between flag setters and readers)."""
    if build_src:
        local = build(build_src, variant, work)
    else:
        prog = os.path.join(ARGS.programs, variant, name)
        local = os.path.join(work, name)
        shutil.copy2(prog, local)
    exe = instrument(local, "unless_inst.cpp", "unless_anal.cpp", work, list(geometry))
    n, i = run_both(local, exe, work)
    outs = [f for f in os.listdir(i[3]) if f.startswith("unless.out")]
    check(outs, "no unless.out")
    for f in outs:
        lines = read_lines(os.path.join(i[3], f))
        m = re.match(r"naive calls (\d+) filtered calls (\d+) due (\d+) differences (\d+) table differences (\d+)$",
                     lines[-1])
        check(m, f"{f}: no summary line: {lines[-3:]}")
        naive, filtered, due, diff, tables = map(int, m.groups())
        eq(diff, 0, f"{f}: instructions or blocks whose calls made differ from the calls due ({lines[:3]})")
        eq(tables, 0, f"{f}: references whose set the inline code left other than the documented test would")
        eq(filtered, due, f"{f}: filtered calls vs calls due")
        check(0 < filtered < naive // 2, f"{f}: the inline test skipped too few calls ({filtered} of {naive})")


def t_clobber_fenv(work, variant):
    prog = build("fenv.c", variant, work, ["-lm"])
    exe = instrument(prog, "clobber_inst.cpp", "clobber_anal.c", work)
    n, i = run_both(prog, exe, work)
    check(i[0].count(b"same_mode=1") == 4, "rounding mode changed under the program")


def t_order(work, variant):
    prog = build("order.cpp", variant, work)
    exe = instrument(prog, "order_inst.c", "order_anal.c", work)
    n, i = run_both(prog, exe, work)
    native = read_lines(os.path.join(n[3], "order.log"))
    eq(native, ["constructor", "static-constructor", "main", "atexit", "static-destructor",
                "destructor-attribute"], "the program's own order (native)")
    eq(read_lines(os.path.join(i[3], "order.log")), ["ProgramBefore"] + native + ["ProgramAfter"], "order.log")


def t_procs(work, variant):
    prog = build("procs.c", variant, work)
    names = ["leaf", "tail_caller", "rec", "many"]
    exe = instrument(prog, "trace_inst.c", "trace_anal.c", work, names)
    n, i = run_both(prog, exe, work)
    ev = [l.split() for l in read_lines(os.path.join(i[3], "trace.out"))]
    EL = lambda name: [e for e in ev if e[0] in "EL" and e[1] == name]
    xs = list(range(37)) + [100 - k for k in range(5)]
    eq([int(e[2]) for e in EL("leaf") if e[0] == "E"], xs, "leaf: ProcArgValue(0) of each call")
    eq([int(e[2]) for e in EL("leaf") if e[0] == "L"], [2 * x + 1 for x in xs], "leaf: ReturnValue of each call")
    eq([int(e[2]) for e in EL("tail_caller") if e[0] == "E"], [-k for k in range(5)], "tail_caller: arguments")
    eq(sum(1 for e in EL("tail_caller") if e[0] == "L"), 5, "tail_caller: ProcAfter count")
    # rec(10): E 10 .. E 0, then L with rec(0) .. rec(10), properly nested.
    vals, r = [], 5
    for k in range(0, 11):
        r = 5 if k == 0 else r ^ (k * 7)
        vals.append(r)
    eq([(e[0], int(e[2])) for e in EL("rec")], [("E", k) for k in range(10, -1, -1)] + [("L", v) for v in vals],
       "rec: enter/leave sequence")
    calls = [[1, -2, 3, -4, 5, -6, 7, -8], [-100000000000, 200, -300, 400, -500, 600, -700, 0x7fffffffffffffff // 1000]]
    eq([[int(x) for x in e[2:]] for e in EL("many") if e[0] == "E"], calls, "many: 8 arguments (2 on the stack)")
    eq([int(e[2]) for e in EL("many") if e[0] == "L"],
       [s64(sum((k + 1) * a for k, a in enumerate(c))) for c in calls], "many: return values")
    dis = disassemble(prog)
    # InstBefore PCs: exactly objdump's instruction addresses; `many` (no branches) runs each twice.
    for name in names:
        addrs = {x.addr for x in func_insns(dis, name)}
        seen = {int(e[1], 16) for e in ev if e[0] == "I"} & set(range(min(addrs), max(addrs) + 1))
        check(seen <= addrs, f"{name}: PCValue not an instruction start: {sorted(hex(a) for a in seen - addrs)}")
    many = [x.addr for x in func_insns(dis, "many")]
    got = collections.Counter(int(e[1], 16) for e in ev if e[0] == "I" and int(e[1], 16) in set(many))
    eq(dict(got), {a: 2 for a in many}, "many: InstBefore PCs and counts")
    # Direct branch targets (BrTargetValue) agree with objdump; returns go back after a call.
    byaddr = {x.addr: x for x in dis}
    after_call = {x.addr + x.length for x in dis if x.text.startswith("call")}
    for e in ev:
        if e[0] != "T":
            continue
        pc, tgt = int(e[1], 16), int(e[2], 16)
        x = byaddr[pc]
        if x.target is not None:
            eq(tgt, x.target, f"BrTargetValue of {x.text} at {pc:#x}")
        elif x.text.startswith("ret"):
            check(tgt in after_call, f"BrTargetValue of ret at {pc:#x} is {tgt:#x}, not after a call")
    # InstAfter a call runs once per return: rec calls itself 10 times.
    rec_calls = {x.addr for x in func_insns(dis, "rec") if x.text.startswith("call")}
    eq(sum(1 for e in ev if e[0] == "X" and int(e[1], 16) in rec_calls), 10, "rec: InstAfter its recursive call")
    tc_calls = {x.addr for x in func_insns(dis, "tail_caller") if x.text.startswith("call")}
    eq(sum(1 for e in ev if e[0] == "X" and int(e[1], 16) in tc_calls), 5 if tc_calls else 0,
       "tail_caller: InstAfter its call")
    # Constants, a string and an array at ProgramAfter.
    eq([l for l in open(os.path.join(i[3], "trace.out")).read().split("K ")[1:]],
       ['-5 -123456789012 9223372036854775807 [a "string"\n] -1 78187493530 -9223372036854775807 42\n'],
       "Consts(int, long, long, char*, long[], int)")


def t_loops(work, variant, edges=True):
    prog = build("loops.c", variant, work)
    exe = instrument(prog, "trace_inst.c", "trace_anal.c", work, ["loop_sum", "classify"] + ([] if edges else ["-noedges"]))
    n, i = run_both(prog, exe, work)
    ev = [l.split() for l in read_lines(os.path.join(i[3], "trace.out"))]
    dis = disassemble(prog)
    ls = func_insns(dis, "loop_sum")
    A, jle, jnz = ls[0].addr, ls[2], ls[5]
    B, C = jnz.target, jle.target
    inside = lambda a: ls[0].addr <= a <= ls[-1].addr
    for kind in ("BB", "BA"):
        eq(dict(collections.Counter(int(e[1], 16) for e in ev if e[0] == kind and inside(int(e[1], 16)))),
           {A: 5, B: 16, C: 5}, f"loop_sum: {kind} counts")
        check(all(e[1] == e[2] for e in ev if e[0] == "BB"), "BlockBefore: PCValue != BlockPC")
    eq(dict(collections.Counter((int(e[1], 16), int(e[2], 16)) for e in ev if e[0] == "C" and inside(int(e[1], 16)))),
       {(jle.addr, 1): 2, (jle.addr, 0): 3, (jnz.addr, 1): 13, (jnz.addr, 0): 3}, "loop_sum: BrCondValue")
    if edges:
      eq(dict(collections.Counter((int(e[1], 16), int(e[2], 16)) for e in ev if e[0] == "G" and inside(int(e[1], 16)))),
       {(A, C): 2, (A, B): 3, (B, B): 13, (B, C): 3}, "loop_sum: edge counts (taken, fall-through)")
    # The switch: jump-table edges and the indirect jump's targets, by case.
    seq = [0, 2, 2, 1, 5, 9, 0, 2, 4, 2, -1, 0, 3, 5, 2, 7, 1, 0, 5, 2, 100, 4, 0, 1, 5, 2, 8, 6]
    want = collections.Counter(f"case{v}" for v in seq if 0 <= v <= 5)
    cases = {f"case{k}" for k in range(6)} | {"casedefault"}
    cl = func_insns(dis, "classify")
    ijmp = [x for x in cl if re.match(r"(notrack )?jmp\s+\*", x.text)]
    eq(len(ijmp), 1, "classify: indirect jumps in objdump")
    tg = collections.Counter(first_callee(dis, int(e[2], 16), cases) for e in ev if e[0] == "T" and int(e[1], 16) == ijmp[0].addr)
    eq(dict(tg), dict(want), "classify: BrTargetValue of the indirect jump, by case")
    # Jump-table edges start at the block that ends with the indirect jump.
    blocks = sorted({int(e[1], 16) for e in ev if e[0] == "BB"})
    src = max(b for b in blocks if b <= ijmp[0].addr)
    te = collections.Counter(first_callee(dis, int(e[2], 16), cases) for e in ev if e[0] == "G" and int(e[1], 16) == src)
    eq(dict(te), dict(want) if edges else {}, "classify: jump-table edge counts, by case")


def t_mem(work, variant, rsp=False, light=False):
    """Effective addresses, access sizes and register values as the program saw them.  light:
    through direct bodies (mem_light_anal.c), which save only the caller-saved registers."""
    prog = build("mem.c", variant, work)
    procs = ["touch_globals", "touch_local", "touch_tls", "stack_ops", "leaf_ret"]
    args = procs + (["rsp"] if rsp else []) + ["done"]
    if light:
        exe = prog + ".atomx"
        r = subprocess.run([A, prog, os.path.join(TOOLS, "mem_inst.cpp"), os.path.join(TOOLS, "mem_light_anal.c"),
                            "-o", exe, "--"] + args, capture_output=True, text=True)
        check(r.returncode == 0, f"atomx failed: {r.stderr}")
        m = re.search(r"(\d+) site\(s\), .*, (\d+) direct", r.stderr)
        check(m, f"no site summary in: {r.stderr}")
        # All but the ProgramAfter site (MemDone calls fprintf: heavy).
        eq(int(m.group(2)), int(m.group(1)) - 1, "sites with a direct body")
    else:
        exe = instrument(prog, "mem_inst.cpp", "mem_anal.c", work, args)
    n, i = run_both(prog, exe, work)
    ad = dict((l.split()[0], int(l.split()[1], 16)) for l in read_lines(os.path.join(i[3], "addrs.txt")))
    ev = [l.split() for l in read_lines(os.path.join(i[3], "mem.out"))]
    check(["overflow"] not in ev, "mem_light_anal.c's table overflowed")
    dis = disassemble(prog)
    byaddr = {x.addr: x for x in dis}
    mem = {}
    for e in ev:
        if e[0] in ("M", "M2"):
            mem.setdefault(byaddr[int(e[1], 16)].func, []).append((byaddr[int(e[1], 16)], [int(v, 0) for v in e[2:]]))
    # touch_globals: RIP-relative garr+OFF: exactly &garr[0] + OFF.
    g = [(x, v) for x, v in mem.get("touch_globals", []) if "<garr" in x.text]
    check(len(g) >= 3, "touch_globals: fewer than 3 accesses to garr")
    for x, v in g:
        off = re.search(r"<garr(?:\+0x([0-9a-f]+))?>", x.text).group(1)
        eq((v[0], v[1]), (ad["garr"] + int(off or "0", 16), 8), f"EffAddrValue/AccessSizeValue of {x.text}")
    eq(sorted({v[0] - ad["garr"] for x, v in g}), [24, 56, 88], "touch_globals: garr offsets")
    # touch_local: a store of 8 bytes to the local, as the program saw it.
    check(any(v[0] == ad["local"] and v[1] == 8 for x, v in mem.get("touch_local", [])),
          f"touch_local: no access to the local at {ad['local']:#x}: {mem.get('touch_local')}")
    # touch_tls: every %fs access is &tls_var.
    t = [(x, v) for x, v in mem.get("touch_tls", []) if "%fs:" in x.text and "%fs:0x0," not in x.text]
    check(t, "touch_tls: no %fs access")
    for x, v in t:
        eq(v[0], ad["tls"], f"EffAddrValue of {x.text}")
    # stack_ops: sp = %rsp at entry.
    sp = ad["sp"]
    so = [(x.text.split()[0], v) for x, v in mem["stack_ops"]]
    eq(so, [("mov", [ad["out"], 8]), ("push", [sp - 8, 8]), ("pop", [sp - 8, 8]), ("call", [sp - 8, 8]),
            ("rep", [ad["dst"], 1, ad["src"], 1]), ("ret", [sp, 8])], "stack_ops: effective addresses and sizes")
    eq([(x.text.split()[0], v) for x, v in mem["leaf_ret"]], [("ret", [sp - 8, 8])], "leaf_ret: ret's stack slot")
    regs = [e for e in ev if e[0] == "R" and byaddr[int(e[1], 16)].func == "stack_ops"]
    eq([[int(v, 16) for v in e[2:]] for e in regs], [[ad["out"], ad["dst"], ad["src"]]], "REGV rdi/rsi/rdx at stack_ops")
    if rsp:
        eq([int(e[2], 16) for e in ev if e[0] == "SP" and byaddr[int(e[1], 16)].func == "stack_ops"], [sp],
           "REGV RegRSP at stack_ops")


def count_file(path):
    res = {"tid": {}, "proc": {}}
    for l in read_lines(path):
        p = l.split()
        if p[0] == "proc":
            res["proc"][int(p[1])] = (int(p[2], 16), int(p[3]))
        elif p[0] == "tid":
            res["tid"][int(p[1])] = int(p[2])
    return res


def t_threads(work, variant):
    prog = build("threads.c", variant, work)
    exe = instrument(prog, "count_inst.cpp", "count_anal.cpp", work, ["work"])
    n, i = run_both(prog, exe, work)
    c = count_file(os.path.join(i[3], "count.out"))
    tids = [int(l) for l in read_lines(os.path.join(i[3], "tids.txt"))]
    eq(c["proc"], {0: (symbols(prog)["work"], 4000)}, "calls of work (ProcBefore) and its address")
    eq(c["tid"], {t: 1000 for t in tids}, "calls per thread id (ThreadIdValue vs gettid())")


def t_fork(work, variant):
    prog = build("forks.c", variant, work)
    exe = instrument(prog, "count_inst.cpp", "count_anal.cpp", work, ["work"])
    n, i = run_both(prog, exe, work)
    child = int(read_lines(os.path.join(i[3], "child.pid"))[0])
    eq(count_file(os.path.join(i[3], "count.out"))["proc"][0][1], 13, "parent's count.out")
    eq(count_file(os.path.join(i[3], f"count.out.{child}"))["proc"][0][1], 15, f"child's count.out.{child}")
    eq(sorted(os.listdir(i[3])), sorted(["forks", "child.pid", "count.out", f"count.out.{child}"]), "files")


def t_killed(work, variant, how):
    prog = build("killed.c", variant, work)
    exe = instrument(prog, "count_inst.cpp", "count_anal.cpp", work, ["work"])
    n, i = run_both(prog, exe, work, [how])
    sig = {"segv": -11, "fault": -11, "abort": -6, "term": -15, "_exit": 3}[how]
    eq(n[2], sig, "native exit status")
    eq(count_file(os.path.join(i[3], "count.out"))["proc"][0][1], 7, "count.out written at ProgramAfter")


def t_throws(work, variant):
    prog = build("throws.cpp", variant, work)
    exe = instrument(prog, "count_inst.cpp", "count_anal.cpp", work, ["_Z7throweri", "_Z6middlei"])
    n, i = run_both(prog, exe, work)
    eq({k: v[1] for k, v in count_file(os.path.join(i[3], "count.out"))["proc"].items()}, {0: 20, 1: 20},
       "calls of thrower and middle")
    exe = instrument(prog, "clobber_inst.cpp", "clobber_anal.c", work)
    run_both(prog, exe, work)


def t_unwound(work, variant):
    """Frames left by an exception (throws.cpp: thrower throws on 7 of its 20
    calls, middle does not catch) and by longjmp (jumps.c: 5 of run's 10
    calls jump from deep's 6th level back to run): ProcAfter does not run for
    them, atomx::FrameTracker counts them from the stack pointers of
    ProcBefore and ProcAfter, and for every procedure entered = returned +
    unwound + still active at the end."""
    expect = {"throws.cpp": {"_Z7throweri": (20, 13, 7, 0), "_Z6middlei": (20, 13, 7, 0)},
              "jumps.c": {"deep": (60, 30, 30, 0), "run": (10, 10, 0, 0)}}
    for src, want in expect.items():
        prog = build(src, variant, work)
        exe = instrument(prog, "frames_inst.c", "frames_anal.cpp", work)
        n, i = run_both(prog, exe, work)
        rows = {r[0]: tuple(int(x) for x in r[1:]) for r in (l.split() for l in read_lines(os.path.join(i[3], "frames.out")))}
        for name, counts in want.items():
            eq(rows.get(name), counts, f"{src}: {name} entered, returned, unwound, active")
        for name, (entered, returned, unwound, active) in rows.items():
            eq(entered, returned + unwound + active, f"{src}: {name}: entered = returned + unwound + active")
    # A .cold part is part of its procedure: no ProcBefore of its own, its
    # ways out are its procedure's, and a jump between the two is none.  (With
    # a ProcAfter at each jump into a .cold part and at each jump back, the
    # program's ProcAfter calls outnumbered its ProcBefore calls.)
    prog = os.path.join(ARGS.programs, variant, "cold_parts")
    exe = instrument(prog, "frames_inst.c", "frames_anal.cpp", work)
    n, i = run_both(prog, exe, work)
    rows = {r[0]: tuple(int(x) for x in r[1:]) for r in (l.split() for l in read_lines(os.path.join(i[3], "frames.out")))}
    check(not [r for r in rows if ".cold" in r], f"cold_parts: a .cold part was entered: {sorted(rows)}")
    check(sum(r[1] for r in rows.values()) > 0, "cold_parts: no procedure returned")
    for name, (entered, returned, unwound, active) in rows.items():
        eq(entered, returned + unwound + active, f"cold_parts: {name}: entered = returned + unwound + active")


def t_libm(work):
    """A C analysis file calling log(): it links (libm, as cc links a
    program) and runs; the sum is the one C computes."""
    prog = build("loops.c", "O2", work)
    exe = instrument(prog, "libm_inst.c", "libm_anal.c", work)
    n, i = run(prog, work, "native"), run(exe, work, "inst")
    eq(i[2], n[2], "exit status of the instrumented program")
    check(i[0] == n[0], "stdout differs")
    m = re.search(rb"log sum (\d+\.\d+)", i[1])
    check(m is not None, f"no report from the analysis routine: {i[1][-300:]!r}")
    # loop_sum runs 5 times (t_loops' hand-computed counts): 5 log 2.
    check(abs(float(m.group(1)) - 5 * math.log(2)) < 1e-5, f"log sum {m.group(1)}, not 5 log 2")


def t_build_flags(work):
    """A tool's analysis object built with --cflags, an object file, an
    archive through -L/-l, and --ldflags: Probe(2) at each of loop_sum's 5
    calls adds Helper(2) * MULT = 6 * 7 (MULT from --cflags, Helper from
    the object), so Report prints 210; a missing object is an error that
    names it."""
    prog = build("loops.c", "O2", work)
    obj = os.path.join(work, "flags_helper.o")
    subprocess.run(["cc", "-c", "-fPIC", os.path.join(TOOLS, "flags_helper.c"), "-o", obj], check=True)
    subprocess.run(["ar", "rcs", os.path.join(work, "libhelp.a"), obj], check=True)
    inst, anal = os.path.join(TOOLS, "libm_inst.c"), os.path.join(TOOLS, "flags_anal.c")
    n = run(prog, work, "native")
    for k, extra in enumerate(([obj, "--cflags", "-DMULT=7 -O1"], ["--cflags", "-DMULT=7", "-L" + work, "-lhelp"],
                               ["--cflags", "-DMULT=7", "--ldflags", f"-L{work} -lhelp"])):
        out = os.path.join(work, f"flags{k}.atomx")
        r = subprocess.run([A, prog, inst, anal] + extra + ["-o", out, "-q"], capture_output=True, text=True)
        check(r.returncode == 0, f"atomx failed with {extra}: {r.stderr.strip()[-400:]}")
        i = run(out, work, f"inst{k}")
        eq(i[2], n[2], "exit status of the instrumented program")
        check(b"flags total 210\n" in i[1], f"with {extra}: no 'flags total 210': {i[1][-300:]!r}")
    r = subprocess.run([A, prog, inst, anal, os.path.join(work, "missing.o"), "--cflags", "-DMULT=7", "-o",
                        os.path.join(work, "x.atomx"), "-q"], capture_output=True, text=True)
    check(r.returncode != 0 and "missing.o: cannot read this file" in r.stderr, f"missing object: {r.stderr[-300:]!r}")


def t_tool_cache(work):
    """Built tools are kept (ATOMX_TOOL_CACHE) and reused only while every
    file they were built from is unchanged: Probe(2) at loop_sum's 5 calls
    adds Helper(2) * MULT, with MULT from a header of the tool's own and
    Helper from an object file; changing the header, the object or a flag
    rebuilds (the sum changes), and the report says which happened."""
    prog = build("loops.c", "O2", work)
    inst = os.path.join(TOOLS, "libm_inst.c")
    anal, header, helper = (os.path.join(work, f) for f in ("cached_anal.c", "mult.h", "helper.o"))
    with open(anal, "w") as f:
        f.write('#include <stdio.h>\n#include "mult.h"\nlong Helper(long a);\nstatic long total;\n'
                'void Probe(long a) { total += Helper(a) * MULT; }\n'
                'void Report(void) { fprintf(stderr, "flags total %ld\\n", total); }\n')

    def write(path, text):
        with open(path, "w") as f:
            f.write(text)

    def helper_times(k):
        write(os.path.join(work, "helper.c"), f"long Helper(long a) {{ return a * {k}; }}\n")
        subprocess.run(["cc", "-c", "-fPIC", os.path.join(work, "helper.c"), "-o", helper], check=True)

    env = dict(os.environ, ATOMX_TOOL_CACHE=os.path.join(work, "tc"))
    n = run(prog, work, "native")

    def rewrite(step, expect_build, total, cache=None, flags=()):
        out, report = os.path.join(work, f"cached{step}.atomx"), os.path.join(work, f"report{step}.json")
        e = dict(env, ATOMX_TOOL_CACHE=cache) if cache else env
        r = subprocess.run([A, prog, inst, anal, helper, "-o", out, "-q", "--report", report] + list(flags),
                           capture_output=True, text=True, env=e)
        check(r.returncode == 0, f"step {step}: atomx failed: {r.stderr.strip()[-400:]}")
        with open(report) as f:
            eq(json.load(f).get("tool_build"), expect_build, f"step {step}: the report's tool_build")
        i = run(out, work, f"inst{step}")
        eq(i[2], n[2], f"step {step}: exit status of the instrumented program")
        check(f"flags total {total}\n".encode() in i[1], f"step {step}: no 'flags total {total}': {i[1][-300:]!r}")

    write(header, "#define MULT 7\n")
    helper_times(3)
    rewrite(1, "built", 210)
    rewrite(2, "reused", 210)
    write(header, "#define MULT 5\n")  # the same size: only its time tells
    rewrite(3, "built", 150)
    helper_times(4)
    rewrite(4, "built", 200)
    rewrite(5, "reused", 200)
    rewrite(6, "built", 200, flags=["--cflags", "-DUNUSED=1"])
    rewrite(7, "reused", 200, flags=["--cflags", "-DUNUSED=1"])
    rewrite(8, "built", 200, cache="off")
    check(not os.path.exists(os.path.join(work, "off")), "ATOMX_TOOL_CACHE=off made a directory")
    # atomx run's cache of instrumented programs follows the tool's header
    # too, even when another rewrite has built the tool anew already.
    for step, mult in enumerate((7, 5, 7)):
        write(header, f"#define MULT {mult}\n")
        rewrite(9 + step, "built", 8 * mult * 5)
        for again in (0, 1):
            r = subprocess.run([A, "run", "--cache-dir", os.path.join(work, "runs"), inst, anal, helper, "--", prog],
                               capture_output=True, text=True, env=env, cwd=work)
            check(f"flags total {8 * mult * 5}\n" in r.stderr, f"atomx run, MULT {mult} (run {again + 1}): {r.stderr[-400:]!r}")
            check(("atomx: instrumented " in r.stderr) == (again == 0),
                  f"atomx run, MULT {mult} (run {again + 1}): instrumenting {'not ' if again == 0 else ''}expected:"
                  f" {r.stderr[-400:]!r}")


def t_run_output(work):
    """`atomx run` with a user's own tool says where its output went: the
    files written in the working directory during the run (order.log), and
    shows a short one (libm's tool writes none: it says so); -q says
    nothing of its own."""
    prog = build("loops.c", "O2", work)
    d = os.path.join(work, "run")
    os.makedirs(d)
    base = [A, "run", "--cache-dir", os.path.join(work, "cache")]
    n = run(prog, work, "native")
    r = subprocess.run(base + [os.path.join(TOOLS, "order_inst.c"), os.path.join(TOOLS, "order_anal.c"), "--", prog],
                       cwd=d, capture_output=True, text=True)
    check(r.returncode == n[2], f"atomx run exited {r.returncode}, the program {n[2]}: {r.stderr[-300:]}")
    size = os.path.getsize(os.path.join(d, "order.log"))
    check(f"==atomx== order_inst: written in the working directory during the run (by the tool or the program):"
          f" order.log ({size} bytes)\n==atomx== order.log\nProgramBefore\nProgramAfter\n" in r.stderr,
          f"no lines naming and showing order.log: {r.stderr[-400:]!r}")
    r = subprocess.run(base + [os.path.join(TOOLS, "libm_inst.c"), os.path.join(TOOLS, "libm_anal.c"), "--", prog],
                       cwd=d, capture_output=True, text=True)
    check("==atomx== libm_inst: no file in the working directory was written during the run" in r.stderr,
          f"no line saying nothing was written: {r.stderr[-400:]!r}")
    q = subprocess.run(base + ["-q", os.path.join(TOOLS, "order_inst.c"), os.path.join(TOOLS, "order_anal.c"), "--",
                               prog], cwd=d, capture_output=True, text=True)
    check(q.stderr.encode() == n[1] and q.stdout.encode() == n[0], f"-q: output not the program's own: {q.stderr[-300:]!r}")


def t_error(work, kind):
    prog = build("loops.c", "O2", work)
    addr = symbols(prog)["loop_sum"]  # its first instruction: xor %eax,%eax
    inst, anal = {"argcount": ("err_argcount_inst.cpp", "err_anal.c"), "brcond": ("err_inst.c", "err_anal.c"),
                  "effaddr": ("err_inst.c", "err_anal.c"), "compile": ("err_compile_inst.c", "err_anal.c"),
                  "undefined": ("err_inst.c", "err_empty_anal.c"), "wrongtype": ("err_inst.c", "err_anal.c"),
                  "wrongarray": ("err_inst.c", "err_anal.c"), "crash": ("err_inst.c", "err_anal.c"),
                  "throw": ("err_throw_inst.cpp", "err_anal.c"), "range": ("err_range_inst.cpp", "err_anal.c"),
                  "rangec": ("err_inst.c", "err_anal.c"), "unresolved": ("err_inst.c", "err_unresolved_anal.c"),
                  "atomerror": ("err_inst.c", "err_anal.c"), "countinc": ("err_count_inst.cpp", "err_anal.c"),
                  "nullhandle": ("err_null_inst.cpp", "err_anal.c"), "cbig": ("err_inst.c", "err_anal.c"),
                  "cone": ("err_inst.c", "err_anal.c"), "cstring": ("err_inst.c", "err_anal.c"),
                  "cfloat": ("err_inst.c", "err_anal.c")}[kind]
    r = instrument(prog, inst, anal, work, [kind], expect_ok=False)
    check(r.returncode != 0, f"atomx succeeded: {r.stderr}")
    check(not os.path.exists(prog + ".atomx"), "an output file was written")
    err = r.stderr.strip()
    if kind == "unresolved":  # caught when the analysis object is linked, with the linker's words
        check("undefined reference to `nosuch_helper'" in err, f"no linker message: {err}")
        check(err.splitlines()[-1].startswith("atomx: building the analysis object failed"), f"last line: {err}")
        return
    if kind == "compile":
        check(re.search(r"err_compile_inst\.c:\d+:\d+: error:", err), f"no compiler message: {err}")
        eq(err.splitlines()[-1][:6], "atomx:", "last line")
        return
    lines = err.splitlines()
    eq(len(lines), 1, f"one-line message ({err})")
    if kind == "crash":  # the tool's fault, said as such, with its source line; atomx fails with status 1
        eq(r.returncode, 1, "exit status (an error, not a crash of atomx)")
        check(re.search(r"err_inst\.c: its Instrument crashed \(SIGSEGV, address 0x0\) at 0x[0-9a-f]+, "
                        r"in the tool: Instrument at \S*err_inst\.c:\d+", err), f"no crash report: {err}")
        return
    if kind == "throw":
        eq(r.returncode, 1, "exit status")
        check(err.endswith("err_throw_inst.cpp: its Instrument threw std::out_of_range: block 7 of 3"),
              f"not the tool's exception: {err}")
        check("internal error" not in err, f"called an internal error: {err}")
        return
    if kind == "atomerror":  # the tool's own message, as atomx gives its own
        eq(r.returncode, 1, "exit status")
        check(err.endswith("no procedure named nosuch here (42 procedures looked at)") and err.startswith("atomx:"),
              f"not the tool's message: {err}")
        return
    if kind == "nullhandle":  # the call named, and the tool's line that made it
        eq(r.returncode, 1, "exit status")
        line = next(k for k, l in enumerate(open(os.path.join(TOOLS, inst)), 1) if "none.pc()" in l)
        check(re.search(r"Inst::pc\(\) called on a null Inst, in the tool: Instrument at \S*err_null_inst\.cpp:%d\b"
                        % line, err), f"message does not name the call and line {line}: {err}")
        return
    if kind == "countinc":  # Counters::count and increment on one counter
        eq(r.returncode, 1, "exit status")
        check(re.search(r"Counters::count at BlockBefore 0x0*%x \(loop_sum\): counter 0 of that array is also "
                        r"incremented; a counter is either counted or incremented$" % addr, err), f"message: {err}")
        return
    check("Probe" in err, f"message does not name the routine: {err}")
    if kind in ("wrongtype", "wrongarray"):  # a C type mistake in a variadic AddCall: named, not a crash
        want = {"wrongtype": "argument 1 is 'char*' in the prototype Probe(char*), but the value passed, 0x2a,",
                "wrongarray": "argument 1 is 'long[4]' in the prototype Probe(long[4]), but the value passed, 0x1000,"}
        check(want[kind] in err, f"message does not say which argument is wrong: {err}")
        return
    if kind in ("cbig", "cone", "cstring", "cfloat"):  # ATOM's C API: the variadic arguments typed by atom.h's macros
        want = {"cbig": "argument 1 (int) is a constant 1099511627776, which does not fit in its 4 bytes",
                "cone": "the prototype Probe(long, long) takes 2 argument(s) after the name, the call passes 1",
                "cstring": "argument 1 ('int' in the prototype Probe(int)) is a string, \"seven\": an integer is needed",
                "cfloat": "argument 1 ('int' in the prototype Probe(int)) is 3.5, a floating-point value: an integer is needed"}
        check(want[kind] in err, f"message does not name the parameter and the value: {err}")
    if kind in ("range", "rangec"):  # a constant wider than its parameter
        want = {"range": "argument 1 (int) is a constant 1099511627781, which does not fit in its 4 bytes "
                         "(-2147483648..4294967295)",
                "rangec": "argument 1 (unsigned char) is a constant 300, which does not fit in its 1 byte (-128..255)"}
        check(want[kind] in err, f"message does not say the constant is out of range: {err}")
    if kind != "undefined":
        check(re.search(r"0x0*%x\b" % addr, err), f"message does not give the address {addr:#x}: {err}")


GPR = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi"] + [f"r{k}" for k in range(8, 16)]
FLAGS_BIT = 1 << 16


def t_queries(work, variant, noplt=False):
    """Inst::calleeName, category, regsRead/Written and sourceLine against objdump and addr2line."""
    prog = build("queries.c", variant, work, ["-fno-plt"] if noplt else [])
    names = ["main", "local_sum", "tail_alloc"]
    out = os.path.join(work, "queries.txt")
    instrument(prog, "query_inst.cpp", "query_anal.c", work, [out] + names)
    rows = {int(r[0], 16): r[1:6] for r in (l.split("\t") for l in read_lines(out))}
    # ATOM's C API says the same (query_inst.c), to the letter.
    out_c = os.path.join(work, "queries_c.txt")
    instrument(prog, "query_inst.c", "query_anal.c", work, [out_c] + names)
    eq(read_lines(out_c), read_lines(out), "query_inst.c's report (C API) against query_inst.cpp's (C++ API)")
    mem = {int(r[0], 16): (r[6], r[7]) for r in (l.split("\t") for l in read_lines(out))}
    # Alignment padding between blocks (nops after a ret) belongs to no block.
    padding = re.compile(r"^(nop|xchg\s+%ax,%ax|cs nop|data16|int3)")
    dis = [i for i in disassemble(prog) if i.func in names and (i.addr in rows or not padding.match(i.text))]
    eq(sorted(rows), [i.addr for i in dis], "instructions reported for main, local_sum, tail_alloc")
    lines = subprocess.run(["addr2line", "-e", prog] + [hex(i.addr) for i in dis], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    callees = set()
    for i, where in zip(dis, lines):
        callee, category, read, written, line = rows[i.addr]
        read, written = int(read, 16), int(written, 16)
        # Direct: "call 1030 <malloc@plt>"; -fno-plt: "call *0x2fe2(%rip)  # 3fd8 <malloc@GLIBC_2.2.5>".
        m = re.search(r"#\s*[0-9a-f]+ <([^>@+]+)@[^>]*>", i.text) if "*" in i.text else None
        expected = "-"
        if i.text.startswith(("call", "jmp")) and i.targetsym and "+" not in i.targetsym:
            expected = i.targetsym.split("@")[0]
        elif i.text.startswith(("call", "jmp")) and m:
            expected = m.group(1)
        eq(callee, expected, f"calleeName at {i.addr:#x} ({i.text})")
        if callee != "-":
            callees.add(callee)
        mnem = i.text.split()[0]
        if mnem == "call":
            eq(category, "CALL", f"category at {i.addr:#x}")
        elif mnem == "ret":
            eq(category, "RET", f"category at {i.addr:#x}")
        elif re.match(r"j(?!mp)", mnem):
            eq(category, "COND_BR", f"category at {i.addr:#x}")
            check(read & FLAGS_BIT, f"{i.addr:#x} {i.text}: a conditional jump reads the flags")
        mm = re.match(r"^mov\s+%(r\w+),%(r\w+)$", i.text)
        if mm and mm.group(1) in GPR and mm.group(2) in GPR:
            eq((read, written), (1 << GPR.index(mm.group(1)), 1 << GPR.index(mm.group(2))), f"regs of {i.text}")
        if mnem in ("cmp", "test", "add", "sub"):
            check(written & FLAGS_BIT, f"{i.addr:#x} {i.text}: writes the flags")
        if mnem == "push":
            check(read & (1 << 4) and written & (1 << 4), f"{i.addr:#x} {i.text}: push reads and writes rsp")
            eq(mem[i.addr][0], "1:8" if "(" not in i.text else "2:8,8", f"memory operands of {i.text}")
        if mnem in ("call", "ret"):
            check(mem[i.addr][0].startswith(("1:8", "2:8,8")), f"{i.addr:#x} {i.text}: its stack slot ({mem[i.addr][0]})")
        mw = re.match(r"^mov([lq])\s+\$?\S+,-?(0x)?[0-9a-f]*\(%r\w+\)$", i.text)
        if mw:
            eq(mem[i.addr][0], "1:" + ("4" if mw.group(1) == "l" else "8"), f"memory operand of {i.text}")

        file, num = where.split(" (")[0].rsplit(":", 1)
        want = f"{file}:{num}" if file != "??" else ":0"
        eq(line.strip(), want if num != "?" else ":0", f"sourceLine at {i.addr:#x}")
    for name in ("malloc", "free", "local_sum", "tail_alloc"):
        check(name in callees, f"no call or jump found whose calleeName is {name}")


# Registers by AT&T name: (Operand::RegKind, number, width in bits); RegKind 1 general, 2 vector,
# 3 x87, 4 MMX, 5 mask.
def register_names():
    t = {}
    legacy = [("rax", "eax", "ax", "al"), ("rcx", "ecx", "cx", "cl"), ("rdx", "edx", "dx", "dl"),
              ("rbx", "ebx", "bx", "bl"), ("rsp", "esp", "sp", "spl"), ("rbp", "ebp", "bp", "bpl"),
              ("rsi", "esi", "si", "sil"), ("rdi", "edi", "di", "dil")]
    for n in range(16):
        names = legacy[n] if n < 8 else ("r%d" % n, "r%dd" % n, "r%dw" % n, "r%db" % n)
        for name, bits in zip(names, (64, 32, 16, 8)):
            t[name] = (1, n, bits)
    for n, name in enumerate(("ah", "ch", "dh", "bh")):
        t[name] = (1, n, 8)
    for n in range(32):
        t["xmm%d" % n], t["ymm%d" % n], t["zmm%d" % n] = (2, n, 128), (2, n, 256), (2, n, 512)
    for n in range(8):
        t["st(%d)" % n], t["mm%d" % n], t["k%d" % n] = (3, n, 80), (4, n, 64), (5, n, 64)
    t["st"] = (3, 0, 80)
    return t


ATT_PREFIXES = {"rep", "repz", "repnz", "repe", "repne", "lock", "notrack", "bnd", "data16", "addr32",
                "cs", "ds", "es", "ss", "fs", "gs"}


def att_operands(text):
    """An objdump AT&T line's mnemonic and operands in its order (sources first), without prefixes,
    comments (# ..., <symbol>), AVX-512 decorators ({%k1}, {z}, {1to16}) and the * of indirect
    branches."""
    t = re.sub(r"\{[^}]*\}", "", re.sub(r"<[^>]*>", "", text.split("#")[0]))
    words = t.split(None, 1)
    while len(words) > 1 and words[0] in ATT_PREFIXES:
        words = words[1].split(None, 1)
    if len(words) < 2:
        return (words[0] if words else ""), []
    ops, depth, cur = [], 0, ""
    for c in words[1]:
        depth += (c == "(") - (c == ")")
        if c == "," and depth == 0:
            ops.append(cur.strip())
            cur = ""
        else:
            cur += c
    ops.append(cur.strip())
    return words[0], [o.lstrip("*") for o in ops if o]


def intel_sizes(prog):
    """Per address, the sizes in bits of the memory operands objdump -M intel writes as `SIZE PTR`."""
    bits = {"BYTE": 8, "WORD": 16, "DWORD": 32, "FWORD": 48, "QWORD": 64, "TBYTE": 80, "XMMWORD": 128,
            "YMMWORD": 256, "ZMMWORD": 512}
    out = subprocess.run(["objdump", "-d", "-M", "intel", "--no-show-raw-insn", "-w", prog], capture_output=True,
                         text=True, check=True).stdout
    sizes = {}
    for line in out.splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if m:
            sizes[int(m.group(1), 16)] = (m.group(2), [bits[w] for w in re.findall(r"\b([A-Z]+) PTR", m.group(2))])
    return sizes


def t_operands(work, variant):
    """Inst::memOperand (base, index, scale, displacement, %rip-relative target, size), operand (kind,
    register, width, element type), flagsRead, flagsWritten, flagsMaybeWritten, flagsLiveAfter,
    condition, isScalarVector, isRepeated and isLocked, against objdump's AT&T and Intel text of every instruction of
    queries.c's and operands.c's procedures: each operand as objdump writes it (registers by name and
    width, immediates, branch targets, memory operands and, from the Intel text, their sizes), the
    element types objdump's mnemonics name (x87 suffixes s/l/t and s/l/ll, SSE's ss/sd/ps/pd, cvt's
    two types), the condition of every jcc, setcc, cmovcc and fcmovcc by its suffix, the flags a jcc
    reads for its condition, a cmp's six written, those a shift by %cl and a rep-prefixed compare may
    leave alone, scalar SSE/AVX and rep prefixes by mnemonic, and flagsLiveAfter where the next
    instruction decides it (a jcc, setcc or cmovcc reads its flags; cmp, test, add ... and ret leave
    none live) or the instruction leaves (ret, a tail call to an imported function: none)."""
    seen = collections.Counter()
    for src, names in (("queries.c", ["main", "local_sum", "tail_alloc"]),
                       ("operands.c", ["main", "scalar", "extended", "packed", "never_run"])):
        prog = build(src, variant, work)
        out = os.path.join(work, "operands.txt")
        instrument(prog, "operand_inst.cpp", "query_anal.c", work, [out] + names)
        rows = {int(r[0], 16): r[1:] for r in (l.split("\t") for l in read_lines(out))}
        dis = {i.addr: i for i in disassemble(prog) if i.func in names}
        check_operands(rows, dis, intel_sizes(prog), seen)
    want = {"explicit memory": 10, "condition": 3, "fcmov": 8, "operand list": 150, "register": 150,
            "memory size": 20, "x87 type": 8, "sse type": 15, "cvt type": 5, "scalar": 10, "packed": 10,
            "rep": 3, "locked": 2, "maybe": 4, "live none": 20, "live read": 3}
    for what, n in want.items():
        check(seen[what] >= n, f"too few checked: {what} {seen[what]} (want {n}; {dict(seen)})")


def check_operands(rows, dis, intel, seen):
    regs = register_names()
    number = lambda r: regs[r][1]
    conds = {"o": 0, "no": 1, "b": 2, "c": 2, "nae": 2, "ae": 3, "nb": 3, "nc": 3, "e": 4, "z": 4, "ne": 5, "nz": 5,
             "be": 6, "na": 6, "a": 7, "nbe": 7, "s": 8, "ns": 9, "p": 10, "pe": 10, "np": 11, "po": 11, "l": 12,
             "nge": 12, "ge": 13, "nl": 13, "le": 14, "ng": 14, "g": 15, "nle": 15}
    fcmov = {"fcmovb": 2, "fcmovnb": 3, "fcmove": 4, "fcmovne": 5, "fcmovbe": 6, "fcmovnbe": 7, "fcmovu": 10,
             "fcmovnu": 11}
    reads = {0: 32, 1: 32, 2: 1, 3: 1, 4: 8, 5: 8, 6: 9, 7: 9, 8: 16, 9: 16, 10: 2, 11: 2, 12: 48, 13: 48, 14: 56, 15: 56}
    INT, UINT, F32, F64, F80 = 1, 2, 4, 5, 6
    sse_type = {"si": (INT,), "dq": (INT,), "ss": (F32,), "ps": (F32,), "sd": (F64,), "pd": (F64,)}
    for addr, r in rows.items():
        text = dis[addr].text
        zmnem = r[0]
        fread, fwritten, fmaybe, cond, scalar, rep, locked = (int(r[1], 16), int(r[2], 16), int(r[3], 16), int(r[4]),
                                                              r[5], r[6][0], r[6][1])
        live = int(r[7], 16)
        mems = [t[2:] for t in r[8:] if t.startswith("M=")]
        opers = []
        for t in r[8:]:
            if t.startswith("O="):
                f = t[2:].split(",")
                opers.append(dict(kind=int(f[0]), regkind=int(f[1]), reg=int(f[2]), regbits=int(f[3]),
                                  bits=int(f[4]), type=int(f[5]), ebits=int(f[6]), elements=int(f[7]),
                                  implicit=f[8][2] == "1", hidden=f[8][3] == "1", memindex=int(f[9]),
                                  mem=",".join(f[10:])))
        ops = [m.split(",") for m in mems]
        mnem, att = att_operands(text)
        where = f"{addr:#x} {text}"

        # Conditions, and the flags they read.
        m = re.match(r"^(j|set|cmov)([a-z]+?)[bwlq]?$", mnem) if not mnem.startswith("jmp") else None
        if m and (m.group(2) in conds or m.group(2)[:-1] in conds):
            cc = m.group(2) if m.group(2) in conds else m.group(2)[:-1]
            eq(cond, conds[cc], f"condition of {text}")
            eq(fread, reads[cond], f"flags {text} reads")
            seen["condition"] += 1
        elif mnem in fcmov:
            eq(cond, fcmov[mnem], f"condition of {text}")
            eq(fread, reads[cond], f"flags {text} reads")
            seen["fcmov"] += 1
        elif not mnem.startswith(("j", "set", "cmov", "loop")):
            eq(cond, -1, f"condition of {text}")
        if mnem.startswith("cmp") or mnem.startswith("test"):
            eq(fwritten, 0x3f, f"flags {text} writes")

        # Flags maybe written: a shift or rotate by %cl (a count of 0 changes nothing), a rep-prefixed
        # compare (no iteration), nothing else.
        rep_text = text.split()[0] in ("rep", "repz", "repnz", "repe", "repne")
        by_cl = re.match(r"^(sh|sa|ro|rc)[lr]", mnem) and att and att[0] == "%cl" and len(att) == 2
        if by_cl or (rep_text and fwritten):
            eq(fmaybe, fwritten, f"{where}: flags maybe written")
            check(fmaybe, f"{where}: writes no flag")
            seen["maybe"] += 1
        else:
            eq(fmaybe, 0, f"{where}: flags maybe written")
        eq(rep, "1" if rep_text else "0", f"{where}: isRepeated")
        seen["rep"] += rep_text
        locked_text = text.split()[0] == "lock" or (mnem.startswith("xchg") and "(" in text)
        eq(locked, "1" if locked_text else "0", f"{where}: isLocked")
        seen["locked"] += locked_text

        # Flags live after it, where objdump shows why: none after a return, a tail call to an
        # imported function, or before an instruction that writes all six and reads none (cmp, test,
        # add, sub, and, or, xor) or returns; those a following jcc, setcc or cmovcc reads.
        nxt = dis.get(addr + dis[addr].length)
        nxt = nxt if nxt and nxt.func == dis[addr].func else None
        nmnem = att_operands(nxt.text)[0] if nxt else ""
        branch = re.match(r"^(j|loop|call|ret|ud2|hlt)", mnem)
        if mnem.startswith("ret") or (mnem == "jmp" and "@plt>" in text):
            eq(live, 0, f"{where}: flags live after it")
            seen["live none"] += 1
        elif not branch and (re.match(r"^(cmp|test|sub|add|and|or|xor)[bwlq]?$", nmnem) or nmnem.startswith("ret")):
            eq(live, 0, f"{where}: flags live after it (then {nxt.text})")
            seen["live none"] += 1
        elif not branch and nxt:
            nm = re.match(r"^(j|set|cmov)([a-z]+?)[bwlq]?$", nmnem) if nmnem != "jmp" else None
            cc = nm and (nm.group(2) if nm.group(2) in conds else nm.group(2)[:-1] if nm.group(2)[:-1] in conds else None)
            if cc:
                eq(live & reads[conds[cc]], reads[conds[cc]], f"{where}: flags live after it (then {nxt.text})")
                seen["live read"] += 1

        # Scalar SSE/AVX by mnemonic: ss/sd (cvt's included), movd/movq/movlpd/movhpd on a vector register.
        vector_text = re.search(r"%[xyz]mm", text)
        sm = mnem[1:] if mnem.startswith("v") else mnem
        scalar_name = (re.search(r"(ss|sd)[lq]?$|(ss|sd)2|2(ss|sd)", sm) or sm in ("movd", "movq", "movlpd", "movhpd")) \
            and not sm.startswith("p")
        if vector_text:
            eq(scalar, "1" if scalar_name else "0", f"{where}: isScalarVector")
            seen["scalar" if scalar_name else "packed"] += 1
        else:
            eq(scalar, "0", f"{where}: isScalarVector")

        # An explicit memory operand, as objdump writes it: [%seg:]disp(%base,%index,scale) or disp(%rip).
        mm = re.search(r"(?:%([fg]s):)?(-?0x[0-9a-f]+|-?\d+)?\((%\w+)?(?:,%(\w+),(\d))?\)", text.split("#")[0])
        string = "%es:(%rdi)" in text or "%ds:(%rsi)" in text
        if mm and not mnem.startswith(("lea", "nop")) and not string:
            mine = [o for o in ops if o[6][2] == "0"]  # not implicit
            check(mine, f"{where}: no explicit memory operand reported ({r})")
            base, index, scale, disp = int(mine[0][0]), int(mine[0][1]), int(mine[0][2]), int(mine[0][3])
            disp_text = int(mm.group(2), 0) if mm.group(2) else 0
            if mm.group(3) == "%rip":
                t = re.search(r"#\s*([0-9a-f]+)", text)
                eq(mine[0][6][3], "1", f"{text}: %rip-relative")
                if t:
                    eq(int(mine[0][7], 16), int(t.group(1), 16), f"{text}: target")
            else:
                eq(base, number(mm.group(3)[1:]) if mm.group(3) else -1, f"{text}: base")
                eq(index, number(mm.group(4)) if mm.group(4) else -1, f"{text}: index")
                eq(scale, int(mm.group(5)) if mm.group(5) else 0, f"{text}: scale")
                eq(disp, disp_text, f"{text}: displacement")
            seen["explicit memory"] += 1

        # The operand list.  objdump writes string instructions' operands, which Zydis' text leaves out
        # (hidden: (%rsi) and (%rdi)); Zydis lists the ModRM reg field of a multi-byte nop, objdump
        # not; objdump leaves out the count 1 of a shift by 1 (implicit, shown by Zydis).
        shown = [o for o in opers if not o["hidden"]]
        if string:
            eq(shown, [], f"{where}: operands shown")
            hidden_mem = [o for o in opers if o["kind"] == 2]
            check(hidden_mem and all(o["mem"].split(",")[0] in ("6", "7") for o in hidden_mem),
                  f"{where}: string operands {hidden_mem}")
            continue
        if zmnem == "nop":
            continue
        if len(shown) == len(att) + 1:
            shown = [o for o in shown if not (o["kind"] == 1 and o["implicit"])]
        eq(len(shown), len(att), f"{where}: operands shown ({shown})")
        seen["operand list"] += 1
        zatt = list(reversed(shown))  # AT&T order
        for z, a in zip(zatt, att):
            if a.startswith("$"):
                eq(z["kind"], 1, f"{where}: {a} an immediate")
            elif a.startswith("%") and ":" not in a and ("(" not in a or a.startswith("%st(")):
                eq(z["kind"], 0, f"{where}: {a} a register")
                eq((z["regkind"], z["reg"], z["regbits"]), regs[a[1:]], f"{where}: register {a}")
                if z["regkind"] == 1:
                    check(z["type"] in (INT, UINT) and z["elements"] == 1, f"{where}: {a} one integer ({z})")
                seen["register"] += 1
            elif dis[addr].target is not None and re.fullmatch(r"[0-9a-f]+", a):
                eq(z["kind"], 4, f"{where}: {a} a branch target")
            else:
                eq(z["kind"], 3 if mnem.startswith(("lea", "nop")) else 2, f"{where}: {a} memory")
                if z["kind"] == 2:
                    check(0 <= z["memindex"] < len(mems) and mems[z["memindex"]] == z["mem"],
                          f"{where}: operand {a} is memOperand({z['memindex']}) ({z['mem']} against {mems})")
        mem_shown = [z for z in zatt if z["kind"] == 2]
        itext, isizes = intel[addr]
        if len(mem_shown) == 1 and len(isizes) == 1 and "BCST" not in itext:
            eq(mem_shown[0]["bits"], isizes[0], f"{where}: memory operand's size ({itext})")
            seen["memory size"] += 1

        # Element types objdump's mnemonics name.
        x87i = re.match(r"^fi(ld|st|stp|sttp|add|sub|subr|mul|div|divr|com|comp)(s|l|ll)$", mnem)
        x87f = re.match(r"^f(ld|st|stp|add|sub|subr|mul|div|divr|com|comp)(s|l|t)$", mnem)
        if (x87i or x87f) and len(mem_shown) == 1:
            want = (INT, {"s": 16, "l": 32, "ll": 64}[x87i.group(2)]) if x87i else \
                {"s": (F32, 32), "l": (F64, 64), "t": (F80, 80)}[x87f.group(2)]
            eq((mem_shown[0]["type"], mem_shown[0]["bits"]), want, f"{where}: x87 memory operand's type and size")
            seen["x87 type"] += 1
        cvt = re.match(r"^v?cvtt?(si|ss|sd|dq|ps|pd)2(si|ss|sd|dq|ps|pd)[lq]?$", mnem)
        arith = re.match(r"^v?(add|sub|mul|div|min|max|sqrt|andn|and|or|xor|mova|movu|mov|ucomi|comi)(ss|sd|ps|pd)$", mnem)
        if cvt:
            check(zatt[0]["type"] in sse_type[cvt.group(1)] and zatt[-1]["type"] in sse_type[cvt.group(2)],
                  f"{where}: types {zatt[0]['type']} -> {zatt[-1]['type']}")
            seen["cvt type"] += 1
        elif arith:
            want = sse_type[arith.group(2)][0]
            for z in zatt:
                if (z["kind"] == 0 and z["regkind"] == 2) or z["kind"] == 2:
                    eq(z["type"], want, f"{where}: element type")
            if arith.group(2)[0] == "s":
                eq(zatt[0]["elements"], 1, f"{where}: a scalar source's elements")
            else:
                for z in zatt:
                    if z["kind"] == 0 and z["regkind"] == 2:
                        eq(z["elements"] * z["ebits"], z["regbits"], f"{where}: a packed register's elements")
            seen["sse type"] += 1
        elif re.match(r"^v?p(add|sub|xor|and|or|unpck|cmp|max|min|mul|sll|srl|sra|shuf)", mnem):
            for z in zatt:
                if (z["kind"] == 0 and z["regkind"] == 2) or z["kind"] == 2:
                    check(z["type"] in (INT, UINT), f"{where}: integer elements ({z})")
            seen["sse type"] += 1


def t_facts(work, variant):
    """atomx::embedFacts: the analysis side, given nothing but block counts, reads from the embedded
    facts every procedure, block and instruction of the program (facts_inst.cpp, facts_anal.c), and
    they agree with independent oracles: objdump's instructions (address, size, mnemonic, the
    function they are in), the DWARF line table (readelf --debug-dump=decodedline), and each block's
    count with a counter incremented in that block.  The semantics module's facts of every instruction
    and operand (flags, condition, traits, target, operands' kinds, registers, widths, types, memory
    parts) are those Inst's queries answered at rewrite time, on loops.c and on operands.c's SSE,
    x87, string and locked instructions (t_operands checks those queries against objdump); loops.c's
    without FactsDetail::Operands has the instruction facts and no operand."""
    for name, detail in (("operands.c", "operands"), ("loops.c", "instructions")):
        prog = build(name, variant, work)
        expected = os.path.join(work, name + ".semantics")
        exe = instrument(prog, "facts_inst.cpp", "facts_anal.c", work, args=[expected, detail])
        n, i = run_both(prog, exe, work)
        lines = read_lines(os.path.join(i[3], "facts.out"))
        sem = [l for l in lines if l.startswith(("sem ", "op "))]
        want = read_lines(expected)
        ops = sum(l.startswith("op ") for l in want)
        check(len(want) > 100 and (ops > 100) == (detail == "operands"), f"{name}: {len(want)} facts, {ops} operands")
        for k, (a, b) in enumerate(zip(sem, want)):
            eq(a, b, f"{name}: semantic fact {k} from the embedded facts against Inst's queries")
        eq(len(sem), len(want), f"{name}: semantic facts")
        eq(lines[-1].split()[5], str(ops), f"{name}: operand count")
    eq(lines[0], "program " + prog, "program file")
    procs, blocks, insts = {}, {}, []
    for line in lines[1:-1]:
        f = line.split()
        if f[0] == "proc":
            procs[int(f[1])] = (f[2], int(f[3], 16), int(f[4], 16), int(f[5]), int(f[6]))
        elif f[0] == "block":
            blocks[int(f[1])] = (int(f[2], 16), int(f[3], 16), int(f[5]), int(f[7]), int(f[9]), int(f[10]))
        elif f[0] == "inst":
            insts.append((int(f[1]), int(f[2], 16), int(f[4]), int(f[6]), f[19], f[20], f[21]))
    end = lines[-1].split()
    eq((int(end[1]), int(end[2]), int(end[3]), end[4]), (len(procs), len(blocks), len(insts), "1"), "counts, range check")
    check(len(procs) > 3 and len(insts) > 50, f"too few facts: {lines[-1]}")
    dis = {d.addr: d for d in disassemble(prog)}
    intel = {}  # address -> mnemonic, in Intel syntax as Zydis names them (cdqe, not cltq), prefixes dropped
    for line in subprocess.run(["objdump", "-d", "-M", "intel", "--no-show-raw-insn", "-w", prog], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if m:
            words = [w for w in m.group(2).split() if w not in ("rep", "repz", "repe", "repnz", "repne", "lock", "bnd",
                                                                  "notrack", "data16", "cs", "ds", "addr32")]
            intel[int(m.group(1), 16)] = words[0] if words else ""
    # The line table, as binutils' addr2line reads it.
    a2l = subprocess.run(["addr2line", "-e", prog] + ["%x" % x[1] for x in insts], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    eq(len(a2l), len(insts), "addr2line answers")
    checked_lines = 0
    for k, (iid, pc, bid, size, mnem, cat, where) in enumerate(insts):
        eq(iid, k, "instruction ids are dense")
        d = dis.get(pc)
        check(d is not None, f"instruction {pc:#x}: not an instruction in objdump's listing")
        # objdump's length is up to the next instruction it lists (padding included after a
        # function's last one); within a block the next instruction follows at once.
        if k + 1 < len(insts) and insts[k + 1][2] == bid:
            eq(size, d.length, f"size of {pc:#x} ({d.text})")
        check(0 < size <= d.length, f"size of {pc:#x} ({d.text}): {size}, objdump's {d.length}")
        theirs = intel[pc]
        same = theirs[:3] == mnem[:3] or any(theirs.startswith(c) and mnem.startswith(c) for c in ("j", "set", "cmov")) \
            or (mnem == "nop" and theirs in ("xchg", ""))
        check(same, f"mnemonic of {pc:#x}: {mnem} against objdump's {d.text}")
        b = blocks[bid]
        check(b[0] <= pc < b[1], f"{pc:#x} outside its block {b[0]:#x}..{b[1]:#x}")
        eq(procs[b[2]][0], d.func, f"procedure of {pc:#x}")
        file, line = where.rsplit(":", 1)
        their_file, their_line = a2l[k].split(" (discriminator")[0].rsplit(":", 1)
        if their_file == "??" or their_line == "?":
            eq(line, "0", f"source line of {pc:#x} (addr2line has none)")
        else:
            eq((os.path.basename(file), line), (os.path.basename(their_file), their_line), f"source line of {pc:#x}")
            checked_lines += 1
    check(checked_lines > len(insts) // 2, f"only {checked_lines} of {len(insts)} instructions have a line")
    for bid, (pc, endpc, proc, ninst, exact, each) in blocks.items():
        eq(exact, each, f"block {pc:#x}: exact count against its increment")
        check(procs[proc][3] <= bid < procs[proc][3] + procs[proc][4], f"block {bid} outside its procedure's range")
    check(sum(b[4] for b in blocks.values()) > 0, "no block ran")


def t_promote(work, variant):
    """Counters kept in registers through loops (analysis/CounterPromotion.h): promote.c's loops get
    their counters in registers (atomx's summary says how many), the output is unchanged, and every
    block's exact count from the fewest counters equals its own increment's, while predictions
    (Counters::predict) in the same loops look for a dead register: in spin()'s loop the only one is
    the promoted counter's, which they must not take (shown to fail so: block 37, 15 against
    525032); a second counter there borrows a live callee-saved register, saved and restored."""
    prog = build("promote.c", variant, work)
    out = prog + ".atomx"
    r = subprocess.run([A, prog, os.path.join(TOOLS, "promote_inst.cpp"), os.path.join(TOOLS, "promote_anal.c"),
                        "-o", out], capture_output=True, text=True)
    check(r.returncode == 0, f"atomx failed: {r.stderr.strip()}")
    m = re.search(r"(\d+) of them in a register through a loop", r.stderr)
    check(m is not None and int(m.group(1)) >= 1, f"no counter promoted: {r.stderr.strip()}")
    # spin()'s second counter borrows a callee-saved register, saved around the loop (shown to fail
    # with the restore left out: the output changed).
    if variant != "O0":
        check(re.search(r"\(\d+ saved around it\)", r.stderr) is not None, f"no register saved: {r.stderr.strip()}")
    for args in ((), ("1",), ("2",)):
        n, i = run_both(prog, out, work, args)
        lines = read_lines(os.path.join(i[3], "promote.out"))
        eq(lines[-1].split()[:2], ["differ", "0"], f"exact against incremented counts ({args}): " +
           "; ".join(l for l in lines[:-1] if l.split()[3] != l.split()[5])[:300])
        check(len(lines) > 10, f"too few blocks ran: {len(lines) - 1}")


def t_unknown_tool(work):
    """-T with a name atomx does not ship: one line naming the shipped tools."""
    prog = build("loops.c", "O2", work)
    r = subprocess.run([A, prog, "-T", "no_such_tool", "-o", prog + ".atomx"], capture_output=True, text=True)
    check(r.returncode != 0, f"atomx succeeded: {r.stderr}")
    check(not os.path.exists(prog + ".atomx"), "an output file was written")
    eq(len(r.stderr.strip().splitlines()), 1, f"one-line message ({r.stderr.strip()})")
    check("no_such_tool" in r.stderr and "branch" in r.stderr, f"message does not name the tools: {r.stderr}")


def t_light(work, variant):
    """A site whose routine uses general registers only skips saving the vector state (and
    the program, which computes in floating point and vectors around it, is unchanged);
    one whose routine computes in double does not."""
    prog = build("fenv.c", variant, work, ["-lm"])
    names = [n for n in symbols(prog) if n in ("main", "work", "compute", "kernel")] or ["main"]
    for anal, light in (("light_anal.c", True), ("heavy_anal.c", False)):
        out = prog + ".atomx"
        r = subprocess.run([A, prog, os.path.join(TOOLS, "light_inst.c"), os.path.join(TOOLS, anal), "-o", out,
                            "--"] + names, capture_output=True, text=True)
        check(r.returncode == 0, f"atomx failed: {r.stderr}")
        m = re.search(r"(\d+) call\(s\) at (\d+) site\(s\), (\d+) without vector state", r.stderr)
        check(m, f"no site summary in: {r.stderr}")
        sites, light_sites = int(m.group(2)), int(m.group(3))
        check(sites > 10, f"only {sites} sites")
        # The ProgramAfter site is not an inserted call site of its own; all per-instruction sites count.
        eq(light_sites > 0, light, f"{anal}: sites without vector state ({light_sites} of {sites})")
        if light:
            check(light_sites >= sites - 1, f"{anal}: {light_sites} of {sites} sites light")
        n, i = run_both(prog, out, work)
        check(int(read_lines(os.path.join(i[3], "light.out"))[0].split()[0]) > 0, "Touch never ran")


TESTS = {}
TESTS["error.unknown_tool"] = t_unknown_tool
for v in ("O2", "O0", "nopie"):
    TESTS[f"queries.{v}"] = lambda w, v=v: t_queries(w, v)
TESTS["queries.noplt"] = lambda w: t_queries(w, "O2", noplt=True)
for v in ("O2", "O0"):
    TESTS[f"light.{v}"] = lambda w, v=v: t_light(w, v)
PITFALLS = ["avx", "cet", "cold_parts", "computed_goto", "exceptions", "fork_exec", "funcptrs", "init_fini",
            "rdynamic", "recursion_noreturn", "signals_setjmp", "switch_tables", "tailcalls", "tls_threads"]
# Minutes per variant with the expensive clobbers on every call: O2 only,
# and the 64 KiB memcpy/stdio part on every 16th call (the rest on each).
# (tls_threads: four threads counting primes; still about a minute.)
SLOW = {"recursion_noreturn", "tailcalls", "tls_threads"}
for p in PITFALLS:
    # tests/programs builds tailcalls without -O0 (no tail calls there).
    for v in ("O2",) if p in SLOW else ("O2", "O0", "nopie"):
        TESTS[f"clobber.{p}.{v}"] = (lambda w, p=p, v=v: t_clobber(w, p, v, "16" if p in SLOW else "1"))
for p in PITFALLS:
    for v in ("O2",) if p == "tailcalls" else ("O2", "O0", "nopie"):
        TESTS[f"counters.{p}.{v}"] = (lambda w, p=p, v=v: t_counters(w, p, v))
    # Every pitfall with each thread counting into its own copy (most of them start no thread,
    # so atomx alone would count them plainly).
    TESTS[f"counters_per_thread.{p}.O2"] = (lambda w, p=p: t_counters(w, p, "O2", "per-thread"))
for v in ("O2", "O0", "nopie"):
    TESTS[f"counters.thread_counts.{v}"] = lambda w, v=v: t_thread_counts(w, v)
for p in ("avx", "exceptions", "signals_setjmp", "switch_tables", "tls_threads", "funcptrs"):
    for v in ("O2", "O0", "nopie"):
        TESTS[f"unless.{p}.{v}"] = (lambda w, p=p, v=v: t_unless(w, p, v))
TESTS["unless.geometry.O2"] = lambda w: t_unless(w, "switch_tables", "O2", ["--line", "128", "--sets", "8"])
TESTS["unless.thread_counts.O2"] = lambda w: t_unless(w, "thread_counts", "O2", build_src="thread_counts.c")
for v in ("O2", "O0", "nopie"):
    TESTS[f"clobber.fenv.{v}"] = lambda w, v=v: t_clobber_fenv(w, v)
    TESTS[f"order.{v}"] = lambda w, v=v: t_order(w, v)
    TESTS[f"procs.{v}"] = lambda w, v=v: t_procs(w, v)
    TESTS[f"loops.{v}"] = lambda w, v=v: t_loops(w, v)
    TESTS[f"mem.{v}"] = lambda w, v=v: t_mem(w, v)
    TESTS[f"threads.{v}"] = lambda w, v=v: t_threads(w, v)
    TESTS[f"fork.{v}"] = lambda w, v=v: t_fork(w, v)
    TESTS[f"throws.{v}"] = lambda w, v=v: t_throws(w, v)
    TESTS[f"unwound.{v}"] = lambda w, v=v: t_unwound(w, v)
TESTS["loops.noedges"] = lambda w: t_loops(w, "O2", edges=False)
TESTS["libm"] = lambda w: t_libm(w)
TESTS["run_output"] = lambda w: t_run_output(w)
TESTS["build_flags"] = lambda w: t_build_flags(w)
TESTS["tool_cache"] = lambda w: t_tool_cache(w)
for v in ("O2", "O0", "nopie"):
    TESTS[f"facts.{v}"] = lambda w, v=v: t_facts(w, v)
    TESTS[f"operands.{v}"] = lambda w, v=v: t_operands(w, v)
    TESTS[f"promote.{v}"] = lambda w, v=v: t_promote(w, v)
TESTS["mem.rsp"] = lambda w: t_mem(w, "O2", rsp=True)
for v in ("O2", "O0", "nopie"):
    TESTS[f"mem_light.{v}"] = lambda w, v=v: t_mem(w, v, rsp=True, light=True)
for how in ("segv", "fault", "abort", "term", "_exit"):
    TESTS[f"killed.{how}"] = lambda w, how=how: t_killed(w, "O2", how)
for kind in ("argcount", "brcond", "effaddr", "compile", "undefined", "wrongtype", "wrongarray", "crash", "throw",
             "range", "rangec", "unresolved", "atomerror", "countinc", "nullhandle", "cbig", "cone", "cstring",
             "cfloat"):
    TESTS[f"error.{kind}"] = lambda w, kind=kind: t_error(w, kind)

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--programs", help="build directory of tests/programs")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("test", nargs="?")
    ARGS = ap.parse_args()
    if ARGS.list:
        print("\n".join(TESTS))
        sys.exit(0)
    A = os.path.abspath(ARGS.atomx)
    work = tempfile.mkdtemp(prefix="atomx-itest.")
    try:
        TESTS[ARGS.test](work)
        print(f"ok: {ARGS.test}")
        shutil.rmtree(work)
    except Fail as e:
        print(f"FAIL: {ARGS.test}: {e}\n(work directory kept: {work})")
        sys.exit(1)
