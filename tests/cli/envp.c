/* Prints whether ATOMX_END_DIR is in its environment (cli.run_env). */
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  printf("%s\n", getenv("ATOMX_END_DIR") ? "set" : "unset");
  return 0;
}
