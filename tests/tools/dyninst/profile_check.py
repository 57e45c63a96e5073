#!/usr/bin/env python3
"""Counters placed by an earlier run's profile (atomx --profile): the same
exact counts, from fewer increments.

    profile_check.py --atomx ATOMX PROG [--input FILE --other FILE] [-- ARGS...]

Instruments PROG with `atomx -T dyninst`, runs it (run 1), instruments it
again with `--profile` run 1's dyninst.json and runs it on the same
arguments (run 2), and through `atomx run --profile` (run 3).  Passes when
each run's output is the original program's, the three count every block
and every instruction alike, and runs 2 and 3 execute fewer counter
increments than run 1 (dyninst.json's counter_increments).  With --input
and --other, ARGS name the input as {}: the profile comes from FILE and the
runs compare on OTHER, so the counts stay exact on another input than the
profile's.  The oracle of the counts is run 1: tool.dyninst.ir.* and
instrument.counters.* check those against Valgrind and a counter per block.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def run(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL, timeout=900, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--input")
    ap.add_argument("--other")
    ap.add_argument("prog")
    ap.add_argument("args", nargs="*")
    o = ap.parse_args()
    atomx, prog = os.path.abspath(o.atomx), os.path.abspath(o.prog)
    work = tempfile.mkdtemp(prefix="atomx-profile.")
    name = os.path.basename(prog)
    failures = []

    def args(path):
        return [a.replace("{}", path) for a in o.args] if path else o.args

    def execute(exe, tag, inp):
        """Runs exe as PROG with the input inp in the new directory work/tag."""
        d = os.path.join(work, tag)
        os.makedirs(d)
        r = run([prog] + args(inp), d, executable=exe)  # argv[0] is PROG's path in every run
        if os.path.exists(os.path.join(d, "dyninst.json")):
            with open(os.path.join(d, "dyninst.json")) as f:
                return r, json.load(f)
        return r, None

    try:
        other = os.path.abspath(o.other) if o.other else None
        first = os.path.abspath(o.input) if o.input else None
        native = execute(prog, "native", other)[0]
        plain = os.path.join(work, "plain")
        r = run([atomx, prog, "-T", "dyninst", "-o", plain, "-q"], work)
        if r.returncode:
            print(f"FAIL {name}: atomx failed: {r.stderr.decode()[-400:]}")
            return 1
        _, profile_run = execute(plain, "profile", first)
        profile = os.path.join(work, "profile", "dyninst.json")
        r1, d1 = execute(plain, "run1", other)
        placed = os.path.join(work, "placed")
        r = run([atomx, prog, "-T", "dyninst", "-o", placed, "--profile", profile], work)
        line = [l for l in r.stderr.decode().splitlines() if "exact count(s)" in l]
        if r.returncode or not line or "placed by a profile in which" not in line[0]:
            print(f"FAIL {name}: atomx --profile: no line saying the profile placed the counters: {r.stderr.decode()[-400:]}")
            return 1
        r2, d2 = execute(placed, "run2", other)
        d = os.path.join(work, "run3")
        os.makedirs(d)
        r3 = run([atomx, "run", "-q", "--cache-dir", os.path.join(work, "cache"), "-T", "dyninst", "--profile", profile,
                  "--", prog] + args(other), d)
        with open(os.path.join(d, "dyninst.json")) as f:
            d3 = json.load(f)
        for tag, rr in (("run 1", r1), ("run 2 (--profile)", r2), ("run 3 (atomx run --profile)", r3)):
            if (rr.returncode, rr.stdout, rr.stderr) != (native.returncode, native.stdout, native.stderr):
                failures.append(f"{tag}: the program's output differs from the original's")
        for tag, dd in (("run 2", d2), ("run 3", d3)):
            for key in ("instructions", "blocks_executed", "blocks"):
                if dd[key] != d1[key]:
                    failures.append(f"{tag}: {key} differ from run 1's (without a profile)")
            if not dd["counter_increments"] < d1["counter_increments"]:
                failures.append(f"{tag}: {dd['counter_increments']} counter increments, not fewer than run 1's "
                                f"{d1['counter_increments']}")
        per = lambda dd: dd["counter_increments"] / max(dd["blocks_executed"], 1)
        summary = (f"{name}: {d1['blocks_executed']} blocks executed; counter increments per block "
                   f"{per(d1):.3f} estimated, {per(d2):.3f} with the profile")
        if failures:
            print(f"FAIL {summary}")
            for f in failures:
                print("  " + f)
            print(f"(work directory kept: {work})")
            return 1
        print(f"PASS {summary}")
        shutil.rmtree(work)
        return 0
    except Exception:
        print(f"(work directory kept: {work})")
        raise


if __name__ == "__main__":
    sys.exit(main())
