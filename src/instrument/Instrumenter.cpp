#include "instrument/Instrumenter.h"

#include "instrument/RoutineFootprint.h"

#include <runtime/RuntimeBlob.h>
#include <runtime/abi.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "elf/ElfImage.h"
#include "support/Error.h"
#include "support/Hex.h"
#include "x86/Assembler.h"

namespace atomx::instrument {

namespace {

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

template <class T> void put(std::vector<uint8_t>& out, uint64_t at, T value) {
  std::memcpy(out.data() + at, &value, sizeof value);
}

}  // namespace

// The Insertions the layout sees: one site's code per before/after slot, and
// each procedure's edge stubs in its tail.
class InsertedCode : public layout::Insertions {
 public:
  InsertedCode(const Engine& engine, const Plan& plan) : engine_(engine), plan_(plan) {}
  // Per site: the enter slot it calls and its body; the counters.
  void setAddresses(const std::vector<uint64_t>* enters, const std::vector<uint64_t>* bodies,
                    const CodeAddresses* addresses) {
    enters_ = enters;
    bodies_ = bodies;
    addresses_ = addresses;
  }

  uint32_t sizeBefore(const ir::Procedure& proc, size_t i) const override { return size(find(proc, &ProcSites::before, i)); }
  uint32_t sizeAfter(const ir::Procedure& proc, size_t i) const override { return size(find(proc, &ProcSites::after, i)); }
  void emitBefore(const ir::Procedure& proc, size_t i, uint64_t at, std::vector<uint8_t>& out) const override {
    emitSite(at, *find(proc, &ProcSites::before, i), out);
  }
  void emitAfter(const ir::Procedure& proc, size_t i, uint64_t at, std::vector<uint8_t>& out) const override {
    emitSite(at, *find(proc, &ProcSites::after, i), out);
  }
  uint32_t sizeTail(const ir::Procedure& proc) const override {
    const ProcSites* ps = plan_.procSites(proc.id);
    return ps ? ps->tailSize : 0;
  }
  void emitTail(const ir::Procedure& proc, uint64_t at, const layout::CodeLayout& layout,
                std::vector<uint8_t>& out) const override {
    const ProcSites* ps = plan_.procSites(proc.id);
    if (!ps) return;
    std::vector<std::pair<uint32_t, uint32_t>> stubs(ps->stubOffset.begin(), ps->stubOffset.end());
    std::sort(stubs.begin(), stubs.end(), [](auto& a, auto& b) { return a.second < b.second; });
    for (auto [site, offset] : stubs) {
      const uint64_t here = at + offset;
      emitSite(here, site, out);
      x86::Assembler a(out, here + plan_.sites()[site].codeSize);
      a.jmpRel32(layout.relocated(plan_.sites()[site].edgeTarget));
    }
  }
  std::optional<uint32_t> takenEdge(const ir::Procedure& proc, size_t i) const override {
    const ProcSites* ps = plan_.procSites(proc.id);
    if (!ps) return std::nullopt;
    auto it = ps->takenStub.find(uint32_t(i));
    if (it == ps->takenStub.end()) return std::nullopt;
    return ps->stubOffset.at(it->second);
  }
  std::optional<uint32_t> tableEdge(const ir::Procedure& proc, uint64_t target) const override {
    const ProcSites* ps = plan_.procSites(proc.id);
    if (!ps) return std::nullopt;
    auto it = ps->tableStub.find(target);
    if (it == ps->tableStub.end()) return std::nullopt;
    return ps->stubOffset.at(it->second);
  }

 private:
  std::optional<uint32_t> find(const ir::Procedure& proc, std::map<uint32_t, uint32_t> ProcSites::*slot, size_t i) const {
    const ProcSites* ps = plan_.procSites(proc.id);
    if (!ps) return std::nullopt;
    auto it = (ps->*slot).find(uint32_t(i));
    if (it == (ps->*slot).end()) return std::nullopt;
    return it->second;
  }

  uint32_t size(std::optional<uint32_t> site) const { return site ? plan_.sites()[*site].placeSize(plan_.sites()) : 0; }

  // The site's code, then its followers' (Routine::beforeUnless).
  void emitSite(uint64_t at, uint32_t site, std::vector<uint8_t>& out) const {
    const Site& s = plan_.sites()[site];
    instrument::emitSite(engine_, s, plan_.counterMode(), at, (*enters_)[site], (*bodies_)[site], *addresses_, out);
    at += s.codeSize;
    for (uint32_t f : s.followers) {
      instrument::emitSite(engine_, plan_.sites()[f], plan_.counterMode(), at, (*enters_)[f], (*bodies_)[f],
                           *addresses_, out);
      at += plan_.sites()[f].codeSize;
    }
  }

  const Engine& engine_;
  const Plan& plan_;
  const std::vector<uint64_t>* enters_ = nullptr;
  const std::vector<uint64_t>* bodies_ = nullptr;
  const CodeAddresses* addresses_ = nullptr;
};

Instrumenter::Instrumenter(const Engine& engine, std::vector<uint8_t> analysisObject, std::string programName,
                           CounterMode counters)
    : engine_(engine), analysisObject_(std::move(analysisObject)), programName_(std::move(programName)),
      plan_(engine, counters),
      inserted_(std::make_unique<InsertedCode>(engine, plan_)) {}

Instrumenter::~Instrumenter() = default;

const layout::Insertions& Instrumenter::insertions() const { return *inserted_; }

uint64_t Instrumenter::placeCode(uint64_t codeEnd) {
  runtimeAddress_ = alignUp(codeEnd, 64);
  addresses_.enter = runtimeAddress_ + kAtomxSlotEnter;
  addresses_.originalAddress = runtimeAddress_ + kAtomxSlotOriginalAddress;
  addresses_.programAfter = runtimeAddress_ + kAtomxSlotProgramAfter;
  addresses_.threadCounters = runtimeAddress_ + kAtomxSlotThreadCounters;
  chooseEnters();
  // Bodies: sized with placeholder addresses (their sizes do not depend on
  // addresses); this also fills the data pool.
  addresses_.counters.assign(engine_.counterArrays().size(), 0);
  BodyWriter writer(engine_, pool_);
  uint64_t at = alignUp(runtimeAddress_ + runtime::kBlobSize, 16);
  bodyAddress_.resize(plan_.sites().size());
  bodySize_.resize(plan_.sites().size());
  for (size_t s = 0; s < plan_.sites().size(); ++s) {
    bodyAddress_[s] = 0;
    bodySize_[s] = 0;
    if (!plan_.sites()[s].needsCall()) continue;  // inline increments only
    std::vector<uint8_t> scratch;
    writer.emit(plan_.sites()[s], bodyKind_[s], at, addresses_, scratch);
    bodyAddress_[s] = at;
    bodySize_[s] = uint32_t(scratch.size());
    if (bodyKind_[s].direct) siteEnter_[s] = at;  // the site calls its body
    at = alignUp(at + scratch.size(), 16);
  }
  codeEnd_ = at;
  inserted_->setAddresses(&siteEnter_, &bodyAddress_, &addresses_);
  layOutData();
  return codeEnd_;
}

// What is saved around each site: SaveSet.h decides, from what the
// routines touch (RoutineFootprint) and the flags live at the site.
void Instrumenter::chooseEnters() {
  const RoutineFootprint footprints(analysisObject_, engine_.decoder());
  std::vector<Footprint> footprint(engine_.routines().size());
  for (size_t r = 0; r < footprint.size(); ++r) footprint[r] = footprints.of(engine_.routine(uint32_t(r)).name);
  siteEnter_.assign(plan_.sites().size(), addresses_.enter);
  bodyKind_.assign(plan_.sites().size(), BodyKind{});
  lightSites_ = noFlagsSites_ = directSites_ = 0;
  for (size_t s = 0; s < plan_.sites().size(); ++s) {
    const Site& site = plan_.sites()[s];
    if (!site.needsCall()) continue;
    const CallSaves saves = chooseCallSaves(site, footprint);
    siteEnter_[s] = runtimeAddress_ + saves.enterSlot;
    bodyKind_[s] = saves.body;
    const bool light = saves.light, noFlags = saves.noFlags;
    lightSites_ += light;
    noFlagsSites_ += noFlags;
    directSites_ += bodyKind_[s].direct;
  }
}

void Instrumenter::layOutData() {
  uint64_t off = 0;
  auto reserve = [&](uint64_t& where, uint64_t size, uint64_t align) {
    off = alignUp(off, align);
    where = off;
    off += size;
  };
  reserve(offAnalysis_, analysisObject_.size(), 4096);
  uint64_t names = 0;
  for (const Prototype& p : engine_.routines()) names += p.name.size() + 1;
  reserve(offNames_, names, 8);
  reserve(offPool_, pool_.bytes().size(), 16);
  reserve(offProgramName_, programName_.size() + 1, 8);
  reserve(offMap_, 0, 8);  // the map comes last: its length is known when built
  roSize_ = off;

  off = alignUp(sizeof(AtomxDescriptor), 16);
  reserve(offTable_, 8 * engine_.routines().size(), 8);
  reserve(offBefore_, 8 * plan_.programBefore().size(), 8);
  reserve(offAfter_, 8 * plan_.programAfter().size(), 8);
  rwSize_ = off = alignUp(off, 64);
  // Counters, zero-filled in memory only; each array starts on a cache line.
  offCounters_.clear();
  for (uint64_t n : engine_.counterArrays()) {
    offCounters_.push_back(off - rwSize_);
    off = alignUp(off + 8 * n, 64);
  }
  countersSize_ = off - rwSize_;
}

void Instrumenter::placeData(uint64_t readOnlyAddress, uint64_t writableAddress) {
  roAddress_ = readOnlyAddress;
  rwAddress_ = writableAddress;
  addresses_.routineTable = rwAddress_ + offTable_;
  addresses_.ready = rwAddress_ + offsetof(AtomxDescriptor, ready);  // the descriptor opens the writable data
  addresses_.dataPool = roAddress_ + offPool_;
  addresses_.counters.clear();
  for (uint64_t off : offCounters_) addresses_.counters.push_back(rwAddress_ + rwSize_ + off);
  addresses_.countersBase = rwAddress_ + rwSize_;
}

void Instrumenter::appendCode(std::vector<uint8_t>& text, uint64_t textAddress) const {
  text.resize(runtimeAddress_ - textAddress, 0xcc);
  text.insert(text.end(), runtime::kBlob, runtime::kBlob + runtime::kBlobSize);
  // The blob finds its descriptor through this delta (runtime/abi.h).
  put<int64_t>(text, runtimeAddress_ - textAddress + kAtomxBlobDescriptorDelta, int64_t(rwAddress_ - runtimeAddress_));
  BodyWriter writer(engine_, pool_);
  for (size_t s = 0; s < plan_.sites().size(); ++s) {
    if (!plan_.sites()[s].needsCall()) continue;
    text.resize(bodyAddress_[s] - textAddress, 0xcc);
    writer.emit(plan_.sites()[s], bodyKind_[s], bodyAddress_[s], addresses_, text);
    if (text.size() != bodyAddress_[s] - textAddress + bodySize_[s])
      throw InternalError("the body of an inserted call changed size between sizing and emission");
  }
  text.resize(codeEnd_ - textAddress, 0xcc);
}

void Instrumenter::addressMap(const layout::CodeLayout& layout, uint64_t mapBase, std::vector<uint8_t>& out) const {
  // The format: include/atomx/address_map.h.  Per moved procedure, a plain
  // pair at every block start and at every instruction right after inserted
  // code, so that every original instruction maps exactly; a flagged pair
  // at each run of inserted code (before or after an instruction, the
  // stitching jump, each edge stub: an indirect jump through a table lands
  // in one, and must report the original target); NONE where it ends.
  std::vector<AtomxAddressPair> pairs;
  auto offsetOf = [&](uint64_t address) {
    if (address < mapBase || address - mapBase >= ATOMX_MAP_INSERTED)
      throw InternalError("an address more than 2 GiB away from the address map's base");
    return uint32_t(address - mapBase);
  };
  for (const layout::MovedProc& m : layout.moved()) {
    const ir::Procedure& p = engine_.program().procs[m.proc];
    const size_t n = p.insns.size();
    auto at = [&](uint64_t procOffset) { return offsetOf(m.newStart + procOffset); };
    std::vector<bool> leader(n, false);
    for (const ir::Block& b : p.blocks) leader[b.firstInsn] = true;
    const uint64_t mainEnd = m.tailOffset - (m.needsStitch ? 5 : 0);
    bool afterInserted = true;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t before = m.inserted.empty() ? 0 : m.inserted[i];
      if (before) pairs.push_back({at(m.offset[i]), ATOMX_MAP_INSERTED | offsetOf(p.insns[i].address)});
      if (before || afterInserted || leader[i]) pairs.push_back({at(m.offset[i] + before), offsetOf(p.insns[i].address)});
      afterInserted = false;
      if (const uint32_t after = m.after.empty() ? 0 : m.after[i]) {
        const uint64_t end = i + 1 < n ? m.offset[i + 1] : mainEnd;
        pairs.push_back({at(end - after), ATOMX_MAP_INSERTED | offsetOf(i + 1 < n ? p.insns[i + 1].address : p.end)});
        afterInserted = true;
      }
    }
    if (m.needsStitch) pairs.push_back({at(mainEnd), ATOMX_MAP_INSERTED | offsetOf(p.end)});
    if (const ProcSites* ps = plan_.procSites(p.id))
      for (auto [site, offset] : ps->stubOffset)
        pairs.push_back({at(m.tailOffset + offset), ATOMX_MAP_INSERTED | offsetOf(plan_.sites()[site].edgeTarget)});
    pairs.push_back({offsetOf(m.newEnd), ATOMX_MAP_NONE});
  }
  // By address; where a procedure starts right at another's end, its pair
  // replaces the NONE.
  std::stable_sort(pairs.begin(), pairs.end(), [](const AtomxAddressPair& a, const AtomxAddressPair& b) {
    if (a.newOffset != b.newOffset) return a.newOffset < b.newOffset;
    const bool aNone = a.oldOffset == ATOMX_MAP_NONE, bNone = b.oldOffset == ATOMX_MAP_NONE;
    return aNone && !bNone;
  });
  std::vector<AtomxAddressPair> unique;
  for (const AtomxAddressPair& q : pairs) {
    if (!unique.empty() && unique.back().newOffset == q.newOffset) unique.back() = q;
    else unique.push_back(q);
  }
  mapCount_ = unique.size();
  const size_t where = out.size();
  out.resize(where + unique.size() * sizeof(AtomxAddressPair));
  if (!unique.empty()) std::memcpy(out.data() + where, unique.data(), unique.size() * sizeof(AtomxAddressPair));
}

void Instrumenter::cursorRegions(const layout::CodeLayout& layout, uint64_t mapBase, std::vector<uint8_t>& out) const {
  std::vector<AtomxCursorRegion> regions;
  std::map<uint32_t, const layout::MovedProc*> moved;
  for (const layout::MovedProc& m : layout.moved()) moved[m.proc] = &m;
  auto offsetOf = [&](uint64_t address) {
    if (address < mapBase || address - mapBase >= ATOMX_MAP_INSERTED)
      throw InternalError("an address more than 2 GiB away from the address map's base");
    return uint32_t(address - mapBase);
  };
  for (const CursorLoop& l : engine_.cursorLoops()) {
    const ir::Procedure& p = *l.proc;
    const auto it = moved.find(p.id);
    if (it == moved.end()) throw InternalError("a promoted loop in a procedure left in place");
    const layout::MovedProc& m = *it->second;
    const uint64_t mainEnd = m.tailOffset - (m.needsStitch ? 5 : 0);
    std::vector<bool> in(p.blocks.size(), false);
    for (uint32_t b : l.blocks) in[b] = true;
    // The bytes of a site's cursor moves, which end its code (emitStores).
    auto movesOf = [](const Site& s) {
      uint64_t n = 0;
      for (const StoreRequest* st : s.stores)
        if (st->move != StoreRequest::Move::None) n += 9 * (st->spilled ? 2 : 1);
      return n;
    };
    const ProcSites* ps = plan_.procSites(p.id);
    // Each block: its code from its first instruction's inserted code to
    // its last instruction's, and the stores after it up to an exit's Save.
    for (uint32_t b : l.blocks) {
      const ir::Block& blk = p.blocks[b];
      const uint32_t last = blk.firstInsn + blk.insnCount - 1;
      uint64_t end = last + 1 < p.insns.size() ? m.offset[last + 1] : mainEnd;
      if (ps)
        if (const auto after = ps->after.find(last); after != ps->after.end()) end -= movesOf(plan_.sites()[after->second]);
      regions.push_back({offsetOf(m.newStart + m.offset[blk.firstInsn]), offsetOf(m.newStart + end), l.reg});
    }
    // The edge stubs of its blocks' branches: the stores, and the jump of
    // one that stays in the loop (an exit's Save and jump are not).
    if (ps)
      for (auto [site, offset] : ps->stubOffset) {
        const Site& s = plan_.sites()[site];
        if (std::none_of(s.stores.begin(), s.stores.end(), [&](const StoreRequest* st) {
              const int64_t from = p.blockIndexAt(p.insns[st->insn].address);
              return st->cursor == int8_t(l.reg) && from >= 0 && in[size_t(from)];
            }))
          continue;
        const uint64_t start = m.newStart + m.tailOffset + offset, moves = movesOf(s);
        const uint64_t end = moves ? start + s.codeSize - moves : start + s.codeSize + kStubJumpSize;
        if (end > start) regions.push_back({offsetOf(start), offsetOf(end), l.reg});
      }
  }
  std::sort(regions.begin(), regions.end(),
            [](const AtomxCursorRegion& a, const AtomxCursorRegion& b) { return a.newStart < b.newStart; });
  for (size_t k = 1; k < regions.size(); ++k)
    if (regions[k].newStart < regions[k - 1].newEnd) throw InternalError("promoted loops' code overlaps");
  out.resize(alignUp(out.size(), 8));
  offRegions_ = out.size();
  regionCount_ = regions.size();
  const size_t where = out.size();
  out.resize(where + regions.size() * sizeof(AtomxCursorRegion));
  if (!regions.empty()) std::memcpy(out.data() + where, regions.data(), regions.size() * sizeof(AtomxCursorRegion));
}

std::vector<uint8_t> Instrumenter::readOnlyBytes(const layout::CodeLayout& layout, uint64_t mapBase) const {
  std::vector<uint8_t> out(roSize_, 0);
  std::memcpy(out.data() + offAnalysis_, analysisObject_.data(), analysisObject_.size());
  uint64_t at = offNames_;
  for (const Prototype& p : engine_.routines()) {
    std::memcpy(out.data() + at, p.name.c_str(), p.name.size() + 1);
    at += p.name.size() + 1;
  }
  if (!pool_.bytes().empty()) std::memcpy(out.data() + offPool_, pool_.bytes().data(), pool_.bytes().size());
  std::memcpy(out.data() + offProgramName_, programName_.c_str(), programName_.size() + 1);
  out.resize(offMap_);
  addressMap(layout, mapBase, out);
  cursorRegions(layout, mapBase, out);
  return out;
}

std::vector<uint8_t> Instrumenter::writableBytes(uint64_t originalEntry, uint64_t mapBase, uint64_t newCodeStart,
                                                 uint64_t newCodeEnd) const {
  std::vector<uint8_t> out(rwSize_, 0);
  AtomxDescriptor d;
  std::memset(&d, 0, sizeof d);
  std::memcpy(d.magic, ATOMX_DESCRIPTOR_MAGIC, 8);
  d.self = rwAddress_;
  d.originalEntry = originalEntry;
  d.analysisImage = roAddress_ + offAnalysis_;
  d.analysisSize = analysisObject_.size();
  d.routineNames = roAddress_ + offNames_;
  d.routineCount = engine_.routines().size();
  d.routineTable = rwAddress_ + offTable_;
  d.beforeBodies = rwAddress_ + offBefore_;
  d.beforeCount = plan_.programBefore().size();
  d.afterBodies = rwAddress_ + offAfter_;
  d.afterCount = plan_.programAfter().size();
  d.addressMap = roAddress_ + offMap_;
  d.addressMapCount = mapCount_;
  d.cursorRegions = roAddress_ + offRegions_;
  d.cursorRegionCount = regionCount_;
  d.mapBase = mapBase;
  d.newCodeStart = newCodeStart;
  d.newCodeEnd = newCodeEnd;
  d.programName = roAddress_ + offProgramName_;
  d.counters = rwAddress_ + rwSize_;
  d.countersSize = countersSize_;
  d.perThreadCounters = plan_.counterMode() == CounterMode::PerThread && !engine_.increments().empty();
  d.deferredEnd = deferEnd_;
  std::memcpy(out.data(), &d, sizeof d);
  for (size_t i = 0; i < plan_.programBefore().size(); ++i) put<uint64_t>(out, offBefore_ + 8 * i, bodyAddress_[plan_.programBefore()[i]]);
  for (size_t i = 0; i < plan_.programAfter().size(); ++i) put<uint64_t>(out, offAfter_ + 8 * i, bodyAddress_[plan_.programAfter()[i]]);
  return out;
}

bool defersEnd(const std::string& instrumentedFile) {
  const elf::ElfImage image = elf::ElfImage::load(instrumentedFile);
  const elf::Section* data = image.sectionByName(".atomx.data");
  if (!data) return false;
  const std::span<const uint8_t> bytes = image.sectionBytes(*data);
  AtomxDescriptor d;
  if (bytes.size() < sizeof d) return false;
  std::memcpy(&d, bytes.data(), sizeof d);
  return std::memcmp(d.magic, ATOMX_DESCRIPTOR_MAGIC, 8) == 0 && d.deferredEnd;
}

}  // namespace atomx::instrument
