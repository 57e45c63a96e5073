// Analysis routines of the branch tool (branch_inst.cpp).
//
// The counts live in atomx's inline counters (branch_inst.cpp): per branch
// k, 4k taken, 4k+1 not taken, 4k+2 mispredicted, 4k+3 the predictor's
// state.  The predictor of each branch is the classic 2-bit saturating
// counter (Smith 1981): states 0..3, predict taken when the state is >= 2,
// count up when the branch is taken and down when not, starting at 1
// (weakly not taken): the counter holds the state XOR 1, so zero is 1.  The inline code updates it
// with a plain load and store and counts with locked adds where the
// program may run threads: under threads the predictor sees the threads'
// outcomes interleaved in whatever order they come (as one shared hardware
// predictor would) and a concurrent update can be lost; the counts stay
// exact.  CondBranch, for the few branches whose edges cannot carry inline
// code, does the same with relaxed atomics.  Branch k is the k-th block
// of the facts atomx embeds (<atomx/facts.h>) that ends in a conditional
// branch.
#include <atomx/facts.h>
#include <atomx/report.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {
long* counts;  // atomx's counters, 4 per branch
struct Site {  // branch k's counters
  long* c;
  long taken() const { return __atomic_load_n(c, __ATOMIC_RELAXED); }
  long notTaken() const { return __atomic_load_n(c + 1, __ATOMIC_RELAXED); }
  long mispredicted() const { return __atomic_load_n(c + 2, __ATOMIC_RELAXED); }
};
Site site(long k) { return {counts + 4 * k}; }
long nSites;
std::vector<uint32_t> branch;  // branch k's block, which it ends
long topN;
std::string programPath;

uint64_t pcOf(long k) { return AtomxBlock(branch[size_t(k)])->lastPc; }
const char* procOf(long k) { return AtomxProc(AtomxBlock(branch[size_t(k)])->proc)->name; }
long executed(long k) { return site(k).taken() + site(k).notTaken(); }
double percent(long a, long b) { return b ? 100.0 * double(a) / double(b) : 0.0; }

void writeBtaken() {  // the paper's btaken.out, as before
  FILE* out = AtomxOpenOutput("btaken.out");
  if (!out) return;
  std::fprintf(out, "PC \t Taken \t Not Taken \n");
  for (long k = 0; k < nSites; ++k)
    std::fprintf(out, "0x%lx \t %ld \t %ld\n", long(pcOf(k)), site(k).taken(), site(k).notTaken());
  std::fclose(out);
}

void table(FILE* out, const char* title, const std::vector<long>& order) {
  std::fprintf(out, "\n%s\n  %-18s %14s %7s %14s %7s  %s\n", title, "pc", "executed", "taken", "mispredicted",
               "miss", "procedure");
  for (long k : order) {
    const long e = executed(k), m = site(k).mispredicted();
    std::fprintf(out, "  0x%-16lx %14ld %6.1f%% %14ld %6.1f%%  %s\n", long(pcOf(k)), e, percent(site(k).taken(), e), m,
                 percent(m, e), procOf(k));
  }
}

std::vector<long> topBy(long (*key)(long)) {
  std::vector<long> order;
  for (long k = 0; k < nSites; ++k)
    if (key(k) > 0) order.push_back(k);
  // Ties in address order, so the report does not depend on the sort.
  std::stable_sort(order.begin(), order.end(), [&](long a, long b) { return key(a) > key(b); });
  if (long(order.size()) > topN) order.resize(size_t(topN));
  return order;
}

void writeSummary() {
  FILE* out = atomx::openToolOutput("branch.out");
  if (!out) return;
  long taken = 0, notTaken = 0, miss = 0, live = 0;
  for (long k = 0; k < nSites; ++k) {
    taken += site(k).taken(), notTaken += site(k).notTaken(), miss += site(k).mispredicted();
    live += executed(k) > 0;
  }
  const long total = taken + notTaken;
  std::fprintf(out, "branch: conditional branches of %s\n", programPath.c_str());
  std::fprintf(out, "  executed      %16ld   at %ld of %ld branch sites\n", total, live, nSites);
  std::fprintf(out, "  taken         %16ld   %5.1f%%\n", taken, percent(taken, total));
  std::fprintf(out, "  not taken     %16ld   %5.1f%%\n", notTaken, percent(notTaken, total));
  std::fprintf(out, "  mispredicted  %16ld   %5.1f%%  (2-bit saturating counter per branch)\n", miss, percent(miss, total));
  std::fprintf(out, "  accuracy                         %5.1f%%\n", total ? 100.0 - percent(miss, total) : 0.0);
  if (topN > 0) {
    table(out, "Most executed branches:", topBy(executed));
    table(out, "Most mispredicted branches:", topBy([](long k) { return site(k).mispredicted(); }));
  }
  std::fclose(out);
}

void writeJson() {
  FILE* out = atomx::openToolOutput("branch.json");
  if (!out) return;
  atomx::JsonWriter j(out);
  j.beginObject();
  j.key("tool").value("branch");
  j.key("program").value(programPath);
  j.key("predictor").value("2-bit saturating counter per branch, initial state 1 (weakly not taken)");
  long taken = 0, notTaken = 0, miss = 0;
  for (long k = 0; k < nSites; ++k)
    taken += site(k).taken(), notTaken += site(k).notTaken(), miss += site(k).mispredicted();
  j.key("executed").value(taken + notTaken);
  j.key("taken").value(taken);
  j.key("not_taken").value(notTaken);
  j.key("mispredicted").value(miss);
  j.key("branches").beginArray();
  for (long k = 0; k < nSites; ++k) {
    j.beginObject();
    j.key("pc").hex(pcOf(k));
    j.key("proc").value(procOf(k));
    j.key("taken").value(site(k).taken());
    j.key("not_taken").value(site(k).notTaken());
    j.key("mispredicted").value(site(k).mispredicted());
    j.endObject();
  }
  j.endArray();
  j.endObject();
  std::fclose(out);
}
}  // namespace

extern "C" {
void BranchInit(long n, long top, long* counters) {
  // The blocks that end in one, without reading an instruction's facts
  // (a short process would spend most of its start on those).
  for (long b = 0; b < AtomxBlockCount(); ++b)
    if (AtomxBlock(b)->lastKind == ATOMX_INST_COND_BRANCH) branch.push_back(uint32_t(b));
  if (long(branch.size()) != n) {  // the instrumentation's branches are the facts' (a bug otherwise)
    std::fprintf(stderr, "branch: %ld branches instrumented, %zu in atomx's facts\n", n, branch.size());
    std::abort();
  }
  nSites = n, topN = top, programPath = AtomxProgramFile();
  counts = counters;
}

void CondBranch(long n, long taken) {
  long* c = counts + 4 * n;
  __atomic_fetch_add(c + (taken ? 0 : 1), 1, __ATOMIC_RELAXED);
  const long state = __atomic_load_n(c + 3, __ATOMIC_RELAXED) ^ 1;  // held XOR 1 (Counters::predict)
  if ((state >= 2) != (taken != 0)) __atomic_fetch_add(c + 2, 1, __ATOMIC_RELAXED);
  const long next = taken ? (state < 3 ? state + 1 : 3) : (state > 0 ? state - 1 : 0);
  if (next != state) __atomic_store_n(c + 3, next ^ 1, __ATOMIC_RELAXED);
}

void BranchFini() {
  writeBtaken();
  writeSummary();
  writeJson();
}
}
