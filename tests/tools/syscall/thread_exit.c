/* A worker thread ends the process (exit from a thread that made no
   inserted call, as pbzip2's workers do on a corrupt input): ProgramAfter
   sets up the analysis libc in that thread first, and those calls are
   atomx's, not the program's; the main thread is then inside pthread_join,
   a call that never returns, which neither the tool nor the window counts
   (strace_window.py, tool.syscall.thread_exit).  The worker waits until
   main has written to the pipe, and 0.1 s or more, so that main's calls
   before pthread_join have all returned when the process ends. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int fds[2];

/* No argument: the worker ends the process after 1.23 s (over 1 s inside a
   call: syscall.json keeps its microseconds); "quick": after 0.1 s; "join":
   the worker returns after 0.1 s and main ends the process. */
static const char* mode = "";

static void* worker(void* arg) {
  (void)arg;
  char c;
  if (read(fds[0], &c, 1) != 1) abort();
  struct timespec pause = {*mode ? 0 : 1, *mode ? 100 * 1000 * 1000 : 234567 * 1000};
  nanosleep(&pause, NULL);
  /* write, not printf: no malloc arena for this thread (glibc trims a new
     arena's reservation with one or two munmap calls, by chance). */
  if (write(1, "worker\n", 7) != 7) abort();
  if (mode[0] == 'j') return NULL;
  exit(3);
}

int main(int argc, char** argv) {
  pthread_t t;
  if (argc > 1) mode = argv[1];
  if (pipe(fds) != 0 || pthread_create(&t, NULL, worker, NULL) != 0) return 1;
  if (write(fds[1], "x", 1) != 1) return 1;
  pthread_join(t, NULL);
  return 0;
}
