// ease.html: the reports as a page: the figures, then each table with a
// bar chart (inline SVG: no script or style from elsewhere).  A small
// script records what the browser drew in #rendered, which the tests read
// back from headless Chromium (tests/tools/ease/html_check.py).  Header only.
#pragma once

#include <atomx/ease_report.hpp>

#include <atomx/html.hpp>

#include <cstdio>
#include <string>

namespace ease {

using atomx::htmlEscape;

// One table: a bar chart of its largest rows, and every row (at most 500).
inline void writeHtmlTable(FILE* out, const TableInfo& ti, const Table& t, bool isStatic = false) {
  constexpr int kBars = 16, kRowHeight = 20, kLabel = 260, kBarWidth = 420;
  const auto rows = sorted(t);
  long sum = 0;
  for (const auto& [k, v] : rows) sum += v;
  const long most = rows.empty() ? 1 : std::max(1L, rows.front().second);
  const int bars = int(std::min<size_t>(rows.size(), kBars));
  std::fprintf(out, "<section class=\"report\"><h2>%s</h2>\n", htmlEscape(ti.title).c_str());
  std::fprintf(out, "<svg class=\"chart\" width=\"%d\" height=\"%d\" role=\"img\">\n", kLabel + kBarWidth + 90,
               bars * kRowHeight + 4);
  for (int k = 0; k < bars; ++k) {
    const auto& [key, v] = rows[size_t(k)];
    const int y = k * kRowHeight + 2;
    const double w = std::max(1.0, double(kBarWidth) * double(v) / double(most));
    std::fprintf(out,
                 "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text><rect class=\"bar\" x=\"%d\" y=\"%d\" "
                 "width=\"%.1f\" height=\"%d\"><title>%s: %ld</title></rect><text x=\"%.1f\" y=\"%d\">%.2f%%</text>\n",
                 kLabel - 6, y + 14, htmlEscape(key).c_str(), kLabel, y, w, kRowHeight - 4, htmlEscape(key).c_str(), v,
                 kLabel + w + 4, y + 14, percent(v, sum));
  }
  std::fprintf(out, "</svg>\n<table class=\"rows\"><thead><tr><th>%s</th><th>%s</th><th>per cent</th></tr></thead><tbody>\n",
               std::string(ti.table) == "memory reference" ? "access | addressing mode | size" : "",
               isStatic ? "number in program" : "number executed");
  size_t shown = 0;
  for (const auto& [key, v] : rows) {
    if (++shown > 500) break;
    std::fprintf(out, "<tr><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%.2f</td></tr>\n", htmlEscape(key).c_str(),
                 atomx::groupDigits(uint64_t(v)).c_str(), percent(v, sum));
  }
  std::fprintf(out, "</tbody><tfoot><tr><td>total</td><td class=\"n\">%s</td><td class=\"n\">100.00</td></tr></tfoot></table></section>\n",
               atomx::groupDigits(uint64_t(sum)).c_str());
}

inline void writeHtml(FILE* out, const Data& d) {
  std::fprintf(out,
               "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ease: %s</title>\n<style>\n"
               "body{font-family:sans-serif;margin:1.5em;color:#222}\n"
               "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{padding:2px 10px;border-bottom:1px solid #ddd;text-align:left}\n"
               "td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
               "svg.chart text{font-size:12px}rect.bar{fill:#4a7ebb}\n"
               "</style></head><body>\n<h1>ease: architecture reports%s</h1>\n<p>%s</p>\n<p>%s</p>\n",
               htmlEscape(programList(d)).c_str(), d.isStatic ? " (static)" : "", htmlEscape(programList(d)).c_str(),
               d.isStatic ? "Static: each instruction of the program counted once, whether or not it ran."
                          : "Dynamic: each instruction counted as often as it ran.");
  std::fprintf(out, "<table id=\"figures\"><tbody>\n");
  for (const Figure& f : figures(d))
    std::fprintf(out, "<tr><td>%s</td><td class=\"n\">%s</td><td>%s</td></tr>\n", htmlEscape(f.label).c_str(),
                 atomx::groupDigits(uint64_t(f.value)).c_str(), htmlEscape(f.remark).c_str());
  std::fprintf(out, "</tbody></table>\n");
  for (const TableInfo& ti : kTables) {
    auto it = d.tables.find(ti.table);
    if (it != d.tables.end() && !it->second.empty()) writeHtmlTable(out, ti, it->second, d.isStatic);
  }
  // What the browser drew: the tests read it back.
  std::fprintf(out,
               "<pre id=\"rendered\" hidden></pre>\n<script>\naddEventListener('load', () => {\n"
               "  const box = e => e.getBoundingClientRect();\n"
               "  const drawn = e => box(e).width > 0 && box(e).height > 0;\n"
               "  const bars = [...document.querySelectorAll('svg.chart rect.bar')];\n"
               "  const rows = [...document.querySelectorAll('table.rows tbody tr')];\n"
               "  document.getElementById('rendered').textContent = JSON.stringify({\n"
               "    sections: document.querySelectorAll('section.report').length,\n"
               "    charts: [...document.querySelectorAll('svg.chart')].filter(drawn).length,\n"
               "    bars: bars.length, barsDrawn: bars.filter(drawn).length,\n"
               "    rows: rows.length, rowsDrawn: rows.filter(drawn).length,\n"
               "    figures: [...document.querySelectorAll('#figures tr')].filter(drawn).length,\n"
               "    titles: [...document.querySelectorAll('section.report h2')].map(h => h.textContent)});\n"
               "});\n</script>\n</body></html>\n");
}

}  // namespace ease
