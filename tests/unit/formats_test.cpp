// The one owner of each output format (include/atomx/): json.hpp's
// escaping and indented style, html.hpp, demangle.hpp.
#include <atomx/demangle.hpp>
#include <atomx/html.hpp>
#include <atomx/json.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// What f(FILE*) writes.
template <class F>
std::string written(F&& f) {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  f(out);
  std::fclose(out);
  std::string s(text, size);
  std::free(text);
  return s;
}

TEST(Demangle, SymbolsAndTypesOnly) {
  EXPECT_EQ(atomx::demangle("_ZN2ns1fEi"), "ns::f(int)");
  EXPECT_EQ(atomx::demangle("f"), "f");  // not "float"
  EXPECT_EQ(atomx::demangle("ns::f(int)"), "ns::f(int)");
  EXPECT_EQ(atomx::demangle("_Znot a symbol"), "_Znot a symbol");
  EXPECT_EQ(atomx::demangleType("St13runtime_error"), "std::runtime_error");
}

TEST(Html, Escapes) { EXPECT_EQ(atomx::htmlEscape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;"); }

TEST(Json, QuotesAsEveryWriterDoes) {
  EXPECT_EQ(atomx::JsonWriter::quoted("plain"), "\"plain\"");
  EXPECT_EQ(atomx::JsonWriter::quoted("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\u000a\\u0001\"");
  const std::string s = written([](FILE* out) { atomx::JsonWriter(out).value("a\"b\\c\n"); });
  EXPECT_EQ(s, "\"a\\\"b\\\\c\\u000a\"");
}

TEST(Json, IndentedStyle) {
  setenv("ATOMX_TEST_MISCOUNT", "n", 1);  // no effect: the style turns the test hook off
  const std::string s = written([](FILE* out) {
    atomx::JsonWriter j(out, atomx::JsonStyle{2, false});
    j.beginObject().key("n").value(1L).key("empty").beginArray().endArray();
    j.key("rows").beginArray().beginObject().key("n").value(5L).key("s").fixed(0.5, 3).endObject().endArray();
    j.endObject();
  });
  unsetenv("ATOMX_TEST_MISCOUNT");
  EXPECT_EQ(s,
            "{\n  \"n\": 1,\n  \"empty\": [],\n  \"rows\": [\n    {\n      \"n\": 5,\n      \"s\": 0.500\n    }\n  ]\n}\n");
}

}  // namespace
