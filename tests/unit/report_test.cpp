// atomx/report.hpp: the JSON writer the shipped tools share, and its
// ATOMX_TEST_MISCOUNT switch, which the oracles' self-tests rely on to make
// a tool off by one in exactly one record (tests/oracles/CMakeLists.txt).
#include <atomx/report.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// {"total":5,"rows":[{"n":5,"m":5},...4 rows...],"other":[{"n":5}]} written
// with ATOMX_TEST_MISCOUNT=`miscount` (unset when null).
std::string write(const char* miscount) {
  if (miscount) setenv("ATOMX_TEST_MISCOUNT", miscount, 1);
  else unsetenv("ATOMX_TEST_MISCOUNT");
  FILE* f = std::tmpfile();
  {
    atomx::JsonWriter j(f);
    j.beginObject().key("total").value(5L).key("rows").beginArray();
    for (int k = 0; k < 4; ++k) j.beginObject().key("n").value(k == 0 ? 0L : 5L).key("m").value(5L).endObject();
    j.endArray().key("other").beginArray().beginObject().key("n").value(5L).endObject().endArray().endObject();
  }
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;)
    if (c != '\n') s += char(c);
  std::fclose(f);
  unsetenv("ATOMX_TEST_MISCOUNT");
  return s;
}

const std::string kRight =
    R"({"total":5,"rows":[{"n":0,"m":5},{"n":5,"m":5},{"n":5,"m":5},{"n":5,"m":5}],"other":[{"n":5}]})";

TEST(JsonWriter, WritesWhatItIsGiven) { EXPECT_EQ(write(nullptr), kRight); }

TEST(JsonWriter, MiscountRaisesTheFirstPositiveRecordOnly) {
  // Not the total (outside an array), not the zero in the first row.
  EXPECT_EQ(write("n"),
            R"({"total":5,"rows":[{"n":0,"m":5},{"n":6,"m":5},{"n":5,"m":5},{"n":5,"m":5}],"other":[{"n":5}]})");
  EXPECT_EQ(write("total"), kRight);
}

TEST(JsonWriter, MiscountNamesTheArray) {
  EXPECT_EQ(write("other.n"),
            R"({"total":5,"rows":[{"n":0,"m":5},{"n":5,"m":5},{"n":5,"m":5},{"n":5,"m":5}],"other":[{"n":6}]})");
  EXPECT_EQ(write("nothing.n"), kRight);
}

TEST(JsonWriter, MiscountPicksTheNthRecord) {
  EXPECT_EQ(write("rows.m#3"),
            R"({"total":5,"rows":[{"n":0,"m":5},{"n":5,"m":5},{"n":5,"m":6},{"n":5,"m":5}],"other":[{"n":5}]})");
  EXPECT_EQ(write("n#4"),  // the 4th positive n is the one in "other"
            R"({"total":5,"rows":[{"n":0,"m":5},{"n":5,"m":5},{"n":5,"m":5},{"n":5,"m":5}],"other":[{"n":6}]})");
  EXPECT_EQ(write("rows.m#5"), kRight);  // there are only four
}

}  // namespace

namespace {
TEST(GroupDigits, CommasEveryThreeDigits) {
  EXPECT_EQ(atomx::groupDigits(0), "0");
  EXPECT_EQ(atomx::groupDigits(999), "999");
  EXPECT_EQ(atomx::groupDigits(1000), "1,000");
  EXPECT_EQ(atomx::groupDigits(123456), "123,456");
  EXPECT_EQ(atomx::groupDigits(1234567), "1,234,567");
  EXPECT_EQ(atomx::groupDigits(UINT64_MAX), "18,446,744,073,709,551,615");
}
}  // namespace
