#!/usr/bin/env python3
"""has_sequence.py MELT.json OCCURRENCES LENGTH: exits 0 when the exact
method's sequences in `atomx melt --json`'s report hold one with that many
occurrences and that length, 1 (saying what it found) otherwise."""
import json
import sys

report = json.load(open(sys.argv[1]))
want = (int(sys.argv[2]), int(sys.argv[3]))
found = [(q["occurrences"], q["length"]) for q in report.get("exact", {}).get("sequences", [])]
if want in found:
    sys.exit(0)
print(f"has_sequence: no exact sequence of {want[0]} occurrences x length {want[1]} in {sys.argv[1]}: {found}",
      file=sys.stderr)
sys.exit(1)
