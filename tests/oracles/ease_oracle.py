#!/usr/bin/env python3
"""ease's reports 2-8, 10 and 11 against an independent classifier.

    ease_oracle.py --atomx ATOMX PROG [--corrupt SPEC]... [-- ARGS...]

Runs PROG instrumented with `atomx -T ease` and, with the same arguments,
under callgrind (--dump-instr=yes: executions per instruction), then derives
every report ease writes from the text `objdump -d -M intel` shows of PROG's
own functions (those atomx instruments), each instruction weighted by the
times callgrind saw it run, and requires ease.json's totals and tables to be
equal, row by row.  The classifier reads nothing of atomx: its x86 facts are
the tables below, written from the Intel SDM, and follow the conventions
tools/ease/README.md ("What each report counts") states:

  report 2   path size: each instruction's length (the next address less its
             own, as objdump lays the code out);
  report 3   the class and mnemonic (Zydis's names: jnbe for ja, stosq for
             `stos QWORD PTR`, `rep stosq`);
  report 4   one addressing mode per shown operand, then the hidden memory
             operands (the stack slot of push/pop/call/ret/leave, string
             instructions' operands), first mode that applies;
  report 5,6 each operand that reaches memory, by size and load/store/modify;
  report 7   registers read and written (any width of rax is rax; xmmN;
             flags), memory operands' base and index read;
  report 8   flags read and written (undefined flags count as written; a
             shift or rotate by %cl and a rep compare write "maybe"), the
             conditions tested, and the flag writes never read: a liveness
             of the six status flags over each function's CFG as objdump
             shows it; a call, return, hlt, ud2 or jump to a function's
             entry (a tail call) ends liveness, a jump into the middle of
             another function (a .cold part) keeps all six live; an indirect
             jump's successors are the targets callgrind saw it take (a
             table's case that never ran is not seen: one that read a flag
             before writing it would tell the two apart, a case compilers
             do not write);
  report 10  control transfers and conditional branches executed;
  report 11  the data type of each instruction.
A rep-prefixed instruction counts once per execution (callgrind counts each
iteration: its executions are its Ir less its jumps to itself).

Where Zydis's facts (which atomx's semantics module reads) settle a
convention the README states, the tables here follow them and the README
says so (cmovcc's destination only written, cvtsi2sd's read, ...).  An
SSE/AVX or x87 instruction the tables lack is classified by its form (the
first operand the result, read unless a move, extraction, conversion or
VEX form; x87 memory loaded or stored); any other fails the check, named.

--static: ease's static measurements (`-T ease -- --static`: each
instruction of the program once, the program's own code not run) against
the same classifier with every instruction of those functions weighted once
(callgrind still runs the program, for the targets of indirect jumps).

--dump FILE writes each executed instruction's facts, to find the one
behind a differing row.
--corrupt TOTAL+N or TABLE:KEY+N (the must-fail twins, tests/oracles):
ease.json is altered so before the comparison, as a wrong ease would have
written it.  Exit status 0 when every row is equal; 1 with each differing row
named, under its report.
"""
import bisect
import collections
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools", "dyninst"))
from vgharness import harness_args, start  # noqa: E402
import callgrind_file  # noqa: E402  (vgharness puts tests/ on the path)
import ease_causes  # noqa: E402

FLAGS = ("OF", "SF", "ZF", "AF", "PF", "CF")  # the order ease names them in
ALL6 = frozenset(FLAGS)

# ---------------------------------------------------------------- registers
_GPR = {}
for fam, names in {
        "rax": "rax eax ax al ah", "rbx": "rbx ebx bx bl bh", "rcx": "rcx ecx cx cl ch",
        "rdx": "rdx edx dx dl dh", "rsi": "rsi esi si sil", "rdi": "rdi edi di dil",
        "rbp": "rbp ebp bp bpl", "rsp": "rsp esp sp spl"}.items():
    for n, w in zip(names.split(), (64, 32, 16, 8, 8)):
        _GPR[n] = (fam, w)
for i in range(8, 16):
    for suf, w in (("", 64), ("d", 32), ("w", 16), ("b", 8), ("l", 8)):
        _GPR[f"r{i}{suf}"] = (f"r{i}", w)
for i in range(32):
    for pre, w in (("xmm", 128), ("ymm", 256), ("zmm", 512)):
        _GPR[f"{pre}{i}"] = (f"xmm{i}", w)
for i in range(8):
    _GPR[f"k{i}"] = (f"k{i}", 64)
    _GPR[f"st({i})"] = ("st", 80)
_GPR["st"] = ("st", 80)
SEGMENTS = {"cs", "ds", "es", "ss", "fs", "gs"}
SIZES = {"BYTE": 1, "WORD": 2, "DWORD": 4, "QWORD": 8, "TBYTE": 10, "XMMWORD": 16, "YMMWORD": 32, "ZMMWORD": 64,
         "FWORD": 6, "OWORD": 16}

# Conditions as Zydis's jcc mnemonics name them, from objdump's suffixes.
COND = {"e": "z", "z": "z", "ne": "nz", "nz": "nz", "a": "nbe", "nbe": "nbe", "ae": "nb", "nb": "nb", "nc": "nb",
        "b": "b", "c": "b", "nae": "b", "be": "be", "na": "be", "g": "nle", "nle": "nle", "ge": "nl", "nl": "nl",
        "l": "l", "nge": "l", "le": "le", "ng": "le", "s": "s", "ns": "ns", "o": "o", "no": "no",
        "p": "p", "pe": "p", "np": "np", "po": "np"}
COND_FLAGS = {"z": "ZF", "nz": "ZF", "nbe": "CF ZF", "be": "CF ZF", "nb": "CF", "b": "CF", "nle": "ZF SF OF",
              "le": "ZF SF OF", "nl": "SF OF", "l": "SF OF", "s": "SF", "ns": "SF", "o": "OF", "no": "OF",
              "p": "PF", "np": "PF"}

# ------------------------------------------------ the facts of each mnemonic
# Explicit operands' access: "w" written, "r" read, "rw" both; (flags read,
# flags written) from the SDM, undefined flags counted as written.
ARITH = ("rw r", "", FLAGS)
FACTS = {
    "mov": ("w r", "", ()), "movabs": ("w r", "", ()), "movzx": ("w r", "", ()), "movsx": ("w r", "", ()),
    "movsxd": ("w r", "", ()), "lea": ("w a", "", ()),
    "add": ARITH, "sub": ARITH, "and": ARITH, "or": ARITH, "xor": ARITH,
    "adc": ("rw r", ("CF",), FLAGS), "sbb": ("rw r", ("CF",), FLAGS),
    "cmp": ("r r", "", FLAGS), "test": ("r r", "", FLAGS), "bt": ("r r", "", ("OF", "SF", "AF", "PF", "CF")),
    "bts": ("rw r", "", ("OF", "SF", "AF", "PF", "CF")), "btr": ("rw r", "", ("OF", "SF", "AF", "PF", "CF")),
    "btc": ("rw r", "", ("OF", "SF", "AF", "PF", "CF")),
    "neg": ("rw", "", FLAGS), "not": ("rw", "", ()), "inc": ("rw", "", FLAGS[:5]), "dec": ("rw", "", FLAGS[:5]),
    "shl": ("rw r", "", FLAGS), "sal": ("rw r", "", FLAGS), "shr": ("rw r", "", FLAGS), "sar": ("rw r", "", FLAGS),
    "rol": ("rw r", "", ("OF", "CF")), "ror": ("rw r", "", ("OF", "CF")),
    "rcl": ("rw r", ("CF",), ("OF", "CF")), "rcr": ("rw r", ("CF",), ("OF", "CF")),
    "shld": ("rw r r", "", FLAGS), "shrd": ("rw r r", "", FLAGS),
    "imul": (None, "", FLAGS), "mul": ("r", "", FLAGS), "div": ("r", "", FLAGS), "idiv": ("r", "", FLAGS),
    "bsf": ("w r", "", FLAGS), "bsr": ("w r", "", FLAGS), "tzcnt": ("w r", "", FLAGS), "lzcnt": ("w r", "", FLAGS),
    "popcnt": ("w r", "", FLAGS), "bswap": ("rw", "", ()),
    "xchg": ("rw rw", "", ()), "xadd": ("rw rw", "", FLAGS), "cmpxchg": ("rw r", "", FLAGS),
    "push": ("r", "", ()), "pop": ("w", "", ()), "leave": ("", "", ()),
    "loop": ("r", "", ()), "jrcxz": ("r", "", ()),
    "call": ("r", "", ()), "ret": ("", "", ()), "jmp": ("r", "", ()), "hlt": ("", "", ()), "ud2": ("", "", ()),
    "cdqe": ("", "", ()), "cqo": ("", "", ()), "cdq": ("", "", ()), "cwde": ("", "", ()),
    "endbr64": ("", "", ()), "nop": ("a a", "", ()), "syscall": ("", "", ()), "cpuid": ("", "", ()), "vzeroupper": ("", "", ()),
    "movaps": ("w r", "", ()), "movups": ("w r", "", ()), "movdqa": ("w r", "", ()), "movdqu": ("w r", "", ()),
    "movapd": ("w r", "", ()), "movupd": ("w r", "", ()),
    "movq": ("w r", "", ()), "movd": ("w r", "", ()), "movss": ("w r", "", ()), "movsd_sse": ("w r", "", ()),
    "cvtsi2sd": ("rw r", "", ()), "cvtsi2ss": ("rw r", "", ()), "sqrtsd": ("w r", "", ()), "sqrtss": ("w r", "", ()), "cvttsd2si": ("w r", "", ()),
    "cvtsd2ss": ("w r", "", ()), "cvtss2sd": ("w r", "", ()),
    "mulsd": ("rw r", "", ()), "divsd": ("rw r", "", ()), "addsd": ("rw r", "", ()), "subsd": ("rw r", "", ()),
    "ucomisd": ("r r", "", FLAGS), "comisd": ("r r", "", FLAGS), "ucomiss": ("r r", "", FLAGS),
    "comiss": ("r r", "", FLAGS), "pmovmskb": ("w r", "", ()), "movmskps": ("w r", "", ()), "movmskpd": ("w r", "", ()),
    "pxor": ("rw r", "", ()), "paddd": ("rw r", "", ()), "paddw": ("rw r", "", ()), "paddq": ("rw r", "", ()),
    "psubusw": ("rw r", "", ()), "punpcklqdq": ("rw r", "", ()), "punpcklwd": ("rw r", "", ()),
    "punpckhwd": ("rw r", "", ()), "punpckldq": ("rw r", "", ()), "shufpd": ("rw r r", "", ()),
    "psrldq": ("rw r", "", ()), "pshufd": ("w r r", "", ()), "pshufb": ("rw r", "", ()),
}
ELEMENT = {"ss": "float", "sd": "double", "sh": "half"}


def scalar(mn):
    """Whether an SSE/AVX instruction works on one element (README: `*ss`,
    `*sd`, `*sh`, `cvt*2sd`, `cvtsd2*`, `movd`, `movq`, `movlpd`)."""
    mn = mn.replace("movsd_sse", "movsd")
    return mn[-2:] in ELEMENT or mn.startswith("cvt") and any(k in mn for k in ("2sd", "2ss", "sd2", "ss2")) \
        or mn in ("movd", "movq", "movlpd")


STRING = {"movs", "stos", "lods", "cmps", "scas"}


def x87(mn):
    """Whether objdump's mnemonic is an x87 instruction (fld, fstp, fcomip ...)."""
    return mn.startswith("f") and mn not in FACTS

STRING_SUFFIX = {1: "b", 2: "w", 4: "d", 8: "q"}


class Operand:
    """One operand as objdump shows it: kind register/immediate/target/memory
    (memory: lea's and nop's are `address`, they reach no memory)."""

    def __init__(self, text, kind, size=None, reg=None, base=None, index=None, disp=0, seg=None, hidden=False):
        self.text, self.kind, self.size, self.reg = text, kind, size, reg
        self.base, self.index, self.disp, self.seg, self.hidden = base, index, disp, seg, hidden
        self.access = ""

    def mode(self):
        if self.kind == "register":
            return "register"
        if self.kind == "immediate":
            return "immediate"
        if self.kind == "target":
            return "branch target"
        if self.hidden and self.seg is None and self.base in ("rsi", "rdi"):
            return "base"  # string instructions' operands
        if self.seg in ("fs", "gs"):
            return "segment-based"
        if self.base == "rip":
            return "%rip-relative"
        if self.base is None and self.index is None:
            return "absolute"
        if self.index is not None:
            return "base+index*scale(+disp)"
        if self.base in ("rsp", "rbp"):
            return "%rsp/%rbp-based"
        return "base+disp" if self.disp else "base"

    def regs(self):
        if self.kind == "register":
            return {_GPR[self.reg][0]}
        if self.kind in ("memory", "address"):
            return {r for r in (self.base, self.index) if r and r != "rip"}
        return set()


_MEM = re.compile(r"^(?:(\w+) PTR )?(?:(\w\w):)?(?:\[([^\]]*)\]|(0x[0-9a-f]+))$")
_IMM = re.compile(r"-?(0x[0-9a-f]+|\d+)")


def parse_operand(text):
    text = text.strip()
    if text in _GPR:
        return Operand(text, "register", _GPR[text][1] // 8, reg=text)  # sizes in bytes
    m = None if _IMM.fullmatch(text) else _MEM.match(text)
    if m:
        size = SIZES[m.group(1)] if m.group(1) else None
        seg = m.group(2)
        if m.group(4):
            return Operand(text, "memory", size, disp=int(m.group(4), 16), seg=seg)
        base = index = None
        disp = 0
        for term in re.findall(r"[+-]?[^+-]+", m.group(3)):
            sign, t = (-1, term[1:]) if term[0] == "-" else (1, term.lstrip("+"))
            if "*" in t:
                index = _GPR[t.split("*")[0]][0]
            elif t in _GPR or t == "rip":
                base = "rip" if t == "rip" else _GPR[t][0]
            else:
                disp += sign * int(t, 16)
        return Operand(text, "memory", size, base=base, index=index, disp=disp, seg=seg)
    if _IMM.fullmatch(text):
        return Operand(text, "immediate")
    if re.fullmatch(r"[0-9a-f]+ <[^>]*>", text):
        return Operand(text, "target")
    raise ValueError(f"an operand the classifier does not know: {text!r}")


def split_operands(s):
    s = s.split("#")[0].strip()
    return [o for o in (x.strip() for x in s.split(",")) if o] if s else []


# The comparison predicates of cmpss & co., by immediate (Intel SDM, CMPPD:
# 0-7 for SSE, 0-31 for AVX), as objdump spells them in its aliases
# (cmpnlesd: cmpsd with 6).
CMP_PREDICATES = ["eq", "lt", "le", "unord", "neq", "nlt", "nle", "ord", "eq_uq", "nge", "ngt", "false", "neq_oq", "ge",
                  "gt", "true", "eq_os", "lt_oq", "le_oq", "unord_s", "neq_us", "nlt_uq", "nle_uq", "ord_s", "eq_us",
                  "nge_uq", "ngt_uq", "false_os", "neq_os", "ge_oq", "gt_oq", "true_us"]


class Inst:
    """The facts of one instruction, from its objdump text alone."""

    def __init__(self, addr, text, length):
        self.addr, self.text, self.length = addr, text, length
        words = text.split("#")[0].split(None, 1)
        prefixes = []
        while words and words[0] in ("rep", "repz", "repe", "repnz", "repne", "lock", "cs", "ds", "data16",
                                     "notrack", "bnd", "es", "ss", "addr32"):
            prefixes.append(words[0])
            words = words[1].split(None, 1) if len(words) > 1 else []
        mn = words[0]
        ops = [parse_operand(o) for o in split_operands(words[1] if len(words) > 1 else "")]
        self.rep = next((p for p in prefixes if p.startswith("rep")), None)
        self.cond = None
        self.reads, self.writes = set(), set()
        self.flags_read, self.flags_written, self.flags_maybe = set(), set(), set()
        self.hidden = []  # memory operands the text does not show
        self.control = None  # "cond", "jmp", "call", "ret", "stop"
        self.direct = None  # a direct branch's target
        self.x87 = False
        m = re.fullmatch(r"(v?)pclmul([lh])q([lh])qdq", mn)
        if m:  # objdump's aliases of pclmulqdq: the immediate they stand for
            mn = m.group(1) + "pclmulqdq"
            ops.append(Operand(str((m.group(2) == "h") | (m.group(3) == "h") << 4), "immediate"))
        m = re.fullmatch(r"(v?)cmp(eq|lt|le|unord|neq|nlt|nle|ord|eq_uq|nge|ngt|false|neq_oq|ge|gt|true|eq_os|lt_oq|"
                         r"le_oq|unord_s|neq_us|nlt_uq|nle_uq|ord_s|eq_us|nge_uq|ngt_uq|false_os|neq_os|ge_oq|gt_oq|"
                         r"true_us)(ss|sd|ps|pd)", mn)
        if m:  # objdump's aliases of cmpss/cmpsd/cmpps/cmppd: the predicate they stand for, an immediate to Zydis
            mn = m.group(1) + "cmp" + m.group(3)
            ops.append(Operand(str(CMP_PREDICATES.index(m.group(2))), "immediate"))
        if mn == "xchg" and len(ops) == 2 and ops[0].text == ops[1].text == "ax":
            mn, ops = "nop", []  # 66 90: Zydis's nop
        if mn == "movsd":
            mn = "movsd_sse"  # objdump shows the string movsd as `movs DWORD PTR ...`
        m = re.fullmatch(r"(j|set|cmov)([a-z]+)", mn)
        if m and m.group(2) in COND:
            self.cond = COND[m.group(2)]
            kind = {"j": "jcc", "set": "setcc", "cmov": "cmovcc"}[m.group(1)]
            self.mnemonic = m.group(1) + self.cond
            self.cond_key = f"{kind} {self.cond}"
            self.flags_read = set(COND_FLAGS[self.cond].split())
            base = kind
        elif mn in STRING:
            size = next(o.size for o in ops if o.kind == "memory")
            self.mnemonic = mn + STRING_SUFFIX[size]
            base = "string"
        else:
            if mn not in FACTS and not any(o.kind == "register" and o.reg[1:3] == "mm" for o in ops) \
                    and not x87(mn):
                raise ValueError(f"{addr:#x}: a mnemonic the classifier does not know: {text!r}")
            self.mnemonic = "mov" if mn == "movabs" else ("movsd" if mn == "movsd_sse" else mn)
            base = mn
        self.mn = mn
        self.ops = ops
        if base == "jcc":
            self.control, self.direct = "cond", _target(ops[0])
            for o in ops:
                o.access = "r"
        elif base in ("setcc", "cmovcc"):
            ops[0].access = "w"  # cmovcc's destination: written (conditionally), not read
            for o in ops[1:]:
                o.access = "r"
        elif base == "string":
            self._string(mn, ops)
        else:
            # SSE not in the table: the first operand is the result, read
            # too unless the operation only moves, extracts or converts; no
            # flags.  x87: its memory operand is loaded, or stored by the
            # stores (fst, fstp, fist*, fnst*); its stack registers are not
            # among the registers report 7 counts.
            # VEX (v...): the destination is only written.
            if x87(mn):
                self.x87 = True
                store = mn.startswith(("fst", "fist", "fnst", "fbstp"))
                access = " ".join(("w" if store else "r") if o.kind == "memory" else "-" for o in ops)
                fr, fw = (), FLAGS if mn.startswith(("fcomi", "fucomi")) else ()
            else:
                access, fr, fw = FACTS.get(mn) or (
                    ("w" if mn.startswith(("mov", "pshuf", "pextr", "cvt", "v")) else "rw") + " r" * (len(ops) - 1),
                    (), ())
            if mn == "imul":
                access = {1: "r", 2: "rw r", 3: "w r r"}[len(ops)]
            if mn == "nop" and ops:
                # 0f 1f /0: Zydis shows the ModRM register too (eax; ax
                # with an operand-size prefix).
                ops.append(Operand("eax", "register", 4, reg="ax" if ops[0].size == 2 else "eax"))
                ops[0].kind = "address"
            if mn == "lea":
                ops[1].kind = "address"
            for o, a in zip(ops, access.split()):
                o.access = a if a not in ("a", "-") else ""
            self.flags_read |= set(fr)
            self.flags_written |= set(fw)
            self._implicit(mn, ops)
        if self.rep and base == "string" and mn in ("cmps", "scas"):
            # a count of 0 compares nothing; repe/repne test ZF (Zydis: read)
            self.flags_maybe, self.flags_written = self.flags_written, set()
            self.flags_read.add("ZF")
        for o in ops + self.hidden:
            if o.kind == "register":
                if "r" in o.access:
                    self.reads.add(_GPR[o.reg][0])
                if "w" in o.access:
                    self.writes.add(_GPR[o.reg][0])
            elif o.kind in ("memory", "address"):
                self.reads |= o.regs()
        if self.flags_read:
            self.reads.add("flags")
        if self.flags_written or self.flags_maybe:
            self.writes.add("flags")

    def _implicit(self, mn, ops):
        def stack(access):
            slot = Operand("[rsp]", "memory", 8, base="rsp", hidden=True)
            slot.access = access
            self.hidden.append(slot)
            self.reads.add("rsp")
            self.writes.add("rsp")
        if mn in ("shl", "sal", "shr", "sar", "rol", "ror", "rcl", "rcr", "shld", "shrd") and ops[-1].kind == "register":
            self.flags_maybe, self.flags_written = self.flags_written, set()  # a count of 0 writes nothing
        if mn == "push":
            stack("w")
        elif mn == "pop":
            stack("r")
        elif mn == "call":
            self.control = "call"
            if ops[0].kind == "target":
                self.direct = _target(ops[0])
            stack("w")
        elif mn == "ret":
            self.control = "ret"
            stack("r")
        elif mn == "leave":
            stack("r")
            self.reads.add("rbp")
            self.writes.add("rbp")
        elif mn == "jmp":
            self.control = "jmp"
            if ops[0].kind == "target":
                self.direct = _target(ops[0])
        elif mn in ("loop", "jrcxz"):  # conditional branches on %rcx: their mnemonic is their condition
            self.control, self.direct = "cond", _target(ops[0])
            self.cond, self.cond_key = mn, mn
            self.reads.add("rcx")
            if mn == "loop":
                self.writes.add("rcx")
        elif mn in ("hlt", "ud2"):
            self.control = "stop"
        elif mn in ("mul", "div", "idiv") or mn == "imul" and len(ops) == 1:
            self.reads.add("rax")
            self.writes.add("rax")
            if ops[0].size != 1:
                self.writes.add("rdx")
                if mn in ("div", "idiv"):
                    self.reads.add("rdx")
        elif mn in ("cdqe", "cwde"):
            self.reads.add("rax")
            self.writes.add("rax")
        elif mn in ("cqo", "cdq"):
            self.reads.add("rax")
            self.writes.add("rdx")
        elif mn == "cmpxchg":
            self.reads.add("rax")
            self.writes.add("rax")
        elif mn in ("vzeroupper", "vzeroall"):
            self.writes |= {f"xmm{n}" for n in range(16)}
        elif mn == "cpuid":
            self.reads |= {"rax", "rcx"}
            self.writes |= {"rax", "rbx", "rcx", "rdx"}
        elif mn == "syscall":
            self.reads |= {"rax"}
            self.writes |= {"rax", "rcx", "r11"}

    def _string(self, mn, ops):
        """String instructions: Zydis shows no operand; both memory operands
        (and the accumulator) are hidden."""
        mem = [o for o in ops if o.kind == "memory"]
        acc = [o for o in ops if o.kind == "register"]
        for o in mem:
            o.hidden = True
            o.seg = None if o.seg in ("es", "ds") else o.seg
        if mn == "movs":
            mem[0].access, mem[1].access = "w", "r"
        elif mn == "stos":
            mem[0].access = "w"
        else:
            for o in mem:
                o.access = "r"
        if mn == "cmps" or mn == "scas":
            self.flags_written |= set(FLAGS)
        for o in acc:
            self.reads.add(_GPR[o.reg][0]) if mn in ("stos", "scas") else self.writes.add(_GPR[o.reg][0])
        for o in mem:
            self.reads.add(o.base)
            self.writes.add(o.base)
        if self.rep:
            self.reads.add("rcx")
            self.writes.add("rcx")
        self.hidden, self.ops = mem, []
        ops.clear()

    # ------------------------------------------------------------ reports
    def klass(self):
        if self.control == "cond":
            return "conditional branch"
        if self.control == "jmp":
            return "unconditional branch"
        if self.control in ("call", "ret"):
            return "call/return"
        if self.mn in STRING:
            return "string"
        if self.x87:
            return "x87"
        if self.mn == "vzeroupper":
            return "SSE/AVX packed"
        if any(o.kind == "register" and o.reg[1:3] == "mm" for o in self.ops):
            return "SSE/AVX scalar" if scalar(self.mn) else "SSE/AVX packed"
        if self.mn in ("cmp", "test", "bt", "ucomisd", "comisd"):
            return "compare/test"
        if self.mn in ("mul", "imul", "div", "idiv", "mulx"):
            return "multiply/divide"
        if self.mn in ("shl", "sal", "shr", "sar", "rol", "ror", "rcl", "rcr", "shld", "shrd"):
            return "shift"
        if self.mn in ("mov", "movabs", "push", "pop", "movzx", "movsx", "movsxd", "xchg", "bswap") or \
                self.mnemonic.startswith("cmov"):
            return "move"
        if self.mn in ("nop", "endbr64", "syscall", "hlt", "ud2", "cpuid", "leave", "xadd", "cmpxchg", "popcnt"):
            return "other"
        return "ALU"

    def memory(self):
        """(access, mode, size) of each operand that reaches memory."""
        out = []
        for o in self.ops + self.hidden:
            if o.kind != "memory":
                continue
            access = {"r": "load", "w": "store", "rw": "modify"}[o.access]
            out.append((access, o.mode(), o.size))
        return out

    def data_type(self):
        if self.x87:  # its memory operand's type; on the stack registers, extended
            mem = [o for o in self.ops if o.kind == "memory"]
            if mem and self.mn.startswith(("fi", "fldcw", "fnst", "fldenv", "fbld", "fbstp", "frstor", "fnsave")):
                return "x87 integer/control"
            return {4: "float", 8: "double", 10: "extended"}[mem[0].size if mem else 10] + " (x87)"
        if self.mn in ("vzeroupper", "vzeroall"):
            return "vector128 integer"  # its hidden operands: xmm0..15
        if self.control or self.mn in ("nop", "endbr64") or not (self.ops or self.hidden):
            return "none"
        vec = [o for o in self.ops if o.kind == "register" and o.reg[1:3] == "mm"]
        if vec:
            if scalar(self.mn):
                if self.mn in ("movd", "movq"):
                    return f"int{32 if self.mn == 'movd' else 64} (vector register)"
                name = self.mn.replace("movsd_sse", "movsd")
                if name.startswith("cvt"):  # the element of its first floating-point operand
                    src, dst = name[3:].lstrip("t").split("2")
                    return ELEMENT.get(dst if self.ops[0] in vec else src, ELEMENT.get(src))
                return "double" if name == "movlpd" else ELEMENT[name[-2:]]
            width = 8 * max(o.size for o in self.ops if o.size)
            name = self.mn[1:] if self.mn.startswith("v") else self.mn  # VEX: as its SSE form
            elem = "integer" if name.startswith(("p", "movdq")) else "double" if name.endswith("pd") else "float"
            return f"vector{width} {elem}"
        first = self.ops[0] if self.ops else self.hidden[0]
        if first.kind == "immediate" or first.size is None:
            mem = [o for o in self.ops + self.hidden if o.kind == "memory"]
            if not mem:
                return "none"
            first = mem[0]
        return f"int{8 * first.size}"


def _target(op):
    return int(op.text.split()[0], 16) if op.kind == "target" else None


def sections(prog):
    """{name: (start, end)} of PROG's sections (objdump -h)."""
    heads = subprocess.run(["objdump", "-h", "-w", prog], capture_output=True, text=True, check=True).stdout
    out = {}
    for line in heads.splitlines():
        f = line.split()
        if len(f) >= 7 and f[0].isdigit():
            out[f[1]] = (int(f[3], 16), int(f[3], 16) + int(f[2], 16))
    return out


def disassemble(prog):
    """{address: (text, length, section)} of every instruction objdump
    shows in PROG's executable sections (a length is the next address less
    its own; a section's last instruction ends with the section)."""
    ends = {name: end for name, (_, end) in sections(prog).items()}
    out = subprocess.run(["objdump", "-d", "-M", "intel", "--no-show-raw-insn", "-w", prog],
                         capture_output=True, text=True, check=True).stdout
    lines, section = [], None
    for line in out.splitlines():
        if line.startswith("Disassembly of section "):
            section = line.split()[-1].rstrip(":")
            continue
        f = line.split("\t")
        if len(f) >= 2 and f[0].strip().endswith(":"):
            try:
                lines.append((int(f[0].strip()[:-1], 16), f[1].strip(), section))
            except ValueError:
                pass
    texts = {}
    for i, (addr, text, sec) in enumerate(lines):
        nxt = lines[i + 1][0] if i + 1 < len(lines) and lines[i + 1][2] == sec else ends[sec]
        texts[addr] = (text, nxt - addr, sec)
    return texts


def procedures(prog):
    """(start, end, name) of every function symbol in .text, a symbol
    without a size (crtstuff's) extending to the next one: the procedures
    atomx instruments."""
    heads = subprocess.run(["readelf", "-W", "-S", prog], capture_output=True, text=True, check=True).stdout
    text = next(l for l in heads.splitlines() if " .text " in l)
    idx = int(re.search(r"\[\s*(\d+)\]", text).group(1))
    f = text.split("]", 1)[1].split()
    lo, hi = int(f[2], 16), int(f[2], 16) + int(f[4], 16)
    out = subprocess.run(["readelf", "-W", "-s", prog], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[6] == str(idx):
            start = int(f[1], 16)
            size, name = int(f[2], 0), f[7].split("@")[0]
            # aliases (C1/C2 constructors): one procedure, the first name in sorted order
            syms[start] = min(syms.get(start, (size, name)), (size, name), key=lambda x: x[1])
    starts = sorted(syms)
    procs = []
    for i, s in enumerate(starts):
        size, name = syms[s]
        end = s + size if size else (starts[i + 1] if i + 1 < len(starts) else hi)
        procs.append((s, end, name))
    return procs


# --------------------------------------------------------- flag liveness
def within(addrs, start, end):
    """The addresses of the sorted list `addrs` in [start, end)."""
    return addrs[bisect.bisect_left(addrs, start):bisect.bisect_left(addrs, end)]


def never_read(funcs, insts, entries, plt, indirect):
    """{address: True when none of the flags it writes can be read} for the
    flag-writing instructions of `funcs` [(start, end, name)]."""
    out = {}
    every = sorted(insts)
    for start, end, _ in funcs:
        addrs = within(every, start, end)
        here = set(addrs)

        def outside(t):
            return set() if t in entries or any(lo <= t < hi for lo, hi in plt) else set(ALL6)

        succ = {}
        for i, a in enumerate(addrs):
            ins = insts[a]
            nxt = addrs[i + 1] if i + 1 < len(addrs) else None
            s, extra = [], set()
            if ins.control in ("call", "ret", "stop"):
                pass
            elif ins.control in ("jmp", "cond"):
                targets = [ins.direct] if ins.direct is not None else sorted(indirect.get(a, ()))
                if ins.direct is None and ins.control == "cond":
                    raise ValueError(f"{a:#x}: an indirect conditional branch")
                for t in targets:
                    if t in here:
                        s.append(t)
                    else:
                        extra |= outside(t)
                if ins.control == "cond":
                    if nxt is not None:
                        s.append(nxt)
                    else:
                        extra |= set(ALL6)
            elif nxt is not None:
                s.append(nxt)
            else:
                extra |= set(ALL6)
            succ[a] = (s, extra)
        live_in = {a: set() for a in addrs}
        changed = True
        while changed:
            changed = False
            for a in reversed(addrs):
                ins = insts[a]
                s, extra = succ[a]
                lo = set(extra).union(*(live_in[t] for t in s)) if s else set(extra)
                li = (lo - ins.flags_written) | ins.flags_read
                if li != live_in[a]:
                    live_in[a], changed = li, True
        for a in addrs:
            ins = insts[a]
            w = ins.flags_written | ins.flags_maybe
            if w:
                s, extra = succ[a]
                lo = set(extra).union(*(live_in[t] for t in s)) if s else set(extra)
                out[a] = not (w & lo)
    return out


# ---------------------------------------------------------------- reports
class Unknown(Exception):
    """Instructions the classifier cannot describe (its tables lack them)."""


def derive(prog, texts, counts, names_ok, indirect, dump=None, causer=None):
    """ease's totals and tables from objdump's text weighted by counts
    (and, with a causer, ease_causes.Causes, the memory references' causes)."""
    syms = procedures(prog)
    funcs = [s for s in syms if names_ok(s[2])]
    entries = {s for s, _, _ in syms}
    plt = [extent for name, extent in sections(prog).items() if name.startswith(".plt")]
    insts, unknown = {}, []
    every = sorted(texts)
    for start, end, _ in funcs:
        for a in within(every, start, end):
            text, length, _ = texts[a]
            if a not in insts:
                try:
                    insts[a] = Inst(a, text, length)
                except (ValueError, KeyError, IndexError, StopIteration) as e:
                    unknown.append(f"{a:#x} {text!r}: {e!r}")
    if unknown:
        raise Unknown(unknown)
    dead = never_read(funcs, insts, entries, plt, indirect)
    T = collections.Counter()
    tables = collections.defaultdict(collections.Counter)
    per_proc = collections.defaultdict(collections.Counter)
    ours = sorted(insts)
    for start, end, name in funcs:
        for a in within(ours, start, end):
            n = counts.get(a, 0)
            if not n:
                continue
            ins = insts[a]
            if dump:
                print(f"{a:#x} x{n} {ins.text!r}: {ins.mnemonic} {ins.klass()} modes {[o.mode() for o in ins.ops + ins.hidden]}"
                      f" mem {ins.memory()} reads {sorted(ins.reads)} writes {sorted(ins.writes)} flags"
                      f" r {sorted(ins.flags_read)} w {sorted(ins.flags_written)} maybe {sorted(ins.flags_maybe)}"
                      f" never read {dead.get(a)} type {ins.data_type()}", file=dump)
            per_proc[name]["instructions"] += n
            per_proc[name]["bytes"] += n * ins.length
            T["instructions"] += n
            T["bytes"] += n * ins.length
            if ins.rep:
                T["rep-prefixed"] += n
            tables["class"][ins.klass()] += n
            prefix = {"repz": "repe", "repnz": "repne"}.get(ins.rep, ins.rep)  # Zydis's names
            tables["mnemonic"][(prefix + " " if ins.rep else "") + ins.mnemonic] += n  # `rep stosq`, `repne scasb`
            for o in ins.ops + ins.hidden:
                tables["addressing mode"][o.mode()] += n
            if causer:
                for cause in causer.causes(ins):
                    tables["memory reference by cause"][cause] += n
                    per_proc[name]["cause:" + cause] += n
            for access, mode, size in ins.memory():
                T["memory references"] += n
                T[{"load": "loads", "store": "stores", "modify": "modifies"}[access]] += n
                tables["memory reference size"][str(size)] += n
                tables["memory reference"][f"{access}|{mode}|{size}"] += n
            for r in ins.reads:
                tables["register read"][r] += n
            for r in ins.writes:
                tables["register written"][r] += n
            for f in ins.flags_read:
                tables["flag read"][f] += n
            for f in ins.flags_written | ins.flags_maybe:
                tables["flag written"][f] += n
            if ins.flags_read:
                T["flag-reading instructions"] += n
            if ins.flags_written or ins.flags_maybe:
                T["flag-writing instructions"] += n
                key = " ".join(f for f in FLAGS if f in ins.flags_written) or "none"
                if ins.flags_maybe:
                    key += " (maybe " + " ".join(f for f in FLAGS if f in ins.flags_maybe) + ")"
                tables["flag writer"][f"{ins.mnemonic}: {key}"] += n
                if dead[a]:
                    T["flag writes never read"] += n
                    tables["flag writes never read"][ins.mnemonic] += n
            if ins.cond:
                tables["condition tested"][ins.cond_key] += n
            if ins.control:
                if ins.control != "stop":
                    T["control transfers"] += n
                if ins.control == "cond":
                    T["conditional branches"] += n
            tables["data type"][ins.data_type()] += n
    return T, tables, per_proc


REPORTS = [  # (report, totals, tables) compared
    ("2 (path size)", ["bytes"], []),
    ("3 (instruction type)", ["rep-prefixed"], ["class", "mnemonic"]),
    ("4 (addressing mode)", [], ["addressing mode"]),
    ("5 (memory reference size)", ["memory references"], ["memory reference size"]),
    ("6 (memory reference by load/store)", ["loads", "stores", "modifies"], ["memory reference"]),
    ("7 (register usage)", [], ["register read", "register written"]),
    ("8 (condition codes)", ["flag-writing instructions", "flag writes never read", "flag-reading instructions"],
     ["flag read", "flag written", "flag writer", "condition tested", "flag writes never read"]),
    ("10 (instructions between branches)", ["control transfers", "conditional branches"], []),
    ("11 (data type)", [], ["data type"]),
]


def corrupt(j, spec):
    m = re.fullmatch(r"(?:([^:]+):)?(.+)\+(\d+)", spec)
    if not m:
        raise SystemExit(f"--corrupt {spec!r}: TOTAL+N or TABLE:KEY+N")
    table, key, n = m.group(1), m.group(2), int(m.group(3))
    d = j["tables"][table] if table else j["totals"]
    d[key] = d.get(key, 0) + n


CAUSES = ("6 (memory reference by cause)", [], ["memory reference by cause"])


def compare(j, T, tables, per_proc, causes=False):
    failures = []
    for report, totals, tabs in REPORTS + ([CAUSES] if causes else []):
        for t in totals:
            a, b = j["totals"].get(t, 0), T.get(t, 0)
            if a != b:
                failures.append(f"report {report}: total {t!r}: ease {a}, oracle {b} ({a - b:+d})")
        for tab in tabs:
            mine, theirs = tables.get(tab, {}), j["tables"].get(tab, {})
            for k in sorted(set(mine) | set(theirs)):
                a, b = theirs.get(k, 0), mine.get(k, 0)
                if a != b:
                    failures.append(f"report {report}: {tab} {k!r}: ease {a}, oracle {b} ({a - b:+d})")
    procs = collections.defaultdict(collections.Counter)
    for p in j.get("procs", []):
        procs[p["name"]].update({k: p[k] for k in ("instructions", "bytes")})
        if causes:
            procs[p["name"]].update({"cause:" + k: v for k, v in p.get("causes", {}).items()})
    if causes:  # every memory reference has one cause
        by_cause = sum(j["tables"].get("memory reference by cause", {}).values())
        if by_cause != j["totals"].get("memory references", 0):
            failures.append(f"report {CAUSES[0]}: the causes sum to {by_cause}, ease's memory references total is "
                            f"{j['totals'].get('memory references', 0)}")
        keys = sorted({k for c in list(procs.values()) + list(per_proc.values()) for k in c if k.startswith("cause:")})
        for name in sorted(set(procs) | set(per_proc)):
            for k in keys:
                a, b = procs[name][k], per_proc[name][k]
                if a != b:
                    failures.append(f"report {CAUSES[0]}: procedure {name!r}: {k[6:]}: ease {a}, oracle {b} ({a - b:+d})")
    for name in sorted(set(procs) | set(per_proc)):
        for k in ("bytes", "instructions"):  # report 1, to tell a count apart from a classification
            a, b = procs[name][k], per_proc[name][k]
            if a != b:
                failures.append(f"report {'2 (path size)' if k == 'bytes' else '1 (path length)'}: procedure "
                                f"{name!r}: ease {a} {k}, oracle {b} ({a - b:+d})")
    return failures


def main():
    ap = harness_args(__doc__.split("\n\n")[0])
    ap.add_argument("--corrupt", action="append", default=[], help="TOTAL+N or TABLE:KEY+N (must-fail twins)")
    ap.add_argument("--dump", help="write each executed instruction's facts to this file (to diagnose a difference)")
    ap.add_argument("--static", action="store_true", help="ease's static measurements: every instruction once")
    ap.add_argument("--causes", action="store_true",
                    help="also the memory references by cause (ease_causes.py: readelf's CFI, llvm-dwarfdump's variables)")
    o = ap.parse_args()
    run, failures = start(o, "ease", valgrind_opts=["--skip-plt=no"], discard=["ease.out", "ease.html", "ease.cg"],
                          tool_args=["--static"] if o.static else [])
    if o.static and failures is not None:
        failures = []  # the program's own code does not run: its output is not the native one's
    try:
        if failures is None:
            return 1
        outputs = list(run.json_outputs(0))
        if len(outputs) != 1:
            print(f"FAIL {o.prog}: {len(outputs)} ease.json files (one process expected)")
            return 1
        j = outputs[0]
        for spec in o.corrupt:
            corrupt(j, spec)
        base = os.path.basename(run.prog)
        counts, indirect = collections.Counter(), collections.defaultdict(set)
        files = run.valgrind_files()
        for path in files:
            for ev in callgrind_file.read(path):
                if not ev.ob or os.path.basename(ev.ob) != base:
                    continue
                if type(ev) is callgrind_file.Cost:
                    counts[ev.addr] += ev.costs.get("Ir", 0)
                elif type(ev) is callgrind_file.Jump:
                    indirect[ev.addr].add(ev.target)
        texts = disassemble(run.prog)
        reps = {a for a, (t, _, _) in texts.items() if t.split()[0].startswith("rep")}
        for a, n in callgrind_file.executions(files, base, reps).items():
            counts[a] = n
        cg, native = run.results["callgrind"], run.results["native"]
        if cg[0] != native[0] or not any(os.path.getsize(f) for f in files):
            print(f"FAIL {o.prog}: callgrind did not run the program (status {cg[0]}, native {native[0]}): "
                  f"{cg[2].decode(errors='replace')[-400:]}")
            return 1
        if o.static:
            if j.get("weighting") != "static":
                print(f"FAIL {o.prog}: ease.json's weighting is {j.get('weighting')!r}, not 'static'")
                return 1
            counts = collections.Counter({a: 1 for a in texts})
        elif j.get("weighting") != "dynamic":
            print(f"FAIL {o.prog}: ease.json's weighting is {j.get('weighting')!r}, not 'dynamic'")
            return 1
        names = {p["name"] for p in j["procs"]}
        with open(o.dump, "w") if o.dump else open(os.devnull, "w") as dump:
            try:
                causer = ease_causes.Causes(run.prog) if o.causes else None
                T, tables, per_proc = derive(run.prog, texts, counts, lambda n: n not in run.unmoved, indirect, o.dump and dump,
                                             causer)
            except Unknown as e:
                print(f"FAIL {o.prog}: {len(e.args[0])} instruction(s) the classifier does not know")
                for line in e.args[0][:40]:
                    print("   ", line)
                return 1
        failures += compare(j, T, tables, per_proc, o.causes)
        if failures:
            print(f"FAIL {o.prog}: {len(failures)} row(s) differ")
            for f in failures[:60]:
                print("   ", f)
            return 1
        rows = sum(len(tables[t]) for _, _, tabs in REPORTS + ([CAUSES] if o.causes else []) for t in tabs)
        if o.causes:
            print("causes: " + ", ".join(f"{k} {v}" for k, v in tables["memory reference by cause"].most_common()))
        print(f"PASS {o.prog}: {'static ' if o.static else ''}reports 2-8, 10, 11 equal to the classifier's: {T['instructions']} instructions, "
              f"{T['bytes']} bytes, {rows} table rows, {len(names)} procedures")
        return 0
    finally:
        run.close()


if __name__ == "__main__":
    sys.exit(main())
