// Static relocations (kept by --emit-relocs) looked up by the address they
// patch (ElfImage keeps only those of allocated sections).
#pragma once

#include <algorithm>
#include <vector>

#include "elf/ElfImage.h"

namespace atomx::analysis {

// Whether a relocation type computes a value relative to the patched place.
bool isPcRelative(uint32_t type);
// Whether a relocation type stores an absolute address (S + A).
bool isAbsoluteAddress(uint32_t type);
// Width in bytes of the field a relocation patches (0 if unknown).
unsigned relocationWidth(uint32_t type);

// `value` cut to the low `width` bytes, as a relocated field of that width holds it.
inline uint64_t truncateTo(uint64_t value, unsigned width) {
  return width >= 8 ? value : value & ((uint64_t(1) << (8 * width)) - 1);
}

class RelocIndex {
 public:
  explicit RelocIndex(const elf::ElfImage& image);
  // The relocation patching the field at `place`, or nullptr.
  const elf::Relocation* at(uint64_t place) const;
  // All relocations whose place lies in [begin, end).
  std::pair<const elf::Relocation* const*, const elf::Relocation* const*> in(uint64_t begin, uint64_t end) const;

 private:
  std::vector<const elf::Relocation*> sorted_;
};

}  // namespace atomx::analysis
