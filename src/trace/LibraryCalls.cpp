#include "trace/LibraryCalls.h"

namespace atomx::trace {

libc::Extent libraryExtent(size_t f, const uint64_t args[3], uint64_t result, const uint64_t* measured) {
  const libc::Kind k = libc::kFunctions[f].kind;
  uint64_t length = 0;  // the length libc::shape takes: measured, or from the result
  if (measured) length = *measured;
  else if (k == libc::Kind::Strlen) length = result + 1;  // the length, and its NUL
  else if (k == libc::Kind::Strnlen)  // up to the NUL, inclusive, or `max` bytes without one
    length = args[1] == 0 ? 0 : result < args[1] ? result + 1 : args[1];
  else if (k == libc::Kind::Strcpy) length = result - args[0] + 1;  // stpcpy: the result is the copy's NUL
  return libc::shape(k, args[0], args[1], args[2], result, length);
}

void appendLibraryReferences(const libc::Extent& e, std::vector<DataRef>& out) {
  libc::references(e, kLibraryChunk, [&](uint64_t addr, uint32_t size, bool write) {
    out.push_back({addr, 0, uint16_t(size), uint8_t(write ? kWrite : kRead), false});
  });
}

}  // namespace atomx::trace
