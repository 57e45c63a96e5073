/* A QEMU TCG plugin for bench/tools.py: counts executed translation blocks and
 * guest instructions, with one callback per executed block (the way an ATOM
 * tool makes one call per basic block), like QEMU's own tests/plugin/bb.c.
 *
 * Debian's qemu-user ships no plugins and no <qemu/qemu-plugin.h>, so the few
 * declarations needed are written out here, for the plugin API version 1 of
 * QEMU 7.x (the symbols are exported by the qemu-x86_64 executable itself).
 *
 *   cc -shared -fPIC -O2 -o libbbcount.so qemu_bbcount.c
 *   qemu-x86_64 -plugin ./libbbcount.so,out=FILE PROG ARGS...
 *
 * FILE (default: stderr) gets "blocks N\ninstructions N\n" at exit.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct {
    const char *target_name;
    struct { int min, cur; } version;
    bool system_emulation;
} qemu_info_t;   /* only the leading fields are read */

enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, qemu_plugin_vcpu_tb_trans_cb_t);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, qemu_plugin_vcpu_udata_cb_t,
                                          enum qemu_plugin_cb_flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, qemu_plugin_udata_cb_t, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static _Atomic uint64_t blocks, insns;
static char out_path[4096];

/* Runs for every executed block; the block's instruction count is its userdata. */
static void exec_cb(unsigned int vcpu, void *n)
{
    (void)vcpu;
    atomic_fetch_add_explicit(&blocks, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&insns, (uintptr_t)n, memory_order_relaxed);
}

static void trans_cb(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, exec_cb, QEMU_PLUGIN_CB_NO_REGS,
                                         (void *)(uintptr_t)qemu_plugin_tb_n_insns(tb));
}

static void exit_cb(qemu_plugin_id_t id, void *p)
{
    (void)id; (void)p;
    FILE *f = out_path[0] ? fopen(out_path, "w") : stderr;
    if (!f)
        return;
    fprintf(f, "blocks %llu\ninstructions %llu\n", (unsigned long long)atomic_load(&blocks),
            (unsigned long long)atomic_load(&insns));
    if (f != stderr)
        fclose(f);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0)
            snprintf(out_path, sizeof out_path, "%s", argv[i] + 4);
        else {
            fprintf(stderr, "bbcount: unknown argument '%s' (only out=FILE)\n", argv[i]);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, trans_cb);
    qemu_plugin_register_atexit_cb(id, exit_cb, NULL);
    return 0;
}
