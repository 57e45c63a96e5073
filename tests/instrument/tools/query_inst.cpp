// Writes, at rewrite time, one line per instruction of the procedures named
// in the tool arguments (after the output file):
//   pc <TAB> calleeName|- <TAB> category <TAB> regsRead <TAB> regsWritten <TAB> file:line
//      <TAB> memory operands:their sizes <TAB> mnemonic <TAB> target
// query_inst.c writes the same through ATOM's C API.
#include <atomx/atomx.hpp>

#include <cinttypes>
#include <cstdio>
#include <set>
#include <string>

using namespace atomx;

extern "C" void Instrument(int argc, char** argv) {
  if (argc < 2) throw Error("usage: query_inst OUT PROC...");
  FILE* out = std::fopen(argv[1], "w");
  if (!out) throw Error("cannot write query output");
  const std::set<std::string> names(argv + 2, argv + argc);
  for (Proc p : program().procs()) {
    if (!names.count(std::string(p.name()))) continue;
    for (Block b : p.blocks())
      for (Inst i : b.insts()) {
        const std::string callee = i.calleeName();
        const Inst::SourceLine line = i.sourceLine();
        std::string mem = std::to_string(i.memOperandCount()) + ":";
        for (unsigned k = 0; k < i.memOperandCount(); ++k) mem += (k ? "," : "") + std::to_string(i.accessSize(k));
        std::fprintf(out, "%" PRIx64 "\t%s\t%s\t%" PRIx64 "\t%" PRIx64 "\t%s:%u\t%s\t%s\t%" PRIx64 "\n", i.pc(),
                     callee.empty() ? "-" : callee.c_str(), i.category().c_str(), i.regsRead(), i.regsWritten(),
                     line.file.c_str(), line.line, mem.c_str(), i.mnemonic().c_str(), i.hasTarget() ? i.target() : 0);
      }
  }
  std::fclose(out);
}
