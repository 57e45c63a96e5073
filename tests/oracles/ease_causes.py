"""The causes of memory references (ease's Figure 12), independently of
atomx: for ease_oracle.py --causes.  Reads the program's CFI as
`readelf --debug-dump=frames-interp` interprets it, its variables' places
as `llvm-dwarfdump --debug-info` prints them (location lists resolved to
address ranges), and each instruction as ease_oracle.py's classifier reads
objdump's text, and applies the rules tools/ease/README.md states
("Memory references by cause"), in that order:

  call linkage     call's pushed return address, ret's popped one, leave's
                   pop of %rbp;
  global           %fs/%gs-based, %rip-relative, or no base register;
  save/restore     push / 64-bit mov store of %rbx, %rbp, %r12-%r15 to the
                   slot the CFI says holds that register after the
                   instruction; pop / 64-bit mov load of one from the slot
                   the CFI says holds it at the instruction (%rbp in a
                   function whose CFA is ever %rbp-based: call linkage, the
                   frame pointer's set-up and undoing);
  stack variable   %rsp-based, or %rbp-based while the CFA is %rbp-based,
                   overlapping the slot of a variable or parameter whose
                   location at that pc is DW_OP_fbreg (frame base
                   DW_OP_call_frame_cfa, DW_OP_reg6/7, DW_OP_breg6/7) or
                   DW_OP_breg6/7 (array elements: the displacement's bytes);
  spill/temporary  any other such %rsp/%rbp-based reference;
  through a pointer  the rest.
"""
import bisect
import re
import subprocess

CALLEE_SAVED = {"rbx", "rbp", "r12", "r13", "r14", "r15"}


class Cfi:
    """readelf's interpreted CFI: for each FDE its [lo, hi) and rows
    (loc, cfa register or None, cfa offset, {register: CFA offset})."""

    def __init__(self, prog):
        out = subprocess.run(["readelf", "-w", "--debug-dump=frames-interp", prog], capture_output=True, text=True,
                             check=True).stdout
        self.fdes = []  # (lo, hi, rows, frame_pointer)
        cies = {}  # offset -> its initial rows (an FDE without instructions shows none: the CIE's apply)
        cols, rows = None, None
        for line in out.splitlines():
            m = re.search(r"^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ CIE ", line)
            if m:
                rows, cols = [], None
                cies[int(m.group(1), 16)] = rows
                continue
            m = re.search(r" FDE cie=(\w+) pc=([0-9a-f]+)\.\.([0-9a-f]+)", line)
            if m:
                rows, cols = [], None
                self.fdes.append((int(m.group(2), 16), int(m.group(3), 16), rows, int(m.group(1), 16)))
                continue
            f = line.split()
            if not f or rows is None:
                continue
            if f[0] == "LOC":
                cols = f[1:]
                continue
            if cols and re.fullmatch(r"[0-9a-f]+", f[0]) and len(f) == len(cols) + 1:
                loc, vals = int(f[0], 16), dict(zip(cols, f[1:]))
                m = re.fullmatch(r"(\w+)\+(\d+)", vals["CFA"])
                saved = {r: int(v[1:]) for r, v in vals.items() if r != "CFA" and re.fullmatch(r"c-?\d+", v)}
                rows.append((loc, m.group(1) if m else None, int(m.group(2)) if m else 0, saved))
        self.fdes = [(lo, hi, rows or [(lo,) + r[1:] for r in cies.get(cie, [])[:1]]) for lo, hi, rows, cie in self.fdes]
        self.fdes = [(lo, hi, rows, any(r[1] == "rbp" for r in rows)) for lo, hi, rows in self.fdes]
        self.fdes.sort()
        self.starts = [f[0] for f in self.fdes]

    def fde(self, pc):
        i = bisect.bisect_right(self.starts, pc) - 1
        return self.fdes[i] if i >= 0 and pc < self.fdes[i][1] else None

    def at(self, pc):
        """(cfa register, offset, saved) at pc, or None."""
        f = self.fde(pc)
        if not f:
            return None
        row = None
        for r in f[2]:
            if r[0] > pc:
                break
            row = r
        return row[1:] if row else None


_DIE = re.compile(r"^0x([0-9a-f]+):( +)(DW_TAG_\w+|NULL)")
_ATTR = re.compile(r"^\s+(DW_AT_\w+)\s+\((.*)$")
_RANGE = re.compile(r"\[0x([0-9a-f]+), 0x([0-9a-f]+)\)(?::\s*(.*?))?\)?$")


def _dies(prog):
    """llvm-dwarfdump's DIEs: a list of dicts {off, depth, tag, attrs, parent}."""
    out = subprocess.run(["llvm-dwarfdump", "--debug-info", prog], capture_output=True, text=True, check=True).stdout
    dies, stack, cur, attr = [], [], None, None
    for line in out.splitlines():
        m = _DIE.match(line)
        if m:
            depth = len(m.group(2))
            while stack and stack[-1]["depth"] >= depth:
                stack.pop()
            if m.group(3) == "NULL":
                cur = attr = None
                continue
            cur = {"off": int(m.group(1), 16), "depth": depth, "tag": m.group(3), "attrs": {},
                   "parent": stack[-1] if stack else None, "children": []}
            if stack:
                stack[-1]["children"].append(cur)
            dies.append(cur)
            stack.append(cur)
            attr = None
            continue
        if cur is None:
            continue
        m = _ATTR.match(line)
        if m:
            attr = m.group(1)
            cur["attrs"][attr] = [m.group(2)]
        elif attr and line.strip().startswith("["):
            cur["attrs"][attr].append(line.strip())
    return dies


def _place(expr, fb):
    """(base, offset) of a one-operation location: base 'cfa', 'rsp' or 'rbp'."""
    expr = expr.strip().rstrip(")").strip()
    m = re.fullmatch(r"DW_OP_fbreg ([+-]?\d+)", expr)
    if m:
        return None if fb is None else (fb[0], fb[1] + int(m.group(1)))
    m = re.fullmatch(r"DW_OP_breg([67]) R[SB]P([+-]\d+)", expr)
    if m:
        return ("rsp" if m.group(1) == "7" else "rbp", int(m.group(2)))
    return None


def _frame_base(expr):
    expr = expr.strip().rstrip(")").strip()
    if expr == "DW_OP_call_frame_cfa":
        return ("cfa", 0)
    m = re.fullmatch(r"DW_OP_reg([67]) R[SB]P", expr)
    if m:
        return ("rsp" if m.group(1) == "7" else "rbp", 0)
    return _place(expr, None)


def stack_variables(prog):
    """[(lo, hi, base, offset, size, name)] of every variable or parameter
    in a stack slot."""
    dies = _dies(prog)
    by_off = {d["off"]: d for d in dies}

    def ref(v):
        m = re.match(r"0x([0-9a-f]+)", v)
        return by_off.get(int(m.group(1), 16)) if m else None

    def attr(d, name):
        while d is not None:
            if name in d["attrs"]:
                return d["attrs"][name]
            o = d["attrs"].get("DW_AT_abstract_origin") or d["attrs"].get("DW_AT_specification")
            d = ref(o[0]) if o else None
        return None

    def size(t, depth=0):
        if t is None or depth > 20:
            return None
        if "DW_AT_byte_size" in t["attrs"]:
            return int(t["attrs"]["DW_AT_byte_size"][0].rstrip(")"), 0)
        inner = size(ref(t["attrs"]["DW_AT_type"][0]), depth + 1) if "DW_AT_type" in t["attrs"] else None
        if t["tag"] == "DW_TAG_array_type" and inner:
            n = 1
            for c in t["children"]:
                if c["tag"] == "DW_TAG_subrange_type":
                    a = c["attrs"]
                    if "DW_AT_count" in a:
                        n *= int(a["DW_AT_count"][0].rstrip(")"), 0)
                    elif "DW_AT_upper_bound" in a:
                        n *= int(a["DW_AT_upper_bound"][0].rstrip(")"), 0) + 1
            return inner * n
        return inner

    def ranges(d):
        a = d["attrs"]
        if "DW_AT_low_pc" in a and "DW_AT_high_pc" in a:
            lo = int(a["DW_AT_low_pc"][0].rstrip(")"), 16)
            h = a["DW_AT_high_pc"][0].rstrip(")")
            return [(lo, int(h, 16) if h.startswith("0x") else lo + int(h))]
        if "DW_AT_ranges" in a:
            return [(int(m.group(1), 16), int(m.group(2), 16)) for m in map(_RANGE.search, a["DW_AT_ranges"][1:]) if m]
        return []

    def scope_of(d):
        """(frame base, pc ranges) of the innermost scope with ranges, up to the subprogram."""
        p, rs = d["parent"], None
        while p is not None:
            if rs is None and p["tag"] in ("DW_TAG_lexical_block", "DW_TAG_inlined_subroutine", "DW_TAG_subprogram"):
                rs = ranges(p) or None
            if p["tag"] == "DW_TAG_subprogram":
                fb = p["attrs"].get("DW_AT_frame_base")
                return (_frame_base(fb[0]) if fb else None), rs or []
            p = p["parent"]
        return None, []

    out = []
    for d in dies:
        if d["tag"] not in ("DW_TAG_variable", "DW_TAG_formal_parameter") or "DW_AT_location" not in d["attrs"]:
            continue
        if d["parent"] is None or d["parent"]["tag"] == "DW_TAG_compile_unit":
            continue
        loc = d["attrs"]["DW_AT_location"]
        fb, scope = scope_of(d)
        t = attr(d, "DW_AT_type")
        sz = (size(ref(t[0])) if t else None) or 1
        name = (attr(d, "DW_AT_name") or ['"?"'])[0].strip('")')
        if len(loc) == 1 and not re.match(r"0x[0-9a-f]+:", loc[0]):
            p = _place(loc[0], fb)
            if p:
                out += [(lo, hi, p[0], p[1], sz, name) for lo, hi in scope]
        else:
            for line in loc[1:]:
                m = _RANGE.search(line)
                if m and m.group(3):
                    p = _place(m.group(3), fb)
                    if p:
                        out.append((int(m.group(1), 16), int(m.group(2), 16), p[0], p[1], sz, name))
    return out


class Causes:
    def __init__(self, prog):
        self.cfi = Cfi(prog)
        self.vars = stack_variables(prog)

    def _variable(self, pc, reg, disp, size, row):
        to_cfa = row is not None and row[0] == reg
        at = disp - row[1] if to_cfa else disp
        for lo, hi, base, off, sz, _ in self.vars:
            if not lo <= pc < hi:
                continue
            if base == "cfa":
                if not to_cfa:
                    continue
                start = off
            elif base == reg:
                start = off - row[1] if to_cfa else off
            else:
                continue
            if at < start + sz and start < at + size:
                return True
        return False

    def of(self, ins, o):
        """The cause of memory operand o of instruction ins (ease_oracle.Inst)."""
        mn = ins.mn
        if o.hidden and mn in ("call", "ret", "leave"):
            return "call linkage"
        if o.seg in ("fs", "gs") or o.base == "rip" or o.base is None:
            return "global"
        if o.base not in ("rsp", "rbp"):
            return "through a pointer"
        row = self.cfi.at(ins.addr)
        if o.base == "rbp" and not (row and row[0] == "rbp"):
            return "through a pointer"
        disp = (-8 if mn == "push" else 0) if o.hidden else o.disp
        regs = [x.reg for x in ins.ops if x.kind == "register"]
        reg = regs[0] if regs and mn in ("push", "pop", "mov") else None
        if row and row[0] == o.base and reg in CALLEE_SAVED and o.index is None:
            at = disp - row[1]
            save = False
            if o.access == "w" and mn in ("push", "mov"):
                nxt = self.cfi.at(ins.addr + ins.length)
                save = nxt is not None and nxt[2].get(reg) == at
            elif o.access == "r" and mn in ("pop", "mov"):
                save = row[2].get(reg) == at
            if save:
                fde = self.cfi.fde(ins.addr)
                return "call linkage" if reg == "rbp" and fde and fde[3] else "save/restore"
        return "stack variable" if self._variable(ins.addr, o.base, disp, o.size or 1, row) else "spill/temporary"

    def causes(self, ins):
        return [self.of(ins, o) for o in ins.ops + ins.hidden if o.kind == "memory"]
