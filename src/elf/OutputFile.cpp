#include "elf/OutputFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

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

void writeOrThrow(int fd, const uint8_t* p, size_t n, off_t at) {
  if (!writeAll(fd, p, n, at)) throw Error("write failed");
}

// The copy goes in pieces, so that a rewrite that fails stops it soon.
constexpr size_t kCopyPiece = size_t(16) << 20;

}  // namespace

OutputFile::OutputFile(std::string path, bool executable, std::string basePath)
    : path_(std::move(path)), basePath_(std::move(basePath)), executable_(executable) {
  struct stat st;
  inPlace_ = stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  if (inPlace_ && S_ISDIR(st.st_mode)) throw Error(path_ + ": output is a directory");
  tmp_ = inPlace_ ? path_ : path_ + kTemporarySuffix;
  fd_ = open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, executable ? 0755 : 0644);
  if (fd_ < 0) throw Error(path_ + ": cannot create output file (" + std::strerror(errno) + ")");
  if (!inPlace_ && !basePath_.empty()) copier_ = std::thread([this] { copyBase(); });
}

OutputFile::~OutputFile() { discard(); }

// The whole of `basePath` into the output, in the kernel.  copyOk_ stays
// false if that cannot be done (an old kernel, a file system that does not,
// a stop): then finish() writes everything.
void OutputFile::copyBase() {
  const int from = open(basePath_.c_str(), O_RDONLY | O_CLOEXEC);
  if (from < 0) return;
  struct stat st;
  bool ok = fstat(from, &st) == 0;
  const uint64_t n = ok ? uint64_t(st.st_size) : 0;
  loff_t in = 0, out = 0;
  while (ok && uint64_t(in) < n) {
    if (stop_.load(std::memory_order_relaxed)) ok = false;
    const ssize_t k = ok ? copy_file_range(from, &in, fd_, &out, std::min<uint64_t>(n - uint64_t(in), kCopyPiece), 0) : 0;
    if (k < 0 && errno == EINTR) continue;
    ok = ok && k > 0;
  }
  close(from);
  copied_ = uint64_t(in);
  copyOk_ = ok;
}

void OutputFile::discard() {
  stop_ = true;
  if (copier_.joinable()) copier_.join();
  if (fd_ < 0) return;
  close(fd_);
  fd_ = -1;
  if (!inPlace_) std::remove(tmp_.c_str());
}

template <class Fill>
OutputStats OutputFile::complete(Fill&& fill) {
  if (fd_ < 0) throw InternalError("OutputFile: finished twice");
  if (copier_.joinable()) copier_.join();
  OutputStats stats;
  bool ok = true;
  try {
    stats = fill();
  } catch (const Error&) {
    ok = false;
  }
  const int error = errno;
  if (close(fd_) != 0) ok = false;
  fd_ = -1;
  if (!ok) {
    if (!inPlace_) std::remove(tmp_.c_str());
    throw Error(path_ + ": write failed (" + std::strerror(error) + ")");
  }
  if (inPlace_) return stats;
  if (executable_) chmod(tmp_.c_str(), 0755);
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::remove(tmp_.c_str());
    throw Error(path_ + ": cannot replace output file");
  }
  return stats;
}

OutputStats OutputFile::finish(const std::vector<uint8_t>& bytes) {
  return complete([&] {
    if (!inPlace_ && copied_ && ftruncate(fd_, 0) != 0) throw Error("write failed");
    writeOrThrow(fd_, bytes.data(), bytes.size(), inPlace_ ? -1 : 0);
    return OutputStats{0, bytes.size()};
  });
}

OutputStats OutputFile::finish(const PatchedFile& file) {
  return complete([&] {
    OutputStats stats;
    const uint64_t baseSize = file.base().size();
    if (copyOk_ && baseSize > 0 && copied_ == baseSize) {
      for (const auto& [index, page] : file.pages()) {
        writeOrThrow(fd_, page.get(), file.pageSize(index), off_t(index * PatchedFile::kPage));
        stats.writtenBytes += file.pageSize(index);
      }
      stats.copiedBytes = baseSize - stats.writtenBytes;
      writeOrThrow(fd_, file.tail().data(), file.tail().size(), off_t(baseSize));
      stats.writtenBytes += file.tail().size();
      return stats;
    }
    // Every byte, in order (a pipe; or the input could not be copied): the
    // input's runs between written pages straight from where it is mapped.
    if (!inPlace_ && ftruncate(fd_, 0) != 0) throw Error("write failed");
    off_t at = inPlace_ ? -1 : 0;
    auto put = [&](const uint8_t* p, size_t n) {
      writeOrThrow(fd_, p, n, at);
      if (at >= 0) at += off_t(n);
      stats.writtenBytes += n;
    };
    uint64_t done = 0;  // bytes of the input written
    for (const auto& [index, page] : file.pages()) {
      put(file.base().data() + done, index * PatchedFile::kPage - done);
      put(page.get(), file.pageSize(index));
      done = index * PatchedFile::kPage + file.pageSize(index);
    }
    put(file.base().data() + done, baseSize - done);
    put(file.tail().data(), file.tail().size());
    return stats;
  });
}

OutputStats writeOutputFile(const std::string& path, const std::vector<uint8_t>& bytes, bool executable) {
  return OutputFile(path, executable).finish(bytes);
}

OutputStats writeOutputFile(const std::string& path, const PatchedFile& file, bool executable,
                            const std::string& basePath) {
  return OutputFile(path, executable, basePath).finish(file);
}

}  // namespace atomx::elf
