// The facts atomx embeds (atomx::embedFacts, <atomx/facts.h>): nothing is
// passed to the analysis side but the exact block counts, by Block::id();
// facts_anal.c writes facts.out from the embedded facts alone, for
// itest.py's t_facts to compare with objdump, the DWARF line table and a
// counter per block.  With a file name as argument, this side also writes
// there what Inst's semantic queries answer for every instruction and
// operand, in facts_anal.c's "sem" and "op" lines, which the embedded
// facts must reproduce.  A second argument "instructions" asks for the
// facts without operands (FactsDetail::Instructions): then the embedded
// facts have none, and the "sem" lines say 0 operands.
#include <atomx/atomx.hpp>

#include <cinttypes>
#include <cstdio>
#include <string>

using namespace atomx;

namespace {
int bits(bool read, bool write, bool implicit, bool hidden) { return read | write << 1 | implicit << 2 | hidden << 3; }

void writeSemantics(FILE* f, Inst i, bool operands) {
  std::fprintf(f, "sem %zu %u %u %u %u %d %d %#" PRIx64 " %u\n", i.id(), i.flagsRead(), i.flagsWritten(),
               i.flagsMaybeWritten(), i.flagsLiveAfter(), i.condition(),
               i.isScalarVector() | i.isRepeated() << 1 | i.isLocked() << 2 | i.isRepeatedWhile() << 3 |
                   i.isRepeatedWhileNotEqual() << 4,
               i.hasTarget() ? i.target() : 0,
               operands ? i.operandCount() : 0);
  for (unsigned k = 0; operands && k < i.operandCount(); ++k) {
    const Operand o = i.operand(k);
    const MemoryOperand& m = o.mem;
    std::fprintf(f, "op %zu %u %d %d %d %d %d %d %u %u %u %u %d %d %u %d %u %d %d %" PRId64 " %#" PRIx64 "\n", i.id(),
                 k, int(o.kind), int(o.regKind), int(o.type), bits(o.read, o.write, o.implicit, o.hidden), o.reg,
                 o.memIndex, o.regBits, o.bits, o.elementBits, o.elements, m.base, m.index, m.scale, int(m.segment),
                 m.size, bits(m.read, m.write, m.implicit, false), int(m.ripRelative), m.disp, m.target);
  }
}
}  // namespace

extern "C" void Instrument(int argc, char** argv) {
  const bool operands = !(argc > 2 && std::string(argv[2]) == "instructions");
  embedFacts(operands ? FactsDetail::Operands : FactsDetail::Instructions);
  FILE* expected = argc > 1 ? std::fopen(argv[1], "w") : nullptr;
  if (argc > 1 && !expected) throw Error(std::string("facts test: cannot write ") + argv[1]);
  Counters exact, each;
  for (Proc p : program().procs())
    for (Block b : p.blocks()) {
      exact.count(b, b.id());
      each.increment(b, b.id());
      if (expected)
        for (Inst i : b.insts()) writeSemantics(expected, i, operands);
    }
  if (expected) std::fclose(expected);
  Routine("FactsDump(long*, long*)").atProgramEnd(exact, each);
}
