#include "analysis/RelocIndex.h"

#include "support/Error.h"
#include "support/Hex.h"

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

std::optional<uint64_t> fieldValue(uint32_t type, uint64_t place, uint64_t target) {
  const auto fitsSigned32 = [](int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; };
  switch (type) {
    case R_X86_64_64:
      return target;
    case R_X86_64_32:
      if (target > UINT32_MAX) return std::nullopt;
      return target;
    case R_X86_64_32S:
      if (!fitsSigned32(int64_t(target))) return std::nullopt;
      return truncateTo(target, 4);
    case R_X86_64_PC64:
      return target - place;
    case R_X86_64_PC32:
      if (!fitsSigned32(int64_t(target - place))) return std::nullopt;
      return truncateTo(target - place, 4);
    default:
      return std::nullopt;
  }
}

bool fieldRefersTo(uint32_t type, uint64_t place, uint64_t stored, uint64_t target) {
  const std::optional<uint64_t> v = fieldValue(type, place, target);
  return v && *v == stored;
}

uint64_t relocatedField(const elf::Relocation& r, uint64_t newTarget) {
  if (std::optional<uint64_t> v = fieldValue(r.type, r.place, newTarget)) return *v;
  throw UnsupportedError("the " + std::to_string(8 * relocationWidth(r.type)) + "-bit " +
                         (isAbsoluteAddress(r.type) ? "address" : "self-relative pointer") + " at " + hex(r.place) +
                         " cannot refer to " + hex(newTarget) + ", where its target moved");
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
