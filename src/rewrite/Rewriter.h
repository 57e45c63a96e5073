// Rewriter: the whole rewrite, as a flat list of named phases.
//
//   rewrite():  checkRewritable      the policy: which files atomx rewrites
//               analyze              the program model (analysis::analyzeProgram)
//               layOutCode           new addresses of the moved code, then of
//                                    what the CodeAdditions add after it
//               buildUnwindTables    .eh_frame, .eh_frame_hdr, LSDAs
//               layOutSegments       the read-only and writable segments
//               emitCode             the new code's bytes
//               patchFile            the input's bytes with every reference fixed
//               writeElf             the output file
//
// Each phase lives in its own file (src/analysis, src/layout, src/rewrite,
// src/unwind, src/elf); this class only sequences them and keeps the state
// they pass on.  Instrumentation reaches it only through CodeAdditions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/ProgramModel.h"
#include "elf/ElfImage.h"
#include "elf/ElfWriter.h"
#include "ir/Program.h"
#include "layout/CodeLayout.h"
#include "rewrite/CodeAdditions.h"
#include "rewrite/ReferenceFixer.h"
#include "support/PhaseTimes.h"
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
};

struct RewriteReport {
  uint64_t procedures = 0, movedProcedures = 0;
  uint64_t codeBytes = 0, movedCodeBytes = 0;
  uint64_t newCodeBytes = 0;
  uint64_t inputFileBytes = 0, outputFileBytes = 0;
  FixupStats fixups;
  double analyzeSeconds = 0, rewriteSeconds = 0;
  // Every phase's wall time: this class's (analyze, layOutCode, ...,
  // writeElf) and those a front end adds (instrument::Session's, the write).
  PhaseTimes phases;
  // Facts a front end adds, written as strings (instrument::Session:
  // tool_build, "built" or "reused").
  std::vector<std::pair<std::string, std::string>> notes;
};

// Throws an atomx::Error that says why, in one line, when atomx does not
// rewrite `image` (analysis::fileObstacle is the policy).  Reading and
// analysing such a file is fine (`atomx dump`); only rewriting is refused.
void checkRewritable(const elf::ElfImage& image);

class Rewriter {
 public:
  Rewriter(const elf::ElfImage& image, RewriteOptions options = {});
  ~Rewriter();

  // Builds the program model (rewrite() does it too, once).
  void analyze();
  // Code and data to add (set between analyze() and rewrite()); without
  // them rewrite() moves code only.
  void setAdditions(CodeAdditions* additions) { additions_ = additions; }
  // The output file: the input, patched, and what is appended to it.
  elf::PatchedFile rewrite();

  const analysis::ProgramModel& model() const { return *model_; }
  const ir::Program& program() const { return model_->program; }
  const x86::Decoder& decoder() const { return model_->decoder; }
  const RewriteReport& report() const { return report_; }
  // Where a front end records its own phases, beside this class's.
  PhaseTimes& phases() { return report_.phases; }
  // ... and its facts (RewriteReport::notes).
  void note(const std::string& key, const std::string& value) { report_.notes.emplace_back(key, value); }
  const layout::CodeLayout* layout() const { return layout_.get(); }

 private:
  // The lowest address a new segment may have (Linux's default
  // vm.mmap_min_addr).
  static constexpr uint64_t kLowestAddress = 0x10000;

  void countProcedures();
  void layOut(uint64_t textAddr, PhaseTimes& phases);
  uint64_t placeBelow(uint64_t above) const;
  uint64_t appendedEnd() const;
  // Where the address map's offsets count from: the lowest address, old or new.
  uint64_t mapBase() const;
  void layOutCode();
  void buildUnwindTables();
  void layOutSegments();
  void emitCode();
  elf::PatchedFile patchFile();
  elf::PatchedFile writeElf(elf::PatchedFile file);

  const elf::ElfImage& image_;
  RewriteOptions options_;
  std::unique_ptr<analysis::ProgramModel> model_;
  CodeAdditions* additions_ = nullptr;
  RewriteReport report_;

  // Passed from phase to phase.
  std::unique_ptr<layout::Insertions> padding_;
  std::unique_ptr<layout::CodeLayout> layout_;
  uint64_t textAddr_ = 0, codeEnd_ = 0;
  unwind::UnwindSections unwindBytes_;
  uint64_t ehFrameAddr_ = 0, hdrAddr_ = 0, lsdaAddr_ = 0, phdrAddr_ = 0;
  elf::OutputPlan plan_;
};

}  // namespace atomx::rewrite
