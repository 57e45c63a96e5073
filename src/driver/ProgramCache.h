// The instrumented-program cache of `atomx run` and `atomx trace`: a
// program instrumented once is kept under the key of everything that
// decides its bytes (the program's, atomx's own with its runtime, the tool,
// its arguments and options, a profile) and reused while they are the same.
// Default place: userCacheDir("run") (support/Directories.h), or --cache-dir.
#pragma once

#include <cstdint>
#include <string>

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

 private:
  std::string dir_;
};

}  // namespace atomx::driver
