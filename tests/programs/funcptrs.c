/* funcptrs.c -- pitfall 2: function pointers in data and in code.
 *
 * Procedure addresses live in many places besides call instructions:
 *  - static const tables of pointers (.data.rel.ro in PIE, .rodata otherwise),
 *  - writable tables and vtable-like structs in .data that are changed at
 *    run time,
 *  - addresses materialised in code (`lea f(%rip)`, `mov $f`) and passed to
 *    other functions, stored on the heap, returned, compared for equality,
 *  - callbacks handed to libc (qsort, bsearch).
 * If the rewriter misses one kind, the program calls into the poisoned old
 * code (crash), or two pointers to the same function no longer compare equal
 * (one was rewritten, the other was not) and the transcript changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

typedef long (*binop)(long, long);

static NOINLINE long op_add(long a, long b) { return a + b; }
static NOINLINE long op_sub(long a, long b) { return a - b; }
static NOINLINE long op_mul(long a, long b) { return a * b; }
static NOINLINE long op_div(long a, long b) { return b ? a / b : 0; }
static NOINLINE long op_mod(long a, long b) { return b ? a % b : 0; }
static NOINLINE long op_max(long a, long b) { return a > b ? a : b; }

/* Constant table: relocations to code in .data.rel.ro / .rodata. */
static binop const const_ops[] = { op_add, op_sub, op_mul, op_div, op_mod, op_max };
static const char *const op_names[] = { "add", "sub", "mul", "div", "mod", "max" };

/* Writable table, shuffled at run time. */
static binop live_ops[] = { op_add, op_sub, op_mul, op_div, op_mod, op_max };

/* A vtable-like interface. */
struct shape;
struct shape_ops {
    const char *kind;
    long (*area)(const struct shape *);
    long (*perimeter)(const struct shape *);
    void (*describe)(const struct shape *);
};
struct shape {
    const struct shape_ops *ops;
    long a, b;
};

static NOINLINE long rect_area(const struct shape *s) { return s->a * s->b; }
static NOINLINE long rect_perim(const struct shape *s) { return 2 * (s->a + s->b); }
static NOINLINE long sq_area(const struct shape *s) { return s->a * s->a; }
static NOINLINE long sq_perim(const struct shape *s) { return 4 * s->a; }
static NOINLINE long tri_area(const struct shape *s) { return s->a * s->b / 2; }
static NOINLINE long tri_perim(const struct shape *s) { return s->a + s->b + (s->a > s->b ? s->a : s->b); }
static NOINLINE void describe_generic(const struct shape *s)
{
    printf("  %s(%ld,%ld): area=%ld perimeter=%ld\n", s->ops->kind, s->a, s->b,
           s->ops->area(s), s->ops->perimeter(s));
}
static NOINLINE void describe_square(const struct shape *s)
{
    printf("  square side %ld: area=%ld\n", s->a, s->ops->area(s));
}

static const struct shape_ops rect_ops = { "rect", rect_area, rect_perim, describe_generic };
static const struct shape_ops square_ops = { "square", sq_area, sq_perim, describe_square };
static struct shape_ops tri_ops = { "tri", tri_area, tri_perim, describe_generic };

/* Address taken in code, returned from a function. */
static NOINLINE binop lookup(char c)
{
    switch (c) {
    case '+': return op_add;
    case '-': return op_sub;
    case '*': return &op_mul;
    case '/': return op_div;
    case '%': return op_mod;
    default: return NULL;
    }
}

static NOINLINE const char *name_of(binop f)
{
    /* Compare a pointer from anywhere with pointers from the const table. */
    for (unsigned i = 0; i < sizeof const_ops / sizeof *const_ops; i++)
        if (const_ops[i] == f)
            return op_names[i];
    return "?";
}

/* Pointer passed down through several frames. */
static NOINLINE long apply3(binop f, long a, long b) { return f(f(a, b), b); }
static NOINLINE long apply2(binop f, long a, long b) { return apply3(f, a, b) + 1; }
static NOINLINE long apply1(binop f, long a, long b) { return apply2(f, a + 1, b); }

/* Heap-stored callback chain. */
struct node {
    binop f;
    long arg;
    struct node *next;
};

static int cmp_long(const void *pa, const void *pb)
{
    long a = *(const long *)pa, b = *(const long *)pb;
    return (a > b) - (a < b);
}
static int cmp_long_desc(const void *pa, const void *pb) { return cmp_long(pb, pa); }

struct rec { const char *name; int key; };
static int cmp_rec(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key - b->key;
    return strcmp(a->name, b->name);
}

typedef int (*cmpfn)(const void *, const void *);
static cmpfn volatile chosen_cmp; /* opaque to the optimiser */

int main(void)
{
    printf("const table:\n");
    for (unsigned i = 0; i < 6; i++)
        printf("  %s(17,5) = %ld\n", op_names[i], const_ops[i](17, 5));

    /* rotate the writable table, then call through it */
    binop first = live_ops[0];
    memmove(live_ops, live_ops + 1, 5 * sizeof *live_ops);
    live_ops[5] = first;
    printf("live table:");
    for (unsigned i = 0; i < 6; i++)
        printf(" %s=%ld", name_of(live_ops[i]), live_ops[i](100, 7));
    printf("\n");

    printf("lookup:");
    const char *ops = "+-*/%^";
    for (const char *p = ops; *p; p++) {
        binop f = lookup(*p);
        printf(" %c:%s", *p, f ? name_of(f) : "null");
        if (f)
            printf("=%ld", apply1(f, 40, 3));
    }
    printf("\n");

    /* equality between code-materialised and data-loaded pointers */
    printf("equal: %d %d %d %d\n", lookup('+') == op_add, lookup('*') == const_ops[2],
           live_ops[5] == &op_add, lookup('-') == live_ops[0]);

    struct shape shapes[] = {
        { &rect_ops, 3, 4 }, { &square_ops, 5, 0 }, { &tri_ops, 6, 8 }, { &rect_ops, 10, 2 },
    };
    tri_ops.describe = describe_generic; /* written at run time */
    printf("shapes:\n");
    long total = 0;
    for (unsigned i = 0; i < 4; i++) {
        shapes[i].ops->describe(&shapes[i]);
        total += shapes[i].ops->area(&shapes[i]);
    }
    printf("  total area %ld\n", total);

    struct node *head = NULL;
    for (int i = 0; i < 6; i++) {
        struct node *n = malloc(sizeof *n);
        n->f = const_ops[(i * 5) % 6];
        n->arg = i + 2;
        n->next = head;
        head = n;
    }
    long acc = 1000;
    for (struct node *n = head; n;) {
        struct node *next = n->next;
        acc = n->f(acc, n->arg);
        printf("chain %s %ld -> %ld\n", name_of(n->f), n->arg, acc);
        free(n);
        n = next;
    }

    long vals[] = { 42, -7, 1000, 3, 3, 99, -500, 0, 17, 8 };
    size_t nv = sizeof vals / sizeof *vals;
    chosen_cmp = cmp_long;
    qsort(vals, nv, sizeof *vals, chosen_cmp);
    printf("sorted:");
    for (size_t i = 0; i < nv; i++) printf(" %ld", vals[i]);
    printf("\n");
    long key = 99;
    long *hit = bsearch(&key, vals, nv, sizeof *vals, cmp_long);
    printf("bsearch 99 at index %ld\n", hit ? (long)(hit - vals) : -1L);
    chosen_cmp = cmp_long_desc;
    qsort(vals, nv, sizeof *vals, chosen_cmp);
    printf("desc:");
    for (size_t i = 0; i < nv; i++) printf(" %ld", vals[i]);
    printf("\n");
    printf("cmp is desc: %d, is asc: %d\n", chosen_cmp == cmp_long_desc, chosen_cmp == cmp_long);

    struct rec recs[] = { { "pear", 3 }, { "apple", 1 }, { "fig", 3 }, { "kiwi", 2 }, { "date", 1 } };
    qsort(recs, 5, sizeof *recs, cmp_rec);
    printf("records:");
    for (int i = 0; i < 5; i++) printf(" %s/%d", recs[i].name, recs[i].key);
    printf("\n");
    return (int)(total % 17) + 10;
}
