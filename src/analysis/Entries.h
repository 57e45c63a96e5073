// Entries: where control comes into the program's code from code that is
// not part of some set of the program's procedures ("inside": the traced
// ones for a trace, the moved ones for per-thread counters) -- ld.so,
// libc, shared libraries, the kernel (signal handlers), and the program's
// own procedures outside the set.  Every thread's first instruction in the
// set is at such an entry: a new thread starts in libc, which calls a
// start routine through a pointer.
#pragma once

#include <cstdint>
#include <vector>

#include "elf/ElfImage.h"
#include "ir/Program.h"

namespace atomx::analysis {

// Code that runs before the program's entry point: IFUNC resolvers (ld.so
// calls them while it relocates) and .preinit_array functions.
std::vector<uint64_t> earlyCode(const elf::ElfImage& image);

// Per procedure id, for the procedures in `inside` (by id): whether code
// outside the set may enter it -- its address is taken, it is the entry
// point or early code, or a procedure outside the set branches to its
// entry directly.  False for procedures outside the set.
std::vector<bool> enteredFromOutside(const ir::Program& program, const std::vector<bool>& inside);

}  // namespace atomx::analysis
