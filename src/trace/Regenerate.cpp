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
#include <atomx/trace.hpp>
#include <atomx/trace_format.h>

#include <cstdlib>
#include <memory>

#include "analysis/ProgramModel.h"
#include "analysis/TracePlan.h"
#include "elf/ElfImage.h"
#include "support/Error.h"
#include "support/Hex.h"
#include "trace/TraceFiles.h"

namespace atomx::trace {

namespace {

class Walker {
 public:
  Walker(const ir::Program& program, const analysis::TracePlan& plan, Consumer& out, Summary& sum,
         std::vector<std::vector<Instruction>>& insns)
      : prog_(program), plan_(plan), out_(out), sum_(sum), insns_(insns) {}

  void run(const Stream& s) {
    s_ = &s.bytes;
    childFrom_ = s.childFrom;
    pos_ = 0;
    tid_ = s.thread;
    out_.threadBegin(tid_);
    std::string problem = walk();
    if (problem.empty() && !s.problem.empty()) problem = s.problem;
    if (!problem.empty()) ++sum_.incompleteThreads;
    out_.threadEnd(tid_, problem);
  }

 private:
  enum class Mode { Block, Tags, AfterCall };
  struct Frame {
    const ir::Procedure* p;
    uint32_t block;
    bool afterCall;     // resume after the block's call; else in its tag loop
    bool flag;          // afterCall: the call wrote RETURN; tag loop: tail
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
  void emitBlock() {
    // For the oracles' self-test only (tests/trace): ATOMX_TEST_REGEN_DROP=N
    // leaves the Nth block regenerated (from 1) out of what is reported.
    static const uint64_t drop = [] {
      const char* v = std::getenv("ATOMX_TEST_REGEN_DROP");
      return v ? std::strtoull(v, nullptr, 10) : 0;
    }();
    if (drop && ++emitted_ == drop) return;
    std::vector<Instruction>& all = insns_[p_->id];
    if (all.empty())
      for (const x86::Insn& in : p_->insns) all.push_back({in.address, uint8_t(in.length)});
    const ir::Block& blk = p_->blocks[b_];
    const bool inherited = childFrom_ && pos_ <= childFrom_;
    out_.block({tid_, blk.start, all.data() + blk.firstInsn, blk.insnCount, p_->name.c_str(), inherited});
    ++sum_.blocks;
    sum_.instructions += blk.insnCount;
  }

  // A call or jump from `site` to code outside the trace (`target` 0:
  // through a pointer).
  void outsideCall(uint64_t site, uint64_t target) {
    out_.outsideCall(tid_, site, target ? prog_.describe(target) : std::string());
    ++sum_.outsideCalls;
  }

  void returnFromProc() {
    if (stack_.empty()) {
      p_ = nullptr;
      mode_ = Mode::Tags;
      tail_ = false;
      return;
    }
    const Frame f = stack_.back();
    stack_.pop_back();
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
  }

  // Leaves every frame above the innermost activation of procedure `id`
  // (the current one, or a caller's), which becomes the current one.
  std::string unwindTo(uint32_t id) {
    if (p_ && p_->id == id) return "";
    for (size_t i = stack_.size(); i-- > 0;)
      if (stack_[i].p && stack_[i].p->id == id) {
        p_ = stack_[i].p;
        stack_.resize(i);
        return "";
      }
    return "control came back to " + prog_.procs[id].name + ", which has no activation" + at();
  }

  void stopThread() {
    stack_.clear();
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
      return "";
    }
    const x86::Insn& last = p_->insns[blk.firstInsn + blk.insnCount - 1];
    switch (way->kind) {
      case ir::EdgeKind::Return: returnFromProc(); return "";
      case ir::EdgeKind::Stop: stopThread(); return "";
      default: break;
    }
    if (way->kind == ir::EdgeKind::TailCall && way->target)
      if (const ir::Procedure* q = analysis::tracedCode(prog_, plan_, way->target)) {
        p_ = q;
        b_ = uint32_t(q->blockIndexAt(way->target));
        entryConsumed_ = blockConsumed_ = false;
        mode_ = Mode::Block;
        return "";
      }
    outsideCall(last.address, way->target);
    mode_ = Mode::Tags;
    tail_ = true;
    return "";
  }

  // Where a jump table that also reaches other procedures (a .cold part)
  // went: BLOCK of the target (its stub's for this procedure, the block's
  // own for another), or ENTRY of another procedure's entry.
  std::string crossTableTarget(bool& ended) {
    uint64_t tag, id, block = 0;
    if (!read(1, tag) || !read(4, id) || (tag == ATOMX_TRACE_BLOCK && !read(4, block))) return ended = true, "";
    if ((tag != ATOMX_TRACE_BLOCK && tag != ATOMX_TRACE_ENTRY) || id >= plan_.procs.size() || !plan_.procs[id].traced)
      return "tag " + std::to_string(tag) + "/" + std::to_string(id) + " where a jump table's target was due" + at();
    const bool here = id == p_->id;
    p_ = &prog_.procs[id];
    b_ = tag == ATOMX_TRACE_ENTRY ? plan_.procs[id].entryBlock : uint32_t(block);
    if (b_ >= p_->blocks.size()) return "jump-table target " + std::to_string(b_) + " is no block" + at();
    entryConsumed_ = tag == ATOMX_TRACE_ENTRY;
    blockConsumed_ = tag == ATOMX_TRACE_BLOCK && !here;
    mode_ = Mode::Block;
    return "";
  }

  // Takes block b_'s way on, after its instructions (and its call).
  std::string wayOn(bool& ended) {
    const analysis::ProcTrace& t = plan_.procs[p_->id];
    const analysis::TraceGraph& g = t.graph;
    const std::vector<uint32_t>& outs = g.out[b_];
    if (outs.empty()) {
      stopThread();
      return "";
    }
    if (g.flags[b_] & analysis::TraceGraph::kIndirect) {
      if (t.crossTables) return crossTableTarget(ended);
      uint64_t target;
      if (!read(t.tableWidth, target)) return ended = true, "";
      ++sum_.tableTargets;
      bool known = false;
      for (uint32_t k : outs) known |= g.arcs[k].to == target;
      if (!known) return "jump-table target " + std::to_string(target) + " is no successor" + at();
      b_ = uint32_t(target);
      entryConsumed_ = blockConsumed_ = false;
      mode_ = Mode::Block;
      return "";
    }
    uint32_t arc = outs[0];
    if (outs.size() > 1) {
      uint64_t w;
      if (!peek(t.plan.width, w)) return ended = true, "";
      bool found = false;
      for (uint32_t k : outs)
        for (uint32_t v : t.firstWitnesses[k])
          if (v == w && !found) arc = k, found = true;
      if (!found) return "witness " + std::to_string(w) + " fits no successor" + at();
    }
    if (t.plan.witness[arc] >= 0) {
      uint64_t w;
      if (!read(t.plan.width, w)) return ended = true, "";
      ++sum_.witnesses;
      if (w != uint64_t(t.plan.witness[arc]))
        return "witness " + std::to_string(w) + " where " + std::to_string(t.plan.witness[arc]) + " was due" + at();
    }
    const uint32_t to = g.arcs[arc].to;
    if (to == g.exit) return leave();
    b_ = to;
    entryConsumed_ = blockConsumed_ = false;
    mode_ = Mode::Block;
    return "";
  }

  std::string walk() {
    mode_ = Mode::Tags;
    p_ = nullptr;
    tail_ = false;
    stack_.clear();
    bool ended = false;
    while (!ended) {
      std::string problem;
      switch (mode_) {
        case Mode::Tags: {
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
            // exception to a landing pad of the innermost activation of its
            // procedure (the frames in between are left).
            if (!(p_ && tail_ && p_->id == id))
              if (std::string why = unwindTo(uint32_t(id)); !why.empty()) return why;
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
          p_ = &prog_.procs[id];
          b_ = plan_.procs[id].entryBlock;
          entryConsumed_ = true;
          blockConsumed_ = false;
          mode_ = Mode::Block;
          break;
        }
        case Mode::Block: {
          const analysis::ProcTrace& t = plan_.procs[p_->id];
          if (t.enterable && b_ == t.entryBlock && !entryConsumed_) {
            uint64_t tag, id;
            if (!read(1, tag) || !read(4, id)) {
              ended = true;
              break;
            }
            if (tag != ATOMX_TRACE_ENTRY || id != p_->id)
              return "ENTRY of " + p_->name + " was due, not " + std::to_string(tag) + "/" + std::to_string(id) + at();
          }
          if (t.tagged[b_] && !blockConsumed_) {
            uint64_t tag, id, block;
            if (!read(1, tag) || !read(4, id) || !read(4, block)) {
              ended = true;
              break;
            }
            if (tag != ATOMX_TRACE_BLOCK || id != p_->id || block != b_)
              return "BLOCK of this block was due, not " + std::to_string(tag) + "/" + std::to_string(id) + at();
          }
          entryConsumed_ = blockConsumed_ = false;
          emitBlock();
          const ir::Block& blk = p_->blocks[b_];
          const x86::Insn& last = p_->insns[blk.firstInsn + blk.insnCount - 1];
          bool calls = false;
          for (const ir::OutEdge& e : blk.outs) calls |= e.kind == ir::EdgeKind::Call || e.kind == ir::EdgeKind::Exit;
          if (!calls) {
            problem = wayOn(ended);
            break;
          }
          const uint64_t target = last.flow == x86::Flow::Call ? last.target : 0;
          const ir::Procedure* q = target ? analysis::tracedCode(prog_, plan_, target) : nullptr;
          if (q && q->start == target) {
            stack_.push_back({p_, b_, true, analysis::callWritesReturn(prog_, plan_, target)});
            p_ = q;
            b_ = uint32_t(q->blockIndexAt(target));
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
          bool returns = false;
          for (const ir::OutEdge& e : blk.outs) returns |= e.kind == ir::EdgeKind::Call;
          if (!returns) stopThread();
          else problem = wayOn(ended);
          break;
        }
      }
      if (!problem.empty()) return problem;
    }
    return "";
  }

  const ir::Program& prog_;
  const analysis::TracePlan& plan_;
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
  uint64_t emitted_ = 0;
};

// The program a trace names, checked, with its model and trace plan.
struct Traced {
  std::unique_ptr<elf::ElfImage> image;
  std::unique_ptr<analysis::ProgramModel> model;
  analysis::TracePlan plan;
};

Traced load(const std::string& dir) {
  const Manifest m = readManifest(dir);
  Traced t;
  try {
    t.image = std::make_unique<elf::ElfImage>(elf::ElfImage::load(m.program));
  } catch (const Error& e) {
    throw Error(dir + ": the traced program " + m.program + " cannot be read: " + e.what());
  }
  if (t.image->bytes().size() != m.programSize || fileHash(m.program) != m.programHash)
    throw Error(dir + ": " + m.program + " has changed since it was traced (its size or hash differs)");
  t.model = analysis::analyzeProgram(*t.image);
  analysis::BlockProfile profile;
  if (m.profile) {
    profile = readProfile(dir);
    if (profileHash(profile) != m.profile) throw Error(dir + ": the trace's profile file has changed since it was traced");
  }
  t.plan = analysis::planTrace(t.model->program, m.profile ? &profile : nullptr);
  if (t.plan.digest != m.placement)
    throw Error(dir + ": the trace's witness placement differs from this atomx's (recorded by another version?)");
  return t;
}

}  // namespace

std::vector<UntracedProcedure> untracedProcedures(const std::string& dir) {
  const Traced t = load(dir);
  std::vector<UntracedProcedure> out;
  for (const ir::Procedure& p : t.model->program.procs) {
    const analysis::ProcTrace& pt = t.plan.procs[p.id];
    if (pt.traced) continue;
    std::string why = pt.early ? "runs before the entry point, or is called by code that does"
                      : !p.isMovable() ? "left in place by atomx: " + p.reason
                                       : "holds no code";
    out.push_back({p.name, p.start, p.end, why});
  }
  return out;
}

Summary regenerate(const std::string& dir, Consumer& consumer) {
  const Traced t = load(dir);
  const std::unique_ptr<analysis::ProgramModel>& model = t.model;
  const analysis::TracePlan& plan = t.plan;
  Summary sum;
  std::vector<std::vector<Instruction>> insns(model->program.procs.size());
  Walker walker(model->program, plan, consumer, sum, insns);
  // One stream in memory at a time.
  for (Stream& s : listStreams(dir)) {
    readStream(s);
    ++sum.threads;
    sum.streamBytes += s.bytes.size();
    walker.run(s);
    s.bytes = {};
  }
  return sum;
}

}  // namespace atomx::trace
