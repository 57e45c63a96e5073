/* The deferred end (abi.h, "Deferred end"): a process of a program rewritten
 * with --defer-end writes its counters to atomx-end.PID instead of running
 * its ProgramAfter calls; `atomx end` runs the program again to replay them
 * (start.c: ATOMX_END_REPLAY). */
#include "stub.h"
#include "../sys.h"

/* Start-up facts that only the process itself can know: where its dump goes
 * (ATOMX_END_DIR_ENV, read now: the program may rewrite its environment),
 * and whether its parent runs the same file (a program that execs itself),
 * which, with the pid, decides its outputs' names. */
void atomx_end_start(AtomxDescriptor *d, const char *dumpDir) {
  if (dumpDir && *dumpDir) {
    /* A relative name is taken from where the process starts. */
    long at = 0;
    if (dumpDir[0] != '/') {
      at = sys_getcwd(d->endDir, sizeof d->endDir);
      if (at > 0) d->endDir[at - 1] = '/';
    }
    const unsigned long n = stub_strlen(dumpDir);
    if (at >= 0 && (unsigned long)at + n < sizeof d->endDir) {
      memcpy(d->endDir + at, dumpDir, n + 1);
    } else {
      d->endDir[0] = 0;
      stub_warn("deferred end: " ATOMX_END_DIR_ENV " is too long; the dump goes to the working directory", 0, 0);
    }
  }
  char parent[40], digits[24], *p = parent, *const end = parent + sizeof parent - 1;
  p = stub_append(p, end, "/proc/");
  p = stub_append(p, end, stub_decimal(digits + sizeof digits, (uint64_t)sys_getppid()));
  *stub_append(p, end, "/exe") = 0;
  struct stub_stat self, up;
  d->startedBySelf = sys_stat("/proc/self/exe", &self) == 0 && sys_stat(parent, &up) == 0 && self.dev == up.dev &&
                     self.ino == up.ino;
}

static int write_all(int fd, const void *p, uint64_t n) {
  const char *c = p;
  while (n > 0) {
    long w = sys_write(fd, c, n);
    if (w == -STUB_EINTR) continue;
    if (w <= 0) return 0;
    c += w, n -= (uint64_t)w;
  }
  return 1;
}

static int read_all(int fd, void *p, uint64_t n) {
  char *c = p;
  while (n > 0) {
    long r = sys_read(fd, c, n);
    if (r == -STUB_EINTR) continue;
    if (r <= 0) return 0;
    c += r, n -= (uint64_t)r;
  }
  return 1;
}

/* The section's chunks (abi.h): chunk k spans [first page + k pages, the
 * next page) of memory, cut to the section. */
static uint64_t chunk_count(const AtomxDescriptor *d) {
  const uint64_t start = d->counters + d->bias, end = start + d->countersSize;
  return d->countersSize ? (end + 4095) / 4096 - start / 4096 : 0;
}
static void chunk_range(const AtomxDescriptor *d, uint64_t k, uint64_t *from, uint64_t *to) {
  const uint64_t start = d->counters + d->bias, end = start + d->countersSize;
  const uint64_t page = (start / 4096 + k) * 4096;
  *from = page > start ? page : start;
  *to = page + 4096 < end ? page + 4096 : end;
}

/* touched[k] = 1 for each chunk whose page the process has (the kernel's
 * /proc/self/pagemap: present or swapped); all 1 if it cannot tell. */
static void touched_chunks(const AtomxDescriptor *d, uint8_t *touched, uint64_t chunks) {
  memset(touched, 1, chunks);
  const long fd = sys_open_read("/proc/self/pagemap");
  if (fd < 0) return;
  const uint64_t firstPage = (d->counters + d->bias) / 4096;
  uint64_t entries[512];
  for (uint64_t k = 0; k < chunks; k += 512) {
    const uint64_t batch = chunks - k < 512 ? chunks - k : 512;
    if (sys_pread((int)fd, entries, batch * 8, (long)((firstPage + k) * 8)) != (long)(batch * 8)) break;
    for (uint64_t j = 0; j < batch; j++) touched[k + j] = (entries[j] >> 62) != 0;
  }
  sys_close((int)fd);
}

/* ProgramAfter of a process that defers its end, after every thread's
 * counters were added to the section.  A dump that cannot be written costs
 * the results, never the program: one line on stderr. */
void atomx_end_write(AtomxDescriptor *d) {
  AtomxEndDump h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, ATOMX_END_MAGIC, 8);
  const uint64_t pid = (uint64_t)sys_getpid();
  h.pid = pid;
  h.suffixed = pid != d->initialPid || d->startedBySelf;
  h.countersSize = d->countersSize;
  h.chunks = chunk_count(d);
  /* Buffers off the stack (this may run in a signal handler, on a small
   * alternate stack): the paths, the dump's name, a byte per chunk. */
  enum { kPath = 4096, kName = sizeof d->endDir + 48 };
  const uint64_t bytes = 2 * kPath + kName + h.chunks;
  const long map = sys_mmap_anonymous(bytes);
  if (map < 0 && map > -4096) {
    stub_warn("deferred end: out of memory; this process's results are lost", 0, 0);
    return;
  }
  char *path = (char *)map, *cwd = path + kPath, *name = cwd + kPath;
  uint8_t *touched = (uint8_t *)(name + kName);
  const long n = sys_readlink("/proc/self/exe", path, kPath);
  const long c = sys_getcwd(cwd, kPath);
  struct stub_stat st;
  if (n <= 0 || n >= kPath || sys_stat("/proc/self/exe", &st) != 0 || c <= 1) {
    stub_warn("deferred end: cannot find this program's file or the working directory; this process's results "
              "are lost", 0, 0);
    sys_munmap((void *)map, bytes);
    return;
  }
  h.exeDevice = st.dev, h.exeInode = st.ino, h.exeSize = (uint64_t)st.size;
  h.exeModified = (uint64_t)st.mtime, h.exeModifiedNs = (uint64_t)st.mtimeNs;
  h.pathBytes = (uint64_t)n;
  h.cwdBytes = (uint64_t)c - 1;
  /* Chosen once: another thread still running may touch a page meanwhile. */
  touched_chunks(d, touched, h.chunks);

  char *at = name, *const nameEnd = name + kName - 1, digits[24];
  if (d->endDir[0]) {
    at = stub_append(at, nameEnd, d->endDir);
    at = stub_append(at, nameEnd, "/");
  }
  at = stub_append(at, nameEnd, ATOMX_END_PREFIX);
  *stub_append(at, nameEnd, stub_decimal(digits + sizeof digits, pid)) = 0;
  const long fd = sys_open_write(name);
  int ok = fd >= 0;
  ok = ok && write_all((int)fd, &h, sizeof h) && write_all((int)fd, path, h.pathBytes) &&
       write_all((int)fd, cwd, h.cwdBytes) && write_all((int)fd, touched, h.chunks);
  for (uint64_t k = 0, from, to; ok && k < h.chunks; k++) {
    if (!touched[k]) continue;
    chunk_range(d, k, &from, &to);
    ok = write_all((int)fd, (const void *)from, to - from);
  }
  if (fd >= 0) sys_close((int)fd);
  if (!ok) stub_warn("deferred end: cannot write ", name, "; this process's results are lost");
  sys_munmap((void *)map, bytes);
}

/* A replay: the dump's counters into the section, and what the analysis code
 * needs to name its outputs as the process would have. */
void atomx_end_read(AtomxDescriptor *d, const char *dump) {
  static const char kWhy[] = "cannot replay the end of a process: ";
  const long fd = sys_open_read(dump);
  if (fd < 0) stub_fail(kWhy, "cannot open ", dump);
  AtomxEndDump h;
  if (!read_all((int)fd, &h, sizeof h) || !stub_same_bytes(h.magic, ATOMX_END_MAGIC, 8))
    stub_fail(kWhy, dump, " is not a deferred end's dump (atomx-end.PID)");
  struct stub_stat st;
  if (h.countersSize != d->countersSize || h.chunks != chunk_count(d) || sys_stat("/proc/self/exe", &st) != 0 ||
      st.dev != h.exeDevice ||
      st.ino != h.exeInode || (uint64_t)st.size != h.exeSize || (uint64_t)st.mtime != h.exeModified ||
      (uint64_t)st.mtimeNs != h.exeModifiedNs)
    stub_fail(kWhy, dump, " was written by another program, or this file was changed since");
  char skip[256];
  for (uint64_t left = h.pathBytes; left > 0;) {
    const uint64_t k = left < sizeof skip ? left : sizeof skip;
    if (!read_all((int)fd, skip, k)) stub_fail(kWhy, dump, " is truncated");
    left -= k;
  }
  /* The outputs go where the process was at its end. */
  char cwd[4096];
  if (h.cwdBytes >= sizeof cwd || !read_all((int)fd, cwd, h.cwdBytes)) stub_fail(kWhy, dump, " is truncated");
  cwd[h.cwdBytes] = 0;
  if (sys_chdir(cwd) != 0) stub_fail(kWhy, "cannot enter the directory the process ended in, ", cwd);
  const long map = sys_mmap_anonymous(h.chunks + 1);
  if (map < 0 && map > -4096) stub_fail(kWhy, "out of memory", 0);
  uint8_t *touched = (uint8_t *)map;
  if (!read_all((int)fd, touched, h.chunks)) stub_fail(kWhy, dump, " is truncated");
  for (uint64_t k = 0, from, to; k < h.chunks; k++) {
    if (!touched[k]) continue;
    chunk_range(d, k, &from, &to);
    if (!read_all((int)fd, (void *)from, to - from)) stub_fail(kWhy, dump, " is truncated");
  }
  sys_close((int)fd);
  sys_munmap(touched, h.chunks + 1);
  d->replaying = 1;
  d->endPid = h.pid;
  d->endSuffixed = h.suffixed;
}
