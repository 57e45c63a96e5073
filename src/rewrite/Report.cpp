#include "rewrite/Report.h"

#include <cstdio>

#include "support/Hex.h"

namespace atomx::rewrite {

namespace {

double percent(uint64_t part, uint64_t whole) { return whole ? 100.0 * double(part) / double(whole) : 100.0; }

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

void printSummary(const Rewriter& rewriter, const std::string& input, std::ostream& out) {
  const RewriteReport& r = rewriter.report();
  out << "atomx: " << input << ": moved " << r.movedProcedures << " of " << r.procedures << " procedures ("
      << fixed(percent(r.movedProcedures, r.procedures), 1) << "%), " << r.movedCodeBytes << " of " << r.codeBytes
      << " code bytes (" << fixed(percent(r.movedCodeBytes, r.codeBytes), 1) << "%) in "
      << fixed(r.analyzeSeconds + r.rewriteSeconds, 3) << " s\n";
  unsigned shown = 0;
  const uint64_t stay = r.procedures - r.movedProcedures;
  for (const ir::Procedure& p : rewriter.program().procs) {
    if (p.isMovable()) continue;
    if (shown++ == 10) {
      out << "atomx:   ... and " << (stay - 10) << " more (see --report or atomx dump)\n";
      break;
    }
    out << "atomx:   stays: " << p.name << " at " << hex(p.start) << ": " << p.reason << "\n";
  }
}

void writeJsonReport(const Rewriter& rewriter, const std::string& input, const std::string& output, std::ostream& out) {
  const RewriteReport& r = rewriter.report();
  out << "{\n";
  out << "  \"input\": " << jsonString(input) << ",\n";
  out << "  \"output\": " << jsonString(output) << ",\n";
  out << "  \"procedures\": " << r.procedures << ",\n";
  out << "  \"moved_procedures\": " << r.movedProcedures << ",\n";
  out << "  \"code_bytes\": " << r.codeBytes << ",\n";
  out << "  \"moved_code_bytes\": " << r.movedCodeBytes << ",\n";
  out << "  \"new_code_bytes\": " << r.newCodeBytes << ",\n";
  out << "  \"input_file_bytes\": " << r.inputFileBytes << ",\n";
  out << "  \"output_file_bytes\": " << r.outputFileBytes << ",\n";
  out << "  \"analyze_seconds\": " << fixed(r.analyzeSeconds, 6) << ",\n";
  out << "  \"rewrite_seconds\": " << fixed(r.rewriteSeconds, 6) << ",\n";
  // Wall seconds per phase, in the order they ran; they sum to at most
  // total_seconds (first phase's start to last one's end).
  out << "  \"total_seconds\": " << fixed(r.phases.total(), 6) << ",\n";
  out << "  \"phases\": {";
  const char* sep = "";
  for (const PhaseTimes::Phase& p : r.phases.phases()) {
    out << sep << jsonString(p.name) << ": " << fixed(p.seconds, 6);
    sep = ", ";
  }
  out << "},\n";
  for (const auto& [key, value] : r.notes) out << "  " << jsonString(key) << ": " << jsonString(value) << ",\n";
  out << "  \"fixups\": {\"data_pointers\": " << r.fixups.dataPointers
      << ", \"jump_table_entries\": " << r.fixups.jumpTableEntries
      << ", \"dynamic_relocations\": " << r.fixups.dynamicRelocations << ", \"got_slots\": " << r.fixups.gotSlots
      << ", \"unmoved_code_patches\": " << r.fixups.unmovedCodePatches << ", \"symbols\": " << r.fixups.symbols
      << "},\n";
  out << "  \"unmoved\": [";
  bool first = true;
  for (const ir::Procedure& p : rewriter.program().procs) {
    if (p.isMovable()) continue;
    out << (first ? "\n" : ",\n") << "    {\"name\": " << jsonString(p.name) << ", \"address\": " << p.start
        << ", \"size\": " << p.size() << ", \"reason\": " << jsonString(p.reason) << "}";
    first = false;
  }
  out << (first ? "]\n" : "\n  ]\n") << "}\n";
}

}  // namespace atomx::rewrite
