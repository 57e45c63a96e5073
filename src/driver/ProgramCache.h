// The instrumented-program cache of `atomx run` and `atomx trace`: a
// program instrumented once is kept under the key of everything that
// decides its bytes (the program's, atomx's own with its runtime, the tool,
// its arguments and options, a profile) and reused while they are the same.
// Default place: userCacheDir("run") (support/Directories.h), or --cache-dir.
//
// It is kept to a size: after an entry is added, the least recently used
// entries go until the whole is at most ATOMX_CACHE_MAX bytes (a number
// with K, M or G; default 1G; 0: no limit), but not one used in the last
// ten minutes (another atomx run may be about to start it).  An entry is used when it is
// made or reused (its modification time).  `atomx cache` lists and cleans
// it, and the built-tool cache beside it (ToolCache.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/Fnv.h"

namespace atomx::driver {

class ProgramCache {
 public:
  // `dir` "" for the default place.  Throws atomx::Error when there is none.
  explicit ProgramCache(std::string dir);
  // The key every entry starts from: PROG's bytes, atomx itself (and the
  // runtime it carries), and a profile's hash (0: none).
  static Fnv64 programKey(const std::string& prog, uint64_t profileHash);
  // Where PROG instrumented as `label` is kept under `key` (the directory
  // is created).
  std::string path(const std::string& prog, const std::string& label, uint64_t key) const;
  const std::string& dir() const { return dir_; }

  // An entry: an instrumented program and the files kept beside it
  // (NAME.placement), by the time it was last used.
  struct Entry {
    std::string path;
    uint64_t bytes = 0;
    int64_t lastUse = 0;  // seconds since the epoch
  };
  // Every entry, least recently used first.
  std::vector<Entry> entries() const;
  // `path` was used now (made or reused): its access time, not its
  // modification time, which a deferred end checks the program by.
  static void touch(const std::string& path);
  // Removes the least recently used entries but `keep`, and but those used
  // in the last `spareSeconds`, until the entries take at most `maxBytes`;
  // the entries removed.
  std::vector<Entry> trim(uint64_t maxBytes, const std::string& keep = "", int64_t spareSeconds = 0) const;
  // Removes the instrumented files a killed atomx left half written
  // (NAME.atomx-tmp) not written to for `olderThanSeconds`; trim first
  // removes those untouched for ten minutes (another atomx may be writing one).
  size_t removeUnfinished(int64_t olderThanSeconds) const;
  // trim(ATOMX_CACHE_MAX) after `added` was made, sparing what was used in
  // the last ten minutes: another atomx may be about to run it.
  void keepToSize(const std::string& added) const;

 private:
  std::string dir_;
};

// A size as ATOMX_CACHE_MAX and `atomx cache --trim` give it: bytes, or a
// number with K, M or G (powers of 1024); throws atomx::UsageError.
uint64_t parseSize(const std::string& text);

}  // namespace atomx::driver
