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
 * and a last line with the blocks the counted calls allocated and the
 * counted calls did not free (a realloc moves its block; one that fails
 * leaves it; realloc(p, 0) frees it):
 *     #live BYTES BLOCKS
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

/* Counts a call and says whether it was the program's. */
static int note(const char *fn, uint64_t size, void *ra) {
  const uintptr_t r = (uintptr_t)ra;
  int mine = 0;
  if (inside) return 0;
  for (int k = 0; k < nseg; ++k) mine |= r >= lo[k] && r < hi[k];
  if (!mine) return 0;
  const uint64_t ret = r - base;
  uint64_t h = (ret * 0x9E3779B97F4A7C15ull) ^ (size * 0xC2B2AE3D27D4EB4Full) ^ (uintptr_t)fn;
  while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE)) {}
  for (uint32_t i = (uint32_t)(h >> 40) % SLOTS;; i = (i + 1) % SLOTS)
    if (!table[i].fn || (table[i].fn == fn && table[i].size == size && table[i].ret == ret)) {
      table[i].fn = fn, table[i].size = size, table[i].ret = ret, ++table[i].count;
      break;
    }
  __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
  return 1;
}

/* The live blocks: pointer -> size, open addressing (0 empty, 1 deleted). */
#define LIVE_SLOTS (1u << 21)
static uint64_t livePtr[LIVE_SLOTS], liveSize[LIVE_SLOTS], liveBytes, liveBlocks;
static uint32_t live_slot(uint64_t p, int insert) {
  uint32_t i = (uint32_t)((p * 0x9E3779B97F4A7C15ull) >> 43) % LIVE_SLOTS, free_at = LIVE_SLOTS;
  for (;; i = (i + 1) % LIVE_SLOTS) {
    if (livePtr[i] == p) return i;
    if (livePtr[i] == 1 && free_at == LIVE_SLOTS) free_at = i;
    if (livePtr[i] == 0) return insert ? (free_at != LIVE_SLOTS ? free_at : i) : LIVE_SLOTS;
  }
}
/* Takes a block out: its size, or -1 when it is not there. */
static int64_t live_take(void *ptr) {
  int64_t size = -1;
  if (!ptr) return size;
  while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE)) {}
  const uint32_t i = live_slot((uintptr_t)ptr, 0);
  if (i != LIVE_SLOTS) size = (int64_t)liveSize[i], liveBytes -= liveSize[i], liveBlocks--, livePtr[i] = 1;
  __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
  return size;
}
static void live_del(void *ptr) { (void)live_take(ptr); }
static void live_add(void *ptr, uint64_t size) {
  if (!ptr) return;
  while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE)) {}
  const uint32_t i = live_slot((uintptr_t)ptr, 1);
  if (livePtr[i] == (uintptr_t)ptr) liveBytes -= liveSize[i], liveBlocks--;  /* freed where we did not see it */
  livePtr[i] = (uintptr_t)ptr, liveSize[i] = size, liveBytes += size, liveBlocks++;
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
  int n = snprintf(line, sizeof line, "#live %llu %llu\n", (unsigned long long)liveBytes, (unsigned long long)liveBlocks);
  if (write(fd, line, n) != n) {}
  close(fd);
}

static uint64_t mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
#define RA __builtin_return_address(0)

/* An allocation of `n` bytes by the program's call `m` (note's answer). */
static void *made(int m, void *r, uint64_t n) {
  if (m) live_add(r, n);
  return r;
}
/* realloc, reallocarray: the old block leaves before another thread can
 * be given its address, and comes back if the call fails (n != 0). */
static void *moved(int m, void *p, uint64_t n, void *(*call)(void *, size_t)) {
  const int64_t old = m ? live_take(p) : -1;
  void *r = call(p, n);
  if (!r && n != 0 && old >= 0) live_add(p, (uint64_t)old);
  return made(m, r, n);
}

void *malloc(size_t n) { int m = note("malloc", n, RA); return made(m, __libc_malloc(n), n); }
void *calloc(size_t n, size_t s) { int m = note("calloc", mul(n, s), RA); return made(m, __libc_calloc(n, s), mul(n, s)); }
void *realloc(void *p, size_t n) { int m = note("realloc", n, RA); return moved(m, p, n, __libc_realloc); }
void free(void *p) { if (note("free", 0, RA)) live_del(p); __libc_free(p); }
void *memalign(size_t a, size_t n) { int m = note("memalign", n, RA); return made(m, __libc_memalign(a, n), n); }
void *aligned_alloc(size_t a, size_t n) { int m = note("aligned_alloc", n, RA); return made(m, __libc_memalign(a, n), n); }
void *valloc(size_t n) { int m = note("valloc", n, RA); return made(m, __libc_valloc(n), n); }
void *pvalloc(size_t n) { int m = note("pvalloc", n, RA); return made(m, __libc_pvalloc(n), n); }
void *reallocarray(void *p, size_t n, size_t s) {
  int m = note("reallocarray", mul(n, s), RA);
  if (mul(n, s) == UINT64_MAX) { errno = ENOMEM; return 0; }
  return moved(m, p, n * s, __libc_realloc);
}
int posix_memalign(void **out, size_t a, size_t n) {
  int m = note("posix_memalign", n, RA);
  if (a % sizeof(void *) || (a & (a - 1)) || !a) return EINVAL;
  void *p = __libc_memalign(a, n);
  if (!p) return ENOMEM;
  *out = made(m, p, n);
  return 0;
}

/* C++ operators: forwarded to libstdc++'s (new_handler, bad_alloc). */
#define NEXT(name) static void *real; if (!real) real = dlsym(RTLD_NEXT, name)
#define NEW1(sym) void *sym(size_t n) { NEXT(#sym); int m = note(#sym, n, RA); inside++; void *r = ((void *(*)(size_t))real)(n); inside--; return made(m, r, n); }
#define NEW2(sym) void *sym(size_t n, size_t x) { NEXT(#sym); int m = note(#sym, n, RA); inside++; void *r = ((void *(*)(size_t, size_t))real)(n, x); inside--; return made(m, r, n); }
#define NEW3(sym) void *sym(size_t n, size_t x, size_t y) { NEXT(#sym); int m = note(#sym, n, RA); inside++; void *r = ((void *(*)(size_t, size_t, size_t))real)(n, x, y); inside--; return made(m, r, n); }
#define DEL1(sym) void sym(void *p) { NEXT(#sym); if (note(#sym, 0, RA)) live_del(p); inside++; ((void (*)(void *))real)(p); inside--; }
#define DEL2(sym) void sym(void *p, size_t x) { NEXT(#sym); if (note(#sym, 0, RA)) live_del(p); inside++; ((void (*)(void *, size_t))real)(p, x); inside--; }
#define DEL3(sym) void sym(void *p, size_t x, size_t y) { NEXT(#sym); if (note(#sym, 0, RA)) live_del(p); inside++; ((void (*)(void *, size_t, size_t))real)(p, x, y); inside--; }
NEW1(_Znwm) NEW1(_Znam) NEW2(_ZnwmRKSt9nothrow_t) NEW2(_ZnamRKSt9nothrow_t)
NEW2(_ZnwmSt11align_val_t) NEW2(_ZnamSt11align_val_t)
NEW3(_ZnwmSt11align_val_tRKSt9nothrow_t) NEW3(_ZnamSt11align_val_tRKSt9nothrow_t)
DEL1(_ZdlPv) DEL1(_ZdaPv) DEL2(_ZdlPvm) DEL2(_ZdaPvm) DEL2(_ZdlPvSt11align_val_t) DEL2(_ZdaPvSt11align_val_t)
DEL3(_ZdlPvmSt11align_val_t) DEL3(_ZdaPvmSt11align_val_t) DEL2(_ZdlPvRKSt9nothrow_t) DEL2(_ZdaPvRKSt9nothrow_t)
DEL3(_ZdlPvSt11align_val_tRKSt9nothrow_t) DEL3(_ZdaPvSt11align_val_tRKSt9nothrow_t)
