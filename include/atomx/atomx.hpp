// atomx: the instrumentation API (modern, typed C++).
//
// An instrumentation file defines
//
//     void Instrument(int argc, char** argv);   // extern "C", as in ATOM
//
// walks the program (atomx::program().procs() -> blocks() -> insts(), and
// each block's successor edges) and adds calls to analysis routines before
// or after any of them.  The analysis routines are ordinary C/C++ functions
// in the analysis file; they run inside the instrumented program.
//
//     extern "C" void Instrument(int, char**) {
//       atomx::Routine count("CountBlock(long)");
//       for (atomx::Proc p : atomx::program().procs())
//         for (atomx::Block b : p.blocks()) count.before(b, b.pc());
//     }
//
// Every call is checked against its routine's prototype when it is added:
// the number of arguments, and that each argument can be computed at that
// point (a branch condition only at a conditional branch, an effective
// address only at an instruction that accesses memory ...).  A mismatch
// throws atomx::Error naming the routine and the original address.
//
// Addresses: code addresses (pc(), branch targets) are ORIGINAL link-time
// addresses, as objdump and addr2line show them, in the instrumentation
// routines and in analysis arguments alike.  Data addresses (effective
// addresses, register values, procedure arguments) are what the program
// sees at run time.
#pragma once


#include <cstddef>
#include <cstdint>
#include <climits>
#include <cstdlib>
#include <initializer_list>
#include <atomx/demangle.hpp>
#include <atomx/error.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace atomx {

namespace detail {
struct ProcData;
struct BlockData;
struct InstData;
struct EdgeData;
struct ArgSpec;
// The handle types are defined inside atomx; ranges step through them here.
const ProcData* advance(const ProcData* d, ptrdiff_t n);
const BlockData* advance(const BlockData* d, ptrdiff_t n);
const InstData* advance(const InstData* d, ptrdiff_t n);
const EdgeData* advance(const EdgeData* d, ptrdiff_t n);
ptrdiff_t distance(const ProcData* a, const ProcData* b);
ptrdiff_t distance(const BlockData* a, const BlockData* b);
ptrdiff_t distance(const InstData* a, const InstData* b);
ptrdiff_t distance(const EdgeData* a, const EdgeData* b);
}  // namespace detail

// Errors in a tool's use of the API (bad prototype, argument mismatch, call
// at an impossible point) throw atomx::Error (<atomx/error.hpp>); atomx
// prints what() and fails the rewrite.

// General registers, hardware numbering.
enum class Reg : int { rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8, r9, r10, r11, r12, r13, r14, r15 };

// Register sets (Inst::regsRead/regsWritten): bit r for general register r
// (any width: eax and al are rax), kFlagsBit for the status flags (CF, PF,
// AF, ZF, SF, OF), bit 32 + n for vector register n (xmm/ymm/zmm n).
constexpr uint64_t regBit(Reg r) { return uint64_t(1) << int(r); }
inline constexpr uint64_t kFlagsBit = uint64_t(1) << 16;
constexpr uint64_t vectorRegBit(unsigned n) { return uint64_t(1) << (32 + n); }

class Proc;
class Block;
class Edge;

// A contiguous run of handles: for (Inst i : block.insts()) ...
template <class T, class D>
class Range {
 public:
  class iterator {
   public:
    explicit iterator(const D* d) : d_(d) {}
    T operator*() const { return T(d_); }
    iterator& operator++() { d_ = detail::advance(d_, 1); return *this; }
    bool operator!=(const iterator& o) const { return d_ != o.d_; }
    bool operator==(const iterator& o) const { return d_ == o.d_; }
   private:
    const D* d_;
  };
  Range(const D* first, const D* last) : first_(first), last_(last) {}
  iterator begin() const { return iterator(first_); }
  iterator end() const { return iterator(last_); }
  size_t size() const { return size_t(detail::distance(first_, last_)); }
  bool empty() const { return first_ == last_; }
  T operator[](size_t i) const { return T(detail::advance(first_, ptrdiff_t(i))); }

 private:
  const D* first_;
  const D* last_;
};

enum class InstClass {
  Other,        // falls through, no control transfer
  CondBranch,   // jcc, loop*, jrcxz
  Jump,         // direct jmp
  IndirectJump, // jmp through a register or memory (jump tables included)
  Call,         // direct call
  IndirectCall,
  Return,
  Stop,         // ud2, hlt, int3: nothing follows
};

// One memory operand's parts, as the x86 semantics module reads them:
// [segment: base + index * scale + disp], or %rip-relative (`target` the
// address it reaches).  Registers as hardware numbers 0..15 (Reg), -1 for
// none.  The hidden stack slot of push, call, pushf is described where the
// value goes (base %rsp, disp -size).
struct MemoryOperand {
  enum class Segment { None, ES, CS, SS, DS, FS, GS };
  int base = -1, index = -1;
  unsigned scale = 0;  // 1, 2, 4, 8 with an index
  int64_t disp = 0;
  Segment segment = Segment::None;
  unsigned size = 0;   // bytes accessed
  bool read = false, write = false;
  bool implicit = false;     // not written in the instruction (push's slot, movs' rsi/rdi ...)
  bool ripRelative = false;
  uint64_t target = 0;       // ripRelative: the original address
  unsigned addressWidth = 64;  // bits: 32 with an address-size prefix ((%eax))
  int vectorIndex = -1;      // a gather's or scatter's vector index (xmm/ymm/zmm n): one address
                             // per element; `index` is -1 then
};

// One operand of any kind, as the x86 semantics module reads it.  An
// instruction's operands are in Zydis' order: the destination first; those
// its text shows come before the hidden ones (push's stack slot, mul's
// %rdx, the flags register).  Inst::text() prints the shown ones in the
// reverse order (AT&T: sources first).  Widths are in bits.
struct Operand {
  enum class Kind {
    Register,
    Immediate,
    Memory,   // accesses memory: memOperand(memIndex) describes it too
    Address,  // computes an address and accesses nothing (lea's, a multi-byte nop's)
    Target,   // a direct branch's target (Inst::target())
  };
  // Register: general (reg: the hardware number, Reg, of whatever width is
  // named: %al and %eax are 0), vector (xmm/ymm/zmm reg), x87 (%st(reg)),
  // MMX (%mm reg), AVX-512 mask (%k reg), the flags register, other
  // (segment, %rip, x87 control/status, MXCSR ...; reg -1).
  enum class RegKind { None, General, Vector, X87, MMX, Mask, Flags, Other };
  // What one element holds: an integer (signed or not; Zydis tells them
  // apart where the operation does), a float of 16, 32, 64 or 80 bits, an
  // x87 packed BCD; Other for a structure (fxsave's area).
  enum class Type { None, Int, UInt, Float16, Float32, Float64, Float80, BCD, Other };
  Kind kind = Kind::Register;
  RegKind regKind = RegKind::None;
  int reg = -1;
  unsigned regBits = 0;      // Register: its width as named (%al 8, %eax 32, %xmm 128, %ymm 256, %st 80)
  unsigned bits = 0;         // how much the instruction reads or writes (addsd's %xmm: 64); Address: 0
  Type type = Type::None;    // its elements' type, and
  unsigned elementBits = 0;  // their width, and
  unsigned elements = 0;     // how many (addsd's %xmm: 1 Float64; addpd's: 2)
  bool read = false, write = false;
  bool implicit = false;     // not encoded as an operand (shl's 1, mul's %rdx, push's slot)
  bool hidden = false;       // not among the text's operands either (mul's %rdx, push's slot, movs'
                             // operands; an AVX-512 write mask, which the text writes as {%k1})
  int memIndex = -1;         // Memory: which memOperand(k) it is
  MemoryOperand mem;         // Memory and Address: the parts (Address: size 0, neither read nor written)
};

// Status flags, as bits of Inst::flagsRead / flagsWritten.
inline constexpr unsigned kCF = 1, kPF = 2, kAF = 4, kZF = 8, kSF = 16, kOF = 32;

class Inst {
 public:
  explicit Inst(const detail::InstData* d = nullptr) : d_(d) {}
  explicit operator bool() const { return d_ != nullptr; }
  bool operator==(const Inst& o) const { return d_ == o.d_; }

  uint64_t pc() const;           // original address
  unsigned size() const;         // bytes
  std::string text() const;      // AT&T syntax, absolute branch targets
  std::string mnemonic() const;  // "mov", "jnz" ...
  InstClass kind() const;
  bool isCondBranch() const { return kind() == InstClass::CondBranch; }
  bool isCall() const { return kind() == InstClass::Call || kind() == InstClass::IndirectCall; }
  bool isReturn() const { return kind() == InstClass::Return; }
  bool isJump() const { return kind() == InstClass::Jump || kind() == InstClass::IndirectJump; }
  bool isBranch() const { return kind() != InstClass::Other; }  // any control transfer
  // Memory operands in Zydis' order (explicit first, then implicit ones such
  // as the stack slot of push/pop/call/ret and string instructions' rsi/rdi).
  // lea and nop-with-memory-operand access no memory and have none.
  unsigned memOperandCount() const;
  // Reads / writes memory through some operand, as the instruction's
  // operands say: a prefetch (and clflush & co.) counts as a load here,
  // though no data moves; isCacheControl() tells them apart (the cache and
  // cachesim tools leave them out, as Valgrind does).
  bool isLoad() const;
  bool isStore() const;
  unsigned accessSize(unsigned operand = 0) const;  // bytes
  MemoryOperand memOperand(unsigned operand = 0) const;  // its parts
  // Every operand (Operand above), hidden ones included.
  unsigned operandCount() const;
  Operand operand(unsigned k) const;
  // The status flags it reads, and those it writes (always or maybe: a
  // shift by %cl, a rep-prefixed string instruction), as kCF ... kOF bits;
  // flagsMaybeWritten() those of flagsWritten() it may also leave alone.
  unsigned flagsRead() const;
  unsigned flagsWritten() const;
  unsigned flagsMaybeWritten() const;
  // The status flags some instruction may read after this one, on any path,
  // before they are written again (what atomx itself keeps around inserted
  // code, analysis/FlagsLiveness.h).  The ABI passes no flag to a callee or
  // back from one: none are live at a return, and a call kills them all, as
  // a tail call does (a jump to another procedure's entry or to an imported
  // function, an indirect jump that is no jump table); all six where control
  // leaves the procedure otherwise (into a .cold part, the middle of
  // another procedure).  A flag written only maybe stays live.
  unsigned flagsLiveAfter() const;
  // jcc, setcc, cmovcc, fcmovcc: the condition it tests, 0..15 in Intel's
  // encoding (0 o, 1 no, 2 b, 3 ae, 4 e, 5 ne, 6 be, 7 a, 8 s, 9 ns, 10 p,
  // 11 np, 12 l, 13 ge, 14 le, 15 g; fcmovu is 10 and fcmovnu 11); -1 for
  // any other instruction.
  int condition() const;
  // An SSE/AVX instruction that works on one element of a vector register
  // (addsd, vaddss, cvtsi2sd, cvttsd2si, ucomisd, movsd, movlpd, movd,
  // movq) rather than on a whole vector (addpd, pxor, punpcklbw, pinsrw,
  // pmovmskb); false for any other instruction.
  bool isScalarVector() const;
  // A rep, repe or repne prefix repeats it (a string instruction, %rcx
  // times at most; "rep movsb", "repe cmpsb" in text()).
  bool isRepeated() const;
  // Of those, a compare (cmps, scas), which repe and repne also stop on ZF.
  bool isRepeatedWhile() const;
  // Of those, a repne (repnz) one, which stops once ZF is set ("repne
  // scasb"); the others are repe (repz), which stop once it is clear.
  bool isRepeatedWhileNotEqual() const;
  // Atomic: a lock prefix ("lock xadd", "lock cmpxchg" in text()), or xchg
  // with a memory operand, which the CPU locks without one.
  bool isLocked() const;
  // cmpxchg, cmpxchg8b, cmpxchg16b, locked or not.
  bool isCompareExchange() const;
  // A prefetch, or a cache-line flush or write-back (clflush, clflushopt,
  // clwb): its memory operand names a cache line, and no data moves.
  bool isCacheControl() const;
  bool hasTarget() const;  // a direct branch
  uint64_t target() const; // its original target address
  // The procedure or imported function a direct call or jump (a tail call
  // too) goes to: "main", "malloc" (for malloc@plt, without "@plt"), also
  // through the GOT (`call *malloc@GOTPCREL(%rip)`, -fno-plt).  "" for
  // other indirect transfers and for instructions that transfer nowhere.
  std::string calleeName() const;
  // Zydis' instruction category without its prefix: "BINARY", "LOGICAL",
  // "DATAXFER", "COND_BR", "UNCOND_BR", "CALL", "RET", "PUSH", "POP",
  // "CMOV", "SETCC", "SHIFT", "STRINGOP", "SSE", "AVX", "AVX512",
  // "X87_ALU", "NOP", ...
  std::string category() const;
  // Registers read and written, as RegSet bits (regBit, kFlagsBit,
  // vectorRegBit below): explicit and implicit operands, and for reads the
  // base and index registers of memory operands.
  uint64_t regsRead() const;
  uint64_t regsWritten() const;
  // The source line from DWARF .debug_line: the file as the line table
  // names it; {"", 0} when the program has no line for this instruction.
  struct SourceLine {
    std::string file;
    unsigned line = 0;
  };
  SourceLine sourceLine() const;

  // Its number among all instructions atomx instruments, from 0, in
  // program order: the id <atomx/facts.h> looks it up by (embedFacts).
  size_t id() const;
  Inst next() const;  // within the block; null after the last
  Inst prev() const;
  Block block() const;
  Proc proc() const;
  const detail::InstData* handle() const { return d_; }

 private:
  const detail::InstData* d_;
};

class Block {
 public:
  explicit Block(const detail::BlockData* d = nullptr) : d_(d) {}
  explicit operator bool() const { return d_ != nullptr; }
  bool operator==(const Block& o) const { return d_ == o.d_; }
  uint64_t pc() const;
  uint64_t endPc() const;  // after the last byte
  Range<Inst, detail::InstData> insts() const;
  Inst first() const;
  Inst last() const;
  Range<Edge, detail::EdgeData> succs() const;
  Block next() const;  // in address order within the procedure; null after the last
  Proc proc() const;
  size_t id() const;   // its number among all blocks, from 0, in program order (<atomx/facts.h>)
  const detail::BlockData* handle() const { return d_; }

 private:
  const detail::BlockData* d_;
};

enum class EdgeKind { FallThrough, Taken, JumpTable };

// A CFG edge: control passes from one block to another.
class Edge {
 public:
  explicit Edge(const detail::EdgeData* d = nullptr) : d_(d) {}
  Block from() const;
  Block to() const;
  EdgeKind kind() const;
  const detail::EdgeData* handle() const { return d_; }

 private:
  const detail::EdgeData* d_;
};

class Proc {
 public:
  explicit Proc(const detail::ProcData* d = nullptr) : d_(d) {}
  explicit operator bool() const { return d_ != nullptr; }
  bool operator==(const Proc& o) const { return d_ == o.d_; }
  std::string_view name() const;
  uint64_t pc() const;
  uint64_t endPc() const;
  size_t id() const;  // its number among all procedures, from 0, in address order (<atomx/facts.h>)
  Range<Block, detail::BlockData> blocks() const;
  Block entry() const;
  Proc next() const;  // null after the last
  const detail::ProcData* handle() const { return d_; }

 private:
  const detail::ProcData* d_;
};

// The program being instrumented: every procedure atomx can instrument
// (those it moves), in address order.
class Program {
 public:
  Range<Proc, detail::ProcData> procs() const;
  std::string_view path() const;  // the input file
  // The procedure containing an original address, or null.
  Proc procAt(uint64_t pc) const;
};
Program program();

// Puts what atomx knows of every procedure, block and instruction it
// instruments (names, original addresses, instruction facts, source
// lines) into the instrumented file, for the tool's analysis code to look
// up by Proc::id(), Block::id() and Inst::id() (<atomx/facts.h>) instead of
// passing them as arguments.  FactsDetail::Operands adds every operand of
// every instruction (AtomxOperand: Inst::operand's answers), for analysis
// that derives what instructions do from their operands (the ease tool):
// about 30 bytes per operand more, so only a tool that reads them asks.
enum class FactsDetail { Instructions, Operands };
void embedFacts(FactsDetail detail = FactsDetail::Instructions);

// One argument of an inserted call.  Integers become constants; the helpers
// below compute values at run time.
class Arg {
 public:
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Arg(T value) : Arg(Kind::Constant, int64_t(value)) {}
  Arg(const char* text);  // a NUL-terminated copy, passed as const char*
  Arg(const std::string& text) : Arg(text.c_str()) {}
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Arg(const std::vector<T>& array) : Arg(array.data(), sizeof(T), array.size()) {}

  // Which value; public so the C API can build arguments too.
  enum class Kind : uint8_t {
    Constant, String, Array, PC, BranchCondition, BranchTarget, EffectiveAddress, AccessSize,
    Register, ProcArg, ReturnValue, ThreadId, Counters,
  };
  Arg(Kind kind, int64_t value = 0) : kind_(kind), value_(value) {}
  Arg(const void* data, size_t elementSize, size_t count);  // an array of constants, copied
  Kind kind() const { return kind_; }
  int64_t value() const { return value_; }
  const std::string& bytes() const { return bytes_; }
  unsigned elementSize() const { return elementSize_; }

 private:
  Kind kind_;
  int64_t value_ = 0;
  std::string bytes_;  // string (with its NUL) or array contents
  unsigned elementSize_ = 0;
};

inline Arg pc() { return Arg(Arg::Kind::PC); }                           // the point's original address
inline Arg branchCondition() { return Arg(Arg::Kind::BranchCondition); } // 1 if the branch will be taken, else 0
inline Arg branchTarget() { return Arg(Arg::Kind::BranchTarget); }       // original address control goes to if taken
inline Arg effectiveAddress(unsigned operand = 0) { return Arg(Arg::Kind::EffectiveAddress, operand); }
inline Arg accessSize(unsigned operand = 0) { return Arg(Arg::Kind::AccessSize, operand); }
inline Arg reg(Reg r) { return Arg(Arg::Kind::Register, int64_t(r)); }  // value as the program sees it
inline Arg procArg(unsigned n) { return Arg(Arg::Kind::ProcArg, n); }    // at ProcBefore: integer argument n (0-based)
inline Arg returnValue() { return Arg(Arg::Kind::ReturnValue); }         // at ProcAfter: %rax
inline Arg threadId() { return Arg(Arg::Kind::ThreadId); }               // the kernel thread id (gettid)

// Where a call goes.  Before/After of an instruction, block or procedure;
// on an edge; once at program start or end.
enum class Point { InstBefore, InstAfter, BlockBefore, BlockAfter, ProcBefore, ProcAfter, Edge, ProgramBefore, ProgramAfter };

// Counters: an array of 64-bit counters in the instrumented program's own
// memory, zero at start, that inline code increments where the tool says.
// No call, no saved state: a few bytes of code per place (the flags are
// kept only where the program still needs them), so counting every block
// costs a fraction of what a call per block does.  Pass the array to an
// analysis routine as a `long*` (or `unsigned long*`) parameter, typically
// at program end:
//
//     Counters blocks;
//     blocks.increment(b, k);                      // at the start of block b: ++blocks[k]
//     report.atProgramEnd(blocks, blocks.size());  // "Report(long*, long)"
//
// Counts are exact.  In a program that may run threads (it imports
// pthread_create or another way to start one, docs/instrumenting.md) each
// thread increments its own copy of the counters through %gs, with a plain
// `inc`, and the copies are added up at exit; where the program uses %gs
// itself the increments are atomic (`lock inc`); otherwise plain.
// `atomx --counters plain|atomic|per-thread` chooses (the summary line
// says which was used and why).  Several increments at one
// place run before the calls there, in the order they were added.
//
// What a tool wants is usually how often each block ran, or each edge was
// taken, at the end.  count() says so, and atomx measures it from the
// fewest increments (a spanning tree's chords, analysis/CounterPlacement.h:
// a fraction of the blocks, and mostly not the hot ones), deriving every
// other count when the program ends, before the tool's ProgramAfter calls:
//
//     blocks.count(b, k);  // when ProgramAfter runs: blocks[k] = how often b ran
//
// During the run such a counter stays 0.  Exact as increments are, except
// where a block starts but never ends: a fault, or a signal handler that
// does not return (docs/instrumenting.md).
// A test of a memory operand's effective address, for Counters::incrementIf:
// true when (address mod modulus) > above, modulus a power of two up to 4096.
struct AddressTest {
  unsigned operand = 0;  // memory operand, as effectiveAddress(k) counts them
  uint32_t modulus = 1;
  uint32_t above = 0;
};
// Not a multiple of `alignment`.
inline AddressTest misaligned(unsigned operand, uint32_t alignment) { return {operand, alignment, 0}; }
// An access of `size` bytes that spans two `line`-byte lines (size <= line).
inline AddressTest crossesLine(unsigned operand, uint32_t size, uint32_t line) { return {operand, line, line - size}; }

class Counters {
 public:
  // At least `count` counters; the array grows to hold every counter an
  // increment names.
  explicit Counters(size_t count = 0);
  size_t size() const;
  void reserve(size_t count) const;  // at least `count` counters from now on
  void increment(Inst i, size_t k) const { add(Point::InstBefore, i.handle(), k); }   // before instruction i
  void increment(Block b, size_t k) const { add(Point::BlockBefore, b.handle(), k); } // when block b starts
  void increment(Edge e, size_t k) const { add(Point::Edge, e.handle(), k); }         // when control takes edge e
  // Before instruction i, when its effective address passes the test (the
  // address as the instruction computes it, as effectiveAddress() gives it;
  // not for rep-prefixed string instructions, which may access nothing).
  void incrementIf(Inst i, AddressTest test, size_t k) const;
  // When control takes edge e, the outcome `taken` of a branch goes to a
  // 2-bit saturating-counter predictor, inline: counter `state` holds its
  // state XOR 1 (states 0..3, predicting taken at 2 and above; a counter
  // starts at 0, so the predictor starts at state 1, weakly not taken), the
  // state moves one step toward the outcome, and counter `miss` counts the
  // outcomes it did not predict.
  // Under threads the counts stay exact; with per-thread counters (atomx
  // --counters, the default for a threaded program) each thread has a
  // predictor of its own, as each core would, and `state` read at program
  // end is meaningless (the threads' states added up); with atomic ones the
  // miss count is a locked add and the state a plain load and store, one
  // predictor shared by the threads.  A state only the edges out of one
  // block update may live in a register while a loop around that block
  // runs (not with atomic counters): `state` holds it from the loop's exit
  // on, and what is counted is the same.
  void predict(Edge e, size_t state, size_t miss, bool taken) const;
  // At ProgramAfter, counter k holds how often block b ran, or edge e was
  // taken, measured from the fewest increments (see above).  A counter is
  // either counted or incremented, not both.  -1 for the rare edge no
  // counter can see alone: a jump-table edge to a block that another jump
  // table of the procedure also reaches (its stub sees both; every block
  // count is still known).
  void count(Block b, size_t k) const;
  void count(Edge e, size_t k) const;
  operator Arg() const { return Arg(Arg::Kind::Counters, int64_t(id_)); }             // the array, as a long*

  void add(Point point, const void* where, size_t k) const;

 private:
  uint32_t id_ = 0;
};

// A call made only when an inline test fails (Routine::beforeUnless):
// "is this reference a hit on the most recent line of its set?", for a
// cache whose geometry the analysis code learns only when the program
// starts.  The test reads an MruDescriptor, kWords 64-bit words in the
// program's own memory that are zero at start and that the analysis code
// fills at ProgramBefore (pass the descriptor as a `long*` argument):
//
//   d[0]  an offset from the thread pointer (%fs:0) of an int64_t that is
//         thread-local (initial-exec TLS) in the analysis object: the
//         running thread's table is at d[1] + that value;
//   d[1]  the table base: a thread whose thread-local value is still 0
//         (one that has not run the analysis code yet) uses it;
//   d[2]  (sets - 1) << log2(line): the set's byte offset in the table, a
//         table entry per set every `line` bytes (line >= 8);
//   d[3]  ~(line - 1);
//   d[4]  the load bias added to a block's original pc (mruHitBlock).
//
// With E = d[1] + tls(d[0]) + (A & d[2]) (the slot of A's set) and
// L = (A + size - 1) & d[3] (the line of A's last byte), a reference of
// `size` bytes at address A passes when
//     E[0] == L, or
//     E[1] == L, and then the two words are swapped (E[0] = L, E[1] = the old E[0]).
// The analysis keeps in E[0] the address of the set's most recent line
// and in E[1] its second most recent (a value no line address has, such
// as 1, where it keeps none: in E[1] when it cannot follow the swap), and
// the test then passes exactly for a reference within one line that is
// one of the two most recent of its set, which it leaves the most recent
// -- what an LRU cache does on that hit (with two sets or more: a
// reference that crosses into the next line looks up the wrong set).  E[1]
// must be readable for every set, the last one's too.  The swap is two
// stores: a signal handler that runs between them and references the
// same set finds the older line missing from it.  A descriptor still all
// zero fails every test (the word at %fs:0 is the thread pointer itself,
// never 0), and so does one the analysis leaves zero on purpose when a run
// cannot use the test.
class MruDescriptor {
 public:
  static constexpr size_t kWords = 5;
  MruDescriptor();
  operator Arg() const { return Arg(Arg::Kind::Counters, int64_t(words_)); }  // the words, as a long*
  uint32_t id() const { return words_; }

 private:
  uint32_t words_ = 0;  // an array of the program's zeroed memory (as a Counters array is)
};
// One reference an MruTest checks.
struct MruTest {
  enum class Address : uint8_t {
    Operand,  // memory operand `operand` of the instruction (as effectiveAddress(k))
    Parts,    // disp + base + index * scale, from the registers' values before the instruction
    Block,    // bytes of the block: its original pc + disp + d[4], `size` of them (0: to its end)
  };
  uint32_t descriptor = 0;
  Address address = Address::Operand;
  unsigned operand = 0;
  int base = -1, index = -1;  // Parts: general registers (Reg numbers, not %rsp as index), -1 none
  unsigned scale = 1;
  int64_t disp = 0;
  uint32_t size = 1;  // bytes (1 to 4096)
};
inline MruTest mruHit(const MruDescriptor& d, unsigned operand, uint32_t size) {
  return {d.id(), MruTest::Address::Operand, operand, -1, -1, 1, 0, size};
}
inline MruTest mruHitAt(const MruDescriptor& d, int base, int index, unsigned scale, int64_t disp, uint32_t size) {
  return {d.id(), MruTest::Address::Parts, 0, base, index, scale, disp, size};
}
// The whole block; or `size` bytes at `offset` from its start (a block
// that may span two lines of the run's cache: its first byte and its last,
// when every line of the descriptor's cache is at least as long as the block).
inline MruTest mruHitBlock(const MruDescriptor& d, uint32_t offset = 0, uint32_t size = 0) {
  return {d.id(), MruTest::Address::Block, 0, -1, -1, 1, int64_t(offset), size};
}

// An analysis routine with its prototype, C syntax:
//   "CondBranch(int, VALUE)", "Access(void*, unsigned long)", "Report(const char*, long[])".
// Parameter types: integer types, pointers, VALUE and REGV (ATOM's: a
// run-time value and a register's contents).  At most 16 parameters.
class Routine {
 public:
  explicit Routine(std::string_view prototype);
  // A routine declared before, by name.
  static Routine named(std::string_view name);
  std::string_view name() const;

  template <class... A> void before(Inst i, A&&... a) const { add(Point::InstBefore, i.handle(), {Arg(std::forward<A>(a))...}); }
  template <class... A> void after(Inst i, A&&... a) const { add(Point::InstAfter, i.handle(), {Arg(std::forward<A>(a))...}); }
  template <class... A> void before(Block b, A&&... a) const { add(Point::BlockBefore, b.handle(), {Arg(std::forward<A>(a))...}); }
  template <class... A> void after(Block b, A&&... a) const { add(Point::BlockAfter, b.handle(), {Arg(std::forward<A>(a))...}); }
  template <class... A> void before(Proc p, A&&... a) const { add(Point::ProcBefore, p.handle(), {Arg(std::forward<A>(a))...}); }
  template <class... A> void after(Proc p, A&&... a) const { add(Point::ProcAfter, p.handle(), {Arg(std::forward<A>(a))...}); }
  template <class... A> void on(Edge e, A&&... a) const { add(Point::Edge, e.handle(), {Arg(std::forward<A>(a))...}); }
  template <class... A> void atProgramStart(A&&... a) const { add(Point::ProgramBefore, nullptr, {Arg(std::forward<A>(a))...}); }
  template <class... A> void atProgramEnd(A&&... a) const { add(Point::ProgramAfter, nullptr, {Arg(std::forward<A>(a))...}); }

  // The call runs only when one of `tests` fails (MruTest above), before
  // instruction i (Operand and Parts tests) or when block b starts (a Block
  // test).  The tests run inline, with no call: scratch registers (dead
  // ones where there are), and the status flags kept only where live.  At
  // one place such calls run after the place's other calls and counter
  // increments, each with its own tests, in the order added (block calls
  // before instruction calls).  Not at a rep-prefixed instruction.
  template <class... A> void beforeUnless(Inst i, std::vector<MruTest> tests, A&&... a) const {
    addUnless(Point::InstBefore, i.handle(), std::move(tests), {Arg(std::forward<A>(a))...});
  }
  template <class... A> void beforeUnless(Block b, MruTest test, A&&... a) const {
    addUnless(Point::BlockBefore, b.handle(), {test}, {Arg(std::forward<A>(a))...});
  }
  void addUnless(Point point, const void* where, std::vector<MruTest> tests, std::vector<Arg> args) const;

  // The untyped form, for layers built on this one (the ATOM C API).
  void add(Point point, const void* where, std::vector<Arg> args) const;

 private:
  Routine() = default;
  uint32_t id_ = 0;
};

// Helpers for tools.
//
// demangle(symbol): include/atomx/demangle.hpp.

// Appends `s` and a NUL to `table`: many strings in one `char[]` argument,
// which the analysis side splits again (atomx::splitStrings, report.hpp).
inline void appendString(std::vector<char>& table, std::string_view s) {
  table.insert(table.end(), s.begin(), s.end());
  table.push_back('\0');
}

// The number `text` given to a tool's `option`, from lo to hi; otherwise an
// Error naming the tool ("cache: --top needs a number >= 0, not 'many'").
// `text` null: the value is missing.
inline long optionNumber(std::string_view tool, std::string_view option, const char* text, long lo = 0,
                         long hi = LONG_MAX) {
  char* end = nullptr;
  const long v = text ? std::strtol(text, &end, 10) : 0;
  if (text && *text && !*end && v >= lo && v <= hi) return v;
  std::string range = hi == LONG_MAX ? ">= " + std::to_string(lo) : "from " + std::to_string(lo) + " to " + std::to_string(hi);
  throw Error(std::string(tool) + ": " + std::string(option) + " needs a number " + range +
              (text ? ", not '" + std::string(text) + "'" : ""));
}

}  // namespace atomx
