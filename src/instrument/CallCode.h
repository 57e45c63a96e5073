// CallCode: the machine code of inserted calls.
//
// Site code is what goes into the application's code: inline counter
// increments, then the call part (runtime/abi.h):
//   lea -128(%rsp),%rsp; call enter; nopl body(%rax); lea 128(%rsp),%rsp
// The body, generated here, computes each call's arguments from the saved
// state and calls the analysis routine through the routine table.  What is
// saved depends on the site's BodyKind (SaveSet.h decides):
//   - dispatched: `enter` is one of the runtime's dispatchers, which saves
//     the complete state as an AtomxFrame (runtime/stub/enter.S) and calls
//     the body;
//   - direct: `enter` is the body itself, which saves only the caller-saved
//     registers the routines write (RoutineFootprint) and its own argument
//     code uses, and RFLAGS where a flag is live, for sites whose routines
//     are all light and whose arguments need no call to compute.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "instrument/Engine.h"
#include "instrument/Plan.h"
#include "instrument/SaveSet.h"
#include "x86/Assembler.h"
#include "x86/Semantics.h"

namespace atomx::instrument {

inline constexpr uint32_t kSiteSize = 25;     // the call part of a site
inline constexpr uint32_t kStubJumpSize = 5;  // an edge stub ends with jmp rel32

// Addresses (link-time, output file) the generated code refers to.
struct CodeAddresses {
  uint64_t enter = 0;            // runtime slot: enter
  uint64_t originalAddress = 0;  // runtime slot: original_address()
  uint64_t programAfter = 0;     // runtime slot: program_after()
  uint64_t routineTable = 0;     // uint64_t per routine
  uint64_t dataPool = 0;         // strings and arrays
  uint64_t ready = 0;            // AtomxDescriptor::ready (direct bodies test it)
  std::vector<uint64_t> counters;  // the first counter of each array (atomx::Counters)
  uint64_t countersBase = 0;       // the counters' section (CounterMode::PerThread: %gs's copy of it)
  uint64_t threadCounters = 0;     // runtime slot: thread_counters()
};

// Strings and arrays passed to analysis routines, stored once each.
class DataPool {
 public:
  uint64_t add(const std::string& bytes);  // offset in the pool (8-byte aligned)
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
  std::map<std::string, uint64_t> offsets_;
};

// A site's code in the application: its counter increments inline, its
// trace stores, then, if it has calls, the call part.  `enter` and `body`
// matter only then.
// With CounterMode::PerThread, a site with threadCheck starts with
//   mov %fs:TID,%r32; cmp %r32,%fs:OWNER; je 1f   (where it may: flags dead, %r dead)
//   lea -128(%rsp),%rsp; call thread_counters; lea 128(%rsp),%rsp; 1:
// (runtime/abi.h, "Per-thread counters").
uint32_t incrementCodeSize(const Engine& engine, const Site& site, CounterMode mode);
// The trace stores of a site, with the cursor in site.storeScratch (or in
// %rax, saved below the red zone, when that is NONE); no flag is touched:
//   mov %fs:CURSOR,%r; mov $bytes,disp8(%r)...; lea N(%r),%r; mov %r,%fs:CURSOR
// The stores run from the highest offset down, so the first one is the
// one that reaches past the buffer into its guard page, before any byte
// is written; the recorder's fault handler (runtime/trace/signals.c)
// decodes it, gives %r a fresh buffer and lets it run again.  Inside a
// loop that keeps the cursor in a register (StoreRequest::cursor), and on
// its exits, the stores go through it with no cursor move; a Save's moves
// and then a Load's come after the site's stores.  The forms are defined
// once, for both sides, in runtime/trace/stores.h.
uint32_t storeCodeSize(const Site& site);
// A site of Routine::beforeUnless: its inline tests and the call part that
// runs when one fails (UnlessCode.cpp, emitUnless, shows the code).
uint32_t unlessCodeSize(const Engine& engine, const Site& site);
// The site's code at `at` (CallCode.cpp): for a Routine::beforeUnless
// site, emitUnless; otherwise emitIncrements, emitStores and, with calls,
// emitCallPart.  Exactly site.codeSize bytes.
void emitSite(const Engine& engine, const Site& site, CounterMode mode, uint64_t at, uint64_t enter, uint64_t body,
              const CodeAddresses& addresses, std::vector<uint8_t>& out);

// The emitters of a site's parts, one file each; every form they emit has
// a fixed size, so each part is sized by emitting it with zero addresses.
//   IncrementCode.cpp: the per-thread check and the counter updates, with
//   what keeps the live flags around them.
void emitIncrements(const Engine& engine, const Site& site, CounterMode mode, const CodeAddresses& addresses,
                    x86::Assembler& a);
//   StoreCode.cpp: the trace stores (above).
void emitStores(const Site& site, std::vector<uint8_t>& out);
//   UnlessCode.cpp: the tests of a Routine::beforeUnless site, and the call
//   part where one fails.
void emitUnless(const Engine& engine, const Site& site, const CodeAddresses& addresses, uint64_t enter, uint64_t body,
                x86::Assembler& a);
//   CallCode.cpp: the call part, kSiteSize bytes (top of this file).
void emitCallPart(uint64_t enter, uint64_t body, x86::Assembler& a);

// The body of a site's calls (CallBody.cpp), and the data pool its
// arguments' strings and arrays go into.
class BodyWriter {
 public:
  BodyWriter(const Engine& engine, DataPool& pool) : engine_(engine), pool_(pool) {}
  // The body of `site`, placed at `at`.  Its size does not depend on `at` or
  // on `addresses`, so it can be sized with zeros first.
  void emit(const Site& site, BodyKind kind, uint64_t at, const CodeAddresses& addresses,
            std::vector<uint8_t>& out) const;

 private:
  const Engine& engine_;
  DataPool& pool_;
};

}  // namespace atomx::instrument
