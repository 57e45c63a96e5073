#include "instrument/Prototype.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "support/Error.h"

namespace atomx::instrument {

namespace {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool isIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// Words of a type: identifiers and '*' tokens.
std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      cur += c;
      continue;
    }
    if (!cur.empty()) out.push_back(std::move(cur)), cur.clear();
    if (c == '*') out.push_back("*");
    else if (!std::isspace(static_cast<unsigned char>(c)))
      throw Error(std::string("unexpected '") + c + "'");
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// Size in bytes of an integer type named by `w` (qualifiers removed), or 0.
unsigned integerSize(const std::vector<std::string>& w) {
  static const std::set<std::string> k8 = {"size_t", "ssize_t", "intptr_t", "uintptr_t", "ptrdiff_t",
                                           "int64_t", "uint64_t", "off_t", "pid_t8"};
  static const std::set<std::string> k4 = {"int32_t", "uint32_t", "pid_t", "uid_t", "gid_t"};
  static const std::set<std::string> k2 = {"int16_t", "uint16_t"};
  static const std::set<std::string> k1 = {"int8_t", "uint8_t", "bool", "_Bool"};
  if (w.size() == 1) {
    if (k8.count(w[0])) return 8;
    if (k4.count(w[0])) return 4;
    if (k2.count(w[0])) return 2;
    if (k1.count(w[0])) return 1;
  }
  unsigned longs = 0, size = 0;
  bool any = false;
  for (const std::string& x : w) {
    if (x == "unsigned" || x == "signed") any = true;
    else if (x == "long") ++longs, any = true;
    else if (x == "int") size = size ? size : 4, any = true;
    else if (x == "short") size = 2, any = true;
    else if (x == "char") size = 1, any = true;
    else return 0;
  }
  if (!any) return 0;
  if (longs) return 8;
  return size ? size : 4;
}

Param parseParam(std::string_view raw) {
  Param p;
  p.text = trim(raw);
  std::string t = p.text;
  // Arrays: T[] or T[N] (a parameter name before the brackets is allowed).
  if (!t.empty() && t.back() == ']') {
    const size_t open = t.rfind('[');
    if (open == std::string::npos) throw Error("unbalanced ']' in '" + p.text + "'");
    const std::string n = trim(std::string_view(t).substr(open + 1, t.size() - open - 2));
    if (!n.empty()) {
      for (char c : n)
        if (!std::isdigit(static_cast<unsigned char>(c))) throw Error("array length '" + n + "' is not a number");
      p.arrayLength = uint32_t(std::stoul(n));
      if (p.arrayLength == 0) throw Error("an array of length 0");
    }
    t = trim(std::string_view(t).substr(0, open));
    p.kind = Param::Kind::Array;
  }
  std::vector<std::string> w = words(t);
  std::erase_if(w, [](const std::string& x) { return x == "const" || x == "volatile" || x == "struct"; });
  if (w.empty()) throw Error("a parameter without a type");
  // A trailing parameter name: a last word that is not part of a type.
  if (w.size() >= 2 && w.back() != "*" && isIdentifier(w.back())) {
    std::vector<std::string> head(w.begin(), w.end() - 1);
    const bool headIsType = integerSize(head) || head.back() == "*" || head == std::vector<std::string>{"VALUE"} ||
                            head == std::vector<std::string>{"REGV"} || head == std::vector<std::string>{"void"} ||
                            head.size() == 1;
    if (headIsType && !integerSize(w)) w = head;
  }
  for (const std::string& x : w)
    if (x == "float" || x == "double")
      throw Error("'" + p.text + "': floating-point parameters are not supported (pass integers or pointers)");
  const size_t stars = size_t(std::count(w.begin(), w.end(), std::string("*")));
  std::vector<std::string> base = w;
  std::erase(base, std::string("*"));
  if (p.kind == Param::Kind::Array) {
    if (stars) throw Error("'" + p.text + "': arrays of pointers are not supported");
    p.size = uint8_t(integerSize(base));
    if (!p.size) throw Error("'" + p.text + "': array elements must be integers");
    return p;
  }
  if (stars) {
    p.kind = Param::Kind::Pointer;
    p.isString = stars == 1 && base.size() == 1 && base[0] == "char";
    return p;
  }
  if (base.size() == 1 && base[0] == "VALUE") return p.kind = Param::Kind::Value, p;
  if (base.size() == 1 && base[0] == "REGV") return p.kind = Param::Kind::RegV, p;
  p.size = uint8_t(integerSize(base));
  if (!p.size) throw Error("'" + p.text + "' is not a type atomx can pass (integers, pointers, VALUE, REGV, T[])");
  return p;
}

}  // namespace

Prototype parsePrototype(std::string_view text) {
  const std::string s = trim(text);
  const size_t open = s.find('(');
  if (open == std::string::npos || s.back() != ')')
    throw Error("prototype '" + s + "' is not of the form Name(type, ...)");
  Prototype proto;
  proto.name = trim(std::string_view(s).substr(0, open));
  // An optional return type before the name ("void Foo(int)").
  if (const size_t sp = proto.name.find_last_of(" \t*"); sp != std::string::npos) {
    const std::string ret = trim(std::string_view(proto.name).substr(0, sp + 1));
    if (ret != "void") throw Error("prototype '" + s + "': analysis routines return void");
    proto.name = trim(std::string_view(proto.name).substr(sp + 1));
  }
  if (!isIdentifier(proto.name)) throw Error("prototype '" + s + "': '" + proto.name + "' is not a routine name");
  const std::string inner = trim(std::string_view(s).substr(open + 1, s.size() - open - 2));
  if (!inner.empty() && inner != "void") {
    size_t start = 0;
    int depth = 0;
    for (size_t i = 0; i <= inner.size(); ++i) {
      if (i < inner.size() && inner[i] == '[') ++depth;
      if (i < inner.size() && inner[i] == ']') --depth;
      if (i == inner.size() || (inner[i] == ',' && depth == 0)) {
        try {
          proto.params.push_back(parseParam(std::string_view(inner).substr(start, i - start)));
        } catch (const Error& e) {
          throw Error("prototype '" + s + "': " + e.what());
        }
        start = i + 1;
      }
    }
  }
  if (proto.params.size() > 16) throw Error("prototype '" + s + "': more than 16 parameters");
  proto.text = proto.name + "(";
  for (size_t i = 0; i < proto.params.size(); ++i) proto.text += (i ? ", " : "") + proto.params[i].text;
  proto.text += ")";
  return proto;
}

}  // namespace atomx::instrument
