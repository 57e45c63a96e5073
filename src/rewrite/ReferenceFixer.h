// ReferenceFixer: the one place that makes every reference to moved code
// point at its new address.
//
// It patches, in the output file's bytes: absolute and self-relative code
// pointers in data (from --emit-relocs relocations), jump-table words,
// dynamic relocation addends (R_X86_64_RELATIVE / IRELATIVE) and the words
// they apply to, GOT slots of moved functions, branches and RIP-relative
// operands in code that stays in place, symbol values and sizes (.symtab and
// .dynsym), the entry point and DT_INIT/DT_FINI.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/RelocIndex.h"
#include "elf/PatchedFile.h"
#include "ir/Program.h"
#include "layout/CodeLayout.h"

namespace atomx::rewrite {

struct FixupStats {
  uint64_t dataPointers = 0;
  uint64_t jumpTableEntries = 0;
  uint64_t dynamicRelocations = 0;
  uint64_t gotSlots = 0;
  uint64_t unmovedCodePatches = 0;
  uint64_t symbols = 0;
};

class ReferenceFixer {
 public:
  ReferenceFixer(const ir::Program& program, const layout::CodeLayout& layout, const analysis::RelocIndex& relocs,
                 elf::PatchedFile& file)
      : program_(program), image_(*program.image), layout_(layout), relocs_(relocs), file_(file) {}

  // newTextSection: the section index the moved procedures' symbols get.
  FixupStats run(uint16_t newTextSection);

 private:
  void fixDataRelocations();
  void fixJumpTables();
  void fixDynamicRelocations();
  void fixGotSlots();
  void fixUnmovedCode();
  void fixSymbols(uint16_t newTextSection);
  void fixEntryPoints();

  uint64_t read(uint64_t vaddr, unsigned width) const;
  void write(uint64_t vaddr, uint64_t value, unsigned width);
  bool inFile(uint64_t vaddr, unsigned width) const { return image_.fileOffsetOf(vaddr, width).has_value(); }

  const ir::Program& program_;
  const elf::ElfImage& image_;
  const layout::CodeLayout& layout_;
  const analysis::RelocIndex& relocs_;
  elf::PatchedFile& file_;
  FixupStats stats_;
};

}  // namespace atomx::rewrite
