#include "melt/Symbols.h"

#include "elf/ElfImage.h"
#include "x86/Decoder.h"

namespace atomx::melt {

Symbols::Symbols(Identity identity, const std::string& program)
    : identity_(identity),
      image_(std::make_unique<elf::ElfImage>(elf::ElfImage::load(program))),
      decoder_(std::make_unique<x86::Decoder>()) {}

Symbols::~Symbols() = default;

std::string Symbols::text(uint64_t pc, uint8_t length, bool atZero) const {
  const uint8_t* bytes = image_->bytesAt(pc, length);
  if (!bytes) return "(not in the program file)";
  return decoder_->format(bytes, length, atZero ? 0 : pc);
}

uint32_t Symbols::instruction(const trace::Instruction& i, uint32_t procedure) {
  uint32_t next = uint32_t(first_.size());
  uint32_t id;
  if (identity_ == Identity::Address) {
    id = byPc_.try_emplace(i.pc, next).first->second;
  } else {
    id = byText_.try_emplace(text(i.pc, i.length, true), next).first->second;
  }
  if (id == next) first_.push_back({i.pc, procedure, i.length});
  if (identity_ == Identity::Text) procedureOfPc_.emplace(i.pc, procedure);
  return id;
}

std::string Symbols::procedureAt(uint64_t pc) const {
  if (identity_ == Identity::Address) {
    auto it = byPc_.find(pc);
    return it == byPc_.end() ? "" : procedure(it->second);
  }
  auto it = procedureOfPc_.find(pc);
  return it == procedureOfPc_.end() ? "" : procedures_[it->second];
}

uint32_t Symbols::block(const trace::BlockRun& run, const std::vector<uint32_t>** insns) {
  // By the first instruction that ran: a block a signal cut runs in two
  // parts (the second continued), whose counts may be equal.
  auto [it, fresh] = byStart_.try_emplace({run.count ? run.insns[0].pc : run.start, run.count});
  Cached& c = it->second;
  if (fresh) {
    auto [p, newProc] = procedureIndex_.try_emplace(run.procedure, uint32_t(procedures_.size()));
    if (newProc) procedures_.push_back(run.procedure);
    c.insns.reserve(run.count);
    for (size_t k = 0; k < run.count; ++k) c.insns.push_back(instruction(run.insns[k], p->second));
    uint32_t next = uint32_t(blocks_.size());
    c.id = identity_ == Identity::Address ? next : byInsns_.try_emplace(c.insns, next).first->second;
    if (c.id == next) {
      Block b{c.insns, {}};
      for (size_t k = 0; k < run.count; ++k) b.pcs.push_back(run.insns[k].pc);
      blocks_.push_back(std::move(b));
    }
  }
  *insns = &c.insns;
  return c.id;
}

}  // namespace atomx::melt
