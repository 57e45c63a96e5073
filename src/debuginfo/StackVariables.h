// StackVariables: where the program's variables and parameters live in its
// stack frames, from DWARF's DW_AT_location (location lists included), read
// with libdw: each a byte range [offset, offset + size) from a base -- the
// CFA (DW_OP_fbreg with a frame base of DW_OP_call_frame_cfa, gcc's),
// %rsp or %rbp (DW_OP_breg7/breg6, or DW_OP_fbreg with a frame base of
// DW_OP_reg7/reg6/breg7/breg6, clang's) -- valid while the pc is in
// [lo, hi).  Variables in registers, in pieces, or at computed places are
// not listed.  For the memory references' causes (analysis/MemoryCauses.h:
// a stack slot that holds a variable at that pc is a "stack variable").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace atomx::debuginfo {

struct StackVariable {
  enum class Base : uint8_t { Cfa, Rsp, Rbp };
  uint64_t lo = 0, hi = 0;  // the pcs where it is there
  Base base = Base::Cfa;
  int64_t offset = 0;
  uint64_t size = 0;  // bytes (its type's; 1 when unknown)
  std::string name;
};

// Every such variable of `path`'s compilation units (none without DWARF),
// sorted by lo.
std::vector<StackVariable> readStackVariables(const std::string& path);

}  // namespace atomx::debuginfo
