// Writing atomx's output files.  A regular file is replaced atomically
// through a temporary; anything else that exists (/dev/null, a pipe) is
// written in place.  A rewritten program (elf/PatchedFile.h) is mostly its
// input, and on a big program with debug information most of the file is
// bytes atomx never changes: they are copied file to file
// (copy_file_range: in the kernel, or a reflink where the file system has
// one), and only the pages atomx wrote and what follows the input are
// written from memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "elf/PatchedFile.h"

namespace atomx::elf {

struct OutputStats {
  uint64_t copiedBytes = 0;   // file to file
  uint64_t writtenBytes = 0;  // from memory
};

// `executable`: mode 0755.  Throws atomx::Error with a one-line message.
OutputStats writeOutputFile(const std::string& path, const std::vector<uint8_t>& bytes, bool executable);
// `basePath`: the file whose bytes `file` patches (as they were read: the
// copy is taken only if its size is still theirs).
OutputStats writeOutputFile(const std::string& path, const PatchedFile& file, bool executable,
                            const std::string& basePath);

}  // namespace atomx::elf
