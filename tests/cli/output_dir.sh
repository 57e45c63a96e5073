#!/usr/bin/env bash
# output_dir.sh ATOMX PROG [--broken]
#
# atomx run --output-dir, Valgrind's conventions (docs/tools.md): with a
# template of %q{VAR} and %p, every process of PROG (fork_exec: forks and
# execs itself) writes its dyninst files, its deferred end included, into a
# directory of its own and none into the working directory; atomx names each
# directory; there are as many as the files a run without the option leaves
# (dyninst.out, dyninst.out.PID); without %p one directory holds the same
# names as the working directory would; PROG's output is unchanged; bad
# templates are refused with one line (exit 2).  --broken (the must-fail
# twin) leaves --output-dir out of the first run.
set -euo pipefail
atomx=$(realpath "$1") prog=$(realpath "$2")
opt=(--output-dir)
[[ ${3:-} == --broken ]] && opt=()
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir "$t/a" "$t/b" "$t/c"
# 1. A directory per process.
(cd "$t/a" && V=run "$atomx" run -T dyninst ${opt[@]+"${opt[@]}" "$t/out/%q{V}-%p"} -- "$prog" >stdout 2>stderr) || true
# 2. The working directory, as before.
(cd "$t/b" && "$atomx" run -T dyninst -- "$prog" >stdout 2>stderr) || true
# 3. One directory, without %p.
(cd "$t/c" && "$atomx" run -T dyninst --output-dir "$t/one" -- "$prog" >stdout 2>stderr) || true
cmp -s "$t/a/stdout" "$t/b/stdout" || fail "the program's output differs with --output-dir"
left=$(cd "$t/a" && ls dyninst.* 2>/dev/null | tr "\n" " " || true)
[[ -z $left ]] || fail "dyninst files in the working directory: $left"
dirs=$(find "$t/out" -mindepth 1 -maxdepth 1 -name "run-*" 2>/dev/null | wc -l)
expected=$(find "$t/b" -maxdepth 1 -name "dyninst.out*" | wc -l)
((expected > 1)) || fail "the run without --output-dir left $expected dyninst.out files (a program with several processes is needed)"
((dirs == expected)) || fail "$dirs per-process directories, $expected processes wrote dyninst.out"
for d in "$t"/out/run-*; do
  [[ ${d##*/run-} =~ ^[0-9]+$ ]] || fail "$d: %p is not a process id"
  [[ -s $d/dyninst.out && -s $d/dyninst.json ]] || fail "$d lacks dyninst.out or dyninst.json"
  grep -q "==atomx== dyninst: wrote in $d: dyninst.json, dyninst.out" "$t/a/stderr" || fail "atomx did not say it wrote in $d"
done
names() { ls "$1" | grep '^dyninst\.' | sed 's/\.[0-9][0-9]*$/.PID/' | sort; }
[[ $(names "$t/one") == $(names "$t/b") ]] || fail "without %p: $(names "$t/one" | tr '\n' ' ') in the directory, $(names "$t/b" | tr '\n' ' ') in the working directory"
# Bad templates: one line, exit 2.
for bad in "x%z" "x%q{ATOMX_SURELY_UNSET}" "x%q{"; do
  set +e
  msg=$("$atomx" run -T dyninst --output-dir "$bad" -- "$prog" 2>&1 >/dev/null)
  rc=$?
  set -e
  ((rc == 2)) || fail "--output-dir '$bad': exit status $rc, not 2"
  [[ $(wc -l <<<"$msg") == 1 && $msg == *"--output-dir '$bad'"* ]] || fail "--output-dir '$bad': $msg"
done
echo "PASS: $dirs processes, each in its own directory; without %p the working directory's names; bad templates refused"
