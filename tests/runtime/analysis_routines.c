/* Analysis routines for the runtime tests, built into a shared object with
 * libatomx_analysis.a the way atomx builds one.  They log to the same file
 * as the harness (DIR/log, "<pid> analysis-<event>"). */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomx/analysis.h>

static int logFd = -1;
static long total;
static char dir[512];

void LogEvent(const char *what) {
  if (logFd >= 0) dprintf(logFd, "%d analysis-%s\n", (int)getpid(), what);
}

static void analysis_atexit(void) { LogEvent("atexit"); }

/* ld.so runs this from _dl_fini, before ProgramAfter: not deferred. */
__attribute__((destructor)) static void analysis_fini_array(void) { LogEvent("fini-array"); }

void Setup(const char *d) {
  snprintf(dir, sizeof dir, "%s", d);
  char path[600];
  snprintf(path, sizeof path, "%s/log", dir);
  logFd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
  /* The analysis namespace's libc has its own environ. */
  const char *env = getenv("ATOMX_TEST_DIR");
  LogEvent(env && strcmp(env, d) == 0 ? "setup getenv-ok" : "setup getenv-missing");
  atexit(analysis_atexit);
}

void Count(long n) { total += n; }

/* Called from a ProgramAfter body: output that is never closed or flushed
 * here; atomx_analysis_finish must flush it and cut it at its end (the test
 * leaves a longer file under that name).  And the same line in an output
 * that is closed here, which also must not keep the older file's tail. */
void Report(void) {
  char name[600];
  snprintf(name, sizeof name, "%s/report", dir);
  FILE *f = AtomxOpenOutput(name);
  if (f) fprintf(f, "total %ld pid %d\n", total, (int)getpid());
  snprintf(name, sizeof name, "%s/closed", dir);
  FILE *closed = AtomxOpenOutput(name);
  if (closed) fprintf(closed, "total %ld pid %d\n", total, (int)getpid()), fclose(closed);
  printf("analysis stdout total %ld pid %d\n", total, (int)getpid());
  LogEvent("report");
}

const char *OutputPath(const char *name) { return AtomxOutputPath(name); }
