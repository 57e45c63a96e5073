#!/usr/bin/env python3
"""Evaluated predicates write no witness per iteration (docs/trace.md).

    loops_witnesses.py --atomx ATOMX PROG

PROG is tests/trace/loops.c's program.  Traces it with --data twice, with
evaluated predicates and without (ATOMX_TRACE_NO_EVALUATED=1, the
benchmark's "without loop counts"), and checks from `atomx regen
--summary`:
  - both regenerate the same blocks (`regen --blocks`, line for line) and
    the same data references' kinds and sizes (`regen`'s text; the
    addresses on the stack differ between runs);
  - without: at least one witness per iteration of its counted loops
    (ITERATIONS: up, down, from_memory, dec_test and unsigned_loop 1000
    each, signed_loop 500, nested's inner loop 30 x 30; with_break's
    count depends on its data and is left out);
  - with: at least ITERATIONS evaluated branches, and the witnesses fell
    by at least ITERATIONS - SLACK (SLACK: a witness or two per loop entered,
    38 entries, and the program's other branches).
A failure names the figure that is off.  Exit 0 when all hold.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ITERATIONS = 5 * 1000 + 500 + 30 * 30
SLACK = 100


def figures(summary):
    f = summary.split()
    return {f[i]: int(f[i + 1]) for i in range(0, len(f) - 1, 2) if f[i + 1].isdigit()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("prog")
    o = ap.parse_args()
    w = tempfile.mkdtemp(prefix="atomx-loops.")
    try:
        runs = {}
        for kind, env in (("with", {}), ("without", {"ATOMX_TRACE_NO_EVALUATED": "1"})):
            env = dict(os.environ, **env)
            trace = os.path.join(w, kind)
            subprocess.run([o.atomx, "trace", "-q", "--data", "--cache-dir", os.path.join(w, "cache"), "-o", trace,
                            "--", o.prog], env=env, check=True, stdout=subprocess.DEVNULL, timeout=300)
            summary = subprocess.run([o.atomx, "regen", trace, "--summary"], env=env, capture_output=True,
                                     text=True, check=True).stdout
            blocks = [l.split(None, 1)[1] for l in subprocess.run([o.atomx, "regen", trace, "--blocks"], env=env,
                                                                  capture_output=True, text=True,
                                                                  check=True).stdout.splitlines()]  # (less the TID)
            # The references' kinds and sizes (addresses on the stack move between runs).
            refs = [l.split()[::2] for l in subprocess.run([o.atomx, "regen", trace], env=env, capture_output=True,
                                                          text=True, check=True).stdout.splitlines()
                    if l.startswith(" ")]
            runs[kind] = (figures(summary), blocks, refs)
        on, off = runs["with"][0], runs["without"][0]
        failures = []
        if runs["with"][1] != runs["without"][1]:
            failures.append("the blocks regenerated with evaluated predicates differ from those without")
        if runs["with"][2] != runs["without"][2]:
            failures.append("the data references regenerated with evaluated predicates differ from those without")
        if off.get("witnesses", 0) < ITERATIONS:
            failures.append(f"without evaluated predicates: {off.get('witnesses', 0)} witnesses, fewer than the"
                            f" {ITERATIONS} iterations of the counted loops")
        if on.get("evaluated", 0) < ITERATIONS:
            failures.append(f"{on.get('evaluated', 0)} evaluated branches, fewer than the {ITERATIONS} iterations")
        dropped = off.get("witnesses", 0) - on.get("witnesses", 0)
        if dropped < ITERATIONS - SLACK:
            failures.append(f"the witnesses dropped by {dropped} ({off.get('witnesses', 0)} -> {on.get('witnesses', 0)}),"
                            f" not by at least {ITERATIONS - SLACK}")
        if failures:
            print(f"FAIL {o.prog}: {len(failures)} problem(s)")
            for f in failures:
                print("   ", f)
            return 1
        print(f"PASS {o.prog}: witnesses {off['witnesses']} -> {on['witnesses']} per {on['blocks']} blocks,"
              f" {on['evaluated']} evaluated branches; stream bytes {off['stream-bytes']} -> {on['stream-bytes']};"
              f" the same blocks and references")
        return 0
    finally:
        shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
