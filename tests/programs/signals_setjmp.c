/* signals_setjmp.c -- pitfalls 4 and 5: signal handlers, the alternate
 * signal stack, sigsetjmp/siglongjmp out of a SIGSEGV handler, and plain
 * setjmp/longjmp across several frames.
 *
 * Why it breaks a careless rewriter:
 *  - handler addresses are taken in code and handed to the kernel; the
 *    kernel later transfers control there (and sa_handler read back with
 *    sigaction() must still compare equal to the address in code);
 *  - faults (SIGSEGV, SIGFPE) are raised *in the moved code*, so the handler
 *    runs with a saved context pointing into the new code and must get back
 *    out with siglongjmp;
 *  - setjmp saves a return address into a jmp_buf and longjmp jumps there
 *    later from deep inside other functions; the code after the setjmp call
 *    in the moved procedure must be where the rewritten call returns;
 *  - volatile locals must survive the longjmp.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile sig_atomic_t usr1_count, usr2_count, last_signo;
static volatile int last_code, last_value, on_alt_stack;
static sigjmp_buf fault_env;
static char *alt_stack_base;
static size_t alt_stack_size;

static void on_usr1(int sig)
{
    usr1_count++;
    last_signo = sig;
}

static void on_usr2_info(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    usr2_count++;
    last_signo = sig;
    last_code = info->si_code;
    last_value = info->si_value.sival_int;
}

static void on_fault(int sig, siginfo_t *info, void *uctx)
{
    (void)info;
    (void)uctx;
    char here;
    on_alt_stack = (&here >= alt_stack_base && &here < alt_stack_base + alt_stack_size);
    siglongjmp(fault_env, sig);
}

/* The faulting accesses happen in their own functions (moved code). */
static NOINLINE int deref(volatile int *p) { return *p; }
static NOINLINE int divide(volatile int a, volatile int b) { return a / b; }
static NOINLINE int nested_fault(int depth, volatile int *p)
{
    if (depth == 0)
        return deref(p);
    return nested_fault(depth - 1, p) + 1;
}

static NOINLINE void try_fault(const char *what, int kind)
{
    int sig = sigsetjmp(fault_env, 1);
    if (sig == 0) {
        volatile int r = 0;
        switch (kind) {
        case 0: r = deref((volatile int *)(uintptr_t)16); break;
        case 1: r = divide(7, 0); break;
        case 2: r = nested_fault(20, (volatile int *)(uintptr_t)8); break;
        default: r = deref(&r); break;
        }
        printf("%s: no fault (r=%d)\n", what, r);
    } else {
        printf("%s: recovered from %s, on alt stack: %s\n", what,
               sig == SIGSEGV ? "SIGSEGV" : sig == SIGFPE ? "SIGFPE" : "other",
               on_alt_stack ? "yes" : "no");
    }
}

/* ---- setjmp/longjmp across frames ---- */
static jmp_buf env_stack[4];
static int env_depth;

static NOINLINE void bottom(int n)
{
    if (n == 3)
        longjmp(env_stack[env_depth - 1], 100 + n);
    printf("  bottom(%d) returns normally\n", n);
}
static NOINLINE void middle(int n)
{
    char pad[64];
    snprintf(pad, sizeof pad, "middle %d", n);
    bottom(n);
    printf("  %s done\n", pad);
}
static NOINLINE void top(int n)
{
    middle(n);
    middle(n + 1);
}

static NOINLINE int guarded(int n)
{
    volatile int steps = 0;
    int v;
    env_depth++;
    if ((v = setjmp(env_stack[env_depth - 1])) == 0) {
        steps = 1;
        top(n);
        steps = 2;
    } else {
        printf("  longjmp landed with %d after %d step(s)\n", v, steps);
    }
    env_depth--;
    return steps;
}

static NOINLINE int outer_guard(void)
{
    volatile int count = 0;
    env_depth++;
    int v = setjmp(env_stack[env_depth - 1]);
    count++;
    if (v == 0) {
        printf("outer: first pass\n");
        printf("  inner guard returned %d\n", guarded(1)); /* 1,2 -> normal; 2,3 -> jump */
        printf("  inner guard returned %d\n", guarded(2));
        longjmp(env_stack[env_depth - 1], 0); /* longjmp(.., 0) delivers 1 */
    }
    printf("outer: second pass v=%d count=%d\n", v, count);
    env_depth--;
    return count;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr2_info;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR2, &sa, NULL);

    raise(SIGUSR1);
    kill(getpid(), SIGUSR1);
    printf("SIGUSR1 handled %d times, last signal %s\n", (int)usr1_count,
           last_signo == SIGUSR1 ? "SIGUSR1" : "?");

    union sigval val = { .sival_int = 4242 };
    sigqueue(getpid(), SIGUSR2, val);
    printf("SIGUSR2 (SA_SIGINFO) handled %d times, si_code is SI_QUEUE: %d, value %d\n",
           (int)usr2_count, last_code == SI_QUEUE, last_value);

    struct sigaction old;
    sigaction(SIGUSR1, NULL, &old);
    printf("installed handler reads back equal: %d\n", old.sa_handler == on_usr1);
    sigaction(SIGUSR2, NULL, &old);
    printf("installed sigaction reads back equal: %d, SA_SIGINFO set: %d\n",
           old.sa_sigaction == on_usr2_info, (old.sa_flags & SA_SIGINFO) != 0);

    /* blocked signal delivered when unblocked */
    sigset_t set, prev;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, &prev);
    raise(SIGUSR1);
    printf("while blocked: %d\n", (int)usr1_count);
    sigprocmask(SIG_SETMASK, &prev, NULL);
    printf("after unblock: %d\n", (int)usr1_count);

    alt_stack_size = 1 << 16;
    alt_stack_base = malloc(alt_stack_size);
    stack_t ss = { .ss_sp = alt_stack_base, .ss_size = alt_stack_size, .ss_flags = 0 };
    if (sigaltstack(&ss, NULL) != 0) {
        perror("sigaltstack");
        return 1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);

    try_fault("null deref", 0);
    try_fault("divide by zero", 1);
    try_fault("fault 20 frames deep", 2);
    try_fault("valid access", 3);
    try_fault("null deref again", 0);

    int c = outer_guard();
    printf("outer guard count %d\n", c);
    return 40 + (int)usr1_count;
}
