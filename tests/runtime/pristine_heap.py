#!/usr/bin/env python3
"""pristine_heap.py --atomx ATOMX --program PROG [--mode null|dyninst|trace]... [--same-start] [--memcheck]

ATOM's pristine heap (docs/rewriting.md, "Heap and stack addresses"): PROG
(heap_addresses.c) runs natively and instrumented, both under `setarch -R`
(no address-space randomisation), from paths of the same length and with
the same environment, so that everything the kernel puts on the stack is
the same.  The oracle is the native run and the kernel's rule for the start
of the heap; each mode instruments PROG one way:

  null     atomx PROG -o OUT (no tool: no analysis object)
  dyninst  atomx PROG -T dyninst -o OUT (the analysis object loads at start)
  trace    atomx trace --instrument OUT (the trace recorder loads at start,
           with ATOMX_TRACE_DIR set in both runs)

What must hold, printed as FAIL lines naming the value that differs:
  - stack and data addresses: identical;
  - sbrk0 (the program's first sbrk(0), before it allocates): the kernel's
    start of the heap for that file, base + the end of its highest PT_LOAD
    rounded up to a page (base 0 for a fixed-address executable,
    ELF_ET_DYN_BASE = 0x555555554000 for a PIE), in both runs: nothing atomx
    does before main moves the program break;
  - every block on the heap (between sbrk0 and sbrk1 natively) at the same
    offset from that start of the heap in both runs, and the heap's growth
    (sbrk1 - sbrk0) the same: nothing atomx does before main allocates on
    the program's heap (the first block at sbrk0 + 0x2a0, after malloc's
    tcache); the twin sets ATOMX_TEST_SHARED_HEAP=1 in both runs (the
    loader allocates on the program's heap as it used to) and must see
    malloc0 named;
  - a block glibc mmaps natively (block 10) is mmapped instrumented too; its
    address differs (the analysis object's libraries are mapped first).
With --memcheck, the dyninst-instrumented PROG runs under Valgrind's
memcheck instead, which must report no error: under Valgrind the runtime
leaves ld.so's malloc alone (Valgrind frees ld.so's blocks at exit, and
memcheck would call the private heap's blocks invalid frees); its twin sets
ATOMX_TEST_HEAP_UNDER_VALGRIND=1 and must see memcheck's "Invalid free".
With --same-start (a fixed-address executable, whose new segments atomx
puts below the program) the heap also starts where the original's does, so
every address on it is the original's; otherwise (a PIE) its start differs
by the size of the segments atomx appends after the program's last one: the
kernel starts the heap after the highest PT_LOAD (docs/rewriting.md says
why that stays).  The twin of --same-start sets ATOMX_TEST_SEGMENTS_ABOVE=1
(src/rewrite/Rewriter.cpp: the segments go above the program again) and
must see sbrk0 named."""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ELF_ET_DYN_BASE = 0x555555554000  # x86-64, randomisation off
PAGE = 4096


def kernel_heap_start(path):
    """Where Linux starts the heap of `path` with randomisation off."""
    with open(path, "rb") as f:
        data = f.read()
    e_type, = struct.unpack_from("<H", data, 16)
    e_phoff, = struct.unpack_from("<Q", data, 32)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
    end = 0
    for i in range(e_phnum):
        p_type, _, _, p_vaddr, _, _, p_memsz, _ = struct.unpack_from("<IIQQQQQQ", data, e_phoff + i * e_phentsize)
        if p_type == 1:  # PT_LOAD
            end = max(end, p_vaddr + p_memsz)
    base = ELF_ET_DYN_BASE if e_type == 3 else 0
    return base + (end + PAGE - 1) // PAGE * PAGE


def run(prog, env, cwd):
    arch = os.uname().machine
    r = subprocess.run(["setarch", arch, "-R", prog], capture_output=True, text=True, env=env, cwd=cwd)
    if r.returncode != 0:
        sys.exit(f"FAIL: {prog} exited with {r.returncode}: {r.stderr.strip()}")
    values = {}
    for line in r.stdout.splitlines():
        name, value = line.split()
        values[name] = int(value, 16)
    return values


def instrument(atomx, mode, prog, out, scratch):
    if mode == "null":
        cmd = [atomx, prog, "-o", out, "-q"]
    elif mode == "dyninst":
        cmd = [atomx, prog, "-T", "dyninst", "-o", out, "-q"]
    else:
        cmd = [atomx, "trace", "-q", "--instrument", out, "-o", os.path.join(scratch, "trace"), "--", prog]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}: {r.stderr.strip()}")


def compare(mode, native, instrumented, nativeFile, instrumentedFile, sameStart):
    """The FAIL lines of one mode: what differs, by name."""
    problems = []
    if sameStart and native["sbrk0"] != instrumented["sbrk0"]:
        problems.append(f"sbrk0: the heap starts at {native['sbrk0']:#x} natively, {instrumented['sbrk0']:#x} "
                        "instrumented")
    for name in ("stack", "data"):
        if native[name] != instrumented[name]:
            problems.append(f"{name}: {native[name]:#x} natively, {instrumented[name]:#x} instrumented")
    for label, run_, path in (("natively", native, nativeFile), ("instrumented", instrumented, instrumentedFile)):
        want = kernel_heap_start(path)
        if run_["sbrk0"] != want:
            problems.append(f"sbrk0: {run_['sbrk0']:#x} {label}, but the kernel starts that file's heap at "
                            f"{want:#x}: something moved the program break before main")
    # Offsets from where the kernel starts each file's heap.
    n0, i0 = kernel_heap_start(nativeFile), kernel_heap_start(instrumentedFile)
    if native["sbrk1"] - n0 != instrumented["sbrk1"] - i0:
        problems.append(f"sbrk1: the heap grew by {native['sbrk1'] - n0:#x} natively, "
                        f"{instrumented['sbrk1'] - i0:#x} instrumented")
    for i in range(20):
        name = f"malloc{i}"
        a, b = native[name], instrumented[name]
        onHeap = n0 <= a < native["sbrk1"]
        if onHeap and a - n0 != b - i0:
            problems.append(f"{name}: heap offset {a - n0:#x} natively, {b - i0:#x} instrumented "
                            f"({a:#x} vs {b:#x})")
        if not onHeap and i0 <= b < instrumented["sbrk1"]:
            problems.append(f"{name}: mmapped natively ({a:#x}), on the heap instrumented ({b:#x})")
    return [f"FAIL: {mode}: {p}" for p in problems]


def memcheck(atomx, program):
    """FAIL lines for every error memcheck reports in instrumented PROG."""
    if not shutil.which("valgrind"):
        print("SKIP: no valgrind")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="atomx-heap-") as scratch:
        out = os.path.join(scratch, "prog")
        instrument(atomx, "dyninst", program, out, scratch)
        r = subprocess.run(["valgrind", "-q", "--error-exitcode=9", out], capture_output=True, text=True, cwd=scratch)
        errors = [line for line in r.stderr.splitlines() if line.startswith("==") and "Invalid" in line]
        if r.returncode == 0 and not errors:
            print("memcheck: no error")
            return []
        return [f"FAIL: memcheck: exit status {r.returncode}: " + (errors[0] if errors else r.stderr.strip()[:300])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--mode", action="append", choices=("null", "dyninst", "trace"))
    ap.add_argument("--memcheck", action="store_true")
    ap.add_argument("--same-start", action="store_true")
    args = ap.parse_args()
    if args.memcheck:
        failures = memcheck(args.atomx, args.program)
        for f in failures:
            print(f)
        return 1 if failures else 0
    if subprocess.run(["setarch", os.uname().machine, "-R", "true"], capture_output=True).returncode != 0:
        print("SKIP: setarch -R does not work here (no personality(ADDR_NO_RANDOMIZE))")
        return 77
    failures = []
    with tempfile.TemporaryDirectory(prefix="atomx-heap-") as scratch:
        # Same-length paths: argv[0] and AT_EXECFN are on the stack.
        nativeDir, instrDir = os.path.join(scratch, "n"), os.path.join(scratch, "i")
        os.mkdir(nativeDir), os.mkdir(instrDir)
        native = os.path.join(nativeDir, "prog")
        shutil.copy(args.program, native)
        for mode in args.mode or ["null", "dyninst", "trace"]:
            out = os.path.join(instrDir, "prog")
            instrument(args.atomx, mode, native, out, scratch)
            env = dict(os.environ)
            if mode == "trace":
                env["ATOMX_TRACE_DIR"] = os.path.join(scratch, "trace")
            n = run(native, env, nativeDir)
            i = run(out, env, instrDir)
            lines = compare(mode, n, i, native, out, args.same_start)
            failures += lines
            shift = kernel_heap_start(out) - kernel_heap_start(native)
            print(f"{mode}: {'differs' if lines else 'same'}; the heap starts {shift:#x} later "
                  f"(the appended segments), the first block at sbrk0 + {i['malloc0'] - i['sbrk0']:#x}")
            os.remove(out)
    for f in failures:
        print(f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
