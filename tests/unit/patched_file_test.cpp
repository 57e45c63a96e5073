// elf::PatchedFile (the output file as the input with copied pages and an
// appended tail) and elf::writeOutputFile, against the obvious
// implementation: a std::vector holding the whole file, patched in place.
//   * random writes, fills, reads, resizes and appends, across page and
//     input/tail boundaries, on inputs whose last page is partial or whole:
//     every read and the whole file equal the vector's;
//   * written to a regular file (the input copied file to file, the pages
//     and the tail from memory) and through a pipe (every byte in order),
//     the file is the vector's bytes; with the input changed in size since
//     it was read, every byte is written from memory.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "elf/OutputFile.h"
#include "elf/PatchedFile.h"

namespace atomx {
namespace {

std::vector<uint8_t> randomBytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = uint8_t(rng());
  return v;
}

std::vector<uint8_t> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(PatchedFile, AgainstAVector) {
  std::mt19937 rng(1994);
  for (size_t baseSize : {size_t(0), size_t(100), size_t(4096), size_t(3 * 4096 + 17), size_t(40000)}) {
    const std::vector<uint8_t> base = randomBytes(rng, baseSize);
    elf::PatchedFile file(base);
    std::vector<uint8_t> naive = base;
    for (int op = 0; op < 2000; ++op) {
      const size_t size = naive.size();
      const int kind = int(rng() % 5);
      if (kind == 0 && size > 0) {  // write
        const size_t at = rng() % size, n = std::min<size_t>(1 + rng() % 9000, size - at);
        const std::vector<uint8_t> data = randomBytes(rng, n);
        file.write(at, data.data(), n);
        std::copy(data.begin(), data.end(), naive.begin() + ptrdiff_t(at));
      } else if (kind == 1 && size > 0) {  // read
        const size_t at = rng() % size, n = std::min<size_t>(1 + rng() % 9000, size - at);
        std::vector<uint8_t> got(n);
        file.read(at, got.data(), n);
        ASSERT_TRUE(std::equal(got.begin(), got.end(), naive.begin() + ptrdiff_t(at))) << "read at " << at;
      } else if (kind == 2 && size > 0) {  // fill
        const size_t at = rng() % size, n = std::min<size_t>(1 + rng() % 6000, size - at);
        file.fill(at, 0xcc, n);
        std::fill_n(naive.begin() + ptrdiff_t(at), n, 0xcc);
      } else if (kind == 3 && op % 50 == 0) {  // grow with zeros
        const size_t n = size + rng() % 5000;
        file.resize(n);
        naive.resize(n, 0);
      } else if (kind == 4 && op % 40 == 0) {  // append
        const std::vector<uint8_t> data = randomBytes(rng, rng() % 3000);
        file.append(data.data(), data.size());
        naive.insert(naive.end(), data.begin(), data.end());
      }
      ASSERT_EQ(file.size(), naive.size());
    }
    EXPECT_EQ(file.bytes(), naive) << "input of " << baseSize << " bytes";
    EXPECT_THROW(file.write(naive.size(), "x", 1), std::exception);
    if (baseSize) {
      EXPECT_THROW(file.resize(baseSize - 1), std::exception);
    }
  }
}

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("atomx-output-test." + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(OutputFileTest, RegularFileAndPipe) {
  std::mt19937 rng(7);
  const std::vector<uint8_t> base = randomBytes(rng, 5 * 4096 + 123);
  const std::string input = (dir_ / "input").string();
  { std::ofstream(input, std::ios::binary).write(reinterpret_cast<const char*>(base.data()), std::streamsize(base.size())); }
  elf::PatchedFile file(base);
  file.put<uint32_t>(4094, 0xdeadbeef);  // across a page boundary
  file.fill(3 * 4096, 0xcc, 100);
  file.resize(base.size() + 1000);
  file.append("tail", 4);
  const std::vector<uint8_t> expected = file.bytes();

  const std::string out = (dir_ / "out").string();
  const elf::OutputStats stats = elf::writeOutputFile(out, file, true, input);
  EXPECT_EQ(readFile(out), expected);
  EXPECT_EQ(stats.copiedBytes + stats.writtenBytes, expected.size());
  EXPECT_EQ(stats.writtenBytes, 3 * 4096 + 1004u) << "two pages for the word, one for the fill, and the tail";

  // The input no longer has the size it was read with: every byte from memory.
  { std::ofstream(input, std::ios::binary | std::ios::app) << "more"; }
  const elf::OutputStats again = elf::writeOutputFile(out, file, true, input);
  EXPECT_EQ(readFile(out), expected);
  EXPECT_EQ(again.copiedBytes, 0u);

  // A pipe: written in place, in order.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(fds[1]);
    std::vector<uint8_t> got;
    uint8_t buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) got.insert(got.end(), buf, buf + n);
    _exit(got == expected ? 0 : 1);
  }
  close(fds[0]);
  const std::string pipePath = "/proc/self/fd/" + std::to_string(fds[1]);
  elf::writeOutputFile(pipePath, file, true, input);
  close(fds[1]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the pipe's reader saw other bytes";
}

}  // namespace
}  // namespace atomx
