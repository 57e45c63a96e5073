/* libc's memory and string functions in a hot loop, in two threads
 * (tests/trace/libc_oracle.py): every function a data trace models from
 * registers (memcpy, mempcpy, memmove, memset, bzero, bcopy, calloc,
 * strlen, strnlen, stpcpy), called through the PLT (built -fno-builtin,
 * so that each is a call), with sizes that vary per iteration, a zero
 * length, a large calloc (fresh pages: not cleared) and, from main, the
 * calls again after the threads.  Prints a checksum. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define N 4096

static unsigned long work(unsigned long seed) {
  char *a = malloc(N), *b = malloc(N), s[300];
  unsigned long sum = 0;
  for (int r = 0; r < 40; ++r) {
    const size_t n = (size_t)(seed * 7 + (unsigned long)r * 97) % N;
    memset(a, 'a' + r % 26, n);
    memcpy(b, a, n);
    sum += (unsigned long)((char *)mempcpy(b + 1, a, n / 2) - b);
    memmove(b + 3, b, n / 3);
    bzero(a, n / 5);
    bcopy(b, a, n / 7);
    memset(s, 'x' + r % 2, (size_t)(r * 7 % 299));
    s[r * 7 % 299] = 0;
    sum += strlen(s) + strnlen(s, (size_t)r * 3) + strnlen(s, 400);
    sum += (unsigned long)(stpcpy(b, s) - b);
    char *c = calloc((size_t)r + 1, 24);
    sum += (unsigned long)c[r];
    free(c);
    memcpy(a, b, 0);
  }
  char *big = calloc(1, 200000);  /* above the mmap threshold: not cleared */
  sum += (unsigned long)big[100];
  free(big);
  free(a);
  free(b);
  return sum;
}

static void *thread(void *arg) { return (void *)work((unsigned long)arg); }

int main(void) {
  pthread_t t[2];
  unsigned long sum = 0;
  for (long k = 0; k < 2; ++k) pthread_create(&t[k], 0, thread, (void *)(k + 1));
  for (int k = 0; k < 2; ++k) {
    void *r;
    pthread_join(t[k], &r);
    sum += (unsigned long)r;
  }
  sum += work(5);
  printf("%lu\n", sum);
  return 0;
}
