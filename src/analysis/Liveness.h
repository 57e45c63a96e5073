// Backward liveness over one procedure's blocks: the data flow that
// FlagsLiveness (status flags) and RegisterLiveness (general registers)
// share.  A Set is any value with |, & and ~ (uint8_t, uint16_t); each
// instruction has the Transfer of what it reads and what it always
// overwrites; liveOut(block, successors, fallThrough) says what is live after
// a block's last instruction, given the union of its successors' live-in
// sets and whether one of its edges is a fall-through, by the analysis' rule
// for control that leaves the procedure.  The result: what is live right before
// each instruction (an index in proc.insns).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/Program.h"

namespace atomx::analysis {

template <class Set>
struct Transfer {
  Set reads{};
  Set kills{};  // always overwritten
};

template <class Set, class LiveOut>
std::vector<Set> liveBefore(const ir::Procedure& proc, const std::vector<Transfer<Set>>& transfer, LiveOut liveOut) {
  const size_t n = proc.blocks.size();
  std::vector<Set> liveIn(n, Set{});
  auto through = [&](Set live, uint32_t i) { return Set((live & Set(~transfer[i].kills)) | transfer[i].reads); };
  auto out = [&](const ir::Block& b) {
    Set successors{};
    bool fallThrough = false;
    for (const ir::Edge& e : b.succs) {
      successors |= liveIn[e.to];
      fallThrough |= e.kind == ir::EdgeKind::FallThrough;
    }
    return Set(liveOut(b, successors, fallThrough));
  };
  // To a fixed point; blocks in reverse address order converge in a few rounds.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = n; k-- > 0;) {
      const ir::Block& b = proc.blocks[k];
      Set live = out(b);
      for (uint32_t i = b.firstInsn + b.insnCount; i-- > b.firstInsn;) live = through(live, i);
      if (live != liveIn[k]) liveIn[k] = live, changed = true;
    }
  }
  std::vector<Set> before(proc.insns.size(), Set(~Set{}));
  for (size_t k = 0; k < n; ++k) {
    const ir::Block& b = proc.blocks[k];
    Set live = out(b);
    for (uint32_t i = b.firstInsn + b.insnCount; i-- > b.firstInsn;) before[i] = live = through(live, i);
  }
  return before;
}

}  // namespace atomx::analysis
