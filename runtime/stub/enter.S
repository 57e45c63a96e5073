/* Slot 24: the dispatcher every inserted call goes through.  This is the one
 * place that decides what is saved around an analysis call; see abi.h.
 *
 * Site code:
 *     lea  -128(%rsp), %rsp          # step over the red zone
 *     call blob+24                   # -> here
 *     nopl disp32(%rax)              # 0f 1f 80 <disp32>: body = end of nop + disp32
 *     lea  128(%rsp), %rsp
 *
 * Everything the application can observe is restored on return:
 *   - RFLAGS and the 15 general registers, pushed here as struct AtomxFrame
 *     (r15 at the lowest address), popped at the end;
 *   - x87, MXCSR, SSE, AVX, AVX-512, PKRU ...: every component enabled in
 *     XCR0, with XSAVE/XRSTOR (mask EDX:EAX = all ones) into an area of
 *     descriptor->xsaveSize bytes below the frame.  The 64-bit forms keep the
 *     x87 instruction and data pointers whole.
 * Memory below the application's red zone is free for us: the site code
 * stepped over the red zone before the call.
 *
 * The body is a SysV function taking the frame (%rdi); it may clobber
 * anything.  It runs with DF clear (the saved RFLAGS put the application's
 * DF back) and %rsp 64-byte aligned at the call. */
#include "stub.h"

        .text
        .globl  atomx_enter
        .hidden atomx_enter
        .type   atomx_enter, @function
atomx_enter:
        /* struct AtomxFrame, from the top down: rflags, rax ... r15. */
        pushfq
        push    %rax
        /* Descriptor = blob + delta, both found rip-relative.  Before the
         * runtime is ready (code ld.so runs before the entry point) there is
         * nothing to call: return at once. */
        lea     atomx_blob_start(%rip), %rax
        add     atomx_blob_start + STUB_BLOB_DESCRIPTOR_DELTA(%rip), %rax
        cmpq    $0, STUB_DESC_READY(%rax)
        je      .Lnot_ready
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

.Lsave_vector_state:
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
        jz      .Lthread_ready
        cmpb    $0, %fs:(%rcx)
        jne     .Lthread_ready
        cld
        call    *STUB_DESC_THREAD_START(%r12)
.Lthread_ready:

        /* The body: the return address points at the nop; its disp32 is
         * relative to the end of the 7-byte nop. */
        mov     STUB_FRAME_RETURN_ADDRESS(%rbx), %rcx
        movslq  3(%rcx), %rax
        lea     7(%rcx,%rax), %rax
        mov     %rbx, %rdi                      /* body(frame) */
        cld                                     /* the SysV ABI wants DF clear */
        call    *%rax

        mov     $-1, %eax
        mov     $-1, %edx
        xrstor64 (%rsp)
        mov     %rbx, %rsp
.Lrestore_registers:
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
        pop     %rax
        popfq
        ret
.Lnot_ready:
        pop     %rax
        popfq
        ret
        .size   atomx_enter, . - atomx_enter

/* Slot 48: the same without XSAVE/XRSTOR, for sites whose analysis code
 * uses general registers only (abi.h: kAtomxSlotEnterLight).  The frame
 * and the body convention are enter's.  A thread's first call takes
 * enter's full path: the analysis libc's thread set-up may use any
 * register. */
        .globl  atomx_enter_light
        .hidden atomx_enter_light
        .type   atomx_enter_light, @function
atomx_enter_light:
        pushfq
        push    %rax
        lea     atomx_blob_start(%rip), %rax
        add     atomx_blob_start + STUB_BLOB_DESCRIPTOR_DELTA(%rip), %rax
        cmpq    $0, STUB_DESC_READY(%rax)
        je      .Lnot_ready
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
        mov     %rsp, %rbx
        mov     %rax, %r12
        mov     STUB_DESC_THREAD_FLAG(%r12), %rcx
        test    %rcx, %rcx
        jz      1f
        cmpb    $0, %fs:(%rcx)
        je      .Lsave_vector_state
1:      and     $-64, %rsp
        mov     STUB_FRAME_RETURN_ADDRESS(%rbx), %rcx
        movslq  3(%rcx), %rax
        lea     7(%rcx,%rax), %rax
        mov     %rbx, %rdi
        cld
        call    *%rax
        mov     %rbx, %rsp
        jmp     .Lrestore_registers
        .size   atomx_enter_light, . - atomx_enter_light

        .section .note.GNU-stack, "", @progbits
