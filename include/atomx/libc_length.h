/* atomx/libc_length.h: how many bytes a call of libc's string and
 * comparison functions touches, measured in the program's memory as the
 * call finds it (C and C++, header only).  The one definition of what these
 * functions read: <atomx/libc_model.hpp> (the model the online -T cachesim
 * and the trace's regenerator share) measures with it, and so does the
 * trace recorder (runtime/trace/library.c), which records the length at
 * the call for the regenerator (docs/trace.md, "Library references").
 *
 *   strlen(s)            s up to its NUL, inclusive
 *   strnlen(s, max)      the same, at most max bytes (0 when max is 0)
 *   strcpy(d, s), stpcpy s up to its NUL, inclusive (read, and written at d)
 *   strncpy(d, s, n)     s up to its NUL, inclusive, at most n bytes (read;
 *                        n bytes written at d, the rest NULs)
 *   strcmp(a, b)         each, up to and including the first byte that
 *                        differs or the first NUL of both: the bytes the
 *                        documented comparison looks at
 *   strncmp(a, b, n)     the same, at most n bytes
 *   memcmp(a, b, n), bcmp, __memcmpeq: each, up to and including the first
 *                        byte that differs, at most n bytes
 *
 * Everything here calls nothing and uses general registers only (analysis
 * routines that use it stay light).  The asm keeps the compiler from
 * turning a loop into a call of libc's own strlen. */
#ifndef ATOMX_LIBC_LENGTH_H
#define ATOMX_LIBC_LENGTH_H

#include <stdint.h>

/* How a call's length is measured (`how` below; 0: it is not). */
#define ATOMX_LIBC_STRLEN 1u  /* a0 up to its NUL */
#define ATOMX_LIBC_STRNLEN 2u /* a0 up to its NUL, at most a1 */
#define ATOMX_LIBC_STRCPY 3u  /* a1 up to its NUL */
#define ATOMX_LIBC_STRCMP 4u  /* a0 against a1 up to a difference or NUL */
#define ATOMX_LIBC_STRNCMP 5u /* the same, at most a2 */
#define ATOMX_LIBC_MEMCMP 6u  /* a0 against a1 up to a difference, at most a2 */
#define ATOMX_LIBC_STRNCPY 7u /* a1 up to its NUL, at most a2 */

/* Bytes up to and including the NUL at s, at most max. */
__attribute__((target("general-regs-only"))) static inline uint64_t atomx_libc_string_bytes(uint64_t s, uint64_t max) {
  const char *p = (const char *)(uintptr_t)s;
  uint64_t n = 0;
  while (n < max) {
    __asm__("" : "+r"(p));
    if (p[n++] == 0) break;
  }
  return n;
}

/* Bytes compared up to and including the first difference (or, for
 * strings, the first NUL), at most max. */
__attribute__((target("general-regs-only"))) static inline uint64_t atomx_libc_compared(uint64_t a, uint64_t b, uint64_t max,
                                                                                        int strings) {
  const unsigned char *p = (const unsigned char *)(uintptr_t)a;
  const unsigned char *q = (const unsigned char *)(uintptr_t)b;
  uint64_t n = 0;
  while (n < max) {
    __asm__("" : "+r"(p), "+r"(q));
    const unsigned char x = p[n], y = q[n];
    ++n;
    if (x != y || (strings && x == 0)) break;
  }
  return n;
}

/* The length of a call measured `how` with its first three integer
 * arguments (%rdi, %rsi, %rdx); 0 for any other `how`. */
__attribute__((target("general-regs-only"), optimize("no-jump-tables"))) static inline uint64_t atomx_libc_measure(unsigned how, uint64_t a0, uint64_t a1,
                                                                                       uint64_t a2) {
  if (how == ATOMX_LIBC_STRLEN) return atomx_libc_string_bytes(a0, UINT64_MAX);
  if (how == ATOMX_LIBC_STRNLEN) return a1 ? atomx_libc_string_bytes(a0, a1) : 0;
  if (how == ATOMX_LIBC_STRCPY) return atomx_libc_string_bytes(a1, UINT64_MAX);
  if (how == ATOMX_LIBC_STRNCPY) return a2 ? atomx_libc_string_bytes(a1, a2) : 0;
  if (how == ATOMX_LIBC_STRCMP) return atomx_libc_compared(a0, a1, UINT64_MAX, 1);
  if (how == ATOMX_LIBC_STRNCMP) return atomx_libc_compared(a0, a1, a2, 1);
  if (how == ATOMX_LIBC_MEMCMP) return atomx_libc_compared(a0, a1, a2, 0);
  return 0;
}

#endif
