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
#include <errno.h>
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
#include "atomx/output_dir.h"

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

static void cut_open_outputs(void); /* AtomxOpenOutput, below */

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
  cut_open_outputs();
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

/* Written by the runtime in a replay of a deferred end (runtime/abi.h): the
 * pid of the process whose end this is, and whether its outputs carry it. */
uint64_t atomx_analysis_end_process[2];

long AtomxProcessId(void) { return atomx_analysis_end_process[0] ? (long)atomx_analysis_end_process[0] : (long)getpid(); }

/* $ATOMX_OUTPUT_DIR for process `pid`, expanded (<atomx/output_dir.h>) and
 * made (with its parents); NULL when unset, empty or wrong (the outputs
 * then go to the working directory, and the first says why). */
static char *output_dir(long pid, int *hasPid) {
  const char *tmpl = getenv("ATOMX_OUTPUT_DIR");
  *hasPid = 0;
  if (!tmpl || !*tmpl) return NULL;
  char pidText[24], dir[4096];
  const char *bad = NULL;
  snprintf(pidText, sizeof pidText, "%ld", pid);
  if (atomx_expand_output_dir(tmpl, pidText, dir, sizeof dir, &bad, hasPid) <= 0) {
    static int told;
    if (!told++)
      fprintf(stderr, "atomx: ATOMX_OUTPUT_DIR='%s': %s at '%s'; writing to the working directory\n", tmpl,
              bad && bad[1] == 'q' ? "an unset variable" : "a bad %", bad ? bad : "");
    *hasPid = 0;
    return NULL;
  }
  for (char *c = dir + 1; *c; c++)
    if (*c == '/') {
      *c = 0;
      (void)mkdir(dir, 0777);
      *c = '/';
    }
  (void)mkdir(dir, 0777);
  return strdup(dir);
}

const char *AtomxOutputPath(const char *name) {
  const long pid = AtomxProcessId();
  int ownDir = 0;
  char *dir = output_dir(pid, &ownDir);
  /* The process that started the program writes NAME; the others NAME.PID,
   * unless each process has a directory of its own (%p). */
  const int first = atomx_analysis_end_process[0] ? !atomx_analysis_end_process[1] : pid == initialPid && !startedBySelf;
  const int suffix = !first && !ownDir;
  if (!dir && !suffix) return name;
  const size_t n = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 24;
  char *path = malloc(n);
  if (!path) {
    free(dir);
    return name;
  }
  int k = snprintf(path, n, "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
  if (suffix) snprintf(path + k, n - (size_t)k, ".%ld", pid);
  free(dir);
  return path;
}

/* AtomxOpenOutput: a stdio stream over a file opened without O_TRUNC.  It
 * writes at its own offset and, when closed, cuts the file at the furthest
 * byte written, so the result is what fopen(path, "w") would have left. */
struct output_file {
  int fd;
  off_t offset, end;
  struct output_file *next; /* open outputs: atomx_analysis_finish cuts them */
};

static struct output_file *openOutputs;
static pthread_mutex_t outputsLock = PTHREAD_MUTEX_INITIALIZER;

/* After the final fflush(NULL): an output the tool never closed is still
 * cut at its end, so no byte of an older, longer file survives. */
static void cut_open_outputs(void) {
  pthread_mutex_lock(&outputsLock);
  for (struct output_file *o = openOutputs; o; o = o->next) (void)!ftruncate(o->fd, o->end);
  pthread_mutex_unlock(&outputsLock);
}

static ssize_t output_write(void *cookie, const char *p, size_t size) {
  struct output_file *o = cookie;
  size_t done = 0;
  while (done < size) {
    ssize_t n = pwrite(o->fd, p + done, size - done, o->offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return done > 0 ? (ssize_t)done : -1;
    done += (size_t)n, o->offset += n;
    if (o->offset > o->end) o->end = o->offset;
  }
  return (ssize_t)done;
}

static int output_seek(void *cookie, off64_t *where, int whence) {
  struct output_file *o = cookie;
  off_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? o->offset : o->end;
  if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return errno = EINVAL, -1;
  if (base + *where < 0) return errno = EINVAL, -1;
  o->offset = base + *where;
  *where = o->offset;
  return 0;
}

static int output_close(void *cookie) {
  struct output_file *o = cookie;
  pthread_mutex_lock(&outputsLock);
  struct output_file **link = &openOutputs;
  while (*link && *link != o) link = &(*link)->next;
  if (*link) *link = o->next;
  pthread_mutex_unlock(&outputsLock);
  int status = ftruncate(o->fd, o->end);
  if (close(o->fd) != 0) status = -1;
  free(o);
  return status;
}

FILE *AtomxOpenOutput(const char *name) {
  struct output_file *o = malloc(sizeof *o);
  if (!o) return NULL;
  o->fd = open(AtomxOutputPath(name), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  o->offset = o->end = 0;
  if (o->fd < 0) {
    free(o);
    return NULL;
  }
  cookie_io_functions_t io = {.read = NULL, .write = output_write, .seek = output_seek, .close = output_close};
  FILE *f = fopencookie(o, "w", io);
  if (!f) {
    close(o->fd);
    free(o);
    return NULL;
  }
  pthread_mutex_lock(&outputsLock);
  o->next = openOutputs;
  openOutputs = o;
  pthread_mutex_unlock(&outputsLock);
  return f;
}
