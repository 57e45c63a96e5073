#!/usr/bin/env bash
# Self test of corpus/check.sh with the fake rewriters in corpus/fake/:
# an identity copy must pass, a binary whose main() is ud2 must fail, and a
# rewriter that exits non-zero must fail with its message shown.
# Needs the variants of one program built (default: bzip2, ~10 s to build).
#
#   corpus/selftest.sh [PROGRAM]
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROG=${1:-bzip2}
pass=0 fail=0

expect() { # description expected-exit-status expected-regex -- check.sh args...
  local desc=$1 want=$2 re=$3 out rc=0; shift 4
  out=$("$HERE/check.sh" "$@" 2>&1) || rc=$?
  if [[ $rc == "$want" ]] && grep -qE "$re" <<<"$out"; then
    echo "PASS selftest: $desc"; pass=$((pass + 1))
  else
    echo "FAIL selftest: $desc (exit $rc, wanted $want and /$re/)"
    sed 's/^/    | /' <<<"$out" | head -30
    fail=$((fail + 1))
  fi
}

n=$("$HERE/build.sh" --list | grep -c "^$PROG-")
expect "identity rewriter passes" 0 "^$n passed, 0 failed$" -- --only "$PROG" -- "$HERE/fake/identity.sh"
expect "ud2-at-main rewriter fails" 1 "^FAIL $PROG-gcc-O2: differs in .*stdout.*" -- --only "$PROG-gcc-O2" -- "$HERE/fake/break-main.sh"
expect "failing rewriter fails" 1 "rewriter exited with status 3" -- --only "$PROG-gcc-O2" -- "$HERE/fake/fail.sh"
expect "usage error" 2 "no rewrite command" -- --only "$PROG"
echo "$pass passed, $fail failed"
((fail == 0))
