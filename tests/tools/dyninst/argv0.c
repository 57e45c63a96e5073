/* A program whose work depends on the bytes of its name, not only on the
 * name's length (lua interns argv[0], and its hash decides which chains
 * are walked): `letter` runs once per 'b', 'c' or 'g' in argv[0], and its
 * loop as long as the letter's code.  The oracles name every run by the
 * path Valgrind's copy has (vgharness.py); named by the wrapper's path
 * ("bin/") in the native and instrumented runs and by the copy's ("cgb/")
 * under Valgrind, `letter` runs 1 and 2 times from those three bytes.  It
 * prints nothing that depends on the name. */
#include <stdio.h>

static volatile unsigned sink;

__attribute__((noinline)) static void letter(char c) {
  for (unsigned k = 0; k < (unsigned char)c; ++k) sink += k;
}

int main(int argc, char **argv) {
  (void)argc;
  for (const char *p = argv[0]; *p; ++p)
    if (*p == 'b' || *p == 'c' || *p == 'g') letter(*p);
  puts("done");
  return 0;
}
