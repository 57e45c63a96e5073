/* rdynamic.c -- pitfall 8: -rdynamic exports and callbacks from libraries.
 *
 * Linked with -rdynamic, so every global function of the executable is in
 * .dynsym.  The dynamic linker resolves names to addresses with those
 * .dynsym values (and the .gnu.hash table), not with the relocations the
 * rewriter fixed in the code.  If the rewriter moves a procedure but leaves
 * its .dynsym entry pointing at the old copy, dlsym() returns the poisoned
 * address (crash), the pointer no longer compares equal to &function, and
 * dladdr() no longer maps the new address back to the symbol name.
 * Also exercised: callbacks the shared C library calls into the executable
 * (qsort, bsearch, tsearch/twalk, dl_iterate_phdr).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default"), noinline))

EXPORT int exported_add(int a, int b) { return a + b; }
EXPORT int exported_scale(int a) { return a * 11; }
EXPORT const char *exported_greeting(void) { return "hello from the executable"; }

typedef int (*scale_fn)(int);
/* exported data holding a pointer to an exported function */
scale_fn exported_table[2] = { exported_scale, 0 };
int exported_counter = 5;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int walk_sum, walk_nodes;
static void walker(const void *node, VISIT which, int depth)
{
    (void)depth;
    if (which == postorder || which == leaf) {
        walk_sum = walk_sum * 7 + **(const int *const *)node;
        walk_nodes++;
    }
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    /* the main program is the first object and has an empty name */
    if (*(int *)data == 0)
        *(int *)data = (info->dlpi_name == NULL || info->dlpi_name[0] == '\0') ? 1 : 2;
    return 0;
}

int main(void)
{
    typedef int (*add_fn)(int, int);
    add_fn add = (add_fn)dlsym(RTLD_DEFAULT, "exported_add");
    printf("dlsym(RTLD_DEFAULT, exported_add): %s\n", add ? "found" : "missing");
    if (add) {
        printf("  call: %d\n", add(20, 22));
        printf("  same as &exported_add: %d\n", add == exported_add);
    }

    void *self = dlopen(NULL, RTLD_NOW);
    scale_fn scale = (scale_fn)dlsym(self, "exported_scale");
    const char *(*greet)(void) = (const char *(*)(void))dlsym(self, "exported_greeting");
    printf("dlopen(NULL): scale %s, greeting %s\n", scale ? "found" : "missing",
           greet ? "found" : "missing");
    if (scale && greet) {
        printf("  scale(9) = %d, greeting = %s\n", scale(9), greet());
        printf("  same as direct: %d %d\n", scale == exported_scale, greet == exported_greeting);
    }

    scale_fn *table = (scale_fn *)dlsym(self, "exported_table");
    int *counter = (int *)dlsym(self, "exported_counter");
    printf("exported data: table %s, counter %s\n", table ? "found" : "missing",
           counter ? "found" : "missing");
    if (table && counter) {
        printf("  table[0](counter) = %d, table[0] is exported_scale: %d\n", table[0](*counter),
               table[0] == scale);
    }

    Dl_info info;
    if (dladdr((void *)exported_add, &info) && info.dli_sname)
        printf("dladdr(&exported_add) -> %s\n", info.dli_sname);
    else
        printf("dladdr(&exported_add) -> no symbol\n");
    /* an address inside the function, formed at run time (a constant
     * `exported_scale + 1` in the code would point into an instruction) */
    static volatile long one = 1;
    if (dladdr((void *)((char *)exported_scale + one), &info) && info.dli_sname)
        printf("dladdr(&exported_scale + 1) -> %s\n", info.dli_sname);
    else
        printf("dladdr(&exported_scale + 1) -> no symbol\n");

    printf("dlsym(missing symbol): %s\n", dlsym(self, "no_such_symbol_xyz") ? "found" : "missing");
    dlclose(self);

    int v[] = { 9, -3, 14, 0, 7, 7, 21, -8, 2 };
    int n = sizeof v / sizeof *v;
    qsort(v, n, sizeof *v, cmp_int);
    printf("qsort:");
    for (int i = 0; i < n; i++) printf(" %d", v[i]);
    printf("\n");
    int key = 14;
    int *hit = bsearch(&key, v, n, sizeof *v, cmp_int);
    printf("bsearch 14 -> index %d\n", hit ? (int)(hit - v) : -1);

    void *root = NULL;
    static int items[] = { 50, 20, 80, 10, 30, 70, 90, 20 };
    for (unsigned i = 0; i < sizeof items / sizeof *items; i++)
        tsearch(&items[i], &root, cmp_int);
    twalk(root, walker);
    printf("twalk: %d nodes, sum-hash %d\n", walk_nodes, walk_sum);

    int first = 0;
    dl_iterate_phdr(phdr_cb, &first);
    printf("dl_iterate_phdr: first object is main program: %d\n", first == 1);
    return 12;
}
