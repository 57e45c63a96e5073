// inline: call sites ranked by how often they run, with the size of what
// they call: the candidates for inlining (and, for indirect calls, for
// devirtualisation first).
//
// A block ends at every call, so a direct call runs as often as its block:
// the exact count of each block that ends in a direct call (Counters::count),
// nothing else.  An indirect call passes its run-time target
// (InlineIndirect).  Procedures, addresses and source lines the analysis
// side reads from atomx's embedded facts; only each site's call (by id) and
// callee are passed.
#include <atomx/atomx.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

using namespace atomx;

namespace {
constexpr long kRuntime = -(1L << 40);  // the callee is known at run time only

}  // namespace

extern "C" void Instrument(int argc, char** argv) {
  long top = 30;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--top" && i + 1 >= argc) throw Error("inline: --top needs a value");
    if (a == "--top") top = optionNumber("inline", a, argv[++i], 1);
    else throw Error("inline: unknown option '" + a + "' (options: --top N)");
  }
  Counters siteCount;  // direct call sites: exact counts at program end (Counters::count)
  Routine indirect("InlineIndirect(long, VALUE)");
  Routine init("InlineInit(long, long[], long, char[], long)");
  Routine finish("InlineFinish(long*)");

  embedFacts();  // procedures, call instructions, source lines: the analysis side reads them (<atomx/facts.h>)
  std::vector<char> externalNames;
  std::vector<std::string> externals;  // callees that are no procedure (malloc@plt)
  std::vector<long> sites;             // per site: its call's Inst::id(), callee (Proc::id(), -1 - external, kRuntime)
  for (Proc p : program().procs())
    for (Block b : p.blocks()) {
      const Inst i = b.last();
      if (!i.isCall()) continue;
      const long site = long(sites.size() / 2);
      long callee = kRuntime;
      // A call through the GOT (-fno-plt) has its callee's name: as direct.
      if (i.kind() == InstClass::Call || !i.calleeName().empty()) {
        if (Proc q = i.hasTarget() ? program().procAt(i.target()) : Proc()) {
          callee = long(q.id());
        } else {
          std::string n = i.calleeName();
          if (n.empty()) {
            char hex[32];
            std::snprintf(hex, sizeof hex, "0x%lx", (unsigned long)(i.hasTarget() ? i.target() : 0));
            n = hex;
          }
          auto it = std::find(externals.begin(), externals.end(), n);
          if (it == externals.end()) it = externals.insert(it, n);
          callee = -1 - long(it - externals.begin());
        }
        siteCount.count(b, size_t(site));
      } else {
        indirect.before(i, site, branchTarget());
      }
      sites.insert(sites.end(), {long(i.id()), callee});
    }
  for (auto& n : externals) appendString(externalNames, n);
  const long nsite = long(sites.size() / 2);
  sites.push_back(0), externalNames.push_back('\0');  // never empty arrays
  init.atProgramStart(nsite, sites, long(externals.size()), externalNames, top);
  finish.atProgramEnd(siteCount);
}
