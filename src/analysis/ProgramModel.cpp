#include "analysis/ProgramModel.h"

#include <chrono>

#include "analysis/Cfg.h"
#include "analysis/CodeReferences.h"
#include "analysis/Disassembler.h"
#include "analysis/JumpTables.h"
#include "analysis/Movability.h"
#include "analysis/ProcedureDiscovery.h"

namespace atomx::analysis {

unwind::ByteView sectionView(const elf::ElfImage& image, const char* name) {
  const elf::Section* s = image.sectionByName(name);
  if (!s || !s->hasFileBytes()) return {};
  auto bytes = image.sectionBytes(*s);
  return {bytes.data(), bytes.size(), s->addr};
}

std::string fileObstacle(const elf::ElfImage& image) {
  switch (image.kind()) {
    case elf::ElfImage::Kind::Executable:
    case elf::ElfImage::Kind::PieExecutable:
      break;
    case elf::ElfImage::Kind::SharedObject:
    case elf::ElfImage::Kind::StaticPie:
      return "shared libraries and static-pie executables are not supported yet";
    case elf::ElfImage::Kind::StaticExecutable:
      return "statically linked executables are not supported yet (link dynamically)";
  }
  for (const elf::Section& s : image.sections()) {
    if (s.type != SHT_RELA || s.isAlloc() || s.info >= image.sections().size()) continue;
    if (image.sections()[s.info].isExec()) return "";
  }
  // strip(1) removes the symbol table and the link's relocations alike:
  // say which, so a user does not relink what was only stripped later.
  if (!image.sectionByName(".symtab"))
    return "it is stripped (no symbol table, no relocations); use the unstripped file, or relink it with "
           "-Wl,--emit-relocs (or -Wl,-q) and do not strip it";
  return "no relocations for its code; relink it with -Wl,--emit-relocs (or -Wl,-q) so atomx can move code";
}

std::unique_ptr<ProgramModel> analyzeProgram(const elf::ElfImage& image, PhaseTimes* phases) {
  PhaseTimes local;
  PhaseTimes& t = phases ? *phases : local;
  const auto t0 = std::chrono::steady_clock::now();
  auto model = t.time("analyze.relocations", [&] { return std::make_unique<ProgramModel>(image); });
  ir::Program& program = model->program;
  t.time("analyze.procedures", [&] {
    discoverProcedures(program);
    resolvePltNames(program, model->decoder);
  });
  t.time("analyze.decode", [&] { disassemble(program, model->decoder); });
  t.time("analyze.unwind", [&] {
    model->unwind = unwind::parseEhFrame(sectionView(image, ".eh_frame"), sectionView(image, ".gcc_except_table"));
  });
  std::vector<LandingPad> pads;
  for (const unwind::Fde& fde : model->unwind.fdes)
    for (const unwind::CallSite& cs : fde.callSites)
      if (cs.landingPad) pads.push_back({cs.landingPad, cs.start});
  t.time("analyze.jumpTables", [&] { findJumpTables(program, model->relocs); });
  t.time("analyze.codeReferences", [&] { collectCodeReferences(program, model->relocs, pads); });
  t.time("analyze.cfg", [&] { buildCfgs(program, pads); });
  if (const std::string why = fileObstacle(image); !why.empty())
    for (ir::Procedure& p : program.procs) p.markUnmovable(why);
  const unwind::EhFrameInfo& unwindInfo = model->unwind;
  t.time("analyze.movability", [&] {
    decideMovability(program, model->relocs,
                     [&](const ir::Procedure& p) { return unwind::unwindObstacle(unwindInfo, p.start, p.end); });
  });
  model->analyzeSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return model;
}

}  // namespace atomx::analysis
