/* The deferred end's dump (`atomx PROG -T NAME --defer-end`, `atomx end`):
 * the one format the runtime writes (runtime/stub/end.c) and the command
 * line reads (src/instrument/EndReplay.cpp).  C and C++. */
#ifndef ATOMX_END_FORMAT_H
#define ATOMX_END_FORMAT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Deferred end (atomx --defer-end), for a tool whose analysis code runs only
 * at ProgramAfter (its counts are inline; atomx's own ProgramBefore calls,
 * the facts' init, aside).  A process of
 * such a program loads no analysis code at all.  Its ProgramAfter adds up
 * the counters and writes them to ATOMX_END_PREFIX PID ("atomx-end.PID") in
 * its working directory, or in the directory ATOMX_END_DIR_ENV named when it
 * started: an AtomxEndDump, then the executable's path (pathBytes, no NUL),
 * then the working directory at the end (cwdBytes, no NUL: where the
 * outputs go), then the .atomx.counters section (countersSize
 * bytes) sparsely: cut where the memory pages it spans begin, it is
 * `chunks` chunks; a byte per chunk (1: the process touched that page, 0:
 * it is all zero), then the bytes of each touched chunk in order.  A short
 * run of a big program writes only the pages it counted in.
 * `atomx end` runs that executable again, in the process's directory,
 * with ATOMX_END_REPLAY_ENV=<the dump's path> in its environment: the
 * runtime reads the counters back, enters the directory the process ended
 * in, loads the analysis code, runs the ProgramBefore (atomx's own) and
 * ProgramAfter calls -- the program itself never runs --
 * and exits 0.  The analysis code names its outputs as the process would
 * have (atomx_analysis_end_process: runtime/analysis/analysis.c). */
#define ATOMX_END_MAGIC "ATOMXE01"
#define ATOMX_END_PREFIX "atomx-end."
#define ATOMX_END_REPLAY_ENV "ATOMX_END_REPLAY"
#define ATOMX_END_DIR_ENV "ATOMX_END_DIR"
typedef struct AtomxEndDump {
  char magic[8];          /* ATOMX_END_MAGIC */
  uint64_t pid;           /* the process that wrote it */
  uint64_t suffixed;      /* its outputs are NAME.PID, not NAME (AtomxOutputPath) */
  uint64_t countersSize;
  /* The executable as stat(2) saw it: a replay refuses another file. */
  uint64_t exeDevice, exeInode, exeSize, exeModified, exeModifiedNs;
  uint64_t pathBytes;
  uint64_t cwdBytes;
  uint64_t chunks;
} AtomxEndDump;

#ifdef __cplusplus
}
#endif

#endif
