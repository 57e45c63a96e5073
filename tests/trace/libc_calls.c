/* libc's memory and string functions in a hot loop, in two threads
 * (tests/trace/libc_oracle.py): every function a data trace models from
 * registers (memcpy, mempcpy, memmove, memset, bzero, bcopy, calloc,
 * strlen, strnlen, stpcpy) and those whose length the recorder measures in
 * memory (strcpy, strncpy, strcmp, strncmp, memcmp, bcmp, __memcmpeq; and
 * strlen, strnlen, stpcpy, strcmp reached by a tail jump), called through
 * the PLT (built -fno-builtin, so that each is a call), with sizes that
 * vary per iteration, a zero length, a large calloc (fresh pages: not
 * cleared), comparisons that differ mid-string, at the first byte, not at
 * all (memcmp equal on its whole range) or are capped by n, and, from
 * main, a strcmp before the threads (the process's first measured call)
 * and the calls again after them.  Prints a checksum.
 *     libc_calls [ROUNDS [signals]]
 * ROUNDS (40) per thread; `signals`: a 50-microsecond interval timer
 * (SIGALRM) whose handler calls memmove, strlen and strcmp too, anywhere in
 * the threads' paths -- between a call's recorded arguments and the call,
 * inside libc.  The checksum printed does not depend on the signals. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define N 4096

extern int __memcmpeq(const void *, const void *, size_t);

/* Tail jumps (gcc -O2: `jmp strlen@plt`): the arguments are in registers
 * at the jump as at a call. */
__attribute__((noinline)) static size_t tail_strlen(const char *s) { return strlen(s); }
__attribute__((noinline)) static size_t tail_strnlen(const char *s, size_t n) { return strnlen(s, n); }
__attribute__((noinline)) static char *tail_stpcpy(char *d, const char *s) { return stpcpy(d, s); }
__attribute__((noinline)) static int tail_strcmp(const char *a, const char *b) { return strcmp(a, b); }

static int rounds = 40;
static volatile sig_atomic_t handled;

/* Its calls have lengths no other call has (libc_oracle.py --async). */
static char alarm_text[1500];
static void on_alarm(int sig) {
  (void)sig;
  char to[1500];
  memmove(to, alarm_text, sizeof to);
  handled = handled + (int)strlen(to) / 1499 + (strcmp(to, alarm_text) != 0);
}

static unsigned long work(unsigned long seed) {
  char *a = calloc(1, N), *b = calloc(1, N), s[300], t[300]; /* every byte compared is set */
  unsigned long sum = 0;
  for (int r = 0; r < rounds; ++r) {
    const size_t n = (size_t)(seed * 7 + (unsigned long)r * 97) % N;
    const int q = r % 40;
    memset(a, 'a' + r % 26, n);
    memcpy(b, a, n);
    sum += (unsigned long)((char *)mempcpy(b + 1, a, n / 2) - b);
    memmove(b + 3, b, n / 3);
    bzero(a, n / 5);
    bcopy(b, a, n / 7);
    memset(s, 'x' + r % 2, (size_t)(q * 7 % 299));
    s[q * 7 % 299] = 0;
    sum += strlen(s) + strnlen(s, (size_t)q * 3) + strnlen(s, 400);
    sum += (unsigned long)(stpcpy(b, s) - b);
    /* Measured: t is s but for one byte mid-string (r odd), or equal. */
    const size_t len = (size_t)(q * 7 % 299);
    strcpy(t, s);
    if (r % 2 && len) t[len / 2] ^= 1;
    sum += (unsigned long)(strcmp(s, t) < 0) + (unsigned long)(strcmp(t, "zz") > 0);
    sum += (unsigned long)(strncmp(s, t, (size_t)q / 3) == 0);  /* capped by n (or 0) */
    sum += (unsigned long)(strncmp(t, s, 400) != 0);
    strncpy(b + 8, s, len + 40);  /* the source shorter: the rest padded */
    strncpy(b + 512, s, (size_t)q / 2);  /* n shorter than the source */
    memcpy(a + 1024, b, n / 4);
    sum += (unsigned long)(memcmp(a + 1024, b, n / 4) == 0);  /* equal on the whole range */
    sum += (unsigned long)(memcmp(a, b, n) != 0) + (unsigned long)(bcmp(a + 1024, b, n / 4 + 1) != 0);
    sum += (unsigned long)(__memcmpeq(s, t, len) != 0);
    sum += tail_strlen(t) + tail_strnlen(t, (size_t)q) + (unsigned long)(tail_stpcpy(a + 2048, t) - a);
    sum += (unsigned long)(tail_strcmp(s, t) != 0);
    char *c = calloc((size_t)q + 1, 24);
    sum += (unsigned long)c[q];
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

int main(int argc, char **argv) {
  if (argc > 1) rounds = atoi(argv[1]);
  unsigned long sum = (unsigned long)(strcmp(argv[0], "libc_calls") != 0);  /* the first measured call */
  if (argc > 2) {
    for (int k = 0; k < 1499; ++k) alarm_text[k] = 'h';
    signal(SIGALRM, on_alarm);
    const struct itimerval every = {{0, 50}, {0, 50}};
    setitimer(ITIMER_REAL, &every, 0);
  }
  pthread_t t[2];
  for (long k = 0; k < 2; ++k) pthread_create(&t[k], 0, thread, (void *)(k + 1));
  for (int k = 0; k < 2; ++k) {
    void *r;
    pthread_join(t[k], &r);
    sum += (unsigned long)r;
  }
  sum += work(5);
  if (argc > 2) {  /* off before exit: what runs after the recorder's last flush is not in the trace */
    const struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, 0);
  }
  printf("%lu\n", sum);
  if (argc > 2) fprintf(stderr, "%d signals handled\n", (int)handled);
  return 0;
}
