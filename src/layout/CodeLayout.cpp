#include "layout/CodeLayout.h"

#include <atomic>
#include <cstring>

#include "support/Error.h"
#include "support/Hex.h"
#include "support/Parallel.h"

namespace atomx::layout {

namespace {

bool canFallOffEnd(const x86::Insn& last) { return last.fallsThrough(); }

void put(std::vector<uint8_t>& out, size_t at, uint64_t value, unsigned width) {
  for (unsigned i = 0; i < width; ++i) out[at + i] = uint8_t(value >> (8 * i));
}

}  // namespace

CodeLayout::CodeLayout(const ir::Program& program, uint64_t baseAddress, const Insertions* insertions)
    : program_(program), base_(baseAddress), insertions_(insertions), movedIndex_(program.procs.size(), -1) {
  for (const ir::Procedure& proc : program.procs) {
    if (!proc.isMovable()) continue;
    movedIndex_[proc.id] = int32_t(moved_.size());
    moved_.emplace_back().proc = proc.id;
  }
  // Each procedure's tables are its own: fill them on every core.
  parallelFor(moved_.size(), [&](size_t k) {
    MovedProc& m = moved_[k];
    const ir::Procedure& proc = program.procs[m.proc];
    m.offset.resize(proc.insns.size());
    m.form.resize(proc.insns.size(), x86::BranchForm::Long);
    for (size_t i = 0; i < proc.insns.size(); ++i) {
      if (proc.insns[i].relSize == 1) m.form[i] = x86::BranchForm::Short;
    }
    m.needsStitch = canFallOffEnd(proc.insns.back());
    if (insertions_) {
      m.inserted.resize(proc.insns.size());
      m.after.resize(proc.insns.size());
      for (size_t i = 0; i < proc.insns.size(); ++i) {
        m.inserted[i] = insertions_->sizeBefore(proc, i);
        m.after[i] = insertions_->sizeAfter(proc, i);
      }
    }
  });
}

const MovedProc* CodeLayout::movedProc(uint32_t procIndex) const {
  int32_t i = movedIndex_[procIndex];
  return i < 0 ? nullptr : &moved_[i];
}

// Each procedure's size and offsets depend on its own branch forms only
// (every core), its place on the sizes before it (in order).
void CodeLayout::assignAddresses() {
  std::vector<uint64_t> sizes(moved_.size());
  parallelFor(moved_.size(), [&](size_t k) {
    MovedProc& m = moved_[k];
    const ir::Procedure& proc = program_.procs[m.proc];
    uint64_t off = 0;
    for (size_t i = 0; i < proc.insns.size(); ++i) {
      m.offset[i] = uint32_t(off);
      if (!m.inserted.empty()) off += m.inserted[i];
      const x86::Insn& insn = proc.insns[i];
      off += insn.isDirectBranch() ? x86::branchSize(insn, m.form[i]) : insn.length;
      if (!m.after.empty()) off += m.after[i];
    }
    if (m.needsStitch) off += 5;
    m.tailOffset = uint32_t(off);
    if (insertions_) off += insertions_->sizeTail(proc);
    sizes[k] = off;
  });
  uint64_t at = base_;
  for (size_t k = 0; k < moved_.size(); ++k) {
    MovedProc& m = moved_[k];
    const uint64_t want = program_.procs[m.proc].start % kAlignment;
    at += (want - at % kAlignment + kAlignment) % kAlignment;
    m.newStart = at;
    m.newEnd = m.newStart + sizes[k];
    at = m.newEnd;
  }
  size_ = at - base_;
}

// A branch's form changes only its own procedure's offsets, which no other
// procedure's check reads before the next assignAddresses().
bool CodeLayout::relax() {
  std::atomic<bool> changed{false};
  parallelFor(moved_.size(), [&](size_t k) {
    MovedProc& m = moved_[k];
    const ir::Procedure& proc = program_.procs[m.proc];
    for (size_t i = 0; i < proc.insns.size(); ++i) {
      const x86::Insn& insn = proc.insns[i];
      if (!insn.isDirectBranch() || m.form[i] == x86::BranchForm::Long) continue;
      if (!x86::branchReaches(insn, m.form[i], insnAddress(m, i), newTarget(m, i, insn))) {
        m.form[i] = x86::BranchForm::Long;
        changed.store(true, std::memory_order_relaxed);
      }
    }
  });
  return changed;
}

void CodeLayout::resolveTargets() {
  parallelFor(moved_.size(), [&](size_t k) {
    MovedProc& m = moved_[k];
    const ir::Procedure& proc = program_.procs[m.proc];
    m.targets.resize(proc.insns.size());
    // Most targets are in the procedure itself (its own branches): the
    // instruction starting at each of its bytes, in a table this thread reuses.
    thread_local std::vector<int32_t> insnAt;
    insnAt.assign(proc.size(), -1);
    for (size_t i = 0; i < proc.insns.size(); ++i) insnAt[proc.insns[i].address - proc.start] = int32_t(i);
    for (size_t i = 0; i < proc.insns.size(); ++i) {
      const x86::Insn& insn = proc.insns[i];
      if (!insn.isDirectBranch() && !insn.isRipRelative()) continue;
      int64_t index = -1;
      const ir::Procedure* target = &proc;
      if (proc.contains(insn.target)) {
        index = insnAt[insn.target - proc.start];
      } else {
        target = program_.procAt(insn.target);
        if (!target || !movedProc(target->id)) continue;
        index = target->insnIndexAt(insn.target);
      }
      if (index < 0) continue;
      m.targets[i] = {movedIndex_[target->id], uint32_t(index)};
    }
  });
}

void CodeLayout::run() {
  resolveTargets();
  do assignAddresses();
  while (relax());
}

std::optional<uint64_t> CodeLayout::translate(uint64_t oldAddress) const {
  const ir::Procedure* proc = program_.procAt(oldAddress);
  if (!proc) return std::nullopt;
  const MovedProc* m = movedProc(proc->id);
  if (!m) return std::nullopt;
  const int64_t i = proc->insnIndexAt(oldAddress);
  if (i < 0) return std::nullopt;
  return codeStart(*m, size_t(i));
}

std::optional<uint64_t> CodeLayout::translateEnd(uint64_t oldEnd) const {
  // An instruction that starts there wins: the end of one procedure is often
  // the start of the next.
  if (auto t = translate(oldEnd)) return t;
  if (const ir::Procedure* proc = program_.procAt(oldEnd - 1); proc && proc->end == oldEnd)
    if (const MovedProc* m = movedProc(proc->id)) return m->newEnd;
  return std::nullopt;
}

void CodeLayout::emitAfter(const MovedProc& m, const ir::Procedure& proc, size_t i, std::vector<uint8_t>& out) const {
  if (m.after.empty() || !m.after[i]) return;
  const size_t before = out.size();
  insertions_->emitAfter(proc, i, m.newStart + before, out);
  if (out.size() - before != m.after[i])
    throw InternalError("code inserted after " + hex(proc.insns[i].address) + " has the wrong size");
}

std::optional<uint64_t> CodeLayout::translateTableEntry(const ir::Procedure& proc, uint64_t target) const {
  if (insertions_)
    if (const MovedProc* m = movedProc(proc.id))
      if (auto off = insertions_->tableEdge(proc, target)) return m->newStart + m->tailOffset + *off;
  return translateEnd(target);
}

// Every procedure's code on its own (every core), into its place in the
// whole; the gaps between procedures are int3.
std::vector<uint8_t> CodeLayout::emit(const analysis::RelocIndex& relocs) const {
  std::vector<uint8_t> whole(size_, 0xcc);
  parallelFor(moved_.size(), [&](size_t k) {
    const MovedProc& m = moved_[k];
    std::vector<uint8_t> out;
    out.reserve(m.newEnd - m.newStart);
    emitProc(m, relocs, out);
    std::memcpy(whole.data() + (m.newStart - base_), out.data(), out.size());
  });
  return whole;
}

// One procedure's new code, from its start (`out` starts empty).
void CodeLayout::emitProc(const MovedProc& m, const analysis::RelocIndex& relocs, std::vector<uint8_t>& out) const {
  const elf::ElfImage& image = *program_.image;
  const ir::Procedure& proc = program_.procs[m.proc];
  const uint8_t* old = image.bytesAt(proc.start, proc.size());
  auto [nextReloc, procRelocsEnd] = relocs.in(proc.start, proc.end);
  for (size_t i = 0; i < proc.insns.size(); ++i) {
    const x86::Insn& insn = proc.insns[i];
    if (!m.inserted.empty() && m.inserted[i]) {
      const size_t before = out.size();
      insertions_->emitBefore(proc, i, m.newStart + before, out);
      if (out.size() - before != m.inserted[i])
        throw InternalError("inserted code before " + hex(insn.address) + " has the wrong size");
    }
    const uint64_t at = insnAddress(m, i);
    if (out.size() != at - m.newStart) throw InternalError("layout out of step at " + hex(insn.address));
    if (insn.isDirectBranch()) {
      x86::encodeBranch(insn, m.form[i], at, newTarget(m, i, insn), out);
      emitAfter(m, proc, i, out);
      continue;
    }
    const size_t pos = out.size();
    out.insert(out.end(), old + (insn.address - proc.start), old + (insn.address - proc.start) + insn.length);
    if (insn.isRipRelative()) {
      const int64_t disp = int64_t(newTarget(m, i, insn) - (at + insn.length));
      if (disp < INT32_MIN || disp > INT32_MAX)
        throw UnsupportedError("RIP-relative operand at " + hex(insn.address) + " cannot reach " + hex(insn.target) +
                               " from the new code");
      put(out, pos + insn.dispOffset, uint64_t(disp), 4);
    }
    // Absolute code addresses in immediates or displacements (non-PIE code).
    while (nextReloc != procRelocsEnd && (*nextReloc)->place < insn.address) ++nextReloc;
    for (; nextReloc != procRelocsEnd && (*nextReloc)->place < insn.end(); ++nextReloc) {
      const elf::Relocation& r = **nextReloc;
      if (!analysis::isAbsoluteAddress(r.type)) continue;
      const unsigned width = analysis::relocationWidth(r.type);
      // The field holds S + A unless the linker redirected it (an IFUNC's
      // canonical address is its PLT entry): then it is not our business.
      uint64_t stored = 0;
      std::memcpy(&stored, out.data() + pos + (r.place - insn.address), width);
      if (!analysis::fieldRefersTo(r.type, r.place, stored, r.symValue + r.addend)) continue;
      auto target = translate(r.symValue + r.addend);
      if (!target) continue;
      put(out, pos + (r.place - insn.address), analysis::relocatedField(r, *target), width);
    }
    emitAfter(m, proc, i, out);
  }
  if (m.needsStitch) x86::encodeJump32(m.newStart + out.size(), relocated(proc.end), out);
  if (out.size() != m.tailOffset) throw InternalError("layout out of step at the end of " + proc.name);
  if (insertions_) insertions_->emitTail(proc, m.newStart + out.size(), *this, out);
  if (out.size() != m.newEnd - m.newStart) throw InternalError("layout size mismatch in " + proc.name);
}

}  // namespace atomx::layout
