// Whether a program may run its code in more than one thread: inline
// counters (atomx::Counters) are plain `inc` when it cannot, which is
// several times cheaper than `lock inc`, and still exact.
#pragma once

#include <string>

#include "elf/ElfImage.h"
#include "ir/Program.h"

namespace atomx::analysis {

// The program may start threads that run its code when it imports a way to
// start one (pthread_create, thrd_create, std::thread, clone, OpenMP, a
// SIGEV_THREAD timer or notification, POSIX AIO ...) or needs a library
// outside a short list known to start none that calls back into it.  The
// answer says why, for `atomx`'s report: "" when it cannot.
std::string threadEvidence(const elf::ElfImage& image);

// Per-thread counters point %gs at each thread's copy (runtime/abi.h); a
// program that uses %gs itself cannot have them.  The answer says why it
// does ("it addresses memory through %gs at 0x...", "it imports
// arch_prctl"), or "" when it does not.
std::string gsEvidence(const ir::Program& program);

}  // namespace atomx::analysis
