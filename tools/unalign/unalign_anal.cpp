// Analysis routines of the unalign tool (unalign_inst.cpp).  Per site (one
// instruction that accesses memory): accesses, unaligned accesses (address
// not a multiple of the access's natural alignment) and cache-line splits
// (the access crosses a 64-byte boundary: what costs time on x86).  The
// program counts them inline (atomx::Counters); rep-prefixed string
// instructions call in with their addresses, into atomic (relaxed)
// counters, since every thread of the program may call.
#include <atomx/report.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {
struct Site {
  std::atomic<long> accesses{0}, unaligned{0}, split{0};
};
std::unique_ptr<Site[]> sites;
long nSites, topN;
const long* sitePc;
const int *siteSize, *siteString;  // two per site
const char* blob;
std::string programPath;

// The natural alignment of an S-byte access: the largest power of two <= S
// (so a 10-byte x87 access is judged by 8, a 32-byte one by 32).
uint64_t alignmentOf(unsigned size) {
  uint64_t a = 1;
  while (a * 2 <= size) a *= 2;
  return a;
}

inline void check(Site& s, uint64_t ea, unsigned size) {
  s.accesses.fetch_add(1, std::memory_order_relaxed);
  if (ea & (alignmentOf(size) - 1)) s.unaligned.fetch_add(1, std::memory_order_relaxed);
  if ((ea & 63) + size > 64) s.split.fetch_add(1, std::memory_order_relaxed);
}

double percent(long a, long b) { return b ? 100.0 * double(a) / double(b) : 0.0; }
const char* procOf(long k) { return blob + siteString[2 * k]; }
const char* textOf(long k) { return blob + siteString[2 * k + 1]; }

void writeSummary(long accesses, long unaligned, long split) {
  FILE* out = atomx::openToolOutput("unalign.out");
  if (!out) return;
  long live = 0, bad = 0;
  std::vector<long> order;
  for (long k = 0; k < nSites; ++k) {
    live += sites[k].accesses.load() > 0;
    if (sites[k].unaligned.load() || sites[k].split.load()) ++bad, order.push_back(k);
  }
  std::stable_sort(order.begin(), order.end(), [](long a, long b) {
    return sites[a].unaligned.load() + sites[a].split.load() > sites[b].unaligned.load() + sites[b].split.load();
  });
  std::fprintf(out, "unalign: unaligned memory accesses of %s\n", programPath.c_str());
  std::fprintf(out, "  accesses          %16ld   by %ld of %ld instructions that access memory\n", accesses, live, nSites);
  std::fprintf(out, "  unaligned         %16ld   %7.3f%%  (address not a multiple of the natural alignment)\n",
               unaligned, percent(unaligned, accesses));
  std::fprintf(out, "  cache-line split  %16ld   %7.3f%%  (crossing a 64-byte boundary)\n", split, percent(split, accesses));
  std::fprintf(out, "  instructions with unaligned or split accesses: %ld\n", bad);
  if (!order.empty() && topN > 0) {
    std::fprintf(out, "\nInstructions with the most unaligned or split accesses:\n  %-18s %12s %12s %12s  %-24s %s\n", "pc",
                 "accesses", "unaligned", "split", "procedure", "instruction");
    for (size_t r = 0; r < order.size() && long(r) < topN; ++r) {
      const long k = order[r];
      std::fprintf(out, "  0x%-16lx %12ld %12ld %12ld  %-24s %s\n", sitePc[k], sites[k].accesses.load(),
                   sites[k].unaligned.load(), sites[k].split.load(), procOf(k), textOf(k));
    }
    if (long(order.size()) > topN) std::fprintf(out, "  (%ld more in unalign.json)\n", long(order.size()) - topN);
  }
  std::fclose(out);
}

void writeJson(long accesses, long unaligned, long split) {
  FILE* out = atomx::openToolOutput("unalign.json");
  if (!out) return;
  atomx::JsonWriter j(out);
  j.beginObject();
  j.key("tool").value("unalign");
  j.key("program").value(programPath);
  j.key("accesses").value(accesses).key("unaligned").value(unaligned).key("split").value(split);
  j.key("sites").value(nSites);
  // The instructions that ran (the others have only zeros).
  j.key("instructions").beginArray();
  for (long k = 0; k < nSites; ++k) {
    if (!sites[k].accesses.load()) continue;
    j.beginObject().key("pc").hex(uint64_t(sitePc[k])).key("proc").value(procOf(k)).key("inst").value(textOf(k));
    j.key("size").value(siteSize[2 * k]);
    if (siteSize[2 * k + 1]) j.key("size2").value(siteSize[2 * k + 1]);
    j.key("accesses").value(sites[k].accesses.load()).key("unaligned").value(sites[k].unaligned.load());
    j.key("split").value(sites[k].split.load()).endObject();
  }
  j.endArray();
  j.endObject();
  std::fclose(out);
}
}  // namespace

extern "C" {
// The arrays are atomx's copies in the program: they live as long as it.
void UnalignInit(long n, const long* pcs, const int* sizes, const int* strings, const char* names, long top,
                 const char* path) {
  sites = std::make_unique<Site[]>(size_t(n ? n : 1));
  nSites = n, sitePc = pcs, siteSize = sizes, siteString = strings, blob = names, topN = top, programPath = path;
}

// rep-prefixed string instructions: with %rcx = 0 they access nothing; else
// every element has the first one's alignment (they step by the element size).
void AccessRep1(long k, long rcx, uint64_t a) {
  if (rcx) check(sites[k], a, unsigned(siteSize[2 * k]));
}
void AccessRep2(long k, long rcx, uint64_t a, uint64_t b) {
  if (!rcx) return;
  check(sites[k], a, unsigned(siteSize[2 * k]));
  check(sites[k], b, unsigned(siteSize[2 * k + 1]));
}

// The inline counts: executions per site; unaligned and split accesses per
// site and operand.
void UnalignFini(const long* executions, const long* unalignedCounts, const long* splitCounts) {
  for (long k = 0; k < nSites; ++k) {
    const long operands = (siteSize[2 * k] != 0) + (siteSize[2 * k + 1] != 0);
    sites[k].accesses += executions[k] * operands;
    sites[k].unaligned += unalignedCounts[2 * k] + unalignedCounts[2 * k + 1];
    sites[k].split += splitCounts[2 * k] + splitCounts[2 * k + 1];
  }
  long accesses = 0, unaligned = 0, split = 0;
  for (long k = 0; k < nSites; ++k)
    accesses += sites[k].accesses.load(), unaligned += sites[k].unaligned.load(), split += sites[k].split.load();
  writeSummary(accesses, unaligned, split);
  writeJson(accesses, unaligned, split);
}
}
