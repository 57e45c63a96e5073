// The runtime blob (runtime/stub), as bytes to copy into an instrumented
// program.  Its layout and contract are in runtime/abi.h: the entry slots at
// offsets kAtomxSlot*, the descriptor delta to patch at
// kAtomxBlobDescriptorDelta, the magic at kAtomxBlobMagic.  Position
// independent, no relocations, no writable data: place it anywhere in an
// executable segment (64-byte alignment keeps its code aligned as compiled).
#pragma once

namespace atomx::runtime {

extern const unsigned char kBlob[];
extern const unsigned long kBlobSize;

}  // namespace atomx::runtime
