#!/usr/bin/env bash
# badconfig.sh ATOMX PROGRAM: a bad cache configuration stops the
# instrumented program before it starts with ONE line on stderr that names
# the file and the line (cachesim: FILE:LINE: problem) and status 1, and the
# program's own output does not appear; a bad tool option stops the rewrite.
set -uo pipefail
atomx=$1 prog=$2
work=$(mktemp -d /tmp/atomx-cachesim-badconfig.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail=0
"$atomx" "$prog" -T cachesim -o prog.atom -q || { echo "FAIL: the rewrite failed"; exit 1; }
# bad NAME EXPECTED_LINE CONFIG_TEXT: the file NAME.cache holds CONFIG_TEXT.
bad() {
  local name=$1 want=$2
  printf '%b' "$3" >"$name.cache"
  ATOMX_CACHE_CONFIG="$work/$name.cache" ./prog.atom >out.txt 2>err.txt
  local rc=$? lines
  lines=$(wc -l <err.txt)
  if [ $rc -ne 1 ] || [ "$lines" -ne 1 ] || [ -s out.txt ] || ! grep -qF -- "cachesim: $work/$want" err.txt; then
    echo "FAIL $name: status $rc, $lines line(s), expected 'cachesim: $work/$want'; got:"; cat err.txt out.txt; fail=1
  else
    echo "PASS $name: $(cat err.txt)"
  fi
}
bad sets "sets.cache:2: D1: size / (line * assoc) = 8192 / (32 * 3) is not a power-of-two number of sets" \
  "I1 size=32K assoc=8 line=64\nD1 size=8K assoc=3 line=32\n"
bad line "line.cache:1: line: '48' is not a power of two" "D1 size=8K assoc=2 line=48\n"
bad key "key.cache:3: unknown key 'colour'" "# comment\n\nD1 size=8K assoc=2 line=32 colour=blue\n"
bad statement "statement.cache:1: unknown statement 'L4'" "L4 size=8M assoc=16 line=64\n"
bad valgrind "valgrind.cache:1: --D1=32768,8: expected --D1=size,assoc,line_size" "--I1=32768,8,64 --D1=32768,8\n"
bad option "option.cache:1: unknown option '--L2=" "--L2=262144,8,64\n"
bad order "order.cache:2: D1 after the outer level LL" "LL size=8M assoc=16 line=64\nD1 size=32K assoc=8 line=64\n"
bad twice "twice.cache:3: a second D1" "config a\nD1 size=32K assoc=8 line=64\nD1 size=16K assoc=8 line=64\n"
bad unified "unified.cache:2: U1 (a unified first level) with I1" "I1 size=32K assoc=8 line=64\nU1 size=32K assoc=8 line=64\n"
bad switch "switch.cache:2: context-switch needs every=N" "D1 size=8K assoc=2 line=32\ncontext-switch unit=work\n"
bad empty "empty.cache: no cache level" "# nothing\n"
bad nofirst "nofirst.cache:1: configuration 'x' has no first level" "config x\nLL size=8M assoc=16 line=64\n"
bad sharedfirst "sharedfirst.cache:1: D1: shared=yes: a first level is each thread's own" "D1 size=8K assoc=2 line=32 shared=yes\n"
bad sharedvalue "sharedvalue.cache:2: shared: 'maybe' (yes: one level for all threads; no: one per thread)" \
  "D1 size=8K assoc=2 line=32\nLL size=1M assoc=8 line=64 shared=maybe\n"
# A missing file.
ATOMX_CACHE_CONFIG="$work/missing.cache" ./prog.atom >out.txt 2>err.txt
if [ $? -eq 1 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -qF "cachesim: $work/missing.cache: cannot read" err.txt; then
  echo "PASS missing: $(cat err.txt)"
else echo "FAIL missing:"; cat err.txt; fail=1; fi
# Instrumented for data only: a configuration with an I1 is refused.
"$atomx" "$prog" -T cachesim -o d.atom -q -- --refs d || fail=1
printf 'I1 size=32K assoc=8 line=64\n' >i.cache
ATOMX_CACHE_CONFIG="$work/i.cache" ./d.atom >out.txt 2>err.txt
if [ $? -eq 1 ] && grep -qF "simulates instruction fetches (I1), but" err.txt; then echo "PASS refs: $(cat err.txt)"
else echo "FAIL refs:"; cat err.txt; fail=1; fi
# Rewrite-time options.
if "$atomx" "$prog" -T cachesim -o x.atom -q -- --refs x 2>err.txt || ! grep -q "cachesim: --refs needs i, d or id, not 'x'" err.txt; then
  echo "FAIL --refs x:"; cat err.txt; fail=1
else echo "PASS --refs x: $(grep cachesim: err.txt)"; fi
if "$atomx" "$prog" -T cachesim -o x.atom -q -- --libc some 2>err.txt || ! grep -q "cachesim: --libc needs model or none, not 'some'" err.txt; then
  echo "FAIL --libc some:"; cat err.txt; fail=1
else echo "PASS --libc some: $(grep cachesim: err.txt)"; fi
if "$atomx" "$prog" -T cachesim -o x.atom -q -- --size 8K 2>err.txt || ! grep -q "cachesim: unknown option '--size'" err.txt; then
  echo "FAIL --size:"; cat err.txt; fail=1
else echo "PASS --size: $(grep cachesim: err.txt)"; fi
exit $fail
