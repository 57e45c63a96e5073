// Reading an abstract-execution trace (`atomx trace -o DIR -- PROG ...`):
// the exact sequence of instructions each thread executed in the traced
// program's own code, regenerated from the witnesses the program wrote and
// from the program file itself (docs/trace.md).  This is what `atomx regen`
// prints, and what an offline analyser (a cache simulator, a frequency
// miner) consumes:
//
//   struct Count : atomx::trace::Consumer {
//     uint64_t n = 0;
//     void block(const atomx::trace::BlockRun& b) override { n += b.count; }
//   } c;
//   atomx::trace::regenerate("run.trace", c);
//
// Calls into code outside the trace (shared libraries, procedures atomx
// left in place) are one event each; their instructions are not in it.
#pragma once

#include <cstddef>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace atomx::trace {

struct Instruction {
  uint64_t pc;      // original address in the program file
  uint8_t length;   // bytes
};

// A data reference (a trace recorded with data, TraceReader::hasData()):
// one memory access of an instruction of the program's own code, every
// explicit and implicit operand (push, pop, call, ret, leave, string
// instructions once per iteration), at its run-time address, in the order
// the instruction makes them (reads before writes; a `rep` instruction
// iteration by iteration, each iteration's read before its write).  An
// operand read and written by one instruction (add %eax,(%rdi)) is one
// reference of kind Modify, as lackey's `M`; `locked`: a locked
// read-modify-write (lock add, xchg with memory), which Valgrind counts as
// two reads.  Library references (LibraryCall) are the modelled accesses
// of a call into libc's memory and string functions (libc_model.hpp).
enum RefKind : uint8_t { kRead = 1, kWrite = 2, kModify = 3 };  // kModify == kRead | kWrite
struct DataRef {
  uint64_t address;
  uint32_t insn;   // the instruction's index in its BlockRun::insns (0 for a library reference)
  uint16_t size;   // bytes
  uint8_t kind;    // RefKind
  bool locked;
};

// One executed basic block: `count` instructions from `insns`, in order
// (none when its first instruction faulted: the block was entered).
struct BlockRun {
  int thread;
  uint64_t start;
  const Instruction* insns;
  size_t count;
  const char* procedure;  // the procedure's symbol
  // In a forked child's stream: the block ran in its parent, before the
  // fork (a child's stream holds its parent's path up to the fork).
  bool inherited;
  // The rest of a block a signal interrupted (the run before the signal
  // held its first instructions); `insns` starts where it goes on.
  bool continued = false;
  // Its instructions' data references, in execution order (none in a trace
  // recorded without data).
  const DataRef* refs = nullptr;
  size_t refCount = 0;
  // The thread's stream position (bytes from its stream's start) before its
  // first instruction, and after its last: they differ by the witness the
  // recorder stores before a block's last instruction (a return, a jump
  // out), and in a trace with data by the values read among its
  // instructions.  What the schedule log's switch points are placed by.
  uint64_t streamPos = 0, streamEnd = 0;
  // Which of the trace's programs ran it (TraceReader::programs(): 0 the
  // manifest's first): a workload's trace holds several, and `start`,
  // `insns` and `procedure` are that program's.
  size_t program = 0;
};

// A call from the trace into one of libc's memory and string functions
// (memcpy, memset, strlen, ... : include/atomx/libc_model.hpp), in a trace
// recorded with data: the references the function makes, modelled from the
// call's recorded arguments, per cache line in the order the function's
// documented behaviour gives.  It follows the call's outsideCall event.
struct LibraryCall {
  int thread;
  uint64_t callSite;
  const char* function;  // "memcpy"
  const DataRef* refs;
  size_t refCount;
  bool inherited;        // as BlockRun's
  size_t program = 0;    // as BlockRun's: `callSite` is that program's
};

// A signal handler of the program ran in the thread while it was in
// traced code (include/atomx/trace_format.h, AtomxTraceMark): `returned`
// false, called before the instruction at `pc` ran (`faulted`: because it
// faulted; a faulting instruction is not counted as executed, as hardware
// does not retire it; it runs if the handler returns to it); true, the
// handler returned and the thread goes on at `pc`.  A handler that leaves
// by longjmp or ends the thread has no `returned` event.  Signals that come
// while the thread is outside the trace (in a library) have no event: the
// handler's own procedures start with an ENTRY as any callback does.
struct SignalEvent {
  int thread;
  int signo;
  uint64_t pc;
  bool returned;
  bool faulted;
  bool inherited;  // as BlockRun's
};

class Consumer {
 public:
  virtual ~Consumer() = default;
  virtual void threadBegin(int thread) {}
  // Right after threadBegin: the load bias of the program in the thread's
  // process.  An instruction's run-time address is its pc plus the bias (0
  // for a program that is not a PIE); data references' addresses are
  // run-time addresses already.
  virtual void loadBias(int thread, uint64_t bias) {}
  virtual void block(const BlockRun& run) {}
  // A call from the trace to code outside it; `name` as "puts@plt",
  // "puts@got" for a call (or jump) through its GOT slot (-fno-plt), or ""
  // for a call through another pointer (the callee's ENTRY follows when it
  // is traced code).
  virtual void outsideCall(int thread, uint64_t callSite, const std::string& name) {}
  virtual void libraryCall(const LibraryCall& call) {}
  virtual void signal(const SignalEvent& event) {}
  // `problem` is empty when the stream was regenerated to its end;
  // otherwise it says where and why regeneration stopped (a process killed
  // mid-chunk, a stream that does not fit the program).
  virtual void threadEnd(int thread, const std::string& problem) {}
  // Merged mode only (TraceReader::analyzeMerged): the events that follow,
  // up to the next slice, are a slice of the merged order -- a run of
  // `thread` between two cuts of the schedule -- that ran on `cpu`, from
  // the privileged schedule log (docs/trace.md, "The privileged schedule
  // log"): a slice that begins at one of the log's switch-ins is on its
  // CPU, one the sync points cut is on the CPU of the run it is in.  -1:
  // unknown (a trace without the log: every slice).  Never called outside
  // merged mode, where each thread's stream comes alone.
  virtual void slice(int thread, int cpu) {}
};

struct Summary {
  uint64_t threads = 0, blocks = 0, instructions = 0, outsideCalls = 0, streamBytes = 0;
  uint64_t incompleteThreads = 0;
  // Of the stream's records: witness values, and jump-table targets (the
  // rest of its bytes are tags).
  uint64_t witnesses = 0, tableTargets = 0;
  // Conditional branches whose way the regenerator computed instead of
  // reading a witness (evaluated predicates, in a trace with data).
  uint64_t evaluated = 0;
  // In a trace with data: data references regenerated (library ones
  // apart), and the recorded values they were computed from (registers
  // and addresses, eight bytes each) and their bytes.
  uint64_t dataRefs = 0, libraryRefs = 0, recordedValues = 0, valueBytes = 0;
  // Threads the event log has (a `thread` event) that left no stream, each
  // "thread TID (process PID): why"; those whose bytes are lost (their
  // process was killed before they filled a buffer or ended) also count in
  // incompleteThreads.  A thread started while its process was exiting
  // records nothing by design, and is not listed.
  std::vector<std::string> streamless;
  // Merged mode (TraceReader::analyzeMerged): the threads whose path the
  // schedule orders only in part, each "thread TID: why".
  std::vector<std::string> scheduleProblems;
  // Merged mode: what makes the order less exact than the log promises, the
  // whole output still written (the privileged log lacking switches the
  // kernel did not report).
  std::vector<std::string> scheduleWarnings;
};

// A procedure of the program whose instructions the trace does not hold
// (a call to it is an outside call), and why.
struct UntracedProcedure {
  std::string name;
  uint64_t start, end;
  std::string why;
  // Its program: 1 the manifest's first (the one `program` replaces), 2, 3,
  // ... a workload's further ones (docs/trace.md, "Tracing a whole workload").
  int programIndex = 1;
  std::string programFile;
};
// Every program's, the first's first.
std::vector<UntracedProcedure> untracedProcedures(const std::string& dir, const std::string& program = "");

// A process of a workload's trace that ran a program atomx did not trace:
// the supervisor's `untraced` events (its path, then its argv).
struct UntracedProcess {
  int pid;
  std::vector<std::string> words;
};
std::vector<UntracedProcess> untracedProcesses(const std::string& dir);

// The trace's event log (include/atomx/trace_format.h, ATOMX_TRACE_EVENTS):
// processes and threads starting and ending, fork, exec, in the order they
// happened (by time; lines of one process in the order it wrote them).
// Empty for a trace recorded without one.
struct Event {
  uint64_t ns;         // CLOCK_MONOTONIC
  int pid, thread;
  std::string kind;    // process, thread, stream, thread-end, fork, forked, exec, ...
  std::string detail;  // what it concerns: a pid, a stream's file, a path
};
std::vector<Event> events(const std::string& dir);

// How far a regeneration has come, for a progress line: the trace's
// stream files' bytes walked so far of all of them (a stream counts in
// proportion to how much of it was walked).  Written by the regenerating
// threads, read by any other.
struct Progress {
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> total{0};
};

// A trace opened once: its manifest read, its program file checked (size
// and hash) and analysed, its witness placement made and compared with the
// recorded one.  Regenerating it again (Melting does, up to four times)
// costs no second analysis.  Throws atomx::Error when the trace cannot be
// read or does not belong to the program file it names (changed since).
// An offline analyser that keeps state per thread plugs in through
// include/atomx/analyzer.hpp (TraceReader::analyze).
class Analyzer;
class TraceReader {
 public:
  // `program`: the program file to read instead of the one the manifest
  // names (a saved copy of the traced file after the original was rebuilt);
  // it must have the recorded size and hash.
  explicit TraceReader(const std::string& dir, const std::string& program = "");
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const std::string& dir() const;
  // Whether the trace was recorded with data (`atomx trace --data`): its
  // block runs carry their data references.
  bool hasData() const;
  const std::string& program() const;  // the program file read: the manifest's, or the one given
  // Every program of the trace, BlockRun::program's index: program()
  // first, then a workload's further programs (the manifest's
  // `program-K`, K = 2, 3, ...), their files' paths.
  std::vector<std::string> programs() const;
  // Every procedure of the program, traced or not: its name, its start and
  // its instruction count, as `atomx dump` shows them (static measurements:
  // a sequence's share of its procedure's and of the program's code).
  struct ProcedureSize {
    std::string name;
    uint64_t start = 0;
    uint64_t instructions = 0;
  };
  std::vector<ProcedureSize> procedures() const;
  // Every thread of the trace, one after another (by thread id), to one
  // consumer.
  Summary regenerate(Consumer& consumer, Progress* progress = nullptr) const;
  // Each analyser's shards (one per thread's stream), regenerated on up to
  // `jobs` threads at once (0: the machine's cores, at most 8), then merged
  // and reported in stream order: the results do not depend on `jobs`.
  Summary analyze(const std::vector<Analyzer*>& analyzers, unsigned jobs, Progress* progress = nullptr) const;
  // Merged mode (docs/trace.md, "Ordering threads and processes"): the
  // selected threads' events (all: both lists empty; else the threads
  // listed and every thread of the processes listed) in one order that
  // keeps each thread's own and the trace's schedule (the manifest's
  // `schedule`: its sync points), to one shard of each analyser
  // (Shard{0, 0, "merged", true}), which then merges that one shard and
  // reports.  A block cut by the schedule arrives in parts, each a run of
  // its own from its first instruction (not `continued`: that is a
  // signal's cut, whose rest a cache simulator does not fetch again);
  // a forked child's inherited events are left out (they are its
  // parent's); each slice's events follow a Consumer::slice event (its
  // thread and CPU).  Every selected stream is walked twice (once for its
  // cuts) and, the second time, all at once, each on a thread of its own.
  // `cpus` (empty: all): only the slices that ran on these CPUs
  // (Consumer::slice's; the others' events are left out, and a thread
  // none of whose slices is left has no events at all).
  struct Selection {
    std::vector<int> processes, threads;
    std::vector<int> cpus;
  };
  Summary analyzeMerged(const std::vector<Analyzer*>& analyzers, const Selection& select = {}) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// TraceReader(dir).regenerate(consumer).
Summary regenerate(const std::string& dir, Consumer& consumer);

}  // namespace atomx::trace
