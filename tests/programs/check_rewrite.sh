#!/usr/bin/env bash
# check_rewrite.sh ATOMX BINARY [ARGS...]
#
# Rewrites BINARY with `ATOMX --poison-original BINARY -o OUT`, then runs the
# original and the rewritten program under the same file name, each in its
# own empty temporary directory, with the same ARGS, environment and stdin
# (/dev/null), and compares stdout, stderr and the exit status byte for byte.
# Exit 0 if everything is identical; 1 (printing what differed) if the
# rewriter fails, produces no runnable output, modifies its input, or the
# runs differ; 2 on usage errors.
#
# Environment: ATOMX_CHECK_ARGS     extra atomx options (e.g. --pad-instructions 5)
#              ATOMX_CHECK_TIMEOUT  seconds per run (default 60)
#              ATOMX_CHECK_KEEP=1   keep the temporary directory on failure
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 ATOMX BINARY [ARGS...]" >&2
    exit 2
fi
atomx=$1
bin=$2
shift 2
timeout_s=${ATOMX_CHECK_TIMEOUT:-60}

[ -f "$bin" ] || { echo "check_rewrite: no such binary: $bin" >&2; exit 2; }
[ -x "$atomx" ] || { echo "check_rewrite: rewriter not executable: $atomx" >&2; exit 2; }

name=$(basename "$bin")
work=$(mktemp -d "${TMPDIR:-/tmp}/atomx-check.XXXXXX")
cleanup() {
    if [ "${failed:-0}" = 1 ] && [ "${ATOMX_CHECK_KEEP:-0}" = 1 ]; then
        echo "check_rewrite: kept $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
mkdir "$work/orig" "$work/new" "$work/log"
cp -p "$bin" "$work/orig/$name"
cp -p "$bin" "$work/input-copy"

fail() {
    failed=1
    echo "FAIL: $*"
}

# no core files from crashing runs
ulimit -c 0 2>/dev/null

# 1. rewrite
# shellcheck disable=SC2086  # ATOMX_CHECK_ARGS: extra atomx options, split on spaces
"$atomx" --poison-original ${ATOMX_CHECK_ARGS:-} "$bin" -o "$work/new/$name" \
    >"$work/log/atomx.out" 2>&1 </dev/null
rc=$?
if [ $rc -ne 0 ]; then
    fail "atomx exited with status $rc"
    echo "--- atomx output (last 40 lines) ---"
    tail -n 40 "$work/log/atomx.out"
    exit 1
fi
if ! cmp -s "$bin" "$work/input-copy"; then
    fail "atomx modified its input file $bin"
    exit 1
fi
if [ ! -f "$work/new/$name" ]; then
    fail "atomx exited 0 but wrote no output file"
    exit 1
fi
if [ ! -x "$work/new/$name" ]; then
    fail "atomx output is not executable"
    exit 1
fi
if cmp -s "$bin" "$work/new/$name"; then
    echo "note: rewritten file is identical to the input"
fi

# 2. run both the same way
run() { # run DIR TAG ARGS...
    local dir=$1 tag=$2
    shift 2
    # The subshell exits normally with the program's status (128+N for a
    # signal), so no "Segmentation fault" line from bash; its own stderr is
    # discarded, the program's stderr is captured.
    (
        cd "$dir" || exit 125
        timeout -k 5 "$timeout_s" "./$name" "$@" 2>"$work/log/$tag.stderr"
        exit $?
    ) </dev/null >"$work/log/$tag.stdout" 2>/dev/null
    echo $? >"$work/log/$tag.status"
}
run "$work/orig" orig "$@"
run "$work/new" new "$@"

st_orig=$(cat "$work/log/orig.status")
st_new=$(cat "$work/log/new.status")
if [ "$st_orig" = 124 ] || [ "$st_orig" = 137 ]; then
    fail "the ORIGINAL program timed out after ${timeout_s}s (status $st_orig)"
fi
if [ "$st_new" = 124 ] || [ "$st_new" = 137 ]; then
    fail "the rewritten program timed out after ${timeout_s}s (status $st_new)"
fi
if [ "$st_orig" != "$st_new" ]; then
    fail "exit status differs: original $st_orig, rewritten $st_new$([ "$st_new" -gt 128 ] 2>/dev/null && echo " (signal $((st_new - 128)))")"
fi
for stream in stdout stderr; do
    if ! cmp -s "$work/log/orig.$stream" "$work/log/new.$stream"; then
        fail "$stream differs (original vs rewritten):"
        diff -u --label "original $stream" --label "rewritten $stream" \
            "$work/log/orig.$stream" "$work/log/new.$stream" | head -n 60
    fi
done

if [ "${failed:-0}" = 1 ]; then
    exit 1
fi
echo "ok: $name rewritten; stdout ($(wc -c <"$work/log/orig.stdout") bytes), stderr ($(wc -c <"$work/log/orig.stderr") bytes) and exit status $st_orig identical"
exit 0
