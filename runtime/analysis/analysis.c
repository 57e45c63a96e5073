/* libatomx_analysis.a: linked into every analysis shared object.
 *
 * Everything is in this one file on purpose: a static library member is
 * only linked when something references it, and nothing in the user's code
 * references atomx_analysis_finish.  So link it with -Wl,--whole-archive (as
 * atomx does) or -Wl,--undefined=atomx_analysis_finish; either brings in
 * the __cxa_atexit below as well.
 *
 * The analysis object lives in its own link-map namespace with its own libc,
 * whose exit() never runs (the program's does).  And ld.so's _dl_fini
 * finalises that namespace before the program's, hence before the runtime's
 * ProgramAfter handler, which runs last.  So: exit handlers registered by
 * the analysis object are kept here and run by atomx_analysis_finish, which
 * the runtime calls after the ProgramAfter bodies. */
#define _GNU_SOURCE /* gettid */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <locale.h>
#include <pthread.h>
#include <resolv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomx/analysis.h"

struct exit_handler {
  void (*fn)(void *);
  void *arg;
};

static struct exit_handler initialHandlers[64];
static struct exit_handler *handlers = initialHandlers;
static size_t handlerCount, handlerCapacity = sizeof initialHandlers / sizeof initialHandlers[0];
/* Function-local statics of C++ code register on first use, in any thread. */
static pthread_mutex_t handlersLock = PTHREAD_MUTEX_INITIALIZER;
static pid_t initialPid;
/* Nonzero when the parent process runs the same file: a fork of the
 * instrumented program exec'd it again (fork+exec, posix_spawn, system()
 * through a shell that execs). */
static int startedBySelf;

/* Hidden: only code linked into the analysis object binds to it -- its C++
 * static destructors (g++ emits __cxa_atexit(dtor, obj, &__dso_handle)) and
 * atexit() (libc_nonshared.a's atexit calls __cxa_atexit).  libc's own
 * __cxa_atexit, in the analysis namespace, never sees them, so neither its
 * exit() nor __cxa_finalize from _dl_fini runs them early. */
__attribute__((visibility("hidden"))) int __cxa_atexit(void (*fn)(void *), void *arg, void *dso) {
  pthread_mutex_lock(&handlersLock);
  if (handlerCount == handlerCapacity) {
    size_t capacity = handlerCapacity * 2;
    struct exit_handler *grown = malloc(capacity * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&handlersLock);
      return -1;
    }
    memcpy(grown, handlers, handlerCount * sizeof *grown);
    if (handlers != initialHandlers) free(handlers);
    handlers = grown;
    handlerCapacity = capacity;
  }
  handlers[handlerCount].fn = fn;
  handlers[handlerCount].arg = arg;
  handlerCount++;
  pthread_mutex_unlock(&handlersLock);
  return 0;
}

void atomx_analysis_finish(void) {
  /* A handler may register more handlers: take them from the end each time,
   * and do not hold the lock while one runs. */
  for (;;) {
    pthread_mutex_lock(&handlersLock);
    if (handlerCount == 0) {
      pthread_mutex_unlock(&handlersLock);
      break;
    }
    struct exit_handler h = handlers[--handlerCount];
    pthread_mutex_unlock(&handlersLock);
    h.fn(h.arg);
  }
  fflush(NULL);
}

/* Runs when the runtime loads the analysis object, at program start.
 * The program's threads are started by the program's libc: this namespace's
 * libc never learns that the process has more than one thread, so tell it
 * now, before any: __libc_single_threaded (and in glibc 2.37+ its internal
 * alias, which malloc consults) would otherwise let libstdc++ and libc skip
 * atomics and locks. */
__attribute__((constructor)) static void start_process(void) {
  initialPid = getpid();
  __libc_single_threaded = 0;
  char parentExe[32];
  snprintf(parentExe, sizeof parentExe, "/proc/%ld/exe", (long)getppid());
  struct stat self, parent;
  startedBySelf = stat("/proc/self/exe", &self) == 0 && stat(parentExe, &parent) == 0 &&
                  self.st_dev == parent.st_dev && self.st_ino == parent.st_ino;
}

/* Threads.  The program's libc initialises, in each new thread, its own
 * per-thread state only; this namespace's libc would see the ctype table
 * pointers (isdigit, toupper, printf's number formatting) still zero and the
 * resolver state shared with the initial thread.  The runtime calls
 * atomx_analysis_thread_start in each thread before its first heavy analysis
 * call (light code calls nothing, so it never reaches this libc) -- while
 * atomx_analysis_thread_ready is zero: initial-exec, so that the
 * runtime can test it at a fixed offset from %fs. */
__attribute__((tls_model("initial-exec"))) __thread char atomx_analysis_thread_ready;

/* __resp: glibc's per-thread pointer to the resolver state (not public API,
 * so looked up by name and skipped where it does not exist). */
static struct __res_state **resolver_state_pointer(void) {
  return (struct __res_state **)dlsym(RTLD_DEFAULT, "__resp");
}

void atomx_analysis_thread_start(void) {
  if (atomx_analysis_thread_ready) return;
  atomx_analysis_thread_ready = 1;
  /* uselocale sets the thread's locale and recomputes its ctype pointers. */
  uselocale(LC_GLOBAL_LOCALE);
  /* Every thread but the initial one would share the initial one's
   * resolver state (the pointer's initial value): give it its own, as the
   * program's libc does (that one lives in the thread descriptor). */
  if (gettid() != getpid()) {
    struct __res_state **resp = resolver_state_pointer();
    struct __res_state *own = resp ? calloc(1, sizeof **resp) : NULL;
    if (own) *resp = own;
  }
}

uint64_t AtomxLoadBias(void) {
  /* Where the entry point is now, less where the file says it is. */
  Elf64_Ehdr e;
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  int ok = fd >= 0 && read(fd, &e, sizeof e) == (ssize_t)sizeof e;
  if (fd >= 0) close(fd);
  return ok ? getauxval(AT_ENTRY) - e.e_entry : 0;
}

const char *AtomxOutputPath(const char *name) {
  pid_t pid = getpid();
  if (pid == initialPid && !startedBySelf) return name;
  size_t n = strlen(name) + 24;
  char *path = malloc(n);
  if (!path) return name;
  snprintf(path, n, "%s.%ld", name, (long)pid);
  return path;
}
