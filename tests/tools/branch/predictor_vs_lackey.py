#!/usr/bin/env python3
"""The branch tool's 2-bit predictor on every branch of a program, against
a model run over the program's full branch sequence recorded by Valgrind.

    predictor_vs_lackey.py --atomx ATOMX PROG [-- ARGS...]

Runs PROG ARGS under `valgrind --tool=lackey --trace-mem=yes`, which lists
every instruction the program executes, in order -- with
--vex-guest-chase=no: when Valgrind's translator follows a conditional
branch within one superblock, lackey can list an instruction of the path not
taken (bzip2's main: 0x401495 after a jne that was taken, as callgrind's jump
counts and atomx agree).  A conditional branch's
outcome is read from what runs next: taken when the next instruction is not
the one after it (objdump gives each branch's address and length).  The
model -- one classic 2-bit saturating counter per branch, states 0..3,
predicting taken at >= 2, starting at 1 -- runs over each branch's outcomes
in that order.  Then PROG instrumented with `atomx -T branch` runs the same
ARGS, and for every conditional branch of PROG, branch.json's taken, not
taken and mispredicted must equal the model's exactly; a branch Valgrind saw
executed that branch.json lacks is a failure too, unless atomx does not
instrument its code (outside a sized function symbol, like _init, or a
procedure the report lists as left in place); and the program's output
(stdout, stderr, status) must be unchanged.

PROG must be single-threaded (the predictor's state is shared by threads,
whose interleaving differs between the runs) and a position-dependent
executable (lackey prints run-time addresses).
Exit status 0 when every branch matches; 1 with the differing ones listed.
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "dyninst"))
import vgharness  # noqa: E402


def conditional_branches(prog):
    """{address: length} of PROG's conditional branches (objdump: jCC, jrcxz,
    loop*), lengths from the next instruction's address."""
    insts = vgharness.disassembly(prog)
    out = {}
    for (addr, text), (nxt, _) in zip(insts, insts[1:]):
        words = text.split()
        m = words[1] if words[0] in ("bnd", "notrack") and len(words) > 1 else words[0]
        m = m.split(",")[0]  # jne,pt
        if m.startswith("j") and m not in ("jmp", "jmpq") or m.startswith("loop") or m in ("jrcxz", "jecxz"):
            out[addr] = nxt - addr
    return out


def lackey_outcomes(argv, branches, cwd):
    """{branch address: [taken?, ...]} in execution order, from the
    instruction lines ("I  ADDR,SIZE") of lackey running argv.  Lackey
    writes a line per instruction and per data access (500 MB for
    tailcalls): grep keeps the branches' lines and the one after each
    (a jcc has no data access, so that is the next instruction's), in a
    pipe, and only those reach Python."""
    key = {f"{a:08x}".encode(): (a, f"{a + n:08x}".encode()) for a, n in branches.items()}
    r, w = os.pipe()
    with tempfile.NamedTemporaryFile("w", suffix=".pat") as pat:
        pat.write("".join(f"I  {k.decode()},\n" for k in key))
        pat.flush()
        vg = subprocess.Popen(["valgrind", "--tool=lackey", "--trace-mem=yes", "--vex-guest-chase=no",
                               f"--log-fd={w}"] + argv, pass_fds=(w,), cwd=cwd,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(w)
        grep = subprocess.Popen(["grep", "-F", "--no-group-separator", "-A1", "-f", pat.name], stdin=r,
                                stdout=subprocess.PIPE)
        os.close(r)
        seq = collections.defaultdict(list)
        prev = None  # (branch address, the address after it) of the branch just executed
        for line in grep.stdout:
            if not line.startswith(b"I"):
                continue
            addr = line[3:line.index(b",")]
            if prev is not None:
                seq[prev[0]].append(addr != prev[1])
            prev = key.get(addr)
        grep.wait()
        vg.wait()
    return seq


def model(outcomes):
    """(taken, not taken, mispredicted) of a 2-bit saturating counter that
    starts weakly not taken, written independently of the tool."""
    state, miss = 1, 0
    for taken in outcomes:
        if (state >= 2) != taken:
            miss += 1
        state = min(state + 1, 3) if taken else max(state - 1, 0)
    return sum(outcomes), len(outcomes) - sum(outcomes), miss


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("prog")
    ap.add_argument("args", nargs="*")
    o = ap.parse_args()
    prog = os.path.abspath(o.prog)
    with open(prog, "rb") as f:
        head = f.read(18)
    if head[:4] != b"\x7fELF" or int.from_bytes(head[16:18], "little") != 2:
        print(f"FAIL {o.prog}: not a position-dependent executable (ET_EXEC); lackey's addresses would not be the file's")
        return 1
    work = tempfile.mkdtemp(prefix="atomx-predictor.")
    try:
        atom = os.path.join(work, "prog.atom")
        report = os.path.join(work, "report.json")
        r = subprocess.run([o.atomx, prog, "-T", "branch", "-o", atom, "-q", "--report", report],
                           capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL {o.prog}: atomx failed:\n{r.stderr}")
            return 1
        with open(report) as f:
            unmoved = {p["name"] for p in json.load(f).get("unmoved", [])}
        syms = vgharness.Symbols(prog)
        for d in ("native", "atom", "lackey"):
            os.mkdir(os.path.join(work, d))
        # argv[0] is PROG's path in all three runs (programs walk it).
        native = subprocess.run([prog] + o.args, capture_output=True, cwd=os.path.join(work, "native"))
        inst = subprocess.run([prog] + o.args, executable=atom, capture_output=True, cwd=os.path.join(work, "atom"))
        failures = []
        if (native.returncode, native.stdout, native.stderr) != (inst.returncode, inst.stdout, inst.stderr):
            failures.append("the program's output changed under the branch tool")
        branches = conditional_branches(prog)
        seq = lackey_outcomes([prog] + o.args, branches, os.path.join(work, "lackey"))
        with open(os.path.join(work, "atom", "branch.json")) as f:
            tool = {int(b["pc"], 16): (b["taken"], b["not_taken"], b["mispredicted"]) for b in json.load(f)["branches"]}
        executed = mispredicted = 0
        outside = collections.Counter()  # code atomx does not instrument: _init, what it leaves in place
        for pc in sorted(set(seq) | set(tool)):
            want = model(seq.get(pc, []))
            got = tool.get(pc)
            name = syms(pc)
            if got is None and (name is None or name in unmoved):
                outside[name or "(no sized symbol)"] += len(seq.get(pc, []))
                continue
            if got is None:
                if want[0] + want[1]:
                    failures.append(f"{pc:#x}: executed {want[0] + want[1]} times under Valgrind, not in branch.json")
                continue
            if got != want:
                failures.append(f"{pc:#x}: tool (taken, not taken, mispredicted) {got}, model over Valgrind's sequence {want}")
            executed += want[0] + want[1]
            mispredicted += want[2]
        if not executed:
            failures.append("Valgrind saw no conditional branch of the program executed")
        if failures:
            print(f"FAIL {o.prog}: {len(failures)} problem(s)")
            for f in failures[:40]:
                print("   ", f)
            return 1
        live = sum(1 for pc in tool if seq.get(pc))
        if outside:
            print("note: not compared, branches atomx does not instrument (executions): "
                  + ", ".join(f"{n} {c}" for n, c in sorted(outside.items())))
        print(f"PASS {o.prog}: {live} branches executed {executed} times, {mispredicted} mispredicted: taken, not taken"
              f" and mispredicted equal to the 2-bit model over Valgrind's branch sequence at every branch")
        return 0
    finally:
        if o.keep:
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
