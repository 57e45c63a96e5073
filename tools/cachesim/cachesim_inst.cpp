// cachesim: cache hierarchies chosen when the program starts (README.md,
// docs/cachesim.md).  Rewrite time knows nothing of caches: it describes
// the program once in static tables (blocks, instructions with their sizes,
// procedures and source lines; memory instructions in cachegrind's access
// model, <atomx/memrefs.hpp>) and adds
//   - per block, ONE call with the block's number (its instruction fetches,
//     as ease did), folded into the block's first data call when it has one;
//   - per group of memory instructions, ONE call with their addresses (the
//     cache tool's merged calls);
//   - per call of libc's memory and string functions (memcpy, memset,
//     strlen, ...: <atomx/libc_model.hpp>), a call with its arguments (and
//     for calloc, one with its result), so that the analysis gives the
//     simulator what libc touches; calls into other library functions are
//     only listed (the blocks they end are counted anyway), so that the
//     report can say what it did not see;
// the analysis side (cachesim_anal.cpp) reads ATOMX_CACHE_CONFIG at start-up
// and simulates every configuration in it, so another hierarchy is another
// run, not another rewrite.
#include <atomx/atomx.hpp>

#include <algorithm>
#include <atomx/libc_model.hpp>
#include <atomx/memrefs.hpp>

#include <map>
#include <string>
#include <vector>

using namespace atomx;
using namespace atomx::memrefs;

extern "C" void Instrument(int argc, char** argv) {
  bool fetches = true, data = true, merge = true, libcModel = true;
  long top = 10;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--refs" || a.rfind("--refs=", 0) == 0) {
      const std::string v = a == "--refs" ? (k + 1 < argc ? argv[++k] : "") : a.substr(7);
      if (v != "i" && v != "d" && v != "id") throw Error("cachesim: --refs needs i, d or id, not '" + v + "'");
      fetches = v.find('i') != std::string::npos, data = v.find('d') != std::string::npos;
    } else if (a == "--libc" || a.rfind("--libc=", 0) == 0) {
      const std::string v = a == "--libc" ? (k + 1 < argc ? argv[++k] : "") : a.substr(7);
      if (v != "model" && v != "none") throw Error("cachesim: --libc needs model or none, not '" + v + "'");
      libcModel = v == "model";
    } else if (a == "--no-merge") merge = false;
    else if (a == "--top") top = optionNumber("cachesim", "--top", k + 1 < argc ? argv[++k] : nullptr);
    else throw Error("cachesim: unknown option '" + a + "' (options: --refs i|d|id, --libc model|none, --no-merge, --top N)");
  }
  Routine init("CsInit(long[], long[], long[], int[], long[], char*, char*, char*, long*, long*, long*)");
  Routine fetch("CsFetch(long)");
  Routine ref1("CsRef1(long, VALUE)");
  Routine ref2("CsRef2(long, VALUE, VALUE)");
  Routine group("CsGroup(long, long, VALUE, VALUE, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV)");
  Routine repBefore("CsRepBefore(long, VALUE, VALUE, REGV)");
  Routine repAfter("CsRepAfter(long, REGV)");
  Routine libcCall("CsLibc(long, REGV, REGV, REGV)");
  Routine libcResult("CsLibcResult(long, REGV)");
  Routine report("CsReport(long*, long*)");
  // The common case inline (docs/cachesim.md, "Speed"): a block's fetch, or
  // a group's references, that hit the most recent line of their sets in
  // the first level call nothing.  The analysis side fills the descriptors
  // at start-up (or leaves them failing every test, when a run's
  // configuration cannot use them), and counts executions inline: blocks
  // (Ir) and groups (Dr, Dw: a group's members run as often as it does).
  // When lines are at least kShortBlock bytes long, every line a block
  // touches holds one of its bytes 0, kShortBlock, 2 * kShortBlock, ... or
  // its last byte: a block of up to kSpannedBlock bytes is tested at those
  // points (iShort, which the analysis side fills only for such lines); a
  // longer block, or any block with shorter lines, passes only within one
  // line (iTest), which the analysis side fills only when no such block is
  // as long as the cache's sets together (its last line could then be in
  // the set of its first, and the test would look it up there).
  constexpr long kShortBlock = 32, kSpannedBlock = 128;
  MruDescriptor iTest, iShort, dTest;
  Counters blockRuns, groupRuns;

  std::vector<long> blocks;  // per block: first instruction, instruction count
  std::vector<long> pcs;     // per instruction: original pc
  std::vector<int> insts;    // per instruction: size, procedure, file, line
  std::vector<long> sites;   // memrefs' site table
  std::vector<char> procNames, fileNames;
  std::map<std::string, int> files;
  long nproc = 0;
  long longest = 0;  // the longest block tested whole (iTest)
  // Calls into shared libraries: per call site of a modelled libc function,
  // the function (an index into libc::kFunctions); per block that ends in a
  // call of any other imported function, the block and the function's name.
  std::vector<long> libcSites, otherCalls;
  std::vector<char> otherNames;
  std::map<std::string, long> others;
  std::map<std::string, bool> own;
  for (Proc p : program().procs()) own[std::string(p.name())] = true;
  for (Proc p : program().procs()) {
    for (Block b : p.blocks()) {
      const long block = long(blocks.size() / 2);
      blocks.push_back(long(pcs.size()));
      for (Inst i : b.insts()) {
        pcs.push_back(long(i.pc()));
        const Inst::SourceLine sl = i.sourceLine();
        int file = -1;
        if (sl.line) {
          auto [it, added] = files.emplace(sl.file, int(files.size()));
          if (added) appendString(fileNames, sl.file);
          file = it->second;
        }
        insts.insert(insts.end(), {int(i.size()), int(nproc), file, int(sl.line)});
      }
      blocks.push_back(long(pcs.size()) - blocks[size_t(2 * block)]);
      blockRuns.increment(b, size_t(block));
      const long bytes = long(b.endPc() - b.pc());
      if (fetches && bytes <= kSpannedBlock) {
        std::vector<MruTest> points;
        for (long at = 0; at < bytes - 1; at += kShortBlock) points.push_back(mruHitBlock(iShort, uint32_t(at), 1));
        points.push_back(mruHitBlock(iShort, uint32_t(bytes - 1), 1));
        fetch.addUnless(Point::BlockBefore, b.handle(), points, {Arg(block)});
      } else if (fetches) {
        fetch.beforeUnless(b, mruHitBlock(iTest), block);
        longest = std::max(longest, bytes);
      }
      if (data)
        for (const Group& g : groups(b, merge, "cachesim")) {
          Inst s = g.members[0].inst;
          const long first = appendSite(sites, g.members[0], nproc, true);
          const long code = first;
          const bool two = g.two();
          for (size_t m = 1; m < g.members.size(); ++m) appendSite(sites, g.members[m], nproc, false);
          if (g.rep()) {  // counted by its calls: the iterations are known only at run time
            repBefore.before(s, code, effectiveAddress(0), effectiveAddress(two ? 1 : 0), reg(Reg::rcx));
            if (g.members[0].access.rep == kRepCond) repAfter.after(s, first, reg(Reg::rcx));
            continue;
          }
          groupRuns.increment(s, size_t(first));
          const std::vector<MruTest> tests = mruTests(g, dTest);
          if (g.members.size() > 1) {
            std::vector<Arg> args = {Arg(code), Arg(long(g.members.size())), effectiveAddress(0),
                                     effectiveAddress(two ? 1 : 0)};
            for (Arg& a : slotArgs(g)) args.push_back(a);
            group.addUnless(Point::InstBefore, s.handle(), tests, args);
          } else if (two) ref2.beforeUnless(s, tests, code, effectiveAddress(0), effectiveAddress(1));
          else ref1.beforeUnless(s, tests, code, effectiveAddress(0));
        }
      if (Inst last = b.last(); last.isCall() || last.isJump()) {
        const std::string callee = last.calleeName();
        const libc::Function* f = callee.empty() || own.count(callee) ? nullptr : libc::find(callee);
        const bool tail = last.isJump();
        if (f && libcModel && data && !(tail && libc::needsResult(f->kind))) {
          // A call's references are simulated when it returns (its arguments
          // taken, and strings measured, before it): after the call's own
          // reference, the return address it pushes, as in a trace, whose
          // library calls follow their block's references (atomx cachesim).
          // A tail jump's (which does not come back) after its block's fetch:
          // ~(f | block << 8) (cachesim_anal.cpp, CsLibc).
          const long site = long(libcSites.size());
          libcSites.push_back(tail ? ~(long(f - libc::kFunctions) | block << 8) : long(f - libc::kFunctions));
          libcCall.before(last, site, reg(Reg::rdi), reg(Reg::rsi), reg(Reg::rdx));
          if (!tail) libcResult.after(last, site, reg(Reg::rax));
        } else if (!callee.empty() && !own.count(callee)) {
          auto [it, added] = others.emplace(callee, long(others.size()));
          if (added) appendString(otherNames, callee);
          otherCalls.insert(otherCalls.end(), {block, it->second});
        }
      }
    }
    appendString(procNames, std::string(p.name()));
    ++nproc;
  }
  const long nsites = long(sites.size() / kSiteLongs);
  sites.resize(sites.size() + kSiteLongs, 0);  // never an empty array
  blockRuns.reserve(size_t(blocks.size() / 2) + 1);
  groupRuns.reserve(size_t(nsites) + 1);
  const long nlibc = long(libcSites.size()), nother = long(otherCalls.size() / 2), nnames = long(others.size());
  blocks.push_back(0), pcs.push_back(0), insts.push_back(0), fileNames.push_back(0), procNames.push_back(0);
  libcSites.push_back(0), otherCalls.push_back(0), otherNames.push_back(0);
  Routine calls("CsLibraryCalls(long[], long[], long[], char*)");
  calls.atProgramStart(std::vector<long>{nlibc, nother, nnames, long(libcModel && data)}, libcSites, otherCalls, otherNames);
  init.atProgramStart(std::vector<long>{long(blocks.size() / 2), long(pcs.size() - 1), nsites, nproc,
                                        long(files.size()), long(fetches), long(data), top, kShortBlock, longest},
                      blocks, pcs, insts, sites, procNames, fileNames, std::string(program().path()), iTest, iShort, dTest);
  report.atProgramEnd(blockRuns, groupRuns);
}
