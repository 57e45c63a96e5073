/* The malloc tool's oracle: an LD_PRELOAD library, run with the ORIGINAL
 * program, that interposes every allocator function the tool knows and
 * counts the calls whose return address lies in the main executable's
 * executable segments: the calls the program's own code makes, which is
 * what the tool instruments.  Calls from shared libraries (libstdc++'s
 * operator new calling malloc, strdup, fopen ...) return into those
 * libraries and are not counted.
 *
 * At exit each process writes $MALLOC_SHIM_DIR/shim.PID, one line per
 * (function, size, return address) with its count:
 *     FUNCTION SIZE RETURN_ADDRESS COUNT
 * (sizes as the tool computes them: calloc nmemb*size, 0 for frees; return
 * addresses as original link-time addresses, i.e. minus the load base).
 * The real functions are glibc's __libc_* entry points or, for the C++
 * operators, the next definition (dlsym RTLD_NEXT), during which calls
 * from libstdc++ into malloc/free are not counted (it tail-calls free). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t), *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t), *__libc_valloc(size_t), *__libc_pvalloc(size_t);
extern void __libc_free(void *);

static uintptr_t base, lo[16], hi[16];
static int nseg;

static int first_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  base = info->dlpi_addr;  /* the first object is the main program */
  for (int k = 0; k < info->dlpi_phnum && nseg < 16; ++k) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
      lo[nseg] = base + ph->p_vaddr, hi[nseg++] = base + ph->p_vaddr + ph->p_memsz;
  }
  return 1;
}
__attribute__((constructor)) static void init(void) { dl_iterate_phdr(first_object, 0); }

#define SLOTS (1u << 18)
static struct { const char *fn; uint64_t size, ret, count; } table[SLOTS];
static int lock;
/* Inside a forwarded C++ operator: libstdc++'s operator delete ends in a
 * tail jump to free, whose return address is then the program's; not a
 * call of the program's. */
static __thread int inside;

static void note(const char *fn, uint64_t size, void *ra) {
  const uintptr_t r = (uintptr_t)ra;
  int mine = 0;
  if (inside) return;
  for (int k = 0; k < nseg; ++k) mine |= r >= lo[k] && r < hi[k];
  if (!mine) return;
  const uint64_t ret = r - base;
  uint64_t h = (ret * 0x9E3779B97F4A7C15ull) ^ (size * 0xC2B2AE3D27D4EB4Full) ^ (uintptr_t)fn;
  while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE)) {}
  for (uint32_t i = (uint32_t)(h >> 40) % SLOTS;; i = (i + 1) % SLOTS)
    if (!table[i].fn || (table[i].fn == fn && table[i].size == size && table[i].ret == ret)) {
      table[i].fn = fn, table[i].size = size, table[i].ret = ret, ++table[i].count;
      break;
    }
  __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void dump(void) {
  const char *dir = getenv("MALLOC_SHIM_DIR");
  if (!dir) return;
  char path[4096], line[512];
  snprintf(path, sizeof path, "%s/shim.%d", dir, (int)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  for (uint32_t i = 0; i < SLOTS; ++i)
    if (table[i].fn) {
      int n = snprintf(line, sizeof line, "%s %llu 0x%llx %llu\n", table[i].fn, (unsigned long long)table[i].size,
                       (unsigned long long)table[i].ret, (unsigned long long)table[i].count);
      if (write(fd, line, n) != n) break;
    }
  close(fd);
}

static uint64_t mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
#define RA __builtin_return_address(0)

void *malloc(size_t n) { note("malloc", n, RA); return __libc_malloc(n); }
void *calloc(size_t n, size_t s) { note("calloc", mul(n, s), RA); return __libc_calloc(n, s); }
void *realloc(void *p, size_t n) { note("realloc", n, RA); return __libc_realloc(p, n); }
void free(void *p) { note("free", 0, RA); __libc_free(p); }
void *memalign(size_t a, size_t n) { note("memalign", n, RA); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { note("aligned_alloc", n, RA); return __libc_memalign(a, n); }
void *valloc(size_t n) { note("valloc", n, RA); return __libc_valloc(n); }
void *pvalloc(size_t n) { note("pvalloc", n, RA); return __libc_pvalloc(n); }
void *reallocarray(void *p, size_t n, size_t s) {
  note("reallocarray", mul(n, s), RA);
  if (mul(n, s) == UINT64_MAX) { errno = ENOMEM; return 0; }
  return __libc_realloc(p, n * s);
}
int posix_memalign(void **out, size_t a, size_t n) {
  note("posix_memalign", n, RA);
  if (a % sizeof(void *) || (a & (a - 1)) || !a) return EINVAL;
  void *p = __libc_memalign(a, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

/* C++ operators: forwarded to libstdc++'s (new_handler, bad_alloc). */
#define NEXT(name) static void *real; if (!real) real = dlsym(RTLD_NEXT, name)
#define NEW1(sym) void *sym(size_t n) { NEXT(#sym); note(#sym, n, RA); inside++; void *r = ((void *(*)(size_t))real)(n); inside--; return r; }
#define NEW2(sym) void *sym(size_t n, size_t x) { NEXT(#sym); note(#sym, n, RA); inside++; void *r = ((void *(*)(size_t, size_t))real)(n, x); inside--; return r; }
#define NEW3(sym) void *sym(size_t n, size_t x, size_t y) { NEXT(#sym); note(#sym, n, RA); inside++; void *r = ((void *(*)(size_t, size_t, size_t))real)(n, x, y); inside--; return r; }
#define DEL1(sym) void sym(void *p) { NEXT(#sym); note(#sym, 0, RA); inside++; ((void (*)(void *))real)(p); inside--; }
#define DEL2(sym) void sym(void *p, size_t x) { NEXT(#sym); note(#sym, 0, RA); inside++; ((void (*)(void *, size_t))real)(p, x); inside--; }
#define DEL3(sym) void sym(void *p, size_t x, size_t y) { NEXT(#sym); note(#sym, 0, RA); inside++; ((void (*)(void *, size_t, size_t))real)(p, x, y); inside--; }
NEW1(_Znwm) NEW1(_Znam) NEW2(_ZnwmRKSt9nothrow_t) NEW2(_ZnamRKSt9nothrow_t)
NEW2(_ZnwmSt11align_val_t) NEW2(_ZnamSt11align_val_t)
NEW3(_ZnwmSt11align_val_tRKSt9nothrow_t) NEW3(_ZnamSt11align_val_tRKSt9nothrow_t)
DEL1(_ZdlPv) DEL1(_ZdaPv) DEL2(_ZdlPvm) DEL2(_ZdaPvm) DEL2(_ZdlPvSt11align_val_t) DEL2(_ZdaPvSt11align_val_t)
DEL3(_ZdlPvmSt11align_val_t) DEL3(_ZdaPvmSt11align_val_t) DEL2(_ZdlPvRKSt9nothrow_t) DEL2(_ZdaPvRKSt9nothrow_t)
DEL3(_ZdlPvSt11align_val_tRKSt9nothrow_t) DEL3(_ZdaPvSt11align_val_tRKSt9nothrow_t)
