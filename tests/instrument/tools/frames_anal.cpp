// Per procedure: frames entered, returned, left by unwinding, still active at
// the end (atomx::FrameTracker), to frames.out: NAME ENTERED RETURNED UNWOUND ACTIVE.
#include <atomx/analysis.h>
#include <atomx/frames.hpp>

#include <cstdio>
#include <map>
#include <string>

namespace {
struct Counts { long entered = 0, returned = 0, unwound = 0, active = 0; };
std::map<std::string, Counts> counts;
atomx::FrameTracker<const char*> frames;  // the test programs have one thread
}  // namespace

extern "C" {
void Enter(const char* name, long sp) {
  frames.enter(uint64_t(sp), name, [](const char* n) { ++counts[n].unwound; });
  ++counts[name].entered;
}
void Leave(const char* name, long sp) {
  if (frames.leave(uint64_t(sp), [](const char* n) { ++counts[n].unwound; })) ++counts[name].returned;
}
void Done() {
  frames.drain([](const char* n) { ++counts[n].active; });
  std::FILE* f = std::fopen(AtomxOutputPath("frames.out"), "w");
  for (const auto& [name, c] : counts) std::fprintf(f, "%s %ld %ld %ld %ld\n", name.c_str(), c.entered, c.returned, c.unwound, c.active);
  std::fclose(f);
}
}
