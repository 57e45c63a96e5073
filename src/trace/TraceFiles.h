// The files of a trace directory (include/atomx/trace_format.h): the
// manifest, written by `atomx trace` before the program runs, and the
// per-thread streams, which the recorder writes and the regenerator reads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <atomx/trace_format.h>

#include "analysis/TracePlan.h"

namespace atomx::trace {

// A program of a workload's trace beyond the first (the manifest's
// `program-K` lines, K = 2, 3, ...: docs/trace.md "Tracing a whole workload").
struct ProgramFile {
  std::string path;
  uint64_t size = 0;
  uint64_t hash = 0;
  uint64_t placement = 0;
};

struct Manifest {
  uint32_t version = 0;
  std::string program;
  uint64_t programSize = 0;
  uint64_t programHash = 0;
  uint64_t placement = 0;
  uint64_t profile = 0;  // profileHash of the trace's profile file; 0: none
  bool data = false;     // recorded with data (the values data addresses are computed from)
  std::vector<ProgramFile> others;  // a workload's further programs: program 2, 3, ... (no profile)
  // How the threads are ordered against each other (ATOMX_TRACE_KEY_SCHEDULE):
  // "sync-points", "sync-points switches" (the privileged schedule log,
  // DIR/schedule, too), or "" (a trace from before there was one).
  std::string schedule = ATOMX_TRACE_SCHEDULE_SYNC_POINTS;
};

// FNV-1a (64 bits) of a file's bytes: ties a trace to its program.
uint64_t fileHash(const std::string& path);

void writeManifest(const std::string& dir, const Manifest& m);
// Throws atomx::Error when missing, malformed or of another version.
Manifest readManifest(const std::string& dir);

// The block counts that weighed the witness placement (atomx trace
// --profile), kept in the trace as `profile`: one `PC COUNT` line per block
// (hex, decimal), by address.  Throws atomx::Error when unreadable.
void writeProfile(const std::string& dir, const analysis::BlockProfile& profile);
analysis::BlockProfile readProfile(const std::string& dir);
// FNV-1a (64 bits) of the counts, by address; never 0.
uint64_t profileHash(const analysis::BlockProfile& profile);

// A signal mark (AtomxTraceMark), at its position in the whole stream.
struct SignalMark {
  uint64_t pos;
  uint16_t kind;   // ATOMX_TRACE_MARK_*
  uint16_t signo;
  uint64_t pc;
  // DELIVERED, FAULTED: the interrupted context's general registers (bit k
  // of regMask: regs[k] came with an ATOMX_TRACE_MARK_REGISTER mark).
  uint16_t regMask = 0;
  uint64_t regs[16] = {};
};

// A sync point's mark (ATOMX_TRACE_MARK_SYNC_ENTERED or _RETURNED), at its
// position in the whole stream: the walk never sees them (SyncPoints.h).
struct SyncMark {
  uint64_t pos;
  uint16_t kind;
  uint16_t call;  // ATOMX_SYNC_ID_* (<atomx/sync_calls.h>)
  uint64_t ns;    // CLOCK_MONOTONIC
  bool inherited = false;  // in a forked child's stream: its parent's, before the fork
};

struct Stream {
  int thread = 0;
  std::string name;            // thread.TID.axt, or thread.TID-K.axt
  std::string path;
  std::vector<uint8_t> bytes;  // the chunks' contents, in order
  std::vector<SignalMark> marks;  // the chunks' signal marks, in order
  std::vector<SyncMark> syncs;    // the chunks' sync-point marks, in order
  uint64_t chunks = 0;
  bool complete = false;       // the last chunk read is the thread's final one
  uint64_t childFrom = 0;      // a forked child's: where its own bytes begin (before: its parent's)
  std::string problem;         // why the stream ends early ("" when whole)
  size_t program = 0;          // its program: 0 the manifest's first, k its others[k - 1]
};
// Every thread.TID.axt (and thread.TID-K.axt: K-th program exec'd in the
// same thread) of `dir`, by thread id, not yet read (bytes empty).
std::vector<Stream> listStreams(const std::string& dir);
// Which program wrote each stream of a workload's trace (stream file ->
// 0 for the manifest's first, k for its others[k - 1]), from the event log
// in file order: a stream is its process's program at its `stream` line,
// as the supervisor's `program K` lines (driver/Workload.h) set it; 1 for
// a process no such line names (a trace of one program).
std::map<std::string, size_t> streamPrograms(const std::string& dir);
// Reads and decodes one listed stream's chunks into s.bytes.  A stream
// whose last chunk is cut short (the process was killed) keeps its whole
// chunks and says so in s.problem.
void readStream(Stream& s);
// Where each chunk of the stream file at `path` begins in the stream's
// bytes (Stream::bytes), by sequence number: from the chunks' headers
// alone, up to the first that is damaged or cut short.  The privileged
// schedule log gives positions as (chunk, offset).
std::vector<uint64_t> chunkStarts(const std::string& path);
// The threads of `dir`'s event log that left no stream (Summary::streamless,
// include/atomx/trace.hpp), and how many of them lost recorded bytes.
std::vector<std::string> streamlessThreads(const std::string& dir, uint64_t& lost);

}  // namespace atomx::trace
