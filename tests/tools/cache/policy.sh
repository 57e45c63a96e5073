#!/usr/bin/env bash
# policy.sh ATOMX POLICY_PROGRAM: the cache tool's FIFO, LRU and
# no-write-allocate policies against misses counted by hand (policy.c).
set -euo pipefail
atomx=$1 prog=$2
work=$(mktemp -d /tmp/atomx-cache-policy.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail=0
# check NAME EXPECTED_JSON TOOL_ARGS...: EXPECTED maps procedure -> [read misses, write misses]
check() {
  local name=$1 expected=$2
  shift 2
  "$atomx" "$prog" -T cache -o "$name.atom" -q -- --size 64 --line 32 --assoc 2 "$@"
  [ "$(./"$name.atom")" = done ] || { echo "FAIL $name: program output changed"; fail=1; return; }
  python3 - "$name" "$expected" <<'PY' || fail=1
import json, sys
name, expected = sys.argv[1], json.loads(sys.argv[2])
got = {p["name"]: [p["read_misses"], p["write_misses"]] for p in json.load(open("cache.json"))["procedures"]}
bad = {k: (got.get(k), v) for k, v in expected.items() if got.get(k) != v}
print(("FAIL " if bad else "PASS ") + name + ": " + (", ".join(f"{k}: got {g}, expected {v}" for k, (g, v) in bad.items()) or str(expected)))
sys.exit(1 if bad else 0)
PY
}
# pattern: 1000 rounds, +1 in the first round, +1 for ret (its stack line
# was evicted); writes: 100 lines, +1 for ret.
check lru '{"pattern": [2002, 0], "writes": [1, 100]}' --policy lru
check fifo '{"pattern": [3001, 0], "writes": [1, 100]}' --policy fifo
check noalloc '{"pattern": [2002, 0], "writes": [101, 100]}' --policy lru --no-write-allocate
exit $fail
