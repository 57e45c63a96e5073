// Writing atomx's output files.  A regular file is replaced atomically
// through a temporary; anything else that exists (/dev/null, a pipe) is
// written in place.  A rewritten program (elf/PatchedFile.h) is mostly its
// input, and on a big program with debug information most of the file is
// bytes atomx never changes: they are copied file to file
// (copy_file_range: in the kernel, or a reflink where the file system has
// one), and only the pages atomx wrote and what follows the input are
// written from memory.
//
// The copy does not wait for the rewrite: an OutputFile made before the
// rewrite starts copying its base on a thread of its own at once, and
// finish() writes the changed pages over it when the rewrite is done.
//
//   elf::OutputFile out(path, true, inputPath);   // the copy starts
//   elf::PatchedFile file = rewrite();             // meanwhile
//   out.finish(file);                              // pages, tail, rename
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "elf/PatchedFile.h"

namespace atomx::elf {

struct OutputStats {
  uint64_t copiedBytes = 0;   // file to file
  uint64_t writtenBytes = 0;  // from memory
};

class OutputFile {
 public:
  // The suffix of the temporary an output is written to before it is
  // renamed into place (one a killed atomx may leave behind).
  static constexpr const char* kTemporarySuffix = ".atomx-tmp";
  // Creates the output (`executable`: mode 0755), and, if `basePath` is not
  // empty and the output is a regular file, starts copying `basePath` into
  // it.  Throws atomx::Error with a one-line message.
  OutputFile(std::string path, bool executable, std::string basePath = {});
  // Without finish(): stops the copy and removes the temporary; an output
  // written in place is left as it is.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // The rewritten program, whose base() must be the bytes of `basePath` as
  // they were read: the copy is used only if it has their size; otherwise
  // every byte is written from memory.  Puts the file in place.
  OutputStats finish(const PatchedFile& file);
  // Any other output: these bytes.
  OutputStats finish(const std::vector<uint8_t>& bytes);

 private:
  void copyBase();
  // Writes with `fill`, closes and renames; removes the temporary on failure.
  template <class Fill> OutputStats complete(Fill&& fill);
  void discard();

  std::string path_, tmp_, basePath_;
  bool executable_ = false;
  bool inPlace_ = false;  // not a regular file: written where it is, in order
  int fd_ = -1;
  std::thread copier_;
  std::atomic<bool> stop_{false};
  uint64_t copied_ = 0;   // bytes of the base copied (valid after the copier is joined)
  bool copyOk_ = false;
};

// One-shot forms: make the OutputFile and finish it.
OutputStats writeOutputFile(const std::string& path, const std::vector<uint8_t>& bytes, bool executable);
// `basePath`: the file whose bytes `file` patches (as they were read: the
// copy is taken only if its size is still theirs).
OutputStats writeOutputFile(const std::string& path, const PatchedFile& file, bool executable,
                            const std::string& basePath);

}  // namespace atomx::elf
