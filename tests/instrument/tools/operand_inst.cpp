// Writes, at rewrite time, one line per instruction of the procedures named
// in the tool arguments (after the output file): pc, mnemonic, the flags
// read, written and maybe written, the condition, whether it is a scalar
// SSE/AVX instruction and rep-prefixed, the flags live after it
// (Inst::flagsRead, flagsWritten, flagsMaybeWritten, condition,
// isScalarVector, isRepeated, isLocked, flagsLiveAfter), then each
// memory operand's parts (Inst::memOperand, "M=...") and each operand
// (Inst::operand, "O=..."), for itest.py's t_operands to check against
// objdump.
#include <atomx/atomx.hpp>

#include <cinttypes>
#include <cstdio>
#include <set>
#include <string>

using namespace atomx;

namespace {
void printMem(FILE* out, const MemoryOperand& m) {
  std::fprintf(out, "%d,%d,%u,%" PRId64 ",%d,%u,%d%d%d%d,%" PRIx64, m.base, m.index, m.scale, m.disp, int(m.segment),
               m.size, m.read, m.write, m.implicit, m.ripRelative, m.target);
}
}  // namespace

extern "C" void Instrument(int argc, char** argv) {
  if (argc < 2) throw Error("usage: operand_inst OUT PROC...");
  FILE* out = std::fopen(argv[1], "w");
  if (!out) throw Error("cannot write the operand report");
  const std::set<std::string> names(argv + 2, argv + argc);
  for (Proc p : program().procs()) {
    if (!names.count(std::string(p.name()))) continue;
    for (Block b : p.blocks())
      for (Inst i : b.insts()) {
        std::fprintf(out, "%" PRIx64 "\t%s\t%x\t%x\t%x\t%d\t%d\t%d%d\t%x", i.pc(), i.mnemonic().c_str(), i.flagsRead(),
                     i.flagsWritten(), i.flagsMaybeWritten(), i.condition(), i.isScalarVector(), i.isRepeated(),
                     i.isLocked(), i.flagsLiveAfter());
        for (unsigned k = 0; k < i.memOperandCount(); ++k) {
          std::fputs("\tM=", out);
          printMem(out, i.memOperand(k));
        }
        for (unsigned k = 0; k < i.operandCount(); ++k) {
          const Operand o = i.operand(k);
          std::fprintf(out, "\tO=%d,%d,%d,%u,%u,%d,%u,%u,%d%d%d%d,%d,", int(o.kind), int(o.regKind), o.reg, o.regBits,
                       o.bits, int(o.type), o.elementBits, o.elements, o.read, o.write, o.implicit, o.hidden,
                       o.memIndex);
          printMem(out, o.mem);
        }
        std::fputc('\n', out);
      }
  }
  std::fclose(out);
}
