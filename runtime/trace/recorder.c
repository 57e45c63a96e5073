/* The recorder of an abstract-execution trace: the analysis object of a
 * program rewritten by `atomx trace` (built from the files of
 * runtime/trace, with libatomx_analysis.a).  The program's inserted stores
 * write straight into the running thread's buffer through the cursor at
 * %fs:ATOMX_TRACE_CURSOR_OFFSET (stores.h; instrument/CallCode.cpp,
 * emitStores); no store calls anything.  The recorder only
 *   - gives a thread its first buffer, and a full buffer's thread a fresh
 *     one: both arrive as a fault of the first store of a sequence (the
 *     cursor is 0 in a new thread, and every buffer ends in a guard page),
 *     which the SIGSEGV handler recognises, answers and restarts;
 *   - hands a full buffer to the process's writer thread, which compresses
 *     it and writes it as one chunk of the thread's stream
 *     (include/atomx/trace_format.h), in $ATOMX_TRACE_DIR/thread.TID.axt,
 *     while the thread goes on in the next buffer of its pool (or nowhere
 *     when that is unset: the stores alone, for measurement);
 *   - writes every thread's last chunk when the thread ends (a destructor
 *     of the program's own pthread key) and when the process exits, once
 *     the writer has written what was queued before.
 * The program's own SIGSEGV handler must not replace the recorder's: its
 * GOT slots for sigaction and signal are pointed at wrappers, which keep
 * the program's SIGSEGV disposition aside (and hand it back when asked).
 * A fault that is not a store's goes to that disposition: the program's
 * handler, or, for the default, the streams are written and the process
 * dies as it would have.
 *
 * One file per concern (recorder.h declares what they share):
 *   recorder.c   this: the session, started by the object's constructor
 *   buffer.c     the threads' buffers, and a thread's end
 *   stream.c     the threads' streams: chunks, hand-off, flushing
 *   writer.c     the process's writer thread
 *   events.c     the event log, and the recorder's message on failure
 *   signals.c    the SIGSEGV handler, the program's handlers and masks
 *   marks.c      where a signal interrupted the thread (the marks)
 *   stepper.c    running inserted code on an interrupted context
 *   library.c    library calls whose length is measured in memory
 *   stores.h     the witness stores' encodings (shared with atomx)
 *   process.c    fork, vfork, exec, and _exit in a vfork child
 *   sync.c       the sync points: marks with the time around the program's
 *                calls that may synchronise it (<atomx/sync_calls.h>)
 *   hooks.c      the program's GOT slots, pointed at the wrappers
 * ../sys.h holds the raw system calls (shared with the runtime blob). */
#include "recorder.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char traceDir[4096];
int discarding = 1;

static void at_exit(void) {
  flush_all();
  event("exit", NULL);
}

__attribute__((constructor)) static void start_recorder(void) {
  const char *dir = getenv(ATOMX_TRACE_DIR_ENV);
  if (dir && *dir) {
    if (strlen(dir) >= sizeof traceDir) {
      errno = ENAMETOOLONG;
      fail(dir);
    }
    strcpy(traceDir, dir);
    discarding = 0;
  }
  const char *noSync = getenv("ATOMX_TEST_NO_CURSOR_SYNC");
  noCursorSync = noSync && *noSync == '1';
  /* The program's own libc runs its threads' key destructors. */
  void *libc = dlmopen(LM_ID_BASE, "libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (libc) catch_thread_ends(libc);
  if (install_fault_handler(0, &programActs[SIGSEGV]) != 0) fail("cannot install the trace buffer's fault handler");
  sigset_t segv; /* a process may start with SIGSEGV blocked (see without_segv) */
  sigemptyset(&segv);
  sigaddset(&segv, SIGSEGV);
  sigprocmask(SIG_UNBLOCK, &segv, NULL);
  if (libc) hook_program(libc);
  event("process", "%ld", (long)getppid());
  atexit(at_exit);
}
