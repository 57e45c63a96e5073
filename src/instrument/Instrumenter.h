// Instrumenter: everything instrumentation adds to the output file, for the
// Rewriter to place (it is the rewriter's rewrite::CodeAdditions).
//
//   insertions()   site code in the application's code (for CodeLayout)
//   appendCode()   the runtime blob and the generated bodies, after the code
//   data           read-only: the analysis object, routine names, address map,
//                  strings and arrays; writable: the runtime descriptor, the
//                  routine table and the ProgramBefore/After body lists
//   entryPoint()   the runtime's entry slot, which becomes e_entry
//
// runtime/abi.h is the contract with the runtime that runs inside the program.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "instrument/CallCode.h"
#include "instrument/Engine.h"
#include "instrument/Plan.h"
#include "layout/CodeLayout.h"
#include "rewrite/CodeAdditions.h"

namespace atomx::instrument {

class InsertedCode;

class Instrumenter final : public rewrite::CodeAdditions {
 public:
  // `counters`: how inline counters are incremented (Plan.h).
  Instrumenter(const Engine& engine, std::vector<uint8_t> analysisObject, std::string programName,
               CounterMode counters);
  ~Instrumenter() override;

  const layout::Insertions& insertions() const override;
  // Places that call analysis routines (each saves the state once).
  size_t siteCount() const {
    size_t n = 0;
    for (const Site& s : plan_.sites()) n += s.needsCall();
    return n;
  }
  // Sites that skip saving the vector state (known after placeCode()).
  size_t lightSiteCount() const { return lightSites_; }
  // Sites that skip saving RFLAGS (known after placeCode()).
  size_t noFlagsSiteCount() const { return noFlagsSites_; }
  // Sites that call their body directly, without a dispatcher (known after placeCode()).
  size_t directSiteCount() const { return directSites_; }
  // Inline counter increments.
  size_t incrementCount() const { return engine_.increments().size(); }
  // Places inside the program's procedures that call analysis routines
  // (ProgramBefore and ProgramAfter calls are not among them).
  size_t callSitesInCode() const {
    size_t n = 0;
    for (const Site& s : plan_.sites()) n += s.proc != nullptr && !s.calls.empty();
    return n;
  }
  // Deferred end (runtime/abi.h): the program loads no analysis code and
  // dumps its counters at the end; only for a tool whose analysis code runs
  // at ProgramAfter alone (Session checks).
  void deferEnd() { deferEnd_ = true; }

  // 1. After CodeLayout::run(): where the runtime and the bodies go, right
  //    after `codeEnd`; returns the end of the code.
  uint64_t placeCode(uint64_t codeEnd) override;
  // 2. Where the data goes (readOnlyBytes() gives the read-only part's size).
  void placeData(uint64_t readOnlyAddress, uint64_t writableAddress) override;
  // 3. The bytes, once CodeLayout::emit() has produced the moved code
  //    (`text`, starting at `textAddress`): appends the runtime and bodies.
  void appendCode(std::vector<uint8_t>& text, uint64_t textAddress) const override;
  std::vector<uint8_t> readOnlyBytes(const layout::CodeLayout& layout, uint64_t mapBase) const override;
  std::vector<uint8_t> writableBytes(uint64_t originalEntry, uint64_t mapBase, uint64_t newCodeStart,
                                     uint64_t newCodeEnd) const override;
  // Zero bytes that follow the writable data in memory: the counters.
  uint64_t writableZeroBytes() const override { return countersSize_; }
  uint64_t entryPoint() const override { return runtimeAddress_; }

 private:
  // Offsets of everything in the two data areas (after placeCode(): the
  // strings and arrays are known then).
  void layOutData();
  void chooseEnters();
  void addressMap(const layout::CodeLayout& layout, uint64_t mapBase, std::vector<uint8_t>& out) const;
  // The promoted loops' code (Engine::cursorLoops), as AtomxCursorRegions.
  void cursorRegions(const layout::CodeLayout& layout, uint64_t mapBase, std::vector<uint8_t>& out) const;

  const Engine& engine_;
  bool deferEnd_ = false;
  std::vector<uint8_t> analysisObject_;
  std::string programName_;
  Plan plan_;
  mutable DataPool pool_;
  std::unique_ptr<InsertedCode> inserted_;
  std::vector<uint64_t> bodyAddress_;  // per site
  std::vector<uint32_t> bodySize_;
  std::vector<uint64_t> siteEnter_;    // per site: the enter slot (or, direct, the body) it calls
  std::vector<BodyKind> bodyKind_;     // per site
  size_t lightSites_ = 0, noFlagsSites_ = 0, directSites_ = 0;
  uint64_t runtimeAddress_ = 0, codeEnd_ = 0;
  CodeAddresses addresses_;
  // Read-only layout (offsets from roAddress_).
  uint64_t roAddress_ = 0, rwAddress_ = 0;
  uint64_t offAnalysis_ = 0, offNames_ = 0, offPool_ = 0, offMap_ = 0, offProgramName_ = 0, roSize_ = 0;
  mutable uint64_t mapCount_ = 0;
  mutable uint64_t offRegions_ = 0, regionCount_ = 0;
  // Writable layout.
  uint64_t offTable_ = 0, offBefore_ = 0, offAfter_ = 0, rwSize_ = 0;
  // The counters, after the writable data (offsets from its end).
  std::vector<uint64_t> offCounters_;
  uint64_t countersSize_ = 0;
};

// Whether a file atomx instrumented defers its end (its descriptor says so,
// runtime/abi.h): `atomx run` then gives its processes a directory for
// their dumps (ATOMX_END_DIR), and only then.
bool defersEnd(const std::string& instrumentedFile);

}  // namespace atomx::instrument
