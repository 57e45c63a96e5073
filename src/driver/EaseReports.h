// `atomx ease-report`: the ease.json files of several runs or programs
// (atomx run -T ease) read back, summed (ease::Data::merge, the tool's own
// merging) and written as one report with the tool's own writers
// (include/atomx/ease_report.hpp, ease_html.hpp).
#pragma once

#include <string>
#include <vector>

namespace atomx::driver {

// Writes DIR/ease.out, ease.json and ease.html (`top` rows per table in
// the text); throws atomx::Error for a file that is not an ease.json.
void mergeEaseReports(const std::vector<std::string>& inputs, const std::string& dir, long top);

// Two ease.json files compared (two builds of a program on one workload,
// the seed's Tables II and III): DIR/ease-diff.out (per report the rows
// that changed, `top` a table, and per procedure) and ease-diff.json
// (every row, A and B).  Throws atomx::Error for a file that is not an
// ease.json, or for a static file beside a dynamic one.
void diffEaseReports(const std::string& a, const std::string& b, const std::string& dir, long top);

}  // namespace atomx::driver
