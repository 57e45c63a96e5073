/* libc_shim.so: an LD_PRELOAD shim that logs what each call of libc's
 * memory and string functions made by the main program touches
 * (tests/trace/libc_oracle.py's oracle).  Each function is taken over,
 * calls the real one (dlsym RTLD_NEXT; calloc: glibc's __libc_calloc) and,
 * when the caller's return address lies in the main program's mapped
 * segments and LIBC_SHIM_LOG names a file, appends one line per call:
 *     TID NAME R ADDR LEN W ADDR LEN
 *     TID NAME R ADDR LEN R ADDR LEN W ADDR LEN    (the comparisons)
 * (ADDR hex, LEN decimal; `R - 0` / `W - 0` when nothing is read or
 * written).  The ranges follow the functions' documented behaviour,
 * measured here independently of atomx: a copy reads n bytes of its
 * source and writes n of its destination; memset, bzero write; strlen,
 * strnlen, stpcpy, strcpy read their string up to its NUL inclusive
 * (strnlen: at most max bytes), counted byte by byte before the call;
 * strncpy reads its source up to its NUL inclusive, at most n bytes, and
 * writes n; strcmp, strncmp, memcmp, bcmp and __memcmpeq read both
 * operands up to and including the first byte where they differ (or, for
 * strings, the NUL where they end together), at most n bytes, compared
 * byte by byte before the call; calloc writes its
 * block -- except that, as glibc does, a block of 128 KiB or more (its
 * default mmap threshold: fresh pages) is not cleared, the convention
 * atomx's model (include/atomx/libc_model.hpp) states too. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_calloc(size_t, size_t);

static int fd = -2;
static uintptr_t seg_lo[16], seg_hi[16];
static int nseg;

static int first_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  for (int k = 0; k < info->dlpi_phnum && nseg < 16; ++k)
    if (info->dlpi_phdr[k].p_type == PT_LOAD) {
      seg_lo[nseg] = info->dlpi_addr + info->dlpi_phdr[k].p_vaddr;
      seg_hi[nseg] = seg_lo[nseg] + info->dlpi_phdr[k].p_memsz;
      ++nseg;
    }
  return 1; /* the main program comes first */
}

static int from_program(const void *ret) {
  if (fd == -2) {
    const char *log = getenv("LIBC_SHIM_LOG");
    fd = log ? open(log, O_WRONLY | O_APPEND | O_CREAT, 0644) : -1;
    if (fd >= 0) dl_iterate_phdr(first_object, 0);
  }
  if (fd < 0) return 0;
  for (int k = 0; k < nseg; ++k)
    if ((uintptr_t)ret >= seg_lo[k] && (uintptr_t)ret < seg_hi[k]) return 1;
  return 0;
}

static char *put_hex(char *p, uint64_t v) {
  char d[16];
  int n = 0;
  do d[n++] = "0123456789abcdef"[v & 15], v >>= 4;
  while (v);
  while (n) *p++ = d[--n];
  return p;
}
static char *put_dec(char *p, uint64_t v) {
  char d[24];
  int n = 0;
  do d[n++] = (char)('0' + v % 10), v /= 10;
  while (v);
  while (n) *p++ = d[--n];
  return p;
}
static char *put_range(char *p, char kind, const void *addr, uint64_t len) {
  *p++ = ' ', *p++ = kind, *p++ = ' ';
  if (len) p = put_hex(p, (uintptr_t)addr);
  else *p++ = '-';
  *p++ = ' ';
  return put_dec(p, len);
}
static void logged2(const char *name, const void *r, uint64_t rn, const void *r2, uint64_t rn2, int two, const void *w,
                    uint64_t wn) {
  char line[200], *p = put_dec(line, (uint64_t)gettid());
  *p++ = ' ';
  for (const char *q = name; *q;) *p++ = *q++;
  p = put_range(p, 'R', r, rn);
  if (two) p = put_range(p, 'R', r2, rn2);
  p = put_range(p, 'W', w, wn);
  *p++ = '\n';
  if (write(fd, line, (size_t)(p - line)) < 0) abort();
}
static void logged(const char *name, const void *r, uint64_t rn, const void *w, uint64_t wn) {
  logged2(name, r, rn, 0, 0, 0, w, wn);
}
/* A comparison: both operands read, `n` bytes each. */
static void compared(const char *name, const void *a, const void *b, uint64_t n) { logged2(name, a, n, b, n, 1, 0, 0); }
/* Bytes of a and b compared up to and including the first that differs
 * (strings: or the NUL where both end), at most max. */
static uint64_t compare_bytes(const void *a, const void *b, uint64_t max, int strings) {
  const volatile unsigned char *p = a, *q = b;
  uint64_t n = 0;
  while (n < max) {
    const unsigned char x = p[n], y = q[n];
    ++n;
    if (x != y || (strings && x == 0)) break;
  }
  return n;
}
/* Bytes of s up to its NUL inclusive, at most max. */
static uint64_t string_bytes(const char *s, uint64_t max) {
  uint64_t n = 0;
  while (n < max)
    if (((const volatile char *)s)[n++] == 0) break;
  return n;
}

/* The real functions: found by the constructor (a signal handler's call
 * must not run dlsym), or at a call that comes before it. */
#define REALS 16
static void *reals[REALS];
static const char *const names[REALS] = {"memcpy", "mempcpy", "memmove", "memset", "bzero",  "bcopy",  "strlen",     "strnlen",
                                         "stpcpy", "strcpy",  "strncpy", "strcmp", "strncmp", "memcmp", "__memcmpeq", "bcmp"};
static void *real_of(int k) {
  if (!reals[k]) reals[k] = dlsym(RTLD_NEXT, names[k]);
  return reals[k];
}
__attribute__((constructor)) static void find_reals(void) {
  for (int k = 0; k < REALS; ++k) real_of(k);
  from_program(0); /* opens the log */
}
#define REAL(type, k, args) type(*real) args = (type(*) args)real_of(k);
#define CALLER __builtin_return_address(0)

void *memcpy(void *d, const void *s, size_t n) {
  REAL(void *, 0, (void *, const void *, size_t));
  if (from_program(CALLER)) logged("memcpy", s, n, d, n);
  return real(d, s, n);
}
void *mempcpy(void *d, const void *s, size_t n) {
  REAL(void *, 1, (void *, const void *, size_t));
  if (from_program(CALLER)) logged("mempcpy", s, n, d, n);
  return real(d, s, n);
}
void *memmove(void *d, const void *s, size_t n) {
  REAL(void *, 2, (void *, const void *, size_t));
  if (from_program(CALLER)) logged("memmove", s, n, d, n);
  return real(d, s, n);
}
void *memset(void *d, int c, size_t n) {
  REAL(void *, 3, (void *, int, size_t));
  if (from_program(CALLER)) logged("memset", 0, 0, d, n);
  return real(d, c, n);
}
void bzero(void *d, size_t n) {
  REAL(void, 4, (void *, size_t));
  if (from_program(CALLER)) logged("bzero", 0, 0, d, n);
  real(d, n);
}
void bcopy(const void *s, void *d, size_t n) {
  REAL(void, 5, (const void *, void *, size_t));
  if (from_program(CALLER)) logged("bcopy", s, n, d, n);
  real(s, d, n);
}
size_t strlen(const char *s) {
  REAL(size_t, 6, (const char *));
  if (from_program(CALLER)) logged("strlen", s, string_bytes(s, UINT64_MAX), 0, 0);
  return real(s);
}
size_t strnlen(const char *s, size_t max) {
  REAL(size_t, 7, (const char *, size_t));
  if (from_program(CALLER)) logged("strnlen", s, string_bytes(s, max), 0, 0);
  return real(s, max);
}
char *stpcpy(char *d, const char *s) {
  REAL(char *, 8, (char *, const char *));
  if (from_program(CALLER)) {
    const uint64_t n = string_bytes(s, UINT64_MAX);
    logged("stpcpy", s, n, d, n);
  }
  return real(d, s);
}
char *strcpy(char *d, const char *s) {
  REAL(char *, 9, (char *, const char *));
  if (from_program(CALLER)) {
    const uint64_t n = string_bytes(s, UINT64_MAX);
    logged("strcpy", s, n, d, n);
  }
  return real(d, s);
}
char *strncpy(char *d, const char *s, size_t n) {
  REAL(char *, 10, (char *, const char *, size_t));
  if (from_program(CALLER)) logged("strncpy", s, string_bytes(s, n), d, n);
  return real(d, s, n);
}
int strcmp(const char *a, const char *b) {
  REAL(int, 11, (const char *, const char *));
  if (from_program(CALLER)) compared("strcmp", a, b, compare_bytes(a, b, UINT64_MAX, 1));
  return real(a, b);
}
int strncmp(const char *a, const char *b, size_t n) {
  REAL(int, 12, (const char *, const char *, size_t));
  if (from_program(CALLER)) compared("strncmp", a, b, compare_bytes(a, b, n, 1));
  return real(a, b, n);
}
int memcmp(const void *a, const void *b, size_t n) {
  REAL(int, 13, (const void *, const void *, size_t));
  if (from_program(CALLER)) compared("memcmp", a, b, compare_bytes(a, b, n, 0));
  return real(a, b, n);
}
int __memcmpeq(const void *a, const void *b, size_t n) {
  REAL(int, 14, (const void *, const void *, size_t));
  if (from_program(CALLER)) compared("__memcmpeq", a, b, compare_bytes(a, b, n, 0));
  return real(a, b, n);
}
int bcmp(const void *a, const void *b, size_t n) {
  REAL(int, 15, (const void *, const void *, size_t));
  if (from_program(CALLER)) compared("bcmp", a, b, compare_bytes(a, b, n, 0));
  return real(a, b, n);
}
void *calloc(size_t n, size_t size) {
  const void *ret = CALLER;
  void *p = __libc_calloc(n, size);
  if (from_program(ret)) logged("calloc", 0, 0, p, p && n * size < 128 * 1024 ? n * size : 0);
  return p;
}
