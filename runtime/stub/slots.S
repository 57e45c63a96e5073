/* The first 72 bytes of the runtime blob (abi.h): four entry slots 8 bytes
 * apart, the descriptor delta that atomx patches, the magic, and three more
 * slots.  Then the
 * process entry point (slot 0), whose C half is atomx_start in start.c.
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

        .section .note.GNU-stack, "", @progbits
