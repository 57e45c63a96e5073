// atomx: writing a tool's results (analysis side, C++).
//
// Every shipped tool writes NAME.out, a summary a person reads on one screen,
// and NAME.json, all of its data for programs.  This header holds what they
// share: a small streaming JSON writer and the file naming (AtomxOutputPath:
// NAME.out in the first process, NAME.out.PID in a forked child).  Header
// only; the JSON writer allocates nothing and never throws.
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

#include <atomx/analysis.h>
#include <atomx/demangle.hpp>

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

// Writes one JSON value to a FILE*.  Commas and nesting are tracked here, so
// the caller only says what comes next.  At most 32 levels of nesting.
class JsonWriter {
 public:
  explicit JsonWriter(FILE* out) : out_(out), miscount_(std::getenv("ATOMX_TEST_MISCOUNT")) {
    if (const char* hash = miscount_ ? std::strchr(miscount_, '#') : nullptr) miscountSkip_ = std::atol(hash + 1) - 1;
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
  }
  void open(char c) {
    separate();
    put(c);
    if (depth_ < kMaxDepth) first_[depth_] = true;
    ++depth_;
  }
  void close(char c) {
    --depth_;
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
    put('"');
    for (; *s; ++s) {
      const unsigned char ch = static_cast<unsigned char>(*s);
      if (ch == '"' || ch == '\\') std::fprintf(out_, "\\%c", ch);
      else if (ch < 0x20) std::fprintf(out_, "\\u%04x", ch);
      else put(char(ch));
    }
    put('"');
  }

  static constexpr int kMaxDepth = 32;
  FILE* out_;
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
