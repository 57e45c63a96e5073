/* The naive tracer's analysis: every block address, in order, per thread of
 * each process, as text lines (hex) in $ATOMX_NAIVE_DIR (default: the
 * program's working directory):
 *   naive.PID.TID.K   thread TID of process PID; K counts the programs
 *                     exec'd in that thread (0, 1, ...), as the trace's
 *                     thread.TID.axt, thread.TID-K.axt do;
 *   naive.index       a line `PID PPID TID K` per file, when it was made.
 * A file is written through a shared mapping, so what a thread wrote is in
 * the file even when its process execs, ends by _exit or is killed: the
 * file may end in NUL bytes (its mapped size), which are not lines.
 *
 * A forked child (or a vfork child) has files of its own, which start with
 * its own first block (as `atomx regen --blocks` leaves out the blocks a
 * child's stream inherited from its parent's).  A fork is seen at the
 * child's first block: the page that
 * holds the process's id is wiped in a forked child (MADV_WIPEONFORK).  A
 * vfork child shares its parent's memory, that page included: with
 * ATOMX_NAIVE_VFORK=1 the id is asked of the kernel at every block (slow),
 * else a vfork child's blocks go on in its parent's file.  Each thread keeps
 * a file per process it has run in, so a vfork parent finds its own again. */
#define _GNU_SOURCE
#include <atomx/analysis.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define RESERVE ((size_t)16 << 30) /* address space per file */
#define GROW ((size_t)64 << 20)    /* the file grows by this */
#define FILES 16                   /* per thread: its process's, then its vfork children's */

struct file {
  pid_t pid;
  int fd;
  char *map;
  size_t len, size;
};
static __thread struct file files[FILES];
static __thread int current = -1;

static volatile pid_t *processId; /* a page wiped in a forked child */
static int perBlockPid = -1;      /* ATOMX_NAIVE_VFORK */

static void die(const char *what) {
  fprintf(stderr, "naive tracer: %s\n", what);
  abort();
}

static const char *dir(void) {
  const char *d = getenv("ATOMX_NAIVE_DIR");
  return d && *d ? d : ".";
}

/* This process's id, cheaply: 0 in the wiped page after a fork. */
static pid_t process_id(void) {
  if (perBlockPid < 0) {
    const char *v = getenv("ATOMX_NAIVE_VFORK");
    perBlockPid = v && *v == '1';
  }
  if (perBlockPid) return getpid();
  if (!processId) {
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || madvise(p, 4096, MADV_WIPEONFORK) != 0) die("cannot map the process id's page");
    processId = p;
  }
  if (!*processId) *processId = getpid();
  return *processId;
}

static void grow(struct file *f, size_t need) {
  if (need <= f->size) return;
  while (f->size < need) f->size += GROW;
  if (f->size > RESERVE || ftruncate(f->fd, (off_t)f->size) != 0) die("cannot grow a file");
}

/* This thread's file in process `pid`: a new one. */
static struct file *open_file(pid_t pid) {
  int slot = 0;
  while (slot < FILES && files[slot].map) slot++;
  if (slot == FILES) die("too many processes in one thread");
  struct file *f = &files[slot];
  const pid_t tid = gettid();
  char name[4200];
  int fd = -1, k = 0;
  for (; fd < 0; k++) {
    snprintf(name, sizeof name, "%s/naive.%d.%d.%d", dir(), (int)pid, (int)tid, k);
    fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && k > 1000) die(name);
  }
  f->map = mmap(NULL, RESERVE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (f->map == MAP_FAILED) die("cannot map a file");
  f->pid = pid;
  f->fd = fd;
  f->size = 0;
  f->len = 0;
  grow(f, 64);
  char line[128];
  snprintf(name, sizeof name, "%s/naive.index", dir());
  const int n = snprintf(line, sizeof line, "%d %d %d %d\n", (int)pid, (int)getppid(), (int)tid, k - 1);
  fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, line, (size_t)n) != n) die(name);
  close(fd);
  current = slot;
  return f;
}

static struct file *own_file(void) {
  const pid_t pid = process_id();
  if (current >= 0 && files[current].pid == pid) return &files[current];
  for (int i = 0; i < FILES; i++)
    if (files[i].map && files[i].pid == pid) return &files[current = i];
  return open_file(pid);
}

void NaiveBlock(long pc) {
  struct file *f = own_file();
  if (f->len + 24 > f->size) grow(f, f->len + 24);
  char *p = f->map + f->len, digits[16];
  int n = 0;
  unsigned long v = (unsigned long)pc;
  do digits[n++] = "0123456789abcdef"[v & 15]; while (v >>= 4);
  while (n) *p++ = digits[--n];
  *p++ = '\n';
  f->len = (size_t)(p - f->map);
}

/* The data references (naive_inst.cpp with `data`): a line `K PC ADDR SIZE`
 * per reference (K: R, W or M; hex, hex, decimal), an instruction's in the
 * order its call lists them, a rep string instruction's iteration by
 * iteration (each iteration's operands in that order, each address stepped
 * by its size: the direction flag is clear in the programs checked). */
static void line(struct file *f, long pc, int kind, unsigned long addr, long size) {
  if (f->len + 64 > f->size) grow(f, f->len + 64);
  f->len += (size_t)sprintf(f->map + f->len, "%c %lx %lx %ld\n", "?RWM"[kind & 3], (unsigned long)pc, addr, size);
}

static void refs(long pc, long count, const long *ea, const long *sk) {
  struct file *f = own_file();
  for (long j = 0; j < count; j++)
    for (int k = 0; k < 3 && sk[k]; k++) {
      const long size = sk[k] & 0xffff;
      line(f, pc, (int)(sk[k] >> 16 & 3), (unsigned long)ea[k] + (unsigned long)(j * size), size);
    }
}

/* A repe/repne waits for its count, NaiveRepEnd after it. */
static __thread struct {
  long pc, rcx, ea[3], sk[3];
  int open;
} pending;

void NaiveMem(long pc, long rcx, long ea0, long sk0, long ea1, long sk1, long ea2, long sk2) {
  const long ea[3] = {ea0, ea1, ea2}, sk[3] = {sk0 & 0xffffff, sk1, sk2};
  const long rep = sk0 >> 24 & 3;
  if (rep == 2) {
    pending.pc = pc, pending.rcx = rcx, pending.open = 1;
    for (int k = 0; k < 3; k++) pending.ea[k] = ea[k], pending.sk[k] = sk[k];
    return;
  }
  refs(pc, rep == 1 ? rcx : 1, ea, sk);
}

void NaiveRepEnd(long rcx) {
  if (!pending.open) die("a repe/repne's end without its start");
  pending.open = 0;
  refs(pending.pc, pending.rcx - rcx, pending.ea, pending.sk);
}

/* An instruction whose references this tracer does not give (a gather, or
 * more than three operands): a line the oracle fails on. */
void NaiveUnsupported(long pc) {
  struct file *f = own_file();
  if (f->len + 64 > f->size) grow(f, f->len + 64);
  f->len += (size_t)sprintf(f->map + f->len, "X %lx\n", (unsigned long)pc);
}
