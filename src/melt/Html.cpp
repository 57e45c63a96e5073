#include "melt/Report.h"

#include <atomx/demangle.hpp>
#include <atomx/html.hpp>

#include <algorithm>
#include <functional>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "debuginfo/LineTable.h"
#include "support/Error.h"

namespace atomx::melt {

namespace {

std::string esc(const std::string& s) { return htmlEscape(s); }

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
  return b;
}

std::string share(uint64_t part, uint64_t whole) { return fmt("%.2f%%", whole ? 100.0 * double(part) / double(whole) : 0); }

// Executions by rank as bars, the threshold as a line.
void histogram(std::ostream& o, const Report& r, size_t mark, uint64_t threshold) {
  const size_t m = r.instructions.size();
  const size_t shown = std::min<size_t>(m, std::min<size_t>(400, std::max<size_t>(40, mark * 3)));
  const double W = 720, H = 240, left = 70, bottom = 30, top = r.instructions.empty() ? 1 : double(r.instructions[0].executions);
  const double bw = (W - left - 10) / double(std::max<size_t>(shown, 1));
  o << "<svg id=\"histogram\" width=\"" << W << "\" height=\"" << H + bottom << "\" role=\"img\" aria-label=\"executions by rank\">\n";
  o << "<line x1=\"" << left << "\" y1=\"" << H << "\" x2=\"" << W - 10 << "\" y2=\"" << H << "\" stroke=\"#333\"/>\n";
  o << "<line x1=\"" << left << "\" y1=\"10\" x2=\"" << left << "\" y2=\"" << H << "\" stroke=\"#333\"/>\n";
  o << "<text x=\"" << left - 5 << "\" y=\"16\" text-anchor=\"end\" font-size=\"11\">" << uint64_t(top) << "</text>\n";
  o << "<text x=\"" << left - 5 << "\" y=\"" << H << "\" text-anchor=\"end\" font-size=\"11\">0</text>\n";
  for (size_t k = 0; k < shown; ++k) {
    const double h = (H - 10) * double(r.instructions[k].executions) / top;
    o << "<rect class=\"bar\" x=\"" << fmt("%.2f", left + bw * double(k)) << "\" y=\"" << fmt("%.2f", H - h) << "\" width=\""
      << fmt("%.2f", std::max(bw - 0.5, 0.5)) << "\" height=\"" << fmt("%.2f", h) << "\" fill=\""
      << (mark && k < mark ? "#3b6fc4" : "#9ab") << "\"><title>i" << k + 1 << ": " << r.instructions[k].executions
      << "</title></rect>\n";
  }
  if (threshold) {
    const double y = H - (H - 10) * double(threshold) / top;
    o << "<line id=\"threshold\" x1=\"" << left << "\" y1=\"" << fmt("%.2f", y) << "\" x2=\"" << W - 10 << "\" y2=\""
      << fmt("%.2f", y) << "\" stroke=\"#c33\" stroke-dasharray=\"4 3\"/>\n";
    o << "<text x=\"" << W - 12 << "\" y=\"" << fmt("%.2f", y - 4) << "\" text-anchor=\"end\" font-size=\"11\" fill=\"#c33\">threshold "
      << threshold << "</text>\n";
  }
  o << "<text x=\"" << (left + W) / 2 << "\" y=\"" << H + 22 << "\" text-anchor=\"middle\" font-size=\"12\">rank i1 .. i"
    << shown << " of i" << m << " (blue: kept)</text>\n</svg>\n";
}

// The sorted cumulative coverage curve, its chord, and the knee.
void curve(std::ostream& o, const Report& r, size_t knee) {
  const double S = 240, pad = 30;
  const size_t m = r.instructions.size();
  o << "<svg id=\"curve\" width=\"" << S + 2 * pad << "\" height=\"" << S + 2 * pad
    << "\" role=\"img\" aria-label=\"cumulative coverage\">\n";
  o << "<rect x=\"" << pad << "\" y=\"" << pad << "\" width=\"" << S << "\" height=\"" << S << "\" fill=\"none\" stroke=\"#333\"/>\n";
  o << "<line x1=\"" << pad << "\" y1=\"" << pad + S << "\" x2=\"" << pad + S << "\" y2=\"" << pad
    << "\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n<polyline fill=\"none\" stroke=\"#3b6fc4\" points=\"" << pad << ","
    << pad + S;
  uint64_t cum = 0;
  const size_t step = std::max<size_t>(1, m / 400);
  for (size_t k = 0; k < m; ++k) {
    cum += r.instructions[k].executions;
    if (k % step == 0 || k + 1 == m || k + 1 == knee)
      o << " " << fmt("%.2f", pad + S * double(k + 1) / double(m)) << ","
        << fmt("%.2f", pad + S - S * double(cum) / double(std::max<uint64_t>(r.executed, 1)));
  }
  o << "\"/>\n";
  if (knee) {
    uint64_t c = 0;
    for (size_t k = 0; k < knee; ++k) c += r.instructions[k].executions;
    o << "<circle id=\"knee\" cx=\"" << fmt("%.2f", pad + S * double(knee) / double(m)) << "\" cy=\""
      << fmt("%.2f", pad + S - S * double(c) / double(std::max<uint64_t>(r.executed, 1))) << "\" r=\"4\" fill=\"#c33\"/>\n";
  }
  o << "<text x=\"" << pad << "\" y=\"" << pad - 8 << "\" font-size=\"11\">cumulative share by rank"
    << (knee ? ", knee i" + std::to_string(knee) : std::string()) << "</text>\n</svg>\n";
}

// "11 of enqueue's 83 (13.25%); 1.51% of the program".
std::string staticShare(const Sequence& q, const Report& r, const std::function<std::string(const std::string&)>& name) {
  std::string s;
  for (const StaticShare& x : q.staticShares)
    s += (s.empty() ? "" : ", ") + std::to_string(x.instructions) + " of " + name(x.procedure) + "'s " +
         std::to_string(x.procedureSize) + " (" + share(x.instructions, x.procedureSize) + ")";
  return esc(s + "; " + share(q.staticInstructions, r.programInstructions) + " of the program");
}

void sequences(std::ostream& o, const Report& r, const std::vector<Sequence>& seqs, bool seed,
               const std::string& id, const std::function<std::string(uint64_t)>& where,
               const std::function<std::string(const std::string&)>& name) {
  o << "<table class=\"seqs\" id=\"" << id << "\"><thead><tr><th>#</th><th>occurrences</th><th>length</th>"
    << "<th>length &times; occurrences</th><th>share</th><th>static share</th>" << (seed ? "<th>kind</th>" : "")
    << "<th>procedures</th><th>instructions</th></tr></thead><tbody>\n";
  for (size_t n = 0; n < seqs.size(); ++n) {
    const Sequence& q = seqs[n];
    std::vector<std::string> procs;
    for (const std::string& p : q.procedures)
      if (std::find(procs.begin(), procs.end(), name(p)) == procs.end()) procs.push_back(name(p));
    std::string plist;
    for (const std::string& p : procs) plist += (plist.empty() ? "" : ", ") + p;
    o << "<tr class=\"seq\"><td>" << n + 1 << "</td><td>" << q.occurrences << "</td><td>" << q.insns.size() << "</td><td>"
      << q.coverage() << "</td><td>" << share(q.coverage(), r.executed) << "</td><td title=\"its distinct instructions: of "
      << "its procedures' and of the program's\">" << staticShare(q, r, name) << "</td>"
      << (seed ? std::string("<td>") + (q.cyclic ? "cyclic" : "a whole chunk") + "</td>" : "") << "<td>" << esc(plist)
      << "</td><td><details><summary>" << q.insns.size() << " instructions</summary><table class=\"insns\">";
    const size_t shown = std::min<size_t>(q.insns.size(), 200);
    for (size_t k = 0; k < shown; ++k)
      o << "<tr><td>" << hex(q.pcs[k]) << "</td><td>i" << q.insns[k] + 1 << "</td><td>" << esc(name(q.procedures[k]))
        << "</td><td>" << esc(where(q.pcs[k])) << "</td><td><code>" << esc(r.instructions[q.insns[k]].text)
        << "</code></td></tr>";
    if (shown < q.insns.size()) o << "<tr><td colspan=\"5\">... " << q.insns.size() - shown << " more (the JSON has every pc)</td></tr>";
    o << "</table></details></td></tr>\n";
  }
  o << "</tbody></table>\n";
}

}  // namespace

void writeHtml(const std::string& path, const std::string& dir, const Report& r) {
  const debuginfo::LineTable lines(r.program);
  const std::function<std::string(uint64_t)> where = [&](uint64_t pc) { return sourceLine(lines, pc); };
  const std::function<std::string(const std::string&)> name = [](const std::string& s) { return demangle(s); };
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>atomx melt " << esc(dir) << "</title>\n"
    << "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
    << "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:last-child{text-align:left}"
    << "table.insns td{border:none;text-align:left}code{white-space:pre}svg{margin-right:1em}</style></head><body>\n";
  o << "<h1>atomx melt</h1>\n<p>" << esc(dir) << ": " << esc(r.program) << "<br>" << r.executed << " instructions executed in "
    << r.threads << " thread(s), " << r.segments << " segment(s); " << r.instructions.size() << " distinct instructions by "
    << (r.identity == Identity::Address ? "address" : "text") << ".</p>\n";
  o << "<h2>Coverage</h2>\n";
  histogram(o, r, r.seedRun ? r.seed.kneeRank : 0, r.seedRun ? r.seed.threshold : 0);
  curve(o, r, r.seedRun && r.seed.automatic ? r.seed.kneeRank : 0);
  o << "<table id=\"coverage\"><thead><tr><th>rank</th><th>executions</th><th>share</th><th>pc</th><th>procedure</th>"
    << "<th>source</th><th>instruction</th></tr></thead><tbody>\n";
  for (size_t k = 0; k < std::min<size_t>(15, r.instructions.size()); ++k) {
    const Instruction& i = r.instructions[k];
    o << "<tr><td>i" << k + 1 << "</td><td>" << i.executions << "</td><td>" << share(i.executions, r.executed) << "</td><td>"
      << hex(i.pc) << "</td><td>" << esc(name(i.procedure)) << "</td><td>" << esc(where(i.pc)) << "</td><td><code>"
      << esc(i.text) << "</code></td></tr>\n";
  }
  o << "</tbody></table>\n";
  if (r.seedRun) {
    const SeedResult& s = r.seed;
    o << "<h2>The seed's method (melting)</h2>\n<p>Threshold " << s.threshold
      << (s.automatic ? ", at the knee i" + std::to_string(s.kneeRank) +
                            ": the point of the cumulative coverage curve farthest from its chord"
                      : ", given")
      << ". " << s.keptInstructions << " executed instructions kept (" << share(s.keptInstructions, r.executed) << "); "
      << s.chunks << " chunks, " << s.distinctChunks << " distinct, smallest " << s.smallestChunk << ", largest "
      << s.largestChunk << "; " << s.sequencesFound << " sequences.</p>\n";
    sequences(o, r, s.sequences, true, "seed", where, name);
  }
  if (r.exactRun) {
    o << "<h2>The exact method</h2>\n<p>" << r.exact.candidates << " distinct candidate sequences of whole blocks, at most "
      << r.exact.maxLength << " instructions; ranked by length &times; non-overlapping occurrences.</p>\n";
    sequences(o, r, r.exact.sequences, false, "exact", where, name);
  }
  // What the browser drew: the tests read it back (tests/melt/html_check.py).
  o << "<pre id=\"rendered\" hidden></pre>\n<script>\n"
    << "addEventListener('load', () => {\n"
    << "  const box = e => e ? e.getBoundingClientRect() : {width: 0, height: 0};\n"
    << "  const bars = [...document.querySelectorAll('#histogram rect.bar')];\n"
    << "  const rows = id => [...document.querySelectorAll('#' + id + ' tr.seq')].filter(t => box(t).height > 0).length;\n"
    << "  document.getElementById('rendered').textContent = JSON.stringify({\n"
    << "    bars: bars.length, barsDrawn: bars.filter(b => box(b).width > 0 && box(b).height > 0).length,\n"
    << "    chart: box(document.getElementById('histogram')).width, curve: box(document.getElementById('curve')).width,\n"
    << "    coverageRows: [...document.querySelectorAll('#coverage tbody tr')].filter(t => box(t).height > 0).length,\n"
    << "    seedRows: rows('seed'), exactRows: rows('exact')});\n"
    << "});\n</script>\n</body></html>\n";
  std::ofstream out(path);
  if (!(out << o.str()) || !out.flush()) throw Error(path + ": cannot write");
}

}  // namespace atomx::melt
