// atomx: writing a tool's results (analysis side, C++).
//
// Every shipped tool writes NAME.out, a summary a person reads on one screen,
// and NAME.json, all of its data for programs.  This header holds what they
// share: a small streaming JSON writer (<atomx/json.hpp>) and the file naming
// (AtomxOutputPath: NAME.out in the first process, NAME.out.PID in a forked
// child).  Header only; the JSON writer allocates nothing and never throws.
//
//     atomx::JsonWriter j(file);
//     j.beginObject();
//     j.key("tool").value("branch");
//     j.key("sites").beginArray();
//     for (...) { j.beginObject(); j.key("pc").hex(pc); j.key("taken").value(n); j.endObject(); }
//     j.endArray();
//     j.endObject();  // and a newline
#pragma once

#include <atomx/analysis.h>
#include <atomx/demangle.hpp>
#include <atomx/json.hpp>

#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace atomx {

// Opens AtomxOutputPath(name) for writing (AtomxOpenOutput); null (and a line on stderr) if
// that fails, so a tool can go on without that output.  Its buffer is
// 256 KB: a report is written in a few system calls, not one per 4 KB.
inline FILE* openToolOutput(const char* name) {
  FILE* f = AtomxOpenOutput(name);
  if (!f) std::fprintf(stderr, "atomx: cannot write %s\n", AtomxOutputPath(name));
  else std::setvbuf(f, nullptr, _IOFBF, 256 * 1024);
  return f;
}

// The `n` NUL-terminated strings of a table built with atomx::appendString.
inline std::vector<std::string> splitStrings(const char* table, size_t n) {
  std::vector<std::string> v;
  for (size_t i = 0; i < n; ++i) v.emplace_back(table), table += v.back().size() + 1;
  return v;
}

// 1234567 -> "1,234,567", for summaries.
inline std::string groupDigits(uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

}  // namespace atomx
