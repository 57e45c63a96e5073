/* loops: counted loops whose branches a data trace's regenerator evaluates
 * (docs/trace.md, "Evaluated predicates"), of several shapes: an up and a
 * down counter, a bound loaded from memory (recorded once, before the
 * loop), do-while on a decremented register (dec or sub, then jne), signed
 * and unsigned conditions, a loop that breaks on a register condition,
 * nested loops.  Each loop's body is register arithmetic (nothing recorded
 * per iteration), so a trace needs no witness per iteration.  stdout holds
 * the results, the same in every run; the iteration counts are fixed
 * (kIterations below, which loops_witnesses.sh bounds the witnesses by).
 *
 * `loops signals`: the same loops, then a long one (spin_asm, whose
 * registers are fixed) while a 20-microsecond interval timer's SIGALRM
 * handler (on_alarm, handler_work) interrupts it anywhere, often at one
 * stream position many times over: each mark must be placed in its own
 * iteration.  stderr says how often the handler ran ("ticks N",
 * regen_oracle.py --signals) and at which iteration each signal found the
 * loop ("spin-signal RCX", with `loops signals log`: loops_signals.py). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline))

/* Bounds the compiler cannot see: loaded from memory by their callers. */
volatile long vN = 1000, vLo = -500, vLimit = 1000000, vOuter = 30, vSpin = 1000000;
volatile unsigned vULo = 3, vUHi = 7003;
volatile int gN = 1000;

NOINLINE long up(long n) {
  long h = 0;
  for (long i = 0; i < n; i++) h = h * 31 + i;
  return h;
}

NOINLINE unsigned long down(unsigned long n) {
  unsigned long h = 7;
  for (unsigned long i = n; i > 0; i--) h = (h * 33) ^ i;
  return h;
}

NOINLINE long from_memory(void) {
  const int n = gN; /* loaded once: the bound is recorded before the loop */
  long h = 1;
  for (int i = 0; i < n; i++) h = h * 5 + (i ^ 3);
  return h;
}

NOINLINE unsigned dec_test(unsigned k) {
  unsigned h = 0;
  do h = h * 7 + k;
  while (--k);
  return h;
}

NOINLINE long signed_loop(long lo, long hi) {
  long h = 0;
  for (long i = lo; i < hi; i += 3) h = h * 3 + i;
  return h;
}

NOINLINE unsigned long unsigned_loop(unsigned lo, unsigned hi) {
  unsigned long h = 0;
  for (unsigned u = lo; u < hi; u += 7) h = h * 3 + u;
  return h;
}

NOINLINE long with_break(long n, long limit) {
  long s = 1, i;
  for (i = 0; i < n; i++) {
    s = s * 2 + i;
    if (s > limit) break;
  }
  return i * 1000 + (s & 0xff);
}

NOINLINE long nested(long n, long m) {
  long h = 0;
  for (long i = 0; i < n; i++)
    for (long j = 0; j < m; j++) h = h * 3 + (i ^ j);
  return h;
}

static volatile long ticks;
static volatile unsigned long sink;
/* Where the handler found spin_asm's loop: its %rcx at each signal (the
 * iterations begun), in order; printed on stderr as `spin-signal RCX`. */
static long spinAt[100000];
static volatile long spinSignals;

NOINLINE unsigned long handler_work(unsigned long n) {
  unsigned long h = n;
  for (int i = 0; i < 8; i++) h = h * 3 + (unsigned long)i;
  return h;
}

static void on_alarm(int sig, siginfo_t *info, void *context) {
  (void)sig;
  (void)info;
  const greg_t *g = ((ucontext_t *)context)->uc_mcontext.gregs;
  if (g[REG_R11] == 0x5a5a && spinSignals < (long)(sizeof spinAt / sizeof spinAt[0])) spinAt[spinSignals++] = g[REG_RCX];
  __atomic_add_fetch(&ticks, 1, __ATOMIC_RELAXED);
  sink += handler_work((unsigned long)ticks);
}

/* spin_asm(n): n iterations of register arithmetic, %rcx counting them
 * from the loop's first instruction on; %r11 is 0x5a5a from the loop's
 * first instruction to the one after it (loops_signals.py: a signal there
 * was at iteration %rcx, which the regenerated path must say too). */
unsigned long spin_asm(long n);
asm(".text\n"
    ".globl spin_asm\n"
    ".type spin_asm, @function\n"
    "spin_asm:\n"
    "  xor %ecx, %ecx\n"
    "  xor %eax, %eax\n"
    "  mov $0x5a5a, %r11d\n"
    "1:\n"
    "  add $1, %rcx\n"
    "  lea (%rax,%rax,2), %rax\n"
    "  add %rcx, %rax\n"
    "  cmp %rdi, %rcx\n"
    "  jne 1b\n"
    "  sub %r11, %rax\n" /* %r11 read: live in the loop, no register for atomx's stores */
    "  xor %r11d, %r11d\n"
    "  ret\n"
    ".size spin_asm, .-spin_asm\n");

int main(int argc, char **argv) {
  printf("up %ld\n", up(vN));
  printf("down %lu\n", down((unsigned long)vN));
  printf("from_memory %ld\n", from_memory());
  printf("dec_test %u\n", dec_test((unsigned)vN));
  printf("signed %ld\n", signed_loop(vLo, vN));
  printf("unsigned %lu\n", unsigned_loop(vULo, vUHi));
  printf("with_break %ld\n", with_break(vN, vLimit));
  printf("nested %ld\n", nested(vOuter, vOuter));
  if (argc > 1 && strcmp(argv[1], "signals") == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_alarm;
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval t = {{0, 20}, {0, 20}};
    setitimer(ITIMER_REAL, &t, NULL);
    printf("spin %lu\n", spin_asm(vSpin));
    struct itimerval off;
    memset(&off, 0, sizeof off);
    setitimer(ITIMER_REAL, &off, NULL);
    fprintf(stderr, "ticks %ld\n", ticks);
    if (argc > 2 && strcmp(argv[2], "log") == 0) /* (a loop that runs as often as the timer fired) */
      for (long k = 0; k < spinSignals; k++) fprintf(stderr, "spin-signal %ld\n", spinAt[k]);
  }
  return 0;
}
