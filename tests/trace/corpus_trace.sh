#!/usr/bin/env bash
# corpus_trace.sh ATOMX [PROGRAM...]: `atomx trace` + `atomx regen` on the
# corpus programs (default: every program, its gcc -O2 and clang -O2
# builds; or the variants named), each running one command of its kind
# below, two at a time: the program's output unchanged when traced, the
# block sequence of every thread equal to the naive tracer's, every
# instruction's executions equal to callgrind's Ir, and every function's Ir
# in `atomx regen --cachegrind-out` equal to cachegrind's
# (tests/trace/regen_oracle.py).  Needs the corpus (corpus/build.sh).
# Exits non-zero when any program fails.  ATOMX_TEST_TRACE_ORACLE=CMD puts
# CMD in the oracle's place: the must-fail test (trace.corpus_script.fails)
# gives one that always fails, and this script must fail with it.
set -uo pipefail
atomx=$(realpath "$1")
shift
progs=("$@")
if ((${#progs[@]} == 0)); then
  for p in gzip bzip2 xz pbzip2 lua sqlite3 lzip muparser bc; do progs+=("$p-gcc-O2" "$p-clang-O2"); done
fi
bin_dir=${ATOMX_CORPUS_DIR:-$HOME/.cache/atomx-corpus}/bin
here=$(dirname "$(realpath "$0")")
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
# Fixed input (not a file that changes with every build): pseudo-random
# text from a Park-Miller generator, about 60 KB.
awk 'BEGIN { x = 11; for (i = 0; i < 1500; i++) { line = ""; for (k = 0; k < 8; k++) { x = (x * 16807) % 2147483647;
     line = line sprintf("w%x ", x % 4096) } print line } }' >"$w/input"
cat >"$w/exprs" <<'IN'
a*3+b/2
sin(1)*cos(b)+sqrt(2)
min(4,a,b,7)
a>2 ? 5 : b
(((3)))-(-(-4))
1+
(2
sin()
a=2, b=a*2+1, a+b
sum(1,2,3,4,5)
strfun2("text",1,2)
3=4
throw(1)
1+1
IN
cat >"$w/bc" <<'IN'
scale = 60; 4 * a(1); e(1) - l(10)
define f(n) { if (n < 2) return (n); return (f(n - 1) + f(n - 2)) }
f(12); 2 ^ 200; obase = 16; 2 ^ 100; obase = 10
1 / 0
sqrt(-1)
3 + * 4
n = read(); n * n
IN
echo 12345678901234567890 >"$w/bc.in"

one() {
  # (An exported function runs in a new bash: the options are set here, or
  # the pipe below would return sed's status, not the oracle's.)
  set -o pipefail
  local v=$1 args=() opts=()
  case ${v%%-*} in
    gzip | bzip2) args=(-c "$w/input") ;;
    lzip) args=(-1 -c "$w/input") ;;
    # One thread: with -T2 its threads' waits depend on the schedule, and the
    # naive tracer's run is another schedule (masked.c tests what -T2 needs).
    xz) args=(-T1 -1 -c "$w/input") ;;
    # Its threads share the blocks differently in each run.
    pbzip2) args=(-p2 -b1 -c "$w/input"); opts=(--threads-vary) ;;
    lua) args=(-e 'local t = {} for i = 1, 3000 do t[i] = tostring(i * 7919 % 1000) end
                   table.sort(t) local ok, e = pcall(error, "x") print(#table.concat(t), ok, e)') ;;
    sqlite3) args=(:memory: 'CREATE TABLE t(a, b);
        WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000) INSERT INTO t SELECT x, x * x % 97 FROM c;
        CREATE INDEX tb ON t(b); SELECT b, count(*), sum(a) FROM t GROUP BY b ORDER BY 2 DESC, 1 LIMIT 3; SELECT nosuch();') ;;
    muparser) opts=(--stdin "$w/exprs") ;;
    # The math library, recursion, a runtime and a syntax error, read().
    bc) args=(-l -q "$w/bc"); opts=(--stdin "$w/bc.in") ;;
    *) echo "corpus_trace.sh: no command for $v" >&2; return 1 ;;
  esac
  ${ATOMX_TEST_TRACE_ORACLE:-python3 $here/regen_oracle.py} --atomx "$atomx" --cachegrind "${opts[@]}" "$bin_dir/$v" \
    -- "${args[@]}" 2>&1 | sed "s|$bin_dir/||"
}
export -f one
export atomx w here bin_dir
# xargs exits 123 when any `one` failed; pipefail makes that the script's.
printf '%s\n' "${progs[@]}" | xargs -P 2 -I{} bash -c 'one {}'
status=$?
((status == 0)) || echo "corpus_trace.sh: FAILED (xargs status $status)" >&2
exit $status
