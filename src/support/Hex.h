// Small formatting helpers shared by reports and error messages.
#pragma once

#include <cstdint>
#include <string>

namespace atomx {

// "0x1a2b".  Hand-rolled: messages are built on hot paths (unwind tables
// name every FDE they touch), where snprintf would dominate.
inline std::string hex(uint64_t value) {
  char buf[18];
  char* p = buf + sizeof buf;
  do {
    *--p = "0123456789abcdef"[value & 15];
    value >>= 4;
  } while (value);
  *--p = 'x';
  *--p = '0';
  return std::string(p, buf + sizeof buf);
}

// "00000000001a2b2c": 16 digits, no prefix (names and manifests).
inline std::string hex16(uint64_t value) {
  char buf[16];
  for (int i = 15; i >= 0; --i, value >>= 4) buf[i] = "0123456789abcdef"[value & 15];
  return std::string(buf, sizeof buf);
}

}  // namespace atomx
