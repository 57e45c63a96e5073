#include "trace/LibraryCalls.h"

namespace atomx::trace {

libc::Extent libraryExtent(size_t f, const uint64_t args[3], uint64_t result) {
  const libc::Kind k = libc::kFunctions[f].kind;
  libc::Extent e;
  switch (k) {
    case libc::Kind::Strlen:  // the length, and its NUL
      e.from = args[0], e.read = result + 1;
      break;
    case libc::Kind::Strnlen:  // up to the NUL, inclusive, or `max` bytes without one
      e.from = args[0], e.read = args[1] == 0 ? 0 : result < args[1] ? result + 1 : args[1];
      break;
    case libc::Kind::Strcpy:  // stpcpy: the result is the copy's NUL
      e.from = args[1], e.to = args[0], e.read = e.written = result - args[0] + 1;
      break;
    default:  // the others' extents follow from their arguments (and calloc's result) alone
      e = libc::extent(k, args[0], args[1], args[2], result);
  }
  return e;
}

void appendLibraryReferences(const libc::Extent& e, std::vector<DataRef>& out) {
  libc::references(e, kLibraryChunk, [&](uint64_t addr, uint32_t size, bool write) {
    out.push_back({addr, 0, uint16_t(size), uint8_t(write ? kWrite : kRead), false});
  });
}

}  // namespace atomx::trace
