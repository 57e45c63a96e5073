# Kernels with fixed instruction sequences for the pipe tool's test
# (expected_stalls.py holds the stalls computed by hand from the model in
# tools/pipe/README.md; the schedule of each block is in the comments:
# tN = issue cycle, rdy = when the result is ready).
        .text
#define FUNC(name) .globl name; .type name, @function; .p2align 4; name:
#define END(name) .size name, .-name

FUNC(k_independent)             # 5 insts, 0 stalls
        mov %rdi, %rax          # t0
        add $1, %rcx            # t1
        add $2, %rdx            # t2
        lea 8(%rsi), %r8        # t3
        ret                     # t4
END(k_independent)

FUNC(k_load_use)                # 4 insts, 3 stalls
        mov (%rdi), %rax        # t0, rax rdy 4 (load)
        add %rax, %rdx          # t4 (stall 3), rdx rdy 5
        mov %rdx, %rax          # t5
        ret                     # t6
END(k_load_use)

FUNC(k_mul_chain)               # 5 insts, 4 stalls
        mov %rdi, %rax          # t0, rax rdy 1
        imul %rax, %rax         # t1, rdy 4 (mul 3)
        imul %rax, %rax         # t4 (stall 2), rdy 7
        imul %rsi, %rax         # t7 (stall 2), rdy 10
        ret                     # t8
END(k_mul_chain)

FUNC(k_div)                     # 5 insts, 24 stalls
        mov %rdi, %rax          # t0, rax rdy 1
        xor %edx, %edx          # t1: zero idiom, waits for nothing; rdx rdy 2
        div %rsi                # t2, rax rdx rdy 27 (div 25)
        add $1, %rax            # t27 (stall 24)
        ret                     # t28
END(k_div)

FUNC(k_loop)                    # rdi = n > 0, rsi = array of n longs
        xor %eax, %eax          # block A: 2 insts, 0 stalls
        mov %rdi, %rcx
.Lloop:                         # block B: 5 insts, 2 stalls
        add (%rsi), %rax        # t0, load + add: rax rdy 4
        add $8, %rsi            # t1
        mov %rax, %rdx          # t4 (stall 2)
        dec %rcx                # t5, flags rdy 6
        jnz .Lloop              # t6
        ret                     # block C: 1 inst, 0 stalls
END(k_loop)

FUNC(k_chase)                   # 4 insts, 6 stalls: address registers count
        mov (%rdi), %rax        # t0, rdy 4
        mov (%rax), %rax        # t4 (stall 3), rdy 8
        mov 8(%rax), %rax       # t8 (stall 3), rdy 12
        ret                     # t9
END(k_chase)

FUNC(k_fp)                      # 7 insts, 37 stalls
        movsd (%rdi), %xmm0     # t0, load: rdy 4
        mulsd %xmm0, %xmm0      # t4 (stall 3), rdy 8 (fp 4)
        addsd %xmm1, %xmm0      # t8 (stall 3), rdy 12
        divsd %xmm2, %xmm0      # t12 (stall 3), rdy 27 (fp div 15)
        sqrtsd %xmm0, %xmm1     # t27 (stall 14), rdy 42
        movapd %xmm1, %xmm0     # t42 (stall 14)
        ret                     # t43
END(k_fp)

FUNC(k_flags)                   # 4 insts, 3 stalls: the flags are a register
        cmp (%rdi), %rsi        # t0, load: flags rdy 4
        setl %al                # t4 (stall 3), rax rdy 5
        movzbl %al, %eax        # t5
        ret                     # t6
END(k_flags)

FUNC(k_stack)                   # 6 insts, 0 stalls: push/pop update %rsp for the next cycle
        push %rbx               # t0, rsp rdy 1
        push %rbp               # t1
        mov %rdi, %rbx          # t2
        pop %rbp                # t3, rbp rdy 7 (load), rsp rdy 4
        pop %rbx                # t4
        ret                     # t5
END(k_stack)

FUNC(k_branchy)                 # rdi = x: two paths, blocks of known counts
        test %rdi, %rdi         # block A: 2 insts, 0 stalls
        js .Lneg
        mov (%rsi), %rax        # block B (x >= 0): 3 insts, 3 stalls
        imul %rax, %rax         # t4 (stall 3)
        ret                     # t5
.Lneg:
        mov %rdi, %rax          # block C (x < 0): 3 insts, 0 stalls
        neg %rax
        ret
END(k_branchy)

        .section .note.GNU-stack,"",@progbits
