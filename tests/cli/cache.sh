#!/usr/bin/env bash
# cli.cache: `atomx cache` lists and cleans what atomx keeps, and `atomx run`
# keeps its program cache to ATOMX_CACHE_MAX, least recently used first.
#   cache.sh ATOMX PROG1 PROG2
set -euo pipefail
atomx=$1 p1=$2 p2=$3
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
d=$t/run
mkdir -p "$d"
# Three entries, a the least recently used; b has its .placement beside it.
head -c 3000 /dev/zero >"$d/a.x.1"; touch -d '3 days ago' "$d/a.x.1"
head -c 3000 /dev/zero >"$d/b.x.2"; head -c 100 /dev/zero >"$d/b.x.2.placement"; touch -d '2 days ago' "$d/b.x.2" "$d/b.x.2.placement"
head -c 3000 /dev/zero >"$d/c.x.3"; touch -d '1 day ago' "$d/c.x.3"
ATOMX_TOOL_CACHE=$t/tools "$atomx" cache --cache-dir "$d" >"$t/list"
cat "$t/list"
[ "$(grep -c "$d/" "$t/list")" -eq 3 ] || fail "not three entries listed"
[ "$(grep "$d/" "$t/list" | sed 's|.*/||' | tr '\n' ' ')" = "a.x.1 b.x.2 c.x.3 " ] || fail "not least recently used first"
grep -q "instrumented programs: 3, 0.0 MB" "$t/list" || fail "no total line"
# --trim 7K: 9,100 bytes; a goes (6,100 left), b and its placement stay.
"$atomx" cache --cache-dir "$d" --trim 7K -q
[ ! -e "$d/a.x.1" ] && [ -e "$d/b.x.2" ] && [ -e "$d/b.x.2.placement" ] && [ -e "$d/c.x.3" ] || fail "--trim 7K: $(ls "$d")"
# A bad size is a usage error.
rc=0; "$atomx" cache --cache-dir "$d" --trim 7X 2>"$t/err" || rc=$?
[ $rc -eq 2 ] && grep -q "not a size" "$t/err" || fail "--trim 7X: exit status $rc, $(cat "$t/err")"
# atomx run with ATOMX_CACHE_MAX=1: each new entry trims the others away,
# but not one used in the last ten minutes.
r=$t/run2
(cd "$t" && ATOMX_CACHE_MAX=1 "$atomx" run -q --cache-dir "$r" -T dyninst -- "$p1" >/dev/null 2>&1) || true
[ "$(ls "$r" | wc -l)" -eq 1 ] || fail "after the first run: $(ls "$r")"
first=$(ls "$r")
# (An entry used in the last ten minutes is spared: another run may be
# about to start it.  The second run finds the first's an hour old.)
touch -d '1 hour ago' "$r/$first"
(cd "$t" && ATOMX_CACHE_MAX=1 "$atomx" run -q --cache-dir "$r" -T dyninst -- "$p2" >/dev/null 2>&1) || true
[ "$(ls "$r" | wc -l)" -eq 1 ] && [ "$(ls "$r")" != "$first" ] || fail "after the second run: $(ls "$r")"
# A third with the second's entry fresh: both stay.
(cd "$t" && ATOMX_CACHE_MAX=1 "$atomx" run -q --cache-dir "$r" -T prof -- "$p1" >/dev/null 2>&1) || true
[ "$(ls "$r" | wc -l)" -eq 2 ] || fail "a recently used entry was trimmed: $(ls "$r")"
# Reusing an entry marks its use by its access time, never its modification
# time: a deferred end's dump names the program by it (runtime/stub/end.c),
# and a dump written by one run must still replay after the next.
u=$t/run3
(cd "$t" && "$atomx" run -q --cache-dir "$u" -T dyninst -- "$p1" >/dev/null 2>&1) || true
e=$(ls "$u"/* | grep -v placement | head -1)
touch -a -d '1 hour ago' "$e"
before=$(stat -c %y "$e") used=$(stat -c %X "$e")
(cd "$t" && "$atomx" run -q --cache-dir "$u" -T dyninst -- "$p1" >/dev/null 2>&1) || true
[ "$(stat -c %y "$e")" = "$before" ] || fail "a run changed the cached program's modification time: $before -> $(stat -c %y "$e")"
[ "$(stat -c %X "$e")" -gt "$used" ] || fail "a run did not mark the entry used (access time $(stat -c %X "$e"), was $used)"
# A file a killed atomx left half written is no entry, and a trim removes it
# once nothing has written to it for ten minutes.
head -c 100 /dev/zero >"$u/x.dyninst.1.atomx-tmp"; head -c 100 /dev/zero >"$u/y.dyninst.2.atomx-tmp"
touch -d '1 hour ago' "$u/x.dyninst.1.atomx-tmp"
! "$atomx" cache --cache-dir "$u" | grep -q atomx-tmp || fail "atomx cache lists a half-written file"
"$atomx" cache --cache-dir "$u" --trim 1G -q
[ ! -e "$u/x.dyninst.1.atomx-tmp" ] && [ -e "$u/y.dyninst.2.atomx-tmp" ] || fail "--trim: half-written files $(ls "$u")"
# --clean removes both caches (here a stand-in tool cache).
mkdir -p "$t/tools/k"; echo x >"$t/tools/k/f"
ATOMX_TOOL_CACHE=$t/tools "$atomx" cache --cache-dir "$d" --clean -q
[ -z "$(ls -A "$d")" ] && [ ! -e "$t/tools" ] || fail "--clean left $(ls -A "$d") $(ls -A "$t/tools" 2>/dev/null)"
echo PASS
