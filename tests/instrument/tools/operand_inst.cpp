// Writes, at rewrite time, one line per instruction of the procedures named
// in the tool arguments (after the output file): pc, then each memory
// operand's parts (Inst::memOperand), then the flags read and written and
// the condition (Inst::flagsRead, flagsWritten, condition), for itest.py's
// t_operands to check against objdump.
#include <atomx/atomx.hpp>

#include <cinttypes>
#include <cstdio>
#include <set>
#include <string>

using namespace atomx;

extern "C" void Instrument(int argc, char** argv) {
  if (argc < 2) throw Error("usage: operand_inst OUT PROC...");
  FILE* out = std::fopen(argv[1], "w");
  if (!out) throw Error("cannot write the operand report");
  const std::set<std::string> names(argv + 2, argv + argc);
  for (Proc p : program().procs()) {
    if (!names.count(std::string(p.name()))) continue;
    for (Block b : p.blocks())
      for (Inst i : b.insts()) {
        std::fprintf(out, "%" PRIx64 "\t%x\t%x\t%d", i.pc(), i.flagsRead(), i.flagsWritten(), i.condition());
        for (unsigned k = 0; k < i.memOperandCount(); ++k) {
          const MemoryOperand m = i.memOperand(k);
          std::fprintf(out, "\t%d,%d,%u,%" PRId64 ",%d,%u,%d%d%d%d,%" PRIx64, m.base, m.index, m.scale, m.disp,
                       int(m.segment), m.size, m.read, m.write, m.implicit, m.ripRelative, m.target);
        }
        std::fputc('\n', out);
      }
  }
  std::fclose(out);
}
