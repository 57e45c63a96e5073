#include "instrument/TraceRecorder.h"

#include <atomx/trace_format.h>

#include <algorithm>
#include <bit>
#include <initializer_list>
#include <memory>
#include <set>

#include "support/Error.h"
#include "analysis/CounterPromotion.h"

namespace atomx::instrument {

namespace {

std::vector<uint8_t> littleEndian(uint64_t v, unsigned width) {
  std::vector<uint8_t> b(width);
  for (unsigned i = 0; i < width; ++i) b[i] = uint8_t(v >> (8 * i));
  return b;
}

// A tag and its words (four bytes each): ENTRY id, BLOCK id index, RESUMED id index.
std::vector<uint8_t> tagRecord(unsigned tag, std::initializer_list<uint64_t> words) {
  std::vector<uint8_t> bytes = {uint8_t(tag)};
  for (uint64_t w : words) {
    const std::vector<uint8_t> le = littleEndian(w, 4);
    bytes.insert(bytes.end(), le.begin(), le.end());
  }
  return bytes;
}

// A library call whose length is measured at run time
// (analysis::LibraryLength::Measured).
struct MeasuredSite {
  const ir::Procedure* proc;
  uint32_t block, insn;
  uint16_t f;  // libc::kFunctions index
};

// The recorder's routine before each measured call, after the site's
// stores (a site runs its stores, then its calls; the last store puts the
// site's number in the thread's library slot): it writes the length at the
// cursor and clears the slot (runtime/trace/library.c).  Its sites,
// numbered from 1, are handed to it when the program starts: the call's
// original address and how its length is measured.
void addMeasuredCalls(Engine& engine, const std::vector<MeasuredSite>& sites) {
  if (sites.empty()) return;
  const uint32_t table = engine.declare("atomx_trace_library_sites(long, long[])");
  const uint32_t measure = engine.declare("atomx_trace_library(long, REGV, REGV, REGV)");
  std::vector<long> pairs;
  const detail::ProcData* pd = nullptr;
  for (size_t k = 0; k < sites.size(); ++k) {
    const MeasuredSite& s = sites[k];
    pairs.push_back(long(s.proc->insns[s.insn].address));
    pairs.push_back(long(libc::measuredBy(libc::kFunctions[s.f].kind)));
    if (!pd || pd->proc != s.proc) pd = engine.procAt(s.proc->start);
    if (!pd || pd->proc != s.proc) throw InternalError("a traced procedure the engine does not hold: " + s.proc->name);
    const detail::InstData* inst = pd->firstBlock[s.block].firstInst + (s.insn - s.proc->blocks[s.block].firstInsn);
    engine.add(measure, Point::InstBefore, inst,
               {int64_t(k + 1), reg(Reg::rdi), reg(Reg::rsi), reg(Reg::rdx)});
  }
  engine.addFirst(table, Point::ProgramBefore, {int64_t(sites.size()), Arg(pairs)});
}

}  // namespace

TraceStoreCounts addTraceStores(Engine& engine, const analysis::TracePlan& plan) {
  using At = StoreRequest::At;
  const ir::Program& program = engine.program();
  TraceStoreCounts counts;
  std::vector<MeasuredSite> measured;
  for (const ir::Procedure& p : program.procs) {
    const analysis::ProcTrace& t = plan.procs[p.id];
    if (!t.traced) continue;
    auto store = [&](At at, uint32_t insn, uint64_t target, std::vector<uint8_t> bytes) {
      engine.addStore({at, &p, insn, target, std::move(bytes)});
    };
    // A data trace's values (DataSlices.h): registers as they are there.
    // (After an instruction: each register in the bytes the slices say.)
    auto values = [&](At at, uint32_t insn, uint16_t registers, const analysis::InsnSlice* after = nullptr,
                      uint32_t librarySite = 0) {
      if (!registers) return;
      StoreRequest st{at, &p, insn, 0, {}, registers};
      st.librarySite = librarySite;
      if (after)
        for (unsigned r = 0; r < 16; ++r) st.widths[r] = uint8_t(after->recordedBytes(r));
      engine.addStore(std::move(st));
      counts.values += uint64_t(std::popcount(registers));
    };
    const analysis::DataSlices* slices = plan.data ? &t.slices : nullptr;
    std::set<uint64_t> tableTargets;
    for (uint32_t bi = 0; bi < p.blocks.size(); ++bi) {
      const ir::Block& b = p.blocks[bi];
      const uint32_t last = b.firstInsn + b.insnCount - 1;
      const x86::Insn& in = p.insns[last];
      if (t.enterable && bi == t.entryBlock) {
        store(At::Before, b.firstInsn, 0, tagRecord(ATOMX_TRACE_ENTRY, {p.id}));
        ++counts.entries;
      }
      if (t.tagged[bi]) {
        store(At::Before, b.firstInsn, 0, tagRecord(ATOMX_TRACE_BLOCK, {p.id, bi}));
        ++counts.blockTags;
      }
      if (slices) {
        values(At::Before, b.firstInsn, slices->recordAtEntry[bi]);  // after the block's tags
        for (uint32_t i = b.firstInsn; i < last; ++i) values(At::After, i, slices->insns[i].recordAfter, &slices->insns[i]);
      }
      const bool returns = std::any_of(b.outs.begin(), b.outs.end(), [](const ir::OutEdge& e) { return e.kind == ir::EdgeKind::Call; });
      const int16_t library = slices ? t.library[bi] : -1;  // a library call (TracePlan.h, kLibraryArguments)
      if (returns && t.resumes[bi]) {
        store(At::After, last, 0, tagRecord(ATOMX_TRACE_RESUMED, {p.id, bi}));
        ++counts.returns;
      } else if (returns && (in.flow == x86::Flow::Call || in.flow == x86::Flow::IndirectCall) &&
                 analysis::callWritesReturn(program, plan, in.flow == x86::Flow::Call ? in.target : 0)) {
        store(At::After, last, 0, {uint8_t(ATOMX_TRACE_RETURN)});
        ++counts.returns;
      }
      const bool tail = in.flow == x86::Flow::Jump || in.flow == x86::Flow::IndirectJump;
      const analysis::LibraryLength length =
          library >= 0 ? analysis::libraryLength(size_t(library), tail) : analysis::LibraryLength::Arguments;
      if (length == analysis::LibraryLength::Result)
        values(At::After, last, analysis::kLibraryResult);  // after RETURN, before the call's own values
      if (slices) values(At::After, last, slices->insns[last].recordAfter, &slices->insns[last]);  // after RETURN, before the witness
      for (uint32_t k : t.graph.out[bi]) {
        const int32_t w = t.plan.witness[k];
        if (w < 0) continue;
        const std::vector<uint8_t> value = littleEndian(uint64_t(w), t.plan.width);
        std::set<std::pair<At, uint32_t>> sites;  // one store per site
        const uint32_t to = t.graph.arcs[k].to;
        if (to != t.graph.exit) {
          for (const ir::Edge& e : b.succs)
            if (e.to == to) sites.insert({e.kind == ir::EdgeKind::Taken ? At::Taken : At::After, last});
        } else {
          for (const ir::OutEdge& e : b.outs) {
            if (!ir::leadsToExit(e.kind)) continue;
            if (in.flow != x86::Flow::CondBranch) sites.insert({At::Before, last});
            else sites.insert({e.target == in.target ? At::Taken : At::After, last});
          }
        }
        for (const auto& [at, insn] : sites) store(at, insn, 0, value);
        ++counts.witnesses;
      }
      if (length == analysis::LibraryLength::Measured) measured.push_back({&p, bi, last, uint16_t(library)});
      if (library >= 0)  // after the early witness; a measured call's site number last
        values(At::Before, last, analysis::kLibraryArguments, nullptr,
               length == analysis::LibraryLength::Measured ? uint32_t(measured.size()) : 0);
      for (const ir::Edge& e : b.succs)
        if (e.kind == ir::EdgeKind::JumpTable && tableTargets.insert(p.blocks[e.to].start).second) {
          // With crossTables, BLOCK: the same record as the other procedures' targets.
          store(At::TableTarget, 0, p.blocks[e.to].start,
                t.crossTables ? tagRecord(ATOMX_TRACE_BLOCK, {p.id, e.to}) : littleEndian(e.to, t.tableWidth));
          ++counts.tableTargets;
        }
    }
  }
  addMeasuredCalls(engine, measured);
  counts.measured = measured.size();
  return counts;
}

namespace {

// Per procedure, per block: whether a tool's call or counter is in it, or
// on an edge from or to it (promoteTraceCursor refuses loops there).
std::vector<std::vector<bool>> blocksWithTools(const Engine& engine) {
  const ir::Program& program = engine.program();
  std::vector<std::vector<bool>> refused(program.procs.size());
  for (const ir::Procedure& p : program.procs) refused[p.id].assign(p.blocks.size(), false);
  auto mark = [&](const detail::BlockData* b) { refused[b->proc->proc->id][b->block] = true; };
  auto at = [&](Point point, const void* where) {
    if (!where) return;
    switch (point) {
      case Point::InstBefore:
      case Point::InstAfter: return mark(static_cast<const detail::InstData*>(where)->block);
      case Point::BlockBefore:
      case Point::BlockAfter: return mark(static_cast<const detail::BlockData*>(where));
      case Point::Edge: {
        auto* e = static_cast<const detail::EdgeData*>(where);
        mark(e->from);
        if (e->to) mark(e->to);
        return;
      }
      case Point::ProcBefore:
      case Point::ProcAfter: {
        auto* pd = static_cast<const detail::ProcData*>(where);
        refused[pd->proc->id].assign(pd->proc->blocks.size(), true);
        return;
      }
      default: return;
    }
  };
  for (const CallRequest& c : engine.calls()) at(c.point, c.where);
  for (const IncrementRequest& i : engine.increments()) at(i.point, i.where);
  for (const RegisterReservation& r : engine.reservations())
    for (auto [first, count] : r.insns) {
      const ir::Procedure& p = *r.proc;
      for (uint32_t b = 0; b < p.blocks.size(); ++b)
        if (p.blocks[b].firstInsn < first + count && first < p.blocks[b].firstInsn + p.blocks[b].insnCount)
          refused[p.id][b] = true;
    }
  return refused;
}

}  // namespace

size_t promoteTraceCursor(Engine& engine) {
  using At = StoreRequest::At;
  const ir::Program& program = engine.program();
  std::vector<std::vector<bool>> wanted(program.procs.size());
  for (const StoreRequest& st : engine.stores()) {
    if (st.at == At::TableTarget) continue;
    const ir::Procedure& p = *st.proc;
    std::vector<bool>& w = wanted[p.id];
    if (w.empty()) w.assign(p.blocks.size(), false);
    const int64_t b = p.blockIndexAt(p.insns[st.insn].address);
    if (b >= 0) w[size_t(b)] = true;
  }
  const std::vector<std::vector<bool>> refused = blocksWithTools(engine);
  size_t loops = 0;
  for (const ir::Procedure& p : program.procs) {
    if (wanted[p.id].empty()) continue;
    std::unique_ptr<analysis::RegisterLiveness> live;
    auto liveness = [&]() -> const analysis::RegisterLiveness& {
      if (!live) live = std::make_unique<analysis::RegisterLiveness>(program, p, engine.decoder());
      return *live;
    };
    for (const analysis::PromotedLoop& l : analysis::promoteCursor(p, liveness, wanted[p.id], refused[p.id])) {
      const unsigned reg = l.counters.front().reg;
      const bool spilled = l.counters.front().spilled;
      std::vector<bool> in(p.blocks.size(), false);
      for (uint32_t b : l.blocks) in[b] = true;
      // The loop's own stores: at its instructions, and on the edges out of
      // its blocks (an exit's run before its Save).
      for (StoreRequest& st : engine.stores()) {
        if (st.proc != &p || st.at == At::TableTarget) continue;
        const int64_t b = p.blockIndexAt(p.insns[st.insn].address);
        if (b >= 0 && in[size_t(b)]) st.cursor = int8_t(reg);
      }
      auto move = [&](std::pair<uint32_t, uint32_t> edge, StoreRequest::Move m) {
        const ir::Block& blk = p.blocks[edge.first];
        const uint32_t lastInsn = blk.firstInsn + blk.insnCount - 1;
        StoreRequest st{blk.succs[edge.second].kind == ir::EdgeKind::Taken ? At::Taken : At::After, &p, lastInsn, 0, {}};
        st.cursor = int8_t(reg);
        st.move = m;
        st.spilled = spilled;
        engine.addStore(std::move(st));
      };
      for (auto e : l.exits) move(e, StoreRequest::Move::Save);
      for (auto e : l.entries) move(e, StoreRequest::Move::Load);
      RegisterReservation r{&p, {}, x86::RegSet::gpr(reg)};
      for (uint32_t b : l.blocks) r.insns.push_back({p.blocks[b].firstInsn, p.blocks[b].insnCount});
      engine.reserveRegisters(std::move(r));
      engine.addCursorLoop({&p, l.blocks, reg});
      ++loops;
    }
  }
  return loops;
}

}  // namespace atomx::instrument
