// The rewrite report: a one-screen summary and a JSON document.
#pragma once

#include <ostream>
#include <string>

#include "rewrite/Rewriter.h"

namespace atomx::rewrite {

void printSummary(const Rewriter& rewriter, const std::string& input, std::ostream& out);
void writeJsonReport(const Rewriter& rewriter, const std::string& input, const std::string& output, std::ostream& out);

}  // namespace atomx::rewrite
