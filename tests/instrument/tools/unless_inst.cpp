// The check of Routine::beforeUnless against a naive oracle in the same run.
// Before every instruction with one or two memory operands (rep-prefixed,
// %gs-relative and gather/scatter ones aside) and at every block, two calls:
//   - a naive one, every time, that says whether the inline test SHOULD pass
//     (every reference within one line that is the most recent of its set
//     in the analysis object's table, or the second most recent: the
//     documented formula, evaluated in C++), and counts the executions
//     where it should not;
//   - the filtered one, beforeUnless(mruHit ...), which counts the times it
//     is made and updates the table's two most recent lines of the set (a
//     call skipped is a hit on one of them, which the inline code itself
//     puts first).
// Blocks and data references use two descriptors (two tables), so that a
// block's update never runs between an instruction's prediction and its
// test.  A block no longer than a line is tested at its first and last
// bytes (mruHitBlock(d, offset, 1)), a longer one whole.  UnlessCheck (unless.out) compares the counts per instruction and
// per block.  Two memory operands of one instruction are one call with
// two tests.  Options: --line BYTES --sets N (the geometry the analysis
// writes into the descriptors; default 32 and 64).
#include <atomx/atomx.hpp>

#include <string>
#include <vector>

using namespace atomx;

extern "C" void Instrument(int argc, char** argv) {
  long line = 32, sets = 64;
  for (int k = 1; k + 1 < argc; k += 2) {
    const std::string a = argv[k];
    if (a == "--line") line = optionNumber("unless", "--line", argv[k + 1], 8, 4096);
    else if (a == "--sets") sets = optionNumber("unless", "--sets", argv[k + 1], 2, 1 << 20);
    else throw Error("unless: unknown option " + a);
  }
  MruDescriptor iTest, dTest;
  Routine init("UnlessInit(long*, long*, long, long, long, long)");
  Routine naiveRef("NaiveRef(long, VALUE, VALUE, long, long, long)");
  Routine filteredRef("FilteredRef(long, VALUE, VALUE, long, long, long)");
  Routine naiveBlock("NaiveBlock(long, long, long, long)");
  Routine filteredBlock("FilteredBlock(long, long, long)");
  Routine check("UnlessCheck()");
  long ninsts = 0, nblocks = 0;
  for (Proc p : program().procs())
    for (Block b : p.blocks()) {
      const long size = long(b.endPc() - b.pc());
      // A block no longer than a line: its first and last bytes (two
      // tests); a longer one: all of it (one).
      const bool ends = size <= line;
      naiveBlock.before(b, nblocks, long(b.pc()), size, long(ends));
      if (ends)
        filteredBlock.addUnless(Point::BlockBefore, b.handle(),
                                {mruHitBlock(iTest, 0, 1), mruHitBlock(iTest, uint32_t(size - 1), 1)},
                                {Arg(nblocks), Arg(long(b.pc())), Arg(size)});
      else filteredBlock.beforeUnless(b, mruHitBlock(iTest), nblocks, long(b.pc()), size);
      ++nblocks;
      for (Inst i : b.insts()) {
        const unsigned n = i.memOperandCount();
        const std::string text = i.text(), m = i.mnemonic();
        if (n == 0 || n > 2 || i.isRepeated() || text.find("%gs:") != std::string::npos ||
            m.find("gather") != std::string::npos || m.find("scatter") != std::string::npos)
          continue;
        auto size = [&](unsigned k) { return long(std::max(1u, std::min(4096u, i.accessSize(k)))); };
        const long s0 = size(0), s1 = n > 1 ? size(1) : 0;
        std::vector<MruTest> tests = {mruHit(dTest, 0, uint32_t(s0))};
        if (n > 1) tests.push_back(mruHit(dTest, 1, uint32_t(s1)));
        naiveRef.before(i, ninsts, effectiveAddress(0), effectiveAddress(n > 1 ? 1 : 0), long(n), s0, s1);
        filteredRef.beforeUnless(i, tests, ninsts, effectiveAddress(0), effectiveAddress(n > 1 ? 1 : 0), long(n), s0,
                                 s1);
        ++ninsts;
      }
    }
  init.atProgramStart(iTest, dTest, ninsts, nblocks, line, sets);
  check.atProgramEnd();
}
