#!/usr/bin/env bash
# fastpath.sh ATOMX PROGRAM [SHAPE...]: the inline hit test (docs/cachesim.md, "Speed")
# is taken, and changes no count.  ONE rewrite, run with
#   - one configuration (the inline tests on: a reference to the most recent
#     line of its set in the first level makes no call), and
#   - the same configuration twice in one file (the tests off: several
#     configurations, every reference calls the simulator),
# for a split I1/D1/LL hierarchy and for a unified U1/L2 one (SHAPEs split,
# unified; both by default), or a 1 KB direct-mapped I1 with 32-byte lines
# (tiny: for longblock.c, whose 111-byte block keeps missing in its
# second line only).  Every count
# of every procedure and source line must be equal, cachesim.json must say
# which runs used the tests, and with them the simulator must see at most a
# fifth of the calls that are not first-level misses (the calls left are
# mostly misses: each miss needs the simulator).  Address randomisation is
# off (setarch -R), so that the stack lies in the same sets in every run.
set -uo pipefail
atomx=$1 prog=$2
shift 2
shapes=("$@")
((${#shapes[@]})) || shapes=(split unified)
work=$(mktemp -d /tmp/atomx-cachesim-fastpath.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$atomx" "$prog" -T cachesim -o prog.atom -q || exit 1
norandom="setarch $(uname -m) -R"
$norandom true || norandom=""
fail=0
for shape in "${shapes[@]}"; do
  case $shape in
    split) levels="I1 size=8K assoc=2 line=64
D1 size=16K assoc=4 line=64
LL size=128K assoc=8 line=64" ;;
    unified) levels="U1 size=16K assoc=4 line=32
L2 size=128K assoc=8 line=64" ;;
    tiny) levels="I1 size=1K assoc=1 line=32
D1 size=16K assoc=4 line=64" ;;
    *) echo "fastpath.sh: unknown shape $shape" >&2; exit 2 ;;
  esac
  printf 'config one\n%s\n' "$levels" >one.cache
  printf 'config one\n%s\nconfig two\n%s\n' "$levels" "$levels" >two.cache
  ATOMX_CACHE_CONFIG=one.cache $norandom ./prog.atom >/dev/null || fail=1
  mv cachesim.json fast.json
  ATOMX_CACHE_CONFIG=two.cache $norandom ./prog.atom >/dev/null || fail=1
  mv cachesim.json slow.json
  SHAPE=$shape python3 - <<'PY' || fail=1
import json, os, sys
fast, slow = json.load(open("fast.json")), json.load(open("slow.json"))
shape = os.environ["SHAPE"]
problems = []
f, s = fast["configurations"][0], slow["configurations"][0]
for key in ("total", "procedures", "lines"):
    if f[key] != s[key]:
        problems.append(f"{key} differ with the inline tests")
if fast["calls"]["inline_tests"] != {"fetch": True, "data": True}:
    problems.append(f"one configuration did not use the inline tests: {fast['calls']}")
if slow["calls"]["inline_tests"] != {"fetch": False, "data": False}:
    problems.append(f"two configurations used the inline tests: {slow['calls']}")
levels = {l["name"] for l in f["levels"]}
miss = f["total"]["misses"]
ifirst, dfirst = ("U1", "U1") if "U1" in levels else ("I1", "D1")
imiss = miss[ifirst]["ir"]
dmiss = miss[dfirst]["dr"] + miss[dfirst]["dw"]
for kind, m in (("fetch", imiss), ("data", dmiss)):
    a, b = fast["calls"][kind], slow["calls"][kind]
    if m == 0 or b <= m:
        problems.append(f"{kind}: {m} first-level misses, {b} calls without the tests: the simulator saw nothing")
    elif a - m > (b - m) // 5:
        problems.append(f"{kind} calls with the tests {a}, {m} first-level misses: more than a fifth of the {b - m} "
                        "calls without them that are not misses")
    print(f"{shape}: {kind} calls {a} with the inline tests, {b} without; {m} first-level misses")
for p in problems:
    print("FAIL " + shape + ": " + p)
if not problems:
    print(f"PASS {shape}: equal counts; the simulator sees a fraction of the references")
sys.exit(1 if problems else 0)
PY
done
exit $fail
