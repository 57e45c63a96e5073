// A data trace's library calls (analysis/TracePlan.h, kLibraryArguments):
// the references of a call into one of libc's memory and string functions,
// from its recorded registers, by the one model the online cachesim uses
// too (include/atomx/libc_model.hpp).
#pragma once

#include <atomx/libc_model.hpp>
#include <atomx/trace.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace atomx::trace {

// The pieces library references come in: the online cachesim's (its chunk
// is min(32, the first data level's line)), so that `atomx cachesim` counts
// the same references wherever every data line is at least 32 bytes.
inline constexpr uint32_t kLibraryChunk = 32;

// The extent of a call of libc::kFunctions[f] with %rdi, %rsi, %rdx
// before it (`args`, in that order), %rax after it (`result`, for a call
// whose length analysis::libraryLength says is its Result) and the length
// the recorder measured (`measured`, for Measured; else null): the length
// the online tool measures in memory comes from one of those here.
libc::Extent libraryExtent(size_t f, const uint64_t args[3], uint64_t result, const uint64_t* measured);

// Appends the extent's references, pieces of kLibraryChunk bytes in the
// model's order, as DataRefs (insn 0).
void appendLibraryReferences(const libc::Extent& e, std::vector<DataRef>& out);

}  // namespace atomx::trace
