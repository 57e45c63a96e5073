#include "analysis/JumpTables.h"

#include <cstring>
#include <map>
#include <set>
#include <algorithm>

#include "support/Hex.h"

namespace atomx::analysis {

namespace {

struct Candidate {
  uint64_t base;
  uint32_t proc;
  bool relative;
  uint64_t referencedAt;  // the instruction that holds the base
};

bool sameFamily(const ir::Program& program, const ir::Procedure& a, const ir::Procedure& b) {
  return a.id == b.id || a.hotPart == int32_t(b.id) || b.hotPart == int32_t(a.id) ||
         (a.hotPart >= 0 && a.hotPart == b.hotPart);
}

bool isCodeAddress(const elf::ElfImage& image, uint64_t addr) {
  const elf::Section* s = image.sectionAt(addr);
  return s && s->isExec();
}

// Whether the first word of a relative table at `base` points into code.
bool firstEntryIsCode(const elf::ElfImage& image, uint64_t base) {
  const uint8_t* word = image.bytesAt(base, 4);
  if (!word) return false;
  int32_t v;
  std::memcpy(&v, word, 4);
  return isCodeAddress(image, base + int64_t(v));
}

// The indirect jump reached from the instruction at `from` without passing
// any other control transfer (`lea table; movslq; add; jmp *` or
// `jmp *table(,%r,8)`), or 0.  A base loaded once before a loop and used by
// a dispatch elsewhere gives 0.
uint64_t straightLineJump(const ir::Procedure& proc, uint64_t from) {
  auto it = std::lower_bound(proc.insns.begin(), proc.insns.end(), from,
                             [](const x86::Insn& i, uint64_t a) { return i.end() <= a; });
  for (int steps = 0; it != proc.insns.end() && steps < 16; ++it, ++steps) {
    if (it->flow == x86::Flow::IndirectJump) return it->address;
    if (it->flow != x86::Flow::Sequential) return 0;
  }
  return 0;
}

}  // namespace

void findJumpTables(ir::Program& program, const RelocIndex& relocs) {
  const elf::ElfImage& image = *program.image;
  std::vector<Candidate> candidates;
  for (const ir::Procedure& proc : program.procs) {
    for (const x86::Insn& insn : proc.insns) {
      if (insn.isRipRelative() && insn.flow == x86::Flow::Sequential) {
        const elf::Relocation* r = relocs.at(insn.target);
        if (r && r->type == R_X86_64_PC32 && !isCodeAddress(image, insn.target) && image.sectionAt(insn.target))
          candidates.push_back({insn.target, proc.id, true, insn.address});
      }
    }
    // Absolute tables: a 32-bit absolute displacement that points at an
    // R_X86_64_64 word.
    auto [lo, hi] = relocs.in(proc.start, proc.end);
    for (auto it = lo; it != hi; ++it) {
      const elf::Relocation& r = **it;
      if (r.type != R_X86_64_32S && r.type != R_X86_64_32) continue;
      const uint64_t base = r.symValue + r.addend;
      const elf::Relocation* entry = relocs.at(base);
      if (entry && entry->type == R_X86_64_64 && !isCodeAddress(image, base))
        candidates.push_back({base, proc.id, false, r.place});
    }
  }
  std::set<uint64_t> bases;
  for (auto& c : candidates) bases.insert(c.base);

  // Per table and procedure, the jumps its references lead to (0: unknown).
  std::map<std::pair<uint64_t, uint32_t>, std::vector<uint64_t>> dispatches;
  for (const Candidate& c : candidates)
    dispatches[{c.base, c.proc}].push_back(straightLineJump(program.procs[c.proc], c.referencedAt));

  std::set<std::pair<uint64_t, uint32_t>> done;
  for (const Candidate& c : candidates) {
    if (!done.insert({c.base, c.proc}).second) continue;
    ir::Procedure& proc = program.procs[c.proc];
    const elf::Section* section = image.sectionAt(c.base);
    if (!section || !section->hasFileBytes()) continue;
    auto nextBase = bases.upper_bound(c.base);
    const uint64_t limit = std::min<uint64_t>(section->addr + section->size,
                                              nextBase == bases.end() ? UINT64_MAX : *nextBase);
    ir::JumpTable table;
    table.address = c.base;
    table.base = c.base;
    table.relative = c.relative;
    table.entrySize = c.relative ? 4 : 8;
    for (uint64_t place = c.base; place + table.entrySize <= limit; place += table.entrySize) {
      const elf::Relocation* r = relocs.at(place);
      if (!r || r->type != (c.relative ? R_X86_64_PC32 : R_X86_64_64)) break;
      const uint8_t* word = image.bytesAt(place, table.entrySize);
      if (!word) break;
      uint64_t target;
      if (c.relative) {
        int32_t v;
        std::memcpy(&v, word, 4);
        target = c.base + int64_t(v);
      } else {
        target = r->symValue + r->addend;
      }
      // A target may also be the very end of a procedure: clang points the
      // unreachable cases of a switch just past the function's last byte.
      const ir::Procedure* owner = program.procAt(target);
      if (!owner) owner = program.procAt(target - 1);
      if (!owner || !sameFamily(program, *owner, proc) || !owner->isBoundary(target)) break;
      table.entryTargets.push_back(target);
    }
    if (!table.entryTargets.empty()) {
      std::vector<uint64_t>& jumps = dispatches[{c.base, c.proc}];
      if (std::find(jumps.begin(), jumps.end(), 0) == jumps.end()) {
        std::sort(jumps.begin(), jumps.end());
        jumps.erase(std::unique(jumps.begin(), jumps.end()), jumps.end());
        table.dispatchJumps = jumps;
      }
      proc.jumpTables.push_back(std::move(table));
    } else if (c.relative && firstEntryIsCode(image, c.base) &&
               std::any_of(proc.insns.begin(), proc.insns.end(),
                           [](const x86::Insn& i) { return i.flow == x86::Flow::IndirectJump; })) {
      // A relative table into code whose words lead nowhere sensible: we
      // cannot tell where this procedure's indirect jumps go, nor fix the
      // words.  (Relative tables of data, e.g. clang's switch-to-lookup
      // tables of string offsets, need nothing; absolute words of any kind
      // are ordinary data relocations, fixed wherever they point.)
      proc.markUnmovable("indirect jump with a table at " + hex(c.base) + " that atomx cannot read");
    }
  }
}

}  // namespace atomx::analysis
