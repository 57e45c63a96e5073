// TracePlan: everything an abstract-execution trace records, decided from
// the program model alone, so that the recorder (instrument/TraceRecorder)
// and the regenerator (src/trace) compute the same plan from the same file.
// The format of what is written is include/atomx/trace_format.h.
//
// Per procedure:
//   - traced: the procedure is moved (only moved code can hold stores);
//     code that is not traced -- shared libraries, procedures left in
//     place -- is "outside": the trace shows a call to it as one event;
//   - enterable: outside code may call it (its entry's address is taken,
//     it is the program's entry point, or code left in place branches to
//     it), so its entry writes ENTRY and its id, and its entry block counts
//     as a node that records (blocking witnesses go before it);
//   - tagged blocks: each landing pad, and in a procedure with an indirect
//     jump no table explains (a computed goto) each block whose address is
//     taken, writes BLOCK, its procedure's id and its index, so where the
//     unwinder or the jump went is known;
//   - a call to setjmp (or sigsetjmp) writes RESUMED, the procedure's id
//     and the block's index each time it returns, so a longjmp back to it
//     is known;
//   - leavesOutside: it may return to its caller from outside code (it
//     ends in a jump to a PLT entry, to code left in place, through a
//     pointer, or to a procedure that does), so a call to it writes
//     RETURN after, as a call to outside code does;
//   - the witness placement (Witnesses.h) on its trace graph;
//   - with data: its DataSlices (DataSlices.h), the values it records for
//     the regenerator to compute data addresses from.  A block that stores
//     one is a recording node of the trace graph (so a blocking witness
//     comes before it, and the regenerator, which reads witnesses ahead
//     along witness-free paths, never takes a value for a witness);
//   - with data: its evaluated predicates (DataSlices.h; docs/trace.md
//     "Evaluated predicates"): the conditional branches in a loop whose
//     flags the regenerator computes from registers it knows, so that they
//     write no witness (Witnesses.h), chosen only where that pays: a
//     candidate is dropped when the registers its condition needs make the
//     recorder store a value, in a loop that holds it, that it would not
//     store otherwise.  ATOMX_TRACE_NO_EVALUATED=1 plans none (the
//     benchmark's "without loop counts"; evaluatedPredicates());
//   - with data: its library calls, the blocks that end in a call (or a
//     tail jump) to one of libc's memory and string functions whose extent
//     follows from registers (LibraryCall below): they record the
//     arguments before it (and the result after it), and are recording
//     nodes too.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include <atomx/libc_model.hpp>
#include <atomx/trace_format.h>

#include "analysis/BlockProfile.h"
#include "analysis/DataSlices.h"
#include "analysis/Witnesses.h"
#include "ir/Program.h"
#include "x86/Decoder.h"

namespace atomx::analysis {

struct ProcTrace {
  bool traced = false;
  bool early = false;  // not traced: runs before the entry point (an IFUNC resolver,
                       // .preinit_array) or is called by such code
  bool enterable = false;
  bool leavesOutside = false;
  uint32_t entryBlock = 0;
  uint8_t tableWidth = 2;  // bytes of a jump table's recorded target (block index)
  // Per block: it writes BLOCK (a landing pad; or the procedure jumps
  // through pointers and the block's address is taken: a computed goto may
  // land there).
  std::vector<bool> tagged;
  // A jump table of this procedure also reaches other procedures (a .cold
  // part): each table target is then recorded as BLOCK, its procedure's id
  // and its index (the stub writes it for this procedure's blocks, the
  // other procedures' target blocks are tagged), or ENTRY for an entry.
  bool crossTables = false;
  // Per block: it ends in a call to a setjmp-like function, which writes
  // RESUMED (instead of RETURN) each time it returns.
  std::vector<bool> resumes;
  TraceGraph graph;
  WitnessPlan plan;
  // Per arc of the graph, the witness values a walk can read first after
  // taking it: its own, or those at the end of witness-free paths from its
  // target.  Filled for the arcs of predicates (what the regenerator needs).
  std::vector<std::vector<uint32_t>> firstWitnesses;
  DataSlices slices;  // with data only
  // With data: per block, the libc::kFunctions index of the modelled
  // library function its last instruction calls or jumps to, or -1
  // (libraryCall).
  std::vector<int16_t> library;
};

struct TracePlan {
  std::vector<ProcTrace> procs;  // by procedure id
  bool data = false;             // the trace records data (ProcTrace::slices)
  uint64_t digest = 0;           // of every decision above: a trace names it
};

// `profile`: null to estimate the weights as qpt did.  `data`: plan a
// trace with data, decoding with it; null for the instruction path only.
TracePlan planTrace(const ir::Program& program, const BlockProfile* profile = nullptr, const x86::Decoder* data = nullptr);

// Whether planTrace plans evaluated predicates: unless the environment has
// ATOMX_TRACE_NO_EVALUATED set (not "0"), read once here.  The recorder's
// program cache keys on it (driver/Record.cpp).
bool evaluatedPredicates();

// What a call or jump to `target` reaches, as the trace sees it: the traced
// procedure whose entry (or block) it is, or null for outside code.
const ir::Procedure* tracedCode(const ir::Program& program, const TracePlan& plan, uint64_t target);

// A data trace's library calls (include/atomx/libc_model.hpp, docs/trace.md
// "Library references"): at a call, or a tail jump, through the PLT or the
// GOT to one of libc's memory and string functions (by the name
// Inst::calleeName gives, unless the program defines a procedure of that
// name), the recorder stores kLibraryArguments before the instruction
// (after every other record due there) and, as libraryLength says:
//   - Result (calloc, strlen, strnlen, stpcpy and __stpcpy_chk called):
//     kLibraryResult when it returns (right after its RETURN, before the
//     values DataSlices records after it);
//   - Measured (strcpy, __strcpy_chk, strcmp, strncmp, memcmp, bcmp,
//     __memcmpeq; and strlen, strnlen, stpcpy jumped to): the length
//     atomx_libc_measure finds in memory (<atomx/libc_length.h>), eight
//     bytes, which the recorder's routine writes before the instruction,
//     after the arguments (ATOMX_TRACE_LIBRARY_MEASURED);
//   - Arguments: nothing more (the copies, memset, bzero).
// The regenerator computes the extent from them (libc::shape).  A tail jump
// to calloc is no library call: its extent is at its result, which goes to
// the procedure's caller, not to the trace.
inline constexpr uint16_t kLibraryArguments = ATOMX_TRACE_LIBRARY_ARGUMENTS;
inline constexpr uint16_t kLibraryResult = ATOMX_TRACE_LIBRARY_RESULT;
enum class LibraryLength : uint8_t { Arguments, Result, Measured };
// Function f (an index into libc::kFunctions), called (tail: jumped to).
LibraryLength libraryLength(size_t f, bool tail);

// Whether `name` ("_setjmp@plt") is a setjmp-like function: a call to it may
// return again, through longjmp.
bool isSetjmp(const std::string& name);

// Whether a call to `target` (0: through a pointer) is followed by RETURN.
bool callWritesReturn(const ir::Program& program, const TracePlan& plan, uint64_t target);

}  // namespace atomx::analysis
