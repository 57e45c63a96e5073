// Analysis side of the beforeUnless check (unless_inst.cpp).  Each thread
// has its own tables (a test reads the running thread's, through the
// descriptor's thread-local offset); the counts are shared atomics.  The
// naive calls predict on shadow tables of their own, which they update as
// the documented test would (a pass on a slot's second word swaps the
// two) and as the filtered call will (when they predict a call): the
// tables the inline code updated must equal the shadows.
#include <atomx/analysis.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

namespace {
long* iDesc;
long* dDesc;
long ninsts, nblocks;
uint64_t lineBits, setCount, bias;
uint64_t* noneI;  // a table of 1s (no line) for threads without their own
uint64_t* noneD;
std::atomic<long>* expected;  // per instruction, then per block: calls the oracle says are due
std::atomic<long>* made;      // calls made
std::atomic<long> naiveCalls, filteredCalls, tableDifferences;
__attribute__((tls_model("initial-exec"))) thread_local int64_t iDelta, dDelta;
thread_local uint64_t *iTable, *dTable, *iShadow, *dShadow;

uint64_t* newTable() {
  uint64_t* t = new uint64_t[setCount << lineBits >> 3];
  for (uint64_t k = 0; k < setCount << lineBits >> 3; ++k) t[k] = 1;
  return t;
}
void tables() {
  if (iTable) return;
  iTable = newTable(), dTable = newTable(), iShadow = newTable(), dShadow = newTable();
  iDelta = int64_t(iTable) - int64_t(noneI), dDelta = int64_t(dTable) - int64_t(noneD);
}
// A set's slot: its most recent line, then its second most recent.
uint64_t* slot(uint64_t* t, uint64_t a) { return &t[((a >> lineBits) & (setCount - 1)) << lineBits >> 3]; }
// The documented test: the reference lies in one line, one of the two most
// recent of its set (the inline code swaps them when it is the second,
// which keeps the pair's order as touch() would).
bool passes(uint64_t* t, uint64_t a, uint64_t size) {
  const uint64_t first = a >> lineBits, last = (a + size - 1) >> lineBits;
  return first == last && (slot(t, a)[0] == first << lineBits || (lineBits > 3 && slot(t, a)[1] == first << lineBits));
}
// The documented test on a shadow, its swap included.
bool passesSwapping(uint64_t* t, uint64_t a, uint64_t size) {
  if (!passes(t, a, size)) return false;
  uint64_t* s = slot(t, a);
  const uint64_t line = (a >> lineBits) << lineBits;
  if (s[0] != line) s[1] = s[0], s[0] = line;
  return true;
}
// Whether the slot of a's set is the same in the table and its shadow.
void compareSlot(const uint64_t* t, const uint64_t* shadow, uint64_t a) {
  const size_t k = ((a >> lineBits) & (setCount - 1)) << lineBits >> 3;
  if (t[k] != shadow[k] || (lineBits > 3 && t[k + 1] != shadow[k + 1])) tableDifferences.fetch_add(1, std::memory_order_relaxed);
}
void touch(uint64_t* t, uint64_t a, uint64_t size) {
  for (uint64_t l = a >> lineBits; l <= (a + size - 1) >> lineBits; ++l) {
    uint64_t* s = slot(t, l << lineBits);
    if (s[0] == l << lineBits) continue;
    if (lineBits > 3) s[1] = s[0];  // 8-byte lines: a slot of one word, the next is another set's
    s[0] = l << lineBits;
  }
}
}  // namespace

extern "C" {
void UnlessInit(long* di, long* dd, long ni, long nb, long line, long sets) {
  iDesc = di, dDesc = dd, ninsts = ni, nblocks = nb;
  lineBits = uint64_t(__builtin_ctzl(uint64_t(line))), setCount = uint64_t(sets), bias = AtomxLoadBias();
  expected = new std::atomic<long>[size_t(ni + nb)]();
  made = new std::atomic<long>[size_t(ni + nb)]();
  noneI = newTable(), noneD = newTable();
  uint64_t tp;
  asm("mov %%fs:0, %0" : "=r"(tp));
  for (long* d : {iDesc, dDesc}) {
    d[1] = long(d == iDesc ? noneI : noneD);
    d[2] = long((setCount - 1) << lineBits);
    d[3] = ~long((uint64_t(1) << lineBits) - 1);
    d[4] = long(bias);
    d[0] = long(uint64_t(d == iDesc ? &iDelta : &dDelta) - tp);
  }
}
void NaiveRef(long i, long ea0, long ea1, long n, long s0, long s1) {
  tables();
  naiveCalls.fetch_add(1, std::memory_order_relaxed);
  compareSlot(dTable, dShadow, uint64_t(ea0));
  if (n > 1) compareSlot(dTable, dShadow, uint64_t(ea1));
  const bool pass = passesSwapping(dShadow, uint64_t(ea0), uint64_t(s0)) &&
                    (n < 2 || passesSwapping(dShadow, uint64_t(ea1), uint64_t(s1)));
  if (pass) return;
  expected[i].fetch_add(1, std::memory_order_relaxed);
  touch(dShadow, uint64_t(ea0), uint64_t(s0));
  if (n > 1) touch(dShadow, uint64_t(ea1), uint64_t(s1));
}
void FilteredRef(long i, long ea0, long ea1, long n, long s0, long s1) {
  tables();
  filteredCalls.fetch_add(1, std::memory_order_relaxed);
  made[i].fetch_add(1, std::memory_order_relaxed);
  touch(dTable, uint64_t(ea0), uint64_t(s0));
  if (n > 1) touch(dTable, uint64_t(ea1), uint64_t(s1));
}
void NaiveBlock(long b, long pc, long size, long ends) {
  tables();
  naiveCalls.fetch_add(1, std::memory_order_relaxed);
  const uint64_t a = uint64_t(pc) + bias;
  compareSlot(iTable, iShadow, a);
  if (ends) compareSlot(iTable, iShadow, a + uint64_t(size) - 1);
  const bool pass = ends ? passesSwapping(iShadow, a, 1) && passesSwapping(iShadow, a + uint64_t(size) - 1, 1)
                         : passesSwapping(iShadow, a, uint64_t(size));
  if (pass) return;
  expected[ninsts + b].fetch_add(1, std::memory_order_relaxed);
  touch(iShadow, a, uint64_t(size));
}
void FilteredBlock(long b, long pc, long size) {
  tables();
  filteredCalls.fetch_add(1, std::memory_order_relaxed);
  made[ninsts + b].fetch_add(1, std::memory_order_relaxed);
  touch(iTable, uint64_t(pc) + bias, uint64_t(size));
}
void UnlessCheck() {
  std::FILE* f = std::fopen(AtomxOutputPath("unless.out"), "w");
  long differences = 0, due = 0;
  for (long k = 0; k < ninsts + nblocks; ++k) {
    due += expected[k];
    if (expected[k] != made[k]) {
      if (++differences <= 10)
        std::fprintf(f, "%s %ld: %ld calls due, %ld made\n", k < ninsts ? "instruction" : "block",
                     k < ninsts ? k : k - ninsts, long(expected[k]), long(made[k]));
    }
  }
  std::fprintf(f, "naive calls %ld filtered calls %ld due %ld differences %ld table differences %ld\n",
               long(naiveCalls), long(filteredCalls), due, differences, long(tableDifferences));
  std::fclose(f);
}
}
