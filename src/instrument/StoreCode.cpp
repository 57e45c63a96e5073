// A site's trace stores (CallCode.h, emitStores): the bytes a traced run
// records there, written through the thread's cursor.
#include "instrument/CallCode.h"

#include <atomx/trace_format.h>

#include "support/Error.h"
#include "x86/Assembler.h"

namespace atomx::instrument {

using x86::Assembler;

void emitStores(const Site& site, std::vector<uint8_t>& out) {
  if (site.stores.empty()) return;
  std::vector<uint8_t> bytes;
  for (const StoreRequest* st : site.stores) bytes.insert(bytes.end(), st->bytes.begin(), st->bytes.end());
  if (bytes.empty()) return;
  if (bytes.size() > 127) throw InternalError("too many trace bytes at one site");
  const bool saved = site.storeScratch == ZYDIS_REGISTER_NONE;
  const ZydisRegister r = saved ? ZYDIS_REGISTER_RAX : site.storeScratch;
  const unsigned hw = unsigned(r - ZYDIS_REGISTER_RAX);
  const uint8_t low = uint8_t(hw & 7), rexR = hw >= 8 ? 4 : 0, rexB = hw >= 8 ? 1 : 0;
  Assembler a(out, 0);
  if (saved) {
    a.stepOverRedZone();
    a.push(r);
  }
  const uint8_t slot = ATOMX_TRACE_CURSOR_OFFSET;
  a.raw({0x64, uint8_t(0x48 | rexR), 0x8b, uint8_t(0x04 | low << 3), 0x25, slot, 0, 0, 0});  // mov %fs:slot,%r
  // Pieces of 4, 2 and 1 bytes, emitted from the last.
  std::vector<std::pair<uint32_t, uint32_t>> pieces;  // offset, size
  for (uint32_t off = 0; off < bytes.size();) {
    const uint32_t left = uint32_t(bytes.size()) - off, n = left >= 4 ? 4 : left >= 2 ? 2 : 1;
    pieces.push_back({off, n});
    off += n;
  }
  for (size_t k = pieces.size(); k-- > 0;) {
    const auto [off, n] = pieces[k];
    if (n == 2) a.raw({0x66});
    if (rexB) a.raw({0x41});
    a.raw({uint8_t(n == 1 ? 0xc6 : 0xc7), uint8_t(0x40 | low), uint8_t(off)});
    for (uint32_t i = 0; i < n; ++i) a.raw({bytes[off + i]});
  }
  a.raw({uint8_t(0x48 | rexR | rexB), 0x8d, uint8_t(0x40 | low << 3 | low), uint8_t(bytes.size())});  // lea N(%r),%r
  a.raw({0x64, uint8_t(0x48 | rexR), 0x89, uint8_t(0x04 | low << 3), 0x25, slot, 0, 0, 0});  // mov %r,%fs:slot
  if (saved) {
    a.pop(r);
    a.stepBackOverRedZone();
  }
}

uint32_t storeCodeSize(const Site& site) {
  std::vector<uint8_t> scratch;
  emitStores(site, scratch);
  return uint32_t(scratch.size());
}

}  // namespace atomx::instrument
