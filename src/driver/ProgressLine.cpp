#include "driver/ProgressLine.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace atomx::driver {

ProgressLine::ProgressLine(std::string what, bool quiet) : what_(std::move(what)), shown_(!quiet && isatty(2)) {
  if (!shown_) return;
  printer_ = std::thread([this] {
    int last = -1;
    while (!stop_.load()) {
      const uint64_t total = progress_.total.load(), done = progress_.done.load();
      const int percent = total ? int(100.0 * double(done) / double(total)) : 0;
      if (percent != last) {
        std::fprintf(stderr, "\ratomx: %s: %3d%%", what_.c_str(), percent > 100 ? 100 : percent);
        std::fflush(stderr);
        last = percent;
      }
      for (int k = 0; k < 10 && !stop_.load(); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
}

ProgressLine::~ProgressLine() {
  if (!shown_) return;
  stop_ = true;
  printer_.join();
  std::fprintf(stderr, "\r%*s\r", int(what_.size() + 16), "");
  std::fflush(stderr);
}

}  // namespace atomx::driver
