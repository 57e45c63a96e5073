// Exception-handling unwind data: parsing the program's .eh_frame (and the
// LSDAs its FDEs reference in .gcc_except_table) and regenerating a complete
// new .eh_frame, .eh_frame_hdr and LSDA blob after procedures were moved.
//
// Model.  The original unwind sections stay in the file, untouched and dead
// (except that FDEs of unmoved code keep pointing to their old LSDAs, which
// stay valid).  The rewriter places three new blobs in a read-only segment:
//
//   * .eh_frame      every CIE and every live FDE of the original, in the
//                    original order, re-encoded for the new position; FDEs
//                    of moved code get the new pc range, a CFA program whose
//                    advances follow translate(), and a pointer to a new LSDA.
//   * .eh_frame_hdr  version 1 binary-search table over every FDE of the new
//                    .eh_frame (PT_GNU_EH_FRAME must point to it).
//   * LSDA blob      one new LSDA per FDE that needs one: the FDE was moved,
//                    or one of its landing pads / its LPStart lies in moved
//                    code.  Call-site table re-encoded (same encoding);
//                    action table, type table and exception specifications
//                    copied as one block (so filters and action offsets stay
//                    valid) with pc-relative type-table entries adjusted and
//                    TTBase keeping its address modulo 8.  LPStart is kept
//                    (translated if it lies in moved code) as long as every
//                    landing pad can be encoded relative to it; otherwise
//                    (say a landing pad in an unmoved procedure below the new
//                    code, which a uleb128 can't reach) an explicit LPStart
//                    just below the lowest landing pad is written, pcrel|sdata4
//                    if the original had none.
//
// CFA programs of moved FDEs: every advance / set_loc is replaced by the
// smallest advance op reaching translate(old location) (consecutive advances
// merged, DW_CFA_nop padding dropped and re-added at the end); all other
// instructions are copied verbatim.  Unmoved FDEs are copied verbatim (only
// pc_begin / the LSDA pointer re-encoded for their new position), except
// that a program with a pc-relative DW_CFA_set_loc is rewritten the same way
// with the identity mapping.  Entries are padded to 4 bytes with DW_CFA_nop,
// as ld emits them, so an identity rebuild at the original address
// reproduces the original .eh_frame and .eh_frame_hdr byte for byte.
//
// Addresses in the API are virtual addresses.  "Old" addresses are those of
// the input program, "new" ones those of the moved code.
//
// Type tables: the entries that the C++ runtime can read (the indices named
// by the filters of every action record reachable from a call site, and the
// indices listed in exception specifications) are found by decoding the
// LSDA, so no relocations are needed.  If --emit-relocs relocations of
// .gcc_except_table are passed to buildUnwind, every R_X86_64_PC32/PC64 that
// falls inside a copied block is adjusted as well (this also covers entries
// the runtime never reads); without them the output is still correct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace atomx::unwind {

// DWARF exception-header pointer encodings (DW_EH_PE_*).
namespace pe {
inline constexpr uint8_t absptr = 0x00, uleb128 = 0x01, udata2 = 0x02, udata4 = 0x03,
                         udata8 = 0x04, sleb128 = 0x09, sdata2 = 0x0a, sdata4 = 0x0b,
                         sdata8 = 0x0c;
inline constexpr uint8_t pcrel = 0x10, textrel = 0x20, datarel = 0x30, funcrel = 0x40,
                         aligned = 0x50, indirect = 0x80, omit = 0xff;
}  // namespace pe

// A section's bytes and the virtual address of its first byte.
struct ByteView {
  const uint8_t* data = nullptr;
  size_t size = 0;
  uint64_t addr = 0;
};

// A static relocation inside .gcc_except_table (from .rela.gcc_except_table
// of an --emit-relocs link): r_offset (a virtual address) and ELF type.
struct RelocAt {
  uint64_t addr = 0;
  uint32_t type = 0;
};

struct Cie {
  uint64_t sectionOffset = 0;  // of the length field in .eh_frame
  uint64_t size = 0;           // whole entry, length field included
  uint8_t version = 1;         // 1, 3 or 4
  std::string augmentation;    // e.g. "zPLR"
  uint64_t codeAlign = 1;
  int64_t dataAlign = 0;
  uint64_t returnRegister = 0;
  uint8_t fdeEncoding = pe::absptr;  // 'R'
  uint8_t lsdaEncoding = pe::omit;   // 'L'
  uint8_t personalityEncoding = pe::omit;  // 'P'
  uint64_t personality = 0;  // decoded (the slot's address if indirect); 0 = none
  bool signalFrame = false;  // 'S'
  // Byte spans, as offsets in .eh_frame.
  uint64_t headerEnd = 0;  // end of the fixed header (before 'z' length or instructions)
  uint64_t augDataOffset = 0, augDataSize = 0;  // 'z' data (after its length)
  uint64_t instructionsOffset = 0, instructionsSize = 0;
  // Initial instructions contain an advance (legal but meaningless), so the
  // CIE can't be shared by an FDE of moved code; or an opcode this module
  // does not know.  Empty = usable for moved code.
  std::string obstacle;
};

struct CallSite {
  uint64_t start = 0, end = 0;  // absolute old addresses
  uint64_t landingPad = 0;      // absolute old address, 0 = none
  uint64_t action = 0;          // as stored: 0 = cleanup only, else 1 + action table offset
  std::vector<int64_t> filters;  // the action chain's type filters, decoded
};

// One type-table entry the runtime can read.
struct TypeEntry {
  uint64_t index = 0;          // 1-based, entry sits at TTBase - index * size
  uint64_t sectionOffset = 0;  // of the entry in .gcc_except_table
  uint64_t target = 0;         // decoded pointer (the slot's address if indirect), 0 = catch-all
};

// A parsed LSDA (gcc/clang C++ layout).
struct Lsda {
  uint64_t offset = 0;  // of its first byte in .gcc_except_table
  uint8_t lpStartEncoding = pe::omit;
  uint64_t lpStart = 0;  // absolute; the FDE's pc_begin when omitted
  uint8_t ttypeEncoding = pe::omit;
  uint64_t ttBase = 0;  // offset in .gcc_except_table (valid unless ttypeEncoding == omit)
  uint8_t callSiteEncoding = pe::uleb128;
  uint64_t callSiteTableOffset = 0, callSiteTableSize = 0;  // offsets in .gcc_except_table
  // The block [callSiteTableOffset + callSiteTableSize, tailEnd) holds the
  // action table, the type table and the exception specifications; it is
  // copied as a whole.
  uint64_t tailEnd = 0;
  std::vector<TypeEntry> typeEntries;
};

struct Fde {
  uint64_t sectionOffset = 0;  // of the length field in .eh_frame
  uint64_t size = 0;           // whole entry, length field included
  uint32_t cie = 0;            // index into EhFrameInfo::cies
  uint64_t pcBegin = 0, pcEnd = 0;
  uint64_t lsda = 0;  // absolute address, 0 = none
  std::vector<CallSite> callSites;  // when the LSDA was parsed
  // Byte spans, as offsets in .eh_frame.
  uint64_t augDataOffset = 0, augDataSize = 0;  // 'z' data (after its length)
  uint64_t instructionsOffset = 0, instructionsSize = 0;
  bool hasSetLoc = false;  // the CFA program uses DW_CFA_set_loc
  bool hasLsdaInfo = false;  // lsdaInfo/callSites are valid
  Lsda lsdaInfo;
  // Why this FDE's code cannot be moved (unknown CFA opcode, LSDA outside
  // .gcc_except_table or in an unsupported format, ...).  Empty = it can.
  std::string obstacle;
};

struct EhFrameInfo {
  std::vector<Cie> cies;  // in section order
  std::vector<Fde> fdes;  // sorted by pcBegin (then pcEnd); FDEs with pc_begin 0 are dropped
  uint64_t droppedFdes = 0;  // how many FDEs with pc_begin 0 (discarded code) were dropped
};

// Parses .eh_frame and the LSDAs its FDEs reference inside .gcc_except_table
// (which may be empty: size 0).  Throws InputError for malformed data and
// UnsupportedError for well-formed data this module can't handle at all
// (64-bit DWARF entries, unknown augmentation letters, pointer encodings
// other than absolute/pc-relative).  Problems that only matter if a given
// FDE's code is moved are recorded in Fde::obstacle instead.
EhFrameInfo parseEhFrame(ByteView ehFrame, ByteView gccExceptTable);

// The FDE covering pc (pcBegin <= pc < pcEnd), or nullptr.
const Fde* findFde(const EhFrameInfo& info, uint64_t pc);

// Why the procedure [start, end) can't be moved as far as unwind data is
// concerned, or "" if it can: an FDE overlaps it only partly (or spans it
// and more), or an FDE inside it has an obstacle (see Fde/Cie::obstacle).
// A procedure without any FDE is movable (it gets none).  FDEs lying wholly
// inside the procedure are fine (each is remapped on its own); their
// boundaries must then be instruction boundaries that translate() knows.
std::string unwindObstacle(const EhFrameInfo& info, uint64_t start, uint64_t end);

// A moved procedure.  Ranges must not overlap (InternalError).  An FDE that
// overlaps a moved range must lie wholly inside it (UnsupportedError).
struct MovedRange {
  uint64_t oldStart = 0, oldEnd = 0, newStart = 0, newEnd = 0;
};

// Old instruction boundary of moved code -> new address (with whatever was
// inserted before the instruction); nullopt for addresses in unmoved code.
// Asked for CFA row locations, call-site starts/ends and landing pads that
// lie strictly inside a moved range; oldStart and oldEnd themselves map to
// newStart / newEnd without asking (so a shared boundary between two
// adjacent procedures is never ambiguous).  Must be monotonic and return
// values inside [newStart, newEnd] (InternalError otherwise).  Addresses
// outside every moved range keep their value (e.g. a landing pad in an
// unmoved .cold part).  FDEs are rewritten on several threads at once, so it
// is called from several threads: it must only read.
using Translate = std::function<std::optional<uint64_t>(uint64_t)>;

struct UnwindSections {
  std::vector<uint8_t> ehFrame, ehFrameHdr, lsda;
};

struct UnwindLayout {
  size_t ehFrameSize = 0, ehFrameHdrSize = 0, lsdaSize = 0;
};

// Required alignment of the addresses passed to buildUnwind.
inline constexpr uint64_t kEhFrameAlign = 8, kEhFrameHdrAlign = 4, kLsdaAlign = 8;

// Sizes of the three blobs (independent of where they are placed; buildUnwind
// returns exactly these sizes for the same inputs: placement-dependent fields
// are fixed-size, and pointers in a LEB128 format are written padded to 10
// bytes).  Throws UnsupportedError
// naming the FDE if a moved range can't be handled (an FDE overlaps it only
// partly, translate() fails inside it, a landing pad can't be encoded, ...).
UnwindLayout planUnwind(const EhFrameInfo& info, ByteView ehFrame, ByteView gccExceptTable,
                        const std::vector<MovedRange>& moved, const Translate& translate);

// The bytes of the three blobs for the given addresses (aligned as above;
// InternalError otherwise).  relocs may be empty.
UnwindSections buildUnwind(const EhFrameInfo& info, ByteView ehFrame, ByteView gccExceptTable,
                           const std::vector<RelocAt>& gccExceptTableRelocs,
                           const std::vector<MovedRange>& moved, const Translate& translate,
                           uint64_t ehFrameAddr, uint64_t ehFrameHdrAddr, uint64_t lsdaAddr);

// planUnwind and buildUnwind over one plan: the moved FDEs' new CFA programs
// (which do not depend on placement) are computed once, by sizes(), and
// reused by build().  The arguments must outlive the writer.
class UnwindWriter {
 public:
  UnwindWriter(const EhFrameInfo& info, ByteView ehFrame, ByteView gccExceptTable,
               const std::vector<RelocAt>& gccExceptTableRelocs, const std::vector<MovedRange>& moved,
               const Translate& translate);
  ~UnwindWriter();
  UnwindWriter(const UnwindWriter&) = delete;
  UnwindWriter& operator=(const UnwindWriter&) = delete;
  UnwindLayout sizes();  // planUnwind's answer
  UnwindSections build(uint64_t ehFrameAddr, uint64_t ehFrameHdrAddr, uint64_t lsdaAddr);  // buildUnwind's

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// --- Decoding helpers (used by the tests; handy for verifying output) ---

// One CFA instruction of an FDE's program (the CIE's initial instructions
// excluded) with the location it applies at.  Advances, set_loc and nops are
// folded into loc and not listed.
struct CfaOp {
  uint64_t loc = 0;
  std::vector<uint8_t> bytes;  // the opcode and its operands, verbatim
};
std::vector<CfaOp> decodeCfaProgram(const EhFrameInfo& info, const Fde& fde, ByteView ehFrame);

// Entry i of the .eh_frame_hdr binary-search table, decoded.
struct HdrEntry {
  uint64_t initialLoc = 0, fdeAddr = 0;
};
struct EhFrameHdr {
  uint64_t ehFramePtr = 0;
  std::vector<HdrEntry> table;
};
EhFrameHdr parseEhFrameHdr(ByteView hdr);

}  // namespace atomx::unwind
