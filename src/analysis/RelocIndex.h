// Static relocations (kept by --emit-relocs) looked up by the address they
// patch (ElfImage keeps only those of allocated sections).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
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

// The one rule for relocated fields.  What the field of relocation `type`
// at `place` holds when it refers to `target`: the address itself for the
// absolute types (R_X86_64_64, _32 zero-extended, _32S sign-extended), the
// distance `target - place` for the PC-relative data types (R_X86_64_PC32,
// _PC64), truncated to the field's width; nullopt when the value does not
// fit the field as the CPU (or the loader) will extend it, or for any other
// type.
std::optional<uint64_t> fieldValue(uint32_t type, uint64_t place, uint64_t target);
// Whether `stored` (the field's bytes, zero-extended) refers to `target`.
// A field that does not is not ours to change: the linker redirected it (an
// IFUNC's canonical address is its PLT entry) or filled it otherwise.
bool fieldRefersTo(uint32_t type, uint64_t place, uint64_t stored, uint64_t target);
// The value to write into `r`'s field so that it refers to `newTarget`;
// throws UnsupportedError, naming the place, when it cannot hold it.
uint64_t relocatedField(const elf::Relocation& r, uint64_t newTarget);

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
