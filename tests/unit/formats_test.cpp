// The one owner of each output format (include/atomx/): cachegrind.hpp's
// writers, json.hpp's escaping and indented style, html.hpp, demangle.hpp.
#include <atomx/cachegrind.hpp>
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

TEST(Cachegrind, TableInCachegrindsOrderWithDemangledNames) {
  const std::string s = written([](FILE* out) {
    atomx::cachegrind::CostTable t(2);
    const uint64_t a[] = {3, 1}, b[] = {2, 0}, c[] = {5, 5};
    t.add("b.c", "main", 9, a);
    t.add("a.cpp", "_ZN2ns1fEi", 4, b);
    t.add("b.c", "f", 2, c);
    t.add("b.c", "main", 9, a);  // the same line again: added up
    atomx::cachegrind::Writer w(out, {"one", "two"}, "prog -x", {"Ir", "Dr"});
    t.write(w);
    w.summary(t.totals());
  });
  EXPECT_EQ(s,
            "desc: one\ndesc: two\ncmd: prog -x\nevents: Ir Dr\n"
            "fl=a.cpp\nfn=ns::f(int)\n4 2 0\n"
            "fl=b.c\nfn=f\n2 5 5\nfn=main\n9 6 2\n"
            "summary: 13 7\n");
}

TEST(Cachegrind, CallgrindNamesEachNumberOnce) {
  const std::string s = written([](FILE* out) {
    const uint64_t total = 10, self = 7, inclusive = 3;
    atomx::cachegrind::CallgrindWriter c(out, "atomx test", 42, "prog", {"Ir"}, &total);
    c.object("ob", 1, "prog");
    c.file("fl", "a.c");
    c.function("fn", 1, "main");
    c.cost(5, &self);
    c.object("cob", 2, "(imported)");
    c.file("cfl", "???");
    c.function("cfn", 3, "_ZNSolsEi");
    c.call(2, 0, 6, &inclusive);
    c.endFunction();
    c.file("fl", "a.c");
    c.function("fn", 3, "_ZNSolsEi");
    c.object("cob", 2, "(imported)");
    c.totals(&total);
  });
  EXPECT_EQ(s,
            "# callgrind format\nversion: 1\ncreator: atomx test\npid: 42\ncmd: prog\npositions: line\n"
            "events: Ir\nsummary: 10\n\n"
            "ob=(1) prog\nfl=(1) a.c\nfn=(1) main\n5 7\ncob=(2) (imported)\ncfl=(2) ???\n"
            "cfn=(3) std::ostream::operator<<(int)\ncalls=2 0\n6 3\n\n"
            "fl=(1)\nfn=(3)\ncob=(2)\ntotals: 10\n");
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
