// The privileged schedule log's collector (docs/trace.md, "The privileged
// schedule log"): while `atomx trace` runs the program, an eBPF program on
// sched:sched_switch (bpf/schedule.bpf.c, embedded as a skeleton) logs every
// context switch of a thread of the trace, and a thread of atomx drains its
// ring buffer into DIR/schedule (include/atomx/trace_format.h,
// AtomxScheduleRecord).  Needs root (or CAP_BPF and CAP_PERFMON), a kernel
// with BTF, and atomx built with libbpf, clang and bpftool.
#pragma once

#include <memory>
#include <string>

namespace atomx::trace {
class ScheduleChain;
}

namespace atomx::driver {

// Whether this atomx was built with the collector ("built in"), for --help.
bool scheduleLogBuiltIn();

class ScheduleLog {
 public:
  // Starts logging the switches of every process this one forks from now
  // on (and of theirs), into dir/schedule; nullptr with `why` (one line)
  // when the eBPF program cannot be loaded or attached: no privilege, no
  // BTF, or built without libbpf.  ATOMX_TEST_NO_BPF=1 (a test's hook)
  // behaves as a build without it.
  static std::unique_ptr<ScheduleLog> start(const std::string& dir, std::string& why);
  // Drains what is left, writes the count of switches lost, detaches.
  ~ScheduleLog();
  void stop();
  uint64_t records() const;
  uint64_t lost() const;
  // Whether every switch reached the log (ScheduleChain::missing), nullptr
  // for a build without it.
  const trace::ScheduleChain* chain() const;

  struct Impl;

 private:
  explicit ScheduleLog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace atomx::driver
