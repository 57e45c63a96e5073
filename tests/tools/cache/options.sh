#!/usr/bin/env bash
# options.sh ATOMX PROGRAM: the cache tool's options.  Bad ones fail the
# rewrite with one line naming the problem; a config file gives the same
# results as the same options on the command line.  (Each rewrite compiles
# the tool: a few seconds; so a sample of the checks Instrument makes.)
set -uo pipefail
atomx=$1 prog=$2
work=$(mktemp -d /tmp/atomx-cache-options.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail=0
# bad EXPECTED_TEXT TOOL_ARGS...
bad() {
  local want=$1
  shift
  if "$atomx" "$prog" -T cache -o bad.atom -q -- "$@" 2>err.txt; then
    echo "FAIL: '$*' was accepted"; fail=1; return
  fi
  if ! grep -q -- "cache: .*$want" err.txt; then
    echo "FAIL: '$*': expected a line with 'cache: ...$want', got:"; cat err.txt; fail=1; return
  fi
  echo "PASS: '$*' -> $(grep -m1 -- "cache: " err.txt)"
}
bad "line: '48' is not a power of two" --line 48
bad "D1: size / (line \* assoc) = 8192 / (32 \* 3) is not a power-of-two number of sets" --size 8K --assoc 3
bad "policy: 'plru'" --policy plru
bad "unknown option 'bogus'" --bogus 1
bad "size: '8Q' is not a size in bytes" --size 8Q
bad "--assoc: bad value '2 line=64'" --assoc "2 line=64"
bad "write-allocate: '1' (yes or no)" --write-allocate 1
bad "missing.cache: cannot read the cache configuration file" --config "$work/missing.cache"
printf 'D1 size=16K assoc=2 line=32 colour=blue\n' >bad.cache
bad "bad.cache:1: unknown key 'colour'" --config bad.cache
printf 'size = 16K\n' >old.cache  # the format --config once read
bad "old.cache:1: unknown statement 'size'" --config old.cache
printf 'D1 size=16K assoc=2 line=32\nLL size=1M assoc=16 line=64\n' >two.cache
bad "two.cache: the cache tool simulates one data cache" --config two.cache

# A config file of the one format (comments, spaces; in its own words, and
# in cachegrind's) == the same options.  Without address randomisation: the
# stack's and the heap's addresses decide their sets.
norandom="setarch $(uname -m) -R"
printf '# a 2-way 16 KB cache\n  D1 size=16K   assoc=2 line=64 policy=fifo  # ways\n\n' >good.cache
printf 'config valgrind\n--D1=16384,2,64\n' >cg.cache
"$atomx" "$prog" -T cache -o conf.atom -q -- --policy lru --config good.cache && $norandom ./conf.atom >/dev/null && mv cache.json conf.json
"$atomx" "$prog" -T cache -o cgcf.atom -q -- --config cg.cache --policy=fifo && $norandom ./cgcf.atom >/dev/null && mv cache.json cg.json
"$atomx" "$prog" -T cache -o opts.atom -q -- --size 16384 --assoc=2 --line 64 --policy fifo && $norandom ./opts.atom >/dev/null
if cmp -s conf.json cache.json && cmp -s cg.json cache.json && grep -q '"size":16384,"line":64,"assoc":2' cache.json &&
   grep -q '"policy":"fifo"' cache.json; then
  echo "PASS: --config good.cache == --config cg.cache --policy=fifo == --size 16384 --assoc=2 --line 64 --policy fifo"
else
  echo "FAIL: the config files and the options give different results"; fail=1
fi
# Later options override the file.
"$atomx" "$prog" -T cache -o over.atom -q -- --config good.cache --assoc 4 && ./over.atom >/dev/null
if grep -q '"assoc":4' cache.json && grep -q 'fifo' cache.out; then echo "PASS: options after --config override it"
else echo "FAIL: --assoc after --config"; fail=1; fi
exit $fail
