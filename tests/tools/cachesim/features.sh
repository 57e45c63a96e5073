#!/usr/bin/env bash
# features.sh ATOMX PROGRAM: what the cachegrind comparison cannot see.
#  - the per-reference routines are light (no vector state saved);
#  - cg_annotate opens cachesim.cg, and its totals are cachesim.json's;
#    each function's cost lines in cachesim.cg sum to its procedure's
#    counts in cachesim.json, every event (tool.cachesim.features.fails:
#    one cost line one too high, ATOMX_TEST_MISCOUNT=cg.Ir);
#  - the default hierarchy (no ATOMX_CACHE_CONFIG) is the documented one;
#  - a unified first level (U1) with L2 and L3: every instruction fetch and
#    data reference goes through U1, the outer levels see only what the
#    level before missed;
#  - the periodic context switch: every N instructions flushes the
#    hierarchy (Ir / N switches; never fewer misses than without it).
set -uo pipefail
atomx=$1 prog=$2
work=$(mktemp -d /tmp/atomx-cachesim-features.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail=0
"$atomx" "$prog" -T cachesim -o prog.atom 2>summary.txt || { cat summary.txt; exit 1; }
# Every per-reference call light (no vector state saved), libc's modelled
# calls too: all but the three calls at program start (CsInit,
# CsLibraryCalls) and end.  (The compiler can make a routine heavy on
# its own, pairing stores with SSE: docs/instrumenting.md, "Cheap calls".)
if python3 - <<'PY'
import re, sys
line = next(l for l in open("summary.txt") if "analysis routine" in l)
m = re.search(r"(\d+) call\(s\) at .*?(\d+) without vector state", line)
calls, light = int(m.group(1)), int(m.group(2))
print(("PASS" if light == calls - 3 else "FAIL") + f" light calls: {light} of {calls} without vector state (all but start and end)")
sys.exit(0 if light == calls - 3 else 1)
PY
then :; else fail=1; fi
unset ATOMX_CACHE_CONFIG
./prog.atom >/dev/null || fail=1
if cg_annotate cachesim.cg >annotate.txt 2>&1; then
  python3 - <<'PY' || fail=1
import json, re, sys
total = json.load(open("cachesim.json"))["configurations"][0]["total"]
text = open("annotate.txt").read()
m = re.search(r"^\s*([\d,]+)\s.*PROGRAM TOTALS", text, re.M)
ir = int(m.group(1).replace(",", "")) if m else None
levels = [l["name"] for l in json.load(open("cachesim.json"))["configurations"][0]["levels"]]
ok = ir == total["Ir"] and levels == ["I1", "D1", "LL"] and "flush" in text
print(("PASS" if ok else "FAIL") + f" cg_annotate cachesim.cg: Ir {ir} (cachesim.json: {total['Ir']}); default levels {levels}")
# Each function's cost lines against its procedure in cachesim.json: the
# events are cachegrind's names (Ir, I1mr, ILmr, Dr, D1mr, DLmr, Dw, ...).
conf = json.load(open("cachesim.json"))["configurations"][0]
costs, fn, events = {}, None, []
for line in open("cachesim.cg"):
    if line.startswith("events:"):
        events = line.split()[1:]
    elif line.startswith("fn="):
        fn = line[3:].rstrip("\n")
    elif line[:1].isdigit() and fn:
        row = costs.setdefault(fn, [0] * len(events))
        for k, v in enumerate(line.split()[1:]):
            row[k] += int(v)
def as_cg(p):  # a JSON procedure in cachegrind's events
    out = {"Ir": p["Ir"], "Dr": p["Dr"], "Dw": p["Dw"]}
    for lvl, m in p["misses"].items():
        tag = "L" if lvl == levels[-1] else lvl[-1]
        for k, v in m.items():
            out[("I" if k == "ir" else "D") + tag + ("mw" if k == "dw" else "mr")] = v
    return out
want = {p["name"]: as_cg(p) for p in conf["procedures"]}
bad = [f"cachesim.cg: function {n} {e} {costs.get(n, [0] * len(events))[k]}, cachesim.json {want.get(n, {}).get(e, 0)}"
       for n in sorted(set(costs) | set(want)) for k, e in enumerate(events)
       if costs.get(n, [0] * len(events))[k] != want.get(n, {}).get(e, 0)]
print(("FAIL" if bad else "PASS") + f" cachesim.cg: {len(costs)} functions' {len(events)} events equal to cachesim.json's"
      + "".join("\n    " + b for b in bad[:20]))
sys.exit(0 if ok and not bad else 1)
PY
else echo "FAIL: cg_annotate cachesim.cg:"; cat annotate.txt; fail=1; fi

cat >more.cache <<'CFG'
config unified
U1 size=16K assoc=4 line=64
L2 size=64K assoc=8 line=64
L3 size=256K assoc=8 line=64
config split
I1 size=16K assoc=4 line=64
D1 size=16K assoc=4 line=64
config switching
I1 size=16K assoc=4 line=64
D1 size=16K assoc=4 line=64
context-switch every=20000 unit=instructions
CFG
ATOMX_CACHE_CONFIG=more.cache ./prog.atom >/dev/null || fail=1
python3 - <<'PY' || fail=1
import json, sys
data = json.load(open("cachesim.json"))
c = {x["name"]: x for x in data["configurations"]}
u, s, w = c["unified"]["total"], c["split"]["total"], c["switching"]["total"]
m = u["misses"]
problems = []
if set(m["U1"]) != {"ir", "dr", "dw"}:
    problems.append(f"U1 should count instruction and data misses: {m['U1']}")
for outer, inner in (("L2", "U1"), ("L3", "L2")):
    for k in ("ir", "dr", "dw"):
        if m[outer][k] > m[inner][k]:
            problems.append(f"{outer} {k} misses {m[outer][k]} > {inner}'s {m[inner][k]}")
if (u["Ir"], u["Dr"], u["Dw"]) != (s["Ir"], s["Dr"], s["Dw"]):
    problems.append("the configurations saw different references")
switches = c["switching"]["context_switch"]["switches"]
if switches != w["Ir"] // 20000:
    problems.append(f"{switches} context switches for {w['Ir']} instructions, every 20000")
for lvl, k in (("I1", "ir"), ("D1", "dr"), ("D1", "dw")):
    if w["misses"][lvl][k] < s["misses"][lvl][k]:
        problems.append(f"fewer {lvl} {k} misses with context switches ({w['misses'][lvl][k]} < {s['misses'][lvl][k]})")
print(("FAIL " if problems else "PASS ") + f"U1+L2+L3 {m}; {switches} context switches, I1 misses "
      f"{s['misses']['I1']['ir']} -> {w['misses']['I1']['ir']}" + "".join("\n    " + p for p in problems))
sys.exit(1 if problems else 0)
PY
exit $fail
