#include "driver/ScheduleLog.h"

#include <atomx/trace_format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#ifdef ATOMX_HAVE_BPF
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <vector>

#include "schedule.skel.h"
#include "trace/ScheduleFile.h"
#endif

#include "support/Error.h"

namespace atomx::driver {

#ifdef ATOMX_HAVE_BPF

bool scheduleLogBuiltIn() { return true; }

namespace {
// ATOMX_TEST_SCHEDULE_SHIFT=N (the oracles' must-fail twin, tests/trace):
// every recorded stream position is moved N bytes on.
int64_t testShift() {
  const char* v = std::getenv("ATOMX_TEST_SCHEDULE_SHIFT");
  return v ? std::strtoll(v, nullptr, 10) : 0;
}
// ATOMX_TEST_SCHEDULE_REGISTER=R:D (the iteration oracle's must-fail twin):
// D is added to register R (by hardware number) of every switch-out in
// traced code; {-1, 0}: none.
std::pair<int, int64_t> testRegister() {
  const char* v = std::getenv("ATOMX_TEST_SCHEDULE_REGISTER");
  if (!v) return {-1, 0};
  char* end = nullptr;
  const long r = std::strtol(v, &end, 10);
  if (*end != ':' || r < 0 || r >= 16) return {-1, 0};
  return {int(r), std::strtoll(end + 1, nullptr, 10)};
}
// ATOMX_TEST_SCHEDULE_DROP=K (the gap check's test): the K-th record
// drained (from 1) of a traced thread switched out is left out, as if the
// kernel had not reported that switch; 0: none.
uint64_t testDrop() {
  const char* v = std::getenv("ATOMX_TEST_SCHEDULE_DROP");
  return v ? std::strtoull(v, nullptr, 10) : 0;
}
// ATOMX_TEST_SCHEDULE_SWAP=K (the consistency check's must-fail twin):
// the positions of two consecutive positioned switch-outs of a thread, the
// first pair from the K-th on whose positions differ (of the lowest
// thread id that has one), are swapped in the file written.
void swapForTest(std::vector<AtomxScheduleRecord>& records) {
  const char* v = std::getenv("ATOMX_TEST_SCHEDULE_SWAP");
  const long k = v ? std::atol(v) : 0;
  if (k <= 0) return;
  std::map<uint32_t, std::vector<size_t>> outs;
  for (size_t i = 0; i < records.size(); ++i)
    if ((records[i].flags & ATOMX_SCHEDULE_OUT) && (records[i].flags & ATOMX_SCHEDULE_POSITION))
      outs[records[i].prevTid].push_back(i);
  for (auto& [tid, list] : outs) {
    std::sort(list.begin(), list.end(), [&](size_t a, size_t b) { return records[a].ns < records[b].ns; });
    for (size_t j = size_t(k); j < list.size(); ++j) {
      AtomxScheduleRecord& a = records[list[j - 1]];
      AtomxScheduleRecord& b = records[list[j]];
      if (a.chunk == b.chunk && a.offset == b.offset) continue;  // no progress between: the swap would change nothing
      std::swap(a.chunk, b.chunk), std::swap(a.offset, b.offset), std::swap(a.pc, b.pc), std::swap(a.flags, b.flags);
      std::swap(a.regs, b.regs);
      return;
    }
  }
}
// libbpf's own messages: only with ATOMX_BPF_VERBOSE set (a failed load
// says why in one line of ours).
int quietPrint(enum libbpf_print_level, const char* format, va_list args) {
  return std::getenv("ATOMX_BPF_VERBOSE") ? std::vfprintf(stderr, format, args) : 0;
}
}  // namespace

struct ScheduleLog::Impl {
  schedule* skel = nullptr;
  ring_buffer* ring = nullptr;
  int out = -1;
  std::string path;
  std::thread drainer;
  std::atomic<bool> stopping{false};
  uint64_t records = 0, lost = 0;
  int64_t shift = testShift();
  // The test hook keeps every record to the end (swapForTest).
  bool keepAll = std::getenv("ATOMX_TEST_SCHEDULE_SWAP") != nullptr;
  bool stopped = false, failed = false;
  // Drained and not yet written: a frame is written when it has
  // ATOMX_SCHEDULE_FRAME_RECORDS of them or a second has passed since the
  // last one (a frame of a few records compresses poorly), and at the end.
  std::vector<AtomxScheduleRecord> pending;
  std::chrono::steady_clock::time_point lastFrame = std::chrono::steady_clock::now();
  std::pair<int, int64_t> perturbed = testRegister();
  uint64_t drop = testDrop(), outs = 0;
  trace::ScheduleChain chain;  // whether each record follows its CPU's last (missing switches)

  static int take(void* self, void* data, size_t size) {
    Impl& impl = *static_cast<Impl*>(self);
    if (size < sizeof(AtomxScheduleRecord)) return 0;
    AtomxScheduleRecord r;
    std::memcpy(&r, data, sizeof r);
    if (impl.shift && (r.flags & ATOMX_SCHEDULE_POSITION)) r.offset = uint64_t(int64_t(r.offset) + impl.shift);
    if (impl.perturbed.first >= 0 && (r.flags & ATOMX_SCHEDULE_OUT) && (r.flags & ATOMX_SCHEDULE_REGISTERS) &&
        !(r.flags & ATOMX_SCHEDULE_UNTRACED_PC))
      r.regs[impl.perturbed.first] += uint64_t(impl.perturbed.second);
    if (impl.drop && (r.flags & ATOMX_SCHEDULE_OUT) && ++impl.outs == impl.drop) return 0;
    impl.chain.follows(r);
    impl.pending.push_back(r);
    ++impl.records;
    return 0;
  }
  // Writes the pending records as frames, each whole in one write (a run
  // that ends abruptly keeps every frame written: trace_format.h); with
  // `all` false, only once a frame is full or a second has passed.
  bool write(bool all) {
    const auto now = std::chrono::steady_clock::now();
    if (failed) return false;
    if (pending.empty() || (!all && (keepAll || (pending.size() < ATOMX_SCHEDULE_FRAME_RECORDS &&
                                                  now - lastFrame < std::chrono::seconds(1)))))
      return true;
    lastFrame = now;
    for (size_t at = 0; at < pending.size(); at += ATOMX_SCHEDULE_FRAME_RECORDS) {
      const std::string frame =
          trace::scheduleFrame(pending.data() + at, std::min<size_t>(ATOMX_SCHEDULE_FRAME_RECORDS, pending.size() - at));
      if (::write(out, frame.data(), frame.size()) != ssize_t(frame.size())) return !(failed = true);
    }
    pending.clear();
    return true;
  }
  ~Impl() {
    if (ring) ring_buffer__free(ring);
    if (skel) schedule::destroy(skel);
    if (out >= 0) ::close(out);
  }
};

std::unique_ptr<ScheduleLog> ScheduleLog::start(const std::string& dir, std::string& why) {
  if (const char* v = std::getenv("ATOMX_TEST_NO_BPF"); v && *v == '1') {
    why = "the test hook ATOMX_TEST_NO_BPF=1 leaves it out";
    return nullptr;
  }
  libbpf_set_print(quietPrint);
  auto impl = std::make_unique<Impl>();
  impl->skel = schedule::open_and_load();
  if (!impl->skel) {
    const int e = errno;
    why = std::string("its eBPF program does not load (") + std::strerror(e) +
          (e == EPERM || e == EACCES ? ": it needs root, or CAP_BPF and CAP_PERFMON" : "") + ")";
    return nullptr;
  }
  // This process's children are the trace's (FOLLOW: atomx itself is not).
  const uint32_t self = uint32_t(getpid());
  const uint8_t follow = 2;
  if (bpf_map__update_elem(impl->skel->maps.tgids, &self, sizeof self, &follow, sizeof follow, 0) != 0) {
    why = std::string("its process map cannot be filled (") + std::strerror(errno) + ")";
    return nullptr;
  }
  if (schedule::attach(impl->skel) != 0) {
    why = std::string("its eBPF program does not attach to sched:sched_switch (") + std::strerror(errno) + ")";
    return nullptr;
  }
  impl->path = dir + "/" ATOMX_TRACE_SCHEDULE;
  impl->out = ::open(impl->path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const AtomxScheduleHeader h = trace::scheduleHeader(0);
  if (impl->out < 0 || ::write(impl->out, &h, sizeof h) != ssize_t(sizeof h))
    throw Error(impl->path + ": cannot write the schedule log");
  impl->ring = ring_buffer__new(bpf_map__fd(impl->skel->maps.records), &Impl::take, impl.get(), nullptr);
  if (!impl->ring) {
    why = std::string("its ring buffer cannot be read (") + std::strerror(errno) + ")";
    ::close(impl->out);
    impl->out = -1;
    std::remove(impl->path.c_str());  // (the manifest will name no schedule)
    return nullptr;
  }
  Impl* p = impl.get();
  impl->drainer = std::thread([p] {
    // Every 10 ms (the eBPF program wakes it only when the buffer is half
    // full: a wakeup per switch would log switches of its own; and
    // ring_buffer__poll consumes only a ring that woke it, so what came
    // without a wakeup is consumed here).  A frame that cannot be written
    // is found again at stop().
    while (!p->stopping.load(std::memory_order_acquire)) {
      ring_buffer__poll(p->ring, 10);
      ring_buffer__consume(p->ring);
      if (!p->write(false)) break;
    }
  });
  return std::unique_ptr<ScheduleLog>(new ScheduleLog(std::move(impl)));
}

void ScheduleLog::stop() {
  Impl& i = *impl_;
  if (i.stopped) return;
  i.stopped = true;
  i.stopping.store(true, std::memory_order_release);
  if (i.drainer.joinable()) i.drainer.join();
  schedule::detach(i.skel);
  while (ring_buffer__consume(i.ring) > 0) {
  }
  i.lost = i.skel->bss->lost;
  if (i.keepAll) swapForTest(i.pending);  // (a test's hook: two positions swapped)
  const AtomxScheduleHeader h = trace::scheduleHeader(i.lost);
  const bool ok = i.write(true) && ::pwrite(i.out, &h, sizeof h, 0) == ssize_t(sizeof h);
  if (::close(i.out) != 0 || !ok) {
    i.out = -1;
    throw Error(i.path + ": cannot write the schedule log");
  }
  i.out = -1;
}

uint64_t ScheduleLog::records() const { return impl_->records; }
uint64_t ScheduleLog::lost() const { return impl_->lost; }
const trace::ScheduleChain* ScheduleLog::chain() const { return &impl_->chain; }

#else

bool scheduleLogBuiltIn() { return false; }

struct ScheduleLog::Impl {};

std::unique_ptr<ScheduleLog> ScheduleLog::start(const std::string&, std::string& why) {
  why = "atomx was built without libbpf, clang and bpftool (docs/DEPENDENCIES.md)";
  return nullptr;
}
void ScheduleLog::stop() {}
uint64_t ScheduleLog::records() const { return 0; }
uint64_t ScheduleLog::lost() const { return 0; }
const trace::ScheduleChain* ScheduleLog::chain() const { return nullptr; }

#endif

ScheduleLog::ScheduleLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ScheduleLog::~ScheduleLog() {
  try {
    stop();
  } catch (...) {
  }
}

}  // namespace atomx::driver
