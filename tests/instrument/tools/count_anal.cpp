#include <atomx/analysis.h>
#include <cstdio>
#include <map>
#include <mutex>

static std::mutex lock;
static std::map<long, long> perProc, perThread;

extern "C" void Hit(long proc, long tid) {
  std::lock_guard<std::mutex> g(lock);
  ++perProc[proc];
  ++perThread[tid];
}

extern "C" void Report(char* names, long* pcs, long n) {
  std::FILE* f = std::fopen(AtomxOutputPath("count.out"), "w");
  std::fprintf(f, "names %s\n", names);
  for (long i = 0; i < n; ++i) std::fprintf(f, "proc %ld %#lx %ld\n", i, pcs[i], perProc[i]);
  for (auto& [tid, n] : perThread) std::fprintf(f, "tid %ld %ld\n", tid, n);
  std::fclose(f);
}
