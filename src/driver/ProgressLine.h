// A progress line on a terminal for long work (regen, analyze, melt): while
// it lives, a thread rewrites "atomx: WHAT: NN%" on stderr twice a second
// from a trace::Progress, and clears it at the end.  Nothing when stderr is
// not a terminal or when asked to be quiet, so scripts and tests see no
// such line.
#pragma once

#include <atomx/trace.hpp>

#include <atomic>
#include <string>
#include <thread>

namespace atomx::driver {

class ProgressLine {
 public:
  ProgressLine(std::string what, bool quiet);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  // What the work updates; null when no line is shown (so the work counts
  // nothing).
  trace::Progress* progress() { return shown_ ? &progress_ : nullptr; }

 private:
  std::string what_;
  bool shown_;
  trace::Progress progress_;
  std::atomic<bool> stop_{false};
  std::thread printer_;
};

}  // namespace atomx::driver
