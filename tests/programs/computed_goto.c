/* computed_goto.c -- pitfall 13: computed goto (GNU labels-as-values).
 *
 * A threaded bytecode interpreter.  `&&label` yields the address of a code
 * location in the *middle* of a procedure:
 *  - run_abs() keeps them in a static table of absolute label addresses
 *    (.data.rel.ro with R_X86_64_RELATIVE in PIE, .rodata/.data with
 *    R_X86_64_64 otherwise), referring to points inside the function;
 *  - run_rel() uses the classic relocation-free variant: a table of label
 *    *differences* (`&&op - &&base`), which the assembler resolves itself, so
 *    there is no relocation at all -- it only survives if the procedure's
 *    internal layout is kept intact (or the rewriter recognises the idiom);
 *  - dispatch is `jmp *%reg`, often replicated at the end of every handler.
 * A rewriter that does not rewrite label addresses in data jumps into the
 * poisoned original code; one that re-lays-out the procedure breaks run_rel.
 */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

enum { PUSH, ADD, SUB, MUL, DUP, SWAP, OVER, DROP, ROT, DEC, JNZ, PRINT, HALT };
/* PUSH k: push k        ADD/SUB/MUL: a b -> a+b / a-b / a*b
 * DUP: a -> a a         SWAP: a b -> b a        OVER: a b -> a b a
 * DROP: a ->            ROT: a b c -> b c a     DEC: a -> a-1
 * JNZ t: pop, jump to t if non-zero              PRINT: append top to output
 * HALT: stop, return stack depth */

static const int prog_fact[] = {      /* 10! */
    PUSH, 1, PUSH, 10,                /* acc n */
    SWAP, OVER, MUL, SWAP,            /* pc 4: acc*n n */
    DEC, DUP, JNZ, 4,                 /* n-1; loop while non-zero */
    DROP, PRINT, HALT,
};
static const int prog_fib[] = {       /* fibonacci, printing every term */
    PUSH, 0, PUSH, 1, PUSH, 30,       /* a b n */
    ROT, ROT, DUP, ROT, ADD, PRINT,   /* pc 6: n b a+b */
    ROT, DEC, DUP, JNZ, 6,            /* b a+b n-1 */
    DROP, DROP, HALT,                 /* leaves F(30) */
};
static const int prog_sq[] = {        /* sum of i*i, i = 1..100 */
    PUSH, 0, PUSH, 100,               /* sum i */
    DUP, DUP, MUL, PUSH, 0, SUB,      /* pc 4: sum i i*i */
    ROT, ADD, SWAP,                   /* sum+i*i i */
    DEC, DUP, JNZ, 4,
    DROP, PRINT, HALT,
};

static long stack_[64];

static NOINLINE long run_abs(const int *code, long *out, int *nout)
{
    static void *const labels[] = { &&do_push, &&do_add,  &&do_sub, &&do_mul, &&do_dup,
                                    &&do_swap, &&do_over, &&do_drop, &&do_rot, &&do_dec,
                                    &&do_jnz,  &&do_print, &&do_halt };
    long *sp = stack_;
    const int *pc = code;
    long t;
#define NEXT goto *labels[*pc++]
    NEXT;
do_push: *sp++ = *pc++; NEXT;
do_add: sp--; sp[-1] += sp[0]; NEXT;
do_sub: sp--; sp[-1] -= sp[0]; NEXT;
do_mul: sp--; sp[-1] *= sp[0]; NEXT;
do_dup: sp[0] = sp[-1]; sp++; NEXT;
do_swap: t = sp[-1]; sp[-1] = sp[-2]; sp[-2] = t; NEXT;
do_jnz: t = *pc++; if (*--sp) pc = code + t; NEXT;
do_dec: sp[-1]--; NEXT;
do_print: out[(*nout)++] = sp[-1]; NEXT;
do_over: sp[0] = sp[-2]; sp++; NEXT;
do_drop: sp--; NEXT;
do_rot: t = sp[-3]; sp[-3] = sp[-2]; sp[-2] = sp[-1]; sp[-1] = t; NEXT;
do_halt:
#undef NEXT
    return sp - stack_;
}

static NOINLINE long run_rel(const int *code, long *out, int *nout)
{
    static const int offsets[] = {
        &&r_push - &&r_push, &&r_add - &&r_push,   &&r_sub - &&r_push,  &&r_mul - &&r_push,
        &&r_dup - &&r_push,  &&r_swap - &&r_push,  &&r_over - &&r_push, &&r_drop - &&r_push,
        &&r_rot - &&r_push,  &&r_dec - &&r_push,   &&r_jnz - &&r_push,  &&r_print - &&r_push,
        &&r_halt - &&r_push,
    };
    long *sp = stack_;
    const int *pc = code;
    long t;
#define NEXT goto *(&&r_push + offsets[*pc++])
    NEXT;
r_push: *sp++ = *pc++; NEXT;
r_add: sp--; sp[-1] += sp[0]; NEXT;
r_sub: sp--; sp[-1] -= sp[0]; NEXT;
r_mul: sp--; sp[-1] *= sp[0]; NEXT;
r_dup: sp[0] = sp[-1]; sp++; NEXT;
r_swap: t = sp[-1]; sp[-1] = sp[-2]; sp[-2] = t; NEXT;
r_jnz: t = *pc++; if (*--sp) pc = code + t; NEXT;
r_dec: sp[-1]--; NEXT;
r_print: out[(*nout)++] = sp[-1]; NEXT;
r_over: sp[0] = sp[-2]; sp++; NEXT;
r_drop: sp--; NEXT;
r_rot: t = sp[-3]; sp[-3] = sp[-2]; sp[-2] = sp[-1]; sp[-1] = t; NEXT;
r_halt:
#undef NEXT
    return sp - stack_;
}

int main(void)
{
    long out[64];
    const int *progs[] = { prog_fact, prog_fib, prog_sq };
    const char *names[] = { "fact", "fib", "squares" };
    for (int i = 0; i < 3; i++) {
        for (int mode = 0; mode < 2; mode++) {
            int nout = 0;
            long depth = (mode ? run_rel : run_abs)(progs[i], out, &nout);
            printf("%s %s: depth %ld, top %ld, printed %d:", mode ? "rel" : "abs", names[i], depth,
                   depth > 0 ? stack_[depth - 1] : -1L, nout);
            for (int j = 0; j < nout; j++)
                printf(" %ld", out[j]);
            printf("\n");
        }
    }
    return 9;
}
