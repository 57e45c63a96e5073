// Analysis side of the syscall tool (syscall_inst.cpp).  The hook runs in
// a SIGSYS handler (see <atomx/syscalls.h>): it only adds to fixed tables
// of relaxed atomics; everything else happens at ProgramEnd, after
// interception has stopped.
#include <atomx/report.hpp>
#include <atomx/syscalls.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

namespace {
constexpr int kNr = 512;      // x86-64 numbers in use are below 512
constexpr int kErrno = 134;   // errno values 1..133
constexpr int kThreads = 1024;
struct Entry {
  std::atomic<long> calls{0}, errors{0}, ns{0};
  std::atomic<unsigned> byErrno[kErrno] = {};
};
Entry table[kNr + 1];  // [kNr]: numbers out of range and int $0x80 calls
std::atomic<int> threads[kThreads];
std::atomic<long> threadOverflow{0};
std::atomic<int> tablePid{0};
long topN = 25;
std::string programPath;
int startError = 0;

void clear() {
  for (Entry& e : table) {
    e.calls = 0, e.errors = 0, e.ns = 0;
    for (auto& n : e.byErrno) n = 0;
  }
  for (auto& t : threads) t = 0;
  threadOverflow = 0;
}

void noteThread(int tid) {  // an open-addressing set of thread ids
  for (int k = 0; k < kThreads; ++k) {
    std::atomic<int>& slot = threads[(unsigned(tid) * 2654435761u + unsigned(k)) % kThreads];
    int seen = slot.load(std::memory_order_relaxed);
    if (seen == tid) return;
    if (seen == 0 && slot.compare_exchange_strong(seen, tid, std::memory_order_relaxed)) return;
    if (seen == tid) return;
  }
  threadOverflow.fetch_add(1, std::memory_order_relaxed);
}

void hook(const AtomxSyscall* c) {
  // A forked child inherits its parent's counts: start afresh (the child
  // is single-threaded when it first gets here).
  if (c->pid != tablePid.load(std::memory_order_relaxed)) {
    clear();
    tablePid.store(c->pid, std::memory_order_relaxed);
  }
  Entry& e = table[(c->flags & ATOMX_SYSCALL_I386) || c->nr < 0 || c->nr >= kNr ? kNr : c->nr];
  e.calls.fetch_add(1, std::memory_order_relaxed);
  e.ns.fetch_add(long(c->durationNs), std::memory_order_relaxed);
  if (!(c->flags & ATOMX_SYSCALL_NO_RETURN) && c->result < 0 && c->result > -4096) {
    e.errors.fetch_add(1, std::memory_order_relaxed);
    if (-c->result < kErrno) e.byErrno[-c->result].fetch_add(1, std::memory_order_relaxed);
  }
  noteThread(c->tid);
}

std::string nameOf(int nr) {
  if (nr == kNr) return "(other)";
  const char* n = AtomxSyscallName(nr);
  return n ? n : "syscall_" + std::to_string(nr);
}

void write() {
  std::vector<int> used;
  long calls = 0, errors = 0, ns = 0;
  for (int nr = 0; nr <= kNr; ++nr)
    if (long n = table[nr].calls.load()) {
      used.push_back(nr);
      calls += n, errors += table[nr].errors.load(), ns += table[nr].ns.load();
    }
  std::stable_sort(used.begin(), used.end(), [](int a, int b) { return table[a].calls.load() > table[b].calls.load(); });
  int nThreads = 0;
  for (auto& t : threads) nThreads += t.load() != 0;

  if (FILE* out = atomx::openToolOutput("syscall.out")) {
    std::fprintf(out, "syscall: system calls of %s (process %d)\n", programPath.c_str(), tablePid.load());
    if (startError)
      std::fprintf(out, "  NOT INTERCEPTED: Syscall User Dispatch failed (%s); needs Linux >= 5.11\n",
                   AtomxErrnoName(startError) ? AtomxErrnoName(startError) : "?");
    std::fprintf(out, "  %ld calls, %ld errors, %.6f s inside calls (summed over the threads), %d thread%s\n\n", calls,
                 errors, ns / 1e9, nThreads, nThreads == 1 ? "" : "s");
    std::fprintf(out, "%% time     seconds  usecs/call     calls    errors syscall\n");
    std::fprintf(out, "------ ----------- ----------- --------- --------- ----------------\n");
    // By time inside the call, most first, as strace -c sorts (the JSON
    // lists them by calls).
    std::vector<int> byTime = used;
    std::stable_sort(byTime.begin(), byTime.end(), [](int a, int b) { return table[a].ns.load() > table[b].ns.load(); });
    for (size_t k = 0; k < byTime.size() && long(k) < topN; ++k) {
      const Entry& e = table[byTime[k]];
      const long n = e.calls.load(), t = e.ns.load();
      std::fprintf(out, "%6.2f %11.6f %11ld %9ld %9s %s\n", ns ? 100.0 * double(t) / double(ns) : 0.0, t / 1e9,
                   t / n / 1000, n, e.errors.load() ? std::to_string(e.errors.load()).c_str() : "",
                   nameOf(byTime[k]).c_str());
    }
    if (long(used.size()) > topN) std::fprintf(out, "  ... %ld more in syscall.json\n", long(used.size()) - topN);
    std::fprintf(out, "------ ----------- ----------- --------- --------- ----------------\n");
    std::fprintf(out, "100.00 %11.6f %11ld %9ld %9ld total\n", ns / 1e9, calls ? ns / calls / 1000 : 0, calls, errors);
    // The errors, by errno: what strace -c does not show.
    std::vector<std::pair<long, std::string>> errs;
    for (int nr : used)
      for (int en = 1; en < kErrno; ++en)
        if (unsigned n = table[nr].byErrno[en].load())
          errs.push_back({long(n), nameOf(nr) + " " + (AtomxErrnoName(en) ? AtomxErrnoName(en) : std::to_string(en))});
    std::stable_sort(errs.begin(), errs.end(), [](auto& a, auto& b) { return a.first > b.first; });
    if (!errs.empty()) std::fprintf(out, "\nerrors:\n");
    for (size_t k = 0; k < errs.size() && k < 8; ++k) std::fprintf(out, "  %9ld  %s\n", errs[k].first, errs[k].second.c_str());
    std::fclose(out);
  }

  if (FILE* out = atomx::openToolOutput("syscall.json")) {
    atomx::JsonWriter j(out);
    j.beginObject();
    j.key("tool").value("syscall");
    j.key("program").value(programPath);
    j.key("pid").value(tablePid.load());
    j.key("intercepted").value(startError == 0);
    j.key("threads").value(nThreads);
    j.key("calls").value(calls);
    j.key("errors").value(errors);
    j.key("seconds").fixed(ns / 1e9, 9);  // to the nanosecond: %.6g would drop microseconds from 1 s on
    j.key("syscalls").beginArray();
    for (int nr : used) {
      const Entry& e = table[nr];
      j.beginObject();
      j.key("nr").value(nr == kNr ? -1 : nr);
      j.key("name").value(nameOf(nr));
      j.key("calls").value(e.calls.load());
      j.key("errors").value(e.errors.load());
      j.key("seconds").fixed(e.ns.load() / 1e9, 9);
      j.key("errno").beginObject();
      for (int en = 1; en < kErrno; ++en)
        if (unsigned n = e.byErrno[en].load())
          j.key(AtomxErrnoName(en) ? AtomxErrnoName(en) : std::to_string(en).c_str()).value(n);
      j.endObject();
      j.endObject();
    }
    j.endArray();
    j.endObject();
    std::fclose(out);
  }
}
}  // namespace

extern "C" void SyscallStart(long top, const char* program) {
  topN = top;
  programPath = program;
  tablePid = getpid();
  const int r = AtomxSyscallsStart(hook);
  if (r < 0) {
    startError = -r;
    std::fprintf(stderr, "syscall: cannot intercept system calls: %s (Syscall User Dispatch needs Linux >= 5.11)\n",
                 AtomxErrnoName(r) ? AtomxErrnoName(r) : "error");
  }
}

extern "C" void SyscallEnd() {
  AtomxSyscallsStop();
  // A forked child that made no call of its own still holds its parent's.
  if (tablePid.load() != getpid()) clear(), tablePid = getpid();
  write();
}
