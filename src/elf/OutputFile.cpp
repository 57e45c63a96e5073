#include "elf/OutputFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

#include "support/Error.h"

namespace atomx::elf {

namespace {

// At offset `at`, or, for at < 0, where the file is (a pipe has no offsets).
bool writeAll(int fd, const uint8_t* p, size_t n, off_t at) {
  while (n > 0) {
    const ssize_t k = at < 0 ? write(fd, p, n) : pwrite(fd, p, n, at);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k, n -= size_t(k);
    if (at >= 0) at += k;
  }
  return true;
}

// The first n bytes of the file at `basePath` into `to`, in the kernel;
// false if that cannot be done (the file changed size, an old kernel, a
// file system that does not): then the caller writes everything.
bool copyBase(const std::string& basePath, uint64_t n, int to) {
  const int from = open(basePath.c_str(), O_RDONLY | O_CLOEXEC);
  if (from < 0) return false;
  struct stat st;
  bool ok = fstat(from, &st) == 0 && uint64_t(st.st_size) == n;
  loff_t in = 0, out = 0;
  while (ok && uint64_t(in) < n) {
    const ssize_t k = copy_file_range(from, &in, to, &out, size_t(n - uint64_t(in)), 0);
    if (k < 0 && errno == EINTR) continue;
    ok = k > 0;
  }
  close(from);
  return ok;
}

// Opens the output (a temporary beside a regular file), lets `fill` write
// it, and puts it in place.
OutputStats writeWith(const std::string& path, bool executable, const std::function<OutputStats(int, bool)>& fill) {
  struct stat st;
  const bool inPlace = stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  if (inPlace && S_ISDIR(st.st_mode)) throw Error(path + ": output is a directory");
  const std::string tmp = inPlace ? path : path + ".atomx-tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, executable ? 0755 : 0644);
  if (fd < 0) throw Error(path + ": cannot create output file (" + std::strerror(errno) + ")");
  OutputStats stats;
  bool ok = true;
  try {
    stats = fill(fd, !inPlace);
  } catch (const Error&) {
    ok = false;
  }
  const int error = errno;
  if (close(fd) != 0) ok = false;
  if (!ok) {
    if (!inPlace) std::remove(tmp.c_str());
    throw Error(path + ": write failed (" + std::strerror(error) + ")");
  }
  if (inPlace) return stats;
  if (executable) chmod(tmp.c_str(), 0755);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot replace output file");
  }
  return stats;
}

void writeOrThrow(int fd, const uint8_t* p, size_t n, off_t at) {
  if (!writeAll(fd, p, n, at)) throw Error("write failed");
}

}  // namespace

OutputStats writeOutputFile(const std::string& path, const std::vector<uint8_t>& bytes, bool executable) {
  return writeWith(path, executable, [&](int fd, bool) {
    writeOrThrow(fd, bytes.data(), bytes.size(), -1);
    return OutputStats{0, bytes.size()};
  });
}

OutputStats writeOutputFile(const std::string& path, const PatchedFile& file, bool executable,
                            const std::string& basePath) {
  return writeWith(path, executable, [&](int fd, bool regular) {
    OutputStats stats;
    const uint64_t baseSize = file.base().size();
    if (regular && baseSize > 0 && copyBase(basePath, baseSize, fd)) {
      for (const auto& [index, page] : file.pages()) {
        writeOrThrow(fd, page.get(), file.pageSize(index), off_t(index * PatchedFile::kPage));
        stats.writtenBytes += file.pageSize(index);
      }
      stats.copiedBytes = baseSize - stats.writtenBytes;
      writeOrThrow(fd, file.tail().data(), file.tail().size(), off_t(baseSize));
      stats.writtenBytes += file.tail().size();
      return stats;
    }
    // Every byte, in order (a pipe; or the input cannot be copied).
    if (regular && ftruncate(fd, 0) != 0) throw Error("write failed");
    const std::vector<uint8_t> bytes = file.bytes();
    writeOrThrow(fd, bytes.data(), bytes.size(), -1);
    stats.writtenBytes = bytes.size();
    return stats;
  });
}

}  // namespace atomx::elf
