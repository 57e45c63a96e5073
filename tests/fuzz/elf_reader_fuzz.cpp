// libFuzzer target for the ELF reader and the analysis behind it.
//
// The bytes are parsed as an ELF file; if the reader accepts them, the whole
// analysis runs on the image, as `atomx dump` does.  Rejecting the input with
// an atomx::Error (InputError, UnsupportedError) is the expected outcome for
// nearly every input.  Everything else is a bug: a crash, a sanitizer report,
// an InternalError or any other exception (left uncaught, so libFuzzer stops
// on it and saves the input).
//
// Build and run: tests/fuzz/run_fuzz.sh [SECONDS]; see tests/fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "elf/ElfImage.h"
#include "analysis/ProgramModel.h"
#include "support/Error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  try {
    atomx::elf::ElfImage image = atomx::elf::ElfImage::fromBytes(std::move(bytes), "fuzz-input");
    atomx::analysis::analyzeProgram(image);
  } catch (const atomx::InternalError&) {
    throw;  // a broken invariant inside atomx: report it as a crash
  } catch (const atomx::Error&) {
    // A one-line rejection of bad input: fine.
  }
  return 0;
}
