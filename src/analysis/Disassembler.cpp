#include "analysis/Disassembler.h"

#include "support/Hex.h"
#include "support/Parallel.h"

namespace atomx::analysis {

namespace {

void disassembleOne(const elf::ElfImage& image, const x86::Decoder& decoder, ir::Procedure& proc) {
  const uint8_t* bytes = image.bytesAt(proc.start, proc.size());
  if (!bytes) {
    proc.markUnmovable("code is not backed by file bytes");
    return;
  }
  proc.insns.reserve(proc.size() / 3 + 4);  // x86-64 code averages under 4 bytes an instruction
  uint64_t addr = proc.start;
  bool ok = true;
  while (addr < proc.end) {
    x86::Insn insn;
    const uint64_t avail = proc.end - addr;
    if (!decoder.decode(bytes + (addr - proc.start), avail, addr, insn)) {
      proc.markUnmovable("cannot decode the instruction at " + hex(addr));
      ok = false;
      break;
    }
    proc.insns.push_back(insn);
    addr += insn.length;
  }
  proc.fullyDecoded = ok;
  if (proc.state == ir::ProcState::Discovered) proc.state = ir::ProcState::Disassembled;
}

}  // namespace

void disassemble(ir::Program& program, const x86::Decoder& decoder) {
  // Decoding is a large share of analysis time and procedures are
  // independent: split them over the machine's cores (the decoder is read-only).
  parallelFor(program.procs.size(), [&](size_t i) { disassembleOne(*program.image, decoder, program.procs[i]); });
}

}  // namespace atomx::analysis
