#include "rewrite/Report.h"

#include <atomx/json.hpp>

#include <cstdio>
#include <cstdlib>

#include "support/Error.h"
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
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (!f) throw Error("cannot write the report: out of memory");
  JsonWriter j(f, JsonStyle{2, false});  // a document people read too; no test hook
  j.beginObject();
  j.key("input").value(input).key("output").value(output);
  j.key("procedures").value(r.procedures).key("moved_procedures").value(r.movedProcedures);
  j.key("code_bytes").value(r.codeBytes).key("moved_code_bytes").value(r.movedCodeBytes);
  j.key("new_code_bytes").value(r.newCodeBytes);
  j.key("input_file_bytes").value(r.inputFileBytes).key("output_file_bytes").value(r.outputFileBytes);
  j.key("analyze_seconds").fixed(r.analyzeSeconds, 6).key("rewrite_seconds").fixed(r.rewriteSeconds, 6);
  // Wall seconds per phase, in the order they ran; they sum to at most
  // total_seconds (first phase's start to last one's end).
  j.key("total_seconds").fixed(r.phases.total(), 6);
  j.key("phases").beginObject();
  for (const PhaseTimes::Phase& p : r.phases.phases()) j.key(p.name.c_str()).fixed(p.seconds, 6);
  j.endObject();
  for (const auto& [key, value] : r.notes) j.key(key.c_str()).value(value);
  j.key("fixups").beginObject();
  j.key("data_pointers").value(r.fixups.dataPointers).key("jump_table_entries").value(r.fixups.jumpTableEntries);
  j.key("dynamic_relocations").value(r.fixups.dynamicRelocations).key("got_slots").value(r.fixups.gotSlots);
  j.key("unmoved_code_patches").value(r.fixups.unmovedCodePatches).key("symbols").value(r.fixups.symbols);
  j.endObject();
  j.key("unmoved").beginArray();
  for (const ir::Procedure& p : rewriter.program().procs) {
    if (p.isMovable()) continue;
    j.beginObject().key("name").value(p.name).key("address").value(p.start).key("size").value(p.size());
    j.key("reason").value(p.reason).endObject();
  }
  j.endArray();
  j.endObject();
  std::fclose(f);
  out.write(text, std::streamsize(size));
  std::free(text);
}

}  // namespace atomx::rewrite
