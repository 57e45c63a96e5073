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
#include <map>
#include <vector>

#include "schedule.skel.h"
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
  FILE* out = nullptr;
  std::string path;
  std::thread drainer;
  std::atomic<bool> stopping{false};
  uint64_t records = 0, lost = 0;
  int64_t shift = testShift();
  std::pair<int, int64_t> perturbed = testRegister();
  bool stopped = false;

  static int take(void* self, void* data, size_t size) {
    Impl& impl = *static_cast<Impl*>(self);
    if (size < sizeof(AtomxScheduleRecord)) return 0;
    AtomxScheduleRecord r;
    std::memcpy(&r, data, sizeof r);
    if (impl.shift && (r.flags & ATOMX_SCHEDULE_POSITION)) r.offset = uint64_t(int64_t(r.offset) + impl.shift);
    if (impl.perturbed.first >= 0 && (r.flags & ATOMX_SCHEDULE_OUT) && (r.flags & ATOMX_SCHEDULE_REGISTERS) &&
        !(r.flags & ATOMX_SCHEDULE_UNTRACED_PC))
      r.regs[impl.perturbed.first] += uint64_t(impl.perturbed.second);
    if (std::fwrite(&r, sizeof r, 1, impl.out) != 1) return -EIO;
    ++impl.records;
    return 0;
  }
  ~Impl() {
    if (ring) ring_buffer__free(ring);
    if (skel) schedule::destroy(skel);
    if (out) std::fclose(out);
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
  impl->out = std::fopen(impl->path.c_str(), "w+b");
  if (!impl->out) throw Error(impl->path + ": cannot write the schedule log");
  const AtomxScheduleHeader h{ATOMX_SCHEDULE_MAGIC, ATOMX_SCHEDULE_VERSION, uint32_t(sizeof(AtomxScheduleRecord)), 0, 0};
  std::fwrite(&h, sizeof h, 1, impl->out);
  impl->ring = ring_buffer__new(bpf_map__fd(impl->skel->maps.records), &Impl::take, impl.get(), nullptr);
  if (!impl->ring) {
    why = std::string("its ring buffer cannot be read (") + std::strerror(errno) + ")";
    std::fclose(impl->out);
    impl->out = nullptr;
    std::remove(impl->path.c_str());  // (the manifest will name no schedule)
    return nullptr;
  }
  Impl* p = impl.get();
  impl->drainer = std::thread([p] {
    // Every 10 ms (the eBPF program wakes it only when the buffer is half
    // full: a wakeup per switch would log switches of its own).
    while (!p->stopping.load(std::memory_order_acquire)) ring_buffer__poll(p->ring, 10);
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
  AtomxScheduleHeader h{ATOMX_SCHEDULE_MAGIC, ATOMX_SCHEDULE_VERSION, uint32_t(sizeof(AtomxScheduleRecord)), 0, i.lost};
  bool ok = std::fflush(i.out) == 0;
  if (ok && std::getenv("ATOMX_TEST_SCHEDULE_SWAP")) {  // (a test's hook: the records read back, two swapped)
    std::vector<AtomxScheduleRecord> all(i.records);
    ok = std::fseek(i.out, sizeof h, SEEK_SET) == 0 && std::fread(all.data(), sizeof(AtomxScheduleRecord), all.size(), i.out) == all.size();
    swapForTest(all);
    ok = ok && std::fseek(i.out, sizeof h, SEEK_SET) == 0 &&
         std::fwrite(all.data(), sizeof(AtomxScheduleRecord), all.size(), i.out) == all.size();
  }
  if (!ok || std::fseek(i.out, 0, SEEK_SET) != 0 || std::fwrite(&h, sizeof h, 1, i.out) != 1 || std::fclose(i.out) != 0) {
    i.out = nullptr;
    throw Error(i.path + ": cannot write the schedule log");
  }
  i.out = nullptr;
}

uint64_t ScheduleLog::records() const { return impl_->records; }
uint64_t ScheduleLog::lost() const { return impl_->lost; }

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

#endif

ScheduleLog::ScheduleLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ScheduleLog::~ScheduleLog() {
  try {
    stop();
  } catch (...) {
  }
}

}  // namespace atomx::driver
