#include "driver/Caches.h"

#include <ctime>
#include <cstdio>
#include <filesystem>

#include "driver/ProgramCache.h"
#include "instrument/ToolCache.h"

namespace atomx::driver {

namespace {

// Bytes of the regular files below `dir`.
uint64_t bytesBelow(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != std::filesystem::end(it);
       it.increment(ec))
    if (it->is_regular_file(ec)) n += it->file_size(ec);
  return n;
}

std::string megabytes(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MB", double(bytes) / 1e6);
  return b;
}

}  // namespace

void listCaches(const std::string& cacheDir) {
  const ProgramCache cache(cacheDir);
  uint64_t total = 0;
  const auto entries = cache.entries();
  for (const ProgramCache::Entry& e : entries) {
    char when[32];
    const time_t t = time_t(e.lastUse);
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M", std::localtime(&t));
    std::printf("%10s  %s  %s\n", megabytes(e.bytes).c_str(), when, e.path.c_str());
    total += e.bytes;
  }
  std::printf("instrumented programs: %zu, %s in %s (least recently used first; ATOMX_CACHE_MAX keeps it to a size)\n",
              entries.size(), megabytes(total).c_str(), cache.dir().c_str());
  const instrument::ToolCache tools;
  if (tools.enabled())
    std::printf("built tools: %s in %s\n", megabytes(bytesBelow(tools.root())).c_str(), tools.root().c_str());
  else
    std::printf("built tools: no cache (ATOMX_TOOL_CACHE=off, or no HOME)\n");
}

void cleanCaches(const std::string& cacheDir, std::optional<uint64_t> trimTo, bool quiet) {
  const ProgramCache cache(cacheDir);
  uint64_t freed = 0;
  size_t removed = 0;
  for (const ProgramCache::Entry& e : cache.trim(trimTo.value_or(0))) freed += e.bytes, ++removed;
  if (!trimTo) {
    const instrument::ToolCache tools;
    if (tools.enabled()) {
      const uint64_t bytes = bytesBelow(tools.root());
      std::error_code ec;
      std::filesystem::remove_all(tools.root(), ec);
      if (!quiet) std::fprintf(stderr, "atomx: cache: built tools removed, %s (%s)\n", megabytes(bytes).c_str(), tools.root().c_str());
    }
  }
  if (!quiet)
    std::fprintf(stderr, "atomx: cache: %zu instrumented program(s) removed, %s (%s)\n", removed, megabytes(freed).c_str(),
                 cache.dir().c_str());
}

}  // namespace atomx::driver
