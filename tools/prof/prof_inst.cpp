// prof: instructions executed per procedure and per source line.
//
// One call per basic block (its index); everything else is tallied here, at
// rewrite time: a block's instruction count, and how many of its instructions
// belong to each source line (DWARF, Inst::sourceLine()).  The analysis side
// multiplies block counts by these tallies at program end (prof_anal.cpp).
#include <atomx/atomx.hpp>

#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

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

  Counters blockCount;  // per block: exact counts at program end (Counters::count)
  Routine init(
      "ProfInit(long, char[], long[], int[], long[], long, int[], long, int[], long, char[], char*, long, char*)");
  Routine finish("ProfFinish(long*)");

  std::vector<char> names, files;
  std::vector<long> procPc, blockPc;  // blockPc: pairs: start, end
  std::vector<int> blocks;   // per block: procedure, instructions
  std::vector<int> lines;    // per (procedure, file, line): procedure, file, line
  std::vector<int> entries;  // block, line index, instructions of that line in the block
  std::map<std::string, int> fileIds;
  std::map<std::tuple<int, int, unsigned>, int> lineIds;
  auto fileId = [&](const std::string& f) {
    auto [it, added] = fileIds.try_emplace(f, int(fileIds.size()));
    if (added) appendString(files, f.empty() ? "???" : f);
    return it->second;
  };

  int nproc = 0;
  long nblock = 0;
  for (Proc p : program().procs()) {
    appendString(names, demangle(p.name()));
    procPc.push_back(long(p.pc()));
    for (Block b : p.blocks()) {
      std::map<int, int> perLine;  // line index -> instructions in this block
      int n = 0;
      for (Inst i : b.insts()) {
        Inst::SourceLine sl = i.sourceLine();
        auto key = std::make_tuple(nproc, fileId(sl.file), sl.line);
        auto [it, added] = lineIds.try_emplace(key, int(lineIds.size()));
        if (added) lines.insert(lines.end(), {nproc, std::get<1>(key), int(sl.line)});
        ++perLine[it->second];
        ++n;
      }
      for (auto [line, k] : perLine) entries.insert(entries.end(), {int(nblock), line, k});
      blocks.insert(blocks.end(), {nproc, n});
      blockPc.insert(blockPc.end(), {long(b.pc()), long(b.endPc())});
      blockCount.count(b, size_t(nblock++));
    }
    ++nproc;
  }
  init.atProgramStart(long(nproc), names, procPc, blocks, blockPc, nblock, lines, long(lines.size() / 3), entries,
                      long(entries.size() / 3), files, callgrind, top, std::string(program().path()));
  finish.atProgramEnd(blockCount);
}
