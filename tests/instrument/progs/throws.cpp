// Exceptions thrown through instrumented frames: thrower() is called 20
// times and throws on every third call; middle() does not catch.
#include <cstdio>
#include <stdexcept>

__attribute__((noipa)) int thrower(int i) {
  if (i % 3 == 0) throw std::runtime_error("boom " + std::to_string(i));
  return i * 2;
}
__attribute__((noipa)) int middle(int i) { return thrower(i) + 1; }

int main() {
  int caught = 0, sum = 0;
  for (int i = 0; i < 20; ++i) {
    try {
      sum += middle(i);
    } catch (const std::exception& e) {
      ++caught;
      std::printf("caught %s\n", e.what());
    }
  }
  std::printf("caught %d sum %d\n", caught, sum);
  return 0;
}
