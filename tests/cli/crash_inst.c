/* A tool whose Instrument crashes at once (cli.failed_rewrite_cleans_up):
 * atomx must report it in one line and exit 1, leaving nothing behind. */
#include <atomx/atom.h>

void Instrument(int argc, char **argv) {
  volatile int *nowhere = 0;
  *nowhere = argc;
}
