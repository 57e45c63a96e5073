/* Assembler parts of the runtime test harness (harness.cpp).
 *
 * harness_entry plays the part of the entry point atomx gives a program: it
 * sets up the blob and a descriptor (harness_setup), then enters slot 0 with
 * the process's real initial %rsp and %rdx.  The descriptor's originalEntry
 * is harness_original_entry, which records %rsp and %rdx and goes on to the
 * real _start.
 *
 * harness_enter_test is an inserted call site, exactly as atomx emits it,
 * with every register, the flags, the red zone and the vector, x87 and MXCSR
 * state set to known values before and recorded after. */

        .text
        .globl  harness_entry
        .type   harness_entry, @function
harness_entry:
        mov     %rsp, %rbx                      /* callee-saved: survive harness_setup */
        mov     %rdx, %r12
        mov     %rsp, %rdi                      /* harness_setup(initial stack, %rdx) */
        mov     %rdx, %rsi
        and     $-16, %rsp
        call    harness_setup                   /* -> blob slot 0 */
        mov     %rbx, %rsp
        mov     %r12, %rdx
        jmp     *%rax
        .size   harness_entry, . - harness_entry

        .globl  harness_original_entry
        .type   harness_original_entry, @function
harness_original_entry:
        mov     %rsp, harness_entry_rsp(%rip)
        mov     %rdx, harness_entry_rdx(%rip)
        jmp     _start
        .size   harness_original_entry, . - harness_original_entry

/* ---- the enter test ------------------------------------------------------- */

/* Order of the 15 general registers in et_in_gpr / et_out_gpr. */
#define GPR_STORE(op)                                                                       \
        op(rax, 0); op(rbx, 8); op(rcx, 16); op(rdx, 24); op(rsi, 32); op(rdi, 40);        \
        op(rbp, 48); op(r8, 56); op(r9, 64); op(r10, 72); op(r11, 80); op(r12, 88);         \
        op(r13, 96); op(r14, 104); op(r15, 112)
#define LOAD_GPR(reg, off) mov et_in_gpr + off(%rip), %reg
#define SAVE_GPR(reg, off) mov %reg, et_out_gpr + off(%rip)

#define YMM_ALL(op)                                                                         \
        op(0); op(1); op(2); op(3); op(4); op(5); op(6); op(7);                             \
        op(8); op(9); op(10); op(11); op(12); op(13); op(14); op(15)
#define LOAD_YMM(i) vmovdqu et_in_ymm + 32 * i(%rip), %ymm##i
#define SAVE_YMM(i) vmovdqu %ymm##i, et_out_ymm + 32 * i(%rip)
#define CLOBBER_YMM(i) vpcmpeqb %ymm##i, %ymm##i, %ymm##i

#define REDZONE_ALL(op)                                                                     \
        op(0); op(8); op(16); op(24); op(32); op(40); op(48); op(56);                       \
        op(64); op(72); op(80); op(88); op(96); op(104); op(112); op(120)
#define FILL_REDZONE(off) mov et_in_redzone + off(%rip), %rax; mov %rax, -128 + off(%rsp)
#define SAVE_REDZONE(off) mov -128 + off(%rsp), %rax; mov %rax, et_out_redzone + off(%rip)

/* void harness_enter_test(uint64_t shift): calls the enter slot at et_enter,
 * with %rsp lowered by `shift` bytes first (the test runs every 8-byte
 * alignment modulo 64). */
        .globl  harness_enter_test
        .type   harness_enter_test, @function
harness_enter_test:
        push    %rbx
        push    %rbp
        push    %r12
        push    %r13
        push    %r14
        push    %r15
        sub     $8, %rsp
        mov     %rdi, et_shift(%rip)
        sub     %rdi, %rsp
        stmxcsr et_saved_mxcsr(%rip)
        fnstcw  et_saved_fcw(%rip)

        /* Stale bytes under the stack: if enter did not clear the XSAVE
         * header, XRSTOR would fault on them. */
        lea     -16384(%rsp), %rdi
        mov     $16384 - 256, %ecx
        mov     $0xff, %eax
        cld
        rep stosb

        /* x87: pi in st(0) and a non-default control word; then MXCSR and
         * all 16 YMM registers (upper halves included). */
        fninit
        fldpi
        fldcw   et_in_fcw(%rip)
        ldmxcsr et_in_mxcsr(%rip)
        YMM_ALL(LOAD_YMM)

        /* Flags (DF included), read back as the CPU took them; this pushes
         * below %rsp, so it comes before the red zone is filled. */
        push    et_in_flags(%rip)
        popfq
        pushfq
        pop     et_flags_set(%rip)
        /* From here on only mov and lea: they leave the flags alone. */
        REDZONE_ALL(FILL_REDZONE)
        mov     %rsp, et_rsp_before(%rip)
        GPR_STORE(LOAD_GPR)

        /* The site, as atomx inserts it. */
        lea     -128(%rsp), %rsp
        call    *et_enter(%rip)
        .byte   0x0f, 0x1f, 0x80                /* nopl disp32(%rax) */
        .long   harness_enter_body - 1f
1:      lea     128(%rsp), %rsp

        GPR_STORE(SAVE_GPR)
        mov     %rsp, et_rsp_after(%rip)
        REDZONE_ALL(SAVE_REDZONE)
        pushfq
        pop     et_out_flags(%rip)
        cld
        YMM_ALL(SAVE_YMM)
        stmxcsr et_out_mxcsr(%rip)
        fnstcw  et_out_fcw(%rip)
        fstpt   et_out_st0(%rip)

        ldmxcsr et_saved_mxcsr(%rip)
        fldcw   et_saved_fcw(%rip)
        vzeroupper
        add     et_shift(%rip), %rsp
        add     $8, %rsp
        pop     %r15
        pop     %r14
        pop     %r13
        pop     %r12
        pop     %rbp
        pop     %rbx
        ret
        .size   harness_enter_test, . - harness_enter_test

/* The body enter calls: records what it was given, lets C check the frame,
 * then clobbers everything a SysV function may, and more: the callee-saved
 * registers but %rbx (enter restores them from the frame, not from the
 * body), flags with DF set, MXCSR, the x87 control word and stack. */
        .type   harness_enter_body, @function
harness_enter_body:
        mov     %rsp, et_body_rsp(%rip)
        mov     %rdi, et_body_rdi(%rip)
        mov     %rbx, et_body_rbx(%rip)
        pushfq
        pop     et_body_flags(%rip)
        push    %rbx                            /* realign to 16 for the C call */
        call    harness_enter_body_check        /* (frame in %rdi) */
        pop     %rbx

        mov     $0x5a5a5a5a5a5a5a5a, %rax
        mov     %rax, %rcx
        mov     %rax, %rdx
        mov     %rax, %rsi
        mov     %rax, %rdi
        mov     %rax, %r8
        mov     %rax, %r9
        mov     %rax, %r10
        mov     %rax, %r11
        mov     %rax, %rbp
        mov     %rax, %r12
        mov     %rax, %r13
        mov     %rax, %r14
        mov     %rax, %r15
        YMM_ALL(CLOBBER_YMM)
        ldmxcsr et_clobber_mxcsr(%rip)
        fninit
        fld1
        fld1
        cmp     %rax, %rbx
        std
        ret
        .size   harness_enter_body, . - harness_enter_body

        .data
        .p2align 6
        .globl  et_in_gpr, et_out_gpr, et_in_ymm, et_out_ymm, et_in_redzone, et_out_redzone
        .globl  et_in_flags, et_flags_set, et_out_flags, et_in_mxcsr, et_out_mxcsr, et_in_fcw, et_out_fcw
        .globl  et_out_st0, et_rsp_before, et_rsp_after, et_enter, et_body_rsp, et_body_rdi, et_body_rbx
        .globl  et_body_flags, et_clobber_mxcsr, harness_entry_rsp, harness_entry_rdx
et_in_ymm:      .space 16 * 32
et_out_ymm:     .space 16 * 32
et_in_gpr:      .space 15 * 8
et_out_gpr:     .space 15 * 8
et_in_redzone:  .space 128
et_out_redzone: .space 128
et_out_st0:     .space 16
et_in_flags:    .quad 0
et_flags_set:   .quad 0
et_out_flags:   .quad 0
et_rsp_before:  .quad 0
et_rsp_after:   .quad 0
et_enter:       .quad 0
et_body_rsp:    .quad 0
et_body_rdi:    .quad 0
et_body_rbx:    .quad 0
et_body_flags:  .quad 0
et_shift:       .quad 0
harness_entry_rsp: .quad 0
harness_entry_rdx: .quad 0
et_in_mxcsr:    .long 0
et_out_mxcsr:   .long 0
et_saved_mxcsr: .long 0
et_clobber_mxcsr: .long 0x1fbf                  /* default control, all exception flags set */
et_in_fcw:      .word 0
et_out_fcw:     .word 0
et_saved_fcw:   .word 0

        .section .note.GNU-stack, "", @progbits
