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

}  // namespace atomx::driver
