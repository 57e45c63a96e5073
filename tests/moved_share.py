#!/usr/bin/env python3
"""moved_share.py ATOMX MIN_PERCENT BINARY...

Rewrites each BINARY with the null tool and checks, from atomx's JSON
report, that at least MIN_PERCENT of its procedures, by count and by bytes,
were moved.  Prints one line per binary and the procedures left in place.
"""
import json
import os
import subprocess
import sys
import tempfile


def main():
    atomx, minimum, binaries = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for b in binaries:
            out, report = os.path.join(tmp, "out"), os.path.join(tmp, "report.json")
            subprocess.run([atomx, "-q", b, "-o", out, "--report", report], check=True)
            r = json.load(open(report))
            by_count = 100.0 * r["moved_procedures"] / max(r["procedures"], 1)
            by_bytes = 100.0 * r["moved_code_bytes"] / max(r["code_bytes"], 1)
            ok = by_count >= minimum and by_bytes >= minimum
            failed += not ok
            print("%s %-28s %6.2f%% of %5d procedures, %6.2f%% of %8d bytes moved" % (
                "PASS" if ok else "FAIL", os.path.basename(b), by_count, r["procedures"], by_bytes, r["code_bytes"]))
            for u in r["unmoved"][:5]:
                print("      stays: %s: %s" % (u["name"], u["reason"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
