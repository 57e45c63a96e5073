// ElfWriter: the output file is the input file, patched in place, followed by
// new loadable segments, a new program header table (inside a new segment, so
// the loader sees it through PT_PHDR) and a new section header table.
// Nothing of the original file moves, so every data, bss, heap and stack
// address of the program stays what it was.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "elf/ElfImage.h"
#include "elf/PatchedFile.h"

namespace atomx::elf {

struct NewSection {
  std::string name;
  uint32_t type = SHT_PROGBITS;
  uint64_t flags = SHF_ALLOC;
  uint64_t offsetInSegment = 0;
  uint64_t size = 0;
  uint64_t align = 1;
};

struct NewSegment {
  uint32_t flags = PF_R;  // PF_R | PF_X ...
  uint64_t vaddr = 0;     // page aligned
  std::vector<uint8_t> bytes;
  uint64_t zeroFill = 0;  // zero bytes after `bytes`, in memory only (like .bss)
  std::vector<NewSection> sections;
};

struct OutputPlan {
  std::vector<NewSegment> segments;
  // Where the program header table goes: a region of the given segment's
  // bytes, reserved by the caller with programHeaderTableSize().
  size_t phdrSegment = 0;
  uint64_t phdrOffsetInSegment = 0;
  // PT_GNU_EH_FRAME's new place (0 = keep).
  uint64_t ehFrameHdrAddr = 0;
  uint64_t ehFrameHdrSize = 0;
  std::map<uint32_t, std::string> renamedSections;
};

class ElfWriter {
 public:
  static constexpr uint64_t kPageSize = 0x1000;

  // Size of the program header table the output will have.
  static uint64_t programHeaderTableSize(const ElfImage& image, size_t newSegments);
  // Index the i-th new section will have in the output's section header table.
  static uint32_t newSectionIndex(const ElfImage& image, size_t i) { return uint32_t(image.sections().size() + i); }

  // `file` is the input file with the in-place patches applied.
  static PatchedFile write(const ElfImage& image, PatchedFile file, const OutputPlan& plan);
};

}  // namespace atomx::elf
