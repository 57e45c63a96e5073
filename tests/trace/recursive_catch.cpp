// recursive_catch: an exception thrown in the innermost of many activations
// of a recursive procedure, caught by an outer activation, whose call in
// progress is the only one with a landing pad (the inner activations are
// at a call without one, and are left by the unwinder).  The regenerator
// must resume in that outer activation, not in the innermost.
// Usage: recursive_catch [DEPTH]
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#define NOINLINE __attribute__((noinline))

static volatile int sink;
NOINLINE int descend(int n, int catchAt);
// The call without a landing pad goes through a pointer: gcc would turn a
// direct one into a loop.
static int (*volatile again)(int, int) = descend;

NOINLINE int descend(int n, int catchAt) {
  if (n == 0) throw std::runtime_error("bottom");
  if (n == catchAt) {
    try {
      return descend(n - 1, catchAt) + 1;
    } catch (const std::runtime_error&) {
      sink = n;
      return -n;
    }
  }
  return again(n - 1, catchAt) * 2 + (n & 1);
}

int main(int argc, char** argv) {
  const int depth = argc > 1 ? std::atoi(argv[1]) : 12;
  long total = 0;
  for (int round = 0; round < 200; ++round) total += descend(depth, 1 + round % (depth - 1));
  std::printf("%ld %d\n", total, sink);
  return 0;
}
