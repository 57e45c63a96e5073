// Plan: where each call a tool added runs, as insertion sites.
//
// A site is one place in the new code: first its inline counter increments
// (atomx::Counters), then, if it has calls, one `enter` of the runtime that
// saves the application's state once, runs every call for that place in
// order through one generated body, and restores the state.  Sites sit before an
// instruction, after it, or in a procedure's tail as an edge stub (a taken
// edge or a jump-table edge is redirected through the stub, which then jumps
// on to the original target).  Plan::place() says what runs where.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "instrument/Engine.h"

namespace atomx::instrument {

// How inline counters are incremented (atomx --counters; Session decides):
//   Plain      `incq counter(%rip)`: the program starts no threads;
//   Atomic     `lock incq counter(%rip)`;
//   PerThread  `incq %gs:offset`: each thread has its own copy of the
//              counters, added up at ProgramAfter (runtime/abi.h); the
//              entry of every procedure outside code may call checks
//              first that the running thread has its copy.
enum class CounterMode { Plain, Atomic, PerThread };
const char* counterModeName(CounterMode mode);  // "plain", "atomic", "per-thread"

struct Site {
  std::vector<const IncrementRequest*> increments;  // inline, before the calls, in the order added
  std::vector<const StoreRequest*> stores;          // inline trace stores, after the increments
  ZydisRegister storeScratch = ZYDIS_REGISTER_NONE;  // dead here, for the stores' cursor (NONE: saved)
  ZydisRegister predictScratch = ZYDIS_REGISTER_NONE;  // dead here, for predictions' state (NONE: saved)
  // CounterMode::PerThread: a procedure's entry that outside code may call,
  // which first makes sure the thread has its counters; inline where the
  // flags are dead and checkScratch is, by a call to the runtime otherwise.
  bool threadCheck = false;
  ZydisRegister checkScratch = ZYDIS_REGISTER_NONE;
  std::vector<const CallRequest*> calls;  // in the order they run
  const ir::Procedure* proc = nullptr;    // null for program sites
  uint32_t insn = 0;        // the instruction the arguments are computed at
  bool afterInsn = false;   // the site runs after that instruction
  uint64_t pc = 0;          // what a PC argument gives
  bool exitHook = false;    // before a call to _exit: run ProgramAfter first
  uint64_t edgeTarget = 0;  // edge stubs: original address the stub jumps on to
  uint8_t liveFlags = 0x3f; // status flags live where the site runs (analysis::FlagsLiveness)
  bool directionClear = false;  // DF is clear here: the procedure has no `std`
  uint32_t codeSize = 0;    // bytes in the application's code (a stub's jump not included)
  // Routine::beforeUnless: a site of its own for each such call, whose one
  // call runs only when one of `unless` fails.  It is a follower of the
  // before site of its instruction (its head), whose code it comes right
  // after, in `followers` order; `dead`: the registers its tests may use
  // without saving them.
  const std::vector<MruTest>* unless = nullptr;
  std::vector<uint32_t> followers;
  x86::RegSet dead;

  // The site saves the state and calls the runtime's enter (otherwise it
  // is inline increments only).
  bool needsCall() const { return !calls.empty() || exitHook; }
  // Bytes of its code and its followers'.
  uint32_t placeSize(const std::vector<Site>& sites) const {
    uint32_t n = codeSize;
    for (uint32_t f : followers) n += sites[f].codeSize;
    return n;
  }
};

struct ProcSites {
  std::map<uint32_t, uint32_t> before;     // instruction -> site
  std::map<uint32_t, uint32_t> after;      // instruction -> site
  std::map<uint32_t, uint32_t> takenStub;  // direct branch -> site of its taken edge
  std::map<uint64_t, uint32_t> tableStub;  // jump-table target (original address) -> site
  // Tail layout: each stub's offset in the tail, and the tail's size.
  std::map<uint32_t, uint32_t> stubOffset; // site -> offset (each stub: site code, then jmp rel32)
  uint32_t tailSize = 0;
};

class Plan {
 public:
  Plan(const Engine& engine, CounterMode counters);

  const std::vector<Site>& sites() const { return sites_; }
  const ProcSites* procSites(uint32_t procId) const;
  const std::vector<uint32_t>& programBefore() const { return programBefore_; }
  const std::vector<uint32_t>& programAfter() const { return programAfter_; }
  bool empty() const { return sites_.empty(); }
  CounterMode counterMode() const { return counters_; }

 private:
  uint32_t siteAt(std::map<uint32_t, uint32_t>& slot, uint32_t key, const ir::Procedure& proc, uint32_t insn, bool after);
  uint32_t beforeSite(const ir::Procedure& proc, uint32_t insn);
  uint32_t afterSite(const ir::Procedure& proc, uint32_t insn);
  uint32_t takenSite(const ir::Procedure& proc, uint32_t insn);
  uint32_t edgeSite(const detail::EdgeData& edge);
  void place(const CallRequest& call);
  void place(const IncrementRequest& increment);
  void place(const StoreRequest& store);
  uint32_t tableSite(const ir::Procedure& proc, uint64_t target);
  void findLiveFlags();
  void addExitHooks();
  void addThreadChecks();
  void sortAndLayTails();

  const Engine& engine_;
  CounterMode counters_;
  std::vector<Site> sites_;
  std::unordered_map<uint32_t, ProcSites> procs_;
  std::vector<uint32_t> programBefore_, programAfter_;
};

}  // namespace atomx::instrument
