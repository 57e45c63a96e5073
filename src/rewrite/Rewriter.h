// Rewriter: the whole pipeline, in the order it runs.
//
//   analyze():  discover procedures -> name PLT entries -> disassemble ->
//               read unwind info -> jump tables -> code references -> CFGs ->
//               decide what moves
//   rewrite():  analyze() -> lay out new code -> fix every reference ->
//               rebuild unwind tables -> write the ELF file
//
// Each step lives in its own file (src/analysis, src/layout, src/rewrite,
// src/unwind, src/elf); this class only sequences them and keeps the state
// they share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/RelocIndex.h"
#include "elf/ElfImage.h"
#include "instrument/Instrumenter.h"
#include "ir/Program.h"
#include "layout/CodeLayout.h"
#include "rewrite/ReferenceFixer.h"
#include "unwind/EhFrame.h"
#include "x86/Decoder.h"

namespace atomx::rewrite {

struct RewriteOptions {
  // Fill the old bytes of every moved procedure with int3, so a reference
  // atomx missed crashes instead of silently running the old code.
  bool poisonOriginal = false;
  // Insert this many nops before every moved instruction (a check mode for
  // the machinery inserted code relies on; 0 = off).
  uint32_t padInstructions = 0;
  // Inline counters use `lock inc` even in a program that cannot start
  // threads (analysis::threadEvidence decides otherwise).
  bool atomicCounters = false;
};

struct RewriteReport {
  uint64_t procedures = 0, movedProcedures = 0;
  uint64_t codeBytes = 0, movedCodeBytes = 0;
  uint64_t newCodeBytes = 0;
  uint64_t inputFileBytes = 0, outputFileBytes = 0;
  FixupStats fixups;
  double analyzeSeconds = 0, rewriteSeconds = 0;
};

class Rewriter {
 public:
  Rewriter(const elf::ElfImage& image, RewriteOptions options = {});
  ~Rewriter();

  void analyze();
  // Instrumentation to add (issue the tool's calls between analyze() and
  // rewrite()); without it rewrite() moves code only.
  void setInstrumenter(instrument::Instrumenter* instrumenter) { instrumenter_ = instrumenter; }
  std::vector<uint8_t> rewrite();
  const x86::Decoder& decoder() const { return decoder_; }

  const ir::Program& program() const { return program_; }
  const RewriteReport& report() const { return report_; }
  const layout::CodeLayout* layout() const { return layout_.get(); }
  const unwind::EhFrameInfo& unwindInfo() const { return unwindInfo_; }

 private:
  void requireRelocations() const;
  void readUnwindInfo();
  std::string unwindReason(const ir::Procedure& proc) const;
  void countProcedures();

  const elf::ElfImage& image_;
  RewriteOptions options_;
  x86::Decoder decoder_;
  ir::Program program_;
  std::unique_ptr<analysis::RelocIndex> relocs_;
  unwind::EhFrameInfo unwindInfo_;
  std::unique_ptr<layout::Insertions> insertions_;
  std::unique_ptr<layout::CodeLayout> layout_;
  instrument::Instrumenter* instrumenter_ = nullptr;
  RewriteReport report_;
  bool analyzed_ = false;
};

}  // namespace atomx::rewrite
