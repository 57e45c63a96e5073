#!/usr/bin/env bash
# vs_cache.sh ATOMX PROGRAM: cachesim with a single data cache equals the
# shipped cache tool (tools/cache) with the same geometry and policy, per
# procedure (reads, writes, read misses, write misses), for LRU, FIFO,
# random replacement and no-write-allocate.  cachesim is rewritten once and
# simulates the four caches in one run (four configurations in one file);
# the cache tool is rewritten once per cache.  Address randomisation is off,
# so that both runs see the same addresses.
set -uo pipefail
atomx=$1 prog=$2
work=$(mktemp -d /tmp/atomx-cachesim-vscache.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
norandom="setarch $(uname -m) -R"
fail=0
cat >four.cache <<'CFG'
config lru
D1 size=8K assoc=2 line=32 policy=lru
config fifo
D1 size=8K assoc=4 line=32 policy=fifo
config random
D1 size=4K assoc=4 line=64 policy=random
config noalloc
D1 size=16K assoc=1 line=32 write-allocate=no
CFG
# (The variable is set for both tools' runs, and the two binaries' names have
# the same length: the environment, argv[0] and the file name are on the
# stack, and the stack's lines are part of what is compared.)
export ATOMX_CACHE_CONFIG=$work/four.cache
"$atomx" "$prog" -T cachesim -o simul.atom -q -- --refs d || exit 1
$norandom ./simul.atom >sim.txt || exit 1
# check INDEX CACHE_OPTIONS...
check() {
  local index=$1
  shift
  "$atomx" "$prog" -T cache -o cache.atom -q -- "$@" || { fail=1; return; }
  $norandom ./cache.atom >cache.txt || { fail=1; return; }
  cmp -s sim.txt cache.txt || { echo "FAIL: program output differs"; fail=1; }
  python3 - "$index" "$*" <<'PY' || fail=1
import json, sys
index, opts = int(sys.argv[1]), sys.argv[2]
cfg = json.load(open("cachesim.json"))["configurations"][index]
sim = {p["name"]: (p["Dr"], p["Dw"], p["misses"]["D1"]["dr"], p["misses"]["D1"]["dw"]) for p in cfg["procedures"]}
cache = {p["name"]: (p["reads"], p["writes"], p["read_misses"], p["write_misses"]) for p in json.load(open("cache.json"))["procedures"]}
sim = {n: v for n, v in sim.items() if any(v)}
bad = [f"{n}: cachesim {sim.get(n)}, cache {cache.get(n)}" for n in sorted(set(sim) | set(cache)) if sim.get(n) != cache.get(n)]
total = [sum(v[k] for v in cache.values()) for k in range(4)]
print(("FAIL " if bad or not cache else "PASS ") + f"{cfg['name']} ({opts}): {len(cache)} procedures, reads, writes, "
      f"read and write misses equal (total {total})" + "".join("\n    " + b for b in bad[:20]))
sys.exit(1 if bad or not cache else 0)
PY
}
check 0 --size 8K --assoc 2 --line 32 --policy lru
check 1 --size 8K --assoc 4 --line 32 --policy fifo
check 2 --size 4K --assoc 4 --line 64 --policy random
check 3 --size 16K --assoc 1 --line 32 --no-write-allocate
exit $fail
