/* switch_tables.c -- pitfall 1: switch jump tables.
 *
 * Dense switches are compiled to an indirect jump through a table in
 * .rodata.  In PIE code the table holds 32-bit offsets relative to the table
 * itself (gcc: `movslq (%rdx,%rax,4),%rax; add %rdx,%rax; jmp *%rax`), in
 * non-PIE code it holds absolute 8-byte addresses (`jmp *TABLE(,%rax,8)`).
 * Both kinds of entry point into the middle of a procedure.  A rewriter that
 * moves the procedure but does not find and rewrite every table entry jumps
 * into the old (poisoned) code and crashes, or lands on the wrong case and
 * prints a different transcript.
 *
 * Covered shapes: a switch inside a loop, several switches in one function,
 * a switch on sparse value clusters (several tables or a table plus compare
 * tree), a switch whose case bodies are large so the targets are far apart,
 * and a character-driven state machine.  Case bodies do different kinds of
 * work so that gcc cannot turn the switch into a lookup table of values.
 */
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static unsigned rotl(unsigned x, int r) { return (x << r) | (x >> (32 - r)); }

/* Dense switch executed inside a loop. */
static NOINLINE unsigned step(unsigned acc, int op)
{
    switch (op) {
    case 0: acc = acc * 3 + 1; break;
    case 1: acc ^= 0x5555u; break;
    case 2: acc = rotl(acc, 5); break;
    case 3: acc -= 77; break;
    case 4: acc = acc / 3 + 11; break;
    case 5: acc = ~acc; break;
    case 6: acc += acc >> 7; break;
    case 7: acc = acc * acc + 3; break;
    case 8: acc = rotl(acc, 13) ^ 0xdeadu; break;
    case 9: acc |= 0x10001u; break;
    case 10: acc &= 0xfffff0ffu; break;
    case 11: acc = acc % 100003u + op; break;
    default: acc += 1000; break;
    }
    return acc;
}

/* Several switches in one function, each compiled to its own table. */
static NOINLINE int several(int a, int b, int c)
{
    int r = 0;
    switch (a) {
    case 0: r += 10; break;
    case 1: r -= 3; break;
    case 2: r = r * 2 + 7; break;
    case 3: r ^= 0x3c; break;
    case 4: r += a * b; break;
    case 5: r -= b * 11; break;
    case 6: r = b - 100; break;
    default: r = -1; break;
    }
    switch (b) {
    case 1: r += 1; /* fallthrough */
    case 2: r *= 3; break;
    case 3: r -= 17; break;
    case 4: r = r / 2; break;
    case 5: r += c; break;
    case 6: r ^= c << 2; break;
    case 7: r = r % 13; break;
    case 8: r += 1000; break;
    default: r += 5; break;
    }
    switch (c) {
    case 10: r = r * 5; break;
    case 11: r += 'k'; break;
    case 12: r -= 'l'; break;
    case 13: r = -r; break;
    case 14: r = r + (r >> 1); break;
    case 15: r ^= 0x7fff; break;
    case 16: r = r * r % 1009; break;
    default: r += 3; break;
    }
    return r;
}

/* Sparse clusters of case values: gcc/clang build one table per cluster
 * and select the cluster with compares. */
static NOINLINE int clusters(int v)
{
    switch (v) {
    case 0: return 1;
    case 1: return v * 5 + 2;
    case 2: return v << 4;
    case 3: return v - 40;
    case 4: return v ^ 0x77;
    case 5: return v * v;
    case 6: return 600 / v;
    case 1000: return v + 3;
    case 1001: return v / 7;
    case 1002: return v % 97;
    case 1003: return v * 3;
    case 1004: return -v;
    case 1005: return v >> 2;
    case 1006: return v & 0x3f;
    case 50000: return v / 1000;
    case 50001: return v % 1234;
    case 50002: return v - 49000;
    case 50003: return (v >> 3) ^ 5;
    case 50004: return v / 13;
    case 50005: return v % 7 + 1;
    default: return -7;
    }
}

/* Large case bodies: the jump targets are kilobytes apart. */
#define BIG(k)                                                           \
    do {                                                                 \
        for (int i_ = 0; i_ < 8; i_++) {                                 \
            x = x * (k * 2 + 1) + (x >> 3) + i_;                         \
            x ^= rotl(x, (k % 31) + 1);                                  \
            x += (x % (k + 3)) * 7;                                      \
            y = y * 31 + (x & 0xff) + (y >> 5);                          \
            y ^= rotl(y, (k % 29) + 2) + k;                              \
        }                                                                \
        x += y;                                                          \
    } while (0)

static NOINLINE unsigned far_apart(unsigned x, int sel)
{
    unsigned y = 17;
    switch (sel) {
    case 0: BIG(1); BIG(2); BIG(3); BIG(4); break;
    case 1: BIG(5); BIG(6); BIG(7); BIG(8); break;
    case 2: BIG(9); BIG(10); BIG(11); BIG(12); break;
    case 3: BIG(13); BIG(14); BIG(15); BIG(16); break;
    case 4: BIG(17); BIG(18); BIG(19); BIG(20); break;
    case 5: BIG(21); BIG(22); BIG(23); BIG(24); break;
    case 6: BIG(25); BIG(26); BIG(27); BIG(28); break;
    default: x = 0; break;
    }
    return x;
}

/* Character-driven state machine: switch on a char inside a loop. */
static NOINLINE void tokenize(const char *s, int counts[6])
{
    memset(counts, 0, 6 * sizeof *counts);
    for (; *s; s++) {
        switch (*s) {
        case '0': case '1': case '2': case '3': case '4':
        case '5': case '6': case '7': case '8': case '9':
            counts[0]++; break;
        case '+': case '-': counts[1]++; break;
        case '*': case '/': case '%': counts[2]++; break;
        case '(': case ')': counts[3]++; break;
        case ' ': case '\t': counts[4]++; break;
        case 'a': case 'b': case 'c': case 'd': case 'e': case 'f':
            counts[5] += 2; break;
        default: counts[5]++; break;
        }
    }
}

int main(void)
{
    unsigned acc = 1;
    for (int i = 0; i < 200; i++)
        acc = step(acc, (i * 7) % 14);
    printf("step loop: %u\n", acc);

    long sum = 0;
    for (int a = -1; a < 8; a++)
        for (int b = 0; b < 10; b++)
            for (int c = 9; c < 18; c++)
                sum = sum * 3 + several(a, b, c), sum %= 1000000007L;
    printf("several: %ld\n", sum);

    static const int probes[] = { -5, 0, 1, 2, 3, 4, 5, 6, 7, 999, 1000, 1001,
                                  1002, 1003, 1004, 1005, 1006, 1007, 49999,
                                  50000, 50001, 50002, 50003, 50004, 50005,
                                  50006, 123456 };
    printf("clusters:");
    for (unsigned i = 0; i < sizeof probes / sizeof *probes; i++)
        printf(" %d", clusters(probes[i]));
    printf("\n");

    for (int sel = 0; sel < 8; sel++)
        printf("far_apart(%d) = %u\n", sel, far_apart(12345u + sel, sel));

    int counts[6];
    tokenize("(12 + 34) * 5 - abc / (7 % x)\t;", counts);
    printf("tokens: %d %d %d %d %d %d\n", counts[0], counts[1], counts[2],
           counts[3], counts[4], counts[5]);
    return (int)(acc % 50) + 3;
}
