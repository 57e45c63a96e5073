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

class CodeLayout;

// Code to place around original instructions (instrumentation).  The layout
// asks for sizes first and for the bytes once addresses are final; the bytes
// must have exactly those sizes.  The layout works on several procedures at
// once, so these are called from several threads: they must only read.
//   - before(i): translate() of the instruction's old address gives the start
//     of this code, so branches to the instruction, unwind rows and call-site
//     ranges all include it.  Nothing may be inserted before an endbr64:
//     indirect branches must still land on it (CET), so a provider puts such
//     code after it instead.
//   - after(i): runs only when instruction i falls through (or a call
//     returns); branches to instruction i+1 skip it.
//   - the tail: code after a procedure's last instruction (edge stubs).  A
//     direct branch can be redirected into the tail (takenEdge), and so can a
//     jump-table entry (tableEdge); the stub then jumps on to the target.
class Insertions {
 public:
  virtual ~Insertions() = default;
  virtual uint32_t sizeBefore(const ir::Procedure& proc, size_t insn) const = 0;
  virtual void emitBefore(const ir::Procedure& proc, size_t insn, uint64_t at, std::vector<uint8_t>& out) const = 0;
  virtual uint32_t sizeAfter(const ir::Procedure&, size_t) const { return 0; }
  virtual void emitAfter(const ir::Procedure&, size_t, uint64_t, std::vector<uint8_t>&) const {}
  virtual uint32_t sizeTail(const ir::Procedure&) const { return 0; }
  virtual void emitTail(const ir::Procedure&, uint64_t, const CodeLayout&, std::vector<uint8_t>&) const {}
  // Offset in the tail where direct branch `insn` now goes, or nullopt.
  virtual std::optional<uint32_t> takenEdge(const ir::Procedure&, size_t) const { return std::nullopt; }
  // Offset in the tail where jump-table entries for `target` now go, or nullopt.
  virtual std::optional<uint32_t> tableEdge(const ir::Procedure&, uint64_t) const { return std::nullopt; }
};

// The check mode --pad-instructions N: N one-byte nops before every
// instruction.  It exercises everything inserted code needs (relaxation over
// longer distances, unwind rows and call sites that move apart) without
// changing what the program does.
class NopPadding : public Insertions {
 public:
  explicit NopPadding(uint32_t bytes) : bytes_(bytes) {}
  uint32_t sizeBefore(const ir::Procedure& proc, size_t insn) const override {
    return proc.insns[insn].mnemonic == ZYDIS_MNEMONIC_ENDBR64 ? 0 : bytes_;
  }
  void emitBefore(const ir::Procedure&, size_t, uint64_t, std::vector<uint8_t>& out) const override {
    out.insert(out.end(), bytes_, 0x90);
  }

 private:
  uint32_t bytes_;
};

struct MovedProc {
  uint32_t proc = 0;            // index in Program::procs
  uint64_t newStart = 0;
  uint64_t newEnd = 0;          // after the last byte, stitching jump included
  std::vector<uint32_t> offset; // per instruction: start of its new code (inserted code first) - newStart
  std::vector<uint32_t> inserted; // per instruction: bytes inserted before it (empty: none)
  std::vector<uint32_t> after;    // per instruction: bytes inserted after it (empty: none)
  uint32_t tailOffset = 0;        // where the tail starts (after the stitching jump)
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

  CodeLayout(const ir::Program& program, uint64_t baseAddress, const Insertions* insertions = nullptr);

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
  // Like translate(), but an address that starts no instruction and equals a
  // moved procedure's end maps to that procedure's new end (a jump-table
  // target just past the last byte).
  std::optional<uint64_t> translateEnd(uint64_t oldEnd) const;
  // Where a jump-table entry of `proc` that held `target` must now point.
  std::optional<uint64_t> translateTableEntry(const ir::Procedure& proc, uint64_t target) const;
  // translate() or the address itself.
  uint64_t relocated(uint64_t oldAddress) const { return translate(oldAddress).value_or(oldAddress); }

 private:
  void assignAddresses();
  bool relax();
  void resolveTargets();
  void emitProc(const MovedProc& m, const analysis::RelocIndex& relocs, std::vector<uint8_t>& out) const;
  void emitAfter(const MovedProc& m, const ir::Procedure& proc, size_t i, std::vector<uint8_t>& out) const;
  // Where instruction i's new code starts (the code inserted before it first):
  // what translate() answers.
  static uint64_t codeStart(const MovedProc& m, size_t i) { return m.newStart + m.offset[i]; }
  // New address of the instruction itself (after the code inserted before it).
  static uint64_t insnAddress(const MovedProc& m, size_t i) {
    return codeStart(m, i) + (m.inserted.empty() ? 0 : m.inserted[i]);
  }
  // New address of insns[i]'s target (translated if it moved).
  uint64_t newTarget(const MovedProc& m, size_t i, const x86::Insn& insn) const {
    if (insertions_ && insn.isDirectBranch())
      if (auto off = insertions_->takenEdge(program_.procs[m.proc], i)) return m.newStart + m.tailOffset + *off;
    const MovedProc::Target& t = m.targets[i];
    return t.moved < 0 ? insn.target : codeStart(moved_[t.moved], t.insn);
  }

  const ir::Program& program_;
  uint64_t base_;
  const Insertions* insertions_;
  uint64_t size_ = 0;
  std::vector<MovedProc> moved_;
  std::vector<int32_t> movedIndex_;  // per procedure: index in moved_ or -1
};

}  // namespace atomx::layout
