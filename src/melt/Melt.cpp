#include "melt/Melt.h"

#include <atomx/trace.hpp>

#include <algorithm>
#include <deque>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "melt/Exact.h"
#include "melt/Seed.h"
#include "melt/Symbols.h"

namespace atomx::melt {

size_t kneeRank(const std::vector<uint64_t>& sorted) {
  if (sorted.empty()) return 0;
  const double total = double(std::accumulate(sorted.begin(), sorted.end(), uint64_t(0)));
  const double m = double(sorted.size());
  double cum = 0, best = -1;
  size_t rank = 1;
  for (size_t i = 0; i < sorted.size(); ++i) {
    cum += double(sorted[i]);
    // Distance above the chord y = x, up to the constant 1/sqrt(2).
    const double d = cum / total - double(i + 1) / m;
    if (d > best) best = d, rank = i + 1;
  }
  return rank;
}

namespace {

// Pass 1: identities, coverage, and the exact miner.
struct Pass1 : trace::Consumer {
  Symbols& syms;
  ParallelExact* exact;
  std::vector<uint64_t> executions;
  uint64_t executed = 0, blocks = 0, segments = 0;
  bool open = false;
  Pass1(Symbols& s, ParallelExact* e) : syms(s), exact(e) {}
  void cut() {
    if (exact) exact->cut();
    segments += open;
    open = false;
  }
  void threadBegin(int) override { cut(); }
  void block(const trace::BlockRun& run) override {
    if (run.inherited || !run.count) return;  // its parent's stream has it; a block whose first instruction faulted
    const std::vector<uint32_t>* insns;
    const uint32_t id = syms.block(run, &insns);
    if (executions.size() < syms.instructionCount()) executions.resize(syms.instructionCount());
    for (uint32_t i : *insns) ++executions[i];
    executed += insns->size();
    ++blocks;
    open = true;
    if (exact) exact->add(id, uint32_t(insns->size()));
  }
  void outsideCall(int, uint64_t, const std::string&) override { cut(); }
  void signal(const trace::SignalEvent&) override { cut(); }  // a handler cut the path
  void threadEnd(int, const std::string&) override { cut(); }
};

// Pass 2: the seed's melting.
struct Pass2 : trace::Consumer {
  Symbols& syms;
  SeedMelter& melter;
  Pass2(Symbols& s, SeedMelter& m) : syms(s), melter(m) {}
  void threadBegin(int) override { melter.cut(); }
  void block(const trace::BlockRun& run) override {
    if (run.inherited || !run.count) return;
    const std::vector<uint32_t>* insns;
    syms.block(run, &insns);
    melter.add(*insns);
  }
  void outsideCall(int, uint64_t, const std::string&) override { melter.cut(); }
  void signal(const trace::SignalEvent&) override { melter.cut(); }
  void threadEnd(int, const std::string&) override { melter.cut(); }
};

// Pass 3, by text only: each reported sequence's first occurrence, so its
// pcs are one place where it ran (KMP over the instruction ids).
struct Locate : trace::Consumer {
  Symbols& syms;
  struct Want {
    const std::vector<uint32_t>* ids;
    std::vector<uint64_t>* pcs;
    std::vector<size_t> fail;
    size_t matched = 0;
    std::deque<uint64_t> recent;  // the pcs of the partial match
    bool found = false;
  };
  std::vector<Want> wants;
  size_t left = 0;
  explicit Locate(Symbols& s) : syms(s) {}
  void want(const std::vector<uint32_t>& ids, std::vector<uint64_t>& pcs) {
    Want w;
    w.ids = &ids;
    w.pcs = &pcs;
    w.fail.assign(ids.size() + 1, 0);
    for (size_t i = 1, k = 0; i < ids.size(); ++i) {
      while (k && ids[i] != ids[k]) k = w.fail[k];
      if (ids[i] == ids[k]) ++k;
      w.fail[i + 1] = k;
    }
    wants.push_back(std::move(w));
    ++left;
  }
  void cut() {
    for (Want& w : wants) w.matched = 0, w.recent.clear();
  }
  void threadBegin(int) override { cut(); }
  void block(const trace::BlockRun& run) override {
    if (run.inherited || !left || !run.count) return;
    const std::vector<uint32_t>* insns;
    syms.block(run, &insns);
    for (Want& w : wants) {
      if (w.found) continue;
      const std::vector<uint32_t>& ids = *w.ids;
      for (size_t k = 0; k < insns->size() && !w.found; ++k) {
        while (w.matched && (*insns)[k] != ids[w.matched]) w.matched = w.fail[w.matched];
        if ((*insns)[k] == ids[w.matched]) ++w.matched;
        w.recent.push_back(run.insns[k].pc);
        while (w.recent.size() > w.matched) w.recent.pop_front();
        if (w.matched == ids.size()) {
          w.pcs->assign(w.recent.begin(), w.recent.end());
          w.found = true;
          --left;
        }
      }
    }
  }
  void outsideCall(int, uint64_t, const std::string&) override { cut(); }
  void signal(const trace::SignalEvent&) override { cut(); }
  void threadEnd(int, const std::string&) override { cut(); }
};

}  // namespace

namespace {

// Each sequence's distinct addresses per procedure, against the
// procedure's instructions and the program's (Sequence::staticShares).
void staticShares(const trace::TraceReader& reader, Report& r) {
  std::unordered_map<std::string, uint64_t> size;
  for (const trace::TraceReader::ProcedureSize& p : reader.procedures()) {
    size[p.name] += p.instructions;
    r.programInstructions += p.instructions;
  }
  for (std::vector<Sequence>* list : {&r.seed.sequences, &r.exact.sequences})
    for (Sequence& q : *list) {
      std::unordered_set<uint64_t> seen;
      for (size_t k = 0; k < q.pcs.size(); ++k) {
        if (!seen.insert(q.pcs[k]).second) continue;
        ++q.staticInstructions;
        const std::string& proc = q.procedures[k];
        auto it = std::find_if(q.staticShares.begin(), q.staticShares.end(), [&](const StaticShare& x) { return x.procedure == proc; });
        if (it == q.staticShares.end()) {
          q.staticShares.push_back({proc, 0, size.count(proc) ? size.at(proc) : 0});
          it = q.staticShares.end() - 1;
        }
        ++it->instructions;
      }
    }
}

}  // namespace

Report mine(const std::string& dir, const Options& options) {
  // One reading of the trace (its program analysed once) for every pass.
  const trace::TraceReader reader(dir, options.program);
  Report r;
  r.program = reader.program();
  r.identity = options.identity;
  Symbols syms(options.identity, reader.program());
  std::unique_ptr<ParallelExact> exact;
  if (options.exact) exact = std::make_unique<ParallelExact>(options.maxLength, options.threads);
  Pass1 p1(syms, exact.get());
  const trace::Summary s = reader.regenerate(p1, options.progress);
  r.executed = p1.executed;
  r.blocks = p1.blocks;
  r.segments = p1.segments;
  r.threads = s.threads;
  r.incompleteThreads = s.incompleteThreads;

  // Instructions by executions, most first; `rank` maps ids to that order.
  const size_t n = syms.instructionCount();
  std::vector<uint32_t> order(n), rank(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return p1.executions[a] > p1.executions[b]; });
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t id = order[k];
    rank[id] = k;
    r.instructions.push_back({syms.pc(id), p1.executions[id], syms.procedure(id),
                              syms.text(syms.pc(id), syms.length(id), options.identity == Identity::Text)});
  }
  auto ranked = [&](std::vector<uint32_t> ids) {
    for (uint32_t& i : ids) i = rank[i];
    return ids;
  };

  if (options.exact) {
    r.exactRun = true;
    r.exact.maxLength = options.maxLength;
    for (Found& f : exact->finish(options.top, &r.exact.candidates)) {
      Sequence q;
      for (uint32_t b : f.blocks) {
        const Symbols::Block& blk = syms.blocks()[b];
        for (uint32_t i : blk.insns) q.insns.push_back(rank[i]);
        q.pcs.insert(q.pcs.end(), blk.pcs.begin(), blk.pcs.end());
      }
      q.occurrences = f.occurrences;
      r.exact.sequences.push_back(std::move(q));
    }
  }

  if (options.seed) {
    r.seedRun = true;
    SeedResult& sr = r.seed;
    std::vector<uint64_t> sorted;
    for (const Instruction& i : r.instructions) sorted.push_back(i.executions);
    if (options.threshold) {
      sr.threshold = options.threshold;
      sr.kneeRank = size_t(std::count_if(sorted.begin(), sorted.end(), [&](uint64_t c) { return c >= sr.threshold; }));
    } else {
      sr.automatic = true;
      sr.kneeRank = kneeRank(sorted);
      sr.threshold = sr.kneeRank ? sorted[sr.kneeRank - 1] : 1;
    }
    SeedMelter melter(p1.executions, sr.threshold, options.seedBudget);
    Pass2 p2(syms, melter);
    reader.regenerate(p2, options.progress);
    if (!melter.rank(sr, options.top, options.topChunks)) {
      // Some of the top chunks' instructions were not kept: melt again.
      melter.fetch();
      reader.regenerate(p2, options.progress);
    }
    melter.finish(sr);
    for (Chunk& c : sr.topChunks) {
      c.insns = ranked(std::move(c.insns));
      c.intervals = intervalTable(c.insns);
    }
    for (Sequence& q : sr.sequences) {
      for (uint32_t i : q.insns) q.pcs.push_back(syms.pc(i));
      q.insns = ranked(std::move(q.insns));
    }
  }
  if (options.identity == Identity::Text) {
    // Sequences in instruction ids (not ranks), and where each first ran.
    std::vector<std::vector<uint32_t>> ids;
    std::vector<Sequence*> seqs;
    for (Sequence& q : r.seed.sequences) seqs.push_back(&q);
    for (Sequence& q : r.exact.sequences) seqs.push_back(&q);
    ids.reserve(seqs.size());
    for (Sequence* q : seqs) {
      ids.emplace_back();
      for (uint32_t k : q->insns) ids.back().push_back(order[k]);
    }
    Locate locate(syms);
    for (size_t k = 0; k < seqs.size(); ++k) locate.want(ids[k], seqs[k]->pcs);
    if (!seqs.empty()) reader.regenerate(locate, options.progress);
  }
  for (std::vector<Sequence>* list : {&r.seed.sequences, &r.exact.sequences})
    for (Sequence& q : *list)
      for (uint64_t pc : q.pcs) q.procedures.push_back(syms.procedureAt(pc));
  staticShares(reader, r);
  return r;
}

}  // namespace atomx::melt
