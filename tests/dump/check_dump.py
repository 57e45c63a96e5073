#!/usr/bin/env python3
"""check_dump.py ATOMX BINARY [--expect-tables] [--expect-landing-pads]

Checks `atomx dump BINARY` against binutils, an independent reader:
  * the procedures are exactly the distinct function-symbol addresses in
    code sections (readelf -s), minus .init/.fini/.plt;
  * for every procedure, the instruction addresses are exactly objdump's;
  * every jump-table target and every branch target inside a procedure is
    the start of a block; block ranges tile each procedure;
  * with --expect-tables / --expect-landing-pads, at least one exists.
Prints what differs and exits 1 on any difference.
"""
import re
import subprocess
import sys


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    atomx, binary = sys.argv[1], sys.argv[2]
    flags = set(sys.argv[3:])
    dump = run([atomx, "dump", binary])
    errors = []

    procs = {}  # start -> dict(end, insns, blocks, tables, branches)
    cur = None
    for line in dump.splitlines():
        m = re.match(r"^proc (\S+) 0x([0-9a-f]+)\.\.0x([0-9a-f]+) ", line)
        if m:
            cur = {"name": m.group(1), "start": int(m.group(2), 16), "end": int(m.group(3), 16),
                   "insns": [], "blocks": [], "tables": [], "targets": [], "pads": 0}
            procs[cur["start"]] = cur
            continue
        if cur is None:
            continue
        m = re.match(r"^  block \d+ 0x([0-9a-f]+)\.\.0x([0-9a-f]+)(.*)$", line)
        if m:
            cur["blocks"].append((int(m.group(1), 16), int(m.group(2), 16)))
            if "landing-pad" in m.group(3):
                cur["pads"] += 1
            continue
        m = re.match(r"^    0x([0-9a-f]+)  (\S+)(?: .*?)?(?:0x([0-9a-f]+)  <)?", line)
        if m:
            cur["insns"].append(int(m.group(1), 16))
            mm = re.match(r"^    0x[0-9a-f]+  (j\S*|loop\S*) 0x([0-9a-f]+)", line)
            if mm:
                cur["targets"].append(int(mm.group(2), 16))
            continue
        m = re.match(r"^  jump-table 0x[0-9a-f]+ \S+ entries \d+:(.*)$", line)
        if m:
            cur["tables"] += [int(x, 16) for x in m.group(1).split()]

    # 1. Procedures vs the symbol table.
    sections = {}
    for line in run(["readelf", "-SW", binary]).splitlines():
        m = re.match(r"^\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+[0-9a-f]+\s+\S+\s+(\S*)", line)
        if m:
            sections[int(m.group(1))] = (m.group(2), "X" in m.group(4))
    expected = set()
    for line in run(["readelf", "-sW", binary]).split("Symbol table '.symtab'")[-1].splitlines():
        f = line.split()
        if len(f) >= 8 and f[3] in ("FUNC", "IFUNC") and f[6].isdigit():
            name, is_code = sections.get(int(f[6]), ("", False))
            if is_code and not name.startswith(".plt") and name not in (".init", ".fini"):
                expected.add(int(f[1], 16))
    if expected != set(procs):
        errors.append("procedures differ from function symbols: missing %s, extra %s" % (
            sorted(hex(a) for a in expected - set(procs))[:10], sorted(hex(a) for a in set(procs) - expected)[:10]))

    # 2. Instruction boundaries vs objdump.
    objdump_insns = set()
    for line in run(["objdump", "-d", "--no-show-raw-insn", binary]).splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s+\S", line)
        if m:
            objdump_insns.add(int(m.group(1), 16))
    for p in procs.values():
        ours = p["insns"]
        theirs = sorted(a for a in objdump_insns if p["start"] <= a < p["end"])
        if ours and ours != theirs:
            errors.append("%s: instruction addresses differ from objdump (first difference near %s)" % (
                p["name"], hex(next((a for a, b in zip(ours, theirs) if a != b), ours[-1]))))

    # 3. Blocks tile the procedure; targets start blocks.
    tables = pads = 0
    for p in procs.values():
        if not p["blocks"]:
            continue
        starts = {b[0] for b in p["blocks"]}
        pos = p["start"]
        for b in p["blocks"]:
            if b[0] != pos:
                errors.append("%s: block at %s does not follow %s" % (p["name"], hex(b[0]), hex(pos)))
            pos = b[1]
        for t in p["targets"] + p["tables"]:
            if p["start"] <= t < p["end"] and t not in starts:
                errors.append("%s: target %s does not start a block" % (p["name"], hex(t)))
        tables += len(p["tables"])
        pads += p["pads"]
    if "--expect-tables" in flags and tables == 0:
        errors.append("no jump table found")
    if "--expect-landing-pads" in flags and pads == 0:
        errors.append("no landing pad found")

    for e in errors[:20]:
        print("FAIL:", e)
    print("%s: %d procedures, %d jump-table targets, %d landing pads, %d errors" % (
        binary, len(procs), tables, pads, len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
