#!/usr/bin/env python3
"""atomx ease-report --diff on two builds whose difference is known.

    diff_check.py --atomx ATOMX [--swap] SOURCE

Builds SOURCE (framepointer.c) twice, gcc -O2 with -fomit-frame-pointer (A)
and with -fno-omit-frame-pointer (B), runs each under `-T ease`, compares
them with `atomx ease-report --diff A/ease.json B/ease.json`, and requires:
  - ease-diff.json: every total, table row and procedure holds the counts
    of A's and B's own ease.json (read here, not through atomx), and no
    row of either is missing;
  - the known difference: B's f runs three more instructions per call
    (push %rbp; mov %rsp,%rbp; pop %rbp), 1000 calls: f +3000 instructions,
    and B pushes and pops at least 1000 times more (mnemonic push, pop);
  - ease-diff.out shows f's row with A's count, B's and +3,000.
--swap (the must-fail twin) passes B as A and A as B: the known difference
is then -3000 and the check fails, naming it.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--swap", action="store_true")
    ap.add_argument("source")
    o = ap.parse_args()
    problems = []
    with tempfile.TemporaryDirectory(prefix="atomx-ease-diff.") as d:
        runs = {}
        for name, flag in (("A", "-fomit-frame-pointer"), ("B", "-fno-omit-frame-pointer")):
            prog, out = os.path.join(d, "prog" + name), os.path.join(d, name)
            os.mkdir(out)
            subprocess.run(["gcc", "-O2", "-g", flag, o.source, "-o", prog, "-Wl,--emit-relocs"], check=True)
            subprocess.run([o.atomx, prog, "-T", "ease", "-q", "-o", prog + ".ease"], check=True)
            subprocess.run([prog + ".ease"], cwd=out, check=True, stdout=subprocess.DEVNULL)
            runs[name] = os.path.join(out, "ease.json")
        a, b = (runs["B"], runs["A"]) if o.swap else (runs["A"], runs["B"])
        r = subprocess.run([o.atomx, "ease-report", "--diff", a, b, "-o", d], capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL ease-report --diff: status {r.returncode}: {r.stderr.strip()}")
            return 1
        ja, jb = (json.load(open(p)) for p in (a, b))
        diff = json.load(open(os.path.join(d, "ease-diff.json")))
        text = open(os.path.join(d, "ease-diff.out")).read()

    rows = 0
    for key in set(ja["totals"]) | set(jb["totals"]):
        want = [ja["totals"].get(key, 0), jb["totals"].get(key, 0)]
        got = diff["totals"].get(key)
        rows += 1
        if got != want:
            problems.append(f"total {key!r}: ease-diff.json {got}, the two ease.json {want}")
    for table in set(ja["tables"]) | set(jb["tables"]):
        for key in set(ja["tables"].get(table, {})) | set(jb["tables"].get(table, {})):
            want = [ja["tables"].get(table, {}).get(key, 0), jb["tables"].get(table, {}).get(key, 0)]
            got = diff["tables"].get(table, {}).get(key)
            rows += 1
            if got != want:
                problems.append(f"{table} {key!r}: ease-diff.json {got}, the two ease.json {want}")
    procs = {p["name"]: p for p in diff["procs"]}
    for side, j in (("a", ja), ("b", jb)):
        for p in j["procs"]:
            got = (procs.get(p["name"]) or {}).get(side) or {}
            if got.get("instructions") != p["instructions"] or got.get("Dr") != p["Dr"]:
                problems.append(f"procedure {p['name']!r} ({side.upper()}): ease-diff.json {got}, ease.json {p}")
    f = procs.get("f", {})
    change = (f.get("b") or {}).get("instructions", 0) - (f.get("a") or {}).get("instructions", 0)
    if change != 3000:
        problems.append(f"known difference: f runs {change:+d} instructions from A to B, expected +3000 "
                        "(push, mov, pop per call, 1000 calls)")
    for mn in ("push", "pop"):
        c = diff["tables"]["mnemonic"].get(mn, [0, 0])
        if c[1] - c[0] < 1000:
            problems.append(f"known difference: mnemonic {mn} {c[1] - c[0]:+d} from A to B, expected at least +1000")
    fa, fb = (f.get("a") or {}).get("instructions", 0), (f.get("b") or {}).get("instructions", 0)
    line = next((ln for ln in text.splitlines() if ln.split()[:1] == ["f"]), None)
    want_cells = [f"{fa:,}", f"{fb:,}", f"{fb - fa:+,}"]
    if not line or line.split()[1:4] != want_cells:
        problems.append(f"ease-diff.out's row of f: {line!r}, expected the cells {want_cells}")
    for p in problems:
        print("FAIL", p)
    if problems:
        return 1
    print(f"PASS ease-report --diff: {rows} rows and {len(procs)} procedures equal to the two ease.json files; "
          f"f {change:+d} instructions, push {diff['tables']['mnemonic']['push'][1] - diff['tables']['mnemonic']['push'][0]:+d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
