// Analysis routines of the branch tool (branch_inst.cpp).  Every thread of
// the program calls CondBranch, so the counters are atomic (relaxed: only
// the totals matter, and they are read after the threads have finished).
// Same output format as the paper's tool (tools/paper).
#include <atomx/analysis.h>

#include <atomic>
#include <cstdio>
#include <memory>

namespace {
struct BranchInfo {
  std::atomic<long> taken{0}, notTaken{0};
};
std::unique_ptr<BranchInfo[]> stats;
FILE* out;
}  // namespace

extern "C" {
void OpenFile(long n) {
  stats = std::make_unique<BranchInfo[]>(n);
  out = std::fopen(AtomxOutputPath("btaken.out"), "w");
  if (out) std::fprintf(out, "PC \t Taken \t Not Taken \n");
}

void CondBranch(long n, long taken) {
  (taken ? stats[n].taken : stats[n].notTaken).fetch_add(1, std::memory_order_relaxed);
}

void PrintBranch(long n, long pc) {
  if (out) std::fprintf(out, "0x%lx \t %ld \t %ld\n", pc, stats[n].taken.load(), stats[n].notTaken.load());
}

void CloseFile() {
  if (out) std::fclose(out);
  out = nullptr;
}
}
