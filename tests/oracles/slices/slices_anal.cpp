// The slices oracle, run-time side (slices_inst.cpp says what calls it
// gets).  Each thread keeps a stack of shadow frames, one per active
// procedure, each a register file (x86/EmulatorCore.h) that holds only
// what the analysis says the regenerator would know: values recorded at
// entry and after instructions, and values the emulator computed from
// them.  Before every memory instruction, each operand's real effective
// address is compared with the one computed from the frame's registers
// (static operands: the file's address plus the load bias; %fs/%gs: the
// thread's base, read once); any difference is a mismatch.
//
// Frames follow the real stack: a procedure's entry opens one keyed by
// %rsp there; every call first drops the frames whose entry %rsp is below
// the current %rsp (callees that returned, threw, or were left by longjmp;
// a signal handler's, once the interrupted code runs again).  Another
// block where the state is lost (a landing pad, a .cold part's entry, a
// block entered from another procedure, one after setjmp) continues the
// frame on top.  A call that finds the top frame belonging to another
// procedure counts as "lost": a failure of the check, like a mismatch.
//
// The calls made at run time use general registers only (the script builds
// this file with -mgeneral-regs-only; no libc on their paths: memory from
// the kernel, <atomx/light.hpp>), so atomx calls them without saving the
// vector state; mismatches are kept raw and formatted at the end.
#include <asm/prctl.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <atomx/analysis.h>
#include <atomx/light.hpp>

// Hidden: a default-visibility inline function not inlined would be
// called through the PLT, which makes the caller heavy.
#pragma GCC visibility push(hidden)
#include "x86/EmulatorCore.h"
#pragma GCC visibility pop

namespace {

using atomx::x86::EmuKind;
using atomx::x86::EmuOp;
using atomx::x86::RegisterFile;

constexpr long kSiteHeader = 4, kOperandLongs = 8, kSiteLongs = kSiteHeader + 4 * kOperandLongs;
constexpr size_t kMaxFrames = size_t(1) << 18;
constexpr int kShown = 10;  // mismatches printed per process

struct Frame {
  long proc;
  uint64_t entryRsp;
  RegisterFile regs;
};

struct Thread {
  Thread* next;
  uint64_t segBase[3];  // none, fs, gs
  uint64_t checked[3];  // operands compared, by class (recorded ones: counted, not compared)
  uint64_t mismatches, lost, emulated, recordings, overflow;
  size_t depth;
  Frame frames[kMaxFrames];
};

std::atomic<Thread*> threads{nullptr};
__attribute__((tls_model("initial-exec"))) thread_local Thread* self;

std::string reportPath;
const long* sites = nullptr;
long nsites = 0, nprocs = 0;
std::vector<const char*> strings;  // procedure names, then instruction texts
int breakMode = 0;  // the must-fail twins: 1 every emulated add one too high, 2 every slot reload 8 too high
bool ready = false;
uint64_t bias = 0;
// The first mismatches and lost frames, raw (formatted by SlReport).
struct Note {
  long site;       // a mismatch's check site; -1: a lost frame
  long operand;    // a lost frame: the procedure
  uint64_t real;   // a lost frame: %rsp
  uint64_t computed;  // a lost frame: the procedure whose frame was on top (-1: none)
};
std::atomic<int> shown{0};
Note notes[kShown];

uint64_t segmentBase(long code) {
  uint64_t v = 0;
  long r;
  asm volatile("syscall" : "=a"(r) : "0"(long(SYS_arch_prctl)), "D"(code), "S"(&v) : "rcx", "r11", "memory");
  return v;
}

Thread* me() {
  if (self) return self;
  Thread* t = static_cast<Thread*>(atomx::kernelMemory(sizeof(Thread)));
  if (!t) __builtin_trap();
  t->segBase[1] = segmentBase(ARCH_GET_FS);
  t->segBase[2] = segmentBase(ARCH_GET_GS);
  t->next = threads.load(std::memory_order_relaxed);
  while (!threads.compare_exchange_weak(t->next, t, std::memory_order_release, std::memory_order_relaxed)) {
  }
  return self = t;
}

Frame* push(Thread* t, long proc, uint64_t rsp) {
  if (t->depth == kMaxFrames) {
    ++t->overflow;
    t->depth = kMaxFrames / 2;  // keep going; the check fails on overflow
  }
  Frame* f = &t->frames[t->depth++];
  for (unsigned r = 0; r < 16; ++r) f->regs.gpr[r] = 0;
  f->proc = proc;
  f->entryRsp = rsp;
  f->regs.loadBias = bias;
  return f;
}

void note(long site, long operand, uint64_t real, uint64_t computed) {
  const int k = shown.fetch_add(1);
  if (k < kShown) notes[k] = {site, operand, real, computed};
}

// The frame of `proc` that a call at `rsp` runs in.
Frame* frameOf(Thread* t, long proc, uint64_t rsp) {
  while (t->depth && t->frames[t->depth - 1].entryRsp < rsp) --t->depth;
  if (t->depth && t->frames[t->depth - 1].proc == proc) return &t->frames[t->depth - 1];
  ++t->lost;
  note(-1, proc, rsp, t->depth ? uint64_t(t->frames[t->depth - 1].proc) : ~uint64_t(0));
  return push(t, proc, rsp);
}

}  // namespace

extern "C" {

void SlInit(char* report, long* table, char* texts, long procs, long count, long breakIt) {
  reportPath = report;
  sites = table;
  nprocs = procs;
  nsites = count;
  breakMode = int(breakIt);
  bias = AtomxLoadBias();
  // The NUL-separated strings: procedure names and instruction texts.
  for (const char* s = texts; *s; s += std::strlen(s) + 1) strings.push_back(s);
  ready = true;
}

// kind (word & 3): 0 after an instruction, 1 a procedure's entry (a new
// frame), 2 another entry site (the frame on top continues).
void SlRecord(long word, long mask, long rsp, long r0, long r1, long r2, long r3, long r4, long r5, long r6, long r7,
              long r8, long r9, long r10, long r11, long r12) {
  Thread* t = me();  // (also before SlInit: _start's entry runs before ProgramBefore)
  const long proc = word >> 2, kind = word & 3;
  Frame* f;
  if (kind == 1) {
    while (t->depth && t->frames[t->depth - 1].entryRsp <= uint64_t(rsp)) --t->depth;
    f = push(t, proc, uint64_t(rsp));
  } else if (kind == 2) {
    while (t->depth && t->frames[t->depth - 1].entryRsp < uint64_t(rsp)) --t->depth;
    f = t->depth ? &t->frames[t->depth - 1] : push(t, proc, uint64_t(rsp));
    f->proc = proc;
  } else {
    f = frameOf(t, proc, uint64_t(rsp));
  }
  const long values[13] = {r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12};
  int k = 0;
  for (int r = 0; r < 16; ++r)
    if (mask & (1L << r)) f->regs.gpr[r] = uint64_t(values[k++]);
  ++t->recordings;
}

void SlEmulate(long proc, long rsp, long w0, long w1, long w2) {
  Thread* t = me();
  Frame* f = frameOf(t, proc, uint64_t(rsp));
  const int64_t w[3] = {w0, w1, w2};
  const EmuOp op = EmuOp::decode(w);
  f->regs.loadBias = bias;  // (a frame opened before SlInit has none)
  atomx::x86::emulate(op, f->regs);
  if (breakMode == 1 && op.kind == EmuKind::Add) f->regs.gpr[op.dst] += 1;  // the must-fail twins
  if (breakMode == 2 && op.kind == EmuKind::SlotLoad) f->regs.gpr[op.dst] += 8;
  ++t->emulated;
}

void SlCheck(long site, long rsp, long a0, long a1, long a2, long a3) {
  if (!ready || site < 0 || site >= nsites) return;
  Thread* t = me();
  const long* s = sites + site * kSiteLongs;
  Frame* f = frameOf(t, s[1], uint64_t(rsp));
  const long real[4] = {a0, a1, a2, a3};
  for (long k = 0; k < s[3]; ++k) {
    const long* o = s + kSiteHeader + k * kOperandLongs;
    const long cls = o[0], base = o[1], index = o[2], scale = o[3], disp = o[4], seg = o[5], width = o[6] & 0xff;
    const bool ripRelative = o[6] >> 8;
    ++t->checked[cls];
    if (cls == 2) continue;  // recorded: the address itself would be in the trace
    uint64_t a;
    if (cls == 0) {
      a = ripRelative ? uint64_t(o[7]) + bias : uint64_t(disp);
    } else {
      a = uint64_t(disp);
      if (base >= 0) a += f->regs.gpr[base];
      if (index >= 0) a += f->regs.gpr[index] * uint64_t(scale);
      if (width == 32) a = uint32_t(a);
      a += t->segBase[seg];
    }
    if (a == uint64_t(real[k])) continue;
    ++t->mismatches;
    note(site, k, uint64_t(real[k]), a);
  }
}

// Each process appends its totals and first mismatches to the report.
void SlReport() {
  if (!ready) return;
  uint64_t checked[3] = {}, mismatches = 0, lost = 0, emulated = 0, recordings = 0, overflow = 0, nthreads = 0;
  for (Thread* t = threads.load(std::memory_order_acquire); t; t = t->next, ++nthreads) {
    for (int k = 0; k < 3; ++k) checked[k] += t->checked[k];
    mismatches += t->mismatches;
    lost += t->lost;
    emulated += t->emulated;
    recordings += t->recordings;
    overflow += t->overflow;
  }
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "slices: pid %ld threads %" PRIu64 " references static %" PRIu64 " computed %" PRIu64
                " recorded %" PRIu64 " mismatches %" PRIu64 " lost %" PRIu64 " overflow %" PRIu64
                " emulated %" PRIu64 " recordings %" PRIu64 "\n",
                long(getpid()), nthreads, checked[0], checked[1], checked[2], mismatches, lost, overflow, emulated,
                recordings);
  out += line;
  auto name = [](uint64_t p) { return p < strings.size() ? strings[p] : "nothing"; };
  for (int k = 0; k < shown.load() && k < kShown; ++k) {
    const Note& n = notes[k];
    if (n.site < 0) {
      std::snprintf(line, sizeof line, "  lost: %s at rsp %#" PRIx64 " found the frame of %s\n", name(uint64_t(n.operand)),
                    n.real, name(n.computed));
    } else {
      const long* s = sites + n.site * kSiteLongs;
      std::snprintf(line, sizeof line, "  mismatch: %s %#lx %s operand %ld (%s): real %#" PRIx64 ", computed %#" PRIx64 "\n",
                    name(uint64_t(s[1])), s[0], strings[size_t(nprocs + s[2])], n.operand,
                    s[kSiteHeader + n.operand * kOperandLongs] ? "computed" : "static", n.real, n.computed);
    }
    out += line;
  }
  const int fd = reportPath.empty() ? 2 : open(reportPath.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  if (write(fd, out.data(), out.size()) < 0) {
  }
  if (fd != 2) close(fd);
}

}  // extern "C"
