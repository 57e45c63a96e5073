// Encoding of direct branches at their new place.
//
// Moving code changes the distance of every direct branch, so branches are
// the only instructions atomx re-encodes (RIP-relative operands keep their
// encoding and only get a new disp32).  Each branch has a short form (rel8)
// and a long form (rel32); layout starts with the form the compiler chose and
// grows a branch when its target is out of reach (see layout/CodeLayout).
#pragma once

#include <cstdint>
#include <vector>

#include "x86/Decoder.h"

namespace atomx::x86 {

enum class BranchForm : uint8_t { Short, Long };

// Size of the encoding of `insn` (a direct branch or call) in `form`.
unsigned branchSize(const Insn& insn, BranchForm form);
// Whether a branch at `at` in `form` can reach `target`.
bool branchReaches(const Insn& insn, BranchForm form, uint64_t at, uint64_t target);
// Appends the encoding of `insn` placed at `at` and jumping to `target`.
// The caller guarantees branchReaches().
void encodeBranch(const Insn& insn, BranchForm form, uint64_t at, uint64_t target, std::vector<uint8_t>& out);
// Appends `jmp target` (rel32) placed at `at`.
void encodeJump32(uint64_t at, uint64_t target, std::vector<uint8_t>& out);

}  // namespace atomx::x86
