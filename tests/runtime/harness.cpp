// A stand-in for an instrumented program, to test the runtime blob and
// libatomx_analysis.a without atomx.
//
// The ELF entry point is harness_entry (harness_asm.S), which calls
// harness_setup() below before libc is started -- the way atomx makes a
// program's entry point slot 0 of the blob.  harness_setup copies the blob
// (atomx::runtime::kBlob) into read+execute memory, builds an
// AtomxDescriptor with a pretend link-time/run-time bias, points it at an
// analysis object built by the tests (ATOMX_TEST_ANALYSIS), and returns slot
// 0.  Slot 0 must then load the analysis object, fill the routine table, run
// the ProgramBefore bodies below and enter harness_original_entry -> _start
// -> main with the initial %rsp and %rdx.
//
// Everything that happens is appended to ATOMX_TEST_DIR/log, one line
// "<pid> <event>", by the harness and by the analysis routines
// (analysis_routines.c); run_runtime_test.py checks the order.  ATOMX_TEST_MODE
// picks the scenario (see main).  Failures print "FAIL ..." to the log and
// stderr and exit 99.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cpuid.h>
#include <elf.h>
#include <link.h>

#include <cstdint>
#include <initializer_list>

#include "runtime/RuntimeBlob.h"
#include "runtime/abi.h"

extern "C" {
// harness_asm.S
void harness_original_entry(void);
void harness_enter_test(uint64_t shift);
extern uint64_t harness_entry_rsp, harness_entry_rdx;
extern uint8_t et_in_ymm[16][32], et_out_ymm[16][32];
extern uint64_t et_in_gpr[15], et_out_gpr[15];
extern uint8_t et_in_redzone[128], et_out_redzone[128];
extern uint8_t et_out_st0[16];
extern uint64_t et_in_flags, et_flags_set, et_out_flags, et_rsp_before, et_rsp_after, et_enter;
extern uint64_t et_body_rsp, et_body_rdi, et_body_rbx, et_body_flags;
extern uint32_t et_in_mxcsr, et_out_mxcsr;
extern uint16_t et_in_fcw, et_out_fcw;

uint64_t harness_setup(uint64_t *initialStack, uint64_t rdx);
void harness_enter_body_check(AtomxFrame *frame);
void before_one(void);
void before_two(void);
void after_one(void);
void after_two(void);
}

namespace {

// A pretend link-time -> run-time bias: every address in the descriptor is
// written as (run-time address - kBias), the way atomx writes link-time
// addresses of a PIE that the kernel then loads elsewhere.
constexpr uint64_t kBias = 0x7000000;

// The routines the harness asks for, in routine-table order.
enum Routine { kSetup, kCount, kReport, kOutputPath, kLogEvent, kRoutineCount };
const char kRoutineNames[] = "Setup\0Count\0Report\0OutputPath\0LogEvent\0NoSuchRoutine";

uint64_t gInitialStack, gInitialRdx;
char *gBlob;
AtomxDescriptor *gDesc;
uint64_t gRoutineTable[kRoutineCount + 1];
uint64_t gBeforeBodies[2], gAfterBodies[2];
AtomxAddressPair gMap[4] = {{0x10000, 0x1000}, {0x10010, 0x1200}, {0x10100, 0x1300}, {0x18000, 0x2000}};
constexpr uint64_t kMapBase = 0x400000;
int gLogFd = -1;
char gDir[512];
char gMode[64];
int gBeforeSawEntry = -1;

uint64_t link_time(const void *p) { return (uint64_t)p - kBias; }

// The initial stack's environment, read directly: harness_setup runs before
// __libc_start_main has set up environ.
const char *initial_env(uint64_t *sp, const char *name) {
  char **envp = (char **)(sp + 1 + sp[0] + 1);
  size_t n = strlen(name);
  for (; *envp; envp++)
    if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=') return *envp + n + 1;
  return nullptr;
}

void log_event(const char *fmt, ...) {
  char line[600];
  int n = snprintf(line, sizeof line, "%d ", (int)getpid());
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(line + n, sizeof line - n, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 2) n = sizeof line - 2;
  line[n++] = '\n';
  if (write(gLogFd, line, n) != n) _exit(98);
}

[[noreturn]] void fail(const char *fmt, ...) {
  char msg[500];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (gLogFd >= 0) log_event("FAIL %s", msg);
  dprintf(2, "harness: FAIL %s\n", msg);
  _exit(99);
}

bool mode(const char *m) { return strcmp(gMode, m) == 0; }

template <typename F>
F routine(Routine r) {
  return (F)gRoutineTable[r];
}

void *slot(int offset) { return gBlob + offset; }
void program_after() { ((void (*)(void))slot(kAtomxSlotProgramAfter))(); }

// Reads a whole file into fresh memory (no malloc: libc is not started yet).
void *read_file(const char *path, uint64_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) fail("cannot open %s", path);
  void *p = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) fail("cannot map %s", path);
  close(fd);
  *size = st.st_size;
  return p;
}

// Mode no-dt-debug: hide the program's DT_DEBUG so the runtime must find
// r_debug through ld.so's _r_debug.
void hide_dt_debug() {
  ElfW(Phdr) *phdr = (ElfW(Phdr) *)getauxval(AT_PHDR);
  size_t phnum = getauxval(AT_PHNUM);
  uint64_t bias = 0;
  for (size_t i = 0; i < phnum; i++)
    if (phdr[i].p_type == PT_PHDR) bias = (uint64_t)phdr - phdr[i].p_vaddr;
  for (size_t i = 0; i < phnum; i++) {
    if (phdr[i].p_type != PT_DYNAMIC) continue;
    for (ElfW(Dyn) *d = (ElfW(Dyn) *)(phdr[i].p_vaddr + bias); d->d_tag != DT_NULL; d++) {
      if (d->d_tag != DT_DEBUG) continue;
      uintptr_t page = (uintptr_t)d & ~(uintptr_t)4095;
      if (mprotect((void *)page, 8192, PROT_READ | PROT_WRITE) != 0) fail("mprotect .dynamic");
      d->d_tag = 0x6ffffd00;  // an unknown tag: ignored by everyone
      return;
    }
  }
  fail("the harness has no DT_DEBUG to hide");
}

}  // namespace

// ---- before main: build what atomx would put in the program -----------------

uint64_t harness_setup(uint64_t *initialStack, uint64_t rdx) {
  gInitialStack = (uint64_t)initialStack;
  gInitialRdx = rdx;
  const char *dir = initial_env(initialStack, "ATOMX_TEST_DIR");
  const char *analysis = initial_env(initialStack, "ATOMX_TEST_ANALYSIS");
  const char *m = initial_env(initialStack, "ATOMX_TEST_MODE");
  if (!dir || !analysis || !m) {
    static const char msg[] = "harness: set ATOMX_TEST_DIR, ATOMX_TEST_ANALYSIS and ATOMX_TEST_MODE\n";
    write(2, msg, sizeof msg - 1);
    _exit(2);
  }
  snprintf(gDir, sizeof gDir, "%s", dir);
  snprintf(gMode, sizeof gMode, "%s", m);
  char path[600];
  snprintf(path, sizeof path, "%s/log", gDir);
  gLogFd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (gLogFd < 0) _exit(2);
  log_event("setup");

  // The blob, read+execute, at an address of the kernel's choosing.
  size_t blobPages = (atomx::runtime::kBlobSize + 4095) & ~(size_t)4095;
  gBlob = (char *)mmap(nullptr, blobPages, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (gBlob == MAP_FAILED) fail("mmap blob");
  memcpy(gBlob, atomx::runtime::kBlob, atomx::runtime::kBlobSize);

  // The descriptor, in writable memory of its own.
  gDesc = (AtomxDescriptor *)mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (gDesc == MAP_FAILED) fail("mmap descriptor");
  AtomxDescriptor *d = gDesc;
  memcpy(d->magic, ATOMX_DESCRIPTOR_MAGIC, 8);
  d->self = link_time(d);
  d->originalEntry = link_time((void *)harness_original_entry);
  if (mode("bad-analysis")) {
    static const char garbage[] = "this is not an ELF file, just bytes";
    d->analysisImage = link_time(garbage);
    d->analysisSize = sizeof garbage;
  } else {
    d->analysisImage = link_time(read_file(analysis, &d->analysisSize));
  }
  d->routineNames = link_time(kRoutineNames);
  d->routineCount = mode("missing-routine") ? kRoutineCount + 1 : kRoutineCount;
  d->routineTable = link_time(gRoutineTable);
  gBeforeBodies[0] = link_time((void *)before_one);
  gBeforeBodies[1] = link_time((void *)before_two);
  d->beforeBodies = link_time(gBeforeBodies);
  d->beforeCount = 2;
  gAfterBodies[0] = link_time((void *)after_one);
  gAfterBodies[1] = link_time((void *)after_two);
  d->afterBodies = link_time(gAfterBodies);
  d->afterCount = 2;
  d->addressMap = link_time(gMap);
  d->addressMapCount = 4;
  d->mapBase = kMapBase;
  d->newCodeStart = kMapBase + 0x10000;
  d->newCodeEnd = kMapBase + 0x20000;
  d->programName = link_time("harness");

  // What atomx patches into the blob: descriptor - blob.
  int64_t delta = (int64_t)((char *)d - gBlob);
  memcpy(gBlob + kAtomxBlobDescriptorDelta, &delta, 8);
  if (mprotect(gBlob, blobPages, PROT_READ | PROT_EXEC) != 0) fail("mprotect blob");

  if (mode("no-dt-debug")) hide_dt_debug();
  return (uint64_t)slot(kAtomxSlotEntry);
}

// ---- ProgramBefore / ProgramAfter bodies (atomx generates these) -----------------

void before_one(void) {
  // Runs from slot 0: before the program's entry point and constructors.
  gBeforeSawEntry = harness_entry_rsp != 0;
  log_event("before-1 entered=%d", gBeforeSawEntry);
  for (int i = 0; i < kRoutineCount; i++)
    if (gRoutineTable[i] == 0) fail("routine %d not filled before ProgramBefore", i);
  routine<void (*)(const char *)>(kSetup)(gDir);
}

void before_two(void) {
  log_event("before-2");
  routine<void (*)(const char *)>(kLogEvent)("from-before-2");
}

void after_one(void) {
  log_event("after-1");
  if (mode("threads")) {
    struct timespec t = {0, 300 * 1000 * 1000};  // the main thread's call must wait
    nanosleep(&t, nullptr);
  }
  routine<void (*)(void)>(kReport)();
}

void after_two(void) { log_event("after-2"); }

// ---- the program's own start-up and exit ----------------------------------------

namespace {

struct AppGlobal {
  AppGlobal() { log_event("app-ctor"); }
  ~AppGlobal() { log_event("app-static-dtor"); }
} gAppGlobal;

__attribute__((destructor)) void app_fini_array() { log_event("app-fini-array"); }

void app_atexit() { log_event("app-atexit"); }

void check(bool ok, const char *what) {
  if (!ok) fail("%s", what);
}

// What slot 0 left behind, in every mode.
void check_startup() {
  check(harness_entry_rsp == gInitialStack, "original entry got a different %rsp");
  check(harness_entry_rdx == gInitialRdx, "original entry got a different %rdx");
  check(gBeforeSawEntry == 0, "ProgramBefore ran after the original entry");
  const AtomxDescriptor *d = gDesc;
  check(d->bias == kBias, "descriptor bias");
  unsigned a, b, c, dx;
  __cpuid_count(0xd, 0, a, b, c, dx);
  check(d->xsaveSize == ((b + 63u) & ~63u), "descriptor xsaveSize");
  check(d->initialPid == (uint32_t)getpid(), "descriptor initialPid");
  check(d->analysisHandle != 0, "descriptor analysisHandle");
  check(d->finish != 0, "descriptor finish (atomx_analysis_finish not found)");
  check(d->programAfterDone == 0, "programAfterDone set at start");

  // Each table entry is the routine of that name in the analysis object.
  const char *name = kRoutineNames;
  for (int i = 0; i < kRoutineCount; i++, name += strlen(name) + 1) {
    Dl_info info;
    if (!dladdr((void *)gRoutineTable[i], &info) || !info.dli_sname || strcmp(info.dli_sname, name) != 0)
      fail("routine table entry %d is not %s", i, name);
  }
  Dl_info info;
  if (!dladdr((void *)d->finish, &info) || !info.dli_sname || strcmp(info.dli_sname, "atomx_analysis_finish"))
    fail("finish is not atomx_analysis_finish");

  // Fatal signals at SIG_DFL got the runtime's handler; others are as they were.
  struct sigaction sa;
  for (int sig : {SIGHUP, SIGINT, SIGSEGV, SIGTERM, SIGABRT, SIGBUS, SIGFPE, SIGPIPE}) {
    sigaction(sig, nullptr, &sa);
    char *h = (char *)sa.sa_sigaction;
    if (!(sa.sa_flags & SA_SIGINFO) || h < gBlob || h >= gBlob + atomx::runtime::kBlobSize)
      fail("signal %d has no runtime handler", sig);
  }
  sigaction(SIGUSR2, nullptr, &sa);
  check(sa.sa_handler == SIG_IGN, "SIGUSR2 was ignored by the test driver and must stay ignored");
  sigaction(SIGCHLD, nullptr, &sa);
  check(sa.sa_handler == SIG_DFL, "SIGCHLD must stay SIG_DFL");
  log_event("startup-ok");
}

void check_blob_file() {
  const char *bin = getenv("ATOMX_TEST_BLOB_BIN");
  if (!bin) return;
  uint64_t size;
  void *p = read_file(bin, &size);
  check(size == atomx::runtime::kBlobSize && memcmp(p, atomx::runtime::kBlob, size) == 0,
        "kBlob differs from the blob file");
  log_event("blob-file-ok");
}

void check_original_address() {
  auto original = (uint64_t(*)(uint64_t))slot(kAtomxSlotOriginalAddress);
  struct {
    uint64_t linkTime, expected;
  } cases[] = {
      {0x410000, 0x401000}, {0x41000f, 0x40100f}, {0x410010, 0x401200}, {0x4100ff, 0x4012ef},
      {0x410100, 0x401300}, {0x417fff, 0x401300 + 0x7eff}, {0x418000, 0x402000},
      {0x41ffff, 0x402000 + 0x7fff}, {0x420000, 0x420000}, {0x40ffff, 0x40ffff}, {0x1234, 0x1234},
  };
  for (auto &c : cases) {
    uint64_t got = original(c.linkTime + kBias);
    if (got != c.expected)
      fail("original_address(%#lx + bias) = %#lx, expected %#lx", (unsigned long)c.linkTime,
           (unsigned long)got, (unsigned long)c.expected);
  }
  log_event("original-address-ok");
}

// ---- the enter test ----

int gBodyCalls;

void check_enter_results() {
  check(gBodyCalls == 1, "the body was not called exactly once");
  check((et_flags_set & 0x400) != 0, "the test did not manage to set DF");
  for (int i = 0; i < 15; i++)
    if (et_out_gpr[i] != et_in_gpr[i]) fail("enter changed general register %d", i);
  check(et_rsp_after == et_rsp_before, "enter changed %rsp");
  check(et_out_flags == et_flags_set, "enter changed the flags");
  check(memcmp(et_out_redzone, et_in_redzone, 128) == 0, "enter changed the red zone");
  for (int i = 0; i < 16; i++)
    if (memcmp(et_out_ymm[i], et_in_ymm[i], 32) != 0) fail("enter changed ymm%d", i);
  check(et_out_mxcsr == et_in_mxcsr, "enter changed MXCSR");
  check(et_out_fcw == et_in_fcw, "enter changed the x87 control word");
  uint8_t pi[16] = {};
  __asm__ volatile("fldpi; fstpt %0" : "=m"(pi));
  check(memcmp(et_out_st0, pi, 10) == 0, "enter changed the x87 stack");
}

void run_enter_test() {
  for (int i = 0; i < 15; i++) et_in_gpr[i] = 0x1111111111111111ull * (i + 1) ^ 0x0123456789abcdefull;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 32; j++) et_in_ymm[i][j] = (uint8_t)(i * 32 + j + 1);
  for (int i = 0; i < 128; i++) et_in_redzone[i] = (uint8_t)(0xa0 ^ i);
  // CF PF AF ZF SF DF OF and ID; the reserved bit 1 is always set.
  et_in_flags = 0x200000 | 0x800 | 0x400 | 0x80 | 0x40 | 0x10 | 0x4 | 0x1 | 0x2;
  et_in_mxcsr = 0x1f80 | 0x6000 | 0x8000 | 0x40;  // round to zero, FTZ, DAZ
  et_in_fcw = 0x0f7f;                             // round to zero
  et_enter = (uint64_t)slot(kAtomxSlotEnter);

  // Every 8-byte alignment of the application's %rsp modulo 64.
  for (uint64_t shift = 0; shift < 64; shift += 8) {
    gBodyCalls = 0;
    harness_enter_test(shift);
    check_enter_results();
  }
  log_event("enter-ok");
}

}  // namespace

// Called by harness_enter_body with the frame enter built.
void harness_enter_body_check(AtomxFrame *f) {
  gBodyCalls++;
  uint64_t appRsp = et_rsp_before;
  check((uint64_t)f == et_body_rdi && (uint64_t)f == et_body_rbx, "body: %rdi and %rbx must be the frame");
  check((uint64_t)f + kAtomxFrameAppStack == appRsp, "body: frame + kAtomxFrameAppStack is not the app's %rsp");
  const uint64_t *g = et_in_gpr;  // rax rbx rcx rdx rsi rdi rbp r8..r15
  uint64_t inFrame[15] = {f->rax, f->rbx, f->rcx, f->rdx, f->rsi, f->rdi, f->rbp, f->r8,
                          f->r9,  f->r10, f->r11, f->r12, f->r13, f->r14, f->r15};
  for (int i = 0; i < 15; i++)
    if (inFrame[i] != g[i]) fail("body: frame register %d is wrong", i);
  check(f->rflags == et_flags_set, "body: frame rflags is wrong");
  check(memcmp(f->redZone, et_in_redzone, 128) == 0, "body: frame red zone is wrong");
  const uint8_t *ret = (const uint8_t *)f->returnAddress;
  check(ret[0] == 0x0f && ret[1] == 0x1f && ret[2] == 0x80, "body: return address is not the nop");
  check(((et_body_rsp + 8) & 63) == 0, "body: %rsp not 64-byte aligned at the call");
  check((et_body_flags & 0x400) == 0, "body: DF set");
  uint64_t area = (uint64_t)f - (et_body_rsp + 8);
  check(area >= gDesc->xsaveSize && area < gDesc->xsaveSize + 64, "body: XSAVE area size");
}

// ---- the scenarios ----------------------------------------------------------------

namespace {

void *thread_calls_program_after(void *) {
  program_after();
  log_event("thread-returned");
  return nullptr;
}

void app_usr1_handler(int) { log_event("app-handler"); }

}  // namespace

int main(int argc, char **argv) {
  check_startup();
  atexit(app_atexit);
  log_event("main %s", gMode);
  auto count = routine<void (*)(long)>(kCount);
  auto outputPath = routine<const char *(*)(const char *)>(kOutputPath);
  count(1);
  printf("app stdout\n");

  if (mode("normal") || mode("no-dt-debug")) {
    check_blob_file();
    check(strcmp(outputPath("out"), "out") == 0, "AtomxOutputPath in the first process");
    return 0;
  }
  if (mode("original-address")) {
    check_original_address();
    return 0;
  }
  if (mode("enter")) {
    run_enter_test();
    return 0;
  }
  if (mode("explicit")) {
    // What atomx inserts before the program's own _exit: ProgramAfter now.
    program_after();
    program_after();
    log_event("main-after-returned");
    exit(3);
  }
  if (mode("fork")) {
    pid_t child = fork();
    if (child < 0) fail("fork");
    if (child == 0) {
      count(10);
      log_event("child-output-path %s", outputPath("out"));
      return 0;  // the child's exit runs its own ProgramAfter
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      fail("child failed: status %#x", status);
    log_event("parent-output-path %s", outputPath("out"));
    return 0;
  }
  if (mode("vfork")) {
    // What atomx inserts before _exit, in a vfork child: must do nothing (the
    // child runs in the parent's memory).
    if (syscall(SYS_kcmp, getpid(), getpid(), 1 /* KCMP_VM */, 0, 0) != 0) {
      log_event("vfork-skip no kcmp");
      return 0;
    }
    pid_t child = vfork();
    if (child == 0) {
      program_after();
      _exit(0);
    }
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child || status != 0) fail("vfork child failed");
    log_event("vfork-child-done");
    return 0;
  }
  if (mode("segv")) {
    log_event("crashing");
    volatile int *volatile nowhere = nullptr;
    *nowhere = 1;
    fail("still alive after SIGSEGV");
  }
  if (mode("term")) {
    log_event("crashing");
    kill(getpid(), SIGTERM);
    fail("still alive after SIGTERM");
  }
  if (mode("abort")) {
    log_event("crashing");
    abort();
  }
  if (mode("own-handler")) {
    signal(SIGUSR1, app_usr1_handler);  // replaces the runtime's handler
    raise(SIGUSR1);
    return 0;
  }
  if (mode("threads")) {
    pthread_t t;
    pthread_create(&t, nullptr, thread_calls_program_after, nullptr);
    struct timespec wait = {0, 100 * 1000 * 1000};
    nanosleep(&wait, nullptr);  // the thread is now inside after_one
    program_after();            // must wait until the thread is done
    log_event("main-returned");
    pthread_join(t, nullptr);
    return 0;
  }
  fail("unknown mode %s", gMode);
}
