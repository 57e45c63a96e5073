// What `atomx regen` writes: each output is a consumer of the reader API
// (include/atomx/trace.hpp), the way any offline analyser is one.  Text (an
// instruction or a block per line), counts per address, a cachegrind file
// (Ir per function and source line, for cg_annotate), and the binary
// instruction stream (include/atomx/trace_format.h, AtomxRegen*).
#pragma once

#include <atomx/trace.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace atomx::cli {

// A thread that could not be regenerated to its end: one line on stderr
// (and regen exits 1).  Beside every other output.
class ProblemsOut : public atomx::trace::Consumer {
 public:
  void threadEnd(int thread, const std::string& problem) override;
};

// One line per instruction (`TID PC`), or per block (`TID START COUNT
// PROCEDURE`); an outside call is `TID call NAME`.
class TextOut : public atomx::trace::Consumer {
 public:
  explicit TextOut(bool blocks);
  void block(const atomx::trace::BlockRun& b) override;
  void outsideCall(int thread, uint64_t site, const std::string& name) override;
  void signal(const atomx::trace::SignalEvent& e) override;

 private:
  bool blocks_;
};

// Executions per instruction address, over every thread; what the
// per-address outputs are made from.
class CountOut : public atomx::trace::Consumer {
 public:
  void block(const atomx::trace::BlockRun& b) override;
  // `PC N` lines, by address.
  void print(std::FILE* f) const;
  // A cachegrind output file (events: Ir) of these counts: per source line
  // of `program`'s DWARF, under each instruction's procedure, C++ names
  // demangled as cachegrind does.  `command`: its `cmd:` line.
  void writeCachegrind(const std::string& path, const std::string& program, const std::string& command) const;

 private:
  struct Count {
    uint64_t n = 0;
    uint32_t procedure = 0;  // index in procedures_
  };
  std::unordered_map<uint64_t, Count> counts_;
  // BlockRun::procedure lives only as long as the regeneration: copied.
  std::unordered_map<const char*, uint32_t> procedureIndex_;
  std::vector<std::string> procedures_;
};

// The binary stream (AtomxRegen* records), to `path` ("-": stdout).
class BinaryOut : public atomx::trace::Consumer {
 public:
  explicit BinaryOut(const std::string& path);
  ~BinaryOut() override;
  void threadBegin(int thread) override;
  void block(const atomx::trace::BlockRun& b) override;
  void outsideCall(int thread, uint64_t site, const std::string& name) override;
  void signal(const atomx::trace::SignalEvent& e) override;
  void threadEnd(int thread, const std::string& problem) override;
  // Flushes; throws atomx::Error when the stream could not be written.
  void close();

 private:
  void put(const void* data, size_t n);
  std::FILE* f_;
  bool own_;
  std::string path_;
  std::vector<uint8_t> buf_;
};

}  // namespace atomx::cli
