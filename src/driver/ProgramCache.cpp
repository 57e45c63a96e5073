#include "driver/ProgramCache.h"

#include <filesystem>

#include "support/Error.h"
#include "support/Hex.h"
#include "support/Directories.h"

namespace atomx::driver {

ProgramCache::ProgramCache(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) dir_ = userCacheDir("run");
  if (dir_.empty()) throw Error("no cache directory: set HOME, XDG_CACHE_HOME or --cache-dir");
}

Fnv64 ProgramCache::programKey(const std::string& prog, uint64_t profileHash) {
  Fnv64 key;
  key.addFile(prog);
  key.addFile("/proc/self/exe");  // atomx and its runtime
  key.addWord(profileHash);
  return key;
}

std::string ProgramCache::path(const std::string& prog, const std::string& label, uint64_t key) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw Error(dir_ + ": cannot create the cache directory: " + ec.message());
  return dir_ + "/" + std::filesystem::path(prog).filename().string() + "." + label + "." + hex16(key);
}

}  // namespace atomx::driver
