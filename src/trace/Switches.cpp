// Placing the schedule log's switches in the threads' paths (Schedule.h).
// A switch-out's record holds the thread's stream position (chunk, offset)
// and the instruction it was at (trace_format.h, AtomxScheduleRecord).
// Within one witness-free stretch of a path an instruction occurs at most
// once, so, as for a signal mark, the position and the instruction fix the
// point: the visit of the instruction where the walk stands at that
// position (BlockRun::streamPos; the block's last instruction stands after
// the witness stored before it, streamEnd).  In a data trace the walk says
// where each instruction stands (values are read among a block's
// instructions) and which registers it knows there (trace/Walk.h,
// WalkProbe): a loop of evaluated predicates writes nothing per iteration,
// and the visit whose known registers are the record's is the switch's
// iteration (as a signal mark's registers give its).  A thread switched out
// - outside the traced code (a library, a system call, the recorder) is
//   cut at its last record: before the first instruction that stands past
//   the position;
// - inside code atomx inserted before an instruction, whose cursor move is
//   still to come (PENDING): its stores' bytes are after the position, so
//   the point is the first visit of that instruction past the position;
//   else, as in the program's own code, at it;
// - with no buffer yet (its first record still to come), or whose words
//   cannot be read before its first position (atomx's child before it
//   execs the program): before its first instruction; with no buffer any
//   more, or exiting: after its last.
#include "trace/Switches.h"

#include <atomx/trace.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>

#include "support/Error.h"
#include "support/Hex.h"
#include "trace/DataRefs.h"
#include "trace/ScheduleFile.h"
#include "trace/TraceFiles.h"
#include "trace/Walk.h"

namespace atomx::trace {

namespace {

// One instruction of a thread's path as the placement sees it: its index
// (CutPoint's count), the stream position before it and its run's
// (BlockRun::streamPos), and in a data trace the walk's registers before it.
struct Point {
  uint64_t index, pc, pos, runPos;
  const uint64_t* gpr = nullptr;  // null: none to compare
  uint16_t known = 0;             // the registers of gpr an interrupted context's must equal (comparableRegisters)
};

// Places one thread's switch-outs (in the order of their positions) as its
// instructions go by: each at or after the one before.  In a data trace
// the walk says where each instruction stands and its registers (a
// WalkProbe, trace/Walk.h), before the instruction's run is reported;
// else each run's positions are its first's (streamPos) and its last's
// (streamEnd).
class Placer {
 public:
  Placer(std::vector<SwitchPoint*> outs, bool probed) : outs_(std::move(outs)), probed_(probed && !blockPositions()) {}

  void before(const WalkPoint& w) {
    if (probed_ && !w.inherited) at({count_ + w.offset, w.pc, w.pos, w.runPos, w.gpr, w.known});
  }
  void block(const BlockRun& b) {
    if (b.inherited) return;  // its parent's, before the fork: not counted (CutPoint)
    if (!probed_)
      for (size_t j = 0; j < b.count; ++j)
        at({count_ + j, b.insns[j].pc, j + 1 == b.count ? b.streamEnd : b.streamPos, b.streamPos});
    count_ += b.count;
  }
  void end() {
    for (; next_ < outs_.size(); ++next_) {
      SwitchPoint& s = *outs_[next_];
      if (firstVisit_) {  // the front one's instruction came at its position, with other registers
        place(s, *firstVisit_);
        s.ambiguous = true;
        firstVisit_.reset();
      } else if ((s.flags & ATOMX_SCHEDULE_EXITING) ||
                 (s.positioned ? (s.flags & ATOMX_SCHEDULE_UNTRACED_PC) : (s.flags & ATOMX_SCHEDULE_NO_BUFFER)))
        place(s, count_);  // after its last record, or it ended
      else if (s.positioned)
        s.why = "the instruction " + hex(s.pc) + " at stream byte " + std::to_string(s.pos) + " is not on the path";
      else if (s.why.empty())
        s.why = s.flags & ATOMX_SCHEDULE_RECORDER ? "no stream position (switched out while the recorder changed its buffer)"
                                                  : "its thread's words were not readable";
    }
  }

 private:
  // For the oracles' self-tests only (tests/trace/CMakeLists.txt):
  // ATOMX_TEST_SWITCH_FIRST=1 leaves the registers out (each switch at the
  // first visit of its instruction at its position, as before they were
  // compared); ATOMX_TEST_SWITCH_BLOCK_POSITIONS=1 places a data trace's
  // switches by its runs' positions alone, as a trace without data's.
  static bool registersIgnored() {
    static const bool v = std::getenv("ATOMX_TEST_SWITCH_FIRST") != nullptr;
    return v;
  }
  static bool blockPositions() {
    static const bool v = std::getenv("ATOMX_TEST_SWITCH_BLOCK_POSITIONS") != nullptr;
    return v;
  }

  void at(const Point& p) {
    watch(p);
    while (next_ < outs_.size() && decide(*outs_[next_], p)) {
      ++next_;
      firstVisit_.reset();
    }
  }
  void place(SwitchPoint& s, uint64_t index) {
    s.placed = true;
    s.index = index;
    last_ = s.index;
    seenPosition_ |= s.positioned;
  }
  // Whether the switch's registers are the walk's at p (true where there
  // are none to compare).  Inside code atomx inserted, a site that found
  // no dead register may have stepped %rsp over the red zone and pushed one
  // of %rax ... %rdi (runtime/trace/stores.h): unless %rsp is the walk's,
  // those are left out.
  static bool sameVisit(const SwitchPoint& s, const Point& p) {
    if (!p.gpr || !(s.flags & ATOMX_SCHEDULE_REGISTERS) || registersIgnored()) return true;
    uint16_t mask = p.known;
    if ((s.flags & ATOMX_SCHEDULE_INSERTED) && !((mask >> 4 & 1) && p.gpr[4] == s.regs[4])) mask &= ~0xffu;
    return sameRegisters(p.gpr, s.regs, mask);
  }
  // In a data trace's loop of evaluated predicates, which writes nothing
  // per iteration, an instruction can come again at the same position: the
  // walk's registers tell the iterations apart where it knows one that
  // differs between them (a loop's counter).  Each placement is watched
  // until the position moves: a later visit that fits as well makes it
  // ambiguous.
  struct Watch {
    SwitchPoint* s;
    uint64_t at, index;
  };
  void watch(const Point& p) {
    std::erase_if(watches_, [&](const Watch& w) {
      if (p.index > w.index && p.pc == w.s->pc && p.pos == w.at && sameVisit(*w.s, p)) return w.s->ambiguous = true;
      return p.pos > w.at;
    });
  }
  // Whether the front switch is decided at or before point p.
  bool decide(SwitchPoint& s, const Point& p) {
    if (s.flags & ATOMX_SCHEDULE_EXITING) return false;  // after its last record (end)
    if (!s.positioned) {
      // Before its first record: no buffer yet, or (its words unreadable)
      // its process not yet the program (atomx's child before its exec).
      if ((s.flags & ATOMX_SCHEDULE_NO_BUFFER) || !(s.flags & ATOMX_SCHEDULE_RECORDER))
        if (!seenPosition_ && p.index == 0) return place(s, 0), true;
      if (!(s.flags & ATOMX_SCHEDULE_RECORDER)) {
        s.why = "its thread's words were not readable";
        return true;
      }
      if (!(s.flags & ATOMX_SCHEDULE_NO_BUFFER)) {
        s.why = "no stream position (switched out while the recorder changed its buffer)";
        return true;
      }
      return false;  // it ended: after its last (end)
    }
    const uint64_t P = s.pos;
    if (s.flags & ATOMX_SCHEDULE_UNTRACED_PC) {
      if (p.pos > P) return place(s, p.index), true;  // the first instruction that stands past its last record
      return false;
    }
    const bool pending = s.flags & ATOMX_SCHEDULE_PENDING;
    if (p.index >= last_ && p.pc == s.pc && (pending ? p.pos > P : p.pos == P)) {
      if (sameVisit(s, p)) {
        place(s, p.index);
        watches_.push_back({&s, p.pos, p.index});
        return true;
      }
      if (!firstVisit_) firstVisit_ = p.index;  // another iteration
    }
    if (p.runPos > P + (pending ? 64 : 0)) {
      if (firstVisit_) {  // no visit had its registers: the first, ambiguous
        place(s, *firstVisit_);
        return s.ambiguous = true;
      }
      s.why = "the instruction " + hex(s.pc) + " at stream byte " + std::to_string(P) + " is not on the path";
      return true;
    }
    return false;
  }

  std::vector<SwitchPoint*> outs_;
  bool probed_;
  std::vector<Watch> watches_;
  size_t next_ = 0;
  uint64_t count_ = 0, last_ = 0;
  bool seenPosition_ = false;
  std::optional<uint64_t> firstVisit_;  // the front switch's first visit whose registers differed
};

class Cutter : public Consumer, public WalkProbe {
 public:
  // (TraceReader::regenerate walks the streams in listStreams' order.)
  Cutter(std::vector<Stream> streams, std::map<std::string, Placer>& placers) : streams_(std::move(streams)), placers_(placers) {}
  void threadBegin(int) override {
    const Stream& s = streams_.at(k_++);
    const auto it = placers_.find(s.name);
    active_ = it == placers_.end() ? nullptr : &it->second;
  }
  void before(const WalkPoint& w) override {
    if (active_) active_->before(w);
  }
  void block(const BlockRun& b) override {
    if (active_) active_->block(b);
  }
  void threadEnd(int, const std::string&) override {
    if (active_) active_->end();
    active_ = nullptr;
  }

 private:
  std::vector<Stream> streams_;
  std::map<std::string, Placer>& placers_;
  size_t k_ = 0;
  Placer* active_ = nullptr;
};

}  // namespace

namespace {

// Which stream of the thread a switch at time `ns` is in: a program exec'd
// in the thread writes thread.TID-K.axt (K = 1, 2, ...), and each traced
// program logs `exec` before it execs and `process` as it starts (the
// event log's clock is the schedule log's), so the streams of thread T, by
// K, are its traced programs', the K-th beginning at the K-th exec that a
// `process` followed; a switch before any is in the first stream (also
// atomx's child before its exec: before its first record).
class StreamOf {
 public:
  StreamOf(const std::string& dir, const std::vector<Stream>& streams, const std::vector<AtomxScheduleRecord>& records) {
    for (const Stream& s : streams) {
      const std::string id = s.name.substr(7, s.name.size() - 11);  // TID or TID-K
      const size_t dash = id.find('-');
      const int k = dash == std::string::npos ? 0 : std::atoi(id.c_str() + dash + 1);
      byK_[s.thread].emplace(k, s.name);
    }
    // Each thread's exec count at each record naming it, in time order,
    // and whether its words could not be read (in the exec system call,
    // the old program's memory is gone before the count moves).
    struct Seen {
      uint64_t ns;
      uint32_t exec;
      bool unreadable;
    };
    std::map<int, std::vector<Seen>> seen;
    for (const AtomxScheduleRecord& r : records) {
      if (r.flags & ATOMX_SCHEDULE_OUT) seen[int(r.prevTid)].push_back({r.ns, r.prevExec, !(r.flags & ATOMX_SCHEDULE_RECORDER)});
      if (r.flags & ATOMX_SCHEDULE_IN) seen[int(r.nextTid)].push_back({r.ns, r.nextExec, false});
    }
    // A program after the first begins at the exec that started it: an
    // `exec` of the thread followed by a `process` of it (a traced program
    // started) before its next `exec`.  The `exec` line is written before
    // the old program's last chunks, so the boundary is the first record
    // after it whose exec count differs from the one before it, or whose
    // words could not be read (else, with no switch in between, the
    // `process` line).
    std::vector<Event> log = events(dir);
    std::stable_sort(log.begin(), log.end(), [](const Event& a, const Event& b) { return a.ns < b.ns; });
    std::map<int, uint64_t> pending;  // by thread: its last exec not yet followed by a process
    for (const Event& e : log) {
      if (e.pid != e.thread) continue;
      if (e.kind == "exec") pending[e.thread] = e.ns;
      if (e.kind != "process" || !pending.count(e.thread)) continue;
      const uint64_t from = pending[e.thread];
      pending.erase(e.thread);
      uint64_t boundary = e.ns;
      const auto& v = seen[e.thread];
      const auto first = std::partition_point(v.begin(), v.end(), [&](const Seen& x) { return x.ns < from; });
      if (first != v.begin())
        for (auto it = first; it != v.end() && it->ns <= e.ns; ++it)
          if (it->exec != std::prev(first)->exec || it->unreadable) {
            boundary = it->ns;
            break;
          }
      starts_[e.thread].push_back(boundary);
    }
  }
  // "" when the thread left no such stream.
  std::string at(int tid, uint64_t ns) const {
    size_t g = 0;  // the execs of traced programs before ns
    if (const auto it = starts_.find(tid); it != starts_.end())
      g = size_t(std::upper_bound(it->second.begin(), it->second.end(), ns) - it->second.begin());
    const auto it = byK_.find(tid);
    if (it == byK_.end() || g >= it->second.size()) return {};
    return std::next(it->second.begin(), long(g))->second;
  }

 private:
  std::map<int, std::map<int, std::string>> byK_;  // by thread, by K: its streams' names
  std::map<int, std::vector<uint64_t>> starts_;    // by thread: when each program after its first began
};

}  // namespace

std::vector<SwitchPoint> switchPoints(const TraceReader& reader) {
  const ScheduleFile log = readSchedule(reader.dir());
  std::vector<Stream> streams = listStreams(reader.dir());
  const StreamOf streamOf(reader.dir(), streams, log.records);
  std::map<std::string, std::vector<uint64_t>> starts;  // by stream: where each chunk begins
  for (const Stream& s : streams) starts[s.name] = chunkStarts(s.path);
  std::vector<SwitchPoint> points;
  ScheduleChain chain;
  for (const AtomxScheduleRecord& r : log.records) {
    const bool unreported = !chain.follows(r);
    if (r.flags & ATOMX_SCHEDULE_OUT) {
      SwitchPoint s;
      s.ns = r.ns, s.cpu = r.cpu, s.tid = int(r.prevTid), s.pid = int(r.prevPid), s.out = true, s.flags = r.flags;
      s.unreported = unreported;
      s.other = r.flags & ATOMX_SCHEDULE_IN ? int(r.nextTid) : 0;
      s.pc = r.flags & ATOMX_SCHEDULE_REGISTERS ? r.pc : 0;
      std::copy(std::begin(r.regs), std::end(r.regs), s.regs);
      s.stream = streamOf.at(s.tid, s.ns);
      if (s.stream.empty()) s.why = "its thread left no stream for it";
      else if (r.flags & ATOMX_SCHEDULE_POSITION) {
        const std::vector<uint64_t>& chunks = starts[s.stream];
        if (r.chunk < chunks.size()) {
          s.positioned = true;
          s.pos = chunks[r.chunk] + r.offset;
        } else {
          s.why = "its chunk " + std::to_string(r.chunk) + " is not in " + s.stream;
        }
      }
      points.push_back(s);
    }
    if (r.flags & ATOMX_SCHEDULE_IN) {
      SwitchPoint s;
      s.ns = r.ns, s.cpu = r.cpu, s.tid = int(r.nextTid), s.pid = int(r.nextPid), s.out = false, s.flags = 0;
      s.unreported = unreported;
      s.other = r.flags & ATOMX_SCHEDULE_OUT ? int(r.prevTid) : 0;
      s.stream = streamOf.at(s.tid, s.ns);
      points.push_back(s);
    }
  }
  // Each stream's switch-outs are placed in the order of their positions,
  // not of their times, so that a log whose positions go back in time
  // shows as indices that do (the consistency a test checks).  One with no
  // position: before the first (no buffer yet), or after the last (it was
  // ending).
  std::map<std::string, std::vector<SwitchPoint*>> outs;
  std::map<std::string, uint64_t> firstPositioned;  // by stream: the time of its first positioned switch-out
  for (SwitchPoint& s : points)
    if (s.out && s.positioned && !firstPositioned.count(s.stream)) firstPositioned[s.stream] = s.ns;
  auto key = [&](const SwitchPoint* s) -> uint64_t {
    if (s->flags & ATOMX_SCHEDULE_EXITING) return UINT64_MAX;
    if (s->positioned) return s->pos;
    const auto it = firstPositioned.find(s->stream);
    return (s->flags & ATOMX_SCHEDULE_NO_BUFFER) && it != firstPositioned.end() && s->ns > it->second ? UINT64_MAX : 0;
  };
  for (SwitchPoint& s : points)
    if (s.out && s.why.empty()) outs[s.stream].push_back(&s);
  std::map<std::string, Placer> placers;
  for (auto& [name, list] : outs) {
    std::stable_sort(list.begin(), list.end(), [&](const SwitchPoint* a, const SwitchPoint* b) { return key(a) < key(b); });
    placers.emplace(name, Placer(list, reader.hasData()));
  }
  Cutter cutter(streams, placers);
  reader.regenerate(cutter);
  for (SwitchPoint& s : points)
    if (s.out && !s.placed && s.why.empty()) s.why = s.stream + " was not regenerated";
  // A switch-in resumes where the thread's last switch-out left it (in the
  // same stream: else it starts a program's).
  std::map<std::string, const SwitchPoint*> lastOut;
  for (SwitchPoint& s : points) {
    if (s.out) {
      lastOut[s.stream] = &s;
      continue;
    }
    if (s.stream.empty()) {
      s.why = "its thread left no stream for it";
      continue;
    }
    const auto it = lastOut.find(s.stream);
    if (it == lastOut.end()) s.placed = true, s.index = 0;
    else if (it->second->placed) s.placed = true, s.index = it->second->index;
    else s.why = "its last switch-out is not placed";
  }
  return points;
}

std::map<std::string, ThreadCuts> switchCuts(const std::vector<SwitchPoint>& points) {
  std::map<std::string, ThreadCuts> by;  // by stream
  for (const SwitchPoint& s : points) {
    if (s.out || !s.placed) continue;
    ThreadCuts& t = by[s.stream];
    t.pid = s.pid, t.thread = s.tid;
    t.cuts.push_back({s.index, s.ns, int(s.cpu)});
  }
  for (auto& [name, t] : by)
    std::stable_sort(t.cuts.begin(), t.cuts.end(), [](const CutPoint& a, const CutPoint& b) { return a.index < b.index; });
  return by;
}

std::string switchLine(const SwitchPoint& s) {
  std::string flags;
  auto add = [&](uint32_t bit, const char* name) {
    if (s.flags & bit) flags += (flags.empty() ? "" : ",") + std::string(name);
  };
  add(ATOMX_SCHEDULE_PREEMPTED, "preempted");
  add(ATOMX_SCHEDULE_UNTRACED_PC, "untraced");
  add(ATOMX_SCHEDULE_INSERTED, "inserted");
  add(ATOMX_SCHEDULE_PENDING, "pending");
  add(ATOMX_SCHEDULE_CURSOR_REGISTER, "register");
  add(ATOMX_SCHEDULE_EXITING, "exiting");
  if (s.ambiguous) flags += (flags.empty() ? "" : ",") + std::string("ambiguous");
  if (s.unreported) flags += (flags.empty() ? "" : ",") + std::string("unreported");
  const bool pc = s.out && (s.flags & ATOMX_SCHEDULE_REGISTERS) && !(s.flags & ATOMX_SCHEDULE_UNTRACED_PC);
  char line[256];
  std::snprintf(line, sizeof line, "%llu %u %d %s %d %s %s %s", static_cast<unsigned long long>(s.ns), s.cpu, s.tid,
                s.out ? "out" : "in", s.other, s.placed ? std::to_string(s.index).c_str() : "-",
                pc ? hex(s.pc).c_str() : "-", flags.empty() ? "-" : flags.c_str());
  return s.placed || !s.out ? std::string(line) : std::string(line) + "  # " + s.why;
}

}  // namespace atomx::trace
