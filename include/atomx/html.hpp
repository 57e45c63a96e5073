// atomx::htmlEscape: text made safe inside an HTML element or a quoted
// attribute (<, >, & and "), the one escaping of the HTML reports (ease.html,
// the melt report).  Header only.
#pragma once

#include <string>

namespace atomx {

inline std::string htmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

}  // namespace atomx
