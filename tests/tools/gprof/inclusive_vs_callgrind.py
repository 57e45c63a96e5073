#!/usr/bin/env python3
"""The gprof tool's inclusive costs against callgrind's, on a recursive program.

    inclusive_vs_callgrind.py ATOMX PROG EXACT MAIN [ARGS...]

Instruments PROG with `-T gprof`, runs it and the original under callgrind
(--skip-plt=no) with ARGS, and checks, for each procedure named in EXACT
(comma-separated: procedures called from one other procedure only, with no
library code beneath them), that gprof.json's "inclusive" equals the
inclusive Ir of the calls callgrind records into it from other functions
(the instructions run under each such call: for a recursive procedure, its
outermost activations, since callgrind's calls into it from itself are not
counted); and that MAIN's inclusive is at least 99% of all the
instructions gprof counted (gprof's own flat profile: the recursion must
not hide main's cost).  Exit status 0 when all hold.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
import callgrind_file  # noqa: E402


def main():
    atomx, prog, exact, root, args = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3].split(","), sys.argv[4], sys.argv[5:]
    w = tempfile.mkdtemp(prefix="atomx-gprof-incl.")
    try:
        out = os.path.join(w, "prog.atom")
        subprocess.run([atomx, prog, "-T", "gprof", "-o", out, "-q"], check=True)
        native = subprocess.run([prog] + args, capture_output=True)
        mine = subprocess.run([out] + args, capture_output=True, cwd=w)
        failures = []
        if (mine.returncode, mine.stdout) != (native.returncode, native.stdout):
            failures.append("the program's output changed under gprof")
        with open(os.path.join(w, "gprof.json")) as f:
            g = json.load(f)
        inclusive = {p["name"]: p["inclusive"] for p in g["procedures"]}
        cg = os.path.join(w, "cg.out")
        subprocess.run(["valgrind", "-q", "--tool=callgrind", "--skip-plt=no", f"--callgrind-out-file={cg}", prog] + args,
                       check=True, capture_output=True)
        base = os.path.basename(prog)
        theirs = {}
        for ev in callgrind_file.read(cg):
            if type(ev) is callgrind_file.Call and os.path.basename(ev.cob or "") == base and ev.fn != ev.cfn:
                theirs[ev.cfn] = theirs.get(ev.cfn, 0) + ev.inclusive.get("Ir", 0)
        for name in exact:
            if inclusive.get(name) != theirs.get(name):
                failures.append(f"{name}: gprof's inclusive {inclusive.get(name)}, callgrind's {theirs.get(name)}")
        share = 100.0 * inclusive.get(root, 0) / g["instructions"] if g["instructions"] else 0
        if share < 99:
            failures.append(f"{root}: inclusive {share:.1f}% of the instructions, not at least 99%")
        if failures:
            print(f"FAIL {prog}:")
            for f in failures:
                print("   ", f)
            return 1
        print(f"PASS {prog}: inclusive equal to callgrind's for {', '.join(f'{n} ({inclusive[n]})' for n in exact)};"
              f" {root} {share:.1f}%")
        return 0
    finally:
        shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
