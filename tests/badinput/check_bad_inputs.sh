#!/usr/bin/env bash
# check_bad_inputs.sh ATOMX
#
# Feeds atomx bad input and checks that every case ends in one line on stderr
# that starts with "atomx: " and names the problem, and exit status 1 (2 for
# usage errors): never a signal, an "internal error" (status 3), an uncaught
# exception or a sanitizer report.  Both `atomx PROG -o OUT` and
# `atomx dump PROG` are tried.  A failed run must not leave an output file.
#
# Every input is made at run time in a temporary directory: small C programs
# compiled here, and byte patches of them (python3).  No binary is committed.
set -u

if [ $# -ne 1 ]; then
  echo "usage: $0 PATH/TO/atomx" >&2
  exit 2
fi
ATOMX=$(realpath "$1")
[ -x "$ATOMX" ] || { echo "$0: $1 is not executable" >&2; exit 2; }
CC=${CC_FOR_TESTS:-gcc}

T=$(mktemp -d "${TMPDIR:-/tmp}/atomx-badinput.XXXXXX")
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() {
  failed=$((failed + 1))
  echo "FAIL $1: $2"
  if [ -s err ]; then sed 's/^/    | /' err | head -20; fi
}

# run MODE INPUT [ARGS...]: runs atomx, leaves stderr in ./err, status in $rc.
run() {
  local mode=$1 input=$2
  shift 2
  rm -f out out.atomx-tmp err
  if [ "$mode" = dump ]; then
    timeout 120 "$ATOMX" dump "$input" "$@" >/dev/null 2>err
  else
    timeout 120 "$ATOMX" "$input" -o out "$@" >/dev/null 2>err
  fi
  rc=$?
}

# check NAME STATUS REGEX: judges the last run.
check() {
  local name=$1 want=$2 regex=$3
  local lines
  lines=$(grep -c '' err)
  if [ "$rc" -eq 124 ]; then fail "$name" "timed out"; return; fi
  if [ "$rc" -gt 128 ]; then fail "$name" "killed by signal $((rc - 128))"; return; fi
  if [ "$rc" -ne "$want" ]; then fail "$name" "exit status $rc, expected $want"; return; fi
  if [ "$lines" -ne 1 ] || [ "$(wc -l <err)" -ne 1 ]; then fail "$name" "stderr has $lines lines, expected 1"; return; fi
  if ! head -c 7 err | grep -q '^atomx: '; then fail "$name" "stderr does not start with 'atomx: '"; return; fi
  if grep -qi 'internal error' err; then fail "$name" "reported as an internal error"; return; fi
  if ! grep -Eqi -- "$regex" err; then fail "$name" "message does not match /$regex/"; return; fi
  if [ -e out ] || [ -e out.atomx-tmp ]; then fail "$name" "left an output file behind"; return; fi
  pass "$name"
}

# bad NAME INPUT REGEX [MODES]: both commands must reject INPUT with status 1
# and a message matching REGEX (MODES: "rewrite dump" by default).
bad() {
  local name=$1 input=$2 regex=$3 modes=${4:-"rewrite dump"}
  local mode
  for mode in $modes; do
    run "$mode" "$input"
    check "$name [$mode]" 1 "$regex"
  done
}

# readable NAME INPUT REGEX: a file atomx does not rewrite but reads: `atomx
# dump` succeeds, prints nothing on stderr, and its first line (the kind of
# file) matches REGEX.
readable() {
  local name=$1 input=$2 regex=$3
  rm -f out err
  timeout 120 "$ATOMX" dump "$input" >dump.txt 2>err
  rc=$?
  if [ "$rc" -ne 0 ]; then fail "$name [dump]" "exit status $rc, expected 0: $(head -c 200 err)"; return; fi
  if [ -s err ]; then fail "$name [dump]" "wrote to stderr: $(head -c 200 err)"; return; fi
  if ! head -n 1 dump.txt | grep -Eq -- "$regex"; then fail "$name [dump]" "first line does not match /$regex/: $(head -n 1 dump.txt)"; return; fi
  if ! grep -q '^proc ' dump.txt; then fail "$name [dump]" "no procedure listed"; return; fi
  pass "$name [dump]"
}

# behaves NAME INPUT: the rewrite ./out of INPUT, run, prints what INPUT
# prints on stdout and ends as it ends (exit status or signal); both run
# with a timeout in a directory of their own, with the same argv[0].  Not
# stderr: an input ld.so cannot load (status 127) has its output refused
# too, with ld.so's message of the point where it stopped.
behaves() {
  local name=$1 input=$2 want got
  mkdir -p run.orig run.out
  cp "$input" run.orig/prog && cp out run.out/prog && chmod +x run.orig/prog run.out/prog
  want=$(cd run.orig && timeout 10 ./prog 2>/dev/null; echo "status $?")
  got=$(cd run.out && timeout 10 ./prog 2>/dev/null; echo "status $?")
  rm -rf run.orig run.out
  if [ "$got" = "$want" ]; then pass "$name [rewrite] (accepted; its output runs as the input does: ${want//$'\n'/ })"
  else fail "$name [rewrite]" "accepted, but the rewritten program behaves differently: input '${want//$'\n'/ }', rewritten '${got//$'\n'/ }'"; fi
}

# nocrash NAME INPUT: damage the analysis may or may not notice; atomx must
# either succeed or fail with a one-line message (status 0 or 1).  A rewrite
# that succeeds must run as its input does (behaves).
nocrash() {
  local name=$1 input=$2 mode
  for mode in rewrite dump; do
    if [ "$mode" = rewrite ]; then run rewrite "$input" -q; else run dump "$input"; fi
    if [ "$rc" -eq 0 ]; then
      if [ -s err ]; then fail "$name [$mode]" "succeeded but wrote to stderr"
      elif [ "$mode" = rewrite ]; then behaves "$name" "$input"
      else pass "$name [$mode] (accepted)"; fi
    else
      check "$name [$mode]" 1 '.'
    fi
  done
}

# usage NAME ARGS...: a usage error, status 2 and one line.
usage() {
  local name=$1 regex=$2
  shift 2
  rm -f out err
  timeout 60 "$ATOMX" "$@" >/dev/null 2>err
  rc=$?
  check "$name" 2 "$regex"
}

# BADINPUT_ONLY=nocrash: only the control and the nocrash cases (the
# self-test, badinput.fails, which needs no more).
if [ "${BADINPUT_ONLY:-}" = nocrash ]; then
  bad() { :; }
  readable() { :; }
  usage() { :; }
fi

# ---------------------------------------------------------------------------
# Inputs.

cat >hello.c <<'EOF'
#include <stdio.h>
static int table[4] = {1, 2, 3, 4};
int square(int x) { return x * x; }
int pick(int i) {
  switch (i) {
    case 0: return 10; case 1: return 11; case 2: return 12;
    case 3: return 13; case 4: return 14; default: return table[i & 3];
  }
}
int main(int argc, char **argv) { printf("%d %d\n", square(argc), pick(argc)); return 0; }
EOF
cat >lib.c <<'EOF'
int libfunc(int x) { return x + 1; }
EOF

compile() { "$CC" "$@" 2>>compile.log; }

compile -O1 -Wl,--emit-relocs hello.c -o good || { echo "FAIL cannot compile the test program"; cat compile.log; echo "0 passed, 1 failed"; exit 1; }
compile -O1 hello.c -o norelocs
cp good stripped && strip stripped
compile -O1 -c hello.c -o hello.o
compile -O1 -shared -fPIC -Wl,--emit-relocs lib.c -o lib.so
static_ok=1; compile -O1 -static -Wl,--emit-relocs hello.c -o static || static_ok=0
static_pie_ok=1; compile -O1 -static-pie -Wl,--emit-relocs hello.c -o static-pie || static_pie_ok=0
# A real 32-bit executable if gcc-multilib is installed, else a patched header.
m32=real; compile -m32 -O1 -Wl,--emit-relocs hello.c -o elf32 || m32=patched

printf 'hello, this is not an executable\n' >text.txt
printf '#!/bin/sh\necho hi\n' >script.sh && chmod +x script.sh
: >empty
mkdir adir

# elfpatch.py IN OUT OP ARGS...: copies an ELF64 file with one change.
cat >elfpatch.py <<'EOF'
import struct, sys

EHDR = {"e_type": (16, "H"), "e_machine": (18, "H"), "e_version": (20, "I"), "e_entry": (24, "Q"),
        "e_phoff": (32, "Q"), "e_shoff": (40, "Q"), "e_phentsize": (54, "H"), "e_phnum": (56, "H"),
        "e_shentsize": (58, "H"), "e_shnum": (60, "H"), "e_shstrndx": (62, "H")}
SHDR = {"sh_name": (0, "I"), "sh_type": (4, "I"), "sh_flags": (8, "Q"), "sh_addr": (16, "Q"),
        "sh_offset": (24, "Q"), "sh_size": (32, "Q"), "sh_link": (40, "I"), "sh_info": (44, "I"),
        "sh_entsize": (56, "Q")}
PHDR = {"p_type": (0, "I"), "p_offset": (8, "Q"), "p_vaddr": (16, "Q"), "p_filesz": (32, "Q"),
        "p_memsz": (40, "Q")}
SYM = {"st_name": (0, "I"), "st_info": (4, "B"), "st_shndx": (6, "H"), "st_value": (8, "Q"), "st_size": (16, "Q")}
RELA = {"r_offset": (0, "Q"), "r_info": (8, "Q"), "r_addend": (16, "Q")}
PT = {"LOAD": 1, "DYNAMIC": 2, "INTERP": 3, "PHDR": 6}

src, dst, op, *args = sys.argv[1:]
b = bytearray(open(src, "rb").read())

def get(off, fmt): return struct.unpack_from("<" + fmt, b, off)[0]
def put(off, fmt, value):
    struct.pack_into("<" + fmt, b, off, value & ((1 << (8 * struct.calcsize(fmt))) - 1))
def num(s): return int(s, 0)

shoff, shnum, shstrndx = get(40, "Q"), get(60, "H"), get(62, "H")
def shdr(i): return shoff + 64 * i
def shfield(i, f): return get(shdr(i) + SHDR[f][0], SHDR[f][1])
def secname(i):
    strtab = shfield(shstrndx, "sh_offset")
    start = strtab + shfield(i, "sh_name")
    return bytes(b[start:b.index(0, start)]).decode()
def section(name):
    for i in range(shnum):
        if secname(i) == name: return i
    sys.exit("elfpatch: no section " + name)
def entry(name, idx_or_sym, size):
    # Offset of entry idx of a table section; for .symtab/.dynsym a symbol name works too.
    s = section(name)
    base = shfield(s, "sh_offset")
    if idx_or_sym.lstrip("-").isdigit() or idx_or_sym.startswith("0x"):
        return base + size * num(idx_or_sym)
    strtab = shfield(shfield(s, "sh_link"), "sh_offset")
    for k in range(shfield(s, "sh_size") // size):
        n = strtab + get(base + size * k, "I")
        if bytes(b[n:b.index(0, n)]).decode() == idx_or_sym: return base + size * k
    sys.exit("elfpatch: no symbol " + idx_or_sym)

if op == "ident":      # ident INDEX VALUE
    b[num(args[0])] = num(args[1])
elif op == "ehdr":     # ehdr FIELD VALUE
    put(EHDR[args[0]][0], EHDR[args[0]][1], num(args[1]))
elif op == "shdr":     # shdr SECTION FIELD VALUE
    put(shdr(section(args[0])) + SHDR[args[1]][0], SHDR[args[1]][1], num(args[2]))
elif op == "phdr":     # phdr TYPE FIELD VALUE  (first program header of that type)
    phoff, phnum = get(32, "Q"), get(56, "H")
    for i in range(phnum):
        if get(phoff + 56 * i, "I") == PT[args[0]]:
            put(phoff + 56 * i + PHDR[args[1]][0], PHDR[args[1]][1], num(args[2]))
            break
    else:
        sys.exit("elfpatch: no program header " + args[0])
elif op == "lastload": # lastload FIELD VALUE  (last PT_LOAD)
    phoff, phnum = get(32, "Q"), get(56, "H")
    last = [i for i in range(phnum) if get(phoff + 56 * i, "I") == 1][-1]
    put(phoff + 56 * last + PHDR[args[0]][0], PHDR[args[0]][1], num(args[1]))
elif op == "sym":      # sym TABLE INDEX|NAME FIELD VALUE
    put(entry(args[0], args[1], 24) + SYM[args[2]][0], SYM[args[2]][1], num(args[3]))
elif op == "rela":     # rela SECTION INDEX FIELD VALUE; field "sym" sets ELF64_R_SYM
    off = entry(args[0], args[1], 24)
    if args[2] == "sym":
        put(off + 8, "Q", (num(args[3]) << 32) | (get(off + 8, "Q") & 0xffffffff))
    else:
        put(off + RELA[args[2]][0], RELA[args[2]][1], num(args[3]))
elif op == "fill":     # fill SECTION BYTE: overwrite a section's contents
    s = section(args[0])
    o, n = shfield(s, "sh_offset"), shfield(s, "sh_size")
    b[o:o + n] = bytes([num(args[1])]) * n
elif op == "cut":      # cut WHERE DELTA: keep the bytes before WHERE + DELTA
    where = args[0]
    if where == "phdrs": base = get(32, "Q")
    elif where == "shdrs": base = shoff
    elif where == "end": base = len(b)
    else: base = shfield(section(where), "sh_offset")
    b = b[:base + num(args[1])]
else:
    sys.exit("elfpatch: unknown op " + op)
open(dst, "wb").write(b)
EOF

# patch OP ARGS...: makes a patched copy of ./good, prints its name.  (It runs
# in a $(...) subshell, so the counter lives in a file.)
echo 0 >patch.count
patch() {
  local n
  n=$(($(cat patch.count) + 1))
  echo "$n" >patch.count
  python3 elfpatch.py good "patched$n" "$@" || { echo "elfpatch failed: $*" >&2; echo missing; return; }
  echo "patched$n"
}

[ "$m32" = patched ] && python3 elfpatch.py good elf32 ident 4 1   # EI_CLASS = ELFCLASS32

# ---------------------------------------------------------------------------
# Control: the unpatched program rewrites, and the result runs.

run rewrite good -q
if [ "$rc" -eq 0 ] && [ ! -s err ] && [ "$(./out)" = "$(./good)" ]; then pass "control: good input rewrites"
else fail "control: good input rewrites" "status $rc"; fi
rm -f out

# ---------------------------------------------------------------------------
# Usage errors: status 2.

usage "usage: no -o" 'no output file' good
usage "usage: -o without a file" '-o needs' good -o
usage "usage: --report without a file" '--report needs' good -o out --report
usage "usage: unknown option" 'unknown option' good -o out --bogus
usage "usage: two programs" 'unexpected argument' good good -o out
usage "usage: --counters without a mode" '--counters needs' good -T dyninst -o out --counters
usage "usage: --counters with a bad mode" "--counters needs plain, atomic, per-thread or auto, not 'locked'" good -T dyninst -o out --counters locked
usage "usage: --counters without a tool" '--counters is about a tool' good -o out --counters plain
usage "usage: run --counters with a bad mode" '--counters needs' run -T dyninst --counters locked -- ./good
usage "usage: --profile without a file" '--profile needs the JSON' good -T dyninst -o out --profile
usage "usage: --profile without a tool" '--profile places a tool' good -o out --profile text.txt
usage "usage: run --profile without a file" '--profile needs the JSON' run -T dyninst --profile
run rewrite good -T dyninst --profile text.txt
check "a --profile that is not a tool's JSON" 1 'text.txt: not the JSON of the dyninst or prof tool'
run rewrite good -T dyninst --profile ./no-such.json
check "a --profile that does not exist" 1 'no-such.json: cannot read the profile'
usage "usage: dump without a program" 'needs a program' dump
usage "usage: dump --proc without a name" '--proc needs' dump good --proc
usage "usage: dump two programs" 'more than one' dump good good

# ---------------------------------------------------------------------------
# Not a file atomx can read, not an ELF file.

bad "nonexistent file" ./no-such-file 'cannot open'
bad "a directory" adir 'directory'
bad "empty file" empty 'not an ELF'
bad "text file" text.txt 'not an ELF'
bad "shell script" script.sh 'not an ELF'
bad "ELF magic only (10 bytes)" "$(patch cut end -$(( $(stat -c %s good) - 10 )))" 'not an ELF'
bad "truncated ELF header (40 bytes)" "$(patch cut end -$(( $(stat -c %s good) - 40 )))" 'truncated ELF header'

# ---------------------------------------------------------------------------
# ELF files atomx does not rewrite.

bad "32-bit ELF ($m32)" elf32 '32-bit'
bad "unknown ELF class" "$(patch ident 4 7)" 'ELF class'
bad "big-endian ELF" "$(patch ident 5 2)" 'big-endian'
bad "AArch64 ELF (e_machine patched)" "$(patch ehdr e_machine 183)" 'x86-64'
bad "object file (.o)" hello.o 'object file'
# Rewriting refuses these; reading them (atomx dump) is fine.
bad "shared library (.so)" lib.so 'shared librar.*not supported' rewrite
readable "shared library (.so)" lib.so '\(shared object\): [1-9][0-9]* procedures, 0 movable'
bad "core file type (ET_CORE)" "$(patch ehdr e_type 4)" 'not an executable'
if [ "$static_ok" = 1 ]; then
  bad "static executable" static 'static.*not supported' rewrite
  readable "static executable" static '\(static\)'
else fail "static executable" "gcc -static failed (is libc6-dev installed?)"; fi
if [ "$static_pie_ok" = 1 ]; then
  bad "static-pie executable" static-pie 'static.*not supported' rewrite
  readable "static-pie executable" static-pie '\(static PIE\)'
else echo "SKIP static-pie executable (gcc -static-pie failed)"; fi
bad "linked without --emit-relocs" norelocs 'emit-relocs' rewrite
# ... and the model says the same: every procedure stays, with the reason.
readable "linked without --emit-relocs" norelocs ': [1-9][0-9]* procedures, 0 movable'
if ! grep -q 'stays: no relocations for its code' dump.txt; then fail "linked without --emit-relocs [dump]" "no procedure says why it stays"; fi
bad "stripped executable" stripped 'it is stripped \(no symbol table, no relocations\)' rewrite
bad "stripped executable" stripped 'symbol table' dump

# ---------------------------------------------------------------------------
# Truncated files.

bad "truncated inside the program headers" "$(patch cut phdrs 30)" 'program header'
bad "truncated right after the program headers" "$(patch cut phdrs $((56 * $(python3 -c "import struct;print(struct.unpack_from('<H',open('good','rb').read(),56)[0])"))))" 'outside the file'
bad "truncated inside .text" "$(patch cut .text 7)" 'outside the file'
bad "truncated inside .dynsym" "$(patch cut .dynsym 30)" 'outside the file'
bad "truncated inside .symtab" "$(patch cut .symtab 100)" 'outside the file'
bad "truncated at the section header table" "$(patch cut shdrs 0)" 'section header table'
bad "truncated inside the section header table" "$(patch cut shdrs 200)" 'section header table'
bad "truncated by one byte" "$(patch cut end -1)" 'section header table'

# ---------------------------------------------------------------------------
# Broken ELF header fields.

bad "e_phnum huge (0xffff)" "$(patch ehdr e_phnum 0xffff)" 'program header'
bad "e_phnum zero" "$(patch ehdr e_phnum 0)" 'no program headers'
bad "e_phoff beyond the file" "$(patch ehdr e_phoff 0x7fffffff)" 'program header'
bad "e_phoff wraps around" "$(patch ehdr e_phoff 0xfffffffffffffff0)" 'program header'
bad "e_phentsize wrong" "$(patch ehdr e_phentsize 32)" 'program header entry size'
bad "e_shoff zero" "$(patch ehdr e_shoff 0)" 'no section header table'
bad "e_shoff beyond the file" "$(patch ehdr e_shoff 0x7fffffff)" 'section header table'
bad "e_shoff wraps around" "$(patch ehdr e_shoff 0xffffffffffffffc0)" 'section header table'
bad "e_shentsize wrong" "$(patch ehdr e_shentsize 40)" 'section header entry size'
bad "e_shnum huge (0xffff)" "$(patch ehdr e_shnum 0xffff)" 'section header table'
bad "e_shnum zero, no extended count" "$(patch ehdr e_shnum 0)" 'section count'
bad "e_shstrndx out of range" "$(patch ehdr e_shstrndx 0xfff0)" 'out of range'
bad "e_shstrndx names .text" "$(patch ehdr e_shstrndx 1)" 'not a string table'

# ---------------------------------------------------------------------------
# Broken program headers.

bad "PT_LOAD beyond the file" "$(patch phdr LOAD p_offset 0x7fffffff)" 'segment'
bad "PT_LOAD offset+size wraps" "$(patch phdr LOAD p_filesz 0xfffffffffffffff0)" 'segment'
bad "PT_LOAD p_filesz > p_memsz" "$(patch phdr LOAD p_memsz 1)" 'p_filesz'
bad "PT_LOAD address wraps" "$(patch phdr LOAD p_vaddr 0xffffffffffffff00)" 'wraps'
bad "PT_DYNAMIC beyond the file" "$(patch phdr DYNAMIC p_offset 0x7fffffff)" 'segment'
bad "PT_INTERP removed (looks static)" "$(patch phdr INTERP p_type 0x6474e551)" 'static' rewrite

# ---------------------------------------------------------------------------
# Broken section headers.

bad "section offset beyond the file" "$(patch shdr .text sh_offset 0x7fffffff)" 'text.*outside the file'
bad "section size beyond the file" "$(patch shdr .text sh_size 0x7fffffff)" 'text.*outside the file'
bad "section offset+size wraps" "$(patch shdr .text sh_size 0xfffffffffffffff8)" 'outside the file'
bad "section address+size wraps" "$(patch shdr .bss sh_addr 0xffffffffffffffff)" 'wraps'
bad "section name offset out of range" "$(patch shdr .text sh_name 0x7fffffff)" 'name offset'
bad "section name table out of the file" "$(patch shdr .shstrtab sh_offset 0x7fffffff)" 'section name table'

# ---------------------------------------------------------------------------
# Broken symbol tables.

bad ".symtab sh_link to SHT_NULL" "$(patch shdr .symtab sh_link 0)" 'string table'
bad ".symtab sh_link out of range" "$(patch shdr .symtab sh_link 9999)" 'string table'
bad ".symtab sh_entsize wrong" "$(patch shdr .symtab sh_entsize 23)" 'entry size'
bad ".symtab sh_entsize zero" "$(patch shdr .symtab sh_entsize 0)" 'entry size'
bad ".dynsym sh_entsize wrong" "$(patch shdr .dynsym sh_entsize 25)" 'entry size'
bad ".dynsym sh_link out of range" "$(patch shdr .dynsym sh_link 0xffffffff)" 'string table'
bad "symbol name offset out of range" "$(patch sym .symtab square st_name 0x7fffffff)" 'name offset'
bad ".symtab size beyond the file" "$(patch shdr .symtab sh_size 0x7fffffff0)" 'outside the file'

# ---------------------------------------------------------------------------
# Broken relocations.

bad ".rela.text symbol index out of range" "$(patch rela .rela.text 0 sym 0xffffff)" 'symbol index'
bad ".rela.text sh_entsize wrong" "$(patch shdr .rela.text sh_entsize 16)" 'entry size'
bad ".rela.text sh_info out of range" "$(patch shdr .rela.text sh_info 9999)" 'applies to no section'
bad ".rela.text sh_link not .symtab" "$(patch shdr .rela.text sh_link 0)" 'symbol table'
bad ".rela.text as SHT_REL" "$(patch shdr .rela.text sh_type 9)" 'SHT_REL'
bad ".rela.dyn symbol index out of range" "$(patch rela .rela.dyn 0 sym 0xffffff)" 'symbol index'
bad ".rela.plt symbol index out of range" "$(patch rela .rela.plt 0 sym 0x7fffffff)" 'symbol index'
bad ".rela.dyn sh_entsize wrong" "$(patch shdr .rela.dyn sh_entsize 7)" 'entry size'

# ---------------------------------------------------------------------------
# Damage past the reader: the analysis may accept it or reject it, but must
# not crash.

nocrash "symbol size huge" "$(patch sym .symtab square st_size 0xffffffffffffff00)"
nocrash "symbol value outside its section" "$(patch sym .symtab square st_value 0x10)"
nocrash "symbol value at the top of memory" "$(patch sym .symtab square st_value 0xfffffffffffffff0)"
nocrash "symbol section index out of range" "$(patch sym .symtab square st_shndx 0xfff0)"
nocrash ".text address outside every segment" "$(patch shdr .text sh_addr 0x7000000)"
nocrash ".text not in the file image of a segment" "$(patch phdr LOAD p_filesz 0)"
nocrash ".eh_frame filled with 0xff" "$(patch fill .eh_frame 0xff)"
nocrash ".eh_frame filled with zeros" "$(patch fill .eh_frame 0)"
nocrash ".eh_frame_hdr filled with 0xff" "$(patch fill .eh_frame_hdr 0xff)"
nocrash ".text filled with 0xff" "$(patch fill .text 0xff)"
nocrash ".rela.text place at the top of memory" "$(patch rela .rela.text 0 r_offset 0xfffffffffffffffe)"
nocrash ".rela.text addend huge" "$(patch rela .rela.text 0 r_addend 0x7fffffffffffffff)"
nocrash ".rela.text unknown type" "$(patch rela .rela.text 0 r_info 0x1ff)"
nocrash ".rela.text filled with 0xff" "$(patch fill .rela.text 0xff)"
nocrash ".rodata filled with 0xff (jump table)" "$(patch fill .rodata 0xff)"
nocrash "last PT_LOAD ends near the top of memory" "$(patch lastload p_vaddr 0xffffffffffff0000)"
nocrash "e_entry garbage" "$(patch ehdr e_entry 0xdeadbeefdeadbeef)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
