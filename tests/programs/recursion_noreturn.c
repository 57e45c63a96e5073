/* recursion_noreturn.c -- pitfall 14: recursion, deep call chains and
 * noreturn calls at the end of a block.
 *
 * Deep recursion puts tens of thousands of return addresses into the moved
 * code on the stack at once; every one must lead back correctly.  A call to
 * a noreturn function is typically the *last instruction* of a procedure
 * (no `ret`, no padding needed), so its return address -- the address just
 * after the call -- is the first byte of the *next* procedure.  A rewriter
 * that finds procedure ends by following fall-through, or that splits code
 * at return addresses, or that relies on "the byte after a call belongs to
 * the caller" (e.g. for unwinding or for mapping return addresses) gets this
 * wrong.  Compilers usually pad after such a call up to the next function's
 * alignment, so the file-scope assembly below makes the situation exact:
 * asm_finish ends with `call recursion_exit` and asm_after starts at the very
 * next byte.  The program's last action goes through that call, so the exit
 * status comes out of a noreturn call whose return address is another
 * procedure's entry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static int errors_seen;

__attribute__((noreturn, noinline, used)) void recursion_exit(int status)
{
    printf("recursion_exit(%d)\n", status);
    exit(status);
}

/* int asm_finish(int status): never returns; int asm_after(int x): x + 1 */
int asm_after(int x);
__attribute__((noreturn)) void asm_finish(int status);
__asm__(".text\n"
        ".p2align 4\n"
        ".globl asm_finish\n"
        ".type asm_finish, @function\n"
        "asm_finish:\n"
        "    .cfi_startproc\n"
        "    sub $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    call recursion_exit\n" /* last instruction: no ret, no padding */
        "    .cfi_endproc\n"
        ".size asm_finish, .-asm_finish\n"
        ".globl asm_after\n"
        ".type asm_after, @function\n"
        "asm_after:\n" /* == return address of the call above */
        "    .cfi_startproc\n"
        "    lea 1(%rdi), %eax\n"
        "    ret\n"
        "    .cfi_endproc\n"
        ".size asm_after, .-asm_after\n");

__attribute__((noreturn, noinline)) static void die(int status)
{
    printf("die(%d): exiting\n", status);
    fflush(stdout);
    exit(status);
}

__attribute__((noreturn, noinline)) static void fatal(const char *msg)
{
    fprintf(stderr, "fatal: %s\n", msg);
    abort(); /* never reached in a correct run */
}

/* The noreturn call is the last instruction of each of these functions. */
static NOINLINE int checked_div(int a, int b)
{
    if (b != 0)
        return a / b;
    fatal("division by zero");
}

static NOINLINE int pick(int which)
{
    switch (which) {
    case 0: return 11;
    case 1: return 22;
    case 2: return 33;
    }
    fatal("bad pick");
}

static NOINLINE long ackermann(long m, long n)
{
    if (m == 0)
        return n + 1;
    if (n == 0)
        return ackermann(m - 1, 1);
    return ackermann(m - 1, ackermann(m, n - 1));
}

static NOINLINE long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static long hanoi_moves;
static NOINLINE void hanoi(int n, int from, int to, int via)
{
    if (n == 0)
        return;
    hanoi(n - 1, from, via, to);
    hanoi_moves += (from * 3 + to) % 7 + 1;
    hanoi(n - 1, via, to, from);
}

/* recursive descent parser for + - * / ( ) over integers */
static const char *in;
static NOINLINE long expr(void);
static NOINLINE long primary(void)
{
    while (*in == ' ')
        in++;
    if (*in == '(') {
        in++;
        long v = expr();
        while (*in == ' ')
            in++;
        if (*in++ != ')')
            fatal("expected )");
        return v;
    }
    if (*in == '-') {
        in++;
        return -primary();
    }
    long v = 0;
    if (*in < '0' || *in > '9')
        fatal("expected number");
    while (*in >= '0' && *in <= '9')
        v = v * 10 + (*in++ - '0');
    return v;
}
static NOINLINE long term(void)
{
    long v = primary();
    for (;;) {
        while (*in == ' ')
            in++;
        if (*in == '*') { in++; v *= primary(); }
        else if (*in == '/') { in++; v = checked_div((int)v, (int)primary()); }
        else return v;
    }
}
static NOINLINE long expr(void)
{
    long v = term();
    for (;;) {
        while (*in == ' ')
            in++;
        if (*in == '+') { in++; v += term(); }
        else if (*in == '-') { in++; v -= term(); }
        else return v;
    }
}

/* A deep chain: depth 20000 frames through three mutually recursive
 * functions that do work after the call returns (no tail calls). */
static NOINLINE long chain_b(int n, char *trail);
static NOINLINE long chain_c(int n, char *trail);
static NOINLINE long chain_a(int n, char *trail)
{
    if (n == 0)
        return 1;
    char local[16];
    memset(local, 'a', sizeof local);
    long r = chain_b(n - 1, trail);
    trail[n % 64] ^= local[n % 16];
    return r * 3 % 1000003 + 1;
}
static NOINLINE long chain_b(int n, char *trail)
{
    if (n == 0)
        return 2;
    long r = chain_c(n - 1, trail);
    trail[n % 64] += 1;
    return r * 5 % 1000003 + 2;
}
static NOINLINE long chain_c(int n, char *trail)
{
    if (n == 0)
        return 3;
    long r = chain_a(n - 1, trail);
    trail[n % 64] ^= 0x21;
    return r * 7 % 1000003 + 3;
}

int main(int argc, char **argv)
{
    (void)argv;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ackermann(2, 3) = %ld, ackermann(3, 5) = %ld\n", ackermann(2, 3), ackermann(3, 5));
    printf("fib(25) = %ld\n", fib(25));
    hanoi(16, 0, 2, 1);
    printf("hanoi(16) weighted moves = %ld\n", hanoi_moves);

    const char *exprs[] = { "1 + 2 * 3", "(1 + 2) * 3", "2 * (3 + (4 - 1) * 5) / 4",
                            "-(7 - 10) * -(2)", "((((((((42))))))))" };
    for (int i = 0; i < 5; i++) {
        in = exprs[i];
        printf("%s = %ld\n", exprs[i], expr());
    }

    char trail[64];
    memset(trail, 0, sizeof trail);
    long c = chain_a(20000, trail);
    unsigned h = 0;
    for (int i = 0; i < 64; i++)
        h = h * 31 + (unsigned char)trail[i];
    printf("chain(20000) = %ld, trail hash %u\n", c, h);

    printf("checked_div(100, 7) = %d, pick(2) = %d\n", checked_div(100, 7), pick(2));
    errors_seen = argc > 5; /* always 0 here */
    if (errors_seen)
        fatal("unexpected arguments");
    printf("asm_after(41) = %d\n", asm_after(41));
    if (c == 0)
        die(1); /* noreturn call at the end of a block (not taken) */
    asm_finish(asm_after(41)); /* exits with 42 */
}
