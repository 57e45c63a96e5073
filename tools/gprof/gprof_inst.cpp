// gprof: a call-graph profile: calls per caller -> callee arc, and
// instructions per procedure.
//
// Every block's exact count (Counters::count, by Block::id()).  A block ends
// at every call, so a direct call runs exactly as often as its block: its arc
// needs no call of its own, only a static record (kind, block, callee);
// procedures, blocks and source lines come from atomx's embedded facts.  Indirect
// calls, and indirect jumps that are no jump tables (tail calls through a
// pointer), pass their run-time target (GprofIndirect); a conditional jump to
// another procedure passes whether it is taken (GprofCondTail).
#include <atomx/atomx.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

using namespace atomx;

namespace {

constexpr long kRuntime = -(1L << 40);  // the callee is known at run time only

bool isJumpTable(Block b) {
  for (Edge e : b.succs())
    if (e.kind() == EdgeKind::JumpTable) return true;
  return false;
}
}  // namespace

extern "C" void Instrument(int argc, char** argv) {
  std::string callgrind = "callgrind.out.atomx-gprof";
  long top = 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--callgrind" || a == "--top") && i + 1 >= argc) throw Error("gprof: " + a + " needs a value");
    if (a == "--callgrind") callgrind = argv[++i];
    else if (a == "--no-callgrind") callgrind.clear();
    else if (a == "--top") top = optionNumber("gprof", a, argv[++i], 1);
    else throw Error("gprof: unknown option '" + a + "' (options: --top N, --callgrind FILE, --no-callgrind)");
  }

  Counters blockCount;  // per block: exact counts at program end (Counters::count)
  Routine indirect("GprofIndirect(long, VALUE)");
  Routine condTail("GprofCondTail(long, VALUE)");
  Routine init("GprofInit(long, long[], long, char[], long, long[], char*, long)");
  Routine finish("GprofFinish(long*)");

  // Names of imported functions (PLT stubs, GOT slots), by the address a
  // direct call goes to: they name indirect targets too.
  std::map<uint64_t, std::string> imported;
  std::vector<std::string> externals;  // callee names that are no procedure
  auto externalId = [&](const std::string& n) {
    for (size_t k = 0; k < externals.size(); ++k)
      if (externals[k] == n) return long(k);
    externals.push_back(n);
    return long(externals.size() - 1);
  };

  // Procedures, blocks, their addresses and source lines: the analysis side
  // reads them from the facts atomx embeds (<atomx/facts.h>).
  embedFacts();
  std::vector<char> externalNames;
  std::vector<long> sites, importedTable;
  for (Proc p : program().procs()) {
    for (Block b : p.blocks()) {
      const long id = long(b.id());
      blockCount.count(b, size_t(id));
      // A site: kind (0 call, 1 tail call, 2 conditional tail call), its block (the last
      // instruction calls or jumps), callee: Proc::id(), or -1 - external name index, or
      // kRuntime (indirect).
      const Inst i = b.last();
      const long siteId = long(sites.size() / 3);
      const bool call = i.kind() == InstClass::Call;
      // Through the GOT (-fno-plt, __libc_start_main): an import, as through the PLT.
      const bool viaGot = !i.hasTarget() && !i.calleeName().empty();
      if ((call || i.kind() == InstClass::Jump || i.isCondBranch() || viaGot) && (i.hasTarget() || viaGot)) {
        const Proc q = viaGot ? Proc() : program().procAt(i.target());
        const std::string name = i.calleeName();
        long callee;
        if (q) {
          // A jump is a tail call when it goes to a procedure's entry, not
          // to a cold part (f.cold) split off its caller.  Its own entry
          // too: tail recursion (sqlite3WhereSplit's second recursive call
          // is `jmp sqlite3WhereSplit` after its epilogue), as callgrind
          // and a breakpoint at the entry count it.
          const bool cold = q.name().find(".cold") != std::string_view::npos;
          if (!call && (q.pc() != i.target() || cold)) continue;
          callee = long(q.id());
        } else {
          if (!call && name.empty()) continue;
          char hex[32];
          std::snprintf(hex, sizeof hex, "0x%lx", viaGot ? 0UL : (unsigned long)i.target());
          if (!viaGot) imported.emplace(i.target(), name.empty() ? hex : name);
          callee = -1 - externalId(name.empty() ? hex : name);
        }
        const bool isCall = call || i.kind() == InstClass::IndirectCall;
        sites.insert(sites.end(), {isCall ? 0L : i.isCondBranch() ? 2L : 1L, id, callee});
        if (i.isCondBranch()) condTail.before(i, siteId, branchCondition());
      } else if (i.kind() == InstClass::IndirectCall || (i.kind() == InstClass::IndirectJump && !isJumpTable(b))) {
        sites.insert(sites.end(), {long(i.kind() != InstClass::IndirectCall), id, kRuntime});
        indirect.before(i, siteId, branchTarget());
      }
    }
  }
  for (auto& n : externals) appendString(externalNames, n);
  for (auto& [addr, n] : imported) importedTable.insert(importedTable.end(), {long(addr), externalId(n)});
  const long nsite = long(sites.size() / 3), nimported = long(importedTable.size() / 2);
  // Arrays are never empty (a program with no call at all).
  sites.push_back(0), importedTable.push_back(0), externalNames.push_back('\0');
  init.atProgramStart(nsite, sites, long(externals.size()), externalNames, nimported, importedTable, callgrind, top);
  finish.atProgramEnd(blockCount);
}
