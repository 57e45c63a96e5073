/* cet.c -- pitfall 12: CET-marked input (-fcf-protection=full).
 *
 * The input has `endbr64` at the start of every function that can be
 * reached indirectly, `notrack jmp *%rax` for switch tables, and a
 * .note.gnu.property (PT_GNU_PROPERTY) saying IBT and SHSTK.  (The link adds
 * -z ibt -z shstk: Debian's crt1.o/libc are not CET-marked, so the linker
 * would otherwise drop the property.)  If the output keeps the IBT mark, every
 * indirect-branch target in the new code must again start with endbr64 --
 * function entries reached through pointers, tables, callbacks from libc and
 * signal delivery -- or an IBT-enforcing CPU kills the process; notrack
 * prefixes must be kept on table jumps.  This machine does not enforce IBT,
 * so the program checks itself: it reads the first bytes at every function
 * address it can see (in the rewritten binary those are the new addresses)
 * and reads its own GNU property note from memory, and prints whether the
 * combination is consistent.  A rewriter that drops endbr64 but keeps the
 * mark makes the transcript differ; one that drops the mark is accepted.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

#ifndef PT_GNU_PROPERTY
#define PT_GNU_PROPERTY 0x6474e553
#endif
#ifndef GNU_PROPERTY_X86_FEATURE_1_AND
#define GNU_PROPERTY_X86_FEATURE_1_AND 0xc0000002
#define GNU_PROPERTY_X86_FEATURE_1_IBT 1u
#endif

static NOINLINE int op_a(int x) { return x + 3; }
static NOINLINE int op_b(int x) { return x * 5; }
static NOINLINE int op_c(int x) { return x - 11; }
static int (*const ops[])(int) = { op_a, op_b, op_c };

static int cmp_int(const void *p, const void *q)
{
    int a = *(const int *)p, b = *(const int *)q;
    return (a > b) - (a < b);
}

static volatile sig_atomic_t got;
static void on_sig(int s) { got = s; }

static jmp_buf jb;
static NOINLINE void jump_back(int v) { longjmp(jb, v); }

static int trace;
static NOINLINE int classify(int v)
{
    switch (v) { /* notrack jmp through a table */
    case 0: trace += 1; return 10;
    case 1: trace ^= 0x10; return v * 7;
    case 2: trace *= 3; return v ^ 9;
    case 3: trace -= 5; return v + 100;
    case 4: trace <<= 1; return -v;
    case 5: trace += v; return v << 3;
    case 6: trace |= 0x40; return v % 4;
    case 7: trace = ~trace; return v * v;
    default: return 0;
    }
}

static int starts_with_endbr64(const void *fn)
{
    static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
    return memcmp(fn, endbr64, 4) == 0;
}

struct props { int found; uint32_t x86_features; };

static int find_props(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct props *p = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_GNU_PROPERTY)
            continue;
        const unsigned char *n = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        const unsigned char *end = n + ph->p_memsz;
        while (n + 12 <= end) {
            uint32_t namesz, descsz, type;
            memcpy(&namesz, n, 4);
            memcpy(&descsz, n + 4, 4);
            memcpy(&type, n + 8, 4);
            const unsigned char *desc = n + ((12 + namesz + 7) & ~7u);
            if (type == NT_GNU_PROPERTY_TYPE_0) {
                for (const unsigned char *q = desc; q + 8 <= desc + descsz;) {
                    uint32_t pt, psz;
                    memcpy(&pt, q, 4);
                    memcpy(&psz, q + 4, 4);
                    if (pt == GNU_PROPERTY_X86_FEATURE_1_AND && psz >= 4) {
                        memcpy(&p->x86_features, q + 8, 4);
                        p->found = 1;
                    }
                    q += 8 + ((psz + 7) & ~7u);
                }
            }
            n = desc + ((descsz + 7) & ~7u);
        }
    }
    return 1; /* only the main program (first object) */
}

int main(void)
{
    int acc = 0;
    for (int i = 0; i < 12; i++)
        acc = acc * 3 + ops[i % 3](i) + classify(i % 9);
    printf("table calls + switch: %d (trace %d)\n", acc, trace);

    int v[] = { 5, -2, 9, 0, 3 };
    qsort(v, 5, sizeof *v, cmp_int);
    printf("qsort: %d %d %d %d %d\n", v[0], v[1], v[2], v[3], v[4]);

    signal(SIGUSR1, on_sig);
    raise(SIGUSR1);
    printf("signal handler ran: %d\n", got == SIGUSR1);

    volatile int rounds = 0;
    int r = setjmp(jb);
    if (r < 3) {
        rounds++;
        jump_back(r + 1);
    }
    printf("setjmp/longjmp rounds: %d, last value %d\n", rounds, r);

    struct { const char *name; const void *fn; } targets[] = {
        { "main", (const void *)main },
        { "op_a", (const void *)ops[0] },
        { "op_b", (const void *)ops[1] },
        { "op_c", (const void *)ops[2] },
        { "cmp_int", (const void *)cmp_int },
        { "on_sig", (const void *)on_sig },
        { "find_props", (const void *)find_props },
    };
    int n = sizeof targets / sizeof *targets, with_endbr = 0;
    for (int i = 0; i < n; i++)
        with_endbr += starts_with_endbr64(targets[i].fn);

    struct props p = { 0, 0 };
    dl_iterate_phdr(find_props, &p);
    int ibt = p.found && (p.x86_features & GNU_PROPERTY_X86_FEATURE_1_IBT);
    int consistent = !ibt || with_endbr == n;
    printf("IBT-marked binary has endbr64 at all %d indirect targets (or no IBT mark): %s\n", n,
           consistent ? "ok" : "BROKEN");
    if (!consistent)
        for (int i = 0; i < n; i++)
            printf("  %s: %s\n", targets[i].name,
                   starts_with_endbr64(targets[i].fn) ? "endbr64" : "no endbr64");
    return consistent ? 0 : 1;
}
