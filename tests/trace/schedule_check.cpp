// The privileged schedule log's checks (docs/trace.md, "The privileged
// schedule log"), on a trace recorded as root:
//
//   schedule_check TRACE --consistent
//     every switch-out of a thread that has a stream is placed in its path,
//     unambiguously, at an index no greater than the thread's length, and a
//     thread's indices never decrease in time order;
//   schedule_check TRACE --tickets RECORD PC
//     the interleaving oracle: RECORD is the program's own record of the
//     tickets each thread took from a shared counter (tickets.c: `TID T0 T1
//     ...` per thread), PC the address of the instruction that takes one
//     (lock xadd, found by objdump).  Each thread's regenerated path is cut
//     into runs where it was switched in (switchCuts: the merge's input);
//     the runs, in the order of their times, must take the tickets 0, 1,
//     2, ... in turn: a run that
//     executed PC c times took the thread's next c tickets, which must be
//     the next c of the whole sequence.  Fails naming the first ticket out
//     of order.
//   schedule_check TRACE --merged-tickets RECORD PC
//     the same oracle through `atomx regen --merge`'s order
//     (TraceReader::analyzeMerged, which cuts the paths at the sync points
//     and, with the log, at the switch-ins): the ticket instruction's
//     executions, in merged order, must be by the threads that took tickets
//     0, 1, 2, ... in turn.  Fails naming the first ticket out of order.
//   schedule_check TRACE --merged-steps RECORD TICKET STEP[,STEP...]
//     the iteration oracle (tickets.c steps|indirect): RECORD is each thread's record of the
//     shared count of steps it read at each ticket (`TID S0 S1 ...`),
//     TICKET the instruction that takes a ticket (lock xadd) and STEP those
//     that step the count in the busy loops (lock add), found by objdump.
//     In `atomx regen --merge`'s order every ticket must come after exactly
//     as many tickets and steps (of every thread) as it read: a switch
//     placed at another iteration of its busy loop moves steps across
//     another thread's tickets.  Fails naming the first ticket that differs
//     and the switch-out that ended the last run of another taker before it;
//     also when a switch-out of the takers is not placed, or (after the
//     counts) is ambiguous.
//
// The counting here is naive (every instruction of every block, compared
// with PC); the order it is checked against is the program's.
#include <atomx/analyzer.hpp>
#include <atomx/trace.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "trace/Switches.h"
#include "trace/TraceFiles.h"

namespace {

using atomx::trace::SwitchPoint;

// Per stream (by name; thread.TID.axt, thread.TID-K.axt): its length, and
// at each requested index how many times PC ran before it.
struct Counter : atomx::trace::Consumer {
  explicit Counter(std::vector<atomx::trace::Stream> s) : streams(std::move(s)) {}
  std::vector<atomx::trace::Stream> streams;  // in the order regenerate walks them
  uint64_t pc = 0;
  std::map<std::string, std::vector<uint64_t>> want;  // sorted indices, by stream
  std::map<std::string, std::map<uint64_t, uint64_t>> before;
  std::map<std::string, uint64_t> length, total;
  std::string name;
  size_t k = 0, next = 0;
  uint64_t count = 0, hits = 0;
  void threadBegin(int) override {
    name = streams.at(k++).name;
    count = 0, hits = 0, next = 0;
  }
  void block(const atomx::trace::BlockRun& b) override {
    if (b.inherited) return;  // a forked child's parent's blocks: not its own (SwitchPoint::index)
    const std::vector<uint64_t>& w = want[name];
    for (size_t j = 0; j < b.count; ++j) {
      while (next < w.size() && w[next] == count) before[name][w[next++]] = hits;
      hits += b.insns[j].pc == pc;
      ++count;
    }
  }
  void threadEnd(int, const std::string&) override {
    const std::vector<uint64_t>& w = want[name];
    while (next < w.size() && w[next] == count) before[name][w[next++]] = hits;
    length[name] = count;
    total[name] = hits;
  }
};

int fail(const std::string& why) {
  std::fprintf(stderr, "schedule_check: %s\n", why.c_str());
  return 1;
}

// --merged-tickets: the thread of each execution of PC, in merged order.
struct MergedTakers : atomx::trace::Analyzer, atomx::trace::Consumer {
  uint64_t pc = 0;
  std::vector<int> order;
  const char* name() const override { return "merged-tickets"; }
  std::unique_ptr<atomx::trace::Consumer> shard(const atomx::trace::Shard&) override {
    struct Forward : atomx::trace::Consumer {
      MergedTakers* to;
      explicit Forward(MergedTakers* t) : to(t) {}
      void block(const atomx::trace::BlockRun& b) override {  // (threadBegin comes once per thread, not per slice)
        if (b.inherited) return;
        for (size_t j = 0; j < b.count; ++j)
          if (b.insns[j].pc == to->pc) to->order.push_back(b.thread);
      }
    };
    return std::make_unique<Forward>(this);
  }
  void merge(std::vector<std::unique_ptr<atomx::trace::Consumer>>&) override {}
};

// --merged-steps: in merged order, the count of tickets and steps before
// each ticket against the one its thread read; where it differs first, the
// last run of another thread before it (its thread and the count of its
// instructions where it ended).
struct MergedSteps : atomx::trace::Analyzer, atomx::trace::Consumer {
  uint64_t ticket = 0;
  std::set<uint64_t> step;
  std::map<int, std::vector<uint64_t>> record;
  std::map<int, size_t> taken;     // by thread: its tickets so far
  std::map<int, uint64_t> done;    // by thread: its instructions so far (SwitchPoint::index)
  uint64_t count = 0, tickets = 0;
  int running = 0;                 // the slice's thread
  int ended = 0;                   // the taker other than `running` whose run ended last
  uint64_t endedAt = 0;            // that run's end (ended's instructions then)
  int last = 0;                    // the taker whose run ended last, and where
  uint64_t lastAt = 0;
  std::string failure;
  int failedAfter = 0;             // ended and endedAt at the failure
  uint64_t failedAfterAt = 0;
  const char* name() const override { return "merged-steps"; }
  std::unique_ptr<atomx::trace::Consumer> shard(const atomx::trace::Shard&) override {
    struct Forward : atomx::trace::Consumer {
      MergedSteps* to;
      explicit Forward(MergedSteps* t) : to(t) {}
      void slice(int thread, int) override { to->slice(thread); }
      void block(const atomx::trace::BlockRun& b) override { to->run(b); }
    };
    return std::make_unique<Forward>(this);
  }
  void merge(std::vector<std::unique_ptr<atomx::trace::Consumer>>&) override {}
  void slice(int thread) {
    if (thread == running) return;
    if (record.count(running)) last = running, lastAt = done[running];
    running = thread;
    if (last != running) ended = last, endedAt = lastAt;
  }
  void run(const atomx::trace::BlockRun& b) {
    if (b.inherited) return;
    for (size_t j = 0; j < b.count; ++j, ++done[b.thread]) {
      const uint64_t pc = b.insns[j].pc;
      if (pc == ticket) {
        const size_t k = taken[b.thread]++;
        const std::vector<uint64_t>& list = record[b.thread];
        if (failure.empty() && (k >= list.size() || list[k] != count)) {
          failure = "ticket " + std::to_string(k) + " of thread " + std::to_string(b.thread) + ": the merged trace has " +
                    std::to_string(count) + " steps and tickets before it, the program read " +
                    (k < list.size() ? std::to_string(list[k]) : std::string("none"));
          failedAfter = ended, failedAfterAt = endedAt;
        }
        ++count, ++tickets;
      } else if (step.count(pc)) {
        ++count;
      }
    }
  }
};

std::map<int, std::vector<uint64_t>> readRecord(const std::string& path) {
  std::map<int, std::vector<uint64_t>> record;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    int tid;
    ls >> tid;
    for (uint64_t t; ls >> t;) record[tid].push_back(t);
  }
  return record;
}

int mergedTickets(const std::string& dir, const std::string& recordFile, uint64_t pc) {
  const std::map<int, std::vector<uint64_t>> record = readRecord(recordFile);
  if (record.empty()) return fail(recordFile + ": no tickets recorded");
  std::map<uint64_t, int> taker;  // ticket -> the thread that took it
  for (const auto& [tid, list] : record)
    for (uint64_t t : list) taker[t] = tid;
  const atomx::trace::TraceReader reader(dir);
  MergedTakers m;
  m.pc = pc;
  const atomx::trace::Summary sum = reader.analyzeMerged(std::vector<atomx::trace::Analyzer*>{&m});
  for (const std::string& p : sum.scheduleProblems) return fail("the merge orders a thread in part: " + p);
  if (m.order.size() != taker.size())
    return fail("the merged trace runs the ticket instruction " + std::to_string(m.order.size()) + " times; " +
                std::to_string(taker.size()) + " tickets were recorded");
  uint64_t switches = 0;
  for (uint64_t k = 0; k < m.order.size(); ++k) {
    if (taker.at(k) != m.order[k])
      return fail("ticket " + std::to_string(k) + " out of order: thread " + std::to_string(taker.at(k)) +
                  " took it, the merged trace gives it to thread " + std::to_string(m.order[k]));
    switches += k && m.order[k] != m.order[k - 1];
  }
  if (switches < 3) return fail("only " + std::to_string(switches) + " changes of taker: the threads did not interleave");
  std::printf("schedule_check: %zu tickets in the merged order, %llu changes of taker, as recorded\n", m.order.size(),
              static_cast<unsigned long long>(switches));
  return 0;
}

int mergedSteps(const std::string& dir, const std::string& recordFile, uint64_t ticket, const std::string& steps) {
  MergedSteps m;
  m.record = readRecord(recordFile);
  if (m.record.empty()) return fail(recordFile + ": no tickets recorded");
  m.ticket = ticket;
  for (std::istringstream in(steps); in.good();) {
    std::string pc;
    std::getline(in, pc, ',');
    m.step.insert(std::strtoull(pc.c_str(), nullptr, 16));
  }
  const atomx::trace::TraceReader reader(dir);
  if (!reader.hasData()) return fail(dir + " was recorded without data");
  const std::vector<SwitchPoint> points = atomx::trace::switchPoints(reader);
  uint64_t inLoops = 0;
  for (const SwitchPoint& s : points) {
    if (!s.out || !m.record.count(s.tid)) continue;
    const std::string at = "thread " + std::to_string(s.tid) + "'s switch-out at " + std::to_string(s.ns);
    if (!s.placed) return fail(at + " is not placed: " + s.why);
    inLoops += (s.flags & ATOMX_SCHEDULE_REGISTERS) && !(s.flags & ATOMX_SCHEDULE_UNTRACED_PC) && !(s.flags & ATOMX_SCHEDULE_EXITING);
  }
  const atomx::trace::Summary sum = reader.analyzeMerged(std::vector<atomx::trace::Analyzer*>{&m});
  for (const std::string& p : sum.scheduleProblems) return fail("the merge orders a thread in part: " + p);
  if (!m.failure.empty()) {
    // The switch-out that ended the last run of another taker before the
    // ticket (else a sync point's cut ended it).
    std::string by = "ended at thread " + std::to_string(m.failedAfter) + "'s switch-out at ";
    std::string cut = "was cut by a sync point at thread " + std::to_string(m.failedAfter) + "'s instruction " +
                      std::to_string(m.failedAfterAt);
    for (const SwitchPoint& s : points)
      if (s.out && s.placed && s.tid == m.failedAfter && s.index == m.failedAfterAt) {
        cut = by + std::to_string(s.ns) + " (index " + std::to_string(s.index) + ", " + (s.ambiguous ? "flagged ambiguous" : "not flagged") + ")";
        break;
      }
    return fail(m.failure + "; the last run of another taker before it " + cut);
  }
  uint64_t expected = 0;
  for (const auto& [tid, list] : m.record) expected += list.size();
  if (m.tickets != expected)
    return fail("the merged trace takes " + std::to_string(m.tickets) + " tickets; " + std::to_string(expected) + " were recorded");
  for (const SwitchPoint& s : points)
    if (s.out && m.record.count(s.tid) && s.ambiguous)
      return fail("thread " + std::to_string(s.tid) + "'s switch-out at " + std::to_string(s.ns) + " is ambiguous");
  if (inLoops < 3) return fail("only " + std::to_string(inLoops) + " switch-outs of the takers in their traced code: too few to check");
  std::printf("schedule_check: %llu tickets after the steps each read, %llu switch-outs in the takers' traced code\n",
              static_cast<unsigned long long>(m.tickets), static_cast<unsigned long long>(inLoops));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: schedule_check TRACE --consistent | --tickets RECORD PC | --merged-tickets RECORD PC | --merged-steps RECORD PC PC[,PC...]\n"), 2;
  const std::string dir = argv[1], mode = argv[2];
  try {
    if (mode == "--merged-tickets" && argc == 5) return mergedTickets(dir, argv[3], std::strtoull(argv[4], nullptr, 16));
    if (mode == "--merged-steps" && argc == 6) return mergedSteps(dir, argv[3], std::strtoull(argv[4], nullptr, 16), argv[5]);
    const atomx::trace::TraceReader reader(dir);
    const std::vector<SwitchPoint> points = atomx::trace::switchPoints(reader);
    Counter c(atomx::trace::listStreams(dir));
    if (mode == "--tickets" && argc == 5) c.pc = std::strtoull(argv[4], nullptr, 16);
    else if (mode != "--consistent") return std::fprintf(stderr, "schedule_check: unknown mode %s\n", mode.c_str()), 2;
    for (const SwitchPoint& s : points)
      if (s.placed) c.want[s.stream].push_back(s.index);
    for (auto& [t, w] : c.want) {
      std::sort(w.begin(), w.end());
      w.erase(std::unique(w.begin(), w.end()), w.end());
    }
    reader.regenerate(c);
    if (mode == "--consistent") {
      std::map<std::string, uint64_t> last;
      uint64_t placed = 0;
      for (const SwitchPoint& s : points) {
        if (!s.out || !c.length.count(s.stream)) continue;  // a thread without a stream: the writer, a process not traced
        const std::string at = "thread " + std::to_string(s.tid) + "'s switch-out at " + std::to_string(s.ns) + " (" + s.stream + ")";
        if (!s.placed) return fail(at + " is not placed: " + s.why);
        // (a trace without data has no loop that records nothing per iteration)
        if (s.ambiguous) return fail(at + " is ambiguous: " + s.stream + " has its instruction twice at its position");
        if (s.index > c.length[s.stream])
          return fail(at + ": index " + std::to_string(s.index) + " beyond its length " + std::to_string(c.length[s.stream]));
        if (last.count(s.stream) && s.index < last[s.stream])
          return fail(at + ": index " + std::to_string(s.index) + " before its previous switch-out's " + std::to_string(last[s.stream]));
        last[s.stream] = s.index;
        ++placed;
      }
      if (placed == 0) return fail("no switch-out of a thread with a stream");
      std::printf("schedule_check: %llu switch-outs in %zu streams placed, in order\n", static_cast<unsigned long long>(placed),
                  last.size());
      return 0;
    }
    // --tickets: the program's record.
    std::map<int, std::vector<uint64_t>> record = readRecord(argv[3]);
    if (record.empty()) return fail(std::string(argv[3]) + ": no tickets recorded");
    // The runs: each taker's path cut where the log switched it in
    // (switchCuts, the merge's input), each running at that time up to its
    // next cut; the switch-outs must all be placed.
    struct Run {
      uint64_t ns;
      int tid;
      uint64_t from, to;  // tickets taken: [from, to) of the thread's record
    };
    std::vector<Run> runs;
    size_t unplaced = 0, inTraced = 0;
    for (const SwitchPoint& s : points) {
      if (!s.out || !record.count(s.tid)) continue;
      if (!s.placed) ++unplaced;
      else
        inTraced += (s.flags & ATOMX_SCHEDULE_REGISTERS) && !(s.flags & ATOMX_SCHEDULE_UNTRACED_PC) &&
                    !(s.flags & ATOMX_SCHEDULE_EXITING);
    }
    auto streamOf = [](int tid) { return "thread." + std::to_string(tid) + ".axt"; };
    for (const auto& [name, t] : atomx::trace::switchCuts(points)) {
      if (!record.count(t.thread)) continue;
      const auto& before = c.before[streamOf(t.thread)];
      for (size_t k = 0; k < t.cuts.size(); ++k) {
        const uint64_t from = before.at(t.cuts[k].index);
        const uint64_t to = k + 1 < t.cuts.size() ? before.at(t.cuts[k + 1].index) : c.total[streamOf(t.thread)];
        if (to < from) return fail("thread " + std::to_string(t.thread) + "'s cuts go back in its path");
        runs.push_back({t.cuts[k].key, t.thread, from, to});
      }
    }
    for (const auto& [tid, list] : record)
      if (c.total[streamOf(tid)] != list.size())
        return fail("thread " + std::to_string(tid) + " ran the ticket instruction " + std::to_string(c.total[streamOf(tid)]) +
                    " times in its regenerated path; it recorded " + std::to_string(list.size()) + " tickets");
    std::stable_sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.ns < b.ns; });
    uint64_t next = 0, switchedRuns = 0;
    for (const Run& r : runs) {
      for (uint64_t k = r.from; k < r.to; ++k, ++next)
        if (record[r.tid][k] != next)
          return fail("ticket " + std::to_string(record[r.tid][k]) + " out of order: thread " + std::to_string(r.tid) +
                      " took it in its run from " + std::to_string(r.ns) +
                      ", where the log's order gives ticket " + std::to_string(next));
      switchedRuns += r.to > r.from;
    }
    if (unplaced) return fail(std::to_string(unplaced) + " switch-out(s) of the ticket takers not placed in their paths");
    if (switchedRuns < 4) return fail("only " + std::to_string(switchedRuns) + " runs took tickets: the threads did not interleave");
    // At least one run must end at an instruction of the traced code (the
    // exact cut; the others stopped in a library or the recorder).
    if (inTraced == 0) return fail("no switch-out of the ticket takers was in their traced code");
    std::printf("schedule_check: %llu tickets in %llu runs of %zu threads, in the log's order (%zu switch-outs in traced code)\n",
                static_cast<unsigned long long>(next), static_cast<unsigned long long>(switchedRuns), record.size(), inTraced);
    return 0;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
