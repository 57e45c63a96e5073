#!/usr/bin/env bash
# selftest_check_rewrite.sh BINARY
#
# Proves that check_rewrite.sh really detects failures, by running it on a
# copy of BINARY with fake rewriters: one that copies (must pass) and several
# that fail or corrupt the output in different ways (must all be caught).
set -u
LC_ALL=C
export LC_ALL
if [ $# -ne 1 ]; then
    echo "usage: $0 BINARY" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
check=$here/check_rewrite.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/atomx-selftest.XXXXXX")
trap 'rm -rf "$work"' EXIT
name=$(basename "$1")
mkdir "$work/bin" "$work/fakes"
cp -p "$1" "$work/bin/$name"
bin=$work/bin/$name

# entry point file offset, for corrupting code
entry=$(readelf -hW "$bin" | awk '/Entry point/ {print $NF}')
read -r taddr toff < <(readelf -SW "$bin" | awk '$2 == ".text" || $3 == ".text" {
    for (i = 1; i <= NF; i++) if ($i == ".text") { print $(i + 2), $(i + 3); exit } }')
entry_off=$(( entry - 16#$taddr + 16#$toff ))

fake() { # fake NAME BODY: a rewriter called as NAME --poison-original IN -o OUT
    {
        echo '#!/bin/sh'
        echo '[ "$1" = --poison-original ] && [ "$3" = -o ] || { echo "bad args: $*" >&2; exit 64; }'
        echo 'in=$2; out=$4'
        echo "$2"
    } >"$work/fakes/$1"
    chmod +x "$work/fakes/$1"
}
fake copy 'cp "$in" "$out"'
fake fails 'echo "cannot rewrite" >&2; exit 3'
fake no-output 'exit 0'
fake not-executable 'cp "$in" "$out" && chmod -x "$out"'
fake truncate 'head -c 4000 "$in" >"$out" && chmod +x "$out"'
fake int3-at-entry "cp \"\$in\" \"\$out\" && printf '\\314\\314\\314\\314\\314\\314\\314\\314' | dd of=\"\$out\" bs=1 seek=$entry_off conv=notrunc 2>/dev/null"
fake changes-output 'sed "s/step loop/stop loop/; s/ctor level/CTOR level/" "$in" >"$out" && chmod +x "$out"'
fake exit-status "printf '#!/bin/sh\\n\"%s\" \"\$@\"\\nexit 77\\n' \"$bin\" >\"\$out\" && chmod +x \"\$out\""
fake extra-stderr "printf '#!/bin/sh\\n\"%s\" \"\$@\"\\nrc=\$?\\necho extra >&2\\nexit \$rc\\n' \"$bin\" >\"\$out\" && chmod +x \"\$out\""
fake hangs "printf '#!/bin/sh\\nsleep 30\\n' >\"\$out\" && chmod +x \"\$out\""
fake modifies-input 'cp "$in" "$out"; printf x >>"$in"'

failures=0
expect() { # expect RC FAKE
    local want=$1 f=$2 got
    ATOMX_CHECK_TIMEOUT=3 "$check" "$work/fakes/$f" "$bin" >"$work/out.$f" 2>&1
    got=$?
    if [ "$got" = "$want" ]; then
        echo "ok    fake rewriter '$f': check_rewrite exited $got"
    else
        echo "WRONG fake rewriter '$f': check_rewrite exited $got, expected $want"
        sed 's/^/      /' "$work/out.$f" | head -n 20
        failures=$((failures + 1))
    fi
}
expect 0 copy
expect 1 fails
expect 1 no-output
expect 1 not-executable
expect 1 truncate
expect 1 int3-at-entry
if grep -q 'step loop\|ctor level' "$bin"; then
    expect 1 changes-output
fi
expect 1 exit-status
expect 1 extra-stderr
expect 1 hangs
expect 1 modifies-input   # must stay last: it changes the copy of the binary
if [ $failures -ne 0 ]; then
    echo "check_rewrite.sh selftest: $failures wrong verdict(s)"
    exit 1
fi
echo "check_rewrite.sh selftest: all verdicts right"
