/* The witness stores: the code atomx inserts at a trace site to append the
 * site's witness bytes to the running thread's buffer, with no call
 * (src/instrument/CallCode.cpp, emitStores, encodes it), and the recorder
 * decodes (runtime/trace: its fault handler, and its stepper, which runs
 * inserted code to its end when a signal interrupts it).  This header is
 * the one definition of their encodings, for both: C, and C++.
 *
 * A site's sequence, with the cursor in a register %r that is dead there
 * (instrument/SaveSet's storeScratch), or in %rax, saved, when none is:
 *
 *     [lea -128(%rsp),%rsp; push %rax]   when %rax is saved (or the first of
 *                                        rax rcx rdx rbx rbp rsi rdi whose
 *                                        value the site does not store)
 *     mov %fs:CURSOR,%r                  atomx_stores_cursor_move(.., 0)
 *     mov $imm,disp8(%r) ...             atomx_stores_store: pieces of 4, 2
 *                                        and 1 bytes, the last piece first;
 *     mov %src,disp8(%r)                 atomx_stores_put: a register's value,
 *                                        its first 8, 4, 2 or 1 bytes (a
 *                                        data trace's values)
 *     [addq $136,disp8(%r)]              atomx_stores_add: after putting %rsp
 *                                        when %rax (or the register saved
 *                                        instead) was pushed: the value %rsp
 *                                        had before the red-zone step
 *     lea N(%r),%r                       atomx_stores_advance
 *     mov %r,%fs:CURSOR                  atomx_stores_cursor_move(.., 1)
 *     [pop %rax; lea 128(%rsp),%rsp]
 *     [movq $site,%fs:LIBRARY_SLOT]      atomx_stores_library_site: after
 *                                        the last sequence of a site before
 *                                        a library call whose length the
 *                                        recorder measures (library.c)
 *
 * CURSOR is ATOMX_TRACE_CURSOR_OFFSET (include/atomx/trace_format.h).
 * The pieces go from the highest offset down, so the first store is the
 * one that reaches past a full buffer into its guard page, before any byte
 * is written; the recorder recognises it by its form and by the register
 * holding the cursor.  %r is never %rsp or %r12: their disp8(%r) forms
 * need a SIB byte, which these forms have no room for.  The red-zone steps
 * are the Assembler's (x86/Assembler.h); the stepper runs any
 * lea disp8/disp32(%rsp),%rsp, and push and pop of rax ... rdi.  A site of
 * more than ATOMX_STORES_MAX_BYTES bytes is several such sequences.
 *
 * In a loop that keeps the cursor in a register %R (docs/trace.md, "Loops
 * that keep the cursor in a register"; AtomxCursorRegion), a site's
 * sequence is the one above without its cursor moves, through %R (on its
 * exit edges too); the loop's entry edges end with [mov %R,%fs:SPILL]
 * mov %fs:CURSOR,%R, its exit edges with mov %R,%fs:CURSOR
 * [mov %fs:SPILL,%R]
 * (atomx_stores_spill_move: the program's value of %R kept aside at
 * ATOMX_TRACE_SPILL_OFFSET while the loop runs). */
#ifndef ATOMX_TRACE_STORES_H
#define ATOMX_TRACE_STORES_H

#include <stdint.h>

#include <atomx/trace_format.h>

/* The most witness bytes one site stores: every store's offset and the
 * advance are one signed byte. */
#define ATOMX_STORES_MAX_BYTES 127u
/* The longest form below, in bytes (the cursor moves). */
#define ATOMX_STORES_MAX_FORM 9u

#define ATOMX_STORES_FS 0x64u              /* %fs segment prefix */
#define ATOMX_STORES_OPERAND16 0x66u       /* a 2-byte store */
#define ATOMX_STORES_REX_B 0x41u           /* %r is %r8..%r15 */
#define ATOMX_STORES_REX_W 0x48u           /* REX.W; | 4: REX.R, | 1: REX.B */
#define ATOMX_STORES_STORE8 0xc6u          /* mov $imm8,disp8(%r) */
#define ATOMX_STORES_STORE16_32 0xc7u      /* mov $imm16/32,disp8(%r) */
#define ATOMX_STORES_LOAD 0x8bu            /* mov %fs:CURSOR,%r */
#define ATOMX_STORES_SAVE 0x89u            /* mov %r,%fs:CURSOR */
#define ATOMX_STORES_LEA 0x8du             /* lea N(%r),%r */
#define ATOMX_STORES_MOD_DISP8 0x40u       /* modrm: mod 01, disp8(%r) */
#define ATOMX_STORES_PUT 0x89u             /* mov %src,disp8(%r): 8 (REX.W), 4 or 2 (66) bytes */
#define ATOMX_STORES_PUT8 0x88u            /* mov %src8,disp8(%r) */
#define ATOMX_STORES_ADD 0x81u             /* addq $imm32,disp8(%r) (REX.W, /0) */
/* What %rsp is below its value at the site when the saved register was
 * pushed after the red-zone step: 128 + 8. */
#define ATOMX_STORES_SAVED_RSP 136

/* The size of the piece that stores the next of `left` bytes. */
static inline unsigned atomx_stores_piece(unsigned left) { return left >= 4 ? 4 : left >= 2 ? 2 : 1; }

/* mov %fs:CURSOR,%r (save 0) or mov %r,%fs:CURSOR (save 1), %r the
 * hardware register number `reg`: 64 REX.W(R) 8B|89 modrm(00 r 100) 25
 * disp32; with SPILL for CURSOR, atomx_stores_spill_move.  Writes it to
 * out; its length. */
static inline unsigned atomx_stores_fs_move(uint8_t *out, unsigned reg, int save, unsigned offset) {
  out[0] = ATOMX_STORES_FS;
  out[1] = (uint8_t)(ATOMX_STORES_REX_W | (reg >= 8 ? 4u : 0u));
  out[2] = (uint8_t)(save ? ATOMX_STORES_SAVE : ATOMX_STORES_LOAD);
  out[3] = (uint8_t)(0x04u | (reg & 7) << 3);
  out[4] = 0x25;
  out[5] = (uint8_t)offset;
  out[6] = out[7] = out[8] = 0;
  return 9;
}
static inline unsigned atomx_stores_cursor_move(uint8_t *out, unsigned reg, int save) {
  return atomx_stores_fs_move(out, reg, save, ATOMX_TRACE_CURSOR_OFFSET);
}
/* mov %r,%fs:SPILL (save 1) or mov %fs:SPILL,%r (save 0): a promoted
 * loop's register's program value, kept aside while the loop holds the
 * cursor in it. */
static inline unsigned atomx_stores_spill_move(uint8_t *out, unsigned reg, int save) {
  return atomx_stores_fs_move(out, reg, save, ATOMX_TRACE_SPILL_OFFSET);
}

/* mov $bytes[0..width),offset(%r), width 1, 2 or 4: 66? REX.B? C6|C7
 * modrm(01 000 r) disp8 imm.  Writes it to out; its length. */
static inline unsigned atomx_stores_store(uint8_t *out, unsigned reg, unsigned offset, const uint8_t *bytes, unsigned width) {
  unsigned n = 0;
  if (width == 2) out[n++] = ATOMX_STORES_OPERAND16;
  if (reg >= 8) out[n++] = ATOMX_STORES_REX_B;
  out[n++] = (uint8_t)(width == 1 ? ATOMX_STORES_STORE8 : ATOMX_STORES_STORE16_32);
  out[n++] = (uint8_t)(ATOMX_STORES_MOD_DISP8 | (reg & 7));
  out[n++] = (uint8_t)offset;
  for (unsigned i = 0; i < width; i++) out[n++] = bytes[i];
  return n;
}

/* mov %src,offset(%r), the first `width` bytes of the general register
 * `src` (hardware number): 8: REX.W(R,B) 89 modrm(01 src r) disp8; 4: REX
 * 89 ...; 2: 66 REX 89 ...; 1: REX 88 ... (the narrow forms always carry a
 * REX, 0x40 | R | B, so that %sil/%dil/%spl/%bpl are meant).  Writes it to
 * out; its length. */
static inline unsigned atomx_stores_put(uint8_t *out, unsigned reg, unsigned src, unsigned offset, unsigned width) {
  unsigned n = 0;
  if (width == 2) out[n++] = ATOMX_STORES_OPERAND16;
  out[n++] = (uint8_t)((width == 8 ? ATOMX_STORES_REX_W : 0x40u) | (src >= 8 ? 4u : 0u) | (reg >= 8 ? 1u : 0u));
  out[n++] = width == 1 ? ATOMX_STORES_PUT8 : ATOMX_STORES_PUT;
  out[n++] = (uint8_t)(ATOMX_STORES_MOD_DISP8 | (src & 7) << 3 | (reg & 7));
  out[n++] = (uint8_t)offset;
  return n;
}

/* addq $imm,offset(%r): REX.W(B) 81 modrm(01 000 r) disp8 imm32.  Writes it
 * to out; its length. */
static inline unsigned atomx_stores_add(uint8_t *out, unsigned reg, unsigned offset, int32_t imm) {
  out[0] = (uint8_t)(ATOMX_STORES_REX_W | (reg >= 8 ? 1u : 0u));
  out[1] = ATOMX_STORES_ADD;
  out[2] = (uint8_t)(ATOMX_STORES_MOD_DISP8 | (reg & 7));
  out[3] = (uint8_t)offset;
  for (int i = 0; i < 4; i++) out[4 + i] = (uint8_t)((uint32_t)imm >> (8 * i));
  return 8;
}

/* lea bytes(%r),%r: REX.W(R,B) 8D modrm(01 r r) disp8.  Writes it to out;
 * its length. */
static inline unsigned atomx_stores_advance(uint8_t *out, unsigned reg, unsigned bytes) {
  out[0] = (uint8_t)(ATOMX_STORES_REX_W | (reg >= 8 ? 5u : 0u));
  out[1] = ATOMX_STORES_LEA;
  out[2] = (uint8_t)(ATOMX_STORES_MOD_DISP8 | (reg & 7) << 3 | (reg & 7));
  out[3] = (uint8_t)bytes;
  return 4;
}

/* A store: an immediate's (66? REX? C6|C7 modrm(mod 01, reg 000) disp8
 * imm) or a register's (atomx_stores_put's forms, %r not %rsp or %r12):
 * its length, its base register in *reg, its offset in *disp, its width in
 * *width and in *src the register stored (its first *width bytes; -1: an
 * immediate, the form's last *width bytes); 0 for another instruction. */
static inline int atomx_stores_decode_store(const uint8_t *p, int *reg, int *disp, int *width, int *src) {
  {
    /* A register's: [66] REX 88|89 modrm(01 src r) disp8. */
    const uint8_t *q = p;
    const int w16 = *q == ATOMX_STORES_OPERAND16;
    if (w16) q++;
    if ((q[0] & 0xf2) == 0x40 && (q[1] == ATOMX_STORES_PUT || q[1] == ATOMX_STORES_PUT8) &&
        (q[2] & 0xc0) == ATOMX_STORES_MOD_DISP8 && (q[2] & 7) != 4 && !(w16 && (q[0] & 8)) &&
        !(q[1] == ATOMX_STORES_PUT8 && (w16 || (q[0] & 8)))) {
      *reg = (q[0] & 1) << 3 | (q[2] & 7);
      *src = (q[0] & 4) << 1 | ((q[2] >> 3) & 7);
      *disp = (int8_t)q[3];
      *width = q[1] == ATOMX_STORES_PUT8 ? 1 : w16 ? 2 : (q[0] & 8) ? 8 : 4;
      return (int)(q + 4 - p);
    }
  }
  const uint8_t *q = p;
  int rexB = 0, wide = 4;
  if (*q == ATOMX_STORES_OPERAND16) q++, wide = 2;
  if ((*q & 0xf0) == 0x40) rexB = *q++ & 1;
  if (!((q[0] == ATOMX_STORES_STORE8 || q[0] == ATOMX_STORES_STORE16_32) && (q[1] & 0xc0) == ATOMX_STORES_MOD_DISP8 &&
        (q[1] & 0x38) == 0))
    return 0;
  *reg = rexB << 3 | (q[1] & 7);
  *disp = (int8_t)q[2];
  *width = q[0] == ATOMX_STORES_STORE8 ? 1 : wide;
  *src = -1;
  return (int)(q + 3 + *width - p);
}

/* An add (REX.W(B) 81 modrm(01 000 r) disp8 imm32, %r not %rsp or %r12):
 * its length, its register in *reg, its offset in *disp and its immediate
 * in *imm; 0 for another instruction. */
static inline int atomx_stores_decode_add(const uint8_t *p, int *reg, int *disp, int32_t *imm) {
  if (!((p[0] & 0xfe) == ATOMX_STORES_REX_W && p[1] == ATOMX_STORES_ADD && (p[2] & 0xf8) == ATOMX_STORES_MOD_DISP8 &&
        (p[2] & 7) != 4))
    return 0;
  *reg = (p[0] & 1) << 3 | (p[2] & 7);
  *disp = (int8_t)p[3];
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[4 + i] << (8 * i);
  *imm = (int32_t)v;
  return 8;
}

/* A cursor move (64 REX.W(R) 8B|89 modrm(00 r 100) 25 CURSOR 0 0 0), or a
 * spill move (the same with SPILL): its length,
 * its register in *reg, in *save whether it writes %fs's word (else it
 * reads it) and in *spill whether that word is SPILL; 0 for another
 * instruction. */
static inline int atomx_stores_decode_fs_move(const uint8_t *p, int *reg, int *save, int *spill) {
  if (!(p[0] == ATOMX_STORES_FS && (p[1] & 0xfb) == ATOMX_STORES_REX_W && (p[2] == ATOMX_STORES_LOAD || p[2] == ATOMX_STORES_SAVE) &&
        (p[3] & 0xc7) == 0x04 && p[4] == 0x25 &&
        (p[5] == ATOMX_TRACE_CURSOR_OFFSET || p[5] == ATOMX_TRACE_SPILL_OFFSET) && !p[6] && !p[7] && !p[8]))
    return 0;
  *reg = ((p[1] & 4) << 1) | ((p[3] >> 3) & 7);
  *save = p[2] == ATOMX_STORES_SAVE;
  *spill = p[5] == ATOMX_TRACE_SPILL_OFFSET;
  return 9;
}

/* An advance (lea disp8(%r),%r: REX.W(R,B) 8D modrm(01 r r) disp8, %r not
 * %rsp or %r12): its length, its register in *reg and its displacement in
 * *disp; 0 for another instruction. */
static inline int atomx_stores_decode_advance(const uint8_t *p, int *reg, int *disp) {
  if (!((p[0] & 0xfa) == ATOMX_STORES_REX_W && p[1] == ATOMX_STORES_LEA && (p[2] & 0xc0) == ATOMX_STORES_MOD_DISP8 &&
        ((p[0] & 4) >> 2) == (p[0] & 1) && ((p[2] >> 3) & 7) == (p[2] & 7) && (p[2] & 7) != 4))
    return 0;
  *reg = ((p[0] & 1) << 3) | (p[2] & 7);
  *disp = (int8_t)p[3];
  return 4;
}

/* A measured library call's site number (from 1), which the recorder's
 * routine clears once it has written the call's length
 * (runtime/trace/library.c): at this offset from the thread pointer, the
 * third word of glibc's tcbhead_t.__glibc_unused2, after the cursor (0x80)
 * and the per-thread counters' owner (0x88, runtime/abi.h), which glibc
 * keeps and never uses either. */
#define ATOMX_STORES_LIBRARY_SLOT 0x90
/* movq $site,%fs:LIBRARY_SLOT: 64 48 C7 04 25 disp32 imm32.  Writes it to
 * out (ATOMX_STORES_LIBRARY_FORM bytes); its length. */
#define ATOMX_STORES_LIBRARY_FORM 13u
static inline unsigned atomx_stores_library_site(uint8_t *out, uint32_t site) {
  const uint8_t head[5] = {ATOMX_STORES_FS, ATOMX_STORES_REX_W, ATOMX_STORES_STORE16_32, 0x04, 0x25};
  for (int i = 0; i < 5; i++) out[i] = head[i];
  for (int i = 0; i < 4; i++) out[5 + i] = (uint8_t)((uint32_t)ATOMX_STORES_LIBRARY_SLOT >> (8 * i));
  for (int i = 0; i < 4; i++) out[9 + i] = (uint8_t)(site >> (8 * i));
  return ATOMX_STORES_LIBRARY_FORM;
}
/* Such a store: its length, the site in *site; 0 for another instruction. */
static inline int atomx_stores_decode_library_site(const uint8_t *p, uint32_t *site) {
  uint8_t form[ATOMX_STORES_LIBRARY_FORM];
  atomx_stores_library_site(form, 0);
  for (unsigned i = 0; i < 9; i++)
    if (p[i] != form[i]) return 0;
  *site = (uint32_t)p[9] | (uint32_t)p[10] << 8 | (uint32_t)p[11] << 16 | (uint32_t)p[12] << 24;
  return (int)ATOMX_STORES_LIBRARY_FORM;
}

#endif
