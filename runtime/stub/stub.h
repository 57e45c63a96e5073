/* Internal to the runtime blob (runtime/stub): shared by its C and assembler
 * sources.  The blob is one flat, position-independent piece of code with no
 * relocations and no writable data: everything it must remember lives in the
 * AtomxDescriptor (abi.h), which it finds as blob address + delta. */
#ifndef ATOMX_STUB_H
#define ATOMX_STUB_H

/* Offsets the assembler sources need; stub.c checks them against abi.h. */
#define STUB_BLOB_DESCRIPTOR_DELTA 32 /* kAtomxBlobDescriptorDelta */
#define STUB_DESC_XSAVE_SIZE 152      /* offsetof(AtomxDescriptor, xsaveSize) */
#define STUB_DESC_READY 184           /* offsetof(AtomxDescriptor, ready) */
#define STUB_DESC_THREAD_FLAG 192     /* offsetof(AtomxDescriptor, threadFlag) */
#define STUB_DESC_THREAD_START 200    /* offsetof(AtomxDescriptor, threadStart) */
#define STUB_FRAME_RETURN_ADDRESS 128 /* offsetof(AtomxFrame, returnAddress) */
#define STUB_XSAVE_HEADER 512         /* the XSAVE header: bytes 512..575 of the area */
#define STUB_GLIBC_TID_OFFSET 0x2d0     /* ATOMX_GLIBC_TID_OFFSET */
#define STUB_COUNTERS_OWNER_OFFSET 0x88 /* ATOMX_COUNTERS_OWNER_OFFSET */

#ifndef __ASSEMBLER__

#include "../abi.h"

/* The descriptor: blob address (atomx_blob_start, slots.S) + the delta atomx
 * wrote at offset 32.  The address is taken in asm so that the compiler
 * cannot see the descriptor as part of a (read-only) blob object: clang
 * deletes stores through a pointer derived from a const array. */
static inline AtomxDescriptor *stub_descriptor(void) {
  uintptr_t blob;
  __asm__("lea atomx_blob_start(%%rip), %0" : "=r"(blob));
  int64_t delta = *(const volatile int64_t *)(blob + STUB_BLOB_DESCRIPTOR_DELTA);
  return (AtomxDescriptor *)(blob + delta);
}

/* start.c: the C half of slot 0; returns the run-time original entry point. */
uint64_t atomx_start(uint64_t *initialStack);
/* after.c: slots 8 and 16, and the handlers that call program_after. */
uint64_t atomx_original_address(uint64_t runTime);
void atomx_program_after(void);
void atomx_after_at_exit(void *unused);
void atomx_after_fatal_signal(int sig, void *info, void *context);

/* counters.c: slot 72's C half, and the totals ProgramAfter sees. */
void atomx_thread_counters(void);
void atomx_counters_total(AtomxDescriptor *d);

/* util.c: "atomx: <program>: a b c" (the non-null parts, concatenated) as
 * one line on fd 2 with one write(2), then exit_group(127). */
void stub_fail(const char *a, const char *b, const char *c) __attribute__((noreturn));
void stub_warn(const char *a, const char *b, const char *c); /* the same line; no exit */
/* v in decimal, NUL-terminated, ending just before `end`; returns its start. */
char *stub_decimal(char *end, uint64_t v);

/* end.c: the deferred end (abi.h).  At start-up of a process that defers
 * its end; ProgramAfter's dump; a replay's reading of a dump, which fails
 * the process (stub_fail) when the dump does not belong to this file. */
void atomx_end_start(AtomxDescriptor *d, const char *dumpDir);
void atomx_end_write(AtomxDescriptor *d);
void atomx_end_read(AtomxDescriptor *d, const char *dump);
const char *stub_program_name(void);

/* util.c: s copied to p, stopping at end (no NUL written); returns where it
 * stopped.  Whether n bytes at a and b are equal. */
char *stub_append(char *p, char *end, const char *s);
int stub_same_bytes(const void *a, const void *b, unsigned long n);

/* The compiler may emit calls to these even with -fno-builtin. */
void *memset(void *s, int c, unsigned long n);
void *memcpy(void *d, const void *s, unsigned long n);
unsigned long stub_strlen(const char *s);
int stub_streq(const char *a, const char *b);

#endif /* !__ASSEMBLER__ */
#endif
