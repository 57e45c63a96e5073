// prof: instructions executed per procedure and per source line.
//
// The exact count of every basic block (Counters::count, no call), by block
// id; what each block holds -- its instructions and their source lines
// (DWARF) -- the analysis side reads from the facts atomx embeds
// (embedFacts, <atomx/facts.h>) and multiplies by the counts at program end
// (prof_anal.cpp).
#include <atomx/atomx.hpp>

#include <string>

using namespace atomx;

extern "C" void Instrument(int argc, char** argv) {
  std::string callgrind = "callgrind.out.atomx-prof";
  long top = 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--callgrind" || a == "--top") && i + 1 >= argc) throw Error("prof: " + a + " needs a value");
    if (a == "--callgrind") callgrind = argv[++i];
    else if (a == "--no-callgrind") callgrind.clear();
    else if (a == "--top") top = optionNumber("prof", a, argv[++i], 1);
    else throw Error("prof: unknown option '" + a + "' (options: --top N, --callgrind FILE, --no-callgrind)");
  }

  embedFacts();
  Counters blockCount;  // per block id: exact counts at program end
  for (Proc p : program().procs())
    for (Block b : p.blocks()) blockCount.count(b, b.id());
  Routine("ProfFinish(long*, char*, long)").atProgramEnd(blockCount, callgrind, top);
}
