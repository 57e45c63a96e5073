// A site's trace stores (CallCode.h, emitStores): the bytes a traced run
// records there, written through the thread's cursor.
#include "instrument/CallCode.h"

#include <atomx/trace_format.h>

#include <runtime/trace/stores.h>

#include "support/Error.h"
#include "x86/Assembler.h"

namespace atomx::instrument {

using x86::Assembler;

namespace {

// One piece of a site's record: `size` bytes at `offset` of the record,
// an immediate's (src -1: bytes[offset ...]) or a register's (8 bytes).
struct Piece {
  uint32_t offset;
  uint32_t size;
  int src;
};

void emitRecords(const Site& site, std::vector<uint8_t>& out);

}  // namespace

void emitStores(const Site& site, std::vector<uint8_t>& out) {
  if (site.stores.empty()) return;
  emitRecords(site, out);
  // A measured library call's site, last (the recorder's routine, called
  // after the stores, clears it once it has written the length).
  for (const StoreRequest* st : site.stores)
    if (st->librarySite) {
      uint8_t form[ATOMX_STORES_LIBRARY_FORM];
      out.insert(out.end(), form, form + atomx_stores_library_site(form, st->librarySite));
    }
}

namespace {

void emitRecords(const Site& site, std::vector<uint8_t>& out) {
  // A promoted loop's cursor (TraceRecorder.h, promoteTraceCursor): inside
  // the loop and on its exit edges the stores go through its register,
  // which an exit then Saves to %fs; an entry edge Loads it after its own
  // stores.  An edge out of one loop into another: its stores through the
  // first loop's register, its Save, the next one's Load.
  uint8_t form[ATOMX_STORES_MAX_FORM];
  auto put = [&](unsigned n) { out.insert(out.end(), form, form + n); };
  auto moves = [&](StoreRequest::Move m) {
    for (const StoreRequest* st : site.stores) {
      if (st->move != m) continue;
      const unsigned r = unsigned(st->cursor);
      const bool save = m == StoreRequest::Move::Save;
      if (st->spilled && !save) put(atomx_stores_spill_move(form, r, 1));
      put(atomx_stores_cursor_move(form, r, save));
      if (st->spilled && save) put(atomx_stores_spill_move(form, r, 0));
    }
  };
  int promoted = -2;  // the body's cursor register, -1 for %fs (-2: no request yet)
  for (const StoreRequest* st : site.stores) {
    if (st->move != StoreRequest::Move::None) continue;
    if (promoted != -2 && promoted != st->cursor) throw InternalError("a site's stores inside and outside a promoted loop");
    promoted = st->cursor;
  }
  // The record: every request's bytes, then its registers, in order.
  std::vector<uint8_t> bytes;
  std::vector<Piece> units;  // immediates' runs and registers, in record order
  uint16_t stored = 0;
  for (const StoreRequest* st : site.stores) {
    if (st->move != StoreRequest::Move::None) continue;
    if (!st->bytes.empty()) {
      if (!units.empty() && units.back().src < 0) units.back().size += uint32_t(st->bytes.size());  // one run
      else units.push_back({uint32_t(bytes.size()), uint32_t(st->bytes.size()), -1});
    }
    bytes.insert(bytes.end(), st->bytes.begin(), st->bytes.end());
    for (int r = 0; r < 16; ++r)
      if (st->registers & (1u << r)) {
        const uint32_t width = st->widths[r] ? st->widths[r] : 8;
        units.push_back({uint32_t(bytes.size()), width, r});
        bytes.resize(bytes.size() + width);
        stored |= uint16_t(1u << r);
      }
  }
  // The cursor's register: a promoted loop's, or one dead here, or else,
  // per sequence, one pushed (after the red-zone step) whose value that
  // sequence does not store.
  const bool inLoop = promoted >= 0;
  if (inLoop && (stored >> promoted & 1)) throw InternalError("a promoted loop stores its cursor register's value");
  const bool saved = !inLoop && (site.storeScratch == ZYDIS_REGISTER_NONE ||
                                 (stored >> (site.storeScratch - ZYDIS_REGISTER_RAX) & 1));
  static constexpr unsigned kSaveable[] = {0, 1, 2, 3, 5, 6, 7};
  auto freeIn = [](uint16_t storedHere) {
    for (unsigned hw : kSaveable)
      if (!(storedHere >> hw & 1)) return int(hw);
    return -1;
  };
  // The forms: runtime/trace/stores.h.  Sequences of at most
  // ATOMX_STORES_MAX_BYTES bytes, each cut at a unit's boundary (and, when
  // saving, before a unit that would leave no register to save).
  for (size_t first = 0; first < units.size();) {
    const uint32_t base = units[first].offset;
    size_t end = first;
    uint16_t storedHere = 0;
    while (end < units.size() && units[end].offset + units[end].size - base <= ATOMX_STORES_MAX_BYTES) {
      const uint16_t with = units[end].src >= 0 ? uint16_t(storedHere | 1u << units[end].src) : storedHere;
      if (saved && freeIn(with) < 0) break;
      storedHere = with;
      ++end;
    }
    if (end == first) throw InternalError("a trace record longer than one store sequence");
    const ZydisRegister r = inLoop  ? x86::reg64(unsigned(promoted))
                            : saved ? ZydisRegister(ZYDIS_REGISTER_RAX + freeIn(storedHere))
                                    : site.storeScratch;
    const unsigned hw = unsigned(r - ZYDIS_REGISTER_RAX);
    Assembler a(out, 0);
    if (saved) {
      a.stepOverRedZone();
      a.push(r);
    }
    if (!inLoop) put(atomx_stores_cursor_move(form, hw, 0));
    std::vector<Piece> pieces;  // offsets within the sequence
    for (size_t u = first; u < end; ++u) {
      if (units[u].src >= 0) {
        pieces.push_back({units[u].offset - base, units[u].size, units[u].src});
        continue;
      }
      for (uint32_t off = 0; off < units[u].size;) {
        const uint32_t n = atomx_stores_piece(units[u].size - off);
        pieces.push_back({units[u].offset - base + off, n, -1});
        off += n;
      }
    }
    for (size_t k = pieces.size(); k-- > 0;) {  // the last piece first
      const Piece& pc = pieces[k];
      if (pc.src < 0) {
        put(atomx_stores_store(form, hw, pc.offset, &bytes[base + pc.offset], pc.size));
        continue;
      }
      put(atomx_stores_put(form, hw, unsigned(pc.src), pc.offset, pc.size));
      if (saved && pc.src == 4) {
        if (pc.size != 8) throw InternalError("%rsp stored in part");
        put(atomx_stores_add(form, hw, pc.offset, ATOMX_STORES_SAVED_RSP));
      }
    }
    const uint32_t length = units[end - 1].offset + units[end - 1].size - base;
    put(atomx_stores_advance(form, hw, length));
    if (!inLoop) put(atomx_stores_cursor_move(form, hw, 1));
    if (saved) {
      Assembler b(out, 0);
      b.pop(r);
      b.stepBackOverRedZone();
    }
    first = end;
  }
  moves(StoreRequest::Move::Save);
  moves(StoreRequest::Move::Load);
}

}  // namespace

uint32_t storeCodeSize(const Site& site) {
  std::vector<uint8_t> scratch;
  emitStores(site, scratch);
  return uint32_t(scratch.size());
}

}  // namespace atomx::instrument
