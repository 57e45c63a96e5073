#include "RegenOutputs.h"

#include <atomx/trace_format.h>
#include <cxxabi.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include "debuginfo/LineTable.h"
#include "support/Error.h"

namespace atomx::cli {

void ProblemsOut::threadEnd(int thread, const std::string& problem) {
  if (!problem.empty()) std::fprintf(stderr, "atomx: thread %d: regenerated up to a problem: %s\n", thread, problem.c_str());
}

TextOut::TextOut(bool blocks) : blocks_(blocks) { std::setvbuf(stdout, nullptr, _IOFBF, 1 << 20); }

void TextOut::block(const atomx::trace::BlockRun& b) {
  if (b.inherited) return;  // the parent's stream has it
  if (blocks_) {
    if (b.continued)
      std::printf("%d %llx %zu %s continued\n", b.thread, static_cast<unsigned long long>(b.insns[0].pc), b.count, b.procedure);
    else
      std::printf("%d %llx %zu %s\n", b.thread, static_cast<unsigned long long>(b.start), b.count, b.procedure);
    return;
  }
  // `TID PC` per instruction, formatted here: printf's parsing costs more
  // than everything else regen does per instruction.
  char tid[16];
  const int tidLength = std::snprintf(tid, sizeof tid, "%d ", b.thread);
  char out[4096];
  size_t used = 0;
  for (size_t k = 0; k < b.count; ++k) {
    if (used + 48 > sizeof out) {
      std::fwrite(out, 1, used, stdout);
      used = 0;
    }
    std::memcpy(out + used, tid, size_t(tidLength));
    used += size_t(tidLength);
    char hex[16];
    int n = 0;
    uint64_t pc = b.insns[k].pc;
    do {
      hex[n++] = "0123456789abcdef"[pc & 15];
      pc >>= 4;
    } while (pc);
    while (n) out[used++] = hex[--n];
    out[used++] = '\n';
  }
  std::fwrite(out, 1, used, stdout);
}

void TextOut::outsideCall(int thread, uint64_t, const std::string& name) {
  std::printf("%d call %s\n", thread, name.empty() ? "*" : name.c_str());
}

void TextOut::signal(const atomx::trace::SignalEvent& e) {
  if (e.inherited) return;
  std::printf("%d %s %d %llx\n", e.thread, e.returned ? "sigreturn" : "signal", e.signo, static_cast<unsigned long long>(e.pc));
}

namespace {

// Only symbols (_Z...), as Valgrind does: __cxa_demangle also reads a
// plain name as a type ("f" would become "float").
std::string demangled(const char* name) {
  if (std::strncmp(name, "_Z", 2) != 0) return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

}  // namespace

void CountOut::block(const atomx::trace::BlockRun& b) {
  if (b.inherited) return;
  auto [it, fresh] = procedureIndex_.try_emplace(b.procedure, uint32_t(procedures_.size()));
  if (fresh) procedures_.push_back(demangled(b.procedure));
  for (size_t k = 0; k < b.count; ++k) {
    Count& c = counts_[b.insns[k].pc];
    ++c.n;
    c.procedure = it->second;
  }
}

void CountOut::print(std::FILE* f) const {
  std::vector<std::pair<uint64_t, uint64_t>> sorted;
  sorted.reserve(counts_.size());
  for (const auto& [pc, c] : counts_) sorted.emplace_back(pc, c.n);
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [pc, n] : sorted)
    std::fprintf(f, "%llx %llu\n", static_cast<unsigned long long>(pc), static_cast<unsigned long long>(n));
}


void CountOut::writeCachegrind(const std::string& path, const std::string& program, const std::string& command) const {
  const debuginfo::LineTable lines(program);
  // file -> function -> line -> Ir, sorted as cachegrind writes them.
  std::map<std::string, std::map<std::string, std::map<unsigned, uint64_t>>> cost;
  uint64_t total = 0;
  for (const auto& [pc, c] : counts_) {
    const debuginfo::SourceLine where = lines.lookup(pc);
    cost[where.file ? *where.file : "???"][procedures_[c.procedure]][where.file ? where.line : 0] += c.n;
    total += c.n;
  }
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw Error(path + ": cannot write: " + std::strerror(errno));
  std::fprintf(f, "desc: atomx regen: instructions regenerated from an abstract-execution trace\ncmd: %s\nevents: Ir\n",
               command.c_str());
  for (const auto& [file, fns] : cost) {
    std::fprintf(f, "fl=%s\n", file.c_str());
    for (const auto& [fn, byLine] : fns) {
      std::fprintf(f, "fn=%s\n", fn.c_str());
      for (const auto& [line, n] : byLine) std::fprintf(f, "%u %llu\n", line, static_cast<unsigned long long>(n));
    }
  }
  std::fprintf(f, "summary: %llu\n", static_cast<unsigned long long>(total));
  if (std::fclose(f) != 0) throw Error(path + ": cannot write: " + std::strerror(errno));
}

BinaryOut::BinaryOut(const std::string& path) : path_(path) {
  own_ = path != "-";
  f_ = own_ ? std::fopen(path.c_str(), "wb") : stdout;
  if (!f_) throw Error(path + ": cannot write: " + std::strerror(errno));
  std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  const uint32_t header[2] = {ATOMX_REGEN_MAGIC, ATOMX_REGEN_VERSION};
  put(header, sizeof header);
}

BinaryOut::~BinaryOut() {
  if (f_ && own_) std::fclose(f_);
}

void BinaryOut::put(const void* data, size_t n) { std::fwrite(data, 1, n, f_); }

namespace {
// kind, flags, a 16-bit length: every record's first four bytes.
void head(std::vector<uint8_t>& b, unsigned kind, unsigned flags, size_t n16) {
  b.push_back(uint8_t(kind));
  b.push_back(uint8_t(flags));
  b.push_back(uint8_t(n16));
  b.push_back(uint8_t(n16 >> 8));
}
template <typename T>
void field(std::vector<uint8_t>& b, T v) {
  for (size_t i = 0; i < sizeof v; ++i) b.push_back(uint8_t(uint64_t(v) >> (8 * i)));
}
}  // namespace

void BinaryOut::threadBegin(int thread) {
  buf_.clear();
  head(buf_, ATOMX_REGEN_THREAD_BEGIN, 0, 0);
  field(buf_, uint32_t(thread));
  put(buf_.data(), buf_.size());
}

void BinaryOut::block(const atomx::trace::BlockRun& b) {
  for (size_t from = 0, n; from < b.count; from += n) {
    n = std::min<size_t>(b.count - from, 0xffff);
    buf_.clear();
    head(buf_, ATOMX_REGEN_BLOCK, (b.inherited ? ATOMX_REGEN_INHERITED : 0) | (b.continued || from > 0 ? ATOMX_REGEN_CONTINUED : 0), n);
    field(buf_, b.insns[from].pc);
    for (size_t k = from; k < from + n; ++k) buf_.push_back(b.insns[k].length);
    put(buf_.data(), buf_.size());
  }
}

void BinaryOut::signal(const atomx::trace::SignalEvent& e) {
  buf_.clear();
  head(buf_, ATOMX_REGEN_SIGNAL, (e.returned ? ATOMX_REGEN_RETURNED : 0) | (e.inherited ? ATOMX_REGEN_INHERITED : 0), e.signo);
  field(buf_, e.pc);
  put(buf_.data(), buf_.size());
}

void BinaryOut::outsideCall(int, uint64_t site, const std::string& name) {
  buf_.clear();
  const size_t n = std::min<size_t>(name.size(), 0xffff);
  head(buf_, ATOMX_REGEN_CALL, 0, n);
  field(buf_, site);
  buf_.insert(buf_.end(), name.begin(), name.begin() + long(n));
  put(buf_.data(), buf_.size());
}

void BinaryOut::threadEnd(int thread, const std::string& problem) {
  buf_.clear();
  const size_t n = std::min<size_t>(problem.size(), 0xffff);
  head(buf_, ATOMX_REGEN_THREAD_END, 0, n);
  field(buf_, uint32_t(thread));
  buf_.insert(buf_.end(), problem.begin(), problem.begin() + long(n));
  put(buf_.data(), buf_.size());
}

void BinaryOut::close() {
  const bool bad = std::fflush(f_) != 0 || std::ferror(f_);
  if (own_ && std::fclose(f_) != 0 && !bad) {
    f_ = nullptr;
    throw Error(path_ + ": cannot write: " + std::strerror(errno));
  }
  if (own_) f_ = nullptr;
  if (bad) throw Error(path_ + ": cannot write: " + std::strerror(errno));
}

}  // namespace atomx::cli
