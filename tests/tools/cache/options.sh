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
bad "not a power of two" --line 48
bad "power-of-two number of sets" --size 8K --assoc 3
bad "policy: 'plru'" --policy plru
bad "unknown option 'bogus'" --bogus 1
bad "size: bad value '8Q'" --size 8Q
bad "cannot read config file" --config "$work/missing.conf"
printf 'size = 16K\nflavour = vanilla\n' >bad.conf
bad "unknown option 'flavour'" --config bad.conf

# A config file (comments, spaces) == the same options.  Without address
# randomisation: the stack's and the heap's addresses decide their sets.
norandom="setarch $(uname -m) -R"
printf '# a 2-way 16 KB cache\nsize = 16K\nassoc=2   # ways\n\nline = 64\npolicy = fifo\n' >good.conf
"$atomx" "$prog" -T cache -o conf.atom -q -- --config good.conf && $norandom ./conf.atom >/dev/null && mv cache.json conf.json
"$atomx" "$prog" -T cache -o opts.atom -q -- --size 16384 --assoc=2 --line 64 --policy fifo && $norandom ./opts.atom >/dev/null
if cmp -s conf.json cache.json && grep -q '"size":16384,"line":64,"assoc":2' cache.json; then
  echo "PASS: --config good.conf == --size 16384 --assoc=2 --line 64 --policy fifo"
else
  echo "FAIL: the config file and the options give different results"; fail=1
fi
# Later options override the file.
"$atomx" "$prog" -T cache -o over.atom -q -- --config good.conf --assoc 4 && ./over.atom >/dev/null
if grep -q '"assoc":4' cache.json && grep -q 'fifo' cache.out; then echo "PASS: options after --config override it"
else echo "FAIL: --assoc after --config"; fail=1; fi
exit $fail
