// FNV-1a, 64 bits: the one hash atomx names things by -- a cached
// instrumented program after everything that decides its bytes (atomx run,
// atomx trace), a trace's program file and its witness placement
// (src/trace, analysis/TracePlan).  Not for security.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "support/Error.h"

namespace atomx {

struct Fnv64 {
  uint64_t h = 1469598103934665603ull;
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  void add(const std::string& s) { add(s.data(), s.size() + 1); }  // with the NUL: "a","b" != "ab"
  void addWord(uint64_t v) {  // its 8 bytes, little-endian
    for (int i = 0; i < 8; ++i) {
      const unsigned char b = uint8_t(v >> (8 * i));
      add(&b, 1);
    }
  }
  void addFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot read");
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) add(buf, size_t(in.gcount()));
  }
};

}  // namespace atomx
