#include "instrument/Plan.h"

#include <algorithm>
#include <memory>

#include "analysis/Entries.h"
#include "instrument/CallCode.h"
#include "instrument/SaveSet.h"
#include "support/Error.h"
#include "support/Hex.h"

namespace atomx::instrument {

namespace {

// At one place, calls run outermost first: the procedure's, then the
// block's, then the instruction's; on the way out the reverse.  Calls of the
// same kind run in the order they were added.
int rank(Point p) {
  switch (p) {
    case Point::ProcBefore: return 0;
    case Point::BlockBefore: return 1;
    case Point::InstBefore: return 2;
    case Point::InstAfter: return 3;
    case Point::Edge: return 4;
    case Point::BlockAfter: return 5;
    case Point::ProcAfter: return 6;
    default: return 7;
  }
}

// Code may not go before an endbr64: indirect branches must land on it.
uint32_t skipEndbr(const ir::Procedure& proc, uint32_t i) {
  if (proc.insns[i].mnemonic == ZYDIS_MNEMONIC_ENDBR64 && i + 1 < proc.insns.size()) return i + 1;
  return i;
}

}  // namespace

const char* counterModeName(CounterMode mode) {
  switch (mode) {
    case CounterMode::Plain: return "plain";
    case CounterMode::Atomic: return "atomic";
    case CounterMode::PerThread: return "per-thread";
  }
  return "?";
}

Plan::Plan(const Engine& engine, CounterMode counters) : engine_(engine), counters_(counters) {
  for (const CallRequest& c : engine.calls()) place(c);
  for (const IncrementRequest& i : engine.increments()) place(i);
  for (const StoreRequest& st : engine.stores()) place(st);
  if (counters_ == CounterMode::PerThread && !engine.increments().empty()) addThreadChecks();
  // A trace's last chunk is written at exit too (runtime/trace/stream.c, flush_all).
  if (!programAfter_.empty() || !engine.stores().empty()) addExitHooks();
  findLiveFlags();
  sortAndLayTails();
}


const ProcSites* Plan::procSites(uint32_t procId) const {
  auto it = procs_.find(procId);
  return it == procs_.end() ? nullptr : &it->second;
}

uint32_t Plan::siteAt(std::map<uint32_t, uint32_t>& slot, uint32_t key, const ir::Procedure& proc, uint32_t insn,
                      bool after) {
  auto [it, fresh] = slot.emplace(key, uint32_t(sites_.size()));
  if (fresh) {
    Site s;
    s.proc = &proc;
    s.insn = insn;
    s.afterInsn = after;
    s.pc = proc.insns[insn].address;
    sites_.push_back(std::move(s));
  }
  return it->second;
}

uint32_t Plan::beforeSite(const ir::Procedure& p, uint32_t i) {
  const uint32_t at = skipEndbr(p, i);
  return siteAt(procs_[p.id].before, at, p, at, false);
}

uint32_t Plan::afterSite(const ir::Procedure& p, uint32_t i) { return siteAt(procs_[p.id].after, i, p, i, true); }

uint32_t Plan::takenSite(const ir::Procedure& p, uint32_t i) {
  const uint32_t s = siteAt(procs_[p.id].takenStub, i, p, i, true);
  sites_[s].edgeTarget = p.insns[i].target;
  return s;
}

uint32_t Plan::edgeSite(const detail::EdgeData& e) {
  const ir::Procedure& p = *e.from->proc->proc;
  const uint32_t last = (e.from->endInst - 1)->index;
  switch (e.kind) {
    case ir::EdgeKind::FallThrough: return afterSite(p, last);
    case ir::EdgeKind::Taken: return takenSite(p, last);
    case ir::EdgeKind::JumpTable: break;
    default: break;  // edge handles are intra-procedural only (Engine): unreachable
  }
  return tableSite(p, p.blocks[e.to->block].start);
}

uint32_t Plan::tableSite(const ir::Procedure& p, uint64_t target) {
  auto [it, fresh] = procs_[p.id].tableStub.emplace(target, uint32_t(sites_.size()));
  if (fresh) {
    Site st;
    st.proc = &p;
    st.insn = uint32_t(p.insnIndexAt(target));
    st.afterInsn = false;
    st.pc = target;
    st.edgeTarget = target;
    sites_.push_back(std::move(st));
  }
  return it->second;
}

void Plan::place(const CallRequest& c) {
  auto instOf = [](const void* w) { return static_cast<const detail::InstData*>(w); };
  if (!c.unless.empty()) {  // a follower of the before site (Engine::addUnless allows only these two points)
    const detail::InstData* d = c.point == Point::InstBefore ? instOf(c.where)
                                                              : static_cast<const detail::BlockData*>(c.where)->firstInst;
    const uint32_t head = beforeSite(*d->block->proc->proc, d->index);
    Site s;
    s.proc = sites_[head].proc;
    s.insn = sites_[head].insn;
    s.pc = sites_[head].pc;
    s.calls.push_back(&c);
    s.unless = &c.unless;
    sites_[head].followers.push_back(uint32_t(sites_.size()));
    sites_.push_back(std::move(s));
    return;
  }
  auto add = [&](uint32_t site) { sites_[site].calls.push_back(&c); };
  switch (c.point) {
    case Point::ProgramBefore:
    case Point::ProgramAfter: {
      Site s;
      s.calls.push_back(&c);
      (c.point == Point::ProgramBefore ? programBefore_ : programAfter_).push_back(uint32_t(sites_.size()));
      sites_.push_back(std::move(s));
      return;
    }
    case Point::InstBefore: {
      const detail::InstData* d = instOf(c.where);
      return add(beforeSite(*d->block->proc->proc, d->index));
    }
    case Point::InstAfter: {
      const detail::InstData* d = instOf(c.where);
      const ir::Procedure& p = *d->block->proc->proc;
      const x86::Insn& in = p.insns[d->index];
      if (in.flow == x86::Flow::Jump) return add(takenSite(p, d->index));
      add(afterSite(p, d->index));
      if (in.flow == x86::Flow::CondBranch) add(takenSite(p, d->index));
      return;
    }
    case Point::BlockBefore: {
      auto* b = static_cast<const detail::BlockData*>(c.where);
      return add(beforeSite(*b->proc->proc, b->firstInst->index));
    }
    case Point::BlockAfter: {
      auto* b = static_cast<const detail::BlockData*>(c.where);
      const ir::Procedure& p = *b->proc->proc;
      const uint32_t last = (b->endInst - 1)->index;
      if (blockAfterGoesBefore(p.insns[last])) return add(siteAt(procs_[p.id].before, last, p, last, false));
      return add(afterSite(p, last));
    }
    case Point::ProcBefore: {
      auto* pd = static_cast<const detail::ProcData*>(c.where);
      if (pd->proc->hotPart >= 0) return;  // a .cold part is entered by jumps inside its procedure
      return add(beforeSite(*pd->proc, pd->firstBlock->firstInst->index));
    }
    case Point::ProcAfter: {
      // Every way out of the procedure and of its .cold parts (one procedure
      // split in two: a jump between them is no way out, and a .cold part
      // has no ProcAfter of its own): returns, jumps to other procedures
      // (tail calls), and indirect jumps that are not jump tables.
      auto* pd = static_cast<const detail::ProcData*>(c.where);
      if (pd->proc->hotPart >= 0) return;
      const ir::Program& program = engine_.program();
      const uint32_t hot = pd->proc->id;
      auto family = [&](uint64_t target) {
        const ir::Procedure* q = program.procAt(target);
        return q && (q->id == hot || q->hotPart == int32_t(hot));
      };
      std::vector<const detail::ProcData*> parts = {pd};
      for (const detail::ProcData& q : engine_.procs())
        if (q.proc->hotPart == int32_t(hot)) parts.push_back(&q);
      for (const detail::ProcData* part : parts) {
        const ir::Procedure& p = *part->proc;
        for (const detail::BlockData* b = part->firstBlock; b != part->endBlock; ++b) {
          const uint32_t last = (b->endInst - 1)->index;
          const x86::Insn& in = p.insns[last];
          bool exits = in.flow == x86::Flow::Return || (in.flow == x86::Flow::Jump && !family(in.target));
          if (in.flow == x86::Flow::IndirectJump)
            exits = std::none_of(b->firstEdge, b->endEdge, [](const detail::EdgeData& e) { return e.kind == ir::EdgeKind::JumpTable; });
          if (exits) add(siteAt(procs_[p.id].before, last, p, last, false));
        }
      }
      return;
    }
    case Point::Edge: return add(edgeSite(*static_cast<const detail::EdgeData*>(c.where)));
  }
}

void Plan::place(const IncrementRequest& inc) {
  uint32_t site = 0;
  switch (inc.point) {
    case Point::InstBefore: {
      auto* d = static_cast<const detail::InstData*>(inc.where);
      site = beforeSite(*d->block->proc->proc, d->index);
      break;
    }
    case Point::BlockBefore: {
      auto* b = static_cast<const detail::BlockData*>(inc.where);
      site = beforeSite(*b->proc->proc, b->firstInst->index);
      break;
    }
    case Point::Edge: site = edgeSite(*static_cast<const detail::EdgeData*>(inc.where)); break;
    default: throw InternalError("a counter increment at an unsupported point");
  }
  sites_[site].increments.push_back(&inc);
}

void Plan::place(const StoreRequest& st) {
  const ir::Procedure& p = *st.proc;
  uint32_t site = 0;
  switch (st.at) {
    case StoreRequest::At::Before: site = beforeSite(p, st.insn); break;
    case StoreRequest::At::After: site = afterSite(p, st.insn); break;
    case StoreRequest::At::Taken: site = takenSite(p, st.insn); break;
    case StoreRequest::At::TableTarget: site = tableSite(p, st.target); break;
  }
  sites_[site].stores.push_back(&st);
}

// The flags live where each site runs (SaveSet.h).
void Plan::findLiveFlags() { markLiveFlags(engine_, sites_); }

void Plan::addExitHooks() {
  // _exit skips atexit handlers; the program's own calls to it run
  // ProgramAfter first (calls from shared libraries are not seen).
  for (const detail::ProcData& pd : engine_.procs()) {
    const ir::Procedure& p = *pd.proc;
    for (uint32_t i = 0; i < p.insns.size(); ++i) {
      const x86::Insn& in = p.insns[i];
      if (in.flow != x86::Flow::Call && in.flow != x86::Flow::Jump) continue;
      auto name = engine_.program().pltNames.find(in.target);
      if (name == engine_.program().pltNames.end()) continue;
      if (name->second != "_exit@plt" && name->second != "_Exit@plt") continue;
      sites_[siteAt(procs_[p.id].before, i, p, i, false)].exitHook = true;
    }
  }
}

// Every thread's first moved instruction is at the entry of a procedure
// that code outside the moved code may call (analysis/Entries.h).
void Plan::addThreadChecks() {
  const ir::Program& program = engine_.program();
  std::vector<bool> moved(program.procs.size(), false);
  for (const detail::ProcData& pd : engine_.procs()) moved[pd.proc->id] = true;
  const std::vector<bool> entered = analysis::enteredFromOutside(program, moved);
  for (const detail::ProcData& pd : engine_.procs())
    if (entered[pd.proc->id] && pd.firstBlock != pd.endBlock)
      sites_[beforeSite(*pd.proc, pd.firstBlock->firstInst->index)].threadCheck = true;
}

void Plan::sortAndLayTails() {
  for (Site& s : sites_)
    s.codeSize = s.unless ? unlessCodeSize(engine_, s)
                          : incrementCodeSize(engine_, s, counters_) + storeCodeSize(s) + (s.needsCall() ? kSiteSize : 0);
  for (Site& s : sites_)
    std::stable_sort(s.calls.begin(), s.calls.end(),
                     [](const CallRequest* a, const CallRequest* b) { return rank(a->point) < rank(b->point); });
  for (Site& s : sites_)
    std::stable_sort(s.followers.begin(), s.followers.end(), [&](uint32_t a, uint32_t b) {
      return rank(sites_[a].calls[0]->point) < rank(sites_[b].calls[0]->point);
    });
  for (auto& [id, ps] : procs_) {
    uint32_t off = 0;
    for (auto& [insn, site] : ps.takenStub) ps.stubOffset[site] = off, off += sites_[site].codeSize + kStubJumpSize;
    for (auto& [target, site] : ps.tableStub) ps.stubOffset[site] = off, off += sites_[site].codeSize + kStubJumpSize;
    ps.tailSize = off;
  }
}

}  // namespace atomx::instrument
