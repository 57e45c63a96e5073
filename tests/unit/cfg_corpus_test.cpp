// Consistency of the CFG and its analyses on every procedure of real
// programs: the repository's test programs (built under the build
// directory's tests/programs/, found from this executable's path) and, when
// the directory exists, every binary in $ATOMX_CORPUS_DIR/bin (default
// ~/.cache/atomx-corpus/bin).  For each
// procedure with blocks it checks that
//   * succs and preds mirror each other with the same kinds, and outs and
//     the exit's preds likewise; succs hold intra-procedural kinds only;
//   * every block has a way on (an edge to a block or to the virtual exit),
//     so every block reaches the exit or a cycle;
//   * the immediate dominators form a tree rooted at the entry, idom(b)
//     dominates every reachable predecessor of b;
//   * the post-dominator tree covers every block;
//   * each natural loop's header dominates its whole body;
//   * up to kNaiveLimit blocks, dominators, post-dominators and loops agree
//     with the naive definitions (cfg_oracle.h);
//   * the witness placement of abstract execution (analysis/Witnesses.h)
//     solves the tracing problem, as judged by analysis/TracingCheck.h, and
//     its witness values fit the width it chose;
//   * the counter placement (analysis/CounterPlacement.h) has a place for
//     every counter, and from the chords' counts alone its solve steps give
//     every edge's count of random flows: random walks from the virtual
//     node through the procedure and back, each adding one to every edge it
//     takes (what a run does, so conservation holds at every other node).
// It prints how many programs, procedures, blocks and loops it checked.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cfg_oracle.h"
#include "elf/ElfImage.h"
#include "analysis/CounterPlacement.h"
#include "analysis/TracingCheck.h"
#include "analysis/Witnesses.h"
#include "rewrite/Rewriter.h"

namespace atomx {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kNaiveLimit = 150;

struct Totals {
  size_t programs = 0, skipped = 0, procs = 0, blocks = 0, loops = 0, naive = 0, stuckBlocks = 0;
  size_t arcs = 0, witnesses = 0, blocking = 0, wideProcs = 0, maxWitnesses = 0;
  size_t countEdges = 0, chords = 0, walks = 0, everyBlockProcs = 0, unknownEdges = 0;
  std::map<std::string, size_t> edges;  // by kind
};

bool isElfExecutable(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec) || access(p.c_str(), X_OK) != 0) return false;
  char magic[4] = {};
  std::ifstream(p, std::ios::binary).read(magic, 4);
  return magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

// Random flows through p's count graph, solved from the chords alone;
// "" or what was wrong.
std::string checkCounterPlacement(const ir::Procedure& p, Totals& totals) {
  const analysis::CountGraph g = analysis::countGraph(p);
  analysis::CounterPlan plan;
  try {
    plan = analysis::placeCounters(p, g);
  } catch (const std::exception& e) {
    return e.what();
  }
  std::vector<std::vector<uint32_t>> out(g.nodes());
  for (uint32_t k = 0; k < g.edges.size(); ++k) out[g.edges[k].from].push_back(k);
  std::mt19937 rng(uint32_t(p.start));
  std::vector<int64_t> flow(g.edges.size(), 0), walk;
  for (int w = 0; w < 40; ++w) {
    walk.clear();
    uint32_t v = g.exit();
    do {
      if (out[v].empty() || walk.size() > 4000) break;
      const uint32_t k = out[v][rng() % out[v].size()];
      walk.push_back(k);
      v = g.edges[k].to;
    } while (v != g.exit());
    if (v != g.exit()) continue;  // a walk that did not come back counts nothing
    for (uint32_t k : walk) ++flow[k];
    ++totals.walks;
  }
  std::vector<int64_t> value(g.edges.size(), -1);
  for (uint32_t k = 0; k < g.edges.size(); ++k)
    if (plan.chord[k]) value[k] = flow[k];
  for (const analysis::SolveStep& s : plan.steps) {
    int64_t v = 0;
    for (auto [k, negated] : s.terms) {
      if (value[k] < 0) return "a solve step reads a count not known yet";
      v += negated ? -value[k] : value[k];
    }
    value[s.edge] = v;
  }
  for (uint32_t k = 0; k < g.edges.size(); ++k) {
    if (!plan.known[k]) {
      // Only an edge no counter sees alone (atomx.hpp, Counters::count): a
      // jump-table edge to a target another table shares, or a way out that
      // has no place of its own beside them.
      if (!plan.everyBlock || g.edges[k].measurable)
        return "counter placement: edge " + std::to_string(k) + " (kind " + std::to_string(int(g.edges[k].kind)) +
               ", which has a place) is not known";
      ++totals.unknownEdges;
      continue;
    }
    if (value[k] != flow[k])
      return "counter placement: edge " + std::to_string(k) + " derived as " + std::to_string(value[k]) + ", ran " +
             std::to_string(flow[k]);
  }
  totals.everyBlockProcs += plan.everyBlock;
  totals.countEdges += g.edges.size();
  totals.chords += plan.chords;
  return "";
}

// Returns "" or the first inconsistency found in `p`.
std::string checkProcedure(const ir::Procedure& p, Totals& totals) {
  const uint32_t n = uint32_t(p.blocks.size());
  const uint32_t exit = p.exitNode();
  using Triple = std::tuple<uint32_t, uint32_t, ir::EdgeKind>;
  std::vector<Triple> fromSuccs, fromPreds;
  std::vector<std::pair<uint32_t, ir::EdgeKind>> toExit;
  for (uint32_t b = 0; b < n; ++b) {
    const ir::Block& blk = p.blocks[b];
    if (blk.succs.empty() && std::none_of(blk.outs.begin(), blk.outs.end(),
                                          [](const ir::OutEdge& e) { return ir::leadsToExit(e.kind); }))
      return "block " + std::to_string(b) + " has no way on";
    for (const ir::Edge& e : blk.succs) {
      if (!ir::isIntraprocedural(e.kind) || e.to >= n) return "bad succ of block " + std::to_string(b);
      fromSuccs.push_back({b, e.to, e.kind});
      totals.edges[ir::edgeKindName(e.kind)]++;
    }
    for (const ir::PredEdge& e : blk.preds) {
      if (e.from >= n) return "bad pred of block " + std::to_string(b);
      fromPreds.push_back({e.from, b, e.kind});
    }
    for (const ir::OutEdge& e : blk.outs) {
      if (ir::isIntraprocedural(e.kind)) return "intra-procedural kind in outs of block " + std::to_string(b);
      if (ir::leadsToExit(e.kind)) toExit.push_back({b, e.kind});
      totals.edges[ir::edgeKindName(e.kind)]++;
    }
  }
  std::sort(fromSuccs.begin(), fromSuccs.end());
  std::sort(fromPreds.begin(), fromPreds.end());
  if (fromSuccs != fromPreds) return "succs and preds do not mirror each other";
  std::vector<std::pair<uint32_t, ir::EdgeKind>> exitPreds;
  for (const ir::PredEdge& e : p.exitPreds) exitPreds.push_back({e.from, e.kind});
  std::sort(toExit.begin(), toExit.end());
  std::sort(exitPreds.begin(), exitPreds.end());
  if (toExit != exitPreds) return "outs and the exit's preds do not mirror each other";

  const analysis::Graph g = analysis::procedureGraph(p);
  const analysis::DomTree dom = analysis::dominators(g, 0);
  if (dom.idom[0] != 0) return "the entry is not the root";
  for (uint32_t b = 0; b <= n; ++b) {
    if (!dom.reachable(b) || b == 0) continue;
    // Walking up the tree reaches the root in fewer than n + 1 steps, one level at a time.
    uint32_t v = b, steps = 0;
    while (v != 0 && steps <= n) {
      const uint32_t up = dom.idom[v];
      if (up == analysis::kNoNode || !dom.reachable(up) || dom.level[v] != dom.level[up] + 1)
        return "idom chain of block " + std::to_string(b) + " is broken";
      v = up, ++steps;
    }
    if (v != 0) return "idom chain of block " + std::to_string(b) + " does not reach the entry";
    for (uint32_t pr : g.preds[b])
      if (dom.reachable(pr) && !dom.dominates(dom.idom[b], pr))
        return "idom of " + std::to_string(b) + " does not dominate its pred " + std::to_string(pr);
  }
  const analysis::PostDominators post = analysis::postDominators(g, exit);
  for (uint32_t b = 0; b <= n; ++b)
    if (!post.tree.reachable(b)) return "block " + std::to_string(b) + " has no post-dominator";
  const std::vector<bool> reachesExit = analysis::reachableFrom(g.reversed(), exit);
  for (uint32_t b = 0; b < n; ++b) totals.stuckBlocks += !reachesExit[b];
  const analysis::LoopForest loops = analysis::naturalLoops(g, dom);
  for (const analysis::Loop& l : loops.loops)
    for (uint32_t v : l.body)
      if (!dom.dominates(l.header, v)) return "loop header " + std::to_string(l.header) + " does not dominate its body";

  if (n <= kNaiveLimit) {
    ++totals.naive;
    if (std::string e = oracle::checkDomTree(g, dom); !e.empty()) return "dominators: " + e;
    analysis::Graph withArtificial = g;
    for (uint32_t v : post.artificial) withArtificial.addEdge(v, exit);
    if (std::string e = oracle::checkDomTree(withArtificial.reversed(), post.tree); !e.empty())
      return "post-dominators: " + e;
    if (std::string e = oracle::checkLoops(g, 0, loops); !e.empty()) return "loops: " + e;
  }
  const analysis::TraceGraph tg = analysis::traceGraph(p);
  const analysis::WitnessPlan plan = analysis::placeWitnesses(p, tg);
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> instrumented;
  for (size_t k = 0; k < tg.arcs.size(); ++k)
    if (plan.witness[k] >= 0) {
      if (uint64_t(plan.witness[k]) >= (plan.width == 1 ? 256u : 65536u)) return "a witness value does not fit its width";
      instrumented[{tg.arcs[k].from, tg.arcs[k].to}] = uint32_t(plan.witness[k]);
    }
  if (std::vector<std::string> problems = analysis::tracingProblems(p, instrumented); !problems.empty())
    return "witnesses: " + problems[0] + " (" + std::to_string(problems.size()) + " problems)";
  if (std::string e = checkCounterPlacement(p, totals); !e.empty()) return e;
  totals.arcs += tg.arcs.size();
  totals.witnesses += plan.count;
  totals.blocking += plan.blocking;
  totals.wideProcs += plan.width > 1;
  totals.maxWitnesses = std::max<size_t>(totals.maxWitnesses, plan.count);
  totals.procs++;
  totals.blocks += n;
  totals.loops += loops.loops.size();
  return "";
}

void checkPrograms(const std::vector<fs::path>& binaries, Totals& totals) {
  for (const fs::path& bin : binaries) {
    std::unique_ptr<elf::ElfImage> image;
    std::unique_ptr<rewrite::Rewriter> rewriter;
    try {
      image = std::make_unique<elf::ElfImage>(elf::ElfImage::load(bin.string()));
      rewriter = std::make_unique<rewrite::Rewriter>(*image);
      rewriter->analyze();
    } catch (const std::exception& e) {
      ++totals.skipped;  // an input atomx refuses (no relocations, a shared object)
      continue;
    }
    ++totals.programs;
    for (const ir::Procedure& p : rewriter->program().procs) {
      if (p.blocks.empty()) continue;
      const std::string problem = checkProcedure(p, totals);
      EXPECT_EQ(problem, "") << bin.string() << ": " << p.name;
    }
  }
}

void print(const char* what, const Totals& t) {
  std::printf("%s: %zu programs (%zu refused), %zu procedures, %zu blocks, %zu natural loops, "
              "%zu procedures also checked by the definitions, %zu blocks that never reach the exit\n",
              what, t.programs, t.skipped, t.procs, t.blocks, t.loops, t.naive, t.stuckBlocks);
  std::printf("  edges:");
  for (const auto& [kind, count] : t.edges) std::printf(" %s %zu", kind.c_str(), count);
  std::printf("\n  witnesses: %zu on %zu arcs (%.1f%%), %zu of them blocking; at most %zu in a procedure, "
              "%zu procedures need 2-byte witnesses\n",
              t.witnesses, t.arcs, t.arcs ? 100.0 * double(t.witnesses) / double(t.arcs) : 0.0, t.blocking,
              t.maxWitnesses, t.wideProcs);
  std::printf("  counters: %zu on %zu count-graph edges (%.1f%%), every known edge derived right on %zu random walks; "
              "%zu procedures count every block (jump tables share targets), %zu edges there not known\n",
              t.chords, t.countEdges, t.countEdges ? 100.0 * double(t.chords) / double(t.countEdges) : 0.0, t.walks,
              t.everyBlockProcs, t.unknownEdges);
}

std::vector<fs::path> executablesUnder(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::recursive_directory_iterator(dir, ec))
    if (isElfExecutable(entry.path()) && entry.path().filename().string().find(".so") == std::string::npos)
      out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Checks every program under `dir`; returns the totals, or skips the test
// when there is none.
Totals checkDirectory(const char* label, const fs::path& dir) {
  Totals t;
  std::vector<fs::path> bins = executablesUnder(dir);
  if (bins.empty()) return t;
  checkPrograms(bins, t);
  print(label, t);
  EXPECT_GT(t.procs, 0u);
  return t;
}

TEST(CfgCorpus, TestPrograms) {
  const fs::path self = fs::read_symlink("/proc/self/exe");
  fs::path dir = self.parent_path() / "tests" / "programs";
  if (!fs::is_directory(dir)) dir = self.parent_path().parent_path() / "tests" / "programs";
  const Totals t = checkDirectory("test programs", dir);
  if (t.programs == 0) GTEST_SKIP() << "no test programs under " << dir;
  EXPECT_GT(t.loops, 0u);
}

TEST(CfgCorpus, CorpusPrograms) {
  // corpus/build.sh's place: $ATOMX_CORPUS_DIR, else ~/.cache/atomx-corpus.
  const char* own = std::getenv("ATOMX_CORPUS_DIR");
  const char* home = std::getenv("HOME");
  const fs::path dir = own && *own ? fs::path(own) / "bin"
                                   : fs::path(home ? home : "/nonexistent") / ".cache" / "atomx-corpus" / "bin";
  if (checkDirectory("corpus", dir).programs == 0) GTEST_SKIP() << "no corpus at " << dir;
}

}  // namespace
}  // namespace atomx
