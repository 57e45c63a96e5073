// Parsing of .eh_frame, the LSDAs in .gcc_except_table and .eh_frame_hdr.
#include "unwind/EhFrame.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "support/Error.h"
#include "support/Hex.h"
#include "unwind/Dwarf.h"

namespace atomx::unwind {

using detail::Reader;

namespace {

std::string cieContext(uint64_t off) { return ".eh_frame: CIE at offset " + hex(off); }
std::string fdeContext(uint64_t off) { return ".eh_frame: FDE at offset " + hex(off); }

// Checks an encoding read from a CIE: InputError if its format is invalid,
// UnsupportedError if its application isn't absolute or pc-relative.
void checkCieEncoding(uint8_t enc, const char* what, uint64_t cieOff, bool allowIndirect) {
  if (enc == pe::omit) return;
  if (!detail::formatValid(enc))
    throw InputError(cieContext(cieOff) + ": bad " + what + " encoding " + hex(enc));
  if (!detail::applicationSupported(enc) || (!allowIndirect && (enc & pe::indirect)))
    throw UnsupportedError(cieContext(cieOff) + ": unsupported " + what + " encoding " + hex(enc));
}

Cie parseCie(ByteView eh, uint64_t off, uint64_t end) {
  Cie c;
  c.sectionOffset = off;
  c.size = end - off;
  Reader r(eh.data, eh.addr, off + 8, end, cieContext(off));
  c.version = r.u8("version");
  if (c.version != 1 && c.version != 3 && c.version != 4)
    r.fail("bad CIE version " + std::to_string(c.version));
  for (;;) {
    char ch = char(r.u8("augmentation string"));
    if (ch == 0) break;
    c.augmentation.push_back(ch);
  }
  if (c.augmentation.find("eh") != std::string::npos)
    throw UnsupportedError(r.context() + ": unsupported augmentation \"" + c.augmentation + "\"");
  if (!c.augmentation.empty() && c.augmentation[0] != 'z')
    throw UnsupportedError(r.context() + ": unsupported augmentation \"" + c.augmentation + "\"");
  if (c.version == 4) {
    uint8_t addrSize = r.u8("address size");
    uint8_t segSize = r.u8("segment selector size");
    if (addrSize != 8 || segSize != 0)
      throw UnsupportedError(r.context() + ": unsupported address/segment size " +
                             std::to_string(addrSize) + "/" + std::to_string(segSize));
  }
  c.codeAlign = r.uleb("code alignment factor");
  if (c.codeAlign == 0) r.fail("code alignment factor 0");
  c.dataAlign = r.sleb("data alignment factor");
  c.returnRegister = c.version == 1 ? r.u8("return address register") : r.uleb("return address register");
  c.headerEnd = r.pos();
  if (!c.augmentation.empty()) {
    uint64_t len = r.uleb("augmentation data length");
    c.augDataOffset = r.pos();
    r.need(len, "augmentation data");
    c.augDataSize = len;
    Reader a(eh.data, eh.addr, c.augDataOffset, c.augDataOffset + len, r.context());
    for (size_t i = 1; i < c.augmentation.size(); ++i) {
      switch (c.augmentation[i]) {
        case 'L':
          c.lsdaEncoding = a.u8("LSDA encoding");
          checkCieEncoding(c.lsdaEncoding, "LSDA pointer", off, false);
          break;
        case 'R':
          c.fdeEncoding = a.u8("FDE encoding");
          if (c.fdeEncoding == pe::omit) r.fail("FDE encoding omit");
          checkCieEncoding(c.fdeEncoding, "FDE pointer", off, false);
          break;
        case 'P':
          c.personalityEncoding = a.u8("personality encoding");
          if (c.personalityEncoding == pe::omit) r.fail("personality encoding omit");
          checkCieEncoding(c.personalityEncoding, "personality", off, true);
          c.personality = a.pointer(c.personalityEncoding, "personality pointer");
          break;
        case 'S': c.signalFrame = true; break;
        case 'B': case 'G': break;  // AArch64 BTI / MTE: no data
        default:
          throw UnsupportedError(r.context() + ": unsupported augmentation \"" + c.augmentation + "\"");
      }
    }
    r.seek(c.augDataOffset + len);
  }
  c.instructionsOffset = r.pos();
  c.instructionsSize = end - r.pos();
  std::string unknown = detail::walkCfa(r, c.fdeEncoding, [&](const detail::CfaInsn& in) {
    if (in.kind == detail::CfaInsn::SetLoc)
      throw UnsupportedError(r.context() + ": DW_CFA_set_loc in initial instructions");
    if (in.kind == detail::CfaInsn::Advance && c.obstacle.empty())
      c.obstacle = r.context() + ": initial instructions advance the location";
  });
  if (!unknown.empty() && c.obstacle.empty()) c.obstacle = r.context() + ": " + unknown;
  return c;
}

// Parses the LSDA of an FDE.  Returns "" or why the LSDA can't be rewritten
// (outside the section, unsupported encoding).  Malformed data throws.
std::string parseLsda(ByteView get, Fde& f) {
  if (f.lsda < get.addr || f.lsda - get.addr >= get.size)
    return fdeContext(f.sectionOffset) + ": LSDA at " + hex(f.lsda) + " is outside .gcc_except_table";
  Lsda& l = f.lsdaInfo;
  l.offset = f.lsda - get.addr;
  Reader r(get.data, get.addr, l.offset, get.size, ".gcc_except_table: LSDA at offset " + hex(l.offset));
  auto unsupported = [&](const std::string& what) { return r.context() + ": " + what; };
  auto checkEnc = [&](uint8_t enc, const char* what) {
    if (!detail::formatValid(enc)) r.fail(std::string("bad ") + what + " encoding " + hex(enc));
  };

  l.lpStartEncoding = r.u8("LPStart encoding");
  l.lpStart = f.pcBegin;
  if (l.lpStartEncoding != pe::omit) {
    checkEnc(l.lpStartEncoding, "LPStart");
    if (!detail::applicationSupported(l.lpStartEncoding) || (l.lpStartEncoding & pe::indirect))
      return unsupported("unsupported LPStart encoding " + hex(l.lpStartEncoding));
    l.lpStart = r.pointer(l.lpStartEncoding, "LPStart");
  }
  l.ttypeEncoding = r.u8("TType encoding");
  int ttSize = 0;
  if (l.ttypeEncoding != pe::omit) {
    checkEnc(l.ttypeEncoding, "TType");
    ttSize = detail::formatSize(l.ttypeEncoding);
    if (ttSize == 0) r.fail("LEB128 TType encoding " + hex(l.ttypeEncoding));
    if (!detail::applicationSupported(l.ttypeEncoding))
      return unsupported("unsupported TType encoding " + hex(l.ttypeEncoding));
    uint64_t ttOff = r.uleb("TType offset");
    if (ttOff > get.size - r.pos()) r.fail("TType offset " + hex(ttOff) + " past the section end");
    l.ttBase = r.pos() + ttOff;
  }
  l.callSiteEncoding = r.u8("call-site encoding");
  checkEnc(l.callSiteEncoding, "call-site");
  if ((l.callSiteEncoding & 0xf0) != 0)
    return unsupported("unsupported call-site encoding " + hex(l.callSiteEncoding));
  uint64_t csLen = r.uleb("call-site table length");
  l.callSiteTableOffset = r.pos();
  r.need(csLen, "call-site table");
  l.callSiteTableSize = csLen;
  uint64_t csEnd = l.callSiteTableOffset + csLen;
  if (l.ttypeEncoding != pe::omit && l.ttBase < csEnd)
    r.fail("TType base " + hex(l.ttBase) + " inside the call-site table");

  std::string obstacle;
  Reader cs(get.data, get.addr, l.callSiteTableOffset, csEnd, r.context());
  while (!cs.atEnd()) {
    CallSite s;
    uint64_t start = cs.raw(l.callSiteEncoding, "call-site start");
    uint64_t len = cs.raw(l.callSiteEncoding, "call-site length");
    uint64_t lp = cs.raw(l.callSiteEncoding, "call-site landing pad");
    s.action = cs.uleb("call-site action");
    s.start = f.pcBegin + start;
    s.end = s.start + len;
    s.landingPad = lp ? l.lpStart + lp : 0;
    if ((s.start < f.pcBegin || s.end > f.pcEnd || s.end < s.start) && obstacle.empty())
      obstacle = unsupported("call site [" + hex(s.start) + ", " + hex(s.end) + ") outside the FDE");
    f.callSites.push_back(std::move(s));
  }

  // Action chains, exception specifications and the type entries they name.
  uint64_t tailEnd = csEnd;
  std::set<uint64_t> typeIndices;
  auto typeIndex = [&](uint64_t idx, uint64_t where) {
    if (l.ttypeEncoding == pe::omit) r.fail("type filter without a type table at offset " + hex(where));
    if (idx == 0 || idx > (l.ttBase - csEnd) / uint64_t(ttSize))
      r.fail("type index " + std::to_string(idx) + " outside the type table at offset " + hex(where));
    typeIndices.insert(idx);
  };
  std::map<uint64_t, uint64_t> specEnds;  // spec list offset -> end
  for (CallSite& s : f.callSites) {
    if (s.action == 0) continue;
    if (s.action - 1 >= get.size - csEnd) r.fail("action offset " + hex(s.action - 1) + " past the section end");
    uint64_t at = csEnd + (s.action - 1);
    std::set<uint64_t> seen;
    for (;;) {
      if (!seen.insert(at).second) r.fail("action chain loops at offset " + hex(at));
      Reader a(get.data, get.addr, at, get.size, r.context());
      int64_t filter = a.sleb("action filter");
      uint64_t dispAt = a.pos();
      int64_t disp = a.sleb("action next");
      tailEnd = std::max(tailEnd, a.pos());
      s.filters.push_back(filter);
      if (filter > 0) {
        typeIndex(uint64_t(filter), at);
      } else if (filter < 0) {
        if (l.ttypeEncoding == pe::omit) r.fail("exception specification without a type table at offset " + hex(at));
        uint64_t specOff = uint64_t(-(filter + 1));
        if (specOff >= get.size - l.ttBase) r.fail("exception specification past the section end at offset " + hex(at));
        uint64_t spec = l.ttBase + specOff;
        if (!specEnds.count(spec)) {
          Reader sp(get.data, get.addr, spec, get.size, r.context());
          for (;;) {
            uint64_t idx = sp.uleb("exception specification");
            if (idx == 0) break;
            typeIndex(idx, spec);
          }
          specEnds[spec] = sp.pos();
          tailEnd = std::max(tailEnd, sp.pos());
        }
      }
      if (disp == 0) break;
      uint64_t next = dispAt + uint64_t(disp);
      if (next < csEnd || next >= get.size) r.fail("action next " + std::to_string(disp) + " out of bounds at offset " + hex(dispAt));
      at = next;
    }
  }
  if (l.ttypeEncoding != pe::omit) tailEnd = std::max(tailEnd, l.ttBase);
  l.tailEnd = tailEnd;
  for (uint64_t idx : typeIndices) {
    TypeEntry e;
    e.index = idx;
    e.sectionOffset = l.ttBase - idx * uint64_t(ttSize);
    Reader t(get.data, get.addr, e.sectionOffset, get.size, r.context());
    e.target = t.pointer(l.ttypeEncoding, "type table entry");
    l.typeEntries.push_back(e);
  }
  f.hasLsdaInfo = true;
  return obstacle;
}

}  // namespace

EhFrameInfo parseEhFrame(ByteView eh, ByteView get) {
  if (eh.size && !eh.data) throw InputError(".eh_frame: no data");
  if (get.size && !get.data) throw InputError(".gcc_except_table: no data");
  EhFrameInfo info;
  std::unordered_map<uint64_t, uint32_t> cieAt;  // section offset -> index
  uint64_t pos = 0;
  while (pos < eh.size) {
    if (eh.size - pos < 4) {
      for (uint64_t i = pos; i < eh.size; ++i)
        if (eh.data[i]) throw InputError(".eh_frame: truncated entry at offset " + hex(pos));
      break;
    }
    Reader r(eh.data, eh.addr, pos, eh.size, ".eh_frame: entry at offset " + hex(pos));
    uint32_t len = r.u32("length");
    if (len == 0) {  // terminator (or zero padding)
      pos += 4;
      continue;
    }
    if (len == 0xffffffffu) throw UnsupportedError(".eh_frame: 64-bit DWARF entry at offset " + hex(pos));
    if (len > eh.size - pos - 4)
      r.fail("length " + hex(len) + " past the section end (" + hex(eh.size) + ")");
    if (len < 4) r.fail("length " + hex(len) + " too short");
    uint64_t end = pos + 4 + len;
    uint32_t id = r.u32("CIE id");
    if (id == 0) {
      cieAt[pos] = uint32_t(info.cies.size());
      info.cies.push_back(parseCie(eh, pos, end));
      pos = end;
      continue;
    }
    Fde f;
    f.sectionOffset = pos;
    f.size = end - pos;
    Reader fr(eh.data, eh.addr, pos + 8, end, fdeContext(pos));
    uint64_t cieOff = pos + 4 - id;
    auto it = id <= pos + 4 ? cieAt.find(cieOff) : cieAt.end();
    if (it == cieAt.end()) fr.fail("bad CIE pointer " + hex(id));
    f.cie = it->second;
    const Cie& c = info.cies[f.cie];
    f.pcBegin = fr.pointer(c.fdeEncoding, "pc_begin");
    uint64_t range = fr.raw(c.fdeEncoding, "pc_range");
    if (f.pcBegin == 0) {  // code discarded by the linker
      ++info.droppedFdes;
      pos = end;
      continue;
    }
    if (f.pcBegin + range < f.pcBegin) fr.fail("pc range " + hex(range) + " wraps around");
    f.pcEnd = f.pcBegin + range;
    if (!c.augmentation.empty()) {
      uint64_t alen = fr.uleb("augmentation data length");
      f.augDataOffset = fr.pos();
      fr.need(alen, "augmentation data");
      f.augDataSize = alen;
      if (c.lsdaEncoding != pe::omit) {
        Reader a(eh.data, eh.addr, f.augDataOffset, f.augDataOffset + alen, fr.context());
        f.lsda = a.pointer(c.lsdaEncoding, "LSDA pointer");
      }
      fr.seek(f.augDataOffset + alen);
    }
    f.instructionsOffset = fr.pos();
    f.instructionsSize = end - fr.pos();
    std::string unknown = detail::walkCfa(fr, c.fdeEncoding, [&](const detail::CfaInsn& in) {
      if (in.kind == detail::CfaInsn::SetLoc) f.hasSetLoc = true;
    });
    if (!unknown.empty()) f.obstacle = fr.context() + ": " + unknown;
    if (f.lsda != 0) {
      std::string why = parseLsda(get, f);
      if (f.obstacle.empty()) f.obstacle = why;
    }
    info.fdes.push_back(std::move(f));
    pos = end;
  }
  std::stable_sort(info.fdes.begin(), info.fdes.end(), [](const Fde& a, const Fde& b) {
    return a.pcBegin != b.pcBegin ? a.pcBegin < b.pcBegin : a.pcEnd < b.pcEnd;
  });
  return info;
}

const Fde* findFde(const EhFrameInfo& info, uint64_t pc) {
  auto it = std::upper_bound(info.fdes.begin(), info.fdes.end(), pc,
                             [](uint64_t v, const Fde& f) { return v < f.pcBegin; });
  // FDEs are sorted by (pcBegin, pcEnd): the last one starting at or before
  // pc is the widest one starting there.
  if (it == info.fdes.begin()) return nullptr;
  --it;
  return pc < it->pcEnd ? &*it : nullptr;
}

std::string unwindObstacle(const EhFrameInfo& info, uint64_t start, uint64_t end) {
  // First FDE that could overlap: step back over FDEs that end after start.
  auto it = std::lower_bound(info.fdes.begin(), info.fdes.end(), start,
                             [](const Fde& f, uint64_t v) { return f.pcBegin < v; });
  while (it != info.fdes.begin() && (it - 1)->pcEnd > start) --it;
  for (; it != info.fdes.end() && it->pcBegin < end; ++it) {
    const Fde& f = *it;
    bool overlaps = f.pcEnd > start || (f.pcBegin == f.pcEnd && f.pcBegin >= start);
    if (!overlaps) continue;
    if (f.pcBegin < start || f.pcEnd > end)
      return fdeContext(f.sectionOffset) + " for [" + hex(f.pcBegin) + ", " + hex(f.pcEnd) +
             ") overlaps procedure [" + hex(start) + ", " + hex(end) + ") only partly";
    if (!f.obstacle.empty()) return f.obstacle;
    if (!info.cies[f.cie].obstacle.empty()) return info.cies[f.cie].obstacle;
  }
  return "";
}

std::vector<CfaOp> decodeCfaProgram(const EhFrameInfo& info, const Fde& fde, ByteView eh) {
  if (fde.cie >= info.cies.size()) throw InternalError("decodeCfaProgram: bad CIE index");
  const Cie& c = info.cies[fde.cie];
  if (fde.instructionsOffset + fde.instructionsSize > eh.size)
    throw InternalError("decodeCfaProgram: FDE outside the given .eh_frame");
  Reader r(eh.data, eh.addr, fde.instructionsOffset, fde.instructionsOffset + fde.instructionsSize,
           fdeContext(fde.sectionOffset));
  std::vector<CfaOp> ops;
  uint64_t loc = fde.pcBegin;
  std::string unknown = detail::walkCfa(r, c.fdeEncoding, [&](const detail::CfaInsn& in) {
    switch (in.kind) {
      case detail::CfaInsn::Advance: loc += in.delta * c.codeAlign; break;
      case detail::CfaInsn::SetLoc: loc = in.address; break;
      case detail::CfaInsn::Nop: break;
      case detail::CfaInsn::Other:
        ops.push_back({loc, std::vector<uint8_t>(eh.data + in.offset, eh.data + in.offset + in.size)});
        break;
    }
  });
  if (!unknown.empty()) throw UnsupportedError(r.context() + ": " + unknown);
  return ops;
}

EhFrameHdr parseEhFrameHdr(ByteView hdr) {
  Reader r(hdr.data, hdr.addr, 0, hdr.data ? hdr.size : 0, ".eh_frame_hdr");
  if (r.u8("version") != 1) r.fail("bad version");
  uint8_t ptrEnc = r.u8("eh_frame_ptr encoding");
  uint8_t countEnc = r.u8("fde_count encoding");
  uint8_t tableEnc = r.u8("table encoding");
  auto read = [&](uint8_t enc, const char* what) -> uint64_t {
    if (!detail::formatValid(enc)) r.fail(std::string("bad ") + what + " encoding " + hex(enc));
    uint8_t app = enc & 0x70;
    if (app == pe::datarel) {
      uint64_t v = r.raw(enc, what);
      return v + hdr.addr;
    }
    if (!detail::applicationSupported(enc) || (enc & pe::indirect))
      throw UnsupportedError(".eh_frame_hdr: unsupported " + std::string(what) + " encoding " + hex(enc));
    return r.pointer(enc, what);
  };
  EhFrameHdr h;
  h.ehFramePtr = read(ptrEnc, "eh_frame_ptr");
  if (countEnc == pe::omit || tableEnc == pe::omit) return h;
  uint64_t count = read(countEnc, "fde_count");
  if (count > hdr.size / 2) r.fail("fde_count " + std::to_string(count) + " too large");
  for (uint64_t i = 0; i < count; ++i) {
    HdrEntry e;
    e.initialLoc = read(tableEnc, "table entry");
    e.fdeAddr = read(tableEnc, "table entry");
    h.table.push_back(e);
  }
  return h;
}

}  // namespace atomx::unwind
