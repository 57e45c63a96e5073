// Merged mode (TraceReader::analyzeMerged, docs/trace.md "Ordering threads
// and processes"): every selected thread's path cut where the schedule
// says (SyncPoints.h), the slices merged (Schedule.h), and the threads'
// walks run at once, each on a thread of its own, taking turns slice by
// slice to hand their events to one shard of each analyser.
#include <atomx/analyzer.hpp>
#include <atomx/trace.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "support/Error.h"
#include "trace/Schedule.h"
#include "trace/Switches.h"
#include "trace/SyncPoints.h"
#include "trace/TraceFiles.h"
#include "trace/Walk.h"

namespace atomx::trace {

namespace {

// Each stream's process and start (CLOCK_MONOTONIC; 0: unknown) from the
// event log: its `stream` line's process; the first `process`, `thread`,
// `forked` or `vforked` line of its thread, or for thread.TID-K.axt (the
// K-th program exec'd in the thread) the thread's K-th `exec` line.
struct Origin {
  int pid = 0;
  uint64_t start = 0;
};
std::vector<Origin> origins(const std::string& dir, const std::vector<Stream>& streams) {
  const std::vector<Event> log = events(dir);
  std::vector<Origin> out(streams.size());
  for (size_t k = 0; k < streams.size(); ++k) {
    const std::string& name = streams[k].name;
    const size_t dash = name.find('-');
    const unsigned exec = dash == std::string::npos ? 0 : unsigned(std::strtoul(name.c_str() + dash + 1, nullptr, 10));
    unsigned execs = 0;
    bool started = false;
    for (const Event& e : log) {
      if (e.kind == "stream" && e.detail.size() >= name.size() &&
          e.detail.compare(e.detail.size() - name.size(), name.size(), name) == 0)
        out[k].pid = e.pid;
      if (e.thread != streams[k].thread || started) continue;
      const bool begins = e.kind == "process" || e.kind == "thread" || e.kind == "forked" || e.kind == "vforked";
      if (exec == 0 ? begins : e.kind == "exec" && ++execs == exec) out[k].start = e.ns, started = true;
    }
  }
  return out;
}

// Whose turn it is: the merged slices, one at a time.
class Turns {
 public:
  Turns(std::vector<Slice> order, size_t threads) : order_(std::move(order)), finished_(threads, false) {}
  // Waits for thread t's next slice, [from, to) on `cpu`; false when it
  // has none left.
  bool wait(size_t t, uint64_t& from, uint64_t& to, int& cpu) {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return turn_ >= order_.size() || order_[turn_].thread == t; });
    if (turn_ >= order_.size()) return false;
    from = order_[turn_].from;
    to = order_[turn_].to;
    cpu = order_[turn_].cpu;
    return true;
  }
  // Thread t's slice is done.
  void done() {
    const std::lock_guard<std::mutex> lock(m_);
    ++turn_;
    skip();
    cv_.notify_all();
  }
  // Thread t has no more events: its slices left are skipped.
  void finish(size_t t) {
    const std::lock_guard<std::mutex> lock(m_);
    finished_[t] = true;
    skip();
    cv_.notify_all();
  }

 private:
  void skip() {
    while (turn_ < order_.size() && finished_[order_[turn_].thread]) ++turn_;
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<Slice> order_;
  std::vector<bool> finished_;
  size_t turn_ = 0;
};

// One thread's walk, handing its events on in its turns: a block that runs
// past the slice's end is cut there (its rest a run of its own); the events
// between blocks (calls, signals, library calls) go with the slice of the
// instruction before them.  Each turn's events follow a `slice` event that
// says the slice's CPU.  Inherited events are left out, and so are the
// slices on CPUs other than `cpus` (when it is not empty).
class Gate : public Consumer {
 public:
  Gate(Turns& turns, size_t t, const std::vector<Consumer*>& out, const std::vector<int>& cpus)
      : turns_(turns), t_(t), out_(out), cpus_(cpus) {}
  void threadBegin(int thread) override { tid_ = thread; }
  void loadBias(int, uint64_t bias) override { bias_ = bias; }
  void block(const BlockRun& b) override {
    inherited_ = b.inherited;
    if (b.inherited) return;
    if (b.count == 0) {
      if (take())
        for (Consumer* c : to()) c->block(b);
      return;
    }
    for (size_t off = 0; off < b.count;) {
      if (running_ && index_ >= to_) release();
      if (!take()) return;
      if (index_ < from_) {  // instructions the order has in no slice (ATOMX_TEST_MERGE_DROP): left out
        const size_t skip = size_t(std::min<uint64_t>(b.count - off, from_ - index_));
        off += skip;
        index_ += skip;
        continue;
      }
      if (to_ <= index_) continue;  // (no slice is empty: never)
      const size_t n = size_t(std::min<uint64_t>(b.count - off, to_ - index_));
      BlockRun part = b;
      part.insns = b.insns + off;
      part.count = n;
      if (off > 0) part.start = b.insns[off].pc;  // (not `continued`: that is a signal's, whose rest is not fetched again)
      if (b.refCount && (off > 0 || n < b.count)) {
        refs_.clear();
        for (size_t r = 0; r < b.refCount; ++r)
          if (b.refs[r].insn >= off && b.refs[r].insn < off + n) {
            refs_.push_back(b.refs[r]);
            refs_.back().insn -= uint32_t(off);
          }
        part.refs = refs_.data();
        part.refCount = refs_.size();
      }
      for (Consumer* c : to()) c->block(part);
      off += n;
      index_ += n;
    }
  }
  void outsideCall(int thread, uint64_t site, const std::string& name) override {
    if (!inherited_ && take())
      for (Consumer* c : to()) c->outsideCall(thread, site, name);
  }
  void libraryCall(const LibraryCall& call) override {
    if (!call.inherited && take())
      for (Consumer* c : to()) c->libraryCall(call);
  }
  void signal(const SignalEvent& e) override {
    if (!e.inherited && take())
      for (Consumer* c : to()) c->signal(e);
  }
  void threadEnd(int thread, const std::string& problem) override {
    if (take() && begun_)  // (a thread none of whose slices was shown has not begun)
      for (Consumer* c : out_) c->threadEnd(thread, problem);
    running_ = false;
    turns_.finish(t_);
  }

 private:
  bool take() {
    if (running_) return true;
    if (!turns_.wait(t_, from_, to_, cpu_)) return false;
    running_ = true;
    shown_ = cpus_.empty() || std::count(cpus_.begin(), cpus_.end(), cpu_);
    if (!shown_) return true;
    if (!begun_) {
      begun_ = true;
      for (Consumer* c : out_) c->threadBegin(tid_), c->loadBias(tid_, bias_);
    }
    for (Consumer* c : out_) c->slice(tid_, cpu_);
    return true;
  }
  // Where the current slice's events go: nowhere when it is not shown.
  const std::vector<Consumer*>& to() const { return shown_ ? out_ : none_; }
  void release() {
    running_ = false;
    turns_.done();
  }
  Turns& turns_;
  size_t t_;
  const std::vector<Consumer*>& out_;
  const std::vector<Consumer*> none_;
  const std::vector<int>& cpus_;
  bool shown_ = false;
  int tid_ = 0;
  uint64_t bias_ = 0;
  bool running_ = false, begun_ = false, inherited_ = false;
  uint64_t index_ = 0, from_ = 0, to_ = 0;
  int cpu_ = -1;
  std::vector<DataRef> refs_;
};

// ATOMX_TEST_MERGE_DROP=K (a test's hook): the merged order loses its K-th
// slice (what the per-thread equality of the merged trace must catch).
void dropForTest(std::vector<Slice>& order) {
  const char* v = std::getenv("ATOMX_TEST_MERGE_DROP");
  if (!v || !*v) return;
  const size_t k = size_t(std::strtoull(v, nullptr, 10));
  if (k < order.size()) order.erase(order.begin() + std::ptrdiff_t(k));
}

// ATOMX_TEST_MERGE_ONE_CPU=1 (a test's hook): every slice on CPU 0 (what
// the per-CPU cache simulation's oracle must catch).
void oneCpuForTest(std::vector<Slice>& order) {
  const char* v = std::getenv("ATOMX_TEST_MERGE_ONE_CPU");
  if (!v || std::strcmp(v, "1") != 0) return;
  for (Slice& s : order) s.cpu = 0;
}

}  // namespace

Summary TraceReader::analyzeMerged(const std::vector<Analyzer*>& analyzers, const Selection& select) const {
  std::vector<Stream> all = listStreams(dir());
  const std::vector<Origin> from = origins(dir(), all);
  std::vector<Stream> streams;
  std::vector<Origin> origin;
  for (size_t k = 0; k < all.size(); ++k) {
    const bool chosen = (select.processes.empty() && select.threads.empty()) ||
                        std::count(select.processes.begin(), select.processes.end(), from[k].pid) ||
                        std::count(select.threads.begin(), select.threads.end(), all[k].thread);
    if (chosen) streams.push_back(std::move(all[k])), origin.push_back(from[k]);
  }
  const size_t n = streams.size();
  if (n == 0 && !(select.processes.empty() && select.threads.empty()))
    throw Error(dir() + ": no thread of the trace is of the processes or threads selected (atomx regen " + dir() +
                " --events lists them)");
  Summary sum;
  // The cuts: each stream walked once for its sync calls.
  std::vector<ThreadCuts> cuts(n);
  {
    InstructionLists insns = instructionLists(*impl_);
    for (size_t k = 0; k < n; ++k) {
      std::vector<uint64_t> positions;
      SyncCallFinder finder(positions);
      Summary ignored;
      walkStream(*impl_, streams[k], finder, ignored, insns, &positions);
      std::string problem;
      cuts[k] = syncCuts(origin[k].pid, streams[k].thread, streams[k].syncs, finder.calls(), origin[k].start, problem);
      if (!problem.empty()) sum.scheduleProblems.push_back("thread " + std::to_string(streams[k].thread) + ": " + problem);
      streams[k].syncs = {};
    }
  }
  // With the privileged schedule log, each thread's path is cut where it
  // was switched in too (Switches.h): on one CPU the runs between switches
  // are the real interleaving, and the sync points' keys fall inside their
  // runs, so the two together keep both orders.
  if (manifestOf(*impl_).schedule.find(ATOMX_TRACE_SCHEDULE_SWITCHES) != std::string::npos) {
    const std::vector<SwitchPoint> points = switchPoints(*this);
    const size_t unreported = size_t(std::count_if(points.begin(), points.end(), [](const SwitchPoint& p) { return p.unreported; }));
    if (unreported)
      sum.scheduleWarnings.push_back("the schedule log lacks switches the kernel did not report, before " +
                                     std::to_string(unreported) +
                                     " of its switches (flagged unreported by regen --switches): the runs there are ordered "
                                     "by the sync points and the switches around them, not exactly");
    const std::map<std::string, ThreadCuts> switched = switchCuts(points);
    for (size_t k = 0; k < n; ++k) {
      const auto it = switched.find(streams[k].name);
      if (it == switched.end()) continue;
      std::vector<CutPoint>& c = cuts[k].cuts;
      c.insert(c.end(), it->second.cuts.begin(), it->second.cuts.end());
      std::stable_sort(c.begin(), c.end(), [](const CutPoint& a, const CutPoint& b) {
        return a.index != b.index ? a.index < b.index : a.key < b.key;
      });
    }
  }
  std::vector<Slice> order = mergeSchedule(cuts);
  dropForTest(order);
  oneCpuForTest(order);
  // The walks, all at once, in turns.
  std::vector<std::unique_ptr<Consumer>> shards(analyzers.size());
  std::vector<Consumer*> to;
  const Shard merged{0, 0, "merged", true};
  for (size_t a = 0; a < analyzers.size(); ++a) to.push_back((shards[a] = analyzers[a]->shard(merged)).get());
  Turns turns(std::move(order), n);
  std::vector<Summary> sums(n);
  std::vector<std::exception_ptr> errors(n);
  // Each walk's instruction lists, kept until the analysers have reported:
  // BlockRun::insns points into them (an analyser may key its state by
  // the pointer: one walk's lists freed while another walk goes on would
  // give their addresses to new ones).
  std::vector<InstructionLists> insns(n);
  std::vector<std::thread> walks;
  for (size_t k = 0; k < n; ++k)
    walks.emplace_back([&, k] {
      Gate gate(turns, k, to, select.cpus);
      try {
        insns[k] = instructionLists(*impl_);
        walkStream(*impl_, streams[k], gate, sums[k], insns[k]);
      } catch (...) {
        errors[k] = std::current_exception();
      }
      turns.finish(k);
    });
  for (std::thread& w : walks) w.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  for (const Summary& s : sums) addSummary(sum, s);
  addStreamless(dir(), sum);
  for (size_t a = 0; a < analyzers.size(); ++a) {
    std::vector<std::unique_ptr<Consumer>> one;
    one.push_back(std::move(shards[a]));
    analyzers[a]->merge(one);
  }
  for (Analyzer* a : analyzers) a->report(sum);
  return sum;
}

}  // namespace atomx::trace
