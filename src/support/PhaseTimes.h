// PhaseTimes: wall-clock seconds per named phase of one run, in the order
// the phases ran, for `--report FILE` (rewrite/Report.cpp writes them under
// "phases").  Phases do not nest and do not overlap, so they sum to at most
// total(): the wall time from the first phase's start to the last one's end,
// which also holds the bookkeeping between phases.  Any layer may add its
// own phases (instrument::Session adds the tool's); this one knows no names.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace atomx {

class PhaseTimes {
 public:
  using Clock = std::chrono::steady_clock;
  struct Phase {
    std::string name;
    double seconds = 0;
  };

  // Runs f() as the phase `name` and returns what it returns.
  template <class F>
  decltype(auto) time(std::string name, F&& f) {
    struct Stop {
      PhaseTimes& times;
      std::string name;
      Clock::time_point start = Clock::now();
      ~Stop() { times.add(std::move(name), start, Clock::now()); }
    } stop{*this, std::move(name)};
    return std::forward<F>(f)();
  }
  // A phase that ran from `start` to `end` (a second run of a name adds to it).
  void add(std::string name, Clock::time_point start, Clock::time_point end) {
    const double s = std::chrono::duration<double>(end - start).count();
    first_ = started_ ? std::min(first_, start) : start;
    last_ = started_ ? std::max(last_, end) : end;
    started_ = true;
    for (Phase& p : phases_)
      if (p.name == name) {
        p.seconds += s;
        return;
      }
    phases_.push_back({std::move(name), s});
  }

  const std::vector<Phase>& phases() const { return phases_; }
  double seconds(const std::string& name) const {
    for (const Phase& p : phases_)
      if (p.name == name) return p.seconds;
    return 0;
  }
  double total() const { return started_ ? std::chrono::duration<double>(last_ - first_).count() : 0; }

 private:
  std::vector<Phase> phases_;
  bool started_ = false;
  Clock::time_point first_{}, last_{};
};

}  // namespace atomx
