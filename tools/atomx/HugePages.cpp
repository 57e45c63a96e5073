#include "HugePages.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace atomx::cli {

namespace {

// Set in the second process: "-" when GLIBC_TUNABLES was unset, else "=" and
// its value.
constexpr const char* kSaved = "ATOMX_SAVED_GLIBC_TUNABLES";
// Huge pages for the heap, and the heap grown 32 MB at a time so that they
// can be whole.
constexpr const char* kSetting = "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=33554432";

bool kernelLeavesItToMadvise() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  return std::getline(in, line) && line.find("[madvise]") != std::string::npos;
}

}  // namespace

void startWithHugePageHeap(char** argv) {
  if (const char* saved = std::getenv(kSaved)) {  // the second start: put the environment back
    if (saved[0] == '=') setenv("GLIBC_TUNABLES", saved + 1, 1);
    else unsetenv("GLIBC_TUNABLES");
    unsetenv(kSaved);
    return;
  }
  if (const char* off = std::getenv("ATOMX_HUGE_PAGES"); off && std::strcmp(off, "0") == 0) return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.hugetlb")) return;
  if (!kernelLeavesItToMadvise()) return;
  const std::string before = tunables ? tunables : "";
  setenv(kSaved, (tunables ? "=" + before : std::string("-")).c_str(), 1);
  setenv("GLIBC_TUNABLES", (before.empty() ? std::string(kSetting) : before + ":" + kSetting).c_str(), 1);
  execv("/proc/self/exe", argv);
  // Not started again: go on without, as given.
  if (tunables) setenv("GLIBC_TUNABLES", before.c_str(), 1);
  else unsetenv("GLIBC_TUNABLES");
  unsetenv(kSaved);
}

}  // namespace atomx::cli
