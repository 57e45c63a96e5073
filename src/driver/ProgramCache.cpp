#include "driver/ProgramCache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "elf/OutputFile.h"
#include "support/Error.h"
#include "support/Hex.h"
#include "support/Directories.h"

namespace atomx::driver {

ProgramCache::ProgramCache(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) dir_ = userCacheDir("run");
  if (dir_.empty()) throw Error("no cache directory: set HOME, XDG_CACHE_HOME or --cache-dir");
}

// atomx and its runtime, hashed once per process: a workload's supervisor
// looks the cache up at every exec, and hashing atomx (tens of MB) took
// some 80 ms each time (bench/workload.py; docs/trace.md, "Tracing a whole
// workload").  The running atomx is the one whose runtime goes into the copy.
static uint64_t selfHash() {
  static const uint64_t h = [] {
    Fnv64 f;
    f.addFile("/proc/self/exe");
    return f.h;
  }();
  return h;
}

Fnv64 ProgramCache::programKey(const std::string& prog, uint64_t profileHash) {
  Fnv64 key;
  key.addFile(prog);
  key.addWord(selfHash());
  key.addWord(profileHash);
  return key;
}

std::string ProgramCache::path(const std::string& prog, const std::string& label, uint64_t key) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw Error(dir_ + ": cannot create the cache directory: " + ec.message());
  return dir_ + "/" + std::filesystem::path(prog).filename().string() + "." + label + "." + hex16(key);
}

std::vector<ProgramCache::Entry> ProgramCache::entries() const {
  std::map<std::string, Entry> byPath;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    struct stat st;
    if (lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    std::string path = e.path().string();
    if (path.ends_with(elf::OutputFile::kTemporarySuffix)) continue;  // a file being written
    const bool sidecar = path.ends_with(".placement");
    if (sidecar) path.resize(path.size() - 10);
    Entry& entry = byPath[path];
    entry.path = path;
    entry.bytes += uint64_t(st.st_size);
    // Last use: the access time touch() sets (never the modification time,
    // which a deferred end's dump checks the program by), or when it was made.
    if (!sidecar || !entry.lastUse) entry.lastUse = std::max<int64_t>(entry.lastUse, std::max(st.st_atime, st.st_mtime));
  }
  std::vector<Entry> out;
  for (auto& [path, entry] : byPath) out.push_back(std::move(entry));
  std::stable_sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.lastUse < b.lastUse; });
  return out;
}

void ProgramCache::touch(const std::string& path) {
  // The access time only: a deferred end's dump names the program by its
  // inode, size and modification time (runtime/stub/end.c), so a run of the
  // same cached program must not change them.
  const struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  utimensat(AT_FDCWD, path.c_str(), now, 0);
}

size_t ProgramCache::removeUnfinished(int64_t olderThanSeconds) const {
  size_t n = 0;
  const int64_t before = int64_t(time(nullptr)) - olderThanSeconds;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string path = e.path().string();
    struct stat st;
    if (!path.ends_with(elf::OutputFile::kTemporarySuffix) || lstat(path.c_str(), &st) != 0 ||
        int64_t(st.st_mtime) > before)
      continue;
    std::error_code rm;
    n += std::filesystem::remove(path, rm);
  }
  return n;
}

std::vector<ProgramCache::Entry> ProgramCache::trim(uint64_t maxBytes, const std::string& keep,
                                                     int64_t spareSeconds) const {
  // An instrumented file an atomx that was killed left half written.
  removeUnfinished(600);
  std::vector<Entry> all = entries(), removed;
  uint64_t total = 0;
  for (const Entry& e : all) total += e.bytes;
  const int64_t recent = int64_t(time(nullptr)) - spareSeconds;
  for (const Entry& e : all) {
    if (total <= maxBytes) break;
    if (e.path == keep || (spareSeconds && e.lastUse >= recent)) continue;
    // Used since the listing (another atomx's hit touches it just before
    // running it): kept.
    struct stat now;
    if (spareSeconds && stat(e.path.c_str(), &now) == 0 && int64_t(now.st_atime) >= recent) continue;
    std::error_code ec;
    std::filesystem::remove(e.path, ec);
    std::filesystem::remove(e.path + ".placement", ec);
    total -= e.bytes;
    removed.push_back(e);
  }
  return removed;
}

void ProgramCache::keepToSize(const std::string& added) const {
  const char* max = std::getenv("ATOMX_CACHE_MAX");
  const uint64_t limit = max && *max ? parseSize(max) : uint64_t(1) << 30;
  if (limit) trim(limit, added, 600);
}

uint64_t parseSize(const std::string& text) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
  uint64_t unit = 1;
  if (*end == 'K' || *end == 'k') unit = 1ull << 10, ++end;
  else if (*end == 'M' || *end == 'm') unit = 1ull << 20, ++end;
  else if (*end == 'G' || *end == 'g') unit = 1ull << 30, ++end;
  if (text.empty() || text[0] == '-' || end == text.c_str() || *end)
    throw UsageError("'" + text + "' is not a size (bytes, or a number with K, M or G)");
  return uint64_t(n) * unit;
}

}  // namespace atomx::driver
