#!/usr/bin/env bash
# Check a rewriter against the corpus.
#
#   corpus/check.sh [--only NAME] [--keep] [--ignore GLOB]... -- REWRITE_CMD...
#
# For every built variant B (see corpus/build.sh --list) it runs
#   REWRITE_CMD... B -o OUT
# then runs the program's workload (corpus/workloads/<prog>.sh) once with B and
# once with OUT, and compares stdout, stderr, exit status and every file the
# workload left in its scratch directory, byte for byte.
#
#   --only NAME   only the variants of program NAME, or only variant NAME
#   --keep        keep the work directory (printed at the end)
#   --ignore GLOB files whose name matches GLOB are not compared (a tool's
#                 own outputs, e.g. 'cache.out*'); repeatable
#
# Environment: ATOMX_CORPUS_DIR (default $HOME/.cache/atomx-corpus),
#              ATOMX_CHECK_TIMEOUT seconds per workload run (default 60).
# Prints "PASS name" / "FAIL name: what differed" per variant and ends with
# "N passed, N failed". Exit status 1 if any variant failed.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CORPUS_DIR=${ATOMX_CORPUS_DIR:-$HOME/.cache/atomx-corpus}
TIMEOUT=${ATOMX_CHECK_TIMEOUT:-60}

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "check.sh: ERROR: $*" >&2; exit 2; }

ONLY= KEEP=
IGNORE=()
while (($#)); do
  case $1 in
    --only) [[ $# -ge 2 ]] || die "--only needs a name"; ONLY=$2; shift 2 ;;
    --only=*) ONLY=${1#--only=}; shift ;;
    --keep) KEEP=1; shift ;;
    --ignore) [[ $# -ge 2 ]] || die "--ignore needs a file name pattern"; IGNORE+=(-not -name "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) die "unknown argument '$1' (usage: check.sh [--only NAME] [--keep] [--ignore GLOB]... -- REWRITE_CMD...)" ;;
  esac
done
(($# > 0)) || die "no rewrite command (usage: check.sh [--only NAME] [--keep] -- REWRITE_CMD...)"
REWRITE=("$@")

mapfile -t ALL < <("$HERE/build.sh" --list) || die "build.sh --list failed"
SELECTED=()
for v in "${ALL[@]}"; do
  if [[ -z $ONLY || ${v%%-*} == "$ONLY" || $v == "$ONLY" ]]; then SELECTED+=("$v"); fi
done
((${#SELECTED[@]} > 0)) || die "--only '$ONLY' matches no variant (see corpus/build.sh --list)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/atomx-check.XXXXXX") || die "mktemp failed"
if [[ -z $KEEP ]]; then trap 'rm -rf "$WORK"' EXIT; fi

# Print at most N lines of a file, indented.
show() { # file [n]
  local n=${2:-20} total
  total=$(wc -l <"$1")
  head -n "$n" "$1" | cut -c1-160 | sed 's/^/    | /'
  ((total > n)) && echo "    | ... ($((total - n)) more lines)"
  return 0
}

# Run the workload of $prog with binary $1; results under $d/$2.*
# Both runs use the very same paths (binary, scratch dir, HOME, TMPDIR), so
# program names and paths in messages cannot differ between them.
run_workload() { # binary tag
  rm -rf "$d/bin" "$d/run" "$d/home" "$d/tmp"
  mkdir -p "$d/bin" "$d/run" "$d/home" "$d/tmp"
  install -m755 "$1" "$d/bin/$prog"
  local rc=0
  ( cd "$d/run" && exec env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$d/home" TMPDIR="$d/tmp" \
      LC_ALL=C LANG=C TZ=UTC \
      timeout -k 10 "$TIMEOUT" bash "$wl" "$d/bin/$prog" ) >"$d/$2.stdout" 2>"$d/$2.stderr" </dev/null || rc=$?
  echo "$rc" >"$d/$2.status"
  mv "$d/run" "$d/$2.files"
  (cd "$d/$2.files" && find . -mindepth 1 "${IGNORE[@]}" -printf '%P %y\n' | LC_ALL=C sort) >"$d/$2.list"
}

# Looks like text? (few non-printable bytes in the first 64 KiB)
is_text() { # file
  local n bad
  n=$(head -c 65536 "$1" | wc -c)
  ((n == 0)) && return 0
  bad=$(head -c 65536 "$1" | LC_ALL=C tr -d '[:print:][:space:]' | wc -c)
  ((bad * 20 < n))
}

# Compare two files; on a difference append a summary word and details
# (a short diff for text, the first differing byte for binary data). Only
# the first few differing files get details.
compare_file() { # label a b
  cmp -s "$2" "$3" && return 0
  what+=("$1")
  ((${#what[@]} > 5)) && return 0
  local sa sb first
  sa=$(stat -c %s "$2") sb=$(stat -c %s "$3")
  first=$(cmp "$2" "$3" 2>&1 | head -1)
  case $first in
    *"differ: byte"*) first="first difference at byte ${first##*differ: byte }" ;;
    *EOF*) first="one is a prefix of the other" ;;
  esac
  {
    echo "  $1 differs ($sa vs $sb bytes; $first)"
    if is_text "$2" && is_text "$3"; then
      diff -a -u --label "original/$1" --label "rewritten/$1" "$2" "$3" >"$d/diff.tmp" 2>&1
      show "$d/diff.tmp" 12
    else
      echo "    | (binary data)"
    fi
  } >>"$details"
}

pass=0 fail=0
for v in "${SELECTED[@]}"; do
  prog=${v%%-*}
  B=$CORPUS_DIR/bin/$v
  wl=$HERE/workloads/$prog.sh
  d=$WORK/$v
  mkdir -p "$d"
  details=$d/details.txt
  : >"$details"
  what=()

  if [[ ! -x $B ]]; then
    echo "FAIL $v: not built ($B missing; run corpus/build.sh)"
    fail=$((fail + 1)); continue
  fi
  if [[ ! -f $wl ]]; then
    echo "FAIL $v: no workload $wl"
    fail=$((fail + 1)); continue
  fi

  # 1. rewrite
  out=$d/rewritten
  rc=0
  "${REWRITE[@]}" "$B" -o "$out" >"$d/rewrite.stdout" 2>"$d/rewrite.stderr" </dev/null || rc=$?
  if ((rc != 0)) || [[ ! -f $out ]]; then
    if ((rc != 0)); then echo "FAIL $v: rewriter exited with status $rc"
    else echo "FAIL $v: rewriter exited 0 but wrote no $out"; fi
    cat "$d/rewrite.stdout" "$d/rewrite.stderr" >"$d/rewrite.all"
    show "$d/rewrite.all" 20
    fail=$((fail + 1)); continue
  fi

  # 2. run the workload with each binary
  run_workload "$B" orig
  run_workload "$out" rew

  # 3. compare
  so=$(cat "$d/orig.status") sr=$(cat "$d/rew.status")
  if [[ $so != "$sr" ]]; then
    if [[ $sr == 124 || $sr == 137 ]]; then what+=("exit status ($so vs $sr: rewritten run timed out after ${TIMEOUT}s)")
    else what+=("exit status ($so vs $sr)"); fi
  fi
  compare_file stdout "$d/orig.stdout" "$d/rew.stdout"
  compare_file stderr "$d/orig.stderr" "$d/rew.stderr"
  if ! cmp -s "$d/orig.list" "$d/rew.list"; then
    what+=("set of files")
    { echo "  files in the scratch dir differ (name type):"
      diff -u --label original --label rewritten "$d/orig.list" "$d/rew.list" >"$d/diff.tmp"
      show "$d/diff.tmp" 15; } >>"$details"
  fi
  while read -r f t; do
    [[ $t == f ]] || continue
    grep -qxF "$f f" "$d/rew.list" || continue
    compare_file "$f" "$d/orig.files/$f" "$d/rew.files/$f"
  done <"$d/orig.list"

  if ((${#what[@]} == 0)); then
    echo "PASS $v"
    pass=$((pass + 1))
    [[ -n $KEEP ]] || rm -rf "$d"
  else
    summary=
    for ((i = 0; i < ${#what[@]} && i < 6; i++)); do summary+="${summary:+, }${what[i]}"; done
    ((${#what[@]} > 6)) && summary+=" and $((${#what[@]} - 6)) more"
    echo "FAIL $v: differs in $summary"
    cat "$details"
    fail=$((fail + 1))
    [[ -n $KEEP ]] || rm -rf "$d"
  fi
done

[[ -n $KEEP ]] && echo "work directory kept: $WORK"
echo "$pass passed, $fail failed"
((fail == 0)) || exit 1
exit 0
