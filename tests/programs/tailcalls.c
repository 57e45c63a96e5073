/* tailcalls.c -- pitfall 10: tail calls.
 *
 * At -O2 a call in tail position becomes a `jmp` to the other procedure
 * (sibling call), possibly a conditional one (clang can emit `jne other`),
 * or an indirect `jmp *%rax` / `jmp *table(,%rdi,8)` through a pointer.
 * The caller's frame is gone, so the callee returns straight to the
 * caller's caller.  A rewriter that only updates `call` targets, or treats
 * every `jmp` as intra-procedural, leaves jumps into the poisoned original.
 * Mutual recursion through tail calls runs millions of levels deep: it only
 * works because no stack is consumed; a rewriter that turned the jumps into
 * calls (or instrumented them with stack-using stubs) would overflow.
 */
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

#ifdef __OPTIMIZE__
#define DEPTH 3000001L /* needs real tail calls: ~3M frames otherwise */
#else
#define DEPTH 30001L
#endif

static NOINLINE int is_odd(long n);
static NOINLINE int is_even(long n)
{
    if (n == 0)
        return 1;
    return is_odd(n - 1);
}
static NOINLINE int is_odd(long n)
{
    if (n == 0)
        return 0;
    return is_even(n - 1);
}

/* plain sibling calls */
static NOINLINE long finish(long x, long y) { return x * 31 + y; }
static NOINLINE long stage2(long x, long y) { return finish(y + 1, x ^ 5); }
static NOINLINE long stage1(long x) { return stage2(x * 3, x - 4); }

/* conditional tail calls to two different functions */
static NOINLINE long on_small(long x) { return x * 1000 + 1; }
static NOINLINE long on_large(long x) { return x / 3 - 7; }
static NOINLINE long choose(long x)
{
    if (x < 100)
        return on_small(x);
    return on_large(x);
}

/* clang emits a *conditional* tail call (`jg on_large`) for minsize code */
#ifdef __clang__
#define MINSIZE __attribute__((minsize))
#else
#define MINSIZE
#endif
static NOINLINE MINSIZE long choose_cond(long x)
{
    if (x < 100)
        return on_small(x);
    return on_large(x);
}

/* indirect tail calls through a table and through an argument */
typedef long (*unary)(long);
static NOINLINE long t_inc(long x) { return x + 1; }
static NOINLINE long t_dbl(long x) { return x * 2; }
static NOINLINE long t_neg(long x) { return -x; }
static NOINLINE long t_sq(long x) { return x * x; }
static unary const table[4] = { t_inc, t_dbl, t_neg, t_sq };
static NOINLINE long via_table(unsigned op, long x) { return table[op & 3](x); }
static NOINLINE long via_arg(unary f, long x) { return f(x + 10); }

/* tail-recursive accumulator (becomes a loop) and a tail call into libc */
static NOINLINE long gcd(long a, long b) { return b == 0 ? a : gcd(b, a % b); }
static NOINLINE size_t measure(const char *s) { return strlen(s); }
static const char *volatile measured = "tail calls";

/* state machine whose states tail-call each other through pointers */
struct machine;
typedef long (*state_fn)(struct machine *, long);
struct machine {
    const char *input;
    long pos;
    state_fn states[3];
};
static NOINLINE long st_a(struct machine *m, long acc);
static NOINLINE long st_b(struct machine *m, long acc);
static NOINLINE long st_c(struct machine *m, long acc);
static NOINLINE long step_to(struct machine *m, long acc)
{
    char c = m->input[m->pos++];
    if (c == 0)
        return acc;
    return m->states[(unsigned char)c % 3](m, acc);
}
static NOINLINE long st_a(struct machine *m, long acc) { return step_to(m, acc * 2 + 1); }
static NOINLINE long st_b(struct machine *m, long acc) { return step_to(m, acc + 7); }
static NOINLINE long st_c(struct machine *m, long acc) { return step_to(m, acc ^ 0x33); }

int main(void)
{
    printf("is_even(%ld) = %d, is_odd(%ld) = %d\n", DEPTH, is_even(DEPTH), DEPTH - 1,
           is_odd(DEPTH - 1));
    printf("stage1(10) = %ld\n", stage1(10));
    printf("choose: %ld %ld %ld\n", choose(5), choose(99), choose(1000));
    static volatile long inputs[] = { 7, 100, -3, 5000 };
    printf("choose_cond:");
    for (int i = 0; i < 4; i++)
        printf(" %ld", choose_cond(inputs[i]));
    printf("\n");
    long x = 3;
    for (unsigned op = 0; op < 8; op++) {
        x = via_table(op, x);
        printf("via_table(%u) -> %ld\n", op, x);
    }
    printf("via_arg: %ld %ld\n", via_arg(t_sq, 2), via_arg(t_neg, 5));
    printf("gcd(1071, 462) = %ld, measure = %zu\n", gcd(1071, 462), measure(measured));

    static char text[4096];
    for (int i = 0; i < 4095; i++)
        text[i] = (char)('a' + (i * 7) % 26);
    struct machine m = { text, 0, { st_a, st_b, st_c } };
    printf("machine: %ld\n", step_to(&m, 0) % 1000003);
    return is_odd(DEPTH) + 20;
}
