// Engine: the one instrumentation engine behind both public APIs.
//
// It exposes the rewriter's IR to a tool as handles (detail::ProcData ...,
// laid out contiguously so the public Range<> types are plain pointer
// ranges), keeps the routines a tool declared and the calls it added, and
// checks each call when it is added.  What it records is plain data
// (CallRequest); src/instrument/Plan.h turns it into insertion points.
#pragma once

#include <atomx/atomx.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/FlagsLiveness.h"
#include "debuginfo/LineTable.h"
#include "instrument/Prototype.h"
#include "ir/Program.h"
#include "x86/Decoder.h"
#include "x86/Semantics.h"

namespace atomx::detail {

struct ProcData {
  const ir::Procedure* proc = nullptr;
  const BlockData* firstBlock = nullptr;
  const BlockData* endBlock = nullptr;
};

struct BlockData {
  const ProcData* proc = nullptr;
  uint32_t block = 0;  // index in proc->blocks
  const InstData* firstInst = nullptr;
  const InstData* endInst = nullptr;
  const EdgeData* firstEdge = nullptr;
  const EdgeData* endEdge = nullptr;
};

struct InstData {
  const BlockData* block = nullptr;
  uint32_t index = 0;  // index in proc->insns
};

struct EdgeData {
  const BlockData* from = nullptr;
  const BlockData* to = nullptr;
  ir::EdgeKind kind = ir::EdgeKind::FallThrough;
};

}  // namespace atomx::detail

namespace atomx::instrument {

// One call a tool added, exactly as it asked.
struct CallRequest {
  uint32_t routine = 0;
  Point point = Point::InstBefore;
  const void* where = nullptr;  // the handle (InstData*, BlockData*, ProcData*, EdgeData*) or null
  std::vector<Arg> args;
  uint32_t order = 0;  // position among all calls added
  // Routine::beforeUnless: the call runs only when one of these fails
  // (InstBefore, BlockBefore); UnlessCode.cpp emits them inline.
  std::vector<MruTest> unless;
};

// One counter increment a tool added (atomx::Counters::increment).
struct IncrementRequest {
  uint32_t counters = 0;  // the array
  uint64_t index = 0;     // the counter in it
  Point point = Point::InstBefore;  // InstBefore, BlockBefore or Edge
  const void* where = nullptr;
  bool conditional = false;  // only when `test` holds (Counters::incrementIf; InstBefore)
  AddressTest test;
  // Counters::predict (Edge): instead of an increment, a 2-bit saturating
  // counter in counter `index` (0..3) moves toward the outcome, and counter
  // `miss` of the same array counts the outcomes it did not predict.
  enum class Predict : uint8_t { None, Taken, NotTaken } predict = Predict::None;
  uint64_t miss = 0;
  // A counter kept in general register `reg` through a loop
  // (analysis/CounterPromotion.h): Zero it on an entry edge (mov $0, no
  // flags), Step it where the count is (lea 1, no flags), Flush it into
  // counter `index` on an exit edge (add); None: a plain increment.  A
  // register that holds a program value across the loop is `spilled`:
  // Zero first saves it in counter `spill` of the same array, Flush then
  // restores it from there.
  // A prediction's state kept in `reg` through a loop the same way
  // (`held` on the prediction): Load it from counter `index` on an entry
  // edge, Store it back on an exit edge.  In the register the state is
  // 0..3 itself, not XOR 1 as in memory.
  // A block's count that an induction variable gives (analysis::Induction):
  // Mark copies the variable's register `variable` into `reg` on an entry
  // edge (mov, no flags), Measure adds what it moved by since (the
  // variable - `reg`, a multiple of its step) to counter `index` on an exit
  // edge (sub, sub); the count is that sum over the step, divided at the end
  // (runtime/analysis/counts.c).  Spilled as Zero and Flush are.
  enum class Accumulate : uint8_t { None, Zero, Step, Flush, Load, Store, Mark, Measure } accumulate = Accumulate::None;
  uint8_t reg = 0;  // hardware number
  uint8_t variable = 0;  // Mark, Measure: the induction variable's register
  bool spilled = false;
  bool held = false;  // a prediction whose state is in `reg`
  uint64_t spill = 0;
  uint32_t spillCounters = 0;  // the spill slot's array
};

// Registers inserted code must leave alone in part of a procedure: a
// promoted counter's, in its loop (the instructions of `insns`: (first,
// count) ranges) and on the edges where it is zeroed and flushed (the sites
// holding those increments).
struct RegisterReservation {
  const ir::Procedure* proc = nullptr;
  std::vector<std::pair<uint32_t, uint32_t>> insns;
  x86::RegSet regs;
};

// One exact count a tool asked for (atomx::Counters::count): counter
// `index` of array `counters` is, at ProgramAfter, how often the block ran
// or the edge was taken.  CountPlan.h measures it.
struct CountRequest {
  uint32_t counters = 0;
  uint64_t index = 0;
  Point point = Point::BlockBefore;  // BlockBefore or Edge
  const void* where = nullptr;
};

// Bytes written inline into the running thread's trace buffer, for an
// abstract-execution trace (instrument/TraceRecorder.h; the buffer's cursor
// is at %fs:ATOMX_TRACE_CURSOR_OFFSET, include/atomx/trace_format.h).
struct StoreRequest {
  enum class At : uint8_t {
    Before,       // before instruction `insn`
    After,        // after it: its fall-through (or return, for a call)
    Taken,        // on the taken edge of the direct branch `insn`
    TableTarget,  // on every jump-table edge to `target`
  };
  At at = At::Before;
  const ir::Procedure* proc = nullptr;
  uint32_t insn = 0;
  uint64_t target = 0;
  std::vector<uint8_t> bytes;
  // Then the values of these general registers (bit k: hardware register
  // k), lowest number first, as they are at the site, each in its first
  // `widths[k]` bytes (0: 8): what a data trace records
  // (analysis/DataSlices.h).
  uint16_t registers = 0;
  uint8_t widths[16] = {};
  // Then, when nonzero, this site number in the thread's library slot: a
  // library call whose length the recorder measures (runtime/trace/stores.h,
  // atomx_stores_library_site; instrument/TraceRecorder).
  uint32_t librarySite = 0;
  // A loop that holds the cursor in a register (TraceRecorder.h,
  // promoteTraceCursor): inside it and on its exit edges, its stores go
  // through `cursor` (a hardware register number; -1: through %fs, as
  // everywhere else); on its entry edges a request that stores nothing
  // but Loads the cursor into it (after the edge's own stores), on its
  // exit edges one that Saves it back (after them too).
  int8_t cursor = -1;
  enum class Move : uint8_t { None, Load, Save } move = Move::None;
  // The register holds a program value across the loop: a Load keeps it
  // at %fs:ATOMX_TRACE_SPILL_OFFSET first, a Save puts it back after.
  bool spilled = false;
};

// A loop whose code holds the thread's trace cursor in general register
// `reg` (its blocks; their stores' StoreRequest::cursor): the instrumenter
// tells the recorder where (include/atomx/address_map.h, AtomxCursorRegion).
struct CursorLoop {
  const ir::Procedure* proc = nullptr;
  std::vector<uint32_t> blocks;
  unsigned reg = 0;
};

// BlockAfter runs after the block's last instruction when that instruction
// falls through or is a call (on return); before it when it is any other
// control transfer (a branch, a jump, a return), where "after" has no single
// place.
bool blockAfterGoesBefore(const x86::Insn& last);

class Engine {
 public:
  Engine(const ir::Program& program, const x86::Decoder& decoder, std::string inputPath);
  ~Engine();

  // The engine a tool's API calls reach: the one of the innermost ApiScope
  // on this thread (Session::runInstrument opens one around Instrument).
  // Throws outside any scope.
  static Engine& current();
  class ApiScope {
   public:
    explicit ApiScope(Engine& engine);
    ~ApiScope();
    ApiScope(const ApiScope&) = delete;
    ApiScope& operator=(const ApiScope&) = delete;

   private:
    Engine* previous_;
  };

  const ir::Program& program() const { return program_; }
  const x86::Decoder& decoder() const { return decoder_; }
  const std::string& inputPath() const { return inputPath_; }
  const std::vector<detail::ProcData>& procs() const { return procs_; }
  const std::vector<detail::BlockData>& blocks() const { return blocks_; }
  const std::vector<detail::InstData>& insts() const { return insts_; }
  // atomx::embedFacts: the tool's analysis code looks up the program's
  // facts (Facts.h embeds them).
  void wantFacts(bool operands) { factsWanted_ = true, factOperandsWanted_ |= operands; }
  bool factsWanted() const { return factsWanted_; }
  bool factOperandsWanted() const { return factOperandsWanted_; }
  const detail::ProcData* procAt(uint64_t pc) const;

  uint32_t declare(std::string_view prototype);  // AddCallProto; same text twice is fine
  const Prototype& routine(uint32_t id) const { return routines_[id]; }
  const std::vector<Prototype>& routines() const { return routines_; }
  uint32_t routineId(std::string_view name) const;  // throws if undeclared

  void add(uint32_t routine, Point point, const void* where, std::vector<Arg> args);
  // A call made only when one of `tests` fails (Routine::beforeUnless).
  void addUnless(uint32_t routine, Point point, const void* where, std::vector<MruTest> tests, std::vector<Arg> args);
  // The descriptor words behind MruDescriptor (a zeroed array, as counters are).
  uint32_t addMruDescriptor() { return addCounters(MruDescriptor::kWords); }
  // A call atomx itself adds at a program point (ProgramBefore or
  // ProgramAfter), ahead of every call of the tool there (and after the
  // ones added this way before it).
  void addFirst(uint32_t routine, Point point, std::vector<Arg> args);
  // How many of calls() atomx added itself (addFirst): the first ones.
  size_t atomxCalls() const { return firstCalls_; }
  const std::vector<CallRequest>& calls() const { return calls_; }

  // Counter arrays (their sizes, by id) and the increments added to them;
  // an array grows to hold the largest counter an increment names.
  static constexpr uint64_t kMaxCounters = uint64_t(1) << 28;
  uint32_t addCounters(uint64_t count);
  void reserveCounters(uint32_t counters, uint64_t count);
  void addIncrement(uint32_t counters, uint64_t index, Point point, const void* where,
                    const AddressTest* test = nullptr);
  void addPrediction(uint32_t counters, uint64_t state, uint64_t miss, const void* edge, bool taken);
  void addCount(uint32_t counters, uint64_t index, Point point, const void* where);
  const std::vector<uint64_t>& counterArrays() const { return counterArrays_; }
  const std::vector<CountRequest>& counts() const { return counts_; }
  const std::vector<IncrementRequest>& increments() const { return increments_; }
  // A promoted counter's part (IncrementRequest::Accumulate), and where its
  // register is reserved.
  // A spilled register's slot is counter *spill of array `spillArray`
  // (by default `counters`).
  void addAccumulate(IncrementRequest::Accumulate what, unsigned reg, uint32_t counters, uint64_t index, Point point,
                     const void* where, const uint64_t* spill = nullptr, const uint32_t* spillArray = nullptr,
                     unsigned variable = 0);
  // The prediction increments()[k] updates its state in register `reg`.
  void holdPrediction(size_t k, unsigned reg);
  void reserveRegisters(RegisterReservation r) { reservations_.push_back(std::move(r)); }
  const std::vector<RegisterReservation>& reservations() const { return reservations_; }

  // Trace stores (StoreRequest), in the order they run where they share a site.
  void addStore(StoreRequest store) { stores_.push_back(std::move(store)); }
  const std::vector<StoreRequest>& stores() const { return stores_; }
  std::vector<StoreRequest>& stores() { return stores_; }
  void addCursorLoop(CursorLoop loop) { cursorLoops_.push_back(std::move(loop)); }
  const std::vector<CursorLoop>& cursorLoops() const { return cursorLoops_; }

  // The instruction an argument is computed at, for a call at (point, where):
  // null for program points and edges.  Also used to name a call site.
  const detail::InstData* contextInst(Point point, const void* where) const;
  // "0x401136 (main+0x16)" for error messages.
  std::string describe(Point point, const void* where) const;
  // Full decoding of an instruction (operands), for queries and code generation.
  struct Decoded {
    ZydisDecodedInstruction insn;
    ZydisDecodedOperand operands[ZYDIS_MAX_OPERAND_COUNT];
  };
  Decoded decode(const ir::Procedure& proc, uint32_t index) const;
  // What the instruction reads and writes (x86/Semantics.h); its memory
  // operands are numbered as the API numbers them (Zydis' order).
  x86::Semantics semantics(const ir::Procedure& proc, uint32_t index) const;
  // All of the above and its operands (x86::describeOperands), of the last
  // instruction asked for: a tool asks many questions of one instruction in
  // a row, and each needs it decoded.  Valid until the next call on the same
  // thread: the layout emits code on several threads at once, and each has
  // its own last instruction (decode, semantics and described may be called
  // from any thread; lineTable and flagsLiveness from one only).
  struct Described {
    const ir::Procedure* proc = nullptr;
    uint32_t index = 0;
    Decoded decoded;
    x86::Semantics semantics;
    unsigned operandCount = 0;  // operands: withOperands only
    x86::OperandInfo operands[ZYDIS_MAX_OPERAND_COUNT];
    bool hasOperands = false;
  };
  const Described& described(const ir::Procedure& proc, uint32_t index, bool withOperands = false) const;
  // The input's DWARF line table, read on first use.
  const debuginfo::LineTable& lineTable() const;
  // Which status flags are live at each instruction of a procedure
  // (analysis::FlagsLiveness), found on first use.
  const analysis::FlagsLiveness& flagsLiveness(const ir::Procedure& proc) const;

 private:
  void check(const Prototype& proto, Point point, const void* where, const std::vector<Arg>& args) const;
  void checkAddressTest(const AddressTest& test, const detail::InstData* inst) const;
  void checkMruTest(const MruTest& test, Point point, const void* where, const std::string& site) const;
  // An increment or count of counter `index` of array `counters` at (point,
  // where): valid, and the array grown to hold it.
  void checkCounter(const char* api, uint32_t counters, uint64_t index, Point point, const void* where);

  const ir::Program& program_;
  const x86::Decoder& decoder_;
  std::string inputPath_;
  std::vector<detail::ProcData> procs_;
  std::vector<detail::BlockData> blocks_;
  std::vector<detail::InstData> insts_;
  std::vector<detail::EdgeData> edges_;
  std::vector<Prototype> routines_;
  std::vector<CallRequest> calls_;
  std::vector<uint64_t> counterArrays_;
  std::vector<IncrementRequest> increments_;
  std::vector<RegisterReservation> reservations_;
  std::vector<CountRequest> counts_;
  size_t firstCalls_ = 0;  // calls_ begins with the addFirst ones
  bool factsWanted_ = false, factOperandsWanted_ = false;
  std::vector<StoreRequest> stores_;
  std::vector<CursorLoop> cursorLoops_;
  mutable std::unique_ptr<debuginfo::LineTable> lineTable_;
  const uint64_t id_;  // names this engine in each thread's described() cache
  mutable std::map<const ir::Procedure*, std::unique_ptr<analysis::FlagsLiveness>> flagsLiveness_;
};

}  // namespace atomx::instrument
