// Facts: what atomx knows of the procedures, blocks and instructions it
// instruments, embedded for the tool's analysis code (atomx::embedFacts,
// <atomx/facts.h>, whose blob format this writes).
#pragma once

#include <cstdint>
#include <vector>

#include "instrument/Engine.h"

namespace atomx::instrument {

// The blob of <atomx/facts.h>, ids as Proc/Block/Inst::id() give them.
std::vector<uint8_t> factsBlob(Engine& engine);

// When the tool asked for them: the blob, handed to atomx_facts_init at
// ProgramBefore ahead of the tool's calls.  Its size in bytes, or 0.
size_t embedFacts(Engine& engine);

}  // namespace atomx::instrument
