/* Slot 0, the C half: runs before the program's own entry point (_start), on
 * its initial stack, after ld.so has loaded and initialised the program's
 * shared libraries but before __libc_start_main. */
#include <stddef.h>

#include "heap.h"
#include "link.h"
#include "stub.h"
#include "../sys.h"

_Static_assert(offsetof(AtomxDescriptor, xsaveSize) == STUB_DESC_XSAVE_SIZE, "enter.S");
_Static_assert(offsetof(AtomxFrame, returnAddress) == STUB_FRAME_RETURN_ADDRESS, "enter.S");
_Static_assert(offsetof(AtomxDescriptor, ready) == STUB_DESC_READY, "enter.S");
_Static_assert(offsetof(AtomxDescriptor, threadFlag) == STUB_DESC_THREAD_FLAG, "enter.S");
_Static_assert(offsetof(AtomxDescriptor, threadStart) == STUB_DESC_THREAD_START, "enter.S");
_Static_assert(sizeof(AtomxFrame) == kAtomxFrameAppStack, "abi.h");
_Static_assert(kAtomxBlobDescriptorDelta == STUB_BLOB_DESCRIPTOR_DELTA, "slots.S");

/* glibc's struct sigaction on x86-64 (not the kernel's). */
struct libc_sigaction {
  void (*action)(int, void *, void *);
  uint64_t mask[16];
  int flags;
  void (*restorer)(void);
};
#define STUB_SA_SIGINFO 0x4
#define STUB_SA_ONSTACK 0x08000000
#define STUB_SA_RESTART 0x10000000
#define STUB_SIG_DFL 0

typedef void *(*dlmopen_fn)(long lmid, const char *file, int mode);
typedef void *(*dlsym_fn)(void *handle, const char *name);
typedef char *(*dlerror_fn)(void);
typedef int (*cxa_atexit_fn)(void (*f)(void *), void *arg, void *dso);
typedef int (*sigaction_fn)(int sig, const struct libc_sigaction *act, struct libc_sigaction *old);

#define STUB_LM_ID_NEWLM (-1)
#define STUB_RTLD_NOW 2

static const char kCannotLoad[] = "cannot load the analysis routines: ";

/* CPUID(0xD,0).EBX: the XSAVE area size for the components enabled in XCR0. */
static uint64_t xsave_size(void) {
  uint32_t a, b, c, d;
  __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
  if (!(c & (1u << 27))) stub_fail("this processor or kernel does not support XSAVE (OSXSAVE)", 0, 0);
  __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0xd), "c"(0));
  return ((uint64_t)b + 63) & ~(uint64_t)63;
}

/* The analysis object exists only as bytes inside the program: put them in a
 * memfd and let the program's libc load it into a new link-map namespace, so
 * it gets its own libc (and malloc, stdio) and cannot disturb the program's. */
static void *load_analysis(AtomxDescriptor *d, const struct stub_libc *libc) {
  dlerror_fn dlerror = (dlerror_fn)libc->dlerror;
  long fd = sys_memfd_create("atomx-analysis", STUB_MFD_CLOEXEC);
  if (fd < 0) stub_fail(kCannotLoad, "memfd_create failed", 0);
  const char *p = (const char *)(d->analysisImage + d->bias);
  uint64_t left = d->analysisSize;
  while (left > 0) {
    long n = sys_write((int)fd, p, left);
    if (n == -STUB_EINTR) continue;
    if (n <= 0) stub_fail(kCannotLoad, "cannot write the analysis object to a memfd", 0);
    p += n, left -= (uint64_t)n;
  }
  char path[40], digits[24], *const end = path + sizeof path - 1;
  *stub_append(stub_append(path, end, "/proc/self/fd/"), end, stub_decimal(digits + sizeof digits, (uint64_t)fd)) = 0;
  void *handle = ((dlmopen_fn)libc->dlmopen)(STUB_LM_ID_NEWLM, path, STUB_RTLD_NOW);
  sys_close((int)fd);
  if (!handle) {
    const char *why = dlerror();
    stub_fail(kCannotLoad, why ? why : "dlmopen failed", 0);
  }
  return handle;
}

/* An optional symbol of the analysis object, or null; never a failed dlsym
 * (link.h: stub_object_defines). */
static void *optional_symbol(const struct stub_libc *libc, void *handle, const char *name) {
  return stub_object_defines(handle, name) ? ((dlsym_fn)libc->dlsym)(handle, name) : 0;
}

static void resolve_routines(AtomxDescriptor *d, const struct stub_libc *libc, void *handle) {
  dlsym_fn dlsym = (dlsym_fn)libc->dlsym;
  uint64_t *table = (uint64_t *)(d->routineTable + d->bias);
  const char *name = (const char *)(d->routineNames + d->bias);
  for (uint64_t i = 0; i < d->routineCount; i++) {
    void *a = dlsym(handle, name);
    if (!a) stub_fail(kCannotLoad, "the analysis object does not define ", name);
    table[i] = (uint64_t)a;
    name += stub_strlen(name) + 1;
  }
  d->finish = (uint64_t)optional_symbol(libc, handle, "atomx_analysis_finish");
  /* An analysis object that asks for the address map (the trace recorder,
   * to say where a signal interrupted a thread) gets it, in run-time terms. */
  AtomxCodeMap *map = (AtomxCodeMap *)optional_symbol(libc, handle, "atomx_analysis_code_map");
  if (map) {
    map->pairs = (const AtomxAddressPair *)(d->addressMap + d->bias);
    map->count = d->addressMapCount;
    map->base = d->mapBase + d->bias;
    map->linkBase = d->mapBase;
    map->newStart = d->newCodeStart + d->bias;
    map->newEnd = d->newCodeEnd + d->bias;
    map->regions = (const AtomxCursorRegion *)(d->cursorRegions + d->bias);
    map->regionCount = d->cursorRegionCount;
  }
  /* A replay of a deferred end: the process whose outputs these are. */
  uint64_t *endProcess = (uint64_t *)optional_symbol(libc, handle, "atomx_analysis_end_process");
  if (endProcess && d->replaying) endProcess[0] = d->endPid, endProcess[1] = d->endSuffixed;
  /* Its constructors have run: from now on its queries of the facts wait
   * for ProgramBefore's hand-over instead of being refused
   * (runtime/analysis/facts.c). */
  int *loaded = (int *)optional_symbol(libc, handle, "atomx_analysis_loaded");
  if (loaded) *loaded = 1;

  /* dlsym of a TLS symbol gives its address in the calling thread; minus the
   * thread pointer (%fs:0 holds the thread pointer itself) that is the
   * variable's offset, which initial-exec TLS keeps equal in every thread. */
  void *flag = dlsym(handle, "atomx_analysis_thread_ready");
  void *start = dlsym(handle, "atomx_analysis_thread_start");
  if (!flag || !start)
    stub_fail(kCannotLoad, "the analysis object was not linked with libatomx_analysis.a", 0);
  uint64_t threadPointer;
  __asm__("mov %%fs:0, %0" : "=r"(threadPointer));
  d->threadFlag = (int64_t)((uint64_t)flag - threadPointer);
  d->threadStart = (uint64_t)start;
  ((AtomxBody)start)(); /* the initial thread: its libc state is set up already */
}

/* Signals whose default action ends the process (SIGKILL and SIGSTOP cannot
 * be caught).  Real-time signals are left alone: programs use them for
 * their own purposes. */
static const unsigned char kFatalSignals[] = {
    1 /*HUP*/,  2 /*INT*/,     3 /*QUIT*/,  4 /*ILL*/,     5 /*TRAP*/,  6 /*ABRT*/, 7 /*BUS*/,
    8 /*FPE*/,  10 /*USR1*/,   11 /*SEGV*/, 12 /*USR2*/,   13 /*PIPE*/, 14 /*ALRM*/, 15 /*TERM*/,
    16 /*STKFLT*/, 24 /*XCPU*/, 25 /*XFSZ*/, 26 /*VTALRM*/, 27 /*PROF*/, 29 /*IO*/, 30 /*PWR*/,
    31 /*SYS*/,
};

/* A handler on every fatal signal still at SIG_DFL, so a program killed by a
 * signal still runs ProgramAfter (the handler then re-raises the signal with
 * SIG_DFL).  Installed with the program's libc so it gets libc's restorer.
 * Signals the program ignores stay ignored; a program that installs its own
 * handler replaces ours. */
static void install_fatal_signal_handlers(const struct stub_libc *libc) {
  sigaction_fn sigaction = (sigaction_fn)libc->sigaction;
  for (unsigned i = 0; i < sizeof kFatalSignals; i++) {
    struct libc_sigaction old, act;
    memset(&old, 0, sizeof old);
    if (sigaction(kFatalSignals[i], 0, &old) != 0 || (uint64_t)old.action != STUB_SIG_DFL) continue;
    memset(&act, 0, sizeof act);
    act.action = atomx_after_fatal_signal;
    memset(act.mask, 0xff, sizeof act.mask);
    act.flags = STUB_SA_SIGINFO | STUB_SA_ONSTACK | STUB_SA_RESTART;
    sigaction(kFatalSignals[i], &act, 0);
  }
}

/* The value of environment variable `name`, or null. */
static const char *initial_getenv(const uint64_t *initialStack, const char *name) {
  const unsigned long n = stub_strlen(name);
  for (const uint64_t *e = initialStack + 1 + initialStack[0] + 1; *e; e++) {
    const char *v = (const char *)*e;
    unsigned long k = 0;
    while (k < n && v[k] == name[k]) k++;
    if (k == n && v[n] == '=') return v + n + 1;
  }
  return 0;
}

uint64_t atomx_start(uint64_t *initialStack) {
  AtomxDescriptor *d = stub_descriptor();
  /* Nothing else can be trusted before this: not even the program name. */
  if (!stub_same_bytes(d->magic, ATOMX_DESCRIPTOR_MAGIC, 8)) {
    static const char msg[] = "atomx: the runtime's descriptor is damaged (bad magic)\n";
    sys_write(2, msg, sizeof msg - 1);
    sys_exit_group(127);
  }
  d->bias = (uint64_t)d - d->self;
  d->xsaveSize = xsave_size();
  d->initialPid = (uint32_t)sys_getpid();
  atomx_thread_counters(); /* the initial thread's own counters, if they are per thread */

  struct stub_libc libc;
  memset(&libc, 0, sizeof libc);
  const char *error = stub_find_libc(initialStack, &libc);
  if (error) stub_fail(kCannotLoad, error, libc.missing);

  /* Deferred end (abi.h): a process loads no analysis code and only writes
   * its counters at the end; a replay reads them back and runs the end. */
  const char *replay = d->deferredEnd ? initial_getenv(initialStack, ATOMX_END_REPLAY_ENV) : 0;
  if (d->deferredEnd && !replay) {
    atomx_end_start(d, initial_getenv(initialStack, ATOMX_END_DIR_ENV));
    __atomic_store_n(&d->ready, 1, __ATOMIC_RELEASE); /* exit hooks: program_after writes the dump */
    ((cxa_atexit_fn)libc.cxa_atexit)(atomx_after_at_exit, 0, 0);
    install_fatal_signal_handlers(&libc);
    return d->originalEntry + d->bias;
  }
  if (replay) atomx_end_read(d, replay);

  /* From here to the program's entry, ld.so allocates from private mappings
   * (heap.c).  For the heap tests' must-fail twins only:
   * ATOMX_TEST_SHARED_HEAP=1 keeps the old way (ld.so allocates on the
   * program's heap); ATOMX_TEST_HEAP_UNDER_VALGRIND=1 takes over ld.so's
   * malloc under Valgrind too. */
  struct stub_private_heap heap;
  heap.active = 0;
  if (!initial_getenv(initialStack, "ATOMX_TEST_SHARED_HEAP"))
    stub_private_heap_begin(&heap, &libc, initial_getenv(initialStack, "ATOMX_TEST_HEAP_UNDER_VALGRIND") != 0);
  if (d->analysisSize > 0) {
    void *handle = load_analysis(d, &libc);
    d->analysisHandle = (uint64_t)handle;
    resolve_routines(d, &libc, handle);
  } else if (d->routineCount > 0) {
    stub_fail(kCannotLoad, "there is no analysis object", 0);
  }
  __atomic_store_n(&d->ready, 1, __ATOMIC_RELEASE);

  atomx_counters_total(d); /* ProgramBefore sees what ran before it (IFUNC resolvers, .preinit_array) */
  const uint64_t *before = (const uint64_t *)(d->beforeBodies + d->bias);
  for (uint64_t i = 0; i < d->beforeCount; i++) ((AtomxBody)(before[i] + d->bias))();
  stub_private_heap_end(&heap);
  if (replay) { /* the end of the process whose dump this is; the program never runs */
    atomx_program_after();
    sys_exit_group(0);
  }

  /* Registered before __libc_start_main registers ld.so's fini function, so
   * exit() runs it last: after the program's atexit handlers, its static
   * destructors and _dl_fini (every .fini_array). */
  ((cxa_atexit_fn)libc.cxa_atexit)(atomx_after_at_exit, 0, 0);
  install_fatal_signal_handlers(&libc);

  return d->originalEntry + d->bias;
}
