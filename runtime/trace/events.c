/* What the recorder says: the trace's event log, and its one message, on
 * failure.  Both written with raw system calls (write_all): the writer
 * thread has no errno. */
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    const long k = sys_write(fd, p, n);
    if (k == -EINTR) continue;
    if (k <= 0) return;
    p += k;
    n -= (size_t)k;
  }
}

void fail(const char *what) {
  char msg[512];
  int n = snprintf(msg, sizeof msg, "atomx trace: %s: %s\n", what, strerror(errno));
  write_all(2, msg, (size_t)n);
  _exit(127);
}

/* One line of the trace's event log (ATOMX_TRACE_EVENTS): the monotonic
 * clock, the process and thread, the event and what it concerns.  One
 * write to a file opened for appending, which every process of the trace
 * shares: the lines of different processes do not mix, and their order in
 * time is the clock's. */
static int eventsFd = -1;
void event(const char *what, const char *format, ...) {
  if (discarding) return;
  int fd = eventsFd, once = 0;
  if (fd < 0) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", traceDir, ATOMX_TRACE_EVENTS);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) fail(path);
    /* Kept, but not by a vfork child: the variable is its parent's, the
     * descriptor would be the child's alone. */
    if (vfork_buffer()) once = 1;
    else eventsFd = fd;
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  char line[4400];
  int n = snprintf(line, sizeof line, "%llu %ld %ld %s", (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
                   (long)getpid(), sys_gettid(), what);
  if (format && n < (int)sizeof line - 2) {
    line[n++] = ' ';
    va_list args;
    va_start(args, format);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, format, args);
    va_end(args);
  }
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  write_all(fd, line, (size_t)n);
  if (once) close(fd);
}

