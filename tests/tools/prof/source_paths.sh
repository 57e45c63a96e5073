#!/usr/bin/env bash
# source_paths.sh ATOMX: the callgrind files of prof and gprof name every
# source file by its full path, so that callgrind_annotate, run from any
# directory, shows the source beside the counts.  The program is compiled
# from its own directory with a source named relative to it (sub/f.c), as
# build systems do; the line table then holds "sub/f.c" under the
# compilation directory.  And f, a C function, is called f (not "float",
# which is what a C++ demangler makes of the bare symbol).
set -euo pipefail
atomx=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir sub
printf 'int f(int x) { return x * 3; }  /* the line to find */\n' >sub/f.c
printf '#include <stdio.h>\nint f(int);\nint main(void) { int s = 0; for (int i = 0; i < 10; i++) s += f(i); printf("%%d\\n", s); return 0; }\n' >m.c
cc -O1 -g -Wl,--emit-relocs m.c sub/f.c -o m
for tool in prof gprof; do
  "$atomx" m -T "$tool" -o "m.$tool" -q
  ./"m.$tool" >/dev/null
  out=$(cd / && callgrind_annotate --auto=yes "$work/callgrind.out.atomx-$tool" 2>&1)
  # f's line annotated with a count, not "could not be found".
  if ! grep -Eq '^ *[0-9][0-9,]* .*int f\(int x\) \{ return x \* 3; \}' <<<"$out"; then
    echo "FAIL $tool: callgrind_annotate shows no annotated source for sub/f.c:"
    grep -E 'f\.c|could not be found' <<<"$out" | head -5
    exit 1
  fi
  grep -Eq "^c?fl=.*$work/sub/f.c" "callgrind.out.atomx-$tool" ||
    { echo "FAIL $tool: no fl= line with the full path $work/sub/f.c"; exit 1; }
  # f is a C function: its name is f, not what __cxa_demangle makes of "f" (float).
  grep -Eq '^c?fn=\([0-9]+\) f$' "callgrind.out.atomx-$tool" ||
    { echo "FAIL $tool: the function f is not named f:"; grep -E '^c?fn=' "callgrind.out.atomx-$tool" | head; exit 1; }
done
echo "PASS: prof and gprof name sub/f.c by its full path; callgrind_annotate shows its source from /"
