// Melting: the instruction sequences that make up most of a run, mined from
// its regenerated trace (`atomx trace`, include/atomx/trace.hpp).  Wang and
// Chiu's method ("Extracting Frequent-Instruction Sequences from a Program
// Trace", its "Melting"), and an exact one that
// needs no threshold.  docs/melting.md explains both and the report.
//
// The input is each thread's executed instruction sequence, in order.  A
// thread's end and a call to code outside the trace (a shared library, a
// call through a pointer: `TID call NAME` in `atomx regen`) cut it into
// *segments*: no sequence spans a cut, since what ran in between is not in
// the trace.  Blocks a forked child inherited from its parent are its
// parent's, counted there only (as `atomx regen` prints them).
//
// Instruction identity (Identity): by address (the same static instruction,
// the default), or by text: the same disassembly wherever it is, as the
// seed's Table 1 counts them.  The text is AT&T syntax decoded as if the
// instruction were at address 0, so a relative branch or a RIP-relative
// operand reads as its displacement (the seed's `beq 0x1c`), not its target.
//
// The seed's method (mineSeed):
//   1. coverage: executions per instruction, sorted: the histogram;
//   2. threshold T: given, or the knee (kneeRank): with the sorted counts
//      c_1 >= ... >= c_m and N = their sum, the curve (i/m, (c_1+..+c_i)/N)
//      runs from (0,0) to (1,1); the knee is its point farthest from that
//      chord.  There the slope c_i*m/N falls through 1, so T is the count of
//      the last instruction executed at least as often as the average one;
//   3. melting: every instruction executed fewer than T times is dropped,
//      and the segments fall apart into chunks (maximal runs of the kept);
//   4. the distinct chunks, with how often each occurs;
//   5. each distinct chunk parsed: it is cyclic when every instruction in it
//      recurs at one interval p, its smallest period, at least twice
//      (chunk = u u ... u u', u' a prefix of u); then u is the sequence,
//      occurring floor(|chunk|/p) times per chunk.  A chunk that is not
//      cyclic is itself a sequence, occurring once per chunk.  Sequences are
//      summed over the chunks they come from.  Chunks and sequences are told
//      apart by a 128-bit hash of their instructions (memory: a few dozen
//      bytes per distinct chunk), and ranked by coverage, then length, then
//      which was seen first; the top ones' instructions are those kept while
//      counting (up to `seedBudget` bytes), else fetched by melting again.
//
// The exact method (mineExact), no threshold: every sequence of whole
// consecutive blocks in a segment, at most `maxLength` instructions long, is
// a candidate.  Its occurrences are the non-overlapping ones, counted left to
// right in each thread (summed over threads); its coverage is length x
// occurrences.  The top `top` by coverage are reported, skipping:
//   - a sequence that occurs once;
//   - a power v v ... v of a shorter sequence v (v covers as much);
//   - a sequence explained by one reported before it, r: one that occurs at
//     m > 0 places in r read cyclically (a factor of r r starting in r, as a
//     rotation of r is), and at most 2 x m x r's occurrences times (so at
//     least half of its occurrences can lie inside r's: the rotations and
//     pieces of a loop body reported already, or of one path through it).
//   These rules choose what is listed; they change no count.
// One pass over the trace, streaming: a trie of the distinct candidates
// (each node a candidate: parent, last block, occurrences, where its last
// counted occurrence ends), walked from each block position.  Memory grows
// with the distinct candidates, not with the trace.  The candidates split
// by their first block into `threads` tries, each mined by its own thread
// from the same stream of blocks; the answer does not depend on the split
// (ties are broken by length, then by where a candidate first occurred).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace atomx::trace {
struct Progress;
}

namespace atomx::melt {

enum class Identity { Address, Text };

struct Options {
  std::string program;     // the traced program's file if not the trace's (TraceReader)
  trace::Progress* progress = nullptr;  // how far each pass over the trace is, or none
  Identity identity = Identity::Address;
  bool seed = true;
  bool exact = true;
  uint64_t threshold = 0;  // the seed's threshold; 0: the knee
  size_t top = 10;         // sequences reported per method
  unsigned maxLength = 64; // the exact method's longest candidate, instructions
  size_t topChunks = 10;   // distinct chunks listed (the seed's step 4)
  uint64_t seedBudget = 64 << 20;  // bytes of chunk contents the seed's method keeps while counting
  unsigned threads = 2;    // the exact method's miner threads, each a part of the candidates (0: none, inline)
};

// One distinct instruction (by the chosen identity).
struct Instruction {
  uint64_t pc = 0;         // its address; by text, the first one executed
  uint64_t executions = 0;
  std::string procedure;   // of `pc`
  std::string text;        // disassembly at `pc`
};

// A sequence's static share (the seed's "11 of enqueue's 83 instructions,
// 1.51% of the program"): its distinct instructions (by address) in each
// procedure it runs through, against that procedure's instructions, and in
// all against the program's.
struct StaticShare {
  std::string procedure;
  uint64_t instructions = 0;   // of the sequence, in this procedure
  uint64_t procedureSize = 0;  // the procedure's instructions
};

struct Sequence {
  std::vector<uint32_t> insns;  // indices into Report::instructions, in order
  std::vector<uint64_t> pcs;    // original addresses in order (by text: of its first occurrence)
  std::vector<std::string> procedures;  // of each pc
  uint64_t occurrences = 0;
  uint64_t coverage() const { return occurrences * insns.size(); }
  bool cyclic = false;          // seed: found as the period of a cyclic chunk
  uint64_t chunks = 0;          // seed: distinct chunks it came from
  std::vector<StaticShare> staticShares;  // per procedure, in the order first reached
  uint64_t staticInstructions = 0;        // distinct addresses of the sequence
};

// One row of the seed's parse of a chunk (its Table 2): a distinct
// instruction, by its first position j (1-based) in the chunk, how often it
// occurs there (COUNT), and the distances between its consecutive
// occurrences, each distinct distance once in the order first seen
// (PS.INTERVAL: "8, 3" for positions 1, 9, 12, 20, 23).
struct IntervalRow {
  size_t first = 0;   // j
  uint32_t insn = 0;  // PS.INS
  uint64_t count = 0;  // COUNT
  std::vector<size_t> intervals;  // PS.INTERVAL
};
std::vector<IntervalRow> intervalTable(const std::vector<uint32_t>& chunk);

struct Chunk {
  std::vector<uint32_t> insns;
  uint64_t count = 0;
  size_t period = 0;  // smallest period; cyclic when 2*period <= length
  std::vector<IntervalRow> intervals;  // the seed's parse of it (intervalTable)
};


struct SeedResult {
  uint64_t threshold = 0;
  bool automatic = false;
  size_t kneeRank = 0;             // 1-based rank of the knee (automatic), else of the last kept
  uint64_t keptInstructions = 0;   // executed instructions at or above the threshold
  uint64_t chunks = 0, distinctChunks = 0, smallestChunk = 0, largestChunk = 0;
  std::vector<Chunk> topChunks;    // by length x count
  std::vector<Sequence> sequences; // by coverage, at most Options::top
  uint64_t sequencesFound = 0;     // before the cut to `top`
};

struct ExactResult {
  unsigned maxLength = 0;
  uint64_t candidates = 0;         // distinct candidate sequences (trie nodes)
  std::vector<Sequence> sequences; // by coverage, at most Options::top
};

struct Report {
  std::string program;
  Identity identity = Identity::Address;
  uint64_t executed = 0, threads = 0, segments = 0, blocks = 0;
  uint64_t incompleteThreads = 0;  // regenerated up to a problem (mined as far as they go)
  uint64_t programInstructions = 0;  // every procedure's instructions (static shares)
  std::vector<Instruction> instructions;  // by executions, most first
  bool seedRun = false, exactRun = false;
  SeedResult seed;
  ExactResult exact;
};

// The knee of counts sorted most first (see above): its 1-based rank; 0
// for no counts.
size_t kneeRank(const std::vector<uint64_t>& sortedCounts);

// Smallest period of s (KMP failure function): s[i] == s[i+p] for all i.
size_t smallestPeriod(const std::vector<uint32_t>& s);

// Regenerates the trace in `dir` (once for the coverage and the exact
// method, once more for the seed's melting and, when the top chunks'
// instructions were not all kept, once more to fetch them; by text once
// more to find where each reported sequence first ran) and mines it.  Throws
// atomx::Error when the trace cannot be read.
Report mine(const std::string& dir, const Options& options);

}  // namespace atomx::melt
