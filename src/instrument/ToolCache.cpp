#include "instrument/ToolCache.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "support/Directories.h"
#include "support/Fnv.h"
#include "support/Hex.h"

namespace atomx::instrument {

namespace fs = std::filesystem;

namespace {

// "size mtime-in-ns" of a file, or "" when it cannot be read.
std::string stamp(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  return std::to_string(st.st_size) + " " +
         std::to_string(int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
}

bool under(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}

// The files named in a make-style dependency file ("out: a.c b.h \").
std::vector<std::string> readDepFile(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string word;
  bool target = true;  // words before the first ':' name what was built
  auto flush = [&] {
    if (!word.empty() && !target) out.push_back(word);
    word.clear();
  };
  char c;
  while (in.get(c)) {
    if (c == '\\') {
      char next;
      if (!in.get(next)) break;
      if (next == '\n') flush();          // a continued line
      else if (next == ' ' || next == '#') word += next;  // an escaped space
      else word += c, word += next;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      flush();
      if (c == '\n') target = true;       // the next rule
    } else if (c == ':' && target && in.peek() != '\\' && (in.peek() == ' ' || in.peek() == '\n' || in.peek() == EOF)) {
      word.clear();
      target = false;
    } else if (c == '$' && in.peek() == '$') {
      in.get(c);
      word += '$';
    } else {
      word += c;
    }
  }
  flush();
  return out;
}

}  // namespace

ToolCache::ToolCache() {
  const char* own = std::getenv("ATOMX_TOOL_CACHE");
  if (own && *own) {
    if (std::string(own) != "off") root_ = own;
    return;
  }
  root_ = userCacheDir("tools");
}

std::optional<uint64_t> ToolCache::inputsDigest(uint64_t key) const {
  if (!enabled()) return std::nullopt;
  std::ifstream manifest(root_ + "/" + hex16(key) + "/inputs");
  if (!manifest) return std::nullopt;
  Fnv64 digest;
  std::string line;
  size_t inputs = 0;
  while (std::getline(manifest, line)) {
    // "SIZE MTIME PATH"
    const size_t a = line.find(' '), b = a == std::string::npos ? a : line.find(' ', a + 1);
    if (b == std::string::npos || stamp(line.substr(b + 1)) != line.substr(0, b)) return std::nullopt;
    digest.add(line);
    ++inputs;
  }
  if (inputs == 0) return std::nullopt;  // a manifest cut short
  return digest.h;
}

bool ToolCache::fetch(uint64_t key, const std::vector<std::string>& files, const std::string& dir) const {
  if (!inputsDigest(key)) return false;
  const std::string entry = root_ + "/" + hex16(key);
  std::error_code ec;
  for (const std::string& f : files) {
    fs::copy_file(entry + "/" + f, dir + "/" + f, fs::copy_options::overwrite_existing, ec);
    if (ec) return false;
  }
  fs::last_write_time(entry, fs::file_time_type::clock::now(), ec);  // used now: pruned last
  return true;
}

void ToolCache::store(uint64_t key, const std::vector<std::string>& files, const std::string& dir,
                      const std::vector<std::string>& depFiles, const std::vector<std::string>& inputs) const {
  if (!enabled()) return;
  std::set<std::string> paths;
  auto add = [&](const std::string& p) {
    std::error_code ec;
    const std::string full = fs::absolute(p, ec).lexically_normal().string();
    if (!ec && !under(full, dir) && !stamp(full).empty()) paths.insert(full);
  };
  for (const std::string& d : depFiles)
    for (const std::string& p : readDepFile(d)) add(p);
  for (const std::string& p : inputs) add(p);
  if (paths.empty()) return;

  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) return;
  const std::string tmp = makeUniqueDir(root_ + "/.new.XXXXXX");
  if (tmp.empty()) return;
  bool ok = true;
  for (const std::string& f : files) {
    fs::copy_file(dir + "/" + f, tmp + "/" + f, fs::copy_options::overwrite_existing, ec);
    ok = ok && !ec;
  }
  {
    std::ofstream manifest(tmp + "/inputs");
    for (const std::string& p : paths) manifest << stamp(p) << " " << p << "\n";
    ok = ok && bool(manifest.flush());
  }
  const std::string entry = root_ + "/" + hex16(key);
  if (ok) {
    fs::remove_all(entry, ec);  // a stale entry of the same key
    ok = rename(tmp.c_str(), entry.c_str()) == 0;  // fails if a parallel run published first: theirs stays
  }
  if (!ok) fs::remove_all(tmp, ec);
  prune();
}

// At most kEntries entries: the least recently used go (a key changes with
// a tool's flags or paths, so old ones would pile up).
void ToolCache::prune() const {
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(root_, ec))
    if (e.is_directory(ec) && e.path().filename().string()[0] != '.') entries.push_back({e.last_write_time(ec), e.path()});
  if (entries.size() <= kEntries) return;
  std::sort(entries.begin(), entries.end());
  for (size_t k = 0; k + kEntries < entries.size(); ++k) fs::remove_all(entries[k].second, ec);
}

}  // namespace atomx::instrument
