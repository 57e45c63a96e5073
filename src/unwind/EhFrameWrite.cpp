// Regeneration of .eh_frame, .eh_frame_hdr and the LSDAs after code moved.
//
// One Builder does both planUnwind and buildUnwind: planning runs the same
// code in "measuring" mode, where every field whose bytes depend on where the
// blobs are placed is written as zeros of its final size.  Sizes never depend
// on placement: placement-dependent fields are either fixed-size or, for
// LEB128 pointer encodings, padded to kPointerLeb bytes.
#include <algorithm>
#include <map>

#include "support/Error.h"
#include "support/Hex.h"
#include "support/Parallel.h"
#include "unwind/Dwarf.h"
#include "unwind/EhFrame.h"

namespace atomx::unwind {

using namespace detail;

namespace {

constexpr uint32_t R_X86_64_PC32 = 2, R_X86_64_PC64 = 24;

std::string fdeName(const Fde& f) {
  return "FDE at .eh_frame offset " + hex(f.sectionOffset) + " for [" + hex(f.pcBegin) + ", " +
         hex(f.pcEnd) + ")";
}

struct Placement {
  bool measuring = true;
  uint64_t ehFrame = 0, hdr = 0, lsda = 0;
};

class Builder {
 public:
  Builder(const EhFrameInfo& info, ByteView eh, ByteView get, const std::vector<RelocAt>& relocs,
          const std::vector<MovedRange>& moved, const Translate& translate, Placement at)
      : info_(info), eh_(eh), get_(get), translate_(translate), at_(at) {
    for (const RelocAt& r : relocs)
      if (r.type == R_X86_64_PC32 || r.type == R_X86_64_PC64) relocs_.push_back(r);
    std::sort(relocs_.begin(), relocs_.end(), [](const RelocAt& a, const RelocAt& b) { return a.addr < b.addr; });
    for (const MovedRange& r : moved) {
      if (r.oldEnd < r.oldStart || r.newEnd < r.newStart)
        throw InternalError("moved range [" + hex(r.oldStart) + ", " + hex(r.oldEnd) + ") -> [" +
                            hex(r.newStart) + ", " + hex(r.newEnd) + ") is inverted");
      if (r.oldEnd > r.oldStart) moved_.push_back(r);
    }
    std::sort(moved_.begin(), moved_.end(),
              [](const MovedRange& a, const MovedRange& b) { return a.oldStart < b.oldStart; });
    for (size_t i = 1; i < moved_.size(); ++i)
      if (moved_[i].oldStart < moved_[i - 1].oldEnd)
        throw InternalError("moved ranges at " + hex(moved_[i - 1].oldStart) + " and " +
                            hex(moved_[i].oldStart) + " overlap");
    if (!translate_) throw InternalError("unwind: no translate function");
  }

  // Where the blobs go (measuring: nowhere yet, only their sizes).
  void place(Placement at) { at_ = at; }

  UnwindSections run() {
    UnwindSections s;
    if (!planned_) planFdes();  // placement-independent: once
    planned_ = true;
    for (Plan& p : plans_)
      if (p.newLsda) buildLsda(p, s.lsda);
    buildEhFrame(s.ehFrame);
    buildHdr(s.ehFrameHdr);
    return s;
  }

 private:
  struct Plan {
    const Fde* fde = nullptr;
    const MovedRange* range = nullptr;  // null: unmoved
    uint64_t newBegin = 0, newEnd = 0;
    bool rewriteProgram = false;
    std::vector<uint8_t> program;
    bool newLsda = false;
    std::vector<uint8_t> lsdaTable;  // its new call-site table (planLsda)
    uint64_t lsdaBase = 0;           // and what landing pads are relative to
    uint8_t lsdaLpEnc = 0;           // LPStart's encoding
    uint64_t newLsdaAddr = 0;
    uint64_t newOffset = 0;  // in the new .eh_frame
  };

  // --- address mapping ---

  // The moved range containing addr (oldStart <= addr < oldEnd), or null.
  const MovedRange* rangeContaining(uint64_t addr) const {
    auto it = std::upper_bound(moved_.begin(), moved_.end(), addr,
                               [](uint64_t v, const MovedRange& r) { return v < r.oldStart; });
    if (it == moved_.begin()) return nullptr;
    --it;
    return addr < it->oldEnd ? &*it : nullptr;
  }

  // New address of an old address inside (or at the end of) a moved range.
  uint64_t mapIn(const MovedRange& r, uint64_t addr, const std::string& who) const {
    if (addr == r.oldStart) return r.newStart;
    if (addr == r.oldEnd) return r.newEnd;
    if (addr < r.oldStart || addr > r.oldEnd)
      throw UnsupportedError(who + ": address " + hex(addr) + " outside moved procedure [" +
                             hex(r.oldStart) + ", " + hex(r.oldEnd) + ")");
    std::optional<uint64_t> t = translate_(addr);
    if (!t)
      throw UnsupportedError(who + ": old address " + hex(addr) + " in moved procedure [" +
                             hex(r.oldStart) + ", " + hex(r.oldEnd) + ") has no new address");
    if (*t < r.newStart || *t > r.newEnd)
      throw InternalError(who + ": translate(" + hex(addr) + ") = " + hex(*t) + " is outside [" +
                          hex(r.newStart) + ", " + hex(r.newEnd) + "]");
    return *t;
  }

  // New address of any old code address (unchanged outside moved code).
  uint64_t mapAbs(uint64_t addr, const std::string& who) const {
    const MovedRange* r = rangeContaining(addr);
    return r ? mapIn(*r, addr, who) : addr;
  }

  uint64_t mapLoc(const Plan& p, uint64_t addr, const std::string& who) const {
    return p.range ? mapIn(*p.range, addr, who) : addr;
  }

  // --- encoding ---

  // Appends a pointer.  dependsOnPlacement: the value itself is an address
  // in the new blobs (unknown while measuring).
  void putPointer(std::vector<uint8_t>& out, uint64_t value, uint8_t enc, uint64_t fieldAddr,
                  const std::string& who, bool dependsOnPlacement = false) const {
    bool pcrel = (enc & 0x70) == pe::pcrel;
    if (at_.measuring && (pcrel || dependsOnPlacement)) {
      out.insert(out.end(), pointerSize(enc), 0);
      return;
    }
    uint64_t raw = value;
    if (value != 0 && pcrel) {
      raw = value - fieldAddr;
      if (raw == 0)
        throw UnsupportedError(who + ": pc-relative pointer to its own address " + hex(fieldAddr));
    }
    if (!rawFits(raw, enc))
      throw UnsupportedError(who + ": pointer " + hex(value) + " at " + hex(fieldAddr) +
                             " does not fit encoding " + hex(enc));
    putRaw(out, raw, enc, kPointerLeb);
  }

  static void putAdvance(std::vector<uint8_t>& out, uint64_t bytes, uint64_t codeAlign,
                         const std::string& who, uint64_t oldLoc) {
    if (bytes % codeAlign)
      throw UnsupportedError(who + ": new CFA advance of " + std::to_string(bytes) + " bytes (to old " +
                             hex(oldLoc) + ") isn't a multiple of the code alignment factor " +
                             std::to_string(codeAlign));
    uint64_t f = bytes / codeAlign;
    if (f == 0) return;
    if (f < 0x40) {
      out.push_back(uint8_t(0x40 | f));
    } else if (f <= 0xff) {
      out.push_back(0x02);
      putFixed(out, f, 1);
    } else if (f <= 0xffff) {
      out.push_back(0x03);
      putFixed(out, f, 2);
    } else if (f <= 0xffffffffull) {
      out.push_back(0x04);
      putFixed(out, f, 4);
    } else {
      throw UnsupportedError(who + ": CFA advance of " + hex(bytes) + " bytes is too large");
    }
  }

  static void padTo4(std::vector<uint8_t>& out, size_t start) {
    while ((out.size() - start) % 4) out.push_back(0);  // DW_CFA_nop (entries are 4-aligned, as ld emits them)
  }

  // --- planning ---

  // Each FDE on its own (every core): its range and, if it moves, its new
  // CFA program.
  void planFdes() {
    plans_.resize(info_.fdes.size());
    parallelFor(info_.fdes.size(), [&](size_t i) {
      const Fde& f = info_.fdes[i];
      Plan& p = plans_[i];
      if (f.cie >= info_.cies.size()) throw InternalError(fdeName(f) + ": bad CIE index");
      if (f.sectionOffset + f.size > eh_.size)
        throw InternalError(fdeName(f) + ": not inside the given .eh_frame");
      p.fde = &f;
      p.newBegin = f.pcBegin;
      p.newEnd = f.pcEnd;
      auto it = std::upper_bound(moved_.begin(), moved_.end(), f.pcBegin,
                                 [](uint64_t v, const MovedRange& r) { return v < r.oldEnd; });
      if (it != moved_.end() &&
          (it->oldStart < f.pcEnd || (f.pcBegin == f.pcEnd && it->oldStart <= f.pcBegin))) {
        if (f.pcBegin < it->oldStart || f.pcEnd > it->oldEnd)
          throw UnsupportedError(fdeName(f) + " overlaps moved procedure [" + hex(it->oldStart) + ", " +
                                 hex(it->oldEnd) + ") only partly");
        p.range = &*it;
      }
      if (p.range) {
        if (!f.obstacle.empty()) throw UnsupportedError(f.obstacle);
        if (!info_.cies[f.cie].obstacle.empty()) throw UnsupportedError(info_.cies[f.cie].obstacle);
        std::string who = fdeName(f);
        p.newBegin = mapLoc(p, f.pcBegin, who);
        p.newEnd = mapLoc(p, f.pcEnd, who);
        p.rewriteProgram = true;
        p.newLsda = f.lsda != 0;
      } else {
        // A pc-relative DW_CFA_set_loc operand breaks when the FDE moves:
        // rewrite such a program with the identity mapping (set_loc becomes
        // advances).  Absolute ones stay valid verbatim.
        p.rewriteProgram = f.hasSetLoc && (info_.cies[f.cie].fdeEncoding & 0x70) != pe::absptr;
        if (f.hasLsdaInfo) {
          const Lsda& l = f.lsdaInfo;
          if (l.lpStartEncoding != pe::omit && rangeContaining(l.lpStart)) p.newLsda = true;
          for (const CallSite& cs : f.callSites)
            if (cs.landingPad && rangeContaining(cs.landingPad)) p.newLsda = true;
        }
      }
      if (p.rewriteProgram) p.program = rewriteProgram(p);
      if (p.newLsda) planLsda(p);
    });
  }

  std::vector<uint8_t> rewriteProgram(const Plan& p) const {
    const Fde& f = *p.fde;
    const Cie& c = info_.cies[f.cie];
    std::string who = fdeName(f);
    Reader r(eh_.data, eh_.addr, f.instructionsOffset, f.instructionsOffset + f.instructionsSize, who);
    std::vector<uint8_t> out;
    uint64_t loc = f.pcBegin, lastOld = f.pcBegin, lastNew = p.newBegin;
    std::string unknown = walkCfa(r, c.fdeEncoding, [&](const CfaInsn& in) {
      switch (in.kind) {
        case CfaInsn::Advance: loc += in.delta * c.codeAlign; return;
        case CfaInsn::SetLoc: loc = in.address; return;
        case CfaInsn::Nop: return;  // the entry is re-padded at its end
        case CfaInsn::Other: break;
      }
      if (loc != lastOld) {
        if (p.range && (loc < f.pcBegin || loc > f.pcEnd))
          throw UnsupportedError(who + ": CFA location " + hex(loc) + " outside the FDE");
        uint64_t n = mapLoc(p, loc, who);
        if (n < lastNew || loc < lastOld)
          throw UnsupportedError(who + ": CFA location goes backwards at old " + hex(loc));
        putAdvance(out, n - lastNew, c.codeAlign, who, loc);
        lastOld = loc;
        lastNew = n;
      }
      out.insert(out.end(), eh_.data + in.offset, eh_.data + in.offset + in.size);
    });
    if (!unknown.empty()) throw UnsupportedError(who + ": " + unknown);
    return out;
  }

  // --- LSDAs ---

  static bool lpOffsetFits(uint64_t d, uint8_t enc) {
    if (d == 0) return false;  // 0 means "no landing pad"
    if ((enc & 0x0f) == pe::uleb128) return int64_t(d) > 0;
    return rawFits(d, enc);
  }

  // The LSDA's new call-site table and landing-pad base: they depend on
  // where code moved, not on where the LSDA goes (planFdes, once).
  void planLsda(Plan& p) const {
    const Fde& f = *p.fde;
    const Lsda& l = f.lsdaInfo;
    if (!f.hasLsdaInfo) throw InternalError(fdeName(f) + ": LSDA not parsed");
    std::string who = "LSDA of " + fdeName(f);
    uint8_t csEnc = l.callSiteEncoding;

    // New call sites, absolute.
    struct NewSite {
      uint64_t start, end, lp, action;
    };
    std::vector<NewSite> sites;
    uint64_t minLp = UINT64_MAX, maxLp = 0;
    for (const CallSite& cs : f.callSites) {
      NewSite n;
      n.start = mapLoc(p, cs.start, who);
      n.end = mapLoc(p, cs.end, who);
      if (n.start < p.newBegin || n.end < n.start)
        throw UnsupportedError(who + ": call site [" + hex(cs.start) + ", " + hex(cs.end) + ") maps to [" +
                            hex(n.start) + ", " + hex(n.end) + ")");
      n.lp = cs.landingPad ? mapAbs(cs.landingPad, who) : 0;
      n.action = cs.action;
      if (n.lp) {
        minLp = std::min(minLp, n.lp);
        maxLp = std::max(maxLp, n.lp);
      }
      sites.push_back(n);
    }

    // LPStart: keep the original scheme when every landing pad can be
    // encoded relative to it, else switch to an explicit LPStart just below
    // the lowest landing pad.
    uint8_t lpEnc = l.lpStartEncoding;
    uint64_t base = lpEnc == pe::omit ? p.newBegin : mapAbs(l.lpStart, who);
    auto allFit = [&](uint64_t b) {
      for (const NewSite& n : sites)
        if (n.lp && !lpOffsetFits(n.lp - b, csEnc)) return false;
      return true;
    };
    if (!allFit(base)) {
      base = minLp - 1;
      if (lpEnc == pe::omit) lpEnc = pe::pcrel | pe::sdata4;
      if (!allFit(base))
        throw UnsupportedError(who + ": landing pads [" + hex(minLp) + ", " + hex(maxLp) +
                               "] can't be encoded with call-site encoding " + hex(csEnc));
    }

    std::vector<uint8_t> table;
    for (const NewSite& n : sites) {
      uint64_t vals[3] = {n.start - p.newBegin, n.end - n.start, n.lp ? n.lp - base : 0};
      for (uint64_t v : vals) {
        if (!rawFits(v, csEnc))
          throw UnsupportedError(who + ": call-site value " + hex(v) + " does not fit encoding " + hex(csEnc));
        putRaw(table, v, csEnc);
      }
      putUleb(table, n.action);
    }
    p.lsdaTable = std::move(table);
    p.lsdaBase = base;
    p.lsdaLpEnc = lpEnc;
  }

  void buildLsda(Plan& p, std::vector<uint8_t>& blob) {
    const Fde& f = *p.fde;
    const Lsda& l = f.lsdaInfo;
    std::string who = "LSDA of " + fdeName(f);
    const uint8_t csEnc = l.callSiteEncoding, lpEnc = p.lsdaLpEnc;
    const uint64_t base = p.lsdaBase;
    const std::vector<uint8_t>& table = p.lsdaTable;

    uint64_t csEnd = l.callSiteTableOffset + l.callSiteTableSize;
    bool hasTT = l.ttypeEncoding != pe::omit;
    uint64_t ttOff = 0, ttBaseIn = 0;
    size_t lpField = lpEnc == pe::omit ? 0 : pointerSize(lpEnc);
    if (hasTT) {
      ttOff = 1 + ulebSize(table.size()) + table.size() + (l.ttBase - csEnd);
      ttBaseIn = 1 + lpField + 1 + ulebSize(ttOff) + ttOff;
      // Keep the type table's alignment: TTBase keeps its address mod 8.
      uint64_t want = (get_.addr + l.ttBase) % 8;
      while ((blob.size() + ttBaseIn) % 8 != want) blob.push_back(0);
    }
    size_t start = blob.size();
    p.newLsdaAddr = at_.lsda + start;
    blob.push_back(lpEnc);
    if (lpEnc != pe::omit) putPointer(blob, base, lpEnc, at_.lsda + blob.size(), who);
    blob.push_back(l.ttypeEncoding);
    if (hasTT) putUleb(blob, ttOff);
    blob.push_back(csEnc);
    putUleb(blob, table.size());
    blob.insert(blob.end(), table.begin(), table.end());
    size_t blockStart = blob.size();
    blob.insert(blob.end(), get_.data + csEnd, get_.data + l.tailEnd);
    if (hasTT && blockStart - start + (l.ttBase - csEnd) != ttBaseIn)
      throw InternalError(who + ": TType base miscomputed");
    if (at_.measuring) return;

    // pc-relative words in the copied block: decoded type entries, and any
    // PC32/PC64 relocation the linker left there.
    std::map<uint64_t, std::pair<uint8_t, uint64_t>> words;  // offset -> (encoding, target)
    if ((l.ttypeEncoding & 0x70) == pe::pcrel)
      for (const TypeEntry& e : l.typeEntries)
        if (e.target) words[e.sectionOffset] = {l.ttypeEncoding, e.target};
    auto first = std::lower_bound(relocs_.begin(), relocs_.end(), get_.addr + csEnd,
                                  [](const RelocAt& r, uint64_t v) { return r.addr < v; });
    for (auto it = first; it != relocs_.end() && it->addr < get_.addr + l.tailEnd; ++it) {
      const RelocAt& rel = *it;
      unsigned n = rel.type == R_X86_64_PC32 ? 4 : 8;
      if (rel.addr < get_.addr + csEnd || rel.addr - get_.addr + n > l.tailEnd) continue;
      uint64_t off = rel.addr - get_.addr;
      if (words.count(off)) continue;
      uint8_t enc = n == 4 ? pe::pcrel | pe::sdata4 : pe::pcrel | pe::sdata8;
      Reader w(get_.data, get_.addr, off, get_.size, who);
      uint64_t raw = w.raw(enc, "relocated word");
      words[off] = {enc, raw + get_.addr + off};
    }
    for (const auto& [off, w] : words) {
      uint64_t at = blockStart + (off - csEnd);
      uint64_t field = at_.lsda + at;
      uint64_t raw = w.second - field;
      if (!rawFits(raw, w.first) || raw == 0)
        throw UnsupportedError(who + ": type table entry " + hex(w.second) + " can't be encoded at " + hex(field));
      patchFixed(blob, at, raw, unsigned(formatSize(w.first)));
    }
  }

  // --- .eh_frame ---

  // End offset of the augmentation data fields this module knows, walking
  // the CIE's augmentation letters over an entry's original data.
  uint64_t knownAugEnd(const Cie& c, uint64_t off, uint64_t size, bool isCie) const {
    Reader a(eh_.data, eh_.addr, off, off + size, "augmentation data at .eh_frame offset " + hex(off));
    if (!isCie) {
      if (c.lsdaEncoding != pe::omit) a.pointer(c.lsdaEncoding, "LSDA pointer");
      return a.pos();
    }
    for (size_t i = 1; i < c.augmentation.size(); ++i) {
      char ch = c.augmentation[i];
      if (ch == 'L' || ch == 'R') a.u8("encoding");
      if (ch == 'P') a.pointer(a.u8("personality encoding"), "personality pointer");
    }
    return a.pos();
  }

  void emitCie(const Cie& c, std::vector<uint8_t>& out) {
    size_t start = out.size();
    putFixed(out, 0, 4);
    putFixed(out, 0, 4);
    out.insert(out.end(), eh_.data + c.sectionOffset + 8, eh_.data + c.headerEnd);
    if (!c.augmentation.empty()) {
      uint64_t known = knownAugEnd(c, c.augDataOffset, c.augDataSize, true);
      uint64_t extra = c.augDataOffset + c.augDataSize - known;
      uint64_t size = extra;
      for (size_t i = 1; i < c.augmentation.size(); ++i) {
        char ch = c.augmentation[i];
        if (ch == 'L' || ch == 'R') size += 1;
        if (ch == 'P') size += 1 + pointerSize(c.personalityEncoding);
      }
      putUleb(out, size);
      std::string who = "CIE at .eh_frame offset " + hex(c.sectionOffset);
      for (size_t i = 1; i < c.augmentation.size(); ++i) {
        switch (c.augmentation[i]) {
          case 'L': out.push_back(c.lsdaEncoding); break;
          case 'R': out.push_back(c.fdeEncoding); break;
          case 'P':
            out.push_back(c.personalityEncoding);
            putPointer(out, c.personality, c.personalityEncoding, at_.ehFrame + out.size(), who);
            break;
          default: break;
        }
      }
      out.insert(out.end(), eh_.data + known, eh_.data + known + extra);
    }
    out.insert(out.end(), eh_.data + c.instructionsOffset, eh_.data + c.instructionsOffset + c.instructionsSize);
    padTo4(out, start);
    patchFixed(out, start, out.size() - start - 4, 4);
  }

  void emitFde(Plan& p, uint64_t cieOffset, std::vector<uint8_t>& out) {
    const Fde& f = *p.fde;
    const Cie& c = info_.cies[f.cie];
    std::string who = fdeName(f);
    size_t start = out.size();
    p.newOffset = start;
    putFixed(out, 0, 4);
    putFixed(out, start + 4 - cieOffset, 4);
    putPointer(out, p.newBegin, c.fdeEncoding, at_.ehFrame + out.size(), who);
    uint64_t range = p.newEnd - p.newBegin;
    if (!rawFits(range, c.fdeEncoding) || int64_t(range) < 0)
      throw UnsupportedError(who + ": new pc range " + hex(range) + " does not fit encoding " + hex(c.fdeEncoding));
    putRaw(out, range, c.fdeEncoding);
    if (!c.augmentation.empty()) {
      uint64_t known = knownAugEnd(c, f.augDataOffset, f.augDataSize, false);
      uint64_t extra = f.augDataOffset + f.augDataSize - known;
      uint64_t size = extra + (c.lsdaEncoding != pe::omit ? pointerSize(c.lsdaEncoding) : 0);
      putUleb(out, size);
      if (c.lsdaEncoding != pe::omit)
        putPointer(out, p.newLsda ? p.newLsdaAddr : f.lsda, c.lsdaEncoding, at_.ehFrame + out.size(),
                   who, p.newLsda);
      out.insert(out.end(), eh_.data + known, eh_.data + known + extra);
    }
    if (p.rewriteProgram)
      out.insert(out.end(), p.program.begin(), p.program.end());
    else
      out.insert(out.end(), eh_.data + f.instructionsOffset, eh_.data + f.instructionsOffset + f.instructionsSize);
    padTo4(out, start);
    patchFixed(out, start, out.size() - start - 4, 4);
  }

  void buildEhFrame(std::vector<uint8_t>& out) {
    // Original order: CIEs and FDEs interleaved by section offset (a CIE
    // always precedes the FDEs that use it).
    struct Item {
      uint64_t offset;
      bool isCie;
      size_t index;
    };
    std::vector<Item> items;
    for (size_t i = 0; i < info_.cies.size(); ++i) {
      if (info_.cies[i].sectionOffset + info_.cies[i].size > eh_.size)
        throw InternalError("CIE at .eh_frame offset " + hex(info_.cies[i].sectionOffset) + " is not inside the given .eh_frame");
      items.push_back({info_.cies[i].sectionOffset, true, i});
    }
    for (size_t i = 0; i < plans_.size(); ++i) items.push_back({plans_[i].fde->sectionOffset, false, i});
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.offset < b.offset; });
    std::vector<uint64_t> cieNew(info_.cies.size(), UINT64_MAX);
    for (const Item& it : items) {
      if (it.isCie) {
        cieNew[it.index] = out.size();
        emitCie(info_.cies[it.index], out);
      } else {
        Plan& p = plans_[it.index];
        uint64_t cieOff = cieNew[p.fde->cie];
        if (cieOff == UINT64_MAX) throw InternalError(fdeName(*p.fde) + ": CIE follows it");
        emitFde(p, cieOff, out);
      }
      if (out.size() > 0xffffffffull) throw UnsupportedError("new .eh_frame larger than 4 GiB");
    }
    putFixed(out, 0, 4);  // terminator
  }

  void buildHdr(std::vector<uint8_t>& out) {
    std::vector<std::pair<uint64_t, uint64_t>> table;  // new pc_begin, new FDE offset
    for (const Plan& p : plans_) table.push_back({p.newBegin, p.newOffset});
    std::stable_sort(table.begin(), table.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    out.push_back(1);
    out.push_back(pe::pcrel | pe::sdata4);
    out.push_back(pe::udata4);
    out.push_back(pe::datarel | pe::sdata4);
    auto put = [&](uint64_t raw, const std::string& what) {
      if (at_.measuring) raw = 0;
      if (!rawFits(raw, pe::sdata4))
        throw UnsupportedError(".eh_frame_hdr: " + what + " is more than 2 GiB away from the table");
      putFixed(out, raw, 4);
    };
    put(at_.ehFrame - (at_.hdr + 4), "eh_frame_ptr");
    putFixed(out, table.size(), 4);
    for (const auto& [pc, off] : table) {
      put(pc - at_.hdr, "initial location " + hex(pc));
      put(at_.ehFrame + off - at_.hdr, "FDE address");
    }
  }

  const EhFrameInfo& info_;
  ByteView eh_, get_;
  std::vector<RelocAt> relocs_;  // PC32/PC64 only, sorted by address
  std::vector<MovedRange> moved_;
  const Translate& translate_;
  Placement at_;
  std::vector<Plan> plans_;
  bool planned_ = false;
};

}  // namespace

struct UnwindWriter::Impl {
  Builder builder;
};

UnwindWriter::UnwindWriter(const EhFrameInfo& info, ByteView ehFrame, ByteView gccExceptTable,
                           const std::vector<RelocAt>& gccExceptTableRelocs, const std::vector<MovedRange>& moved,
                           const Translate& translate)
    : impl_(new Impl{Builder(info, ehFrame, gccExceptTable, gccExceptTableRelocs, moved, translate, Placement{})}) {}

UnwindWriter::~UnwindWriter() = default;

UnwindLayout UnwindWriter::sizes() {
  impl_->builder.place(Placement{});
  const UnwindSections s = impl_->builder.run();
  return {s.ehFrame.size(), s.ehFrameHdr.size(), s.lsda.size()};
}

UnwindSections UnwindWriter::build(uint64_t ehFrameAddr, uint64_t ehFrameHdrAddr, uint64_t lsdaAddr) {
  if (ehFrameAddr % kEhFrameAlign || ehFrameHdrAddr % kEhFrameHdrAlign || lsdaAddr % kLsdaAlign)
    throw InternalError("buildUnwind: misaligned addresses .eh_frame " + hex(ehFrameAddr) + ", .eh_frame_hdr " +
                        hex(ehFrameHdrAddr) + ", LSDAs " + hex(lsdaAddr));
  impl_->builder.place(Placement{false, ehFrameAddr, ehFrameHdrAddr, lsdaAddr});
  return impl_->builder.run();
}

UnwindLayout planUnwind(const EhFrameInfo& info, ByteView ehFrame, ByteView gccExceptTable,
                        const std::vector<MovedRange>& moved, const Translate& translate) {
  const std::vector<RelocAt> none;
  return UnwindWriter(info, ehFrame, gccExceptTable, none, moved, translate).sizes();
}

UnwindSections buildUnwind(const EhFrameInfo& info, ByteView ehFrame, ByteView gccExceptTable,
                           const std::vector<RelocAt>& gccExceptTableRelocs,
                           const std::vector<MovedRange>& moved, const Translate& translate,
                           uint64_t ehFrameAddr, uint64_t ehFrameHdrAddr, uint64_t lsdaAddr) {
  return UnwindWriter(info, ehFrame, gccExceptTable, gccExceptTableRelocs, moved, translate)
      .build(ehFrameAddr, ehFrameHdrAddr, lsdaAddr);
}

}  // namespace atomx::unwind
