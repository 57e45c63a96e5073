#!/usr/bin/env python3
"""The malloc tool against an LD_PRELOAD oracle, per function, size and site.

    malloc_vs_preload.py --atomx ATOMX PROG [--workload SCRIPT] [--tool-args "..."] [-- ARGS...]

Instruments PROG with `atomx -T malloc`, runs it, and runs the ORIGINAL
PROG with preload_shim.c (built here with cc) in LD_PRELOAD, which counts
the allocator calls whose return address lies in PROG's own code.  Checks:
  1. the program's output (stdout, stderr, exit status) is unchanged;
  2. calls per function name are equal;
  3. the size histogram is equal: allocations per (function, exact size),
     and so per power-of-two class;
  4. per call site: the shim's return address is the address after the
     call instruction, so each non-tail site's count must be equal; calls
     through tail-call sites (`jmp malloc@plt`) return into the tail
     caller's caller, so they are compared per function only.
Return addresses after a call of another library function are set aside:
that function tail-called the allocator (libstdc++'s basic_string::_M_create
jumps to operator new, __cxa_end_catch to free), a library's call.  A
tail-call site of the program called from a library (a deleting destructor
that libstdc++ calls jumps to operator delete) returns into the library:
the shim cannot count it.  So calls through tail-call sites are counted
independently, by Valgrind: the same workload runs under callgrind
(--dump-instr=yes --skip-plt=no: a PLT stub is not charged to the
jump through it), and each tail-call site's count must equal the Ir of
its jump instruction, exactly; the shim's calls through tail-call sites
must not exceed those, and what it could not see must account exactly for
the tool's extra calls per function and in sizes.  --exact allows no such
difference (every tail call seen by the shim too).
Calls the tool saw through a pointer (its `pointer_calls`: a call that
reached the tool's wrapper of the function with no instrumented site
before it -- through a table of function pointers, a pointer taken at run
time, or from code atomx left in place) are compared per (function,
return address) with the shim's calls at the same return address,
exactly; the tool must have taken over every allocator function the
program imports (`not_taken_over` empty).  --live: the bytes and blocks
the program's own calls left allocated at exit (summed over processes)
must equal the shim's, which tracks them the same way.
Other call sites inside procedures atomx leaves in place (--report
"unmoved") are left out of both sides.

The workload is ARGS (one run) or a corpus workload script (run with the
program's path in an empty directory); every process is counted: the tool's
malloc.json(.PID) is collected after each run, the shim writes one file
per process.  Exit status 0 when everything matches.
"""
import argparse
import bisect
import collections
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "dyninst"))
from vgharness import disassembly, function_symbols, callgrind_file, out_check  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
import setaside  # noqa: E402


def instructions(prog):
    """address -> instruction text (objdump), to find the call before a return address."""
    return dict(disassembly(prog))


def calls_library(text):
    """A call into a shared library: through the PLT or the GOT (-fno-plt)."""
    return text.startswith("call") and ("@plt>" in text or ("*" in text and "(%rip)" in text and "@" in text))


def first_difference(a, b):
    """Where two runs' (status, stdout, stderr) first differ: the stream and its first differing line."""
    for k, what in ((1, "stdout"), (2, "stderr")):
        la, lb = a[k].decode(errors="replace").splitlines(), b[k].decode(errors="replace").splitlines()
        for i in range(max(len(la), len(lb))):
            x, y = la[i] if i < len(la) else "(end)", lb[i] if i < len(lb) else "(end)"
            if x != y:
                return f"; {what} line {i + 1}: {x!r} -> {y!r}"
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--workload")
    ap.add_argument("--tool-args", default="")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--expect-function", action="append", default=[], metavar="NAME",
                    help="fail unless the tool saw calls of NAME (so the test covers it)")
    ap.add_argument("--expect-tail", action="store_true", help="fail unless some tail-call site was counted")
    ap.add_argument("--expect-light", action="store_true",
                    help="fail unless atomx saves no vector state around any call (tools/malloc uses atomx/light.hpp)")
    ap.add_argument("--exact", action="store_true",
                    help="no allowance for calls through tail-call sites whose caller is a library")
    ap.add_argument("--valgrind-output-differs", metavar="REASON",
                    help="the program's output under callgrind differs from its own, for REASON (printed, with where): "
                         "a note, not a failure; the tail-call sites' counts are still compared exactly, and it fails "
                         "when the outputs are the same (stale)")
    ap.add_argument("--sites-summed", action="append", default=[], metavar="PROC=REASON",
                    help="compare PROC's call sites as one sum per allocator function, for REASON (printed)")
    ap.add_argument("--live", action="store_true",
                    help="compare the live bytes and blocks at exit with the shim's (deterministic programs)")
    ap.add_argument("--expect-pointer-calls", type=int, metavar="N",
                    help="fail unless the tool saw at least N calls through pointers (so the test covers them)")
    ap.add_argument("prog")
    ap.add_argument("args", nargs="*")
    o = ap.parse_args()
    prog = os.path.abspath(o.prog)
    name = os.path.basename(prog)
    work = tempfile.mkdtemp(prefix="atomx-malloc.")
    shim = os.path.join(work, "shim.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", os.path.join(HERE, "preload_shim.c"), "-o", shim, "-ldl"], check=True)
    atom = os.path.join(work, name + ".atom")
    report = os.path.join(work, "report.json")
    r = subprocess.run([o.atomx, prog, "-T", "malloc", "-o", atom, "--report", report, "--"]
                       + shlex.split(o.tool_args), capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {o.prog}: atomx failed:\n{r.stderr}")
        return 1
    if o.expect_light:
        # atomx's summary: "N call(s) at M site(s), L without vector state, ...";
        # the two calls at program start and end always save everything, and
        # so does the one that hands the embedded facts over.
        m = re.search(r"(\d+) call\(s\) at \d+ site\(s\), (\d+) without vector state", r.stderr)
        heavy = 2 + ("facts embedded" in r.stderr)
        if not m or int(m.group(1)) - int(m.group(2)) != heavy:
            print(f"FAIL {o.prog}: not every call is light (no vector state saved): "
                  f"{m.group(0) if m else 'no summary line: ' + r.stderr}")
            return 1
    with open(report) as f:
        unmoved = {p["name"] for p in json.load(f).get("unmoved", [])}
    # Same program path in every run (programs print argv[0]).
    bindir = os.path.join(work, "bin")
    os.mkdir(bindir)
    binary = os.path.join(bindir, name)
    toolout, shimout, cgout = (os.path.join(work, d) for d in ("tool", "shim", "cg"))
    os.mkdir(toolout), os.mkdir(shimout), os.mkdir(cgout)
    # Under callgrind, a copy of PROG at a path as long as the wrapper's.
    # ATOMX_TEST_CALLGRIND_ARGS (a test hook): more arguments for the program
    # under callgrind only, so that its output differs
    # (tool.malloc.argv0.fails).
    os.mkdir(os.path.join(work, "cgb"))
    cg_binary = os.path.join(work, "cgb", name)
    subprocess.run(["cp", prog, cg_binary], check=True)
    wrappers = {
        "native": f'exec -a "$0" "{prog}" "$@"\n',
        "atom": f'(exec -a "$0" "{atom}" "$@"); rc=$?\n'
                # each malloc.out beside its malloc.json (out_check.py compares them)
                f'for f in malloc.json malloc.json.*; do [ -f "$f" ] || continue; s=.$$.$(date +%s%N); mv "$f" "{toolout}/$f$s"\n'
                f'  o="${{f/json/out}}"; [ -f "$o" ] && mv "$o" "{toolout}/$o$s"; done\n'
                'rm -f malloc.out malloc.out.*; exit $rc\n',
        "shim": f'MALLOC_SHIM_DIR="{shimout}" LD_PRELOAD="{shim}" exec -a "$0" "{prog}" "$@"\n',
        "callgrind": f'exec valgrind -q --tool=callgrind --dump-instr=yes --skip-plt=no --callgrind-out-file="{cgout}/cg.%p" '
                     f'"{cg_binary}" "$@" $ATOMX_TEST_CALLGRIND_ARGS\n',
    }
    results = {}

    def run(kind):
        with open(binary, "w") as f:
            f.write("#!/bin/bash\n" + wrappers[kind])
        os.chmod(binary, 0o755)
        d = os.path.join(work, f"run{list(wrappers).index(kind)}")  # equal-length paths
        os.mkdir(d)
        cmd = ["bash", os.path.abspath(o.workload), binary] if o.workload else [binary] + o.args
        p = subprocess.run(cmd, cwd=d, capture_output=True, timeout=o.timeout)
        out, err = p.stdout, p.stderr
        if kind == "callgrind":
            # Valgrind cannot set the program's argv[0] (there is no exec -a
            # through it), so the program names itself by the copy's path,
            # which getopt and the programs' messages print: name it as the
            # other runs do.
            out, err = (x.replace(cg_binary.encode(), binary.encode()) for x in (out, err))
        results[kind] = (p.returncode, out, err)
        changed = results[kind] != results["native"]
        if kind == "callgrind" and o.valgrind_output_differs:
            if changed:
                print(f"note: output under callgrind differs ({o.valgrind_output_differs})"
                      + first_difference(results["native"], results[kind]))
            else:
                failures.append(f"--valgrind-output-differs ({o.valgrind_output_differs}), but the output under "
                                "callgrind is the program's own: stale, remove it")
        elif changed:
            failures.append(f"program output changed under {kind} (status {results['native'][0]} -> {results[kind][0]})"
                            + first_difference(results["native"], results[kind]))

    failures = []
    for kind in ("native", "atom", "shim"):
        run(kind)

    syms = function_symbols(prog)
    starts_sym = [s for s, _, _ in syms]

    def proc_of(pc):
        i = bisect.bisect_right(starts_sym, pc) - 1
        return syms[i][2] if i >= 0 and syms[i][0] <= pc < syms[i][1] else None

    # The tool: per function, per (function, size), per non-tail site; tail calls per function.
    t_fn, t_size, t_site, t_tail, t_ptr = (collections.Counter() for _ in range(5))
    t_live = [0, 0]
    tail_sites = collections.Counter()  # pc -> calls through it
    files = [fn for fn in os.listdir(toolout) if fn.startswith("malloc.json")]
    if not files:
        failures.append("the tool wrote no malloc.json")
    failures += [p for fn in files for p in out_check.check("malloc", os.path.join(toolout, fn))]
    for fn in files:
        with open(os.path.join(toolout, fn)) as f:
            j = json.load(f)
        for fr in j["functions"]:
            t_fn[fr["name"]] += fr["calls"]
        if j.get("not_taken_over"):
            failures.append(f"the tool did not take over {', '.join(j['not_taken_over'])} (calls through pointers unseen)")
        for s in j.get("pointer_calls", []):
            t_ptr[(s["function"], int(s["return_address"], 16))] += s["calls"]
        if o.live:
            if "live_bytes_at_exit" not in j:
                failures.append(f"{fn}: no live_bytes_at_exit")
            t_live[0] += j.get("live_bytes_at_exit", 0)
            t_live[1] += j.get("live_blocks_at_exit", 0)
        for s in j["sites"]:
            if s["tail_call"]:
                t_tail[s["function"]] += s["calls"]
                tail_sites[int(s["pc"], 16)] += s["calls"]
            else:
                t_site[(s["function"], int(s["pc"], 16))] += s["calls"]
        # sizes are over all allocating functions; split them with the shim's function list below
        for s in j["sizes"]:
            t_size[s["size"]] += s["allocations"]
    # The shim: return address -> the call instruction before it.  A call of
    # a library function (not an allocator) means that function tail-called
    # the allocator (libstdc++'s basic_string::_M_create jumps to operator
    # new, __cxa_end_catch to free ...): the library's call, not counted.
    # Conversely, a tail-call site of the program reached from a library
    # (a deleting destructor called by libstdc++) returns into the library:
    # the shim cannot see it (see --exact).
    # A call of a program function that does not jump to the allocator
    # itself: it tail-called a library function that did (nested() ending
    # in `jmp __cxa_end_catch`, which ends in `jmp free`).
    code = instructions(prog)
    insts = sorted(code)
    tail_jumps = collections.defaultdict(set)  # procedure -> allocator functions it jumps to
    for a, text in code.items():
        if text.startswith("jmp") and "<" in text and "@" in text:
            tail_jumps[proc_of(a)].add(text.split("<", 1)[1].split("@", 1)[0])
    library_tail_calls = collections.Counter()
    s_fn, s_size, s_site, s_tail, s_ptr = (collections.Counter() for _ in range(5))
    s_live = [0, 0]
    for fn in os.listdir(shimout):
        with open(os.path.join(shimout, fn)) as f:
            for line in f:
                if line.startswith("#live "):
                    s_live[0] += int(line.split()[1])
                    s_live[1] += int(line.split()[2])
                    continue
                func, size, ret, count = line.split()
                ret, size, count = int(ret, 16), int(size), int(count)
                i = bisect.bisect_left(insts, ret) - 1
                call = insts[i] if i >= 0 else None
                if (func, ret) in t_ptr and (func, call) not in t_site:
                    s_fn[func] += count
                    s_ptr[(func, ret)] += count
                    if func != "free" and not func.startswith("_Zd"):
                        s_size[size] += count
                    continue
                if proc_of(call) in unmoved:
                    continue
                text = code.get(call, "")
                callee = int(text.split()[1], 16) if text.startswith("call") and "<" in text and "*" not in text else None
                if (calls_library(text) and f"<{func}@" not in text) or \
                        (callee is not None and not calls_library(text) and func not in tail_jumps[proc_of(callee)]):
                    library_tail_calls[func] += count
                    continue
                s_fn[func] += count
                if func != "free" and not func.startswith("_Zd"):
                    s_size[size] += count
                if (func, call) in t_site:
                    s_site[(func, call)] += count
                else:  # the return address of a tail call's caller
                    s_tail[func] += count
    # Calls through each tail-call site, independently: the executions of
    # its jump instruction under callgrind (run only when there are some).
    if tail_sites:
        run("callgrind")
    jumps = collections.Counter()
    for fn in os.listdir(cgout):
        for _, addr, ir in callgrind_file.costs(os.path.join(cgout, fn), name, "Ir"):
            if addr in tail_sites:
                jumps[addr] += ir
    for pc in sorted(tail_sites):
        if tail_sites[pc] != jumps[pc]:
            failures.append(f"tail-call site at {pc:#x} ({proc_of(pc)}): tool {tail_sites[pc]} calls,"
                            f" its jump executed {jumps[pc]} times under callgrind")
    # Calls through tail-call sites the shim could not see (their caller is
    # a library): the tool's excess, per function, and in sizes.  Zero with
    # --exact; otherwise never negative, and listed.
    if sum(s_tail.values()) > sum(jumps.values()):
        failures.append(f"the oracle saw {sum(s_tail.values())} calls through tail-call sites, callgrind"
                        f" {sum(jumps.values())} executions of their jumps")
    excess = collections.Counter({f: t_tail[f] - s_tail[f] for f in t_tail if t_tail[f] != s_tail[f]})
    excess_sizes = collections.Counter({k: t_size[k] - s_size[k] for k in set(t_size) | set(s_size) if t_size[k] != s_size[k]})
    unseen_ok = not o.exact and all(v > 0 for v in excess.values()) and all(v > 0 for v in excess_sizes.values()) and \
        sum(excess_sizes.values()) == sum(v for f, v in excess.items() if f != "free" and not f.startswith("_Zd"))
    if not unseen_ok:
        for what, a, b in (("calls of", t_fn, s_fn), ("allocations of size", t_size, s_size),
                           ("calls through tail-call sites of", t_tail, s_tail)):
            for key in sorted(set(a) | set(b), key=str):
                if a[key] != b[key]:
                    failures.append(f"{what} {key}: tool {a[key]}, oracle {b[key]}")
    else:
        for f in set(t_fn) | set(s_fn):
            if t_fn[f] != s_fn[f] + excess[f]:
                failures.append(f"calls of {f}: tool {t_fn[f]}, oracle {s_fn[f]}")
    # --sites-summed PROC=REASON: PROC's sites compared as one sum per
    # function (which of them runs depends on the schedule); the others
    # site by site.
    summed = setaside.parse(o.sites_summed, ap)
    for p in summed:
        print(f"note: the sites of {p} compared summed per function: {summed[p]}")

    def site_key(key):
        return (key[0], proc_of(key[1])) if proc_of(key[1]) in summed else key
    t_cmp, s_cmp = collections.Counter(), collections.Counter()
    for key, n in t_site.items():
        t_cmp[site_key(key)] += n
    for key, n in s_site.items():
        s_cmp[site_key(key)] += n
    for key in sorted(set(t_cmp) | set(s_cmp), key=str):
        if t_cmp[key] != s_cmp[key]:
            where = f"the sites of {key[1]}" if isinstance(key[1], str) else f"site at {key[1]:#x} ({proc_of(key[1])})"
            failures.append(f"{key[0]}: {where}: tool {t_cmp[key]}, oracle {s_cmp[key]}")
    for key in sorted(set(t_ptr) | set(s_ptr)):
        if t_ptr[key] != s_ptr[key]:
            failures.append(f"{key[0]} through a pointer returning to {key[1]:#x} ({proc_of(key[1])}):"
                            f" tool {t_ptr[key]}, oracle {s_ptr[key]}")
    if o.live and t_live != s_live:
        failures.append(f"left allocated at exit: tool {t_live[0]} bytes in {t_live[1]} blocks,"
                        f" oracle {s_live[0]} bytes in {s_live[1]} blocks")
    if o.expect_pointer_calls is not None and sum(t_ptr.values()) < o.expect_pointer_calls:
        failures.append(f"{sum(t_ptr.values())} calls through pointers seen, at least {o.expect_pointer_calls} expected")
    for fn in o.expect_function:
        if not t_fn[fn]:
            failures.append(f"no calls of {fn} seen (the test should cover it)")
    if o.expect_tail and not sum(t_tail.values()):
        failures.append("no tail-call site counted")
    if failures:
        print(f"FAIL {o.prog}: {len(failures)} difference(s); kept {work}")
        for f in failures[:40]:
            print("   ", f)
        return 1
    subprocess.run(["rm", "-rf", work])
    total = sum(t_fn.values())
    print(f"PASS {o.prog}: {total} allocator calls in {len(t_fn)} functions, {sum(t_size.values())} allocations "
          f"of {len(t_size)} distinct sizes, {len(t_site)} sites (+{sum(t_tail.values())} calls through "
          f"{len(tail_sites)} tail-call sites, each equal to its jump's executions under callgrind)"
          f", {sum(t_ptr.values())} calls through pointers at {len(t_ptr)} return addresses"
          + (f", {t_live[0]} bytes in {t_live[1]} blocks left at exit" if o.live else "")
          + " equal to the LD_PRELOAD oracle"
          + (f"; not compared (left in place by atomx): {', '.join(sorted(unmoved))}" if unmoved else ""))
    if excess:
        print("note: calls through tail-call sites the oracle cannot see (called from a library): "
              + ", ".join(f"{f} {n}" for f, n in sorted(excess.items())))
    if library_tail_calls:
        print("note: oracle calls set aside, made by library functions' tail calls: "
              + ", ".join(f"{f} {n}" for f, n in sorted(library_tail_calls.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
