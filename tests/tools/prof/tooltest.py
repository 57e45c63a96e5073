#!/usr/bin/env python3
"""The profiling tools (prof, gprof, inline) against Valgrind's callgrind.

    tooltest.py --atomx ATOMX --tool prof|gprof|inline PROG [--workload SCRIPT] [--runs N]
                [--allow-differ PROC] [-- ARGS...]

Instruments PROG with the shipped tool (`atomx PROG -T TOOL`), runs the
instrumented program, the original, and the original under
`valgrind --tool=callgrind --dump-instr=yes` with the same workload (ARGS, or
a corpus workload script run in an empty directory: every process counts),
checks that the program's output (stdout, stderr, status) is unchanged, and
compares, exactly, for the procedures of PROG that Valgrind can name (sized
function symbols; aliases and `f.cold` parts merged, procedures atomx leaves
in place excluded):

  prof    instructions per procedure (TOOL.json) with callgrind's Ir, the Ir
          of rep-prefixed string instructions set apart on both sides
          (Valgrind counts one Ir per iteration, the tool one per execution);
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

--runs N runs the instrumented workload N times; procedures (and arcs and
sites) whose counts differ between runs are set aside (time, randomness,
thread scheduling).  --allow-differ PROC sets aside a procedure that behaves
differently by design (reads the file's own headers, or x87 precision under
Valgrind).  Exit status 0 when everything compared is equal.
"""
import argparse
import bisect
import collections
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile


def function_symbols(prog):
    """(start, end, name) of every sized function symbol, from readelf."""
    out = subprocess.run(["readelf", "-W", "-s", prog], capture_output=True, text=True, check=True).stdout
    syms = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND":
            start, size = int(f[1], 16), int(f[2], 16) if f[2].startswith("0x") else int(f[2])
            if size > 0:
                syms.add((start, start + size, f[7].split("@")[0]))
    return sorted(syms)


class Symbols:
    """Maps addresses and Valgrind's names to one canonical name per function:
    aliases (symbols at one address) become the first in sorted order, and
    `f.cold` joins `f` (Valgrind counts a cold part under its parent)."""

    def __init__(self, prog):
        self.syms = function_symbols(prog)
        self.starts = [s for s, _, _ in self.syms]
        by_start = collections.defaultdict(list)
        for start, _, name in self.syms:
            by_start[start].append(name)
        # Starts of cold parts: callgrind takes a jump from f to f.cold for a call.
        self.cold_starts = {s for s, _, n in self.syms if n.endswith(".cold") or ".cold." in n}
        self.canon = {}
        for names in by_start.values():
            for n in names:
                self.canon[n] = sorted(names)[0]
        for n in list(self.canon):
            if n.endswith(".cold") and n[:-5] in self.canon:
                self.canon[n] = self.canon[n[:-5]]

    def at(self, pc):
        i = bisect.bisect_right(self.starts, pc) - 1
        if i >= 0 and self.syms[i][0] <= pc < self.syms[i][1]:
            return self.canon[self.syms[i][2]]
        return None

    def named(self, valgrind_name):
        if valgrind_name and "'" in valgrind_name and valgrind_name.rsplit("'", 1)[1].isdigit():
            valgrind_name = valgrind_name.rsplit("'", 1)[0]  # recursion level f'2 (--separate-recs)
        return self.canon.get(valgrind_name)


def special_addresses(prog):
    """Addresses of rep/repz/repnz-prefixed instructions and of call
    instructions (objdump)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", prog], capture_output=True, text=True, check=True).stdout
    rep, calls = set(), set()
    for line in out.splitlines():
        f = line.split("\t")
        words = f[1].split() if len(f) >= 2 else []
        if not words:
            continue
        if words[0] in ("rep", "repz", "repnz", "repe", "repne"):
            rep.add(int(f[0].strip().rstrip(":"), 16))
        if words[0].startswith("call") or (len(words) > 1 and words[0] in ("bnd", "notrack") and words[1].startswith("call")):
            calls.add(int(f[0].strip().rstrip(":"), 16))
    return rep, calls


def parse_callgrind(path):
    """A callgrind file written with --dump-instr=yes --compress-strings=no
    --compress-pos=no: yields ("cost", ob, fn, addr, Ir) per cost line and
    ("call", ob, fn, site addr, cob, target addr, count) per calls= line; a cost
    event carries the source file and line too (None when unknown)."""
    ob = fn = cob = cfn = fl = fi = None
    ir_col = 0
    npos = 1
    pending = None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("positions:"):
                npos = len(line.split()[1:])
            elif line.startswith("events:"):
                ir_col = line.split()[1:].index("Ir")
            elif line.startswith("ob="):
                ob = cob = line[3:]
            elif line.startswith("fl="):
                fl = fi = line[3:]
            elif line.startswith(("fi=", "fe=")):
                fi = line[3:]
            elif line.startswith("fn="):
                fn = line[3:]
                cob = ob
                fi = fl
            elif line.startswith("cob="):
                cob = line[4:]
            elif line.startswith("cfn="):
                cfn = line[4:]
            elif line.startswith("calls="):
                pending = line[6:].split()  # count, target position
            elif line and (line[0].isdigit() or line[0] == "0"):
                parts = line.split()
                addr = int(parts[0], 0)
                if pending is not None:
                    yield ("call", ob, fn, addr, cob, int(pending[1], 0), int(pending[0]))
                    pending = None
                    cob = ob
                elif len(parts) > npos + ir_col:
                    yield ("cost", ob, fn, addr, int(parts[npos + ir_col]), fi,
                           int(parts[1], 0) if npos > 1 else None)


def write_wrapper(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/bash\n" + body)
    os.chmod(path, 0o755)


def run_workload(cmd0, args, workload, cwd, timeout, env=None):
    cmd = ["bash", workload, cmd0] if workload else [cmd0] + args
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout, env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr


def tool_counts(tool, data, syms, rep):
    """From one TOOL.json: Counter of comparable keys -> counts.
    keys: ("ir", proc), ("arc", caller, callee), ("site", pc, callee)."""
    c = collections.Counter()
    if tool in ("prof", "gprof"):
        for p in data["procedures"]:
            name = syms.at(int(p["pc"], 16))
            if name:
                c[("ir", name)] += p["instructions"]
        # rep-prefixed instructions count one per execution of their block
        # here, one per iteration to Valgrind: set apart on both sides.
        for b in data["blocks"]:
            pc, end = int(b["pc"], 16), int(b["end"], 16)
            n = bisect.bisect_left(rep, end) - bisect.bisect_left(rep, pc)
            if n and syms.at(pc):
                c[("ir", syms.at(pc))] -= b["count"] * n
    if tool == "prof":
        # Per source line, for lines the line table names (a -g build).
        for ln in data["lines"]:
            name = syms.at(int(ln["procedure_pc"], 16))
            if name and ln["file"] != "???" and ln["line"]:
                c[("line", name, os.path.basename(ln["file"]), ln["line"])] += ln["instructions"]
    if tool == "gprof":
        for a in data["arcs"]:
            caller = syms.at(int(a["caller_pc"], 16))
            callee = syms.at(int(a["callee_pc"], 16)) if a.get("callee_pc") else None
            if caller and callee:  # tail calls too: callgrind counts a jump to a function's entry as a call
                c[("arc", caller, callee)] += a["calls"]
    if tool == "inline":
        for s in data["sites"]:
            callee = syms.at(int(s["callee_pc"], 16)) if s.get("callee_pc") else None
            if callee:
                c[("site", int(s["pc"], 16), callee)] += s["count"]
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--tool", required=True, choices=["prof", "gprof", "inline"])
    ap.add_argument("--workload")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--allow-differ", action="append", default=[], metavar="PROC")
    ap.add_argument("--runs", type=int, default=1, metavar="N")
    ap.add_argument("prog")
    ap.add_argument("args", nargs="*")
    o = ap.parse_args()
    prog = os.path.abspath(o.prog)
    work = tempfile.mkdtemp(prefix=f"atomx-{o.tool}.")
    try:
        return compare(o, prog, work)
    finally:
        if o.keep:
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


def compare(o, prog, work):
    atom = os.path.join(work, os.path.basename(prog) + ".atom")
    report = os.path.join(work, "report.json")
    r = subprocess.run([o.atomx, prog, "-T", o.tool, "-o", atom, "-q", "--report", report], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {o.prog}: atomx failed:\n{r.stderr}")
        return 1
    with open(report) as f:
        unmoved = {p["name"] for p in json.load(f).get("unmoved", [])}
    outs = os.path.join(work, "outs")
    cgdir = os.path.join(work, "cg")
    os.mkdir(cgdir)
    # Every run sees the same program path (argv[0] matters to some
    # programs): bin/NAME is, in turn, a wrapper for each of the three.
    bindir = os.path.join(work, "bin")
    os.mkdir(bindir)
    binary = os.path.join(bindir, os.path.basename(prog))
    os.mkdir(os.path.join(work, "cgb"))
    cg_binary = os.path.join(work, "cgb", os.path.basename(prog))
    shutil.copy(prog, cg_binary)
    wrappers = {
        "native": f'exec -a "$0" "{prog}" "$@"\n',
        # The tool's files of each process go to $OUTS/<unique>/.
        "atom": f'(exec -a "$0" "{atom}" "$@"); rc=$?\n'
                'd="$OUTS/$$.$(date +%s%N)"; mkdir -p "$d"\n'
                f'for f in {o.tool}.json {o.tool}.json.* callgrind.out.atomx-{o.tool} callgrind.out.atomx-{o.tool}.*; do\n'
                '  [ -f "$f" ] && mv "$f" "$d/"; done\n'
                'exit $rc\n',
        # --skip-plt=no: a PLT stub's instructions are its own, not the caller's.
        "callgrind": 'exec valgrind -q --tool=callgrind --dump-instr=yes --compress-strings=no --compress-pos=no --skip-plt=no '
                     f'--demangle=no --callgrind-out-file="{cgdir}/cg.%p" "{cg_binary}" "$@"\n',
    }
    wl = os.path.abspath(o.workload) if o.workload else None
    results = {}
    for k, (name, body) in enumerate(wrappers.items()):
        write_wrapper(binary, body)
        for run in range(o.runs if name == "atom" else 1):
            d = os.path.join(work, f"run{k}.{run}.d")  # equal-length paths (programs print them)
            os.mkdir(d)
            env = {"OUTS": f"{outs}.{run}"} if name == "atom" else {}
            results.setdefault(name, run_workload(binary, o.args, wl, d, o.timeout, env))
    failures = []
    if results["atom"] != results["native"]:
        rc_n, out_n, err_n = results["native"]
        rc_a, out_a, err_a = results["atom"]
        failures.append(f"program output changed (status {rc_n} -> {rc_a}, stdout same: {out_n == out_a}, "
                        f"stderr same: {err_n == err_a})")
    if results["callgrind"] != results["native"]:
        print("note: the program behaves differently under Valgrind (its output differs)")

    syms = Symbols(prog)
    rep_set, call_addrs = special_addresses(prog)
    rep = sorted(rep_set)
    runs = []
    annotate_checked = 0
    for run in range(o.runs):
        total = collections.Counter()
        jsons = sorted(glob.glob(f"{outs}.{run}/*/{o.tool}.json*"))
        if not jsons:
            failures.append(f"the tool wrote no {o.tool}.json")
        for path in jsons:
            with open(path) as f:
                data = json.load(f)
            total.update(tool_counts(o.tool, data, syms, rep))
            if run == 0 and o.tool in ("prof", "gprof"):
                cgfile = os.path.join(os.path.dirname(path), f"callgrind.out.atomx-{o.tool}" + path[len(path.rstrip("0123456789")):]
                                      if path[-1].isdigit() else f"callgrind.out.atomx-{o.tool}")
                failures += check_annotate(cgfile, data, o.tool)
                annotate_checked += 1
        runs.append(total)
    tool = runs[0]
    varying = {k for r in runs[1:] for k in set(r) | set(tool) if r[k] != tool[k]}

    # Valgrind's side, over every process.
    obj = os.path.basename(prog)
    vg = collections.Counter()
    rep_ir = 0
    rep_lines = set()  # lines holding a rep instruction: not compared
    for path in glob.glob(os.path.join(cgdir, "cg.*")):
        for ev in parse_callgrind(path):
            if not ev[1] or os.path.basename(ev[1]) != obj:
                continue
            # Functions by address, not by callgrind's names: _start is
            # "(below main)"'s caller under another name, recursion levels
            # are f'2, code with no symbol is 0x....
            if ev[0] == "cost":
                _, _, _, addr, ir, file, line = ev
                fn = syms.at(addr)
                if fn and o.tool != "inline":
                    line_key = ("line", fn, os.path.basename(file), line) if file and file != "???" and line else None
                    if addr in rep_set:
                        rep_ir += ir
                        if line_key:
                            rep_lines.add(line_key)
                    else:
                        vg[("ir", fn)] += ir
                        if line_key and o.tool == "prof":
                            vg[line_key] += ir
            else:
                _, _, _, site, cob, target, count = ev
                fn = syms.at(site)
                callee = syms.at(target) if cob and os.path.basename(cob) == obj else None
                if not (fn and callee) or target in syms.cold_starts:
                    continue
                if o.tool == "gprof":
                    vg[("arc", fn, callee)] += count
                elif o.tool == "inline":
                    vg[("site", site, callee)] += count

    names = {syms.canon[n] for _, _, n in syms.syms if n not in unmoved} - set(o.allow_differ)
    varying_names = set()
    for k in varying:
        varying_names.add(str(k[1]) if k[0] != "site" else str(syms.at(k[1])))
    keys = set(tool) | set(vg)

    def comparable(k):
        if k in varying or k in rep_lines:
            return False
        if k[0] == "site":  # call instructions (callgrind lists tail jumps as calls too)
            return k[1] in call_addrs and syms.at(k[1]) in names and k[2] in names
        if k[0] == "arc":
            return k[1] in names and k[2] in names
        return k[1] in names  # ir, line: the procedure

    compared = sorted((k for k in keys if comparable(k)), key=str)
    for k in compared:
        if tool[k] != vg[k]:
            failures.append(f"{describe(k)}: tool {tool[k]}, callgrind {vg[k]}")
    if failures:
        print(f"FAIL {o.prog} [{o.tool}]: {len(failures)} difference(s) over {len(compared)} compared")
        for f in failures[:40]:
            print("   ", f)
        return 1
    if unmoved:
        print(f"note: not compared (left in place by atomx): {', '.join(sorted(unmoved))}")
    if varying:
        print(f"note: not compared (counts differ between the {o.runs} runs): {len(varying)} keys in "
              f"{', '.join(sorted(varying_names)[:20])}")
    kinds = collections.Counter(k[0] for k in compared)
    sums = collections.Counter()
    for k in compared:
        sums[k[0]] += tool[k]
    what = {"ir": "procedures' instructions", "line": "source lines' instructions", "arc": "caller->callee arcs' calls", "site": "call sites' calls"}
    print(f"PASS {o.prog} [{o.tool}]: " + "; ".join(f"{kinds[k]} {what[k]} ({sums[k]}) equal to callgrind's" for k in sorted(kinds))
          + (f"; set aside {rep_ir} Ir of rep-prefixed instructions" if o.tool != "inline" else "")
          + (f"; callgrind_annotate read {annotate_checked} tool file(s), totals equal" if annotate_checked else "")
          + (f"; not compared: {', '.join(o.allow_differ)}" if o.allow_differ else ""))
    return 0


def describe(k):
    if k[0] == "ir":
        return f"{k[1]}: Ir"
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
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0 or "PROGRAM TOTALS" not in r.stdout:
        return [f"callgrind_annotate failed on {os.path.basename(cgfile)}: {r.stderr.strip()[:300]}"]
    if tool == "gprof":  # inclusive figures: only check it ran; self totals below
        r = subprocess.run(["callgrind_annotate", "--threshold=100", cgfile], capture_output=True, text=True)
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
            if rest.endswith("]") and " [" in rest:
                rest = rest[:rest.rindex(" [")]
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
    sys.exit(main())
