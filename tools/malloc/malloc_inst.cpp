// malloc tool, instrumentation side: a call before every call site of the
// program that calls an allocator function (direct, through the PLT or the
// GOT, or a tail jump), with the argument registers; and, for calls that
// return here, a call after them with %rax (live bytes).  Which function a
// site calls is known now, so the analysis gets a site index and static
// tables (ProgramBefore) rather than names at run time.  The analysis takes
// over the program's imports of these functions at start
// (malloc_anal.cpp): then a site only says which it is, the function's
// wrapper counts the call, and calls through pointers are seen too (named
// by procedure: the embedded facts).
#include <atomx/atomx.hpp>

#include <cstdlib>
#include <string>
#include <vector>

using namespace atomx;

namespace {
// The functions seen, and how to read their arguments (malloc_anal.cpp):
// size = arg0 | arg1 | arg0*arg1 | arg1*arg2 ...; kinds must match there.
enum Kind { kAlloc0, kAlloc1, kAlloc2, kCalloc, kRealloc, kReallocArray, kPosixMemalign, kFree };
struct Fn { const char* name; Kind kind; };
const Fn kFns[] = {
    {"malloc", kAlloc0}, {"calloc", kCalloc}, {"realloc", kRealloc},
    {"reallocarray", kReallocArray}, {"free", kFree}, {"aligned_alloc", kAlloc1},
    {"posix_memalign", kPosixMemalign}, {"memalign", kAlloc1}, {"valloc", kAlloc0},
    {"pvalloc", kAlloc0},
    // C++ operator new / new[]: plain, nothrow, aligned, aligned nothrow.
    {"_Znwm", kAlloc0}, {"_Znam", kAlloc0}, {"_ZnwmRKSt9nothrow_t", kAlloc0},
    {"_ZnamRKSt9nothrow_t", kAlloc0}, {"_ZnwmSt11align_val_t", kAlloc0},
    {"_ZnamSt11align_val_t", kAlloc0}, {"_ZnwmSt11align_val_tRKSt9nothrow_t", kAlloc0},
    {"_ZnamSt11align_val_tRKSt9nothrow_t", kAlloc0},
    // operator delete / delete[]: plain, sized, aligned, nothrow.
    {"_ZdlPv", kFree}, {"_ZdaPv", kFree}, {"_ZdlPvm", kFree}, {"_ZdaPvm", kFree},
    {"_ZdlPvSt11align_val_t", kFree}, {"_ZdaPvSt11align_val_t", kFree},
    {"_ZdlPvmSt11align_val_t", kFree}, {"_ZdaPvmSt11align_val_t", kFree},
    {"_ZdlPvRKSt9nothrow_t", kFree}, {"_ZdaPvRKSt9nothrow_t", kFree},
    {"_ZdlPvSt11align_val_tRKSt9nothrow_t", kFree}, {"_ZdaPvSt11align_val_tRKSt9nothrow_t", kFree},
};
}  // namespace

extern "C" void Instrument(int argc, char** argv) {
  long top = 10, live = 1;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--top") top = optionNumber("malloc", "--top", k + 1 < argc ? argv[++k] : nullptr, 1, 1000);
    else if (a == "--no-live") live = 0;
    else throw Error("malloc: unknown option '" + a + "' (options: --top N, --no-live)");
  }
  Routine init("MallocInit(long, long, long, long[], int[], int[], char*, char*, int[], char*)");
  Routine call("MallocCall(long, REGV, REGV, REGV)");
  Routine ret("MallocReturn(long, REGV)");
  Routine report("MallocReport()");

  std::vector<long> pcs;
  std::vector<int> fnOf, tail, kinds;
  std::string where, fnNames;  // '\n'-separated
  for (const Fn& f : kFns) {
    fnNames += f.name + std::string("\n");
    kinds.push_back(f.kind);
  }
  for (Proc p : program().procs())
    for (Block b : p.blocks()) {
      Inst i = b.last();  // calls and jumps end blocks
      if (i.kind() != InstClass::Call && i.kind() != InstClass::IndirectCall &&
          i.kind() != InstClass::Jump && i.kind() != InstClass::IndirectJump)
        continue;
      std::string callee = i.calleeName();
      if (callee.empty()) continue;
      int fn = -1;
      for (size_t k = 0; k < std::size(kFns); ++k)
        if (callee == kFns[k].name) fn = int(k);
      if (fn < 0) continue;
      const bool isTail = i.isJump();
      const long site = long(pcs.size());
      call.before(i, site, reg(Reg::rdi), reg(Reg::rsi), reg(Reg::rdx));
      // A tail call returns to our caller's caller: no InstAfter there.
      if (live && !isTail && kFns[fn].kind != kFree) ret.after(i, site, reg(Reg::rax));
      Inst::SourceLine sl = i.sourceLine();
      std::string file = sl.file.substr(sl.file.rfind('/') + 1);
      where += std::string(p.name()) + "\t" + (sl.line ? file + ":" + std::to_string(sl.line) : "") + "\n";
      pcs.push_back(long(i.pc()));
      fnOf.push_back(fn);
      tail.push_back(isTail);
    }
  const long n = long(pcs.size());
  pcs.push_back(0), fnOf.push_back(0), tail.push_back(0);  // never empty arrays
  init.atProgramStart(n, top, live, pcs, fnOf, tail, where, fnNames, kinds, std::string(program().path()));
  embedFacts();  // the procedures, to name where a call through a pointer came from
  report.atProgramEnd();
}
