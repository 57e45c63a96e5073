#include "elf/PatchedFile.h"

#include <algorithm>
#include <cstring>

#include "support/Error.h"
#include "support/Hex.h"

namespace atomx::elf {

uint8_t* PatchedFile::page(uint64_t index) {
  std::unique_ptr<uint8_t[]>& p = pages_[index];
  if (!p) {
    p = std::make_unique<uint8_t[]>(kPage);
    std::memcpy(p.get(), base_.data() + index * kPage, pageSize(index));
  }
  return p.get();
}

void PatchedFile::read(uint64_t offset, void* to, size_t n) const {
  if (offset + n > size() || offset + n < offset)
    throw InternalError("PatchedFile: read of " + hex(n) + " bytes at " + hex(offset) + " past its end " + hex(size()));
  auto* out = static_cast<uint8_t*>(to);
  while (n > 0 && offset < base_.size()) {
    const uint64_t index = offset / kPage, within = offset % kPage;
    const size_t k = size_t(std::min<uint64_t>(n, pageSize(index) - within));
    auto it = pages_.find(index);
    std::memcpy(out, it != pages_.end() ? it->second.get() + within : base_.data() + offset, k);
    out += k, offset += k, n -= k;
  }
  if (n > 0) std::memcpy(out, tail_.data() + (offset - base_.size()), n);
}

void PatchedFile::write(uint64_t offset, const void* from, size_t n) {
  if (offset + n > size() || offset + n < offset)
    throw InternalError("PatchedFile: write of " + hex(n) + " bytes at " + hex(offset) + " past its end " + hex(size()));
  auto* in = static_cast<const uint8_t*>(from);
  while (n > 0 && offset < base_.size()) {
    const uint64_t index = offset / kPage, within = offset % kPage;
    const size_t k = size_t(std::min<uint64_t>(n, pageSize(index) - within));
    std::memcpy(page(index) + within, in, k);
    in += k, offset += k, n -= k;
  }
  if (n > 0) std::memcpy(tail_.data() + (offset - base_.size()), in, n);
}

void PatchedFile::fill(uint64_t offset, uint8_t value, size_t n) {
  const std::vector<uint8_t> bytes(n, value);
  write(offset, bytes.data(), n);
}

void PatchedFile::resize(uint64_t n, uint8_t value) {
  if (n < base_.size()) throw InternalError("PatchedFile: cannot shrink below the input");
  tail_.resize(n - base_.size(), value);
}

void PatchedFile::append(const void* from, size_t n) {
  const auto* p = static_cast<const uint8_t*>(from);
  tail_.insert(tail_.end(), p, p + n);
}

std::vector<uint8_t> PatchedFile::bytes() const {
  std::vector<uint8_t> out(size());
  read(0, out.data(), out.size());
  return out;
}

}  // namespace atomx::elf
