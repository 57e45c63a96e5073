// The naive tracer: a call before every basic block, with the block's
// original address -- the obvious way to record a block trace, and the
// oracle `atomx regen --blocks` is checked against (tests/trace).
//
// With the tool argument `data`, also a call before every instruction that
// accesses memory, with each operand's effective address (and, for a rep
// string instruction, %rcx, its count; a repe/repne's count is known after
// it: a second call there with %rcx), the oracle of a data trace's
// references (data_oracle.py).  Operands go reads (and read-modify-writes)
// first, then writes, as include/atomx/trace.hpp orders an instruction's
// references; prefetches and flushes access nothing.
#include <atomx/atomx.hpp>

#include <string>
#include <vector>

extern "C" void Instrument(int argc, char** argv) {
  const bool data = argc > 1 && std::string(argv[1]) == "data";
  atomx::Routine visit("NaiveBlock(long)");
  atomx::Routine mem("NaiveMem(long, long, long, long, long, long, long, long)");
  atomx::Routine repEnd("NaiveRepEnd(long)");
  atomx::Routine odd("NaiveUnsupported(long)");
  for (atomx::Proc p : atomx::program().procs())
    for (atomx::Block b : p.blocks()) {
      visit.before(b, int64_t(b.pc()));
      if (!data) continue;
      for (atomx::Inst i : b.insts()) {
        const unsigned n = i.memOperandCount();
        if (!n || i.isCacheControl()) continue;
        // (operand, size | kind << 16), reads first; kind 1 R, 2 W, 3 M.
        std::vector<std::pair<unsigned, int64_t>> ops;
        bool vector = false;
        for (int pass = 0; pass < 2; ++pass)
          for (unsigned k = 0; k < n; ++k) {
            const atomx::MemoryOperand m = i.memOperand(k);
            vector |= m.vectorIndex >= 0;
            if ((pass == 0) != m.read) continue;
            ops.push_back({k, int64_t(m.size) | int64_t((m.read ? 1 : 0) | (m.write ? 2 : 0)) << 16});
          }
        if (vector || ops.size() > 3) {
          odd.before(i, int64_t(i.pc()));
          continue;
        }
        const int64_t rep = i.isRepeated() ? (i.isRepeatedWhile() ? 2 : 1) : 0;
        std::vector<atomx::Arg> args = {int64_t(i.pc()), atomx::reg(atomx::Reg::rcx)};
        for (size_t k = 0; k < 3; ++k)
          if (k < ops.size()) {
            args.push_back(atomx::effectiveAddress(ops[k].first));
            args.push_back(ops[k].second | (k == 0 ? rep << 24 : 0));
          } else {
            args.push_back(int64_t(0));
            args.push_back(int64_t(0));
          }
        mem.before(i, args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7]);
        if (rep == 2) repEnd.after(i, atomx::reg(atomx::Reg::rcx));
      }
    }
}
