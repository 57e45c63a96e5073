#!/usr/bin/env python3
"""The profiling tools (prof, gprof, inline) against Valgrind's callgrind.

    tooltest.py --atomx ATOMX --tool prof|gprof|inline PROG [--workload SCRIPT] [--runs N]
                [--set-aside PROC=REASON]... [--min-share PCT] [-- ARGS...]

Instruments PROG with the shipped tool (`atomx PROG -T TOOL`), runs the
instrumented program, the original, and the original under
`valgrind --tool=callgrind --dump-instr=yes` with the same workload (ARGS, or
a corpus workload script run in an empty directory: every process counts),
checks that the program's output (stdout, stderr, status) is unchanged, and
compares, exactly, for the procedures of PROG that Valgrind can name (sized
function symbols; aliases and `f.cold` parts merged, procedures atomx leaves
in place excluded):

  prof    instructions per procedure (TOOL.json) with callgrind's Ir, the Ir
          of a rep-prefixed string instruction counted once per execution
          on both sides (Valgrind counts one Ir per iteration: its
          executions are its Ir less its jumps to itself), and those
          executions compared per procedure on their own too;
          and `callgrind_annotate` on the tool's callgrind file: it must run,
          and its per-function totals must equal prof.json's;
  gprof   the same for instructions, plus calls per caller -> callee arc
          (callgrind's calls= lines), for pairs whose both ends are
          procedures of PROG, tail calls included: callgrind, like the tool,
          takes a jump to another function's entry for a call; but a jump
          from f into its cold part f.cold is none to the tool (f.cold is
          f), so callgrind's calls to the start of a .cold symbol are set
          aside; and callgrind_annotate --inclusive=yes on the tool's
          callgrind file (with calls= lines);
  inline  calls per call site and callee (callgrind's calls= lines under the
          call instruction's address; tail jumps are no call sites here),
          for callees in PROG.

Valgrind runs with --skip-plt=no, so that a PLT stub's instruction is not
counted in the calling function, and its functions are found by address,
not by name (it names _start's code differently, recursion levels f'2).
The three runs are tests/tools/dyninst/vgharness.py's.

--runs N runs the instrumented workload N times; --set-aside 'PROC=REASON'
leaves out a procedure (with its arcs and call sites) that behaves
differently by design (reads the file's own headers, x87 precision under
Valgrind, time or thread scheduling); one whose counts differ between the
runs and is not set aside fails; --min-share PCT (tests/setaside.py).
Exit status 0 when everything compared is equal.
"""
import bisect
import collections
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "dyninst"))
import vgharness  # noqa: E402
import callgrind_file  # noqa: E402


class Symbols(vgharness.Symbols):
    """vgharness.Symbols (address -> canonical name), and the starts of
    cold parts: callgrind takes a jump from f to f.cold for a call."""

    def __init__(self, prog):
        super().__init__(prog)
        self.cold_starts = {s for s, _, n in self.syms if n.endswith(".cold") or ".cold." in n}


def special_addresses(prog):
    """Addresses of rep/repz/repnz-prefixed instructions and of call
    instructions (objdump)."""
    rep, calls = set(), set()
    for addr, text in vgharness.disassembly(prog):
        words = text.split()
        if words[0] in vgharness.REP_PREFIXES:
            rep.add(addr)
        if words[0].startswith("call") or (len(words) > 1 and words[0] in ("bnd", "notrack") and words[1].startswith("call")):
            calls.add(addr)
    return rep, calls


class ValgrindLineMerges:
    """Where callgrind's source lines differ from the DWARF line table by
    Valgrind's convention, and what the table says there.

    Valgrind 3.19 keeps one line entry for consecutive rows of a line
    sequence that carry the same line number, under the first row's file:
    where gcc's rows switch files at one line number (an inlined header's
    line 207 next to the caller's line 207), callgrind names the first file
    for both.  lzip's sequence_optimizer: 0xb883 encoder.h:207, 0xb889
    encoder_base.h:207, 0xb890 encoder.h:207 (readelf's decoded table,
    addr2line and llvm-symbolizer all say encoder_base.h:207 for 0xb889);
    callgrind says encoder.h:207 there.  Rows are read with readelf (binutils,
    independent of atomx's libdw reader), the last row at an address holding
    (later rows at one address refine earlier ones, as in atomx and Valgrind).

    file_at(addr, file, line) gives the file the table names for an
    instruction callgrind puts at (file, line) when, and only when, the row
    covering addr is one Valgrind merged into an earlier row of the same
    line and callgrind shows exactly that earlier row's file: any other
    difference stays a difference.  The count of such rows is printed."""

    def __init__(self, prog):
        out = subprocess.run(["readelf", "--debug-dump=decodedline", prog], capture_output=True, text=True, check=True).stdout
        rows = []  # (address, file, line; None at a sequence's end), in the table's order
        for text in out.splitlines():
            w = text.split()
            if len(w) < 3 or not w[2].startswith("0x"):
                continue
            rows.append((int(w[2], 16), w[0], None if w[1] == "-" else int(w[1]) if w[1].isdigit() else 0))
        merged = {}  # row address -> (callgrind's file, the row's file, line)
        last = None  # the row before: (address, file, line), or None after a sequence's end
        run_file = None  # the file of the first row of the current run of one line
        k = 0
        while k < len(rows):
            addr = rows[k][0]
            j = k
            while j + 1 < len(rows) and rows[j + 1][0] == addr and rows[j + 1][2] is not None and rows[j][2] is not None:
                j += 1
            _, file, line = rows[j]
            k = j + 1
            if line is None:  # end of sequence: the next row starts a new run
                last = None
                continue
            if last is not None and last[2] == line and line:
                if file != run_file:
                    merged[addr] = (run_file, file, line)
            else:
                run_file = file
            last = (addr, file, line)
        self.starts = sorted(set(a for a, _, _ in rows))
        self.merged = merged
        self.moved = collections.Counter()  # (callgrind's file, the table's file, line) -> instructions

    def file_at(self, addr, file, line):
        i = bisect.bisect_right(self.starts, addr) - 1
        m = self.merged.get(self.starts[i]) if i >= 0 else None
        if m and os.path.basename(file) == m[0] and line == m[2]:
            self.moved[m] += 1
            return m[1]
        return os.path.basename(file)


def tool_counts(tool, data, syms, rep):
    """From one TOOL.json: Counter of comparable keys -> counts.
    keys: ("ir", proc), ("rep", proc), ("line", proc, file, line),
    ("arc", caller, callee), ("site", pc, callee)."""
    c = collections.Counter()
    if tool in ("prof", "gprof"):
        for p in data["procedures"]:
            name = syms(int(p["pc"], 16))
            if name:
                c[("ir", name)] += p["instructions"]
        # rep-prefixed instructions, once per execution of their block: also
        # on their own, to be compared with callgrind's executions of them.
        for b in data["blocks"]:
            pc, end = int(b["pc"], 16), int(b["end"], 16)
            n = bisect.bisect_left(rep, end) - bisect.bisect_left(rep, pc)
            if n and syms(pc):
                c[("rep", syms(pc))] += b["count"] * n
    if tool == "prof":
        # Per source line, for lines the line table names (a -g build).
        for ln in data["lines"]:
            name = syms(int(ln["procedure_pc"], 16))
            if name and ln["file"] != "???" and ln["line"]:
                c[("line", name, os.path.basename(ln["file"]), ln["line"])] += ln["instructions"]
    if tool == "gprof":
        for a in data["arcs"]:
            caller = syms(int(a["caller_pc"], 16))
            callee = syms(int(a["callee_pc"], 16)) if a.get("callee_pc") else None
            if caller and callee:  # tail calls too: callgrind counts a jump to a function's entry as a call
                c[("arc", caller, callee)] += a["calls"]
    if tool == "inline":
        for s in data["sites"]:
            callee = syms(int(s["callee_pc"], 16)) if s.get("callee_pc") else None
            if callee:
                c[("site", int(s["pc"], 16), callee)] += s["count"]
    return c


def main():
    ap = vgharness.harness_args(__doc__.split("\n\n")[0])
    ap.add_argument("--tool", required=True, choices=["prof", "gprof", "inline"])
    o = ap.parse_args()
    # --skip-plt=no: a PLT stub's instructions are its own, not the
    # caller's.  The tool's callgrind file lies beside its JSON file.
    run = vgharness.Run(o.atomx, o.prog, o.tool, workload=o.workload, args=o.args, runs=o.runs, timeout=o.timeout,
                        valgrind_opts=["--compress-strings=no", "--skip-plt=no"],
                        collect=[f"callgrind.out.atomx-{o.tool}"], keep=o.keep)
    try:
        try:
            run.run()
        except RuntimeError as e:
            print(f"FAIL {o.prog}: {e}")
            return 1
        return compare(o, run)
    finally:
        run.close()


def compare(o, run):
    failures = []
    if (msg := run.output_changed()):
        failures.append(msg)
    if run.results["callgrind"] != run.results["native"]:
        print("note: the program behaves differently under Valgrind (its output differs)")

    prog, unmoved = run.prog, run.unmoved
    syms = Symbols(prog)
    rep_set, call_addrs = special_addresses(prog)
    rep = sorted(rep_set)
    runs = []
    annotate_checked = 0
    for r in range(o.runs):
        total = collections.Counter()
        jsons = run.outputs[r]
        if not jsons:
            failures.append(f"the tool wrote no {o.tool}.json")
        failures += run.out_problems(r)
        for path in jsons:
            with open(path) as f:
                data = json.load(f)
            total.update(tool_counts(o.tool, data, syms, rep))
            if r == 0 and o.tool in ("prof", "gprof"):
                cgfile = os.path.join(os.path.dirname(path), f"callgrind.out.atomx-{o.tool}" + path[len(path.rstrip("0123456789")):]
                                      if path[-1].isdigit() else f"callgrind.out.atomx-{o.tool}")
                failures += check_annotate(cgfile, data, o.tool)
                annotate_checked += 1
        runs.append(total)
    tool = runs[0]

    # Valgrind's side, over every process.
    obj = os.path.basename(prog)
    merges = ValgrindLineMerges(prog) if o.tool == "prof" else None
    vg = collections.Counter()
    rep_line = {}  # rep instruction -> its line's key
    for path in run.valgrind_files():
        for ev in callgrind_file.read(path):
            if not ev.ob or os.path.basename(ev.ob) != obj:
                continue
            # Functions by address, not by callgrind's names: _start is
            # "(below main)"'s caller under another name, recursion levels
            # are f'2, code with no symbol is 0x....
            if type(ev) is callgrind_file.Cost:
                addr, ir, file, line = ev.addr, ev.costs.get("Ir", 0), ev.file, ev.line
                fn = syms(addr)
                if fn and o.tool != "inline":
                    line_key = (("line", fn, merges.file_at(addr, file, line), line)
                                if merges and file and file != "???" and line else None)
                    if addr in rep_set:  # counted below, once per execution
                        rep_line[addr] = line_key
                    else:
                        vg[("ir", fn)] += ir
                        if line_key and o.tool == "prof":
                            vg[line_key] += ir
            elif type(ev) is callgrind_file.Call:
                site, cob, target, count = ev.addr, ev.cob, ev.target, ev.count
                fn = syms(site)
                callee = syms(target) if cob and os.path.basename(cob) == obj else None
                if not (fn and callee) or target in syms.cold_starts:
                    continue
                if o.tool == "gprof":
                    vg[("arc", fn, callee)] += count
                elif o.tool == "inline":
                    vg[("site", site, callee)] += count

    # rep-prefixed string instructions: Valgrind counts an Ir per iteration,
    # the tools one per execution; callgrind's jumps give the executions.
    if o.tool != "inline":
        for addr, n in run.rep_executions().items():
            fn = syms(addr)
            if fn:
                vg[("ir", fn)] += n
                vg[("rep", fn)] += n
                if rep_line.get(addr) and o.tool == "prof":
                    vg[rep_line[addr]] += n

    all_names = {syms.canon[n] for _, _, n in syms.syms if n not in unmoved}

    def owner(k):  # the procedure a key belongs to: its own, the caller's, the call site's
        return syms(k[1]) if k[0] == "site" else k[1]

    # What is compared is decided per procedure (tests/setaside.py): all of
    # a procedure's keys must agree between the runs.
    per_proc = []
    for r in runs:
        m = collections.defaultdict(list)
        for k, v in r.items():
            m[owner(k)].append((str(k), v))
        per_proc.append({p: sorted(v) for p, v in m.items()})
    weight = collections.Counter()
    for k, v in tool.items():
        if k[0] in ("ir", "site"):
            weight[owner(k)] += v
    sel = vgharness.setaside.Selection(all_names, per_proc, lambda n: weight[n], o.set_aside, o.min_share, syms.canon,
                             "calls" if o.tool == "inline" else "instructions executed")
    failures += sel.problems
    names = set(sel.compared)
    callees = all_names - set(sel.set_aside)
    keys = set(tool) | set(vg)

    def comparable(k):
        if k[0] == "site":  # call instructions (callgrind lists tail jumps as calls too)
            return k[1] in call_addrs and syms(k[1]) in names and k[2] in callees
        if k[0] == "arc":
            return k[1] in names and k[2] in callees
        return k[1] in names  # ir, rep, line: the procedure

    compared = sorted((k for k in keys if comparable(k)), key=str)
    for k in compared:
        if tool[k] != vg[k]:
            failures.append(f"{describe(k)}: tool {tool[k]}, callgrind {vg[k]}")
    for line in sel.notes():
        print("note:", line)
    if merges and merges.moved:
        print("note: callgrind's file taken from the line table (Valgrind merges same-line rows): "
              + ", ".join(f"{n} cost line(s) at {vf}:{ln} -> {tf}:{ln}" for (vf, tf, ln), n in sorted(merges.moved.items())))
    if unmoved:
        print(f"note: not compared (left in place by atomx): {', '.join(sorted(unmoved))}")
    if failures:
        print(f"FAIL {o.prog} [{o.tool}]: {len(failures)} problem(s) over {len(compared)} compared")
        for f in failures[:40]:
            print("   ", f)
        return 1
    kinds = collections.Counter(k[0] for k in compared)
    sums = collections.Counter()
    for k in compared:
        sums[k[0]] += tool[k]
    what = {"ir": "procedures' instructions", "rep": "procedures' rep-prefixed instructions' executions", "line": "source lines' instructions", "arc": "caller->callee arcs' calls", "site": "call sites' calls"}
    print(f"PASS {o.prog} [{o.tool}]: " + "; ".join(f"{kinds[k]} {what[k]} ({sums[k]}) equal to callgrind's" for k in sorted(kinds))
          + (f"; callgrind_annotate read {annotate_checked} tool file(s), totals equal" if annotate_checked else "")
          + f"; {sel.summary()}")
    return 0


def describe(k):
    if k[0] == "ir":
        return f"{k[1]}: Ir"
    if k[0] == "rep":
        return f"{k[1]}: executions of rep-prefixed instructions"
    if k[0] == "line":
        return f"{k[1]}, {k[2]}:{k[3]}: Ir"
    if k[0] == "arc":
        return f"calls {k[1]} -> {k[2]}"
    return f"site {k[1]:#x} -> {k[2]}"


def check_annotate(cgfile, data, tool):
    """callgrind_annotate must read the tool's callgrind file, and its
    per-function self totals must equal TOOL.json's per procedure."""
    if not os.path.exists(cgfile):
        return [f"no callgrind file {os.path.basename(cgfile)}"]
    args = ["callgrind_annotate", "--threshold=100"] + (["--inclusive=yes"] if tool == "gprof" else []) + [cgfile]
    # (errors="replace": it prints the sources it finds, whose bytes may not be
    # UTF-8: muparser's, --full oracles-b)
    r = subprocess.run(args, capture_output=True, text=True, errors="replace")
    if r.returncode != 0 or "PROGRAM TOTALS" not in r.stdout:
        return [f"callgrind_annotate failed on {os.path.basename(cgfile)}: {r.stderr.strip()[:300]}"]
    if tool == "gprof":  # inclusive figures: only check it ran; self totals below
        r = subprocess.run(["callgrind_annotate", "--threshold=100", cgfile], capture_output=True, text=True, errors="replace")
    got = collections.Counter()
    total = None
    section = 0
    for line in r.stdout.splitlines():
        s = line.strip()
        if s.endswith("PROGRAM TOTALS"):
            total = int(s.split()[0].replace(",", ""))
        elif s.startswith("Ir") and "file:function" in s:
            section = 1
        elif section == 1 and s and s[0].isdigit():
            count, _, rest = s.partition(" ")
            rest = rest.strip()
            if rest.startswith("("):
                rest = rest.split(")", 1)[1].strip()
            # callgrind_annotate names the object ("[/path/prog]") on some
            # lines only; a C++ clone's name ends in "]" too ("... [clone
            # .isra.0]": lzip, pbzip2), so only a bracketed path is the object.
            rest = re.sub(r" \[/[^\]]*\]$", "", rest)
            fn = rest.split(":", 1)[1] if ":" in rest else rest
            got[fn] += int(count.replace(",", ""))
        elif section == 1 and s.startswith("-----") and got:
            break
    want = collections.Counter()
    for p in data["procedures"]:
        want[p["name"]] += p["instructions"]
    errors = []
    if total != data["instructions"]:
        errors.append(f"callgrind_annotate total {total}, {tool}.json {data['instructions']}")
    for fn in set(got) | set(want):
        if got[fn] != want[fn]:
            errors.append(f"callgrind_annotate {fn}: {got[fn]}, {tool}.json {want[fn]}")
    return errors[:10]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--annotate"]:  # annotate CGFILE TOOL.json TOOL: check_annotate alone (tests/oracles)
        problems = check_annotate(sys.argv[2], json.load(open(sys.argv[3])), sys.argv[4])
        print("\n".join(problems) or "OK")
        sys.exit(1 if problems else 0)
    sys.exit(main())
