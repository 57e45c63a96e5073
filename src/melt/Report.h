// The report of `atomx melt` (docs/melting.md): text for a person, JSON
// for a program, one HTML page with the histogram and the coverage curve.
// What the command line and `atomx run -T melt` print; the data is
// melt::mine's Report.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include "melt/Melt.h"

namespace atomx::debuginfo {
class LineTable;
}

namespace atomx::melt {

// The coverage table (its first `coverageRows` instructions), the
// histogram, the threshold and why, the chunks, each method's sequences,
// and where the two methods agree.  `dir` names the trace.
void writeText(std::FILE* f, const std::string& dir, const Report& r, size_t coverageRows);

// The whole report as one JSON object: every instruction, every sequence
// with its pcs in order (docs/melting.md, "JSON").
void writeJson(std::FILE* f, const std::string& dir, const Report& r);

// One self-contained page: the histogram and the cumulative coverage curve
// with the knee as inline SVG, the coverage table, and each method's
// sequences.  Throws atomx::Error when `path` cannot be written.
void writeHtml(const std::string& path, const std::string& dir, const Report& r);

// `pc`'s source line as the report shows it: FILE:LINE (the file's base
// name), or "?".
std::string sourceLine(const debuginfo::LineTable& lines, uint64_t pc);

}  // namespace atomx::melt
