# ease_kinds.S -- the instruction kinds ease's reports classify, each run a
# few times, for tool.ease.classify.kinds (tests/oracles/ease_oracle.py):
# string instructions with and without rep/repz/repnz, shifts and rotates by
# an immediate and by %cl, bt, setcc and cmovcc on memory and registers,
# adc/sbb, byte and wide mul/div, xchg and locked read-modify-writes, leave,
# absolute, %fs-based, base+index and %rip-relative operands, push/pop/call
# through memory, loop and jrcxz, nops of every length, scalar and packed
# SSE, x87 and AVX.  Built without PIE (absolute addresses); no libc call: main returns 0.
        .section .note.GNU-stack, "", @progbits

        .data
        .align 16
buf1:   .ascii "abcdefghijklmnopqrstuvwxyz012345"
buf2:   .ascii "abcdefghijklmnopqrstuvwxyz012399"
words:  .quad 1, 2, 3, 4, 5, 6, 7, 8
dbl:    .double 2.5, 4.0
flt:    .float 1.5, 3.0, 0.5, 8.0
dst:    .zero 64
fptr:   .quad leaf

        .text
        .type leaf, @function
leaf:   endbr64
        lea 1(%rdi), %rax
        ret
        .size leaf, .-leaf

        .type strings, @function     # string instructions
strings:
        push %rbx
        lea buf1(%rip), %rsi
        lea dst(%rip), %rdi
        mov $16, %ecx
        rep movsb
        lea dst(%rip), %rdi
        xor %eax, %eax
        mov $4, %ecx
        rep stosq
        lea buf1(%rip), %rsi
        lea buf2(%rip), %rdi
        mov $32, %ecx
        repz cmpsb
        lea buf1(%rip), %rdi
        mov $'k', %al
        mov $32, %ecx
        repnz scasb
        lea buf1(%rip), %rsi
        lodsb
        lodsq
        lea dst(%rip), %rdi
        lea words(%rip), %rsi
        movsq
        stosl
        pop %rbx
        ret
        .size strings, .-strings

        .type alu, @function         # shifts, flags, conditions
alu:    push %rbp
        mov %rsp, %rbp
        sub $32, %rsp
        movq $9, -8(%rbp)
        movw $7, -2(%rbp)
        mov %edi, %eax
        mov $3, %ecx
        shl %cl, %eax
        sar $1, %eax
        shr %eax
        rol %cl, %rax
        ror $5, %eax
        shld $3, %rdx, %rax
        shrd %cl, %rdx, %rax
        bt $2, %eax
        setc %dl
        bt %ecx, %eax
        setnc -1(%rbp)
        cmp $7, %eax
        cmovbe %ecx, %eax
        cmovg -8(%rbp), %rax
        add %rdi, %rax
        adc $0, %rdx
        sbb %ecx, %ecx
        inc %rax
        dec %edx
        neg %rcx
        not %rcx
        and $0xff, %eax
        or $1, %ax
        xor %dl, %dl
        test $1, %al
        sete %al
        bsf %rax, %rcx
        bsr %rax, %rcx
        popcnt %rax, %rcx
        bswap %ecx
        movzbl %al, %eax
        movsbq %dl, %rdx
        movslq %ecx, %rcx
        movswl -2(%rbp), %esi
        movabs $0x123456789abcdef0, %rsi
        cwtl
        cltq
        cqto
        cltd
        leave
        ret
        .size alu, .-alu

        .type muldiv, @function      # multiply and divide, byte and wide
muldiv: mov $200, %eax
        mov $3, %cl
        mulb %cl
        divb %cl
        mov $1000, %eax
        mov $7, %ecx
        mull %ecx
        xor %edx, %edx
        divl %ecx
        mov $-1000, %rax
        cqto
        mov $9, %rcx
        idivq %rcx
        imul $12, %rax, %rdx
        imul %rcx, %rdx
        imulq words(%rip)
        ret
        .size muldiv, .-muldiv

        .type memory, @function      # addressing modes and accesses
memory: push %rbx
        mov $2, %ecx
        mov words(,%rcx,8), %rax
        mov words, %rdx
        lea words(%rip), %rbx
        add %rax, (%rbx)
        addl $1, 8(%rbx,%rcx,4)
        incq 16(%rbx)
        xchg %rax, %rdx
        xchg %rax, 24(%rbx)
        lock xadd %rax, 32(%rbx)
        mov 32(%rbx), %rax
        lock cmpxchg %rdx, 32(%rbx)
        lock incl 40(%rbx)
        mov %fs:0x28, %rdx
        pushq 8(%rbx)
        popq 48(%rbx)
        push $5
        pop %rax
        mov $3, %edi
        call *fptr(%rip)
        lea leaf(%rip), %rax
        call *%rax
        cmpb $'a', buf1(%rip)
        testl $3, (%rbx)
        pop %rbx
        ret
        .size memory, .-memory

        .type loops, @function       # loop, jrcxz, a jump table
loops:  mov $4, %ecx
1:      add %ecx, %eax
        loop 1b
        jrcxz 2f
        nop
2:      mov %edi, %eax
        and $3, %eax
        jmp *table(,%rax,8)
3:      ret
        .size loops, .-loops
        .section .rodata
        .align 8
table:  .quad 3b, 3b, 3b, 3b
        .text

        .type nops, @function        # every nop objdump and Zydis show
nops:   nop
        xchg %ax, %ax
        nopl (%rax)
        nopl 0(%rax)
        nopl 0(%rax,%rax,1)
        nopw 0(%rax,%rax,1)
        .byte 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00                  # nopl 0x0(%rax), disp32
        .byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00            # nopl 0x0(%rax,%rax,1)
        .byte 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00      # nopw 0x0(%rax,%rax,1)
        .byte 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00  # cs nopw
        ret
        .size nops, .-nops

        .type sse, @function         # scalar and packed SSE
sse:    movsd dbl(%rip), %xmm0
        movss flt(%rip), %xmm1
        cvtsi2sd %edi, %xmm2
        cvtsi2ssq %rdi, %xmm3
        addsd %xmm2, %xmm0
        mulss %xmm3, %xmm1
        subsd dbl+8(%rip), %xmm0
        divss %xmm1, %xmm1
        sqrtsd %xmm0, %xmm4
        cvtss2sd %xmm1, %xmm5
        cvtsd2ss %xmm0, %xmm6
        cvttsd2si %xmm0, %eax
        cvttss2si %xmm1, %rax
        ucomisd %xmm0, %xmm2
        comiss %xmm1, %xmm3
        movd %edi, %xmm7
        movq %rdi, %xmm8
        movq %xmm8, %rax
        movlpd dbl(%rip), %xmm9
        movhps dbl(%rip), %xmm9
        movaps flt(%rip), %xmm10
        movups flt(%rip), %xmm11
        addps %xmm10, %xmm11
        mulpd dbl(%rip), %xmm9
        andpd %xmm9, %xmm9
        xorps %xmm12, %xmm12
        pxor %xmm13, %xmm13
        paddd %xmm10, %xmm13
        pshufd $0x1b, %xmm13, %xmm14
        punpcklqdq %xmm14, %xmm13
        movdqa %xmm13, dst(%rip)
        movdqu dst(%rip), %xmm15
        pcmpeqb %xmm15, %xmm15
        pmovmskb %xmm15, %eax
        movsd %xmm0, dst(%rip)
        movss %xmm1, dst+8(%rip)
        ret
        .size sse, .-sse

        .type x87, @function         # x87: memory types, integers, control words, flags
x87:    fld1
        fldl dbl(%rip)
        faddp %st, %st(1)
        flds flt(%rip)
        fmulp %st, %st(1)
        fildl words(%rip)
        fxch %st(1)
        fstpl dst(%rip)
        fistpl dst+8(%rip)
        fldl dbl(%rip)
        fstpt dst+16(%rip)
        fldz
        fld1
        fcomip %st(1), %st
        fstp %st(0)
        fnstcw dst+32(%rip)
        fldcw dst+32(%rip)
        ret
        .size x87, .-x87

        .type avx, @function         # VEX: three operands, 256-bit registers
avx:    vmovupd dbl(%rip), %xmm0
        vaddsd %xmm0, %xmm0, %xmm1
        vmulpd %ymm1, %ymm1, %ymm2
        vpxor %xmm3, %xmm3, %xmm3
        vpaddd %ymm3, %ymm3, %ymm4
        vmovdqu %ymm4, dst(%rip)
        vzeroupper
        ret
        .size avx, .-avx

        .globl main
        .type main, @function
main:   push %r12
        mov $5, %r12d
1:      mov %r12d, %edi
        call strings
        mov %r12d, %edi
        call alu
        call muldiv
        call memory
        mov %r12d, %edi
        call loops
        call nops
        mov %r12d, %edi
        call sse
        call x87
        call avx
        dec %r12d
        jnz 1b
        xor %eax, %eax
        pop %r12
        ret
        .size main, .-main
