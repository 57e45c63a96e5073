// `atomx regen`'s outputs of a data trace (src/analyze/Analyzers.cpp) on
// hand-made events, for what no traced program makes yet: a LibraryCall
// (libc's modelled references) and a locked read-modify-write next to a
// plain one.  --binary is decoded here from the layout trace_format.h
// documents (every field of BLOCK, DATA, CALL and LIBRARY records);
// --cachegrind-out must hold Ir, Dr and Dw per function as Valgrind counts
// them (a modify one read, a locked one two) and libc's references under
// their own file.  The twin: a DATA record's references moved to another
// instruction (the decoder's check) is caught by the same comparison.
#include <atomx/analyzer.hpp>
#include <atomx/trace.hpp>
#include <atomx/trace_format.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "analyze/Analyzers.h"

using atomx::trace::BlockRun;
using atomx::trace::DataRef;
using atomx::trace::Instruction;
using atomx::trace::LibraryCall;

namespace {

const Instruction kInsns[] = {{0x1000, 4}, {0x1004, 3}, {0x1007, 5}};
const DataRef kRefs[] = {{0x7000, 0, 8, atomx::trace::kRead, false},
                         {0x7008, 1, 4, atomx::trace::kModify, true},
                         {0x7010, 2, 8, atomx::trace::kModify, false},
                         {0x7018, 2, 2, atomx::trace::kWrite, false}};
const DataRef kLibrary[] = {{0x9000, 0, 64, atomx::trace::kRead, false}, {0xa000, 0, 64, atomx::trace::kWrite, false}};

std::string tempPath(const char* stem) {
  return ::testing::TempDir() + stem + std::to_string(getpid());
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs one analyser over the events of one thread.
void feed(atomx::trace::Analyzer& a) {
  std::vector<std::unique_ptr<atomx::trace::Consumer>> shards;
  shards.push_back(a.shard({0, 42, "thread.42.axt", true}));
  atomx::trace::Consumer& c = *shards[0];
  c.threadBegin(42);
  BlockRun b{42, 0x1000, kInsns, 3, "f", false};
  b.refs = kRefs, b.refCount = 4;
  c.block(b);
  c.outsideCall(42, 0x1007, "memcpy@plt");
  c.libraryCall(LibraryCall{42, 0x1007, "memcpy", kLibrary, 2, false});
  c.threadEnd(42, "");
  a.merge(shards);
  a.report(atomx::trace::Summary{});
}

template <typename T>
T take(const std::string& s, size_t& at) {
  T v;
  std::memcpy(&v, s.data() + at, sizeof v);
  at += sizeof v;
  return v;
}

// The binary stream decoded into one line per record and reference, from
// trace_format.h's layout alone.
std::string decode(const std::string& s) {
  std::ostringstream o;
  size_t at = 0;
  o << std::hex << take<uint32_t>(s, at) << " v" << take<uint32_t>(s, at) << "\n";
  auto refs = [&](uint32_t n) {
    for (uint32_t k = 0; k < n; ++k) {
      const uint64_t a = take<uint64_t>(s, at);
      const uint16_t insn = take<uint16_t>(s, at), size = take<uint16_t>(s, at);
      const unsigned kind = take<uint8_t>(s, at), flags = take<uint8_t>(s, at);
      o << " ref " << a << " insn " << insn << " size " << size << " kind " << kind << " flags " << flags << "\n";
    }
  };
  while (at < s.size()) {
    const unsigned kind = take<uint8_t>(s, at), flags = take<uint8_t>(s, at);
    const unsigned n = take<uint16_t>(s, at);
    o << "kind " << kind << " flags " << flags << " n " << n;
    if (kind == ATOMX_REGEN_THREAD_BEGIN) {
      o << " thread " << take<uint32_t>(s, at) << "\n";
    } else if (kind == ATOMX_REGEN_BLOCK) {
      o << " start " << take<uint64_t>(s, at) << " lengths";
      for (unsigned k = 0; k < n; ++k) o << " " << unsigned(take<uint8_t>(s, at));
      o << "\n";
    } else if (kind == ATOMX_REGEN_DATA) {
      const uint32_t count = take<uint32_t>(s, at);
      o << " count " << count << "\n";
      refs(count);
    } else if (kind == ATOMX_REGEN_CALL) {
      o << " site " << take<uint64_t>(s, at) << " " << s.substr(at, n) << "\n";
      at += n;
    } else if (kind == ATOMX_REGEN_LIBRARY) {
      o << " site " << take<uint64_t>(s, at);
      const uint32_t count = take<uint32_t>(s, at);
      o << " count " << count << " " << s.substr(at, n) << "\n";
      at += n;
      refs(count);
    } else if (kind == ATOMX_REGEN_THREAD_END) {
      o << " thread " << take<uint32_t>(s, at) << " " << s.substr(at, n) << "\n";
      at += n;
    } else {
      o << " unknown\n";
      break;
    }
  }
  return o.str();
}

const char* kExpected =
    "49545841 v3\n"
    "kind 1 flags 0 n 0 thread 2a\n"
    "kind 2 flags 0 n 3 start 1000 lengths 4 3 5\n"
    "kind 6 flags 0 n 0 count 4\n"
    " ref 7000 insn 0 size 8 kind 1 flags 0\n"
    " ref 7008 insn 1 size 4 kind 3 flags 1\n"
    " ref 7010 insn 2 size 8 kind 3 flags 0\n"
    " ref 7018 insn 2 size 2 kind 2 flags 0\n"
    "kind 3 flags 0 n a site 1007 memcpy@plt\n"
    "kind 7 flags 0 n 6 site 1007 count 2 memcpy\n"
    " ref 9000 insn 0 size 40 kind 1 flags 0\n"
    " ref a000 insn 0 size 40 kind 2 flags 0\n"
    "kind 4 flags 0 n 0 thread 2a \n";

TEST(RegenDataOutputs, BinaryRecordsFollowTheDocumentedLayout) {
  const std::string path = tempPath("regen-data.bin.");
  auto a = atomx::analyze::makeAnalyzer("binary", path, {"/bin/true"}, "test", true);
  feed(*a);
  EXPECT_EQ(decode(slurp(path)), kExpected);
  std::remove(path.c_str());
}

// The twin: the same comparison names a reference given to another
// instruction (the DATA record's second reference's insn field changed).
TEST(RegenDataOutputs, TwinMovedReferenceIsNamed) {
  const std::string path = tempPath("regen-data-twin.bin.");
  auto a = atomx::analyze::makeAnalyzer("binary", path, {"/bin/true"}, "test", true);
  feed(*a);
  std::string s = slurp(path);
  const size_t second = 8 + 8 + 15 + 8 + 14;  // header, THREAD_BEGIN, BLOCK, DATA's head, first reference
  s[second + 8] = 2;                           // its instruction index
  const std::string got = decode(s);
  EXPECT_NE(got, kExpected);
  EXPECT_NE(got.find(" ref 7008 insn 2 size 4 kind 3 flags 1"), std::string::npos) << got;
}

TEST(RegenDataOutputs, CachegrindCountsAsValgrind) {
  const std::string path = tempPath("regen-data.cg.");
  auto a = atomx::analyze::makeAnalyzer("cachegrind", path, {"/bin/true"}, "test", true);
  feed(*a);
  const std::string cg = slurp(path);
  EXPECT_NE(cg.find("events: Ir Dr Dw\n"), std::string::npos) << cg;
  // f: 3 instructions; reads: 1 + 2 (locked modify) + 1 (modify); writes: 1.
  EXPECT_NE(cg.find("fn=f\n0 3 4 1\n"), std::string::npos) << cg;
  EXPECT_NE(cg.find("fl=(libc, modelled by atomx regen)\nfn=memcpy\n0 0 1 1\n"), std::string::npos) << cg;
  EXPECT_NE(cg.find("summary: 3 5 2\n"), std::string::npos) << cg;
  std::remove(path.c_str());
}

TEST(RegenDataOutputs, CachegrindWithoutDataIsIrOnly) {
  const std::string path = tempPath("regen-nodata.cg.");
  auto a = atomx::analyze::makeAnalyzer("cachegrind", path, {"/bin/true"}, "test", false);
  feed(*a);
  const std::string cg = slurp(path);
  EXPECT_NE(cg.find("events: Ir\n"), std::string::npos) << cg;
  EXPECT_NE(cg.find("summary: 3\n"), std::string::npos) << cg;
  std::remove(path.c_str());
}

}  // namespace
