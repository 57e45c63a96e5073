// A site's trace stores (CallCode.h, emitStores): the bytes a traced run
// records there, written through the thread's cursor.
#include "instrument/CallCode.h"

#include <atomx/trace_format.h>

#include <runtime/trace/stores.h>

#include "support/Error.h"
#include "x86/Assembler.h"

namespace atomx::instrument {

using x86::Assembler;

void emitStores(const Site& site, std::vector<uint8_t>& out) {
  if (site.stores.empty()) return;
  std::vector<uint8_t> bytes;
  for (const StoreRequest* st : site.stores) bytes.insert(bytes.end(), st->bytes.begin(), st->bytes.end());
  if (bytes.empty()) return;
  if (bytes.size() > ATOMX_STORES_MAX_BYTES) throw InternalError("too many trace bytes at one site");
  const bool saved = site.storeScratch == ZYDIS_REGISTER_NONE;
  const ZydisRegister r = saved ? ZYDIS_REGISTER_RAX : site.storeScratch;
  const unsigned hw = unsigned(r - ZYDIS_REGISTER_RAX);
  Assembler a(out, 0);
  if (saved) {
    a.stepOverRedZone();
    a.push(r);
  }
  // The forms: runtime/trace/stores.h.
  uint8_t form[ATOMX_STORES_MAX_FORM];
  auto put = [&](unsigned n) { out.insert(out.end(), form, form + n); };
  put(atomx_stores_cursor_move(form, hw, 0));
  // Pieces of 4, 2 and 1 bytes, emitted from the last.
  std::vector<std::pair<uint32_t, uint32_t>> pieces;  // offset, size
  for (uint32_t off = 0; off < bytes.size();) {
    const uint32_t n = atomx_stores_piece(uint32_t(bytes.size()) - off);
    pieces.push_back({off, n});
    off += n;
  }
  for (size_t k = pieces.size(); k-- > 0;) {
    const auto [off, n] = pieces[k];
    put(atomx_stores_store(form, hw, off, &bytes[off], n));
  }
  put(atomx_stores_advance(form, hw, unsigned(bytes.size())));
  put(atomx_stores_cursor_move(form, hw, 1));
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
