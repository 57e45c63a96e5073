#!/usr/bin/env python3
"""ctest_skips.py CTEST_LOG [ALLOWED]

Reads the output of a ctest run and fails (exit 1) when a test did not run
(skipped: a GoogleTest GTEST_SKIP, exit code 77, a missing resource) unless
ALLOWED (default tests/allowed_skips.txt) names it with a reason; prints
every skip either way.  scripts/test.sh runs it after ctest, so that no test
is skipped in silence.
"""
import os
import re
import sys


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    log = open(sys.argv[1], errors="replace").read()
    allowed_path = sys.argv[2] if len(sys.argv) == 3 else os.path.join(os.path.dirname(__file__), "allowed_skips.txt")
    allowed = {}
    for line in open(allowed_path):
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, reason = line.partition(" ")
            allowed[name] = reason.strip()
    skipped = sorted(set(re.findall(r"^\s*\d+ - (\S+) \((?:Skipped|Not Run|Disabled)\)", log, re.M)))
    total = re.search(r"tests passed, \d+ tests failed out of (\d+)", log)
    bad = [t for t in skipped if t not in allowed]
    for t in skipped:
        print(f"ctest_skips: {t} did not run" + (f" (allowed: {allowed[t]})" if t in allowed else " -- NOT ALLOWED"))
    if not total:
        print("ctest_skips: no ctest summary in the log", file=sys.stderr)
        return 1
    print(f"ctest_skips: {int(total.group(1))} tests, {len(skipped)} did not run, {len(bad)} of them not allowed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
