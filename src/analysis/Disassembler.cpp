#include "analysis/Disassembler.h"

#include "support/Hex.h"

namespace atomx::analysis {

void disassemble(ir::Program& program, const x86::Decoder& decoder) {
  const elf::ElfImage& image = *program.image;
  for (ir::Procedure& proc : program.procs) {
    const uint8_t* bytes = image.bytesAt(proc.start, proc.size());
    if (!bytes) {
      proc.markUnmovable("code is not backed by file bytes");
      continue;
    }
    proc.insns.reserve(proc.size() / 4);
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
}

}  // namespace atomx::analysis
