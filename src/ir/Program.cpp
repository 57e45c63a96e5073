#include "ir/Program.h"

#include <algorithm>

#include "support/Hex.h"

namespace atomx::ir {

const char* edgeKindName(EdgeKind kind) {
  switch (kind) {
    case EdgeKind::FallThrough: return "fall";
    case EdgeKind::Taken: return "taken";
    case EdgeKind::JumpTable: return "table";
    case EdgeKind::Call: return "call";
    case EdgeKind::Return: return "return";
    case EdgeKind::TailCall: return "tail";
    case EdgeKind::Exit: return "exit";
    case EdgeKind::Stop: return "stop";
    case EdgeKind::UnknownIndirect: return "unknown";
  }
  return "?";
}

const char* procStateName(ProcState state) {
  switch (state) {
    case ProcState::Discovered: return "discovered";
    case ProcState::Disassembled: return "disassembled";
    case ProcState::CfgBuilt: return "cfg";
    case ProcState::Movable: return "movable";
    case ProcState::Unmovable: return "unmovable";
  }
  return "?";
}

int64_t Procedure::insnIndexAt(uint64_t addr) const {
  if (!insns.empty() && insns.front().address == addr) return 0;  // the entry: calls, most references
  auto it = std::lower_bound(insns.begin(), insns.end(), addr,
                             [](const x86::Insn& i, uint64_t a) { return i.address < a; });
  if (it == insns.end() || it->address != addr) return -1;
  return it - insns.begin();
}

int64_t Procedure::blockIndexAt(uint64_t addr) const {
  auto it = std::upper_bound(blocks.begin(), blocks.end(), addr,
                             [](uint64_t a, const Block& b) { return a < b.start; });
  if (it == blocks.begin()) return -1;
  --it;
  if (addr >= it->end) return -1;
  return it - blocks.begin();
}

void Procedure::markUnmovable(std::string why) {
  if (state == ProcState::Unmovable) return;  // keep the first reason
  state = ProcState::Unmovable;
  reason = std::move(why);
}

void Program::indexProcedures() {
  procStarts.resize(procs.size());
  for (size_t i = 0; i < procs.size(); ++i) procStarts[i] = procs[i].start;
}

Procedure* Program::procAt(uint64_t addr) {
  if (procStarts.size() == procs.size()) {
    auto at = std::upper_bound(procStarts.begin(), procStarts.end(), addr);
    if (at == procStarts.begin()) return nullptr;
    Procedure& p = procs[size_t(at - procStarts.begin()) - 1];
    return p.contains(addr) ? &p : nullptr;
  }
  auto it = std::upper_bound(procs.begin(), procs.end(), addr,
                             [](uint64_t a, const Procedure& p) { return a < p.start; });
  if (it == procs.begin()) return nullptr;
  --it;
  return it->contains(addr) ? &*it : nullptr;
}

const Procedure* Program::procAt(uint64_t addr) const {
  return const_cast<Program*>(this)->procAt(addr);
}

std::string Program::describe(uint64_t addr) const {
  if (auto it = pltNames.find(addr); it != pltNames.end()) return it->second;
  if (const Procedure* p = procAt(addr)) {
    if (addr == p->start) return p->name;
    return p->name + "+" + hex(addr - p->start);
  }
  return "";
}

}  // namespace atomx::ir
