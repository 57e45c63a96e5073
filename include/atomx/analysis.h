/* atomx: support for analysis routines (C and C++).
 *
 * Analysis routines are compiled into a shared object that atomx links with
 * libatomx_analysis.a and embeds in the instrumented program.  At run time
 * it is loaded into its own link-map namespace (dlmopen), with its own copy
 * of libc: its malloc, stdio and globals never mix with the program's.
 *
 * Exit handlers of the analysis object (atexit() and C++ static destructors)
 * run after the ProgramAfter calls, so those calls can still use global
 * objects.  __attribute__((destructor)) functions are not deferred: ld.so
 * runs them before ProgramAfter; use atexit() instead.
 */
#ifndef ATOMX_ANALYSIS_H
#define ATOMX_ANALYSIS_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A file name for the analysis output `name`: `name` itself in the process
 * that started the program, `name.PID` in a process forked from it (PID of
 * the caller) and in a process whose parent runs the same instrumented file
 * (it exec'd the program again), so outputs never overwrite each other.
 * In the directory $ATOMX_OUTPUT_DIR when it is set (`atomx run
 * --output-dir`; %p, %q{VAR} and %% expanded as <atomx/output_dir.h> says,
 * the directory made): DIR/name, DIR/name.PID, or, when DIR has %p (a
 * directory per process), DIR/name in every process.
 * When `atomx end` runs a deferred end, the name the process whose end it
 * is would have used.  The string belongs to the library; it stays valid
 * for the whole run. */
const char *AtomxOutputPath(const char *name);

/* The process whose results these are: getpid(), except when a program
 * rewritten with --defer-end has its end run later by `atomx end` (the
 * process that wrote the counters). */
long AtomxProcessId(void);

/* Opens AtomxOutputPath(name) for writing, as fopen(path, "w") would, but
 * without emptying an existing file first: the new bytes overwrite the old
 * and fclose cuts the file to what was written.  On ext4 (and others) an
 * O_TRUNC of a file that has blocks frees them at once (with `discard`, a
 * synchronous trim of the disk), which cost a short process about 0.2 ms
 * per output file; overwriting in place costs about 10 us.  Null, with errno
 * set, if the file cannot be opened. */
FILE *AtomxOpenOutput(const char *name);

/* Where the program's code is loaded: the run-time address of its code
 * less the link-time one (0 for a program that is not PIE).  An original
 * pc plus this is where the instruction's bytes are in memory (the
 * original code stays mapped where the loader put it). */
uint64_t AtomxLoadBias(void);

/* Exact counts from the fewest counters (atomx::Counters::count): by the
 * time the tool's ProgramAfter calls run, atomx has derived every count a
 * tool asked for from the few it measured.  These say what the measuring
 * cost: *increments, the counter increments the run executed for them, and
 * *blocks, the blocks it executed in the procedures they were placed in
 * (so increments / blocks is the cost per block, where a counter on every
 * block costs 1).  Both 0 when the tool asked for no count. */
void AtomxCountCost(long *increments, long *blocks);

/* Called by the runtime at ProgramAfter, before the tool's calls: derive
 * the counts (the program of the counter placement, over its counters
 * `slots`), and copy each one a tool asked for into its counter array. */
void atomx_counts_solve(const int *program, long *slots);
void atomx_counts_copy(const int *pairs, const long *slots, long *out);

/* Called by the runtime once, after the last ProgramAfter call: runs the
 * analysis object's exit handlers (last registered first), then flushes its
 * stdio streams.  Analysis code does not call it. */
void atomx_analysis_finish(void);

#ifdef __cplusplus
}
#endif

#endif
