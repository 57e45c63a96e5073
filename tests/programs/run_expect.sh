#!/usr/bin/env bash
# run_expect.sh BINARY EXPECTED [ARGS...]
#
# Runs BINARY (as ./NAME in an empty temporary directory, stdin /dev/null)
# and compares its stdout, followed by a line "[exit status N]", with the
# file EXPECTED; stderr must be empty.  This checks that the test programs
# themselves are deterministic and agree across compilers and variants.
# Set ATOMX_UPDATE_EXPECTED=1 to (re)write EXPECTED from the run instead.
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 BINARY EXPECTED [ARGS...]" >&2
    exit 2
fi
bin=$1
expected=$2
shift 2
name=$(basename "$bin")
work=$(mktemp -d "${TMPDIR:-/tmp}/atomx-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/run"
cp -p "$bin" "$work/run/$name"
ulimit -c 0 2>/dev/null
(
    cd "$work/run" || exit 125
    timeout -k 5 "${ATOMX_CHECK_TIMEOUT:-60}" "./$name" "$@" 2>"$work/stderr"
    exit $?
) </dev/null >"$work/stdout" 2>/dev/null
status=$?
cp "$work/stdout" "$work/actual"
echo "[exit status $status]" >>"$work/actual"

if [ "${ATOMX_UPDATE_EXPECTED:-0}" = 1 ]; then
    cp "$work/actual" "$expected"
    echo "wrote $expected"
    exit 0
fi
rc=0
if ! cmp -s "$work/actual" "$expected"; then
    echo "FAIL: output differs from $expected:"
    diff -u --label expected --label actual "$expected" "$work/actual" | head -n 60
    rc=1
fi
if [ -s "$work/stderr" ]; then
    echo "FAIL: unexpected stderr:"
    head -n 20 "$work/stderr"
    rc=1
fi
[ $rc = 0 ] && echo "ok: $name output matches $(basename "$expected")"
exit $rc
