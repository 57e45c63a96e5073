// `atomx melt --html FILE`: the report as one self-contained page: the
// histogram and the cumulative coverage curve with the knee as inline SVG,
// the coverage table, and each method's sequences (their instructions in a
// <details> each).  No script but a few lines that record, in the page, the
// size the browser gave the chart and the tables (tests/melt checks them
// with headless Chromium).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "melt/Melt.h"

namespace atomx::cli {

// `where(pc)`: its source line; `name(symbol)`: the procedure as shown.
void writeMeltHtml(const std::string& path, const std::string& dir, const melt::Report& r,
                   const std::function<std::string(uint64_t)>& where,
                   const std::function<std::string(const std::string&)>& name);

}  // namespace atomx::cli
