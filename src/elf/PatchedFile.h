// PatchedFile: a file's bytes as atomx writes them -- the input file,
// patched in place, then appended to -- without copying the input.  The
// input stays where it is (ElfImage maps it); a page atomx writes into is
// copied on its first write, and what goes past the input's end is kept
// apart.  A big program is mostly debug information atomx never touches:
// its pages are neither copied nor compared, and elf/OutputFile writes them
// file to file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

namespace atomx::elf {

class PatchedFile {
 public:
  static constexpr uint64_t kPage = 4096;

  explicit PatchedFile(std::span<const uint8_t> base) : base_(base) {}

  uint64_t size() const { return base_.size() + tail_.size(); }
  void read(uint64_t offset, void* to, size_t n) const;
  void write(uint64_t offset, const void* from, size_t n);
  template <class T> T get(uint64_t offset) const {
    T v;
    read(offset, &v, sizeof v);
    return v;
  }
  template <class T> void put(uint64_t offset, const T& v) { write(offset, &v, sizeof v); }
  // Past the input's end: grows the file with `fill` bytes, or appends.
  void resize(uint64_t n, uint8_t fill = 0);
  void append(const void* from, size_t n);
  // Room for the file to reach `n` bytes without moving what follows the
  // input (a hint: growing past it still works).
  void reserve(uint64_t n) {
    if (n > base_.size()) tail_.reserve(n - base_.size());
  }
  // `n` bytes at `offset` set to `value`.
  void fill(uint64_t offset, uint8_t value, size_t n);

  // The whole file, in memory (tests, and writing where a file cannot be
  // copied).
  std::vector<uint8_t> bytes() const;

  // For writing: the input, the pages of it that were written (by page
  // index; the last one may be shorter), and what follows the input.
  std::span<const uint8_t> base() const { return base_; }
  const std::map<uint64_t, std::unique_ptr<uint8_t[]>>& pages() const { return pages_; }
  uint64_t pageSize(uint64_t page) const { return std::min<uint64_t>(kPage, base_.size() - page * kPage); }
  const std::vector<uint8_t>& tail() const { return tail_; }

 private:
  uint8_t* page(uint64_t index);  // its copy, made on first use

  std::span<const uint8_t> base_;
  std::map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
  std::vector<uint8_t> tail_;
};

}  // namespace atomx::elf
