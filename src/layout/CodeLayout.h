// CodeLayout: where every moved instruction goes, and its new bytes.
//
// Moved procedures keep their order and their instructions' order.  Each new
// procedure starts at the same offset modulo 32 as the old one, so the
// compiler's alignment of loops and functions survives the move.  All bytes
// are copied except branch displacements (re-encoded, growing from rel8 to
// rel32 until every branch reaches: relaxation) and RIP-relative disp32 fields
// (recomputed to reach the same data).  A procedure whose last instruction
// could fall through gets a `jmp` to wherever its old end leads now.
//
// CodeLayout owns the old -> new address map: translate() is the one place
// that answers "where did this original address go?".
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/RelocIndex.h"
#include "ir/Program.h"
#include "x86/BranchEncoder.h"

namespace atomx::layout {

struct MovedProc {
  uint32_t proc = 0;            // index in Program::procs
  uint64_t newStart = 0;
  uint64_t newEnd = 0;          // after the last byte, stitching jump included
  std::vector<uint32_t> offset; // per instruction: new address - newStart
  std::vector<x86::BranchForm> form;
  // Per instruction with a target (branch or RIP-relative operand) that lies
  // in moved code: where that target is, resolved once (moved = -1 otherwise).
  struct Target {
    int32_t moved = -1;  // index in CodeLayout::moved()
    uint32_t insn = 0;
  };
  std::vector<Target> targets;
  bool needsStitch = false;
};

class CodeLayout {
 public:
  static constexpr uint64_t kAlignment = 32;

  CodeLayout(const ir::Program& program, uint64_t baseAddress);

  // Assigns addresses and relaxes branches until every branch reaches.
  void run();
  // The new code, to be loaded at baseAddress().
  std::vector<uint8_t> emit(const analysis::RelocIndex& relocs) const;

  uint64_t baseAddress() const { return base_; }
  uint64_t size() const { return size_; }
  const std::vector<MovedProc>& moved() const { return moved_; }
  // The moved procedure for Program::procs[i], or nullptr if it stayed.
  const MovedProc* movedProc(uint32_t procIndex) const;

  // New address of an original instruction boundary in moved code; nullopt
  // for addresses that did not move.
  std::optional<uint64_t> translate(uint64_t oldAddress) const;
  // Like translate(), but an address equal to a moved procedure's end maps to
  // that procedure's new end (for ranges: FDEs, call sites, symbol sizes).
  std::optional<uint64_t> translateEnd(uint64_t oldEnd) const;
  // translate() or the address itself.
  uint64_t relocated(uint64_t oldAddress) const { return translate(oldAddress).value_or(oldAddress); }

 private:
  void assignAddresses();
  bool relax();
  void resolveTargets();
  // New address of insns[i]'s target (translated if it moved).
  uint64_t newTarget(const MovedProc& m, size_t i, const x86::Insn& insn) const {
    const MovedProc::Target& t = m.targets[i];
    return t.moved < 0 ? insn.target : moved_[t.moved].newStart + moved_[t.moved].offset[t.insn];
  }

  const ir::Program& program_;
  uint64_t base_;
  uint64_t size_ = 0;
  std::vector<MovedProc> moved_;
  std::vector<int32_t> movedIndex_;  // per procedure: index in moved_ or -1
};

}  // namespace atomx::layout
