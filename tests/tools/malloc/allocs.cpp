// The malloc tool's test program: every allocator entry point the tool
// knows, called from the program's own code a fixed number of times with
// fixed sizes, in several threads, plus allocations the tool must NOT see
// (made inside libc/libstdc++: strdup, fopen, std::string growth).  The
// pointers escape into a global so the compiler keeps every call.
#include <malloc.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <pthread.h>
#include <vector>

// Per thread: the threads run the same functions.
thread_local void* volatile sink[64];

// A tail call: gcc -O2 emits `jmp malloc@plt`.
__attribute__((noinline)) void* xmalloc(size_t n) { return malloc(n); }
__attribute__((noinline)) void* xcalloc(size_t n, size_t s) { return calloc(n, s); }

struct alignas(64) Line { char bytes[64]; };
struct Node { Node* next; long value; };

__attribute__((noinline)) void c_allocs(int round) {
  for (int k = 0; k < 20; ++k) sink[k] = malloc(size_t(k) * 8 + round);
  for (int k = 0; k < 20; ++k) free(sink[k]);
  void* p = calloc(10 + round, 12);
  sink[0] = p;
  for (size_t n = 16; n <= 4096; n *= 4) sink[0] = p = realloc(p, n);  // grows: 16 64 256 1024 4096
  free(p);
  sink[1] = xmalloc(100);
  sink[2] = xcalloc(5, 7);
  free(sink[1]);
  free(sink[2]);
  void* q = nullptr;
  if (posix_memalign(&q, 64, 200) == 0) sink[3] = q;
  sink[4] = aligned_alloc(128, 256);
  sink[5] = memalign(32, 48);
  free(sink[3]);
  free(sink[4]);
  free(sink[5]);
  sink[6] = malloc(0);
  free(sink[6]);
}

__attribute__((noinline)) void cxx_allocs(int round) {
  Node* head = nullptr;
  for (int k = 0; k < 50 + round; ++k) head = new Node{head, k};
  while (head) { Node* n = head->next; delete head; head = n; }  // sized delete (_ZdlPvm)
  int* arr = new int[1000];
  sink[7] = arr;
  delete[] arr;
  Line* l = new Line;  // aligned new
  sink[8] = l;
  delete l;
  long* nt = new (std::nothrow) long[3];
  sink[9] = nt;
  delete[] nt;
  std::vector<long> v;  // growth through the program's own copy of _M_realloc_insert: seen
  for (int k = 0; k < 1000; ++k) v.push_back(k);
  sink[10] = v.data();
}

// Allocations inside the libraries: not seen by the tool (nor the oracle).
__attribute__((noinline)) void library_allocs() {
  char* s = strdup("made by strdup inside libc");
  sink[11] = s;
  free(s);  // this free IS the program's call
  std::string big(1000, 'x');  // std::string's constructor lives in libstdc++ (extern template)
  big += big;
  sink[12] = &big[0];
  if (FILE* f = std::fopen("/proc/self/stat", "r")) std::fclose(f);
}

int main(int argc, char** argv) {
  // A third argument: "note" prints one more line (tool.malloc.valgrind_output);
  // anything else is refused, naming the program as getopt does (tool.malloc.argv0).
  if (argc > 2 && std::strcmp(argv[2], "note") != 0) {
    std::fprintf(stderr, "%s: too many arguments\n", argv[0]);
    return 2;
  }
  if (argc > 2) std::printf("note\n");
  int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  for (int r = 0; r < rounds; ++r) c_allocs(r), cxx_allocs(r), library_allocs();
  // pthread_create, not std::thread: libstdc++ deletes a std::thread's
  // state through its deleting destructor, instantiated in the program, which
  // tail-calls operator delete: a call the tool counts (the program's code
  // makes it) but the oracle cannot (it returns into libstdc++).
  pthread_t threads[4];
  for (long t = 0; t < 4; ++t)
    pthread_create(&threads[t], nullptr, [](void* arg) -> void* {
      for (int r = 0; r < 50; ++r) c_allocs(int(long(arg))), cxx_allocs(int(long(arg)));
      return nullptr;
    }, reinterpret_cast<void*>(t));
  for (pthread_t t : threads) pthread_join(t, nullptr);
  void* leak = malloc(12345);  // still live at exit
  sink[13] = leak;
  std::printf("done %d rounds\n", rounds);
  return 0;
}
