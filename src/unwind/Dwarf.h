// Internal helpers of the unwind module: bounds-checked reading of DWARF
// data, pointer encodings (DW_EH_PE_*), LEB128 writing and a walker over
// CFA programs.  Not part of the public API.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support/Error.h"
#include "support/Hex.h"
#include "unwind/EhFrame.h"

namespace atomx::unwind::detail {

// Size in bytes of a fixed-size pointer format, 0 for LEB128, -1 if invalid.
inline int formatSize(uint8_t enc) {
  switch (enc & 0x0f) {
    case pe::absptr: return 8;
    case pe::udata2: case pe::sdata2: return 2;
    case pe::udata4: case pe::sdata4: return 4;
    case pe::udata8: case pe::sdata8: return 8;
    case pe::uleb128: case pe::sleb128: return 0;
    default: return -1;
  }
}

inline bool formatValid(uint8_t enc) { return formatSize(enc) >= 0; }

// Applications this module can decode and re-encode: absolute and pc-relative,
// optionally indirect.
inline bool applicationSupported(uint8_t enc) {
  uint8_t app = enc & 0x70;
  return app == pe::absptr || app == pe::pcrel;
}

// Reader over [pos, end) of a section; every read is bounds checked and
// failures throw InputError naming the section, the entry and the field.
class Reader {
 public:
  Reader(const uint8_t* data, uint64_t addr, uint64_t pos, uint64_t end, std::string context)
      : data_(data), addr_(addr), pos_(pos), end_(end), context_(std::move(context)) {}

  uint64_t pos() const { return pos_; }
  uint64_t end() const { return end_; }
  uint64_t addrOf(uint64_t pos) const { return addr_ + pos; }
  bool atEnd() const { return pos_ >= end_; }
  void seek(uint64_t pos) {
    if (pos > end_) fail("offset " + hex(pos) + " out of bounds");
    pos_ = pos;
  }
  const std::string& context() const { return context_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(context_ + ": " + what);
  }

  void need(uint64_t n, const char* what) const {
    if (n > end_ - pos_) fail(std::string("truncated ") + what + " at offset " + hex(pos_));
  }
  uint8_t u8(const char* what) {
    need(1, what);
    return data_[pos_++];
  }
  uint64_t fixed(unsigned n, const char* what) {
    need(n, what);
    uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i) v |= uint64_t(data_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }
  uint16_t u16(const char* what) { return uint16_t(fixed(2, what)); }
  uint32_t u32(const char* what) { return uint32_t(fixed(4, what)); }
  uint64_t u64(const char* what) { return fixed(8, what); }
  uint64_t uleb(const char* what) {
    uint64_t v = 0;
    unsigned shift = 0;
    uint64_t start = pos_;
    for (;;) {
      if (pos_ >= end_) fail(std::string("truncated ") + what + " at offset " + hex(start));
      uint8_t b = data_[pos_++];
      if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) return v;
      if (shift > 7 * 20) fail(std::string("overlong LEB128 ") + what + " at offset " + hex(start));
    }
  }
  int64_t sleb(const char* what) {
    uint64_t v = 0;
    unsigned shift = 0;
    uint64_t start = pos_;
    uint8_t b;
    do {
      if (pos_ >= end_) fail(std::string("truncated ") + what + " at offset " + hex(start));
      b = data_[pos_++];
      if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
      shift += 7;
      if ((b & 0x80) && shift > 7 * 20)
        fail(std::string("overlong LEB128 ") + what + " at offset " + hex(start));
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= ~uint64_t(0) << shift;
    return int64_t(v);
  }
  void skip(uint64_t n, const char* what) {
    need(n, what);
    pos_ += n;
  }
  // Raw value of the given format (application bits ignored), sign-extended
  // for the signed formats.
  uint64_t raw(uint8_t enc, const char* what) {
    switch (enc & 0x0f) {
      case pe::absptr: case pe::udata8: case pe::sdata8: return u64(what);
      case pe::udata2: return u16(what);
      case pe::udata4: return u32(what);
      case pe::sdata2: return uint64_t(int64_t(int16_t(u16(what))));
      case pe::sdata4: return uint64_t(int64_t(int32_t(u32(what))));
      case pe::uleb128: return uleb(what);
      case pe::sleb128: return uint64_t(sleb(what));
      default: fail(std::string("bad pointer encoding ") + hex(enc) + " of " + what);
    }
  }
  // A pointer as the unwinder decodes it: a raw 0 is a null pointer whatever
  // the application; pc-relative is relative to the field's own address.
  // The caller has checked applicationSupported(enc).  Indirect pointers
  // decode to the slot's address.
  uint64_t pointer(uint8_t enc, const char* what) {
    if (!formatValid(enc)) fail(std::string("bad pointer encoding ") + hex(enc) + " of " + what);
    uint64_t field = addrOf(pos_);
    uint64_t v = raw(enc, what);
    if (v == 0) return 0;
    if ((enc & 0x70) == pe::pcrel) v += field;
    return v;
  }

 private:
  const uint8_t* data_;
  uint64_t addr_;
  uint64_t pos_, end_;
  std::string context_;
};

inline size_t ulebSize(uint64_t v) {
  size_t n = 1;
  while (v >>= 7) ++n;
  return n;
}

inline void putUleb(std::vector<uint8_t>& out, uint64_t v, size_t minLen = 0) {
  size_t n = 0;
  for (;;) {
    uint8_t b = v & 0x7f;
    v >>= 7;
    ++n;
    bool more = v != 0 || n < minLen;
    out.push_back(more ? uint8_t(b | 0x80) : b);
    if (!more) return;
  }
}

inline void putSleb(std::vector<uint8_t>& out, int64_t v, size_t minLen = 0) {
  size_t n = 0;
  for (;;) {
    uint8_t b = uint8_t(v) & 0x7f;
    v >>= 7;  // arithmetic shift (C++20)
    ++n;
    bool done = ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) && n >= minLen;
    out.push_back(done ? b : uint8_t(b | 0x80));
    if (done) return;
  }
}

inline void putFixed(std::vector<uint8_t>& out, uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

inline void patchFixed(std::vector<uint8_t>& out, size_t at, uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; ++i) out[at + i] = uint8_t(v >> (8 * i));
}

// Whether a raw value (two's complement in 64 bits) fits the format.
inline bool rawFits(uint64_t raw, uint8_t enc) {
  int64_t s = int64_t(raw);
  switch (enc & 0x0f) {
    case pe::absptr: case pe::udata8: case pe::sdata8: case pe::uleb128: case pe::sleb128:
      return true;
    case pe::udata2: return raw <= 0xffff;
    case pe::udata4: return raw <= 0xffffffffull;
    case pe::sdata2: return s >= -32768 && s <= 32767;
    case pe::sdata4: return s >= INT32_MIN && s <= INT32_MAX;
    default: return false;
  }
}

// Appends a raw value in the given format; LEB128 values are padded to
// minLeb bytes.  The caller has checked rawFits.
inline void putRaw(std::vector<uint8_t>& out, uint64_t raw, uint8_t enc, size_t minLeb = 0) {
  switch (enc & 0x0f) {
    case pe::uleb128: putUleb(out, raw, minLeb); break;
    case pe::sleb128: putSleb(out, int64_t(raw), minLeb); break;
    default: putFixed(out, raw, unsigned(formatSize(enc))); break;
  }
}

// Pointers in LEB128 format are always written padded to this many bytes so
// that their size does not depend on where they are placed.
inline constexpr size_t kPointerLeb = 10;

inline size_t pointerSize(uint8_t enc) {
  int n = formatSize(enc);
  return n == 0 ? kPointerLeb : size_t(n);
}

// --- CFA programs -----------------------------------------------------------

struct CfaInsn {
  enum Kind { Advance, SetLoc, Nop, Other } kind = Other;
  uint64_t offset = 0, size = 0;  // section offsets of the whole instruction
  uint64_t delta = 0;             // Advance: factored delta
  uint64_t address = 0;           // SetLoc: decoded address
};

// Walks the CFA program [r.pos(), r.end()) calling fn(const CfaInsn&) for
// each instruction.  Returns "" or a description of an unknown opcode (the
// walk stops there).  Truncated operands throw InputError.  set_loc operands
// are decoded with fdeEncoding.
template <typename Fn>
std::string walkCfa(Reader& r, uint8_t fdeEncoding, Fn&& fn) {
  while (!r.atEnd()) {
    CfaInsn in;
    in.offset = r.pos();
    uint8_t op = r.u8("CFA opcode");
    switch (op & 0xc0) {
      case 0x40: in.kind = CfaInsn::Advance; in.delta = op & 0x3f; break;
      case 0x80: r.uleb("DW_CFA_offset operand"); break;
      case 0xc0: break;  // DW_CFA_restore
      default:
        switch (op) {
          case 0x00: in.kind = CfaInsn::Nop; break;
          case 0x01:
            in.kind = CfaInsn::SetLoc;
            if (!applicationSupported(fdeEncoding))
              return "DW_CFA_set_loc with pointer encoding " + hex(fdeEncoding);
            in.address = r.pointer(fdeEncoding, "DW_CFA_set_loc operand");
            break;
          case 0x02: in.kind = CfaInsn::Advance; in.delta = r.u8("DW_CFA_advance_loc1 operand"); break;
          case 0x03: in.kind = CfaInsn::Advance; in.delta = r.u16("DW_CFA_advance_loc2 operand"); break;
          case 0x04: in.kind = CfaInsn::Advance; in.delta = r.u32("DW_CFA_advance_loc4 operand"); break;
          case 0x1d: in.kind = CfaInsn::Advance; in.delta = r.u64("DW_CFA_MIPS_advance_loc8 operand"); break;
          case 0x05: case 0x09: case 0x0c: case 0x14: case 0x2f:  // reg, uleb
            r.uleb("CFA register operand");
            r.uleb("CFA operand");
            break;
          case 0x06: case 0x07: case 0x08: case 0x0d: case 0x0e: case 0x2e:  // one uleb
            r.uleb("CFA operand");
            break;
          case 0x0a: case 0x0b: case 0x2d:  // remember/restore_state, GNU_window_save
            break;
          case 0x0f: {  // def_cfa_expression
            uint64_t n = r.uleb("DW_CFA_def_cfa_expression length");
            r.skip(n, "DW_CFA_def_cfa_expression block");
            break;
          }
          case 0x10: case 0x16: {  // expression, val_expression
            r.uleb("CFA register operand");
            uint64_t n = r.uleb("CFA expression length");
            r.skip(n, "CFA expression block");
            break;
          }
          case 0x11: case 0x12: case 0x15:  // reg, sleb
            r.uleb("CFA register operand");
            r.sleb("CFA operand");
            break;
          case 0x13: r.sleb("DW_CFA_def_cfa_offset_sf operand"); break;
          default:
            return "unknown CFA opcode " + hex(op) + " at offset " + hex(in.offset);
        }
    }
    in.size = r.pos() - in.offset;
    fn(in);
  }
  return "";
}

}  // namespace atomx::unwind::detail
