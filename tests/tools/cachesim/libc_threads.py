#!/usr/bin/env python3
"""cachesim's model of libc's memory traffic and its shared last level,
against Valgrind cachegrind (tests/tools/cachesim/libc_threads.c).

    libc_threads.py --atomx ATOMX [--tool-arg ARG]... [--private] [--expect shared|private] PROG

Runs PROG under `valgrind --tool=cachegrind --cache-sim=yes` and rewritten
with `-T cachesim`, both with cachegrind's default x86-64 geometry (I1 and
D1 32 KB 8-way, LL 8 MB 16-way, 64-byte lines), and requires:
  - libc's misses: cachesim's modelled references of libc's memory and
    string functions (cachesim.json, "libc") miss D1 and LL, reading and
    writing, within 1% (+ 16) of cachegrind's misses in libc's string
    functions (those of glibc's string/ and multiarch/ sources: memcpy,
    memset, strlen, strcmp, and calloc's clearing, which is a memset: the
    variants libc's IFUNCs chose, __memcpy_avx_unaligned_erms & co.);
  - the calls: "library_calls" names memcpy 3 times, memset twice, calloc,
    strlen and strcmp once each;
  - the shared last level: `work`, whose two threads read what memcpy left
    in the last level, misses it at most 64 times, as under cachegrind
    (one LL for all threads); with --private (the configuration says
    `shared=no` on LL) each thread's own LL misses it all: at least
    2 * 16384 times.
And every inserted call but those at program start and end is light (no
vector state saved).  Prints PASS/FAIL per check; exit status 1 on any failure.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

GEOMETRY = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"]
# The variants of libc's string functions that a program's calls reach (its
# IFUNCs choose them; ld.so's own copies, which it calls while loading, are
# plain "memcpy" & co.): __memcpy_avx_unaligned_erms, __strlen_avx2, ...
STRING_VARIANT = re.compile(r"^__(mem|str|stp|bcmp|bzero)\w*_(avx|sse|evex|erms)")


def cachegrind(path):
    """(file, fn) -> Counter of events, from a cachegrind.out file."""
    costs = collections.defaultdict(collections.Counter)
    fl = fn = None
    names = []
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith("fl="):
                fl = line[3:].strip()
            elif line.startswith("fn="):
                fn = line[3:].strip()
            elif line[:1].isdigit() and fn is not None:
                for name, v in zip(names, line.split()[1:]):
                    costs[(fl, fn)][name] += int(v)
    return costs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--tool-arg", action="append", default=[])
    ap.add_argument("--private", action="store_true", help="LL shared=no: each thread misses it all")
    ap.add_argument("--expect", choices=["shared", "private"],
                    help="the LL behaviour to require (default: what the configuration says; the must-fail test crosses them)")
    ap.add_argument("prog")
    o = ap.parse_args()
    failures = []

    def check(ok, what):
        print(("PASS " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="atomx-cachesim-libc.") as d:
        prog = os.path.abspath(o.prog)
        cg_out = os.path.join(d, "cachegrind.out")
        r = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", *GEOMETRY,
                            f"--cachegrind-out-file={cg_out}", prog], capture_output=True, text=True, cwd=d)
        if r.returncode:
            print(f"FAIL cachegrind: status {r.returncode}\n{r.stderr}")
            return 1
        native = r.stdout
        cg = cachegrind(cg_out)
        atom = os.path.join(d, "prog.cs")
        r = subprocess.run([o.atomx, prog, "-T", "cachesim", "-o", atom, "--", *o.tool_arg],
                           capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL atomx: status {r.returncode}\n{r.stderr}")
            return 1
        # The calls before libc's functions are light too (no vector state
        # saved): all but the three at program start and end.
        m = re.search(r"(\d+) call\(s\) at .*?(\d+) without vector state", r.stderr)
        check(m is not None and int(m.group(2)) == int(m.group(1)) - 3,
              f"light calls: {m.group(2) if m else '?'} of {m.group(1) if m else '?'} (all but start and end)")
        config = os.path.join(d, "ll.cache")
        with open(config, "w") as f:
            f.write("I1 size=32K assoc=8 line=64\nD1 size=32K assoc=8 line=64\n")
            f.write("LL size=8M assoc=16 line=64" + (" shared=no" if o.private else "") + "\n")
        r = subprocess.run([atom], capture_output=True, text=True, cwd=d, env=dict(os.environ, ATOMX_CACHE_CONFIG=config))
        check(r.returncode == 0 and r.stdout == native, f"the rewritten program's output and status (status {r.returncode})")
        with open(os.path.join(d, "cachesim.json")) as f:
            j = json.load(f)

    conf = j["configurations"][0]
    shared = [lv["name"] for lv in conf["levels"] if lv.get("shared")]
    check(shared == ([] if o.private else ["LL"]), f"levels shared by all threads in cachesim.json: {shared}")
    libc = conf.get("libc", {"misses": {}})
    ours = {"D1mr": libc["misses"].get("D1", {}).get("dr", 0), "D1mw": libc["misses"].get("D1", {}).get("dw", 0),
            "DLmr": libc["misses"].get("LL", {}).get("dr", 0), "DLmw": libc["misses"].get("LL", {}).get("dw", 0)}
    theirs = collections.Counter()
    fns = set()
    for (fl, fn), c in cg.items():
        if STRING_VARIANT.match(fn):
            theirs.update(c)
            fns.add(fn)
    print(f"cachegrind's libc string functions: {', '.join(sorted(fns))}")
    for e in ("D1mr", "D1mw", "DLmr", "DLmw"):
        slack = 16 + theirs[e] // 100
        check(abs(ours[e] - theirs[e]) <= slack, f"libc {e}: cachesim {ours[e]}, cachegrind {theirs[e]} (within {slack})")

    calls = {f["name"]: f["calls"] for f in j["library_calls"]["modelled"]["functions"]}
    want = {"memcpy": 3, "memset": 2, "calloc": 1, "strlen": 1, "strcmp": 1}
    check(calls == want, f"modelled calls {calls} (want {want})")
    others = {f["name"] for f in j["library_calls"]["not_modelled"]["functions"]}
    check({"malloc", "pthread_create", "printf"} <= others, f"calls not modelled include malloc, pthread_create, printf: {sorted(others)}")

    work = next((p for p in conf["procedures"] if p["name"] == "work"), None)
    ll = work["misses"]["LL"]["dr"] if work else None
    cg_work = sum(c["DLmr"] for (fl, fn), c in cg.items() if fn == "work")
    if (o.expect or ("private" if o.private else "shared")) == "private":
        check(ll is not None and ll >= 2 * 16384, f"work's LL read misses with a private LL per thread: {ll} (at least 32768)")
    else:
        check(ll is not None and ll <= 64 and cg_work <= 64,
              f"work's LL read misses with one LL for all threads: {ll} (cachegrind {cg_work}; at most 64)")
    if failures:
        print(f"FAIL {len(failures)} check(s)")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
