#!/usr/bin/env python3
"""report_phases.py ATOMX PROG [ATOMX ARGS...]

Rewrites PROG (with the extra arguments, e.g. `-T prof`) and checks the
"phases" object of `--report FILE`: every phase the rewrite has (the
analysis's steps, which add up to "analyze_seconds", and, with a tool, every
phase instrument::Session adds) is there, in the order it ran,
no time is negative, and together they take at most "total_seconds", which
itself is no more than the wall time of the whole atomx process.  Also that
the phases are printed nowhere else: `-q` prints nothing, and the summary
line does not name them.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

# The analysis's own steps (analysis::analyzeProgram).
ANALYZE = ["analyze.relocations", "analyze.procedures", "analyze.decode", "analyze.unwind", "analyze.jumpTables",
           "analyze.codeReferences", "analyze.cfg", "analyze.movability"]
REWRITE = ["load", *ANALYZE, "layOutCode", "buildUnwindTables", "layOutSegments", "emitCode", "patchFile",
           "writeElf", "writeFile"]
TOOL = ["load", "buildTool", *ANALYZE, "makeEngine", "runInstrument", "placeCounts", "embedFacts",
        "checkRoutines", "plan", "layOutCode", "buildUnwindTables", "layOutSegments", "emitCode", "patchFile",
        "writeElf", "writeFile"]


def check(atomx, prog, extra, quiet):
    with tempfile.TemporaryDirectory() as tmp:
        out, report = os.path.join(tmp, "out"), os.path.join(tmp, "r.json")
        t0 = time.monotonic()
        r = subprocess.run([atomx, prog, *extra, "-o", out, "--report", report] + (["-q"] if quiet else []),
                           capture_output=True, text=True)
        wall = time.monotonic() - t0
        if r.returncode != 0:
            return ["atomx failed (%d): %s" % (r.returncode, r.stderr.strip())]
        d = json.load(open(report))
    errors = []
    phases, total = d.get("phases"), d.get("total_seconds")
    if not isinstance(phases, dict) or not isinstance(total, (int, float)):
        return ["no phases object or total_seconds: %s" % sorted(d)]
    want = TOOL if extra else REWRITE
    if list(phases) != want:
        errors.append("phases %s, expected %s" % (list(phases), want))
    for name, s in phases.items():
        if not isinstance(s, (int, float)) or s < 0:
            errors.append("phase %s: %r seconds" % (name, s))
    # Six decimals each: allow their rounding.
    if sum(phases.values()) > total + 1e-6 * (len(phases) + 1):
        errors.append("phases sum to %.6f s, more than total_seconds %.6f" % (sum(phases.values()), total))
    if total > wall:
        errors.append("total_seconds %.6f is more than the process's wall time %.6f" % (total, wall))
    analyze = sum(phases.get(name, 0) for name in ANALYZE)
    if abs(analyze - d["analyze_seconds"]) > 0.05 * max(d["analyze_seconds"], 0.01):
        errors.append("the analyze.* phases sum to %.6f, far from analyze_seconds %.6f" % (analyze,
                                                                                          d["analyze_seconds"]))
    if quiet and (r.stdout or r.stderr):
        errors.append("-q printed: %r %r" % (r.stdout, r.stderr))
    if not quiet and any(name in r.stderr for name in ("layOutCode", "buildUnwindTables", "phases")):
        errors.append("the summary names phases: %r" % r.stderr)
    print("%s %s %s: %s; total %.4f s" % ("FAIL" if errors else "PASS", os.path.basename(prog), " ".join(extra),
                                          ", ".join("%s %.4f" % kv for kv in phases.items()), total))
    return errors


def main():
    atomx, prog, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    errors = check(atomx, prog, extra, quiet=True) + check(atomx, prog, extra, quiet=False)
    for e in errors:
        print("  " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
