#include "analysis/RelocIndex.h"

namespace atomx::analysis {

bool isPcRelative(uint32_t type) {
  switch (type) {
    case R_X86_64_PC32:
    case R_X86_64_PLT32:
    case R_X86_64_PC64:
    case R_X86_64_GOTPCREL:
    case R_X86_64_GOTPCRELX:
    case R_X86_64_REX_GOTPCRELX:
    case R_X86_64_GOTPC32:
    case R_X86_64_GOTPC64:
    case R_X86_64_GOTPCREL64:
    case R_X86_64_TLSGD:
    case R_X86_64_TLSLD:
    case R_X86_64_GOTTPOFF:
    case R_X86_64_GOTPC32_TLSDESC:
      return true;
    default:
      return false;
  }
}

bool isAbsoluteAddress(uint32_t type) {
  return type == R_X86_64_64 || type == R_X86_64_32 || type == R_X86_64_32S;
}

unsigned relocationWidth(uint32_t type) {
  switch (type) {
    case R_X86_64_64:
    case R_X86_64_PC64:
    case R_X86_64_GOTPC64:
    case R_X86_64_GOTPCREL64:
      return 8;
    case R_X86_64_8:
    case R_X86_64_PC8:
      return 1;
    case R_X86_64_16:
    case R_X86_64_PC16:
      return 2;
    default:
      return 4;
  }
}

RelocIndex::RelocIndex(const elf::ElfImage& image) {
  sorted_.reserve(image.staticRelocations().size());
  for (const elf::Relocation& r : image.staticRelocations()) sorted_.push_back(&r);
  std::stable_sort(sorted_.begin(), sorted_.end(),
                   [](const elf::Relocation* a, const elf::Relocation* b) { return a->place < b->place; });
}

const elf::Relocation* RelocIndex::at(uint64_t place) const {
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), place,
                             [](const elf::Relocation* r, uint64_t p) { return r->place < p; });
  return it != sorted_.end() && (*it)->place == place ? *it : nullptr;
}

std::pair<const elf::Relocation* const*, const elf::Relocation* const*> RelocIndex::in(uint64_t begin,
                                                                                        uint64_t end) const {
  auto lo = std::lower_bound(sorted_.begin(), sorted_.end(), begin,
                             [](const elf::Relocation* r, uint64_t p) { return r->place < p; });
  auto hi = std::lower_bound(lo, sorted_.end(), end,
                             [](const elf::Relocation* r, uint64_t p) { return r->place < p; });
  return {sorted_.data() + (lo - sorted_.begin()), sorted_.data() + (hi - sorted_.begin())};
}

}  // namespace atomx::analysis
