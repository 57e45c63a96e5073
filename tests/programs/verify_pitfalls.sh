#!/usr/bin/env bash
# verify_pitfalls.sh VARIANT BINARY CHECK...
#
# Proves with objdump/readelf/nm that a test program really contains the
# pitfall it is meant to exercise (a compiler change could silently remove a
# jump table, a .cold part, a tail call ...).  A check written `check@v1,v2`
# only applies to those variants.  Exit 0 if all applicable checks pass.
#
# Checks (FUNC matches the symbol FUNC and its clones FUNC.isra.0, FUNC.cold, ...):
#   relocs               .rela.text exists (linked with --emit-relocs)
#   pie | nopie          ELF type DYN | EXEC
#   section:NAME         section NAME exists
#   segment:TYPE         program header TYPE exists (e.g. TLS)
#   reloc:SECTION:TYPE   relocation section SECTION holds a TYPE relocation
#   sym:NAME             NAME is in .symtab;  dynsym:NAME: NAME is in .dynsym
#   calls:NAME           some instruction calls/jumps to NAME or NAME@plt
#   ijmp:FUNC            FUNC has an indirect jmp (register or table, not a
#                        rip-relative PLT/GOT slot): jump table, computed goto,
#                        indirect tail call
#   icall:FUNC           FUNC has an indirect call
#   notrack:FUNC         FUNC has a `notrack jmp`
#   tailjmp:FUNC         FUNC has a direct jmp to the start of another function
#   condtail:FUNC        FUNC has a conditional jump to the start of another function
#   calltail:FUNC        the last instruction of FUNC or of FUNC.cold (padding
#                        ignored) is a call
#   adjacent:A:B         B starts right where A's last instruction (a call) ends
#   cold:FUNC            a symbol FUNC*.cold exists
#   jtab-cold            some jump-table entry in .rodata targets a .cold part
#   evex | evex-rip      EVEX (zmm/opmask) instructions | one with a rip-relative operand
#   vex-rip              a ymm instruction with a rip-relative operand
#   ifunc                an R_X86_64_IRELATIVE relocation exists
#   endbr:FUNC           FUNC starts with endbr64
#   cet-note             .note.gnu.property says IBT and SHSTK
set -u
LC_ALL=C
export LC_ALL

if [ $# -lt 2 ]; then
    echo "usage: $0 VARIANT BINARY CHECK..." >&2
    exit 2
fi
variant=$1
bin=$2
shift 2
[ -f "$bin" ] || { echo "no such file: $bin" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/atomx-verify.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
objdump -d -w --no-show-raw-insn "$bin" >"$tmp/dis" 2>/dev/null || { echo "objdump failed" >&2; exit 2; }
readelf -SW "$bin" >"$tmp/sections"
readelf -lW "$bin" >"$tmp/segments"
readelf -rW "$bin" >"$tmp/relocs"
readelf -hW "$bin" >"$tmp/header"
nm -S --defined-only "$bin" >"$tmp/syms" 2>/dev/null || true

# body FUNC: the disassembly of FUNC and its clones/parts, one instruction a line
body() {
    awk -v f="$1" '
        /^[0-9a-f]+ <.*>:$/ {
            name = $2; sub(/^</, "", name); sub(/>:$/, "", name)
            on = (name == f || index(name, f ".") == 1)
            next
        }
        /^$/ { on = 0 }
        on { print }' "$tmp/dis"
}
# body_exact FUNC: only the symbol FUNC itself
body_exact() {
    awk -v f="$1" '
        /^[0-9a-f]+ <.*>:$/ {
            name = $2; sub(/^</, "", name); sub(/>:$/, "", name)
            on = (name == f); next
        }
        /^$/ { on = 0 }
        on { print }' "$tmp/dis"
}
# strip padding (nops, int3) from a body
no_padding() { grep -vE '	(nop[lwq]?|data16|cs nop|xchg +%ax,%ax|int3)( |$)|	(cs |ds |data16 )+nop'; }
# relocation lines of one relocation section
relsec() {
    awk -v s="$1" '
        /^Relocation section / { on = ($3 == "\047" s "\047"); next }
        /^$/ { on = 0 }
        on { print }' "$tmp/relocs"
}

jtab_cold() {
    # .cold ranges [start, end)
    local ranges=()
    while read -r addr size _type name; do
        case $name in *.cold*) ranges+=("$((16#$addr)) $((16#$addr + 16#$size))") ;; esac
    done < <(awk 'NF == 4' "$tmp/syms")
    [ ${#ranges[@]} -gt 0 ] || return 1
    # symbol values for "name + addend" resolution come from readelf itself
    local run_start=-1 prev=-1 off type symval rest target
    while read -r off _info type symval rest; do
        [[ $off =~ ^[0-9a-f]+$ ]] || continue
        local sign=+ add=0
        if [[ $rest =~ ([+-])\ ([0-9a-f]+)$ ]]; then
            sign=${BASH_REMATCH[1]}
            add=$((16#${BASH_REMATCH[2]}))
        fi
        local o=$((16#$off)) s=$((16#$symval))
        [ "$sign" = - ] && add=$((-add))
        case $type in
        R_X86_64_64) target=$((s + add)); run_start=-1 ;;
        R_X86_64_PC32)
            # consecutive 4-byte entries form one table relative to its start
            if [ $prev -lt 0 ] || [ $o -ne $((prev + 4)) ]; then run_start=$o; fi
            target=$((s + add - (o - run_start))) ;;
        *) run_start=-1; prev=-1; continue ;;
        esac
        prev=$o
        local r
        for r in "${ranges[@]}"; do
            set -- $r
            if [ $target -ge $1 ] && [ $target -lt $2 ]; then return 0; fi
        done
    done < <(relsec .rela.rodata)
    return 1
}

# other_fn_jumps FUNC KIND: jumps (KIND=uncond|cond) from FUNC to the start of
# a different function
other_fn_jumps() {
    local f=$1 kind=$2
    body "$f" | awk -v f="$f" -v kind="$kind" '
        {
            if (kind == "uncond" && $0 !~ /\tjmp +[0-9a-f]+ </) next
            if (kind == "cond" && $0 !~ /\tj[a-z]+ +[0-9a-f]+ </) next
            if (kind == "cond" && $0 ~ /\tjmp /) next
            t = $0; sub(/.*</, "", t); sub(/>.*/, "", t)
            if (t ~ /\+0x/) next           # into the middle of something
            if (t == f || index(t, f ".") == 1) next
            print
        }'
}

check() {
    local c=$1 a b
    case $c in
    relocs) grep -q ' \.rela\.text ' "$tmp/sections" ;;
    pie) grep -qE 'Type: +DYN' "$tmp/header" ;;
    nopie) grep -qE 'Type: +EXEC' "$tmp/header" ;;
    section:*) grep -qE "\] ${c#section:} " "$tmp/sections" ;;
    segment:*) grep -qE "^ +${c#segment:} " "$tmp/segments" ;;
    reloc:*)
        a=${c#reloc:}; b=${a##*:}; a=${a%:*}
        relsec "$a" | grep -q " $b " ;;
    sym:*) awk '{print $NF}' "$tmp/syms" | grep -qxF "${c#sym:}" ;;
    dynsym:*) readelf --dyn-syms -W "$bin" | awk '$7 != "UND" {print $8}' | grep -qxF "${c#dynsym:}" ;;
    calls:*) grep -qE "	(call|jmp) +[0-9a-f]+ <${c#calls:}(@plt)?>" "$tmp/dis" ;;
    ijmp:*) body "${c#ijmp:}" | grep -E '	(notrack )?jmp +\*' | grep -qv '(%rip)' ;;
    icall:*) body "${c#icall:}" | grep -qE '	(notrack )?call +\*' ;;
    notrack:*) body "${c#notrack:}" | grep -qE '	notrack jmp +\*' ;;
    tailjmp:*) [ -n "$(other_fn_jumps "${c#tailjmp:}" uncond)" ] ;;
    condtail:*) [ -n "$(other_fn_jumps "${c#condtail:}" cond)" ] ;;
    calltail:*)
        body_exact "${c#calltail:}" | no_padding | tail -n 1 | grep -qE '	call ' ||
            body_exact "${c#calltail:}.cold" | no_padding | tail -n 1 | grep -qE '	call ' ;;
    adjacent:*)
        a=${c#adjacent:}; b=${a#*:}; a=${a%%:*}
        local last end start
        last=$(body_exact "$a" | no_padding | tail -n 1)
        echo "$last" | grep -qE '	call ' || return 1
        # end of the call = address of the next instruction in the full disassembly
        a=${last%%:*}
        a=${a//[[:space:]]/}
        end=$(awk -v a="$a:" '
            found && $1 ~ /^[0-9a-f]+:$/ { sub(/:$/, "", $1); print $1; exit }
            $1 == a { found = 1 }' "$tmp/dis")
        start=$(grep -E "^[0-9a-f]+ <$b>:" "$tmp/dis" | awk '{print $1; exit}')
        [[ $end =~ ^[0-9a-f]+$ && $start =~ ^[0-9a-f]+$ ]] || return 1
        [ $((16#$end)) -eq $((16#$start)) ] ;;
    cold:*) awk '{print $NF}' "$tmp/syms" | grep -qE "${c#cold:}.*\.cold(\.[0-9]+)?$" ;;
    jtab-cold) jtab_cold ;;
    evex) grep -qE '%zmm[0-9]|%k[0-7]' "$tmp/dis" ;;
    evex-rip) grep -E '%zmm[0-9]' "$tmp/dis" | grep -q '(%rip)' ;;
    vex-rip) grep -E '%ymm[0-9]' "$tmp/dis" | grep -q '(%rip)' ;;
    ifunc) grep -q 'R_X86_64_IRELATIV' "$tmp/relocs" ;;
    endbr:*) body_exact "${c#endbr:}" | head -n 1 | grep -qE '	endbr64' ;;
    cet-note) readelf -nW "$bin" | grep -E 'x86 feature:' | grep -q 'IBT' &&
              readelf -nW "$bin" | grep -E 'x86 feature:' | grep -q 'SHSTK' ;;
    *) echo "unknown check: $c" >&2; return 2 ;;
    esac
}

fail=0 ran=0
for spec in "$@"; do
    c=${spec%%@*}
    if [ "$spec" != "$c" ]; then
        case ",${spec#*@}," in *",$variant,"*) ;; *) continue ;; esac
    fi
    ran=$((ran + 1))
    if check "$c"; then
        echo "ok      $c"
    else
        echo "MISSING $c"
        fail=1
    fi
done
echo "$(basename "$bin") [$variant]: $ran check(s), $([ $fail = 0 ] && echo all present || echo SOME MISSING)"
exit $fail
