/* Slots 24, 48, 56, 64: the dispatchers of the inserted calls that save
 * the complete state.  Which of them a site calls, or whether it calls a
 * direct body that saves less, is decided in one place in atomx,
 * src/instrument/SaveSet.h; this file is what those dispatchers save (the
 * frame is abi.h's AtomxFrame).  Site code:
 *     lea  -128(%rsp), %rsp          # step over the red zone
 *     call blob+SLOT                 # -> here
 *     nopl disp32(%rax)              # 0f 1f 80 <disp32>: body = end of nop + disp32
 *     lea  128(%rsp), %rsp
 *
 * Everything the application can observe is restored on return:
 *   - the 15 general registers, pushed here as struct AtomxFrame (r15 at the
 *     lowest address), popped at the end;
 *   - RFLAGS (pushfq/popfq), except in the "noflags" dispatchers, which
 *     atomx calls only where no status flag is live and the procedure
 *     never sets DF (analysis/FlagsLiveness): popfq is the slowest
 *     instruction here.  The frame keeps its rflags slot either way;
 *   - x87, MXCSR, SSE, AVX, AVX-512, PKRU ...: every component enabled in
 *     XCR0, with XSAVE/XRSTOR (mask EDX:EAX = all ones) into an area of
 *     descriptor->xsaveSize bytes below the frame; the "light" dispatchers
 *     skip it, for sites whose analysis code uses general registers only
 *     (src/instrument/RoutineFootprint).  The 64-bit forms keep the x87
 *     instruction and data pointers whole.
 * Memory below the application's red zone is free for us: the site code
 * stepped over the red zone before the call.
 *
 * The body is a SysV function taking the frame (%rdi); it may clobber
 * anything.  It runs with DF clear and %rsp 64-byte aligned at the call. */
#include "stub.h"

/* One dispatcher: NAME, whether it saves the vector state (VECTOR) and
 * RFLAGS (FLAGS); a light one shares the restore code of the full one of
 * the same FLAGS kind (FULL).  Only the full ones set up the analysis libc
 * for a new thread (abi.h, threadFlag): light code calls nothing, so it
 * cannot reach libc, and needs none of it. */
.macro DISPATCHER name, vector, flags, full
        .globl  \name
        .hidden \name
        .type   \name, @function
\name:
        /* struct AtomxFrame, from the top down: rflags, rax ... r15. */
        .if \flags
        pushfq
        .else
        lea     -8(%rsp), %rsp                  /* the rflags slot, unused */
        .endif
        push    %rax
        /* Descriptor = blob + delta, both found rip-relative.  Before the
         * runtime is ready (code ld.so runs before the entry point) there is
         * nothing to call: return at once. */
        lea     atomx_blob_start(%rip), %rax
        add     atomx_blob_start + STUB_BLOB_DESCRIPTOR_DELTA(%rip), %rax
        cmpq    $0, STUB_DESC_READY(%rax)
        je      \name\()_not_ready
        push    %rcx
        push    %rdx
        push    %rbx
        push    %rbp
        push    %rsi
        push    %rdi
        push    %r8
        push    %r9
        push    %r10
        push    %r11
        push    %r12
        push    %r13
        push    %r14
        push    %r15
        mov     %rsp, %rbx                      /* %rbx = frame (callee-saved: survives the body) */
        mov     %rax, %r12                      /* %r12 = descriptor (callee-saved too) */
        .if \vector
        /* The XSAVE area: xsaveSize bytes below the frame, 64-byte aligned. */
        sub     STUB_DESC_XSAVE_SIZE(%r12), %rsp
        and     $-64, %rsp
        /* XSAVE writes XSTATE_BV only; XRSTOR faults unless the rest of the
         * header (XCOMP_BV, reserved bytes) is zero, so clear all 64 bytes. */
        xor     %eax, %eax
        mov     %rax, STUB_XSAVE_HEADER + 0(%rsp)
        mov     %rax, STUB_XSAVE_HEADER + 8(%rsp)
        mov     %rax, STUB_XSAVE_HEADER + 16(%rsp)
        mov     %rax, STUB_XSAVE_HEADER + 24(%rsp)
        mov     %rax, STUB_XSAVE_HEADER + 32(%rsp)
        mov     %rax, STUB_XSAVE_HEADER + 40(%rsp)
        mov     %rax, STUB_XSAVE_HEADER + 48(%rsp)
        mov     %rax, STUB_XSAVE_HEADER + 56(%rsp)
        mov     $-1, %eax
        mov     $-1, %edx
        xsave64 (%rsp)
        /* A thread's first call: set up the analysis libc's state for it
         * (abi.h, threadFlag). */
        mov     STUB_DESC_THREAD_FLAG(%r12), %rcx
        test    %rcx, %rcx
        jz      1f
        cmpb    $0, %fs:(%rcx)
        jne     1f
        cld
        call    *STUB_DESC_THREAD_START(%r12)
1:
        .else
        and     $-64, %rsp
        .endif
        /* The body: the return address points at the nop; its disp32 is
         * relative to the end of the 7-byte nop. */
        mov     STUB_FRAME_RETURN_ADDRESS(%rbx), %rcx
        movslq  3(%rcx), %rax
        lea     7(%rcx,%rax), %rax
        mov     %rbx, %rdi                      /* body(frame) */
        cld                                     /* the SysV ABI wants DF clear */
        call    *%rax
        .if \vector
        mov     $-1, %eax
        mov     $-1, %edx
        xrstor64 (%rsp)
        mov     %rbx, %rsp
        .else
        mov     %rbx, %rsp
        jmp     \full\()_restore_registers
        .endif
        .if \vector
\name\()_restore_registers:
        pop     %r15
        pop     %r14
        pop     %r13
        pop     %r12
        pop     %r11
        pop     %r10
        pop     %r9
        pop     %r8
        pop     %rdi
        pop     %rsi
        pop     %rbp
        pop     %rbx
        pop     %rdx
        pop     %rcx
        .endif
\name\()_not_ready:
        pop     %rax
        .if \flags
        popfq
        .else
        lea     8(%rsp), %rsp
        .endif
        ret
        .size   \name, . - \name
.endm

        .text
        DISPATCHER atomx_enter, 1, 1, atomx_enter
        DISPATCHER atomx_enter_light, 0, 1, atomx_enter
        DISPATCHER atomx_enter_noflags, 1, 0, atomx_enter_noflags
        DISPATCHER atomx_enter_light_noflags, 0, 0, atomx_enter_noflags

        .section .note.GNU-stack, "", @progbits
