// The regenerator: re-walks each procedure's CFG with the trace plan
// (analysis/TracePlan.h) and the witnesses of one thread's stream, and
// reports every block executed (include/atomx/trace.hpp).  It uses the
// program model only: nothing of the rewriter.
//
// The walk keeps its callers on an explicit stack (deep recursion in the
// program must not overflow ours).  Its modes:
//   Block     run the current block: its entry tag if it writes one, its
//             instructions, then its call (a traced callee is walked; an
//             outside one reads tags) or its way on;
//   Tags      after a call to outside code (or a jump out of the procedure
//             to outside code, `tail`, or at the top of the thread): each
//             ENTRY walks the procedure it names; RETURN ends the call (a
//             tail jump leaves it to the caller, whose call wrote it);
//   AfterCall the call returned: take the block's way on.
//
// Signals (the stream's marks, trace_format.h's AtomxTraceMark): a mark at
// stream position K for instruction X is met where the walk is about to run
// X with every record before K read.  The block is cut there, the walk
// pushes a signal frame and reads the handler's records as it reads a
// callback's, and the RETURNED mark pops the frame and runs the rest.  At a
// predicate whose witness would come after K, the successor is the one from
// which X is reached without a witness.  So that the walk reads records in
// the order the program wrote them, a witness the recorder stores before a
// block's last instruction (the arc to EXIT of a block that ends in a
// return or a jump out) is read before that instruction is run.
#include <atomx/analyzer.hpp>
#include <atomx/trace.hpp>
#include <atomx/trace_format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>

#include "analysis/ProgramModel.h"
#include "analysis/TracePlan.h"
#include "elf/ElfImage.h"
#include "support/Error.h"
#include "support/Hex.h"
#include "support/Parallel.h"
#include "trace/DataRefs.h"
#include "trace/LibraryCalls.h"
#include "trace/TraceFiles.h"
#include "trace/Walk.h"

namespace atomx::trace {

namespace {

// What the walk asks of every executed block, worked out once per trace
// from the plan (it was a search of the block's arcs and edges, and a
// procedure lookup per call, each time the block ran).
struct BlockFacts {
  enum : uint8_t {
    kEarly = 1,    // the recorder stores the witness of its arc to EXIT before its last instruction (not a conditional branch: TraceRecorder)
    kCalls = 2,    // an out edge is a call or an exit call
    kReturns = 4,  // an out edge is a call (that returns)
    kWritesReturn = 8,  // its direct call to `callee`'s entry writes RETURN (analysis::callWritesReturn)
    kEntryTag = 16,     // its procedure's ENTRY is read before it (enterable, its entry block)
    kTagged = 32,       // its BLOCK tag is read before it (ProcTrace::tagged)
    kTable = 64,        // its successor is recorded (TraceGraph::kIndirect)
    kEvaluated = 128,   // its successor is computed (TraceGraph::kEvaluated)
  };
  static constexpr uint32_t kExit = UINT32_MAX;  // Way::to of an arc to EXIT
  uint8_t flags = 0;
  uint8_t width = 0;          // its procedure's witness width (TracePlan)
  uint32_t firstInsn = 0, insnCount = 0;  // the block's (ir::Block), here beside the rest
  uint64_t start = 0;
  int32_t earlyDue = -1;      // kEarly: the witness due on the arc to EXIT
  uint32_t outs = 0;          // its arcs in the trace graph
  uint32_t chooseAt = 0, chooseCount = 0;  // a predicate's first witnesses with their ways, in WalkFacts::choose
  int32_t onlyDue = -1;       // one arc: its witness (-1: none)
  uint32_t onlyTo = 0;        // one arc: where it goes (kExit: EXIT)
  const ir::Procedure* callee = nullptr;   // its direct call reaches this traced procedure's entry
  uint32_t calleeBlock = 0;
};

// An arc of a predicate, by a first witness that may be read there.
struct Way {
  uint32_t first;  // the witness peeked
  uint32_t arc;    // the arc it picks
  int32_t due;     // the arc's own witness (-1: none)
  uint32_t to;     // where the arc goes (BlockFacts::kExit: EXIT)
};

struct WalkFacts {
  std::vector<std::vector<BlockFacts>> blocks;  // by procedure id, block
  // Per predicate, in its arcs' order, each first witness with its arc: the
  // first one whose witness is the one read gives the arc.
  std::vector<Way> choose;
  std::vector<uint32_t> slots;  // by procedure id: the stack slots a frame keeps (min(slots, kSlots))

  WalkFacts(const ir::Program& prog, const analysis::TracePlan& plan) {
    blocks.resize(prog.procs.size());
    slots.assign(prog.procs.size(), 0);
    for (const ir::Procedure& p : prog.procs) {
      const analysis::ProcTrace& t = plan.procs[p.id];
      if (!t.traced) continue;
      slots[p.id] = uint32_t(std::min<size_t>(t.slices.slots.size(), x86::kSlots));
      const analysis::TraceGraph& g = t.graph;
      std::vector<BlockFacts>& out = blocks[p.id];
      out.resize(p.blocks.size());
      auto to = [&](uint32_t arc) { return g.arcs[arc].to == g.exit ? BlockFacts::kExit : g.arcs[arc].to; };
      for (uint32_t b = 0; b < p.blocks.size(); ++b) {
        BlockFacts& f = out[b];
        const ir::Block& blk = p.blocks[b];
        f.width = uint8_t(t.plan.width);
        f.firstInsn = blk.firstInsn, f.insnCount = blk.insnCount, f.start = blk.start;
        if (t.enterable && b == t.entryBlock) f.flags |= BlockFacts::kEntryTag;
        if (t.tagged[b]) f.flags |= BlockFacts::kTagged;
        if (!blk.insnCount) continue;
        const x86::Insn& last = p.insns[blk.firstInsn + blk.insnCount - 1];
        if (b < g.out.size()) {
          bool early = false;
          for (uint32_t k : g.out[b])
            if (g.arcs[k].to == g.exit) {
              early |= t.plan.witness[k] >= 0;
              f.earlyDue = t.plan.witness[k];
            }
          if (early && last.flow != x86::Flow::CondBranch) f.flags |= BlockFacts::kEarly;
          if (g.flags[b] & analysis::TraceGraph::kIndirect) f.flags |= BlockFacts::kTable;
          if (g.flags[b] & analysis::TraceGraph::kEvaluated) f.flags |= BlockFacts::kEvaluated;
          f.outs = uint32_t(g.out[b].size());
          if (f.outs == 1) f.onlyDue = t.plan.witness[g.out[b][0]], f.onlyTo = to(g.out[b][0]);
          if (g.out[b].size() > 1) {
            f.chooseAt = uint32_t(choose.size());
            for (uint32_t k : g.out[b])
              for (uint32_t v : t.firstWitnesses[k]) choose.push_back({v, k, t.plan.witness[k], to(k)});
            f.chooseCount = uint32_t(choose.size()) - f.chooseAt;
          }
        }
        for (const ir::OutEdge& e : blk.outs) {
          if (e.kind == ir::EdgeKind::Call || e.kind == ir::EdgeKind::Exit) f.flags |= BlockFacts::kCalls;
          if (e.kind == ir::EdgeKind::Call) f.flags |= BlockFacts::kReturns;
        }
        const uint64_t target = last.flow == x86::Flow::Call ? last.target : 0;
        if (const ir::Procedure* q = target ? analysis::tracedCode(prog, plan, target) : nullptr; q && q->start == target) {
          f.callee = q;
          f.calleeBlock = uint32_t(q->blockIndexAt(target));
          if (analysis::callWritesReturn(prog, plan, target)) f.flags |= BlockFacts::kWritesReturn;
        }
      }
    }
  }
};

class Walker {
 public:
  Walker(const ir::Program& program, const unwind::EhFrameInfo& unwind, const analysis::TracePlan& plan,
         const WalkFacts& facts, Consumer& out, Summary& sum, std::vector<std::vector<Instruction>>& insns)
      : prog_(program), unwind_(unwind), plan_(plan), facts_(facts), out_(out), sum_(sum), insns_(insns) {}

  // The thread ATOMX_TEST_REGEN_STRAY gives a block of this stream to.
  void strayTo(int tid) { strayTid_ = tid; }
  // The program's index in the trace (BlockRun::program).
  void programIs(size_t k) { programIndex_ = k; }
  // Each outside call's stream position, appended before its event (the
  // sync points' marks are at it: Merge.cpp, SyncPoints.h).
  void recordCallPositions(std::vector<uint64_t>* to) { callPositions_ = to; }

  // Tell `probe` (Walk.h) where each instruction of a data trace is walked.
  void probeWith(WalkProbe* probe) { probe_ = probe; }

  // Report how far the walk is to `progress`: the stream counts `weight`
  // (its file's bytes) in proportion to the stream bytes walked.
  void reportTo(Progress* progress, uint64_t weight) {
    progress_ = progress;
    weight_ = weight;
    reported_ = 0;
  }

  void run(const Stream& s) {
    s_ = &s.bytes;
    marks_ = &s.marks;
    nextMark_ = 0;
    markAt_ = marks_->empty() ? UINT64_MAX : (*marks_)[0].pos;
    open_.clear();
    childFrom_ = s.childFrom;
    pos_ = 0;
    refsSeen_ = 0;
    lib_ = {};
    librarySeen_ = 0;
    evalSeen_ = 0;
    evalFlags_ = 0;
    tid_ = s.thread;
    out_.threadBegin(tid_);
    std::string problem;
    uint64_t bias = 0, fs = 0;
    if (!read(8, bias) || !read(8, fs)) problem = "the stream is shorter than its header" + at();
    else {
      data_ = {};
      data_.regs.loadBias = bias;
      data_.fsBase = fs;
      out_.loadBias(tid_, bias);
      problem = walk();
    }
    if (problem.empty() && !s.problem.empty()) problem = s.problem;
    if (!problem.empty()) ++sum_.incompleteThreads;
    if (progress_) publishProgress(s_->size());
    out_.threadEnd(tid_, problem);
  }

 private:
  enum class Mode { Block, Tags, AfterCall };
  // A library call whose arguments were read (analysis::kLibraryArguments)
  // and whose references are not yet reported.
  struct PendingLibrary {
    bool armed = false;
    const ir::Procedure* p = nullptr;
    uint32_t block = 0;
    int16_t f = -1;        // libc::kFunctions index
    uint64_t site = 0;     // the call's address
    uint64_t args[3] = {};  // %rdi, %rsi, %rdx
    analysis::LibraryLength how = analysis::LibraryLength::Arguments;
    bool measuredRead = false;  // how == Measured: `measured` was read
    uint64_t measured = 0;
  };
  struct Frame {
    const ir::Procedure* p;
    uint32_t block;
    bool afterCall;     // resume after the block's call; else in its tag loop
    bool flag;          // afterCall: the call wrote RETURN; tag loop: tail
    bool signal = false;     // a signal interrupted the block: go on at `resume`
    uint32_t resume = 0;     // its instruction (index in the block)
    bool earlyDone = false;  // its early witness was read already
    // A data trace: the registers as they were (the caller's at its call),
    // and the stack slots `p` uses, at slotsAt in slotPool_ (save, restore).
    uint64_t gpr[16] = {};
    uint32_t slotsAt = 0, slots = 0;
    PendingLibrary lib{};      // a signal or ENTRY frame: the library call in progress (its result still due)
    uint8_t evalFlags = 0;     // a signal frame: the flags an evaluated predicate's setter left
  };
  struct Open {  // a signal whose handler runs
    size_t depth;  // stack_.size() with its frame pushed
    int signo;
  };

  bool peek(unsigned width, uint64_t& v) const {
    if (pos_ + width > s_->size()) return false;
    v = 0;
    for (unsigned i = 0; i < width; ++i) v |= uint64_t((*s_)[pos_ + i]) << (8 * i);
    return true;
  }
  bool read(unsigned width, uint64_t& v) {
    if (!peek(width, v)) return false;
    pos_ += width;
    return true;
  }
  std::string at() const {
    return " (stream byte " + std::to_string(pos_) + ", in " + (p_ ? p_->name + " block " + hex(p_->blocks[b_].start) : std::string("no procedure")) + ")";
  }
  uint64_t markPos() const { return markAt_; }
  void nextMark() {
    ++nextMark_;
    markAt_ = nextMark_ < marks_->size() ? (*marks_)[nextMark_].pos : UINT64_MAX;
  }
  // The next mark, if it is a delivery at the current position.
  const SignalMark* deliveryHere() const {
    if (pos_ != markPos()) return nullptr;
    const SignalMark& m = (*marks_)[nextMark_];
    return m.kind == ATOMX_TRACE_MARK_DELIVERED || m.kind == ATOMX_TRACE_MARK_FAULTED ? &m : nullptr;
  }
  // Whether the walk, before instruction i of p_, is where the signal mark
  // `m` interrupted the thread: in a loop of evaluated predicates the same
  // instruction may come many times at one stream position, and the
  // registers the walk knows there (those needed before it) must equal the
  // interrupted context's.
  bool sameIteration(const SignalMark& m, uint32_t i) const {
    // For the oracles' self-test only (tests/trace): ATOMX_TEST_REGEN_SIGNAL_FIRST=1
    // places each mark at the first visit, as before registers came with it.
    static const bool first = std::getenv("ATOMX_TEST_REGEN_SIGNAL_FIRST") != nullptr;
    if (first) return true;
    const analysis::InsnSlice& in = plan_.procs[p_->id].slices.insns[i];
    return sameRegisters(data_.regs.gpr, m.regs, comparableRegisters(in) & m.regMask);
  }
  // Index of the instruction at `pc` among block b_'s [from, to), or -1.
  int64_t insnIn(uint64_t pc, uint32_t from, uint32_t to) const {
    const ir::Block& blk = p_->blocks[b_];
    for (uint32_t k = from; k < to; ++k)
      if (p_->insns[blk.firstInsn + k].address == pc) return k;
    return -1;
  }
  const BlockFacts& facts() const { return facts_.blocks[p_->id][b_]; }

  // Runs block b_ from its instruction from_ on, reading its early witness
  // where it is due; false when a signal cut it (the walk is in the
  // handler now).  In a trace with data, instruction by instruction: its
  // references, its emulation and the values recorded after it.
  bool runBlock(std::string& problem, bool& ended) {
    runPos_ = pos_;  // BlockRun::streamPos (the schedule log's switch points, trace/Switches.h)
    const BlockFacts& blk = facts();
    const uint32_t last = blk.insnCount - 1;
    const bool early = !earlyDone_ && (blk.flags & BlockFacts::kEarly);
    const uint32_t before = early ? last : blk.insnCount;  // run before the early witness
    auto runTo = [&](uint32_t from, uint32_t to) {  // false: cut by a signal, or the stream ended
      if (!plan_.data) {
        if (const SignalMark* m = deliveryHere())
          if (int64_t k = insnIn(m->pc, from, to); k >= 0) return cutBlock(uint32_t(k), *m), false;
        return true;
      }
      for (uint32_t k = from; k < to; ++k) {
        if (k == last && !libraryArguments()) return ended = true, false;
        if (const SignalMark* m = deliveryHere())
          if (m->pc == p_->insns[blk.firstInsn + k].address && sameIteration(*m, blk.firstInsn + k))
            return cutBlock(k, *m), false;
        // A measured length may come after a signal delivered at the call (the
        // signal came while the recorder measured): read once that ran.
        if (k == last && !libraryMeasured()) return ended = true, false;
        if (const SignalMark* m = deliveryHere())
          if (m->pc == p_->insns[blk.firstInsn + k].address && sameIteration(*m, blk.firstInsn + k))
            return cutBlock(k, *m), false;
        if (probe_) {
          const uint32_t i = blk.firstInsn + k;
          probe_->before({k - from_, p_->insns[i].address, pos_, runPos_, data_.regs.gpr,
                          comparableRegisters(plan_.procs[p_->id].slices.insns[i]), childFrom_ && pos_ <= childFrom_});
        }
        if (!stepData(k, problem, ended)) return false;
      }
      return true;
    };
    if (!runTo(from_, before)) return false;
    if (early) {
      uint64_t w;
      if (!read(blk.width, w)) return ended = true, false;
      ++sum_.witnesses;
      const int32_t due = blk.earlyDue;
      if (w != uint64_t(due))
        return problem = "witness " + std::to_string(w) + " where " + std::to_string(due) + " was due" + at(), false;
      earlyDone_ = true;
      if (!runTo(std::max(from_, last), blk.insnCount)) return false;
    }
    emitBlock(from_, blk.insnCount);
    from_ = 0;
    return true;
  }

  // The values recorded at a site: `registers`, lowest number first (after
  // instruction `after`: in the bytes its slice says, extended).
  bool readValues(uint16_t registers, const analysis::InsnSlice* after = nullptr) {
    for (unsigned r = 0; registers; ++r, registers >>= 1) {
      if (!(registers & 1)) continue;
      const unsigned bytes = after ? after->recordedBytes(r) : 8;
      uint64_t v;
      if (!read(bytes, v)) return false;
      if (bytes < 8 && after->valueExtend != analysis::InsnSlice::Zero) {
        const unsigned shift = 64 - 8 * bytes;
        v = uint64_t(int64_t(v << shift) >> shift);
        if (after->valueExtend == analysis::InsnSlice::Sign32) v = uint32_t(v);
      }
      data_.regs.gpr[r] = v;
      ++sum_.recordedValues;
      sum_.valueBytes += bytes;
    }
    return true;
  }

  // Instruction k of block b_ in a trace with data: its references (into
  // refs_, indexed from from_), its emulation, then the values recorded
  // after it -- a call's once it returns (AfterCall).  False when the
  // stream ended or a reference cannot be computed.
  bool stepData(uint32_t k, std::string& problem, bool& ended) {
    const analysis::DataSlices& sl = plan_.procs[p_->id].slices;
    const ir::Block& blk = p_->blocks[b_];
    const uint32_t i = blk.firstInsn + k;
    const analysis::InsnSlice& in = sl.insns[i];
    const bool callReturns = k + 1 == blk.insnCount && in.call;
    // A repe/repne's count is its %rcx before less its %rcx after, which
    // the trace records: its references are computed from the registers
    // before it once that is read.
    const bool countAfter = in.repeatedWhile && in.memCount;
    if (countAfter) before_ = data_;
    const uint64_t rcx = in.repeated ? data_.regs.gpr[1] : 1;
    if (!countAfter && in.memCount)
      if (const char* why = appendReferences(sl, i, data_, rcx, k - from_, refs_)) return problem = why + at(), false;
    if (in.flagOp.kind != x86::FlagKind::None) evalFlags_ = x86::emu::flags(in.flagOp, data_.regs);
    if (in.emulated || in.storesSlot) x86::emulate(in.op, data_.regs);
    if (!callReturns && !readValues(in.recordAfter, &in)) return ended = true, false;
    if (countAfter) {
      const uint64_t left = data_.regs.gpr[1];
      if (left > rcx) return problem = "a repeated instruction's count grew" + at(), false;
      if (const char* why = appendReferences(sl, i, before_, rcx - left, k - from_, refs_)) return problem = why + at(), false;
    }
    return true;
  }

  // A signal's handler ran before instruction k of block b_ (k faulted, or
  // a signal came before it ran): the block up to there, then the handler,
  // as a callback.  A faulting instruction did not execute; it runs when
  // the handler returns to it.
  void cutBlock(uint32_t k, const SignalMark& m) {
    const bool faulted = m.kind == ATOMX_TRACE_MARK_FAULTED;
    emitBlock(from_, k, faulted);  // a block whose first instruction faults was entered: a run of none
    out_.signal({tid_, m.signo, m.pc, false, faulted, childFrom_ && pos_ <= childFrom_});
    nextMark();
    Frame f{p_, b_, false, false};
    f.signal = true;
    f.resume = k;
    f.earlyDone = earlyDone_;
    f.evalFlags = evalFlags_;
    f.lib = lib_;
    stack_.push_back(f);
    if (plan_.data) save(stack_.back());  // sigreturn gives them all back
    open_.push_back({stack_.size(), m.signo});
    from_ = 0;
    p_ = nullptr;
    mode_ = Mode::Tags;
    tail_ = false;
  }

  // The innermost open signal's handler returned: its frame (and whatever
  // a handler that jumped out to outside code left above it) goes, and the
  // interrupted block runs on.
  std::string signalReturned() {
    const SignalMark& m = (*marks_)[nextMark_];
    if (open_.empty() || stack_.size() < open_.back().depth)
      return "a signal handler returned where none was running" + at();
    stack_.resize(open_.back().depth);
    const Frame f = stack_.back();
    stack_.pop_back();
    open_.pop_back();
    if (plan_.data) restore(f);
    evalFlags_ = f.evalFlags;
    lib_ = f.lib;
    nextMark();
    p_ = f.p;
    b_ = f.block;
    from_ = f.resume;
    earlyDone_ = f.earlyDone;
    if (m.pc == ATOMX_TRACE_MARK_UNKNOWN) return "a signal handler moved the thread to an unknown place" + at();
    if (m.pc) {  // the handler moved the thread on
      int64_t k = -1;
      for (uint32_t bi = 0; bi < p_->blocks.size() && k < 0; ++bi) {
        b_ = bi;
        k = insnIn(m.pc, 0, p_->blocks[bi].insnCount);
      }
      if (k < 0) return "a signal handler moved the thread to " + hex(m.pc) + ", outside " + p_->name + at();
      if (!(b_ == f.block && uint32_t(k) >= f.resume)) earlyDone_ = false;
      from_ = uint32_t(k);
    }
    out_.signal({tid_, m.signo, m.pc ? m.pc : p_->insns[p_->blocks[b_].firstInsn + from_].address, true, false,
                 childFrom_ && pos_ <= childFrom_});
    entryConsumed_ = blockConsumed_ = true;
    resumed_ = true;
    mode_ = Mode::Block;
    tail_ = false;
    return {};
  }

  // At a predicate whose witness would come after the signal: the arc from
  // which the interrupted instruction is reached without a witness.
  int64_t arcToSignal(uint64_t pc) {
    const analysis::ProcTrace& t = plan_.procs[p_->id];
    const analysis::TraceGraph& g = t.graph;
    for (uint32_t k : g.out[b_]) {
      if (t.plan.witness[k] >= 0 || g.arcs[k].to == g.exit) continue;
      std::vector<uint32_t> todo = {g.arcs[k].to};
      std::vector<bool> seen(g.nodes(), false);
      seen[g.arcs[k].to] = true;
      while (!todo.empty()) {
        const uint32_t n = todo.back();
        todo.pop_back();
        const ir::Block& blk = p_->blocks[n];
        for (uint32_t i = 0; i < blk.insnCount; ++i)
          if (p_->insns[blk.firstInsn + i].address == pc) return k;
        for (uint32_t a : g.out[n])
          if (t.plan.witness[a] < 0 && g.arcs[a].to != g.exit && !seen[g.arcs[a].to]) {
            seen[g.arcs[a].to] = true;
            todo.push_back(g.arcs[a].to);
          }
      }
    }
    return -1;
  }

  void emitBlock(uint32_t from, uint32_t to, bool evenEmpty = false) {
    // For the oracles' self-test only (tests/trace): ATOMX_TEST_REGEN_DROP=N
    // leaves the Nth block regenerated (from 1) out of what is reported.
    static const uint64_t drop = [] {
      const char* v = std::getenv("ATOMX_TEST_REGEN_DROP");
      return v ? std::strtoull(v, nullptr, 10) : 0;
    }();
    // ATOMX_TEST_REGEN_STRAY=N gives the Nth block of the trace's second
    // stream to the first stream's thread (the thread-by-thread oracle's
    // must-fail twin, tests/trace: a block reported for the wrong thread).
    static const uint64_t stray = [] {
      const char* v = std::getenv("ATOMX_TEST_REGEN_STRAY");
      return v ? std::strtoull(v, nullptr, 10) : 0;
    }();
    if (from >= to && !(evenEmpty && from == 0)) return refs_.clear();
    if (drop && ++emitted_ == drop) return refs_.clear();
    const int tid = stray && strayTid_ && ++strayCount_ == stray ? strayTid_ : tid_;
    std::vector<Instruction>& all = insns_[p_->id];
    if (all.empty())
      for (const x86::Insn& in : p_->insns) all.push_back({in.address, uint8_t(in.length)});
    const BlockFacts& blk = facts();
    const bool inherited = childFrom_ && pos_ <= childFrom_;
    // ATOMX_TEST_REGEN_REF=N moves the Nth data reference of a stream (from
    // 1) one line up and turns a read into a write, a write into a read
    // (the data oracles' must-fail twin, tests/trace, tests/tools/cachesim).
    static const uint64_t wrongRef = [] {
      const char* v = std::getenv("ATOMX_TEST_REGEN_REF");
      return v ? std::strtoull(v, nullptr, 10) : 0;
    }();
    if (wrongRef && refsSeen_ < wrongRef && refsSeen_ + refs_.size() >= wrongRef) {
      DataRef& r = refs_[wrongRef - refsSeen_ - 1];
      r.address += 64;
      r.kind = r.kind == kWrite ? kRead : kWrite;
    }
    refsSeen_ += refs_.size();
    out_.block({tid, blk.start, all.data() + blk.firstInsn + from, to - from, p_->name.c_str(), inherited, from > 0,
                refs_.data(), refs_.size(), runPos_, pos_, programIndex_});
    sum_.dataRefs += refs_.size();
    refs_.clear();
    if (from == 0) ++sum_.blocks;
    if (progress_ && (sum_.blocks & 0xffff) == 0) publishProgress(pos_);
    sum_.instructions += to - from;
  }

  // A call or jump from `site` to code outside the trace (`target` 0:
  // through a pointer).
  void outsideCall(uint64_t site, uint64_t target) {
    if (callPositions_) callPositions_->push_back(pos_);
    out_.outsideCall(tid_, site, target ? prog_.describe(target) : gotCallee(site));
    ++sum_.outsideCalls;
    if (lib_.armed && lib_.site == site && lib_.how != analysis::LibraryLength::Result) reportLibrary(0);
  }

  // The function a call or jump through a GOT slot at `site` (the last
  // instruction of block b_) reaches: "NAME@got", or "" (another pointer).
  std::string gotCallee(uint64_t site) const {
    if (!p_) return {};
    const ir::Block& blk = p_->blocks[b_];
    const x86::Insn& in = p_->insns[blk.firstInsn + blk.insnCount - 1];
    if (in.address != site || !(in.flow == x86::Flow::IndirectCall || in.flow == x86::Flow::IndirectJump) || !in.isRipRelative())
      return {};
    auto it = prog_.gotNames.find(in.target);
    return it == prog_.gotNames.end() ? "" : it->second + "@got";
  }

  // A library call (analysis::kLibraryArguments): before block b_'s last
  // instruction, its arguments, unless they were read already (the walk
  // resumes there after a signal).  False when the stream ended.
  bool libraryArguments() {
    const int16_t f = plan_.procs[p_->id].library[b_];
    if (f < 0 || (lib_.armed && lib_.p == p_ && lib_.block == b_)) return true;
    const ir::Block& blk = p_->blocks[b_];
    const x86::Insn& in = p_->insns[blk.firstInsn + blk.insnCount - 1];
    lib_ = {true, p_, b_, f, in.address, {}};
    lib_.how = analysis::libraryLength(size_t(f), in.flow == x86::Flow::Jump || in.flow == x86::Flow::IndirectJump);
    if (!readValues(analysis::kLibraryArguments)) return false;
    lib_.args[0] = data_.regs.gpr[7], lib_.args[1] = data_.regs.gpr[6], lib_.args[2] = data_.regs.gpr[2];
    return true;
  }

  // Then, for a call whose length the recorder measures, the length
  // (ATOMX_TRACE_LIBRARY_MEASURED), unless it was read already.  False when
  // the stream ended.
  bool libraryMeasured() {
    if (!lib_.armed || lib_.p != p_ || lib_.block != b_ || lib_.how != analysis::LibraryLength::Measured || lib_.measuredRead)
      return true;
    if (!read(ATOMX_TRACE_LIBRARY_MEASURED, lib_.measured)) return false;
    lib_.measuredRead = true;
    return true;
  }

  // After the RETURN of block b_'s call: a library call's result, when its
  // model needs it, then its references.  False when the stream ended.
  bool libraryReturned() {
    if (!lib_.armed || lib_.p != p_ || lib_.block != b_ || lib_.how != analysis::LibraryLength::Result) return true;
    if (!readValues(analysis::kLibraryResult)) return false;
    reportLibrary(data_.regs.gpr[0]);
    return true;
  }

  // The armed library call's references, reported (Consumer::libraryCall).
  void reportLibrary(uint64_t result) {
    lib_.armed = false;
    libRefs_.clear();
    appendLibraryReferences(libraryExtent(size_t(lib_.f), lib_.args, result, lib_.how == analysis::LibraryLength::Measured ? &lib_.measured : nullptr),
                            libRefs_);
    // For the library oracle's self-test only (tests/trace):
    // ATOMX_TEST_REGEN_LIBC=N moves the Nth library call of a stream (from
    // 1) 64 bytes up.
    static const uint64_t moved = [] {
      const char* v = std::getenv("ATOMX_TEST_REGEN_LIBC");
      return v ? std::strtoull(v, nullptr, 10) : 0;
    }();
    if (++librarySeen_ == moved)
      for (DataRef& r : libRefs_) r.address += 64;
    out_.libraryCall({tid_, lib_.site, libc::kFunctions[lib_.f].name, libRefs_.data(), libRefs_.size(), childFrom_ && pos_ <= childFrom_,
                      programIndex_});
    sum_.libraryRefs += libRefs_.size();
  }

  void returnFromProc() {
    if (stack_.empty()) {
      p_ = nullptr;
      mode_ = Mode::Tags;
      tail_ = false;
      return;
    }
    const Frame& f = stack_.back();
    if (f.signal) {
      stack_.pop_back();
      pending_ = "a procedure returned into the code a signal interrupted, without the handler's return" + at();
      return;
    }
    if (plan_.data) restore(f);  // the ABI keeps %rsp and the callee-saved ones; the rest are recorded
    lib_ = f.lib;
    p_ = f.p;
    b_ = f.block;
    if (!p_) {
      mode_ = Mode::Tags;
      tail_ = false;
    } else if (f.afterCall) {
      mode_ = f.flag ? Mode::Tags : Mode::AfterCall;
      tail_ = false;
    } else {
      mode_ = Mode::Tags;
      tail_ = f.flag;
    }
    stack_.pop_back();
  }

  // A frame keeps the registers and the stack slots its procedure uses
  // (no other slot is read before it is stored again: DataSlices), not the
  // whole register file: a copy per call was most of a call's cost.
  void save(Frame& f) {
    std::memcpy(f.gpr, data_.regs.gpr, sizeof f.gpr);
    f.slotsAt = uint32_t(slotPool_.size());
    f.slots = f.p ? facts_.slots[f.p->id] : 0;
    slotPool_.insert(slotPool_.end(), data_.regs.slot, data_.regs.slot + f.slots);
  }
  // Frame f's registers back; the frames above it, and f, are left.
  void restore(const Frame& f) {
    std::memcpy(data_.regs.gpr, f.gpr, sizeof f.gpr);
    std::copy_n(slotPool_.data() + f.slotsAt, f.slots, data_.regs.slot);
    slotPool_.resize(f.slotsAt);
  }

  // Leaves every frame above the innermost activation of procedure `id`
  // (the current one, or a caller's), which becomes the current one.
  std::string unwindTo(uint32_t id) {
    if (p_ && p_->id == id) return {};
    for (size_t i = stack_.size(); i-- > 0;)
      if (stack_[i].p && stack_[i].p->id == id && !stack_[i].signal) {
        p_ = stack_[i].p;
        if (plan_.data) restore(stack_[i]);
        stack_.resize(i);
        lib_ = {};  // a library call left by longjmp or an exception
        while (!open_.empty() && open_.back().depth > stack_.size()) open_.pop_back();  // left by longjmp
        return {};
      }
    return "control came back to " + prog_.procs[id].name + ", which has no activation" + at();
  }

  // The landing pad the unwinder sends a frame to whose call is the last
  // instruction of block `block` of `p` (its call-site table's entry for the
  // return address), or 0.
  uint64_t padOf(const ir::Procedure& p, uint32_t block) const {
    const ir::Block& blk = p.blocks[block];
    const x86::Insn& call = p.insns[blk.firstInsn + blk.insnCount - 1];
    const uint64_t ip = call.address + call.length - 1;
    if (const unwind::Fde* f = unwind::findFde(unwind_, ip))
      for (const unwind::CallSite& cs : f->callSites)
        if (cs.start <= ip && ip < cs.end) return cs.landingPad;
    return 0;
  }

  // An exception reached landing pad `block` of procedure `id`: the
  // innermost activation of `id` whose call in progress has that pad (as
  // the unwinder finds it, frame by frame: an activation of a recursive
  // procedure whose call has no pad, or another, is left), or else the
  // innermost activation of `id`.
  std::string unwindToPad(uint32_t id, uint32_t block) {
    const uint64_t pad = prog_.procs[id].blocks[block].start;
    if (p_ && p_->id == id && padOf(*p_, b_) == pad) return {};
    for (size_t i = stack_.size(); i-- > 0;)
      if (stack_[i].p && stack_[i].p->id == id && !stack_[i].signal && padOf(*stack_[i].p, stack_[i].block) == pad) {
        p_ = stack_[i].p;
        if (plan_.data) restore(stack_[i]);
        stack_.resize(i);
        lib_ = {};  // a library call left by longjmp or an exception
        while (!open_.empty() && open_.back().depth > stack_.size()) open_.pop_back();
        return {};
      }
    return unwindTo(id);
  }

  void stopThread() {
    stack_.clear();
    slotPool_.clear();
    open_.clear();
    p_ = nullptr;
    mode_ = Mode::Tags;
    tail_ = false;
  }

  // Leaves the current procedure from block b_ (its witness, if any, read).
  std::string leave() {
    const ir::Block& blk = p_->blocks[b_];
    const ir::OutEdge* way = nullptr;
    for (const ir::OutEdge& e : blk.outs) {
      if (!ir::leadsToExit(e.kind) || e.kind == ir::EdgeKind::Exit) continue;
      if (way && (way->kind != e.kind || way->target != e.target)) return "two ways out of one block" + at();
      way = &e;
    }
    if (!way) {
      stopThread();  // a no-return call's block: the callee did return (or ended the thread)
      return {};
    }
    const x86::Insn& last = p_->insns[blk.firstInsn + blk.insnCount - 1];
    switch (way->kind) {
      case ir::EdgeKind::Return: returnFromProc(); return {};
      case ir::EdgeKind::Stop: stopThread(); return {};
      default: break;
    }
    if (way->kind == ir::EdgeKind::TailCall && way->target)
      if (const ir::Procedure* q = analysis::tracedCode(prog_, plan_, way->target)) {
        p_ = q;
        b_ = uint32_t(q->blockIndexAt(way->target));
        entryConsumed_ = blockConsumed_ = false;
        mode_ = Mode::Block;
        return {};
      }
    outsideCall(last.address, way->target);
    mode_ = Mode::Tags;
    tail_ = true;
    return {};
  }

  // Where a jump table that also reaches other procedures (a .cold part)
  // went: BLOCK of the target (its stub's for this procedure, the block's
  // own for another), or ENTRY of another procedure's entry.
  std::string crossTableTarget(bool& ended) {
    uint64_t tag, id, block = 0;
    if (!read(1, tag) || !read(4, id) || (tag == ATOMX_TRACE_BLOCK && !read(4, block))) return ended = true, std::string();
    if ((tag != ATOMX_TRACE_BLOCK && tag != ATOMX_TRACE_ENTRY) || id >= plan_.procs.size() || !plan_.procs[id].traced)
      return "tag " + std::to_string(tag) + "/" + std::to_string(id) + " where a jump table's target was due" + at();
    const bool here = id == p_->id;
    p_ = &prog_.procs[id];
    b_ = tag == ATOMX_TRACE_ENTRY ? plan_.procs[id].entryBlock : uint32_t(block);
    if (b_ >= p_->blocks.size()) return "jump-table target " + std::to_string(b_) + " is no block" + at();
    entryConsumed_ = tag == ATOMX_TRACE_ENTRY;
    blockConsumed_ = tag == ATOMX_TRACE_BLOCK && !here;
    mode_ = Mode::Block;
    return {};
  }

  // Takes block b_'s way on, after its instructions (and its call).
  std::string wayOn(bool& ended) {
    const BlockFacts& f = facts();
    if (f.outs == 0) {
      stopThread();
      return {};
    }
    if (f.flags & BlockFacts::kTable) {
      const analysis::ProcTrace& t = plan_.procs[p_->id];
      const analysis::TraceGraph& g = t.graph;
      const std::vector<uint32_t>& outs = g.out[b_];
      if (t.crossTables) return crossTableTarget(ended);
      uint64_t target;
      if (!read(t.tableWidth, target)) return ended = true, std::string();
      ++sum_.tableTargets;
      bool known = false;
      for (uint32_t k : outs) known |= g.arcs[k].to == target;
      if (!known) return "jump-table target " + std::to_string(target) + " is no successor" + at();
      b_ = uint32_t(target);
      entryConsumed_ = blockConsumed_ = false;
      mode_ = Mode::Block;
      return {};
    }
    if (f.flags & BlockFacts::kEvaluated) return evaluatedWay();
    if (earlyDone_) {  // read before the last instruction ran
      earlyDone_ = false;
      return leave();
    }
    if (const SignalMark* m = f.outs > 1 ? deliveryHere() : nullptr) {
      const int64_t k = arcToSignal(m->pc);
      if (k < 0) return "a signal at " + hex(m->pc) + ", which no successor reaches" + at();
      b_ = plan_.procs[p_->id].graph.arcs[uint32_t(k)].to;
      entryConsumed_ = blockConsumed_ = false;
      mode_ = Mode::Block;
      return {};
    }
    int32_t due = f.onlyDue;
    uint32_t to = f.onlyTo;
    if (f.outs > 1) {
      uint64_t w;
      if (!peek(f.width, w)) return ended = true, std::string();
      const Way* c = facts_.choose.data() + f.chooseAt;
      const Way* const end = c + f.chooseCount;
      while (c != end && c->first != w) ++c;
      if (c == end) return "witness " + std::to_string(w) + " fits no successor" + at();
      due = c->due, to = c->to;
    }
    if (due >= 0) {
      uint64_t w;
      if (!read(f.width, w)) return ended = true, std::string();
      ++sum_.witnesses;
      if (w != uint64_t(due)) return "witness " + std::to_string(w) + " where " + std::to_string(due) + " was due" + at();
    }
    if (to == BlockFacts::kExit) return leave();
    b_ = to;
    entryConsumed_ = blockConsumed_ = false;
    mode_ = Mode::Block;
    return {};
  }

  // An evaluated predicate's way on: its jcc's condition on the flags its
  // setter left (stepData), with no witness.  A signal delivered as the
  // branch was taken is met at the successor.
  std::string evaluatedWay() {
    const analysis::ProcTrace& t = plan_.procs[p_->id];
    const analysis::TraceGraph& g = t.graph;
    const ir::Block& blk = p_->blocks[b_];
    const x86::Insn& jcc = p_->insns[blk.firstInsn + blk.insnCount - 1];
    bool taken = x86::emu::condition(t.slices.evaluated[b_], evalFlags_);
    ++sum_.evaluated;
    // For the oracles' self-test only (tests/trace): ATOMX_TEST_REGEN_FLIP_EVAL=N
    // takes the other way at the Nth evaluated predicate of each stream.
    if (flipEval_ < 0) {
      const char* v = std::getenv("ATOMX_TEST_REGEN_FLIP_EVAL");
      flipEval_ = v ? std::atol(v) : 0;
    }
    if (flipEval_ > 0 && ++evalSeen_ == uint64_t(flipEval_)) taken = !taken;
    const uint64_t next = taken ? jcc.target : jcc.address + jcc.length;
    for (uint32_t k : g.out[b_]) {
      const uint32_t to = g.arcs[k].to;
      if (to == g.exit || p_->blocks[to].start != next) continue;
      b_ = to;
      entryConsumed_ = blockConsumed_ = false;
      mode_ = Mode::Block;
      return "";
    }
    return "an evaluated branch to " + hex(next) + ", which is no successor" + at();
  }

  std::string walk() {
    mode_ = Mode::Tags;
    p_ = nullptr;
    tail_ = false;
    stack_.clear();
    slotPool_.clear();
    bool ended = false;
    std::string problem;  // (empty until the walk returns it)
    while (!ended) {
      if (!pending_.empty()) return pending_;
      if (pos_ > markPos())
        return "the signal at stream byte " + std::to_string(markPos()) + " (before " + hex((*marks_)[nextMark_].pc) +
               ") was not met on the path" + at();
      switch (mode_) {
        case Mode::Tags: {
          if (pos_ == markPos()) {
            if ((*marks_)[nextMark_].kind != ATOMX_TRACE_MARK_RETURNED)
              return "a signal interrupted " + hex((*marks_)[nextMark_].pc) + " while the walk was outside the trace" + at();
            problem = signalReturned();
            break;
          }
          uint64_t tag;
          if (!peek(1, tag)) {
            ended = true;
            break;
          }
          if (tag == ATOMX_TRACE_RETURN) {
            if (!p_) ++pos_;
            else if (tail_) returnFromProc();
            else {
              ++pos_;
              mode_ = Mode::AfterCall;
            }
            break;
          }
          if (tag == ATOMX_TRACE_BLOCK || tag == ATOMX_TRACE_RESUMED) {
            uint64_t id, block;
            ++pos_;
            if (!read(4, id) || !read(4, block)) {
              ended = true;
              break;
            }
            if (id >= plan_.procs.size() || !plan_.procs[id].traced || block >= prog_.procs[id].blocks.size())
              return "tag " + std::to_string(tag) + " of no such block: " + std::to_string(id) + "/" + std::to_string(block) + at();
            const analysis::ProcTrace& t = plan_.procs[id];
            if (tag == ATOMX_TRACE_RESUMED) {
              // setjmp returned: from this very call, or through longjmp to
              // the innermost activation of its procedure.
              if (!t.resumes[block]) return "RESUMED of a block that calls no setjmp" + at();
              if (!(p_ && !tail_ && p_->id == id && b_ == block)) {
                if (std::string why = unwindTo(uint32_t(id)); !why.empty()) return why;
                b_ = uint32_t(block);
              }
              mode_ = Mode::AfterCall;
              break;
            }
            if (!t.tagged[block]) return "BLOCK of a block that writes none" + at();
            // A computed goto of p_ landed, or the unwinder delivered an
            // exception to a landing pad (the frames in between are left).
            if (prog_.procs[id].blocks[block].isLandingPad) {
              if (std::string why = unwindToPad(uint32_t(id), uint32_t(block)); !why.empty()) return why;
            } else if (!(p_ && tail_ && p_->id == id)) {
              if (std::string why = unwindTo(uint32_t(id)); !why.empty()) return why;
            }
            b_ = uint32_t(block);
            entryConsumed_ = blockConsumed_ = true;
            mode_ = Mode::Block;
            break;
          }
          if (tag != ATOMX_TRACE_ENTRY) return "byte " + std::to_string(tag) + " where a tag was due" + at();
          ++pos_;
          uint64_t id;
          if (!read(4, id)) {
            ended = true;
            break;
          }
          if (id >= plan_.procs.size() || !plan_.procs[id].enterable) return "ENTRY of " + std::to_string(id) + ", no such procedure" + at();
          stack_.push_back({p_, b_, false, tail_});
          if (plan_.data) save(stack_.back());
          stack_.back().lib = lib_;  // a callback (or a handler) during a library call: its own calls are its own
          p_ = &prog_.procs[id];
          b_ = plan_.procs[id].entryBlock;
          entryConsumed_ = true;
          blockConsumed_ = false;
          mode_ = Mode::Block;
          break;
        }
        case Mode::Block: {
          const BlockFacts& bf = facts();
          const bool resuming = resumed_;  // after a signal's handler: the block's records are read
          if (!resumed_) earlyDone_ = false;
          resumed_ = false;
          if ((bf.flags & BlockFacts::kEntryTag) && !entryConsumed_) {
            uint64_t tag, id;
            if (!read(1, tag) || !read(4, id)) {
              ended = true;
              break;
            }
            if (tag != ATOMX_TRACE_ENTRY || id != p_->id)
              return "ENTRY of " + p_->name + " was due, not " + std::to_string(tag) + "/" + std::to_string(id) + at();
          }
          if ((bf.flags & BlockFacts::kTagged) && !blockConsumed_) {
            uint64_t tag, id, block;
            if (!read(1, tag) || !read(4, id) || !read(4, block)) {
              ended = true;
              break;
            }
            if (tag != ATOMX_TRACE_BLOCK || id != p_->id || block != b_)
              return "BLOCK of this block was due, not " + std::to_string(tag) + "/" + std::to_string(id) + at();
          }
          entryConsumed_ = blockConsumed_ = false;
          if (plan_.data && !resuming && plan_.procs[p_->id].slices.recordAtEntry[b_] &&
              !readValues(plan_.procs[p_->id].slices.recordAtEntry[b_])) {
            ended = true;
            break;
          }
          if (!runBlock(problem, ended)) break;
          const BlockFacts& facts = this->facts();
          if (!(facts.flags & BlockFacts::kCalls)) {
            problem = wayOn(ended);
            break;
          }
          const x86::Insn& last = p_->insns[facts.firstInsn + facts.insnCount - 1];
          const uint64_t target = last.flow == x86::Flow::Call ? last.target : 0;
          if (const ir::Procedure* q = facts.callee) {
            stack_.push_back({p_, b_, true, bool(facts.flags & BlockFacts::kWritesReturn)});
            if (plan_.data) {
              save(stack_.back());
              data_.regs.gpr[4] -= 8;  // the callee's %rsp, which its entry may carry in (DataSlices::carriedIn)
            }
            p_ = q;
            b_ = facts.calleeBlock;
            entryConsumed_ = blockConsumed_ = false;
            break;
          }
          outsideCall(last.address, target);
          mode_ = Mode::Tags;
          tail_ = false;
          break;
        }
        case Mode::AfterCall: {
          const ir::Block& blk = p_->blocks[b_];
          if (!(facts().flags & BlockFacts::kReturns)) {
            stopThread();
            break;
          }
          // A library call's result, then the values recorded after the
          // call (after its RETURN or RESUMED).
          const analysis::InsnSlice* call = plan_.data ? &plan_.procs[p_->id].slices.insns[blk.firstInsn + blk.insnCount - 1] : nullptr;
          if (call && (!libraryReturned() || !readValues(call->recordAfter, call))) {
            ended = true;
            break;
          }
          problem = wayOn(ended);
          break;
        }
      }
      if (!problem.empty()) return problem;
    }
    return {};
  }

  // The share of the stream walked up to `pos`, added to progress_.
  void publishProgress(size_t pos) {
    const uint64_t now = s_->empty() ? weight_ : uint64_t(double(weight_) * double(pos) / double(s_->size()));
    if (now > reported_) progress_->done += now - reported_, reported_ = now;
  }

  Progress* progress_ = nullptr;
  uint64_t weight_ = 0, reported_ = 0;
  const ir::Program& prog_;
  const unwind::EhFrameInfo& unwind_;
  const analysis::TracePlan& plan_;
  const WalkFacts& facts_;
  Consumer& out_;
  Summary& sum_;
  std::vector<std::vector<Instruction>>& insns_;
  const std::vector<uint8_t>* s_ = nullptr;
  size_t pos_ = 0;
  size_t childFrom_ = 0;
  int tid_ = 0;
  Mode mode_ = Mode::Tags;
  const ir::Procedure* p_ = nullptr;
  uint32_t b_ = 0;
  bool tail_ = false;
  bool entryConsumed_ = false;  // the current block's ENTRY was read already
  bool blockConsumed_ = false;  // its BLOCK was
  std::vector<Frame> stack_;
  std::vector<uint64_t> slotPool_;  // the frames' stack slots (Frame::slotsAt)
  uint64_t emitted_ = 0;
  int strayTid_ = 0;
  size_t programIndex_ = 0;
  uint64_t strayCount_ = 0;
  const std::vector<SignalMark>* marks_ = nullptr;
  std::vector<uint64_t>* callPositions_ = nullptr;
  WalkProbe* probe_ = nullptr;
  size_t nextMark_ = 0;
  uint64_t markAt_ = UINT64_MAX;  // the next mark's stream position (markPos)
  uint64_t runPos_ = 0;           // the stream position where runBlock began
  std::vector<Open> open_;
  uint32_t from_ = 0;        // block b_ runs from this instruction (the rest after a signal)
  bool earlyDone_ = false;   // block b_'s early witness was read
  bool resumed_ = false;     // b_ goes on after a signal: its early witness stays read
  std::string pending_;      // a problem found where no string can be returned
  DataState data_;           // a data trace: what the walk knows of the thread's registers
  DataState before_;         // them before a repe/repne, whose count is known after it
  std::vector<DataRef> refs_;  // the data references of the block run being walked
  PendingLibrary lib_;         // a library call being walked
  uint8_t evalFlags_ = 0;      // the flags the last evaluated predicate's setter computed
  long flipEval_ = -1;         // ATOMX_TEST_REGEN_FLIP_EVAL (-1: not read yet)
  uint64_t evalSeen_ = 0;      // evaluated predicates met in this stream
  std::vector<DataRef> libRefs_;
  uint64_t librarySeen_ = 0;   // library calls of the stream reported
  uint64_t refsSeen_ = 0;      // of the stream, before it
};

}  // namespace

// The program a trace names, checked, with its model and trace plan.
// One program of the trace: its file, model and plan (a workload's trace
// has several: each stream is one program's, Stream::program).
struct LoadedProgram {
  std::string path;
  std::unique_ptr<elf::ElfImage> image;
  std::unique_ptr<analysis::ProgramModel> model;
  analysis::TracePlan plan;
  std::unique_ptr<WalkFacts> facts;

  // `given`: a copy of the file (--program), checked as the file is.
  LoadedProgram(const std::string& dir, const ProgramFile& recorded, const std::string& given,
                const analysis::BlockProfile* profile, bool data)
      : path(given.empty() ? recorded.path : given) {
    try {
      image = std::make_unique<elf::ElfImage>(elf::ElfImage::load(path));
    } catch (const Error& e) {
      throw Error(dir + ": the traced program " + path + " cannot be read: " + e.what());
    }
    const bool same = image->bytes().size() == recorded.size && fileHash(path) == recorded.hash;
    if (!same && given.empty())
      throw Error(dir + ": " + recorded.path + " has changed since it was traced (its size or hash differs); "
                  "give a saved copy of the traced file with --program FILE");
    if (!same)
      throw Error(dir + ": " + path + " is not the program this trace was recorded from (its size or hash differs from " +
                  recorded.path + "'s when it was traced)");
    model = analysis::analyzeProgram(*image);
    plan = analysis::planTrace(model->program, profile, data ? &model->decoder : nullptr);
    if (plan.digest != recorded.placement)
      throw Error(dir + ": the trace's witness placement" + (given.empty() ? " of " + recorded.path : std::string()) +
                  " differs from this atomx's (recorded by another version?)");
    facts = std::make_unique<WalkFacts>(model->program, plan);
  }
};

struct TraceReader::Impl {
  std::string dir;
  Manifest manifest;
  std::string program;  // the file read: the manifest's, or the one given
  std::vector<std::unique_ptr<LoadedProgram>> programs;  // the first, then the manifest's others
  // The first program's, as before a trace had several.
  const analysis::ProgramModel* model = nullptr;
  const analysis::TracePlan* plan = nullptr;

  Impl(const std::string& d, const std::string& given)
      : dir(d), manifest(readManifest(d)), program(given.empty() ? manifest.program : given) {
    const Manifest& m = manifest;
    analysis::BlockProfile profile;
    if (m.profile) {
      profile = readProfile(dir);
      if (profileHash(profile) != m.profile) throw Error(dir + ": the trace's profile file has changed since it was traced");
    }
    programs.push_back(std::make_unique<LoadedProgram>(dir, ProgramFile{m.program, m.programSize, m.programHash, m.placement},
                                                       given, m.profile ? &profile : nullptr, m.data));
    for (const ProgramFile& other : m.others)
      programs.push_back(std::make_unique<LoadedProgram>(dir, other, "", nullptr, m.data));
    model = programs[0]->model.get();
    plan = &programs[0]->plan;
  }

  // Each program's instruction lists (Walker's `insns`), one set per walker.
  using Instructions = std::vector<std::vector<std::vector<Instruction>>>;
  Instructions instructions() const {
    Instructions out(programs.size());
    for (size_t k = 0; k < programs.size(); ++k) out[k].resize(programs[k]->model->program.procs.size());
    return out;
  }

  // The stream's program.  ATOMX_TEST_WRONG_PROGRAM=1 (the must-fail twin
  // of trace.workload.*): every stream read as the next program's.
  const LoadedProgram& programOf(const Stream& s) const {
    static const bool wrong = [] {
      const char* w = std::getenv("ATOMX_TEST_WRONG_PROGRAM");
      return w && *w == '1';
    }();
    const size_t k = s.program < programs.size() ? s.program : 0;
    return *programs[wrong ? (k + 1) % programs.size() : k];
  }

  // Regenerates one stream into `consumer` with a walker of its own: the
  // instruction lists (`insns`, per program and procedure, filled as met)
  // belong to one thread; walkers on several threads share only what
  // nothing writes.  `strayTid`: the first stream's thread, when `s` is the
  // second (ATOMX_TEST_REGEN_STRAY).
  void walk(Stream& s, Consumer& consumer, Summary& sum, Instructions& insns, Progress* progress, int strayTid,
            std::vector<uint64_t>* callPositions = nullptr) const {
    std::error_code ec;
    const uint64_t weight = progress ? std::filesystem::file_size(s.path, ec) : 0;
    readStream(s);
    ++sum.threads;
    sum.streamBytes += s.bytes.size();
    const LoadedProgram& p = programOf(s);
    Walker walker(p.model->program, p.model->unwind, p.plan, *p.facts, consumer, sum, insns[indexOf(p)]);
    if (progress) walker.reportTo(progress, ec ? 0 : weight);
    walker.strayTo(strayTid);
    walker.programIs(indexOf(p));
    walker.recordCallPositions(callPositions);
    walker.probeWith(dynamic_cast<WalkProbe*>(&consumer));
    walker.run(s);
    s.bytes = {};
    s.marks = {};
  }

  size_t indexOf(const LoadedProgram& p) const {
    for (size_t k = 0; k < programs.size(); ++k)
      if (programs[k].get() == &p) return k;
    return 0;
  }
};

TraceReader::TraceReader(const std::string& dir, const std::string& program)
    : impl_(std::make_unique<Impl>(dir, program)) {}
TraceReader::~TraceReader() = default;

const std::string& TraceReader::dir() const { return impl_->dir; }
bool TraceReader::hasData() const { return impl_->manifest.data; }
const std::string& TraceReader::program() const { return impl_->program; }
std::vector<std::string> TraceReader::programs() const {
  std::vector<std::string> out{impl_->program};
  for (size_t k = 1; k < impl_->programs.size(); ++k) out.push_back(impl_->programs[k]->path);
  return out;
}

std::vector<TraceReader::ProcedureSize> TraceReader::procedures() const {
  std::vector<ProcedureSize> out;
  for (const ir::Procedure& p : impl_->model->program.procs) out.push_back({p.name, p.start, uint64_t(p.insns.size())});
  return out;
}

// The threads the event log knows that left no stream.
void addStreamless(const std::string& dir, Summary& sum) {
  uint64_t lost = 0;
  sum.streamless = streamlessThreads(dir, lost);
  sum.incompleteThreads += lost;
}

// Walk.h: the regenerator lent to Merge.cpp.
void walkStream(const TraceReader::Impl& impl, Stream& s, Consumer& consumer, Summary& sum,
                InstructionLists& insns, std::vector<uint64_t>* callPositions) {
  impl.walk(s, consumer, sum, insns, nullptr, 0, callPositions);
}
InstructionLists instructionLists(const TraceReader::Impl& impl) { return impl.instructions(); }
const Manifest& manifestOf(const TraceReader::Impl& impl) { return impl.manifest; }

namespace {

// The stream files' bytes: what Progress counts to.
void setTotal(Progress* progress, const std::vector<Stream>& streams) {
  if (!progress) return;
  uint64_t total = 0;
  std::error_code ec;
  for (const Stream& s : streams) {
    const uint64_t n = std::filesystem::file_size(s.path, ec);
    total += ec ? 0 : n;
  }
  // Each regeneration counts from 0 (Melting's passes each show their own).
  progress->done = 0;
  progress->total = total;
}

}  // namespace

Summary TraceReader::regenerate(Consumer& consumer, Progress* progress) const {
  Summary sum;
  TraceReader::Impl::Instructions insns = impl_->instructions();
  std::vector<Stream> streams = listStreams(impl_->dir);
  setTotal(progress, streams);
  // One stream in memory at a time.
  for (size_t k = 0; k < streams.size(); ++k)
    impl_->walk(streams[k], consumer, sum, insns, progress, k == 1 ? streams[0].thread : 0);
  addStreamless(impl_->dir, sum);
  return sum;
}

Summary regenerate(const std::string& dir, Consumer& consumer) { return TraceReader(dir).regenerate(consumer); }

namespace {

// Hands every event to each of several consumers (a shard of each
// analyser).
class Tee : public Consumer {
 public:
  explicit Tee(std::vector<Consumer*> to) : to_(std::move(to)) {}
  void threadBegin(int t) override {
    for (Consumer* c : to_) c->threadBegin(t);
  }
  void loadBias(int t, uint64_t bias) override {
    for (Consumer* c : to_) c->loadBias(t, bias);
  }
  void block(const BlockRun& b) override {
    for (Consumer* c : to_) c->block(b);
  }
  void outsideCall(int t, uint64_t site, const std::string& name) override {
    for (Consumer* c : to_) c->outsideCall(t, site, name);
  }
  void libraryCall(const LibraryCall& call) override {
    for (Consumer* c : to_) c->libraryCall(call);
  }
  void signal(const SignalEvent& e) override {
    for (Consumer* c : to_) c->signal(e);
  }
  void threadEnd(int t, const std::string& problem) override {
    for (Consumer* c : to_) c->threadEnd(t, problem);
  }

 private:
  std::vector<Consumer*> to_;
};

}  // namespace

void addSummary(Summary& to, const Summary& s) {
  to.threads += s.threads;
  to.blocks += s.blocks;
  to.instructions += s.instructions;
  to.outsideCalls += s.outsideCalls;
  to.streamBytes += s.streamBytes;
  to.incompleteThreads += s.incompleteThreads;
  to.witnesses += s.witnesses;
  to.tableTargets += s.tableTargets;
  to.evaluated += s.evaluated;
  to.dataRefs += s.dataRefs;
  to.libraryRefs += s.libraryRefs;
  to.recordedValues += s.recordedValues;
  to.valueBytes += s.valueBytes;
}

Summary TraceReader::analyze(const std::vector<Analyzer*>& analyzers, unsigned jobs, Progress* progress) const {
  std::vector<Stream> streams = listStreams(impl_->dir);
  setTotal(progress, streams);
  const size_t n = streams.size();
  jobs = threadsFor(n, jobs);
  // shards[a][k]: analyser a's state for stream k; sums[k]: stream k's totals.
  std::vector<std::vector<std::unique_ptr<Consumer>>> shards(analyzers.size());
  for (auto& s : shards) s.resize(n);
  std::vector<Summary> sums(n);
  // The longest streams start first, so that a long thread does not start
  // last; each shard keeps its stream-order index.
  std::vector<size_t> order(n);
  std::vector<uintmax_t> sizes(n, 0);
  for (size_t k = 0; k < n; ++k) {
    order[k] = k;
    std::error_code ec;
    if (jobs > 1) sizes[k] = std::filesystem::file_size(streams[k].path, ec);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  // (An exception: the lowest stream's, the one a single job meets first.)
  runItems(order, jobs, [&] { return impl_->instructions(); }, [&](TraceReader::Impl::Instructions& insns, size_t k) {
    const Shard shard{k, streams[k].thread, streams[k].name, jobs == 1};
    std::vector<Consumer*> to;
    for (size_t a = 0; a < analyzers.size(); ++a) to.push_back((shards[a][k] = analyzers[a]->shard(shard)).get());
    Tee tee(std::move(to));
    impl_->walk(streams[k], tee, sums[k], insns, progress, k == 1 ? streams[0].thread : 0);
  });
  Summary sum;
  for (const Summary& s : sums) addSummary(sum, s);
  addStreamless(impl_->dir, sum);
  // ATOMX_TEST_SHARD_ORDER=schedule: the must-fail twin of the test that
  // results do not depend on the jobs (tests/trace/analyze_jobs.sh) merges
  // the shards in the order they were scheduled instead.
  if (const char* o = std::getenv("ATOMX_TEST_SHARD_ORDER"); o && std::string(o) == "schedule")
    for (auto& list : shards) {
      std::vector<std::unique_ptr<Consumer>> scheduled;
      for (size_t k : order) scheduled.push_back(std::move(list[k]));
      list = std::move(scheduled);
    }
  for (size_t a = 0; a < analyzers.size(); ++a) analyzers[a]->merge(shards[a]);
  for (Analyzer* a : analyzers) a->report(sum);
  return sum;
}

OrderedOutput::OrderedOutput(const Shard& shard, std::FILE* to) : aside_(!shard.inOrder) {
  f_ = aside_ ? std::tmpfile() : to;
  if (!f_) throw Error(std::string("cannot create a temporary file for a shard's output: ") + std::strerror(errno));
}

OrderedOutput::~OrderedOutput() {
  if (aside_ && f_) std::fclose(f_);
}

void OrderedOutput::drainTo(std::FILE* to) {
  if (!aside_) return;
  if (std::fflush(f_) != 0 || std::fseek(f_, 0, SEEK_SET) != 0)
    throw Error(std::string("cannot read back a shard's output: ") + std::strerror(errno));
  static thread_local char buf[1 << 16];
  for (size_t got; (got = std::fread(buf, 1, sizeof buf, f_)) > 0;)
    if (std::fwrite(buf, 1, got, to) != got) throw Error(std::string("cannot write a shard's output: ") + std::strerror(errno));
  const bool bad = std::ferror(f_);
  std::fclose(f_);
  f_ = nullptr;
  if (bad) throw Error("cannot read back a shard's output");
}

std::vector<UntracedProcedure> untracedProcedures(const std::string& dir, const std::string& program) {
  const TraceReader::Impl t(dir, program);
  std::vector<UntracedProcedure> out;
  for (size_t k = 0; k < t.programs.size(); ++k) {
    const LoadedProgram& lp = *t.programs[k];
    for (const ir::Procedure& p : lp.model->program.procs) {
      const analysis::ProcTrace& pt = lp.plan.procs[p.id];
      if (pt.traced) continue;
      std::string why = pt.early ? "runs before the entry point, or is called by code that does"
                        : !p.isMovable() ? "left in place by atomx: " + p.reason
                                         : "holds no code";
      out.push_back({p.name, p.start, p.end, why, int(k) + 1, lp.path});
    }
  }
  return out;
}

}  // namespace atomx::trace
