#include "analysis/TracingCheck.h"

#include <cstdio>
#include <set>

namespace atomx::analysis {

namespace {

constexpr uint32_t kAny = UINT32_MAX;  // in a witness set: anything may come next

std::string node(uint32_t n, uint32_t exit, const ir::Procedure& proc) {
  if (n == exit) return "EXIT";
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(proc.blocks[n].start));
  return buf;
}

}  // namespace

std::vector<std::string> tracingProblems(const ir::Procedure& proc,
                                         const std::map<std::pair<uint32_t, uint32_t>, uint32_t>& instrumented,
                                         const std::vector<bool>& evaluated) {
  const uint32_t exit = uint32_t(proc.blocks.size());
  std::vector<std::set<uint32_t>> succ(exit + 1);
  std::vector<bool> writes(exit + 1, false), recordsTarget(exit + 1, false);
  writes[exit] = true;
  for (uint32_t b = 0; b < exit; ++b) {
    for (const ir::Edge& e : proc.blocks[b].succs) {
      succ[b].insert(e.to);
      if (e.kind == ir::EdgeKind::JumpTable) writes[b] = recordsTarget[b] = true;
    }
    for (const ir::OutEdge& e : proc.blocks[b].outs) {
      if (e.kind == ir::EdgeKind::Call || e.kind == ir::EdgeKind::Exit) writes[b] = true;
      if (e.kind != ir::EdgeKind::Call) succ[b].insert(exit);
    }
  }
  auto isPredicate = [&](uint32_t b) {
    return succ[b].size() >= 2 && !recordsTarget[b] && !(b < evaluated.size() && evaluated[b]);
  };
  auto value = [&](uint32_t a, uint32_t b) -> const uint32_t* {
    auto it = instrumented.find({a, b});
    return it == instrumented.end() ? nullptr : &it->second;
  };
  std::vector<std::string> problems;
  for (const auto& [arc, v] : instrumented)
    if (arc.first >= exit || !succ[arc.first].count(arc.second))
      problems.push_back("an instrumented edge " + node(arc.first, exit, proc) + " -> " + node(arc.second, exit, proc) +
                         " is no edge of the CFG");

  // witness(p, q) for every predicate's edges.
  std::vector<uint32_t> seen(exit + 1, UINT32_MAX);
  uint32_t walk = 0;
  for (uint32_t p = 0; p < exit; ++p) {
    if (!isPredicate(p)) continue;
    std::vector<std::pair<uint32_t, std::set<uint32_t>>> sets;
    for (uint32_t q : succ[p]) {
      std::set<uint32_t> w;
      if (const uint32_t* v = value(p, q)) {
        w.insert(*v);
      } else {
        ++walk;
        std::vector<uint32_t> stack{q};
        while (!stack.empty()) {
          const uint32_t x = stack.back();
          stack.pop_back();
          if (seen[x] == walk) continue;
          seen[x] = walk;
          if (writes[x]) {
            w.insert(kAny);
            break;
          }
          for (uint32_t y : succ[x]) {
            if (const uint32_t* v = value(x, y)) w.insert(*v);
            else stack.push_back(y);
          }
        }
      }
      if (w.count(kAny))
        problems.push_back("predicate " + node(p, exit, proc) + ": after its edge to " + node(q, exit, proc) +
                           " something other than its own witness may come next (a call, a recorded jump or the exit"
                           " is reached with no witness)");
      sets.emplace_back(q, std::move(w));
    }
    for (size_t i = 0; i < sets.size(); ++i)
      for (size_t j = i + 1; j < sets.size(); ++j)
        for (uint32_t v : sets[i].second)
          if (v != kAny && sets[j].second.count(v)) {
            problems.push_back("predicate " + node(p, exit, proc) + ": witness " + std::to_string(v) +
                               " may follow both its edge to " + node(sets[i].first, exit, proc) + " and to " +
                               node(sets[j].first, exit, proc));
            break;
          }
  }

  // Witness-free cycles through a predicate: a predicate that reaches itself
  // again along witness-free edges.  (Nodes that write to the stream break
  // no cycle here: a callee may write nothing.)
  for (uint32_t p = 0; p < exit; ++p) {
    if (!isPredicate(p)) continue;
    ++walk;
    std::vector<uint32_t> stack;
    for (uint32_t y : succ[p])
      if (!value(p, y)) stack.push_back(y);
    bool cycle = false;
    while (!stack.empty() && !cycle) {
      const uint32_t x = stack.back();
      stack.pop_back();
      if (x == p) cycle = true;
      if (seen[x] == walk || x == exit) continue;
      seen[x] = walk;
      for (uint32_t y : succ[x])
        if (!value(x, y)) stack.push_back(y);
    }
    if (cycle) problems.push_back("predicate " + node(p, exit, proc) + " lies on a cycle with no witness");
  }
  return problems;
}

}  // namespace atomx::analysis
