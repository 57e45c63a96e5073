// ToolCache: built tools kept between runs of atomx, as ccache keeps
// objects, so that rewriting a second program with the same tool (or the
// same program again) does not compile the tool again: the ease tool, C++,
// takes 10-15 s to compile and a few milliseconds to reuse.
//
// An entry is a directory named by a key: everything given to the
// compilers (the files' names, the flags, the compilers' names and the
// environment variables they read), not atomx's executable (what a tool sees
// of atomx is among the files below).  It holds the
// built files and the list of every file they were made from, as the
// compilers and the linker reported them (`-MD`, `--dependency-file`): the
// tool's sources, every header they include, atomx's headers and support
// library, the libraries linked, the compiler executables; each with its
// size and modification time.  An entry is reused only while every one of
// them is unchanged, so editing a header of the tool rebuilds it.
//
// Where: $ATOMX_TOOL_CACHE (a directory, or `off` for no cache), else
// $XDG_CACHE_HOME/atomx/tools, else ~/.cache/atomx/tools.  Entries are
// published by rename, so runs in parallel share the cache safely; a failed
// build publishes nothing; the least recently used go beyond 64 entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace atomx::instrument {

class ToolCache {
 public:
  // The cache from the environment (disabled when there is none).
  ToolCache();
  bool enabled() const { return !root_.empty(); }
  const std::string& root() const { return root_; }

  // Copies the files named `files` of the entry `key` into `dir` when the
  // entry exists and every file it was made from is unchanged.
  bool fetch(uint64_t key, const std::vector<std::string>& files, const std::string& dir) const;
  // A digest of the entry's list of inputs (names, sizes, times) while every
  // one of them is unchanged.
  std::optional<uint64_t> inputsDigest(uint64_t key) const;
  // Publishes `files` of `dir` as the entry `key`, made from the files named
  // in the make-style dependency files `depFiles` (those in `dir`, and any
  // that no longer exist, are left out) and `inputs`.  Best effort: a cache
  // that cannot be written is no error.
  void store(uint64_t key, const std::vector<std::string>& files, const std::string& dir,
             const std::vector<std::string>& depFiles, const std::vector<std::string>& inputs) const;

 private:
  static constexpr size_t kEntries = 64;
  void prune() const;
  std::string root_;
};

}  // namespace atomx::instrument
