// Instruction and block identities for the melt miners (Melt.h): each
// distinct instruction (by address, or by its text) and each distinct block
// (its instructions' identities, in order) gets a dense id on first sight.
#pragma once

#include <atomx/trace.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "melt/Melt.h"

namespace atomx::elf {
class ElfImage;
}
namespace atomx::x86 {
class Decoder;
}

namespace atomx::melt {

// FNV-1a over a sequence of ids.
struct IdsHash {
  size_t operator()(const std::vector<uint32_t>& v) const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint32_t x : v) h = (h ^ x) * 0x100000001b3ull;
    return size_t(h);
  }
};

class Symbols {
 public:
  struct Block {
    std::vector<uint32_t> insns;  // instruction ids
    std::vector<uint64_t> pcs;    // of its first run
  };

  Symbols(Identity identity, const std::string& program);
  ~Symbols();

  // The block id of a run, and its instruction ids (valid until the next call).
  uint32_t block(const trace::BlockRun& run, const std::vector<uint32_t>** insns);

  const std::vector<Block>& blocks() const { return blocks_; }
  size_t instructionCount() const { return first_.size(); }
  // The first address seen for an instruction id, and its procedure.
  uint64_t pc(uint32_t insn) const { return first_[insn].pc; }
  const std::string& procedure(uint32_t insn) const { return procedures_[first_[insn].procedure]; }
  // The procedure of any address executed so far ("" for none).
  std::string procedureAt(uint64_t pc) const;
  // AT&T text of the instruction at `pc` (at its own address, as objdump
  // shows it; `atZero`: decoded as if at address 0, the text identity).
  std::string text(uint64_t pc, uint8_t length, bool atZero) const;
  uint8_t length(uint32_t insn) const { return first_[insn].length; }

 private:
  struct First {
    uint64_t pc;
    uint32_t procedure;
    uint8_t length;
  };
  struct KeyHash {
    size_t operator()(const std::pair<uint64_t, size_t>& k) const { return k.first * 0x9E3779B97F4A7C15ull ^ k.second; }
  };
  struct Cached {
    uint32_t id;
    std::vector<uint32_t> insns;
  };
  uint32_t instruction(const trace::Instruction& i, uint32_t procedure);

  Identity identity_;
  std::unique_ptr<elf::ElfImage> image_;
  std::unique_ptr<x86::Decoder> decoder_;
  std::unordered_map<std::pair<uint64_t, size_t>, Cached, KeyHash> byStart_;
  std::unordered_map<uint64_t, uint32_t> byPc_;
  std::unordered_map<uint64_t, uint32_t> procedureOfPc_;  // by text: every address's procedure
  std::unordered_map<std::string, uint32_t> byText_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, IdsHash> byInsns_;  // text identity's blocks
  std::vector<First> first_;
  std::vector<Block> blocks_;
  std::unordered_map<std::string, uint32_t> procedureIndex_;
  std::vector<std::string> procedures_;
};

}  // namespace atomx::melt
