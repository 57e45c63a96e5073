#!/usr/bin/env bash
# profile.sh ATOMX TOOL PROG [ARGS...]: `atomx trace --profile`.  Runs PROG
# ARGS under `atomx run -T TOOL` (dyninst or prof), traces it with that
# JSON weighing the witness placement, and checks with regen_oracle.py
# (naive tracer and callgrind) that the trace is exact; that the trace keeps
# the profile (manifest and file) and that it changed the placement; that a profile changed afterwards is
# refused; and that JSON of another kind is refused with one line.
set -euo pipefail
atomx=$(realpath "$1") tool=$2 prog=$(realpath "$3")
shift 3
here=$(dirname "$(realpath "$0")")
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
"$atomx" run -q --cache-dir "$w/cache" -T "$tool" -- "$prog" "$@" >/dev/null 2>&1 || true
[[ -f $tool.json ]] || { echo "FAIL: $tool wrote no $tool.json"; exit 1; }
python3 "$here/regen_oracle.py" --atomx "$atomx" --callgrind --profile "$tool.json" "$prog" -- "$@"
"$atomx" trace -q --cache-dir "$w/cache" --profile "$tool.json" -o t -- "$prog" "$@" >/dev/null 2>&1 || true
grep -q '^profile ' t/manifest || { echo "FAIL: the manifest names no profile"; exit 1; }
"$atomx" trace -q --cache-dir "$w/cache" -o s -- "$prog" "$@" >/dev/null 2>&1 || true
[[ $(grep '^placement ' t/manifest) != $(grep '^placement ' s/manifest) ]] ||
  { echo "FAIL: the profile left the witness placement as it was"; exit 1; }
"$atomx" regen t --summary >/dev/null
sed -i '1s/ [0-9]*$/ 12345/' t/profile
if err=$("$atomx" regen t --summary 2>&1); then echo "FAIL: regen read a trace whose profile changed"; exit 1; fi
[[ $err == *"profile file has changed"* ]] || { echo "FAIL: unexpected message: $err"; exit 1; }
echo '{"tool":"cache"}' >other.json
if err=$("$atomx" trace -q -o u --profile other.json -- "$prog" "$@" 2>&1); then echo "FAIL: traced with a bad profile"; exit 1; fi
[[ $err == *"not the JSON of the dyninst or prof tool"* ]] || { echo "FAIL: unexpected message: $err"; exit 1; }
echo "PASS: a changed profile and a bad one are refused"
