// Analysis routines of the ease tool (ease_inst.cpp): nothing runs here
// until the program ends; then every report is the static per-block
// tallies times the blocks' counts (and each conditional branch's taken
// count), written as ease.out, ease.json, ease.html and ease.cg.
#include "ease_anal.h"

#include "ease_html.h"
#include "ease_report.h"

#include <string>
#include <vector>

namespace ease {
Static in;
}

using ease::in;

namespace {

ease::Data compute(const long* blockCounts, const long* takenCounts) {
  ease::Data d;
  d.programs.push_back(in.program);
  std::vector<std::string> keyTable(size_t(in.nKeys)), keyName(size_t(in.nKeys));
  for (long k = 0; k < in.nKeys; ++k) {
    const std::string s = in.names + in.keyName[k];
    const size_t tab = s.find('\t');
    keyTable[size_t(k)] = s.substr(0, tab), keyName[size_t(k)] = s.substr(tab + 1);
  }
  std::vector<ease::ProcRow> procs(size_t(in.nProcs));
  for (long p = 0; p < in.nProcs; ++p) procs[size_t(p)].program = in.program, procs[size_t(p)].name = in.names + in.procName[p];
  for (long b = 0; b < in.nBlocks; ++b) {
    const long n = blockCounts[b];
    if (!n) continue;
    ease::ProcRow& row = procs[size_t(in.blockProc[b])];
    for (int t = in.tallyStart[b]; t < in.tallyStart[b + 1]; ++t) {
      const size_t k = size_t(in.tallyKey[t]);
      const long v = n * in.tallyCount[t];
      d.tables[keyTable[k]][keyName[k]] += v;
      if (keyTable[k] != "total") continue;
      const std::string& key = keyName[k];
      if (key == "instructions") row.insts += v;
      else if (key == "bytes") row.bytes += v;
      else if (key == "Dr") row.dr += v;
      else if (key == "Dw") row.dw += v;
      else if (key == "Bc") row.bc += v;
    }
  }
  for (const ease::ProcRow& r : procs)
    if (r.insts) d.procs.push_back(r);
  for (long k = 0; k < in.nBranches; ++k) {
    ease::BranchRow r;
    r.program = in.program, r.pc = uint64_t(in.branchPc[k]), r.condition = in.names + in.branchCond[k];
    r.proc = in.names + in.procName[in.blockProc[in.branchBlock[k]]];
    r.executed = blockCounts[in.branchBlock[k]];
    r.counted = in.branchTaken[k] >= 0;
    r.taken = r.counted ? takenCounts[in.branchTaken[k]] : 0;
    d.tables["branches executed"][r.condition] += r.executed;
    if (r.counted) d.tables["branches taken"][r.condition] += r.taken;
    d.branches.push_back(r);
  }
  return d;
}

// Every block, executed or not: its counts and static costs (for programs
// and the oracle tests).
void writeBlocks(atomx::JsonWriter& j, const long* blockCounts) {
  j.key("blocks").beginArray();
  for (long b = 0; b < in.nBlocks; ++b) {
    long cost[4] = {};  // Ir, Dr, Dw, Bc of one execution
    for (int r = in.lineStart[b]; r < in.lineStart[b + 1]; ++r)
      for (int e = 0; e < 4; ++e) cost[e] += in.lineRec[5 * r + 1 + e];
    j.beginObject().key("pc").hex(uint64_t(in.blockPc[2 * b])).key("end").hex(uint64_t(in.blockPc[2 * b + 1]));
    j.key("proc").value(in.names + in.procName[in.blockProc[b]]).key("count").value(blockCounts[b]);
    j.key("insts").value(cost[0]).key("Dr").value(cost[1]).key("Dw").value(cost[2]).key("Bc").value(cost[3]);
    j.endObject();
  }
  j.endArray();
}

}  // namespace

extern "C" {
// The arrays are atomx's copies in the program: they live as long as it.
void EaseInit(long nb, const long* pcs, const int* procs, const int* tstart, const int* tkey, const int* tcount,
              long nk, const int* knames, long np, const int* pnames, const char* blob, const char* path, long top) {
  in.nBlocks = nb, in.blockPc = pcs, in.blockProc = procs, in.tallyStart = tstart, in.tallyKey = tkey;
  in.tallyCount = tcount, in.nKeys = nk, in.keyName = knames, in.nProcs = np, in.procName = pnames;
  in.names = blob, in.program = path, in.top = top;
}

void EaseLines(const int* lstart, const int* lrec, const int* linfo) {
  in.lineStart = lstart, in.lineRec = lrec, in.lineInfo = linfo;
}

void EaseBranches(long n, const long* pcs, const int* blocks, const int* conds, const int* taken) {
  in.nBranches = n, in.branchPc = pcs, in.branchBlock = blocks, in.branchCond = conds, in.branchTaken = taken;
}

void EaseFini(const long* blockCounts, const long* takenCounts) {
  const ease::Data d = compute(blockCounts, takenCounts);
  if (FILE* out = atomx::openToolOutput("ease.out")) ease::writeText(out, d, in.top), std::fclose(out);
  if (FILE* out = atomx::openToolOutput("ease.json"))
    ease::writeJson(out, d, [&](atomx::JsonWriter& j) { writeBlocks(j, blockCounts); }), std::fclose(out);
  if (FILE* out = atomx::openToolOutput("ease.html")) ease::writeHtml(out, d), std::fclose(out);
  if (FILE* out = atomx::openToolOutput("ease.cg")) ease::writeCachegrind(out, blockCounts), std::fclose(out);
}
}
