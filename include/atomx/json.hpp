// atomx::JsonWriter: the one JSON writer of atomx, header only: every
// tool's NAME.json (through <atomx/report.hpp>) and atomx's own documents
// (the rewrite report, --report).  It allocates nothing and never throws.
//
//     atomx::JsonWriter j(file);
//     j.beginObject();
//     j.key("tool").value("branch");
//     j.key("sites").beginArray();
//     for (...) { j.beginObject(); j.key("pc").hex(pc); j.key("taken").value(n); j.endObject(); }
//     j.endArray();
//     j.endObject();  // and a newline
//
// For the oracles' self-tests only: with ATOMX_TEST_MISCOUNT=KEY in the
// environment, the first positive integer written under KEY inside an array
// (a record, not a total) is written one too high, so that every checker can
// show it catches a tool that is off by one (tests/oracles/CMakeLists.txt);
// ARRAY.KEY: only in the records of the array written under key ARRAY;
// KEY#N (or ARRAY.KEY#N): the N-th such positive integer instead of the first.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace atomx {

// How a JsonWriter lays its document out.  indent 0: on one line (a tool's
// record, for programs); N: each member and element on a line of its own,
// N spaces deeper per level (a document people read too).  testMiscount:
// whether ATOMX_TEST_MISCOUNT applies (above).
struct JsonStyle {
  int indent = 0;
  bool testMiscount = true;
};

// Writes one JSON value to a FILE*.  Commas and nesting are tracked here, so
// the caller only says what comes next.  At most 32 levels of nesting.
class JsonWriter {
 public:
  explicit JsonWriter(FILE* out, JsonStyle style = JsonStyle())
      : out_(out), indent_(style.indent), miscount_(style.testMiscount ? std::getenv("ATOMX_TEST_MISCOUNT") : nullptr) {
    if (const char* hash = miscount_ ? std::strchr(miscount_, '#') : nullptr) miscountSkip_ = std::atol(hash + 1) - 1;
  }

  // The one JSON string escaping: `s` in quotes, with `"`, `\` and control
  // characters escaped, through put(const char*, size_t).
  template <class Put>
  static void quote(const char* s, Put&& put) {
    put("\"", 1);
    const char* run = s;  // characters written as they are
    for (; *s; ++s) {
      const unsigned char ch = static_cast<unsigned char>(*s);
      if (ch != '"' && ch != '\\' && ch >= 0x20) continue;
      put(run, size_t(s - run));
      char e[8];
      if (ch < 0x20) std::snprintf(e, sizeof e, "\\u%04x", ch);
      else e[0] = '\\', e[1] = char(ch), e[2] = 0;
      put(e, std::strlen(e));
      run = s + 1;
    }
    put(run, size_t(s - run));
    put("\"", 1);
  }
  // `s` as a JSON string literal, quotes included.
  static std::string quoted(const std::string& s) {
    std::string out;
    quote(s.c_str(), [&](const char* p, size_t n) { out.append(p, n); });
    return out;
  }

  JsonWriter& beginObject() { open('{'); return *this; }
  JsonWriter& endObject() { close('}'); return *this; }
  JsonWriter& beginArray() {
    open('[');
    if (miscount_ && arrays_ < kMaxDepth) std::memcpy(arrayKey_[arrays_], lastKey_, sizeof lastKey_);
    ++arrays_;
    return *this;
  }
  JsonWriter& endArray() { close(']'); --arrays_; return *this; }
  JsonWriter& key(const char* k) {
    separate();
    string(k);
    put(':');
    if (indent_) put(' ');
    afterKey_ = true;
    if (miscount_) {
      std::snprintf(lastKey_, sizeof lastKey_, "%s", k);
      const char* dot = std::strchr(miscount_, '.');
      const char* inner = arrays_ > 0 && arrays_ <= kMaxDepth ? arrayKey_[arrays_ - 1] : "";
      const char* want = dot ? dot + 1 : miscount_;
      const size_t wantLength = std::strcspn(want, "#");
      miscountNext_ = arrays_ > 0 && std::strlen(k) == wantLength && std::strncmp(k, want, wantLength) == 0 &&
                      (!dot || (std::strlen(inner) == size_t(dot - miscount_) &&
                                std::strncmp(inner, miscount_, size_t(dot - miscount_)) == 0));
    }
    return *this;
  }
  JsonWriter& value(const char* s) {
    separate();
    if (s) string(s);
    else std::fputs("null", out_);
    return *this;
  }
  JsonWriter& value(const std::string& s) { return value(s.c_str()); }
  JsonWriter& value(bool b) { separate(); std::fputs(b ? "true" : "false", out_); return *this; }
  JsonWriter& value(int v) { return value(static_cast<long long>(v)); }
  JsonWriter& value(long v) { return value(static_cast<long long>(v)); }
  JsonWriter& value(long long v) {
    separate();
    number(v + (v > 0 && miscounted()));
    return *this;
  }
  JsonWriter& value(unsigned v) { return value(static_cast<unsigned long long>(v)); }
  JsonWriter& value(unsigned long v) { return value(static_cast<unsigned long long>(v)); }
  JsonWriter& value(unsigned long long v) {
    separate();
    number(v + (v > 0 && miscounted()));
    return *this;
  }
  JsonWriter& value(double v) {
    separate();
    if (v != v || v - v != 0) std::fputs("null", out_);  // NaN and infinities are not JSON
    else std::fprintf(out_, "%.6g", v);
    return *this;
  }
  // A number with `digits` digits after the point ("0.001250"); null if not finite.
  JsonWriter& fixed(double v, int digits) {
    separate();
    if (v != v || v - v != 0) std::fputs("null", out_);
    else std::fprintf(out_, "%.*f", digits, v);
    return *this;
  }
  // An address as a string "0x401136": JSON numbers lose precision above 2^53.
  JsonWriter& hex(uint64_t v) {
    separate();
    char text[24] = "\"0x";
    char* end = std::to_chars(text + 3, text + sizeof text - 1, v, 16).ptr;
    *end++ = '"';
    fwrite_unlocked(text, 1, size_t(end - text), out_);
    return *this;
  }

 private:
  bool miscounted() {  // ATOMX_TEST_MISCOUNT: once per writer
    if (!miscountNext_) return false;
    miscountNext_ = false;
    if (miscountSkip_-- > 0) return false;
    miscount_ = nullptr;
    return true;
  }
  void separate() {
    if (afterKey_) { afterKey_ = false; return; }
    if (depth_ > 0 && !first_[depth_ - 1]) put(',');
    if (depth_ > 0) first_[depth_ - 1] = false;
    if (depth_ > 0 && indent_) newline(depth_);
  }
  void newline(int depth) {
    put('\n');
    for (int k = 0; k < depth * indent_; ++k) put(' ');
  }
  void open(char c) {
    separate();
    put(c);
    if (depth_ < kMaxDepth) first_[depth_] = true;
    ++depth_;
  }
  void close(char c) {
    --depth_;
    if (indent_ && depth_ < kMaxDepth && !first_[depth_]) newline(depth_);
    put(c);
    if (depth_ == 0) put('\n');
  }
  // One character: the writer is the stream's only user while it writes
  // (a locked fputc per character made a 250 KB dyninst.json cost
  // milliseconds at every process's exit).
  void put(char c) { putc_unlocked(c, out_); }
  template <class Int>
  void number(Int v) {
    char text[24];
    fwrite_unlocked(text, 1, size_t(std::to_chars(text, text + sizeof text, v).ptr - text), out_);
  }
  void string(const char* s) {
    quote(s, [this](const char* p, size_t n) { fwrite_unlocked(p, 1, n, out_); });
  }

  static constexpr int kMaxDepth = 32;
  FILE* out_;
  int indent_;
  int depth_ = 0;
  bool first_[kMaxDepth] = {};
  bool afterKey_ = false;
  int arrays_ = 0;  // arrays open around what is written next
  char lastKey_[32] = {};  // ATOMX_TEST_MISCOUNT only: the key written last,
  char arrayKey_[kMaxDepth][32] = {};  // and the one each open array was written under
  const char* miscount_;
  bool miscountNext_ = false;
  long miscountSkip_ = 0;  // positive values under the key still to pass over (KEY#N)
};

}  // namespace atomx
