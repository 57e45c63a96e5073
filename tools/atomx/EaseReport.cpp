// `atomx ease-report`: its arguments; the merge is
// driver::mergeEaseReports (src/driver/EaseReports.h).
#include "EaseReport.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "driver/EaseReports.h"
#include "support/Error.h"

namespace atomx::cli {

namespace {

const char* const kUsage = "usage: atomx ease-report EASE.json... [-o DIR] [--top N]  (merge runs)\n"
                           "       atomx ease-report --diff A.json B.json [-o DIR] [--top N]  (what changed from A to B)";
// The same on one line, for an error message.
const char* const kUsageLine = "usage: atomx ease-report EASE.json... | --diff A.json B.json, [-o DIR] [--top N]";

}  // namespace

int runEaseReport(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string dir = ".";
  long top = 12;
  bool diff = false;
  for (int k = 2; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "-o" && k + 1 < argc) dir = argv[++k];
    else if (a == "--top" && k + 1 < argc) {
      const std::string n = argv[++k];
      char* end = nullptr;
      top = std::strtol(n.c_str(), &end, 10);
      if (n.empty() || *end || top < 0) throw UsageError("ease-report: --top needs a number of rows (0 or more), not '" + n + "'");
    }
    else if (a == "--top" || a == "-o") throw UsageError("ease-report: " + a + " needs a value (" + kUsageLine + ")");
    else if (a == "--help" || a == "-h") return std::puts(kUsage), 0;
    else if (a == "--diff") diff = true;
    else if (!a.empty() && a[0] == '-') throw UsageError("ease-report: unknown option '" + a + "' (" + kUsageLine + ")");
    else inputs.push_back(a);
  }
  if (inputs.empty()) throw UsageError(std::string("ease-report: no ease.json given (") + kUsageLine + ")");
  if (diff) {
    if (inputs.size() != 2)
      throw UsageError("ease-report: --diff compares two ease.json files, A and B, not " + std::to_string(inputs.size()));
    driver::diffEaseReports(inputs[0], inputs[1], dir, top);
    return 0;
  }
  driver::mergeEaseReports(inputs, dir, top);
  return 0;
}

}  // namespace atomx::cli
