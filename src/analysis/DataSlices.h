// DataSlices: which data addresses the regenerator of an abstract-execution
// trace can compute from the instruction path, and which values the
// recorder must store so that it can (Larus' qpt, "Abstract execution",
// sections 2.2.4 and 5.1; issue 37).  The trace does not record these
// values yet: this is the analysis a later step records from, and the
// slices oracle (tests/oracles/slices) proves exact on real runs.
//
// Per memory operand (x86::Semantics::mem: explicit ones and the implicit
// ones of push, pop, call, ret, leave and string instructions), its
// address source:
//   - Static: no register and no segment base (%rip-relative, absolute): the
//     address is known from the file and, for a PIE, its load bias;
//   - Computed: from base and index registers (and the per-thread %fs/%gs
//     base) that the regenerator knows at that point;
//   - Recorded: the address itself is stored (a gather's or scatter's vector
//     index; a string instruction in a procedure that executes `std`, whose
//     direction the regenerator cannot know).
//
// A trace recorded with data (TracePlan::data) records the values of the
// RECORD-AT-ENTRY and RECORD-AFTER sites (instrument/TraceRecorder.h) and
// its regenerator (src/trace) repeats the rest.
//
// The registers the Computed addresses need are found by a backward
// "address-needed" analysis over the procedure's CFG: a register is needed
// at a point if its value there feeds a Computed address later through
// instructions the emulator (x86/Emulator.h) can repeat.  An instruction
// that writes a needed register is then either
//   - emulated: the emulator computes that register (its inputs become
//     needed before it), or
//   - a RECORD-AFTER site: the recorder stores the register's value right
//     after the instruction (a load, a pop's destination, a call's
//     caller-saved registers -- rax rcx rdx rsi rdi r8-r11; the ABI keeps
//     rbx rbp r12-r15 and %rsp --, cpuid/rdtsc/syscall results, cmov, any
//     instruction the emulator does not support).
// When an instruction both emulates and records (pop %rbx: %rsp computed,
// %rbx loaded; leave), the regenerator emulates first, from the values
// before the instruction, then takes the recorded values.
// Where the regenerator loses the register state -- the procedure's entry,
// a landing pad, a block the trace plan tags (BLOCK), a block entered from
// another procedure (a .cold part's return), an address-taken block with
// no predecessor -- the registers needed there are a RECORD-AT-ENTRY site
// (a block with no way in at all, alignment padding, never runs); a call to a
// setjmp-like function records every needed register after it (it may
// return again through longjmp, RESUMED, with the registers of the setjmp).
//
// The invariant (checkSlices proves it for every procedure the tests see,
// from the result alone): at every instruction, every register its
// Computed addresses or its emulation read is known -- recorded at an entry
// site, recorded after an instruction, emulated from known registers, or
// known at the end of every predecessor and not written since.  Why it
// holds: neededIn of a block that is not an entry site is exactly what its
// instructions need, transferred backward, and every predecessor's
// neededOut includes it (the union over successors that are not entry
// sites); an entry site's neededIn is what it records.  So no value is
// ever recorded on an intra-procedural edge.
//
// Stack slots as registers (the seed's footnote 7).  A slot is `width` (4
// or 8) bytes at a constant negative offset from the procedure's entry
// %rsp, addressed through %rsp (whose offset is followed through push,
// pop, add/sub of an immediate, lea, leave) or through %rbp while it is a
// copy of %rsp plus a constant.  `mov %reg, slot` or `mov $imm, slot`
// (SlotStore) and a later `mov slot, %reg` of the same width (SlotLoad)
// are emulated like register moves, so a value the regenerator knows
// stays known through a spill and its reload.  A reload is a SlotLoad
// only where the slot is AVAILABLE: on every intra-procedural path from an
// entry site (where nothing is) a SlotStore to it came after anything that
// may have written it.  What may write a slot (`slotWrites`):
//   - a call: the slots below its %rsp; all of them unless the callee is
//     a procedure of the program that leaves its stack arguments alone
//     (above its %rsp a callee writes nothing else) or nothing the
//     procedure writes is at the call's %rsp (a call has stack arguments
//     only if the caller wrote them there: a compiler stores them anew for
//     every call); all of them at a call that returns twice (setjmp-like,
//     vfork: it returns with a frame the path does not show);
//   - a store (explicit or implicit: push) overlapping the slot, other
//     than the SlotStore itself; a store through %rsp or a frame %rbp at an
//     unknown offset: all slots;
//   - an instruction after which %rsp is unknown: all slots; after which
//     the slot lies more than 128 bytes below %rsp: that slot (a signal
//     handler's frame goes below the red zone);
//   - an undecodable instruction: the procedure has no slots.
// Nothing else can write a slot unless the frame's address escapes: any
// use of %rsp, or of %rbp while it may point into the frame, other than as
// the base of a memory access and the stack arithmetic above (lea of a
// slot, a copy of %rsp, push %rsp ...) gives the procedure no slots at all,
// so no pointer to its frame exists for a callee, another thread or a
// system call to write through.  (Not covered: a signal handler that
// writes the interrupted frame through its ucontext's %rsp.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/BlockProfile.h"
#include "ir/Program.h"
#include "x86/Decoder.h"
#include "x86/Emulator.h"

namespace atomx::analysis {

struct ProcTrace;  // analysis/TracePlan.h

enum class AddressSource : uint8_t { Static, Computed, Recorded };
const char* addressSourceName(AddressSource s);

// An evaluated predicate (docs/trace.md "Evaluated predicates"): a block
// ending in a conditional branch whose flags the regenerator computes from
// registers it knows (InsnSlice::flagOp), so that its successor needs no
// witness.  The registers it reads are needed before the flag setter, as
// the base and index registers of an address are: known there by the same
// invariant, recorded where they cannot be computed (entry sites, after
// loads and calls, and restored with the rest at a signal's return).

// Whether block `b` stores a value for the regenerator: an entry site's
// registers, a RECORD-AFTER site's, or a Recorded address.
bool recordsData(const ir::Procedure& proc, const struct DataSlices& slices, uint32_t b);

// The caller-saved general registers: rax rcx rdx rsi rdi r8-r11.
inline constexpr uint16_t kCallerSaved = 0x0fc7;

struct InsnSlice {
  uint8_t memCount = 0;
  AddressSource source[x86::kMaxMemOperands] = {};
  uint16_t addressRegs = 0;    // base and index registers of its Computed operands
  uint16_t writes = 0;         // registers it may write (a call: the caller-saved ones and %rsp too)
  uint16_t neededBefore = 0;   // address-needed registers right before it
  uint16_t recordAfter = 0;    // RECORD-AFTER: stored right after it (a call: when it returns)
  uint16_t emulated = 0;       // needed registers it computes (emulate: op, before recordAfter is applied)
  x86::EmuOp op;               // what the emulator repeats (kind None: nothing)
  bool decoded = true;
  bool call = false;           // a call (its recordAfter: caller-saved registers, when it returns)
  bool load = false;           // it reads memory (its recordAfter: a loaded value, mostly)
  bool storesSlot = false;     // the regenerator repeats its store to a stack slot (op: SlotStore)
  uint64_t slotWrites = 0;     // stack slots (bit k: slot k) it may write: its slot store, or a clobber
  // Its memory operands (x86::Semantics::mem), DataSlices::mems[firstMem ...
  // firstMem + memCount), and what the regenerator needs to know of them.
  uint32_t firstMem = 0;
  bool repeated = false;       // a rep string instruction: %rcx (needed before it) counts its iterations
  bool repeatedWhile = false;  // repe/repne, which may stop early: %rcx is also recorded after it
  bool locked = false;         // a locked read-modify-write (not cmpxchg)
  bool cacheControl = false;   // a prefetch or flush: its operand names a line, no data moves
  // A load whose destination's new value is its first `valueBytes` bytes
  // extended (a 32-bit mov, movzx, movsx, movsxd into a 32- or 64-bit
  // register): the register `valueReg` is recorded in those bytes only,
  // the rest rebuilt by `valueExtend`.  Any other recorded register: 8.
  enum Extend : uint8_t { Zero, Sign32, Sign64 };  // Sign32: sign-extended to 32 bits, then zero-extended
  int8_t valueReg = -1;
  uint8_t valueBytes = 8;
  Extend valueExtend = Zero;
  // An evaluated predicate's flag setter (DataSlices::evaluated): the
  // regenerator computes the flags from the registers before it
  // (conditionRegs, needed there), and the jcc ending its block from them.
  x86::FlagOp flagOp;
  uint16_t conditionRegs = 0;
  // The bytes register r is recorded in after it.
  unsigned recordedBytes(unsigned r) const { return int(r) == valueReg ? valueBytes : 8; }
};

// A stack slot treated as a register: `width` bytes at `offset` from the
// procedure's entry %rsp.
struct StackSlot {
  int64_t offset = 0;
  uint8_t width = 0;
};

struct DataSlices {
  std::vector<InsnSlice> insns;        // by proc.insns index
  std::vector<x86::MemOperand> mems;   // every instruction's memory operands (InsnSlice::firstMem)
  std::vector<bool> entrySite;         // per block: the regenerator loses the register state there
  std::vector<bool> unreachable;       // per block: no way in (padding); never runs, counted nowhere
  std::vector<uint16_t> recordAtEntry; // per block: RECORD-AT-ENTRY registers (entry sites only)
  // Per block: registers the regenerator carries in at an entry site from
  // the traced code that branched there -- %rsp at the entry of a
  // procedure that is not enterable (TracePlan.h: only traced code calls or
  // jumps to it; the call pushes through %rsp, a jump out of a procedure
  // needs it): the callee's %rsp is the caller's, less 8 after a call.
  std::vector<uint16_t> carriedIn;
  std::vector<uint16_t> neededIn;      // per block: needed where it starts
  std::vector<uint16_t> neededOut;     // per block: needed after its last instruction
  std::vector<StackSlot> slots;        // by slot number (x86::EmuOp::slot)
  // Per block: the condition code (0..15) of the jcc ending it when it is an
  // evaluated predicate (its flag setter's InsnSlice::flagOp), else
  // x86::kNoCondition.
  std::vector<uint8_t> evaluated;
  bool frameEscapes = false;           // a stack address escapes (or %rsp is lost): no slots
};

// `trace`: the procedure's trace plan (tagged blocks, setjmp calls), or null.
// `evaluate`: per block, whether to make the conditional branch ending it
// an evaluated predicate where it can be one (empty: none): its flags set
// in its block, after anything else that writes the flags its condition
// reads, by an instruction x86::compileFlags compiles.  Its registers are
// then needed before that instruction, as an address's are.
DataSlices computeDataSlices(const ir::Program& program, const ir::Procedure& proc, const x86::Decoder& decoder,
                             const ProcTrace* trace, const std::vector<bool>& evaluate = {});

// Per block of `which`: whether its conditional branch can be an evaluated
// predicate (computeDataSlices's `evaluate` makes it one where it can),
// from its instructions alone; the registers are not looked at.
std::vector<bool> evaluableBranches(const ir::Program& program, const ir::Procedure& proc, const x86::Decoder& decoder,
                                    const std::vector<bool>& which);

// The invariant above, checked forward from the result alone: "" when it
// holds, else the first instruction where a needed register is unknown.
std::string checkSlices(const ir::Procedure& proc, const DataSlices& slices);

struct SliceStats {
  uint64_t operands[3] = {};     // memory operands by AddressSource
  uint64_t entrySites = 0, afterSites = 0;
  uint64_t registersRecorded = 0;  // over all sites
  uint64_t emulated = 0;           // instructions the regenerator repeats
  // Values recorded and memory references, counted once per instruction
  // (static) or weighted by the profile's block counts (dynamic; 0 without
  // one).  Values by where they come from (ValueOrigin).
  enum ValueOrigin { AtEntry, AfterCall, AfterLoad, AfterOther, Address, kOrigins };
  double staticValues[kOrigins] = {}, staticRefs = 0;
  double dynamicValues[kOrigins] = {}, dynamicRefs = 0;
  static double sum(const double (&v)[kOrigins]) { return v[0] + v[1] + v[2] + v[3] + v[4]; }

  void add(const SliceStats& o);
  uint64_t sites() const { return entrySites + afterSites; }
};

SliceStats sliceStats(const ir::Procedure& proc, const DataSlices& slices, const BlockProfile* profile);

}  // namespace atomx::analysis
