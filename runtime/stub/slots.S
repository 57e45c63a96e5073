/* The first 80 bytes of the runtime blob (abi.h): four entry slots 8 bytes
 * apart, the descriptor delta that atomx patches, the magic, and four more
 * slots.  Then the process entry point (slot 0), whose C half is
 * atomx_start in start.c, and the per-thread counters' check (slot 72),
 * whose C half is atomx_thread_counters in counters.c.
 * The linker script (blob.ld) puts this section at offset 0. */
#include "stub.h"

        .section .text.atomx_slots, "ax", @progbits
        .globl  atomx_blob_start
        .hidden atomx_blob_start
atomx_blob_start:
        jmp     atomx_entry                     /* 0: process entry */
        .org    atomx_blob_start + 8, 0xcc
        jmp     atomx_original_address          /* 8: original_address(runTime) */
        .org    atomx_blob_start + 16, 0xcc
        jmp     atomx_program_after             /* 16: program_after() */
        .org    atomx_blob_start + 24, 0xcc
        jmp     atomx_enter                     /* 24: enter (enter.S) */
        .org    atomx_blob_start + STUB_BLOB_DESCRIPTOR_DELTA, 0xcc
        .quad   0                               /* 32: descriptor - blob, written by atomx */
        .ascii  "ATOMXRT1"                      /* 40: magic */
        jmp     atomx_enter_light               /* 48: enter, no XSAVE (enter.S) */
        .org    atomx_blob_start + 56, 0xcc
        jmp     atomx_enter_noflags             /* 56: enter, no RFLAGS */
        .org    atomx_blob_start + 64, 0xcc
        jmp     atomx_enter_light_noflags       /* 64: enter, neither */
        .org    atomx_blob_start + 72, 0xcc
        jmp     atomx_thread_counters_slot      /* 72: thread_counters() */
        .org    atomx_blob_start + 80, 0xcc

/* Slot 0.  The kernel (static) or ld.so (dynamic) jumps here with %rsp at
 * argc and %rdx = the function the program must register with atexit
 * (ld.so's _dl_fini).  Load the analysis routines, then enter the program
 * exactly as we were entered: same %rsp, same %rdx. */
        .text
        .type   atomx_entry, @function
atomx_entry:
        mov     %rsp, %rdi              /* atomx_start(initial stack) */
        and     $-16, %rsp              /* (already aligned by the ABI; be sure) */
        push    %rdi                    /* the initial %rsp */
        push    %rdx                    /* ld.so's fini function */
        call    atomx_start             /* -> run-time address of the original entry */
        pop     %rdx
        pop     %rsp
        jmp     *%rax
        .size   atomx_entry, . - atomx_entry

/* Slot 72.  Called from anywhere (the site stepped over the red zone):
 * every register and RFLAGS survive.  The common case, a thread that has
 * its counters, returns after a test that leaves the flags alone (not,
 * lea and jecxz write none): ecx = tid - owner. */
        .type   atomx_thread_counters_slot, @function
atomx_thread_counters_slot:
        push    %rcx
        push    %rdx
        movl    %fs:STUB_GLIBC_TID_OFFSET, %ecx
        movl    %fs:STUB_COUNTERS_OWNER_OFFSET, %edx
        not     %edx
        lea     1(%rcx,%rdx), %ecx
        jecxz   1f
        pushfq
        push    %rax
        push    %rsi
        push    %rdi
        push    %r8
        push    %r9
        push    %r10
        push    %r11
        push    %rbp
        mov     %rsp, %rbp
        and     $-16, %rsp
        cld
        call    atomx_thread_counters
        mov     %rbp, %rsp
        pop     %rbp
        pop     %r11
        pop     %r10
        pop     %r9
        pop     %r8
        pop     %rdi
        pop     %rsi
        pop     %rax
        popfq
1:
        pop     %rdx
        pop     %rcx
        ret
        .size   atomx_thread_counters_slot, . - atomx_thread_counters_slot

        .section .note.GNU-stack, "", @progbits
