// The program model: everything atomx knows about a linked ELF file without
// changing it — procedures, their instructions, basic blocks and CFG, jump
// tables, the references into code, the unwind facts and, for each
// procedure, whether it can be moved.  The rewriter builds on it, and so can
// any offline tool (a trace regenerator, a report) that links atomx_model
// alone: it includes nothing of layout, rewrite or instrument.
//
//   auto model = analysis::analyzeProgram(image);
//   for (const ir::Procedure& p : model->program.procs) ...
//
// The analysis runs in a fixed order (discover procedures -> name PLT
// entries -> disassemble -> read unwind info -> jump tables -> code
// references -> CFGs -> decide what moves), each step in its own file of
// src/analysis.
#pragma once

#include <memory>
#include <string>

#include "analysis/RelocIndex.h"
#include "elf/ElfImage.h"
#include "support/PhaseTimes.h"
#include "ir/Program.h"
#include "unwind/EhFrame.h"
#include "x86/Decoder.h"

namespace atomx::analysis {

struct ProgramModel {
  explicit ProgramModel(const elf::ElfImage& image) : image(image), relocs(image) { program.image = &image; }
  ProgramModel(const ProgramModel&) = delete;
  ProgramModel& operator=(const ProgramModel&) = delete;

  const elf::ElfImage& image;
  x86::Decoder decoder;
  ir::Program program;
  RelocIndex relocs;              // static relocations by place
  unwind::EhFrameInfo unwind;     // every FDE, call site and landing pad
  double analyzeSeconds = 0;
};

// Analyses `image` (which must outlive the model).  Reads whatever the file
// holds — an executable, PIE or not, or a shared object — and throws only
// for a file it cannot read at all; whether atomx will rewrite it is the
// rewriter's decision (rewrite::checkRewritable).
std::unique_ptr<ProgramModel> analyzeProgram(const elf::ElfImage& image, PhaseTimes* phases = nullptr);

// The file bytes of the section called `name`, at its address, for the
// unwind readers and writers (empty if absent or SHT_NOBITS).
unwind::ByteView sectionView(const elf::ElfImage& image, const char* name);

// Why atomx does not rewrite `image` at all ("" when it does): a shared
// object or a static executable (not supported yet), or a file without
// static relocations for its code.  The one policy: the rewriter refuses
// such a file with this reason (rewrite::checkRewritable), and the model
// marks every procedure of it Unmovable with the same reason, so `atomx
// dump` and the rewriter never disagree.
std::string fileObstacle(const elf::ElfImage& image);

}  // namespace atomx::analysis
