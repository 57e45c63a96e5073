// Analysis side of the io tool (io_inst.cpp).  The hook runs in a SIGSYS
// handler (<atomx/syscalls.h>): fixed tables and relaxed atomics only.  A
// descriptor's "instance" lasts from its first transfer to its close (or
// dup2/dup3 over it), so a number reused for another file gets its own row;
// the path is read from /proc/self/fd when the instance is first seen.
#include <atomx/report.hpp>
#include <atomx/syscalls.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <sys/syscall.h>
#include <unistd.h>

namespace {
constexpr int kFds = 4096;         // descriptors tracked one by one
constexpr int kInstances = 4096;   // beyond: one "(other)" row
struct Instance {
  int fd;
  char path[200];
  std::atomic<long> reads{0}, readBytes{0}, writes{0}, writeBytes{0}, ns{0}, errors{0};
};
Instance inst[kInstances + 1];       // [kInstances]: overflow and fds >= kFds
std::atomic<int> current[kFds];      // fd -> instance index + 1, 0 = none yet
std::atomic<int> used{0};
std::atomic<int> tablePid{0};
long topN = 20;
std::string programPath;
int startError = 0;

void clear() {
  for (auto& c : current) c = 0;
  for (Instance& i : inst) i.reads = 0, i.readBytes = 0, i.writes = 0, i.writeBytes = 0, i.ns = 0, i.errors = 0;
  used = 0;
  std::strcpy(inst[kInstances].path, "(other descriptors)");
  inst[kInstances].fd = -1;
}

Instance& instanceOf(long fd) {
  if (fd < 0 || fd >= kFds) return inst[kInstances];
  if (int k = current[fd].load(std::memory_order_acquire)) return inst[k - 1];
  const int k = used.fetch_add(1, std::memory_order_relaxed);
  if (k >= kInstances) return inst[kInstances];
  Instance& i = inst[k];
  i.fd = int(fd);
  char link[32] = "/proc/self/fd/", digits[12];  // no snprintf in a signal handler
  int nd = 0;
  for (long v = fd; nd == 0 || v; v /= 10) digits[nd++] = char('0' + v % 10);
  for (int k = 14; nd;) link[k++] = digits[--nd], link[k] = '\0';
  const ssize_t n = readlink(link, i.path, sizeof i.path - 1);  // not intercepted: our own call
  i.path[n > 0 ? n : 0] = '\0';
  int none = 0;
  if (current[fd].compare_exchange_strong(none, k + 1, std::memory_order_acq_rel)) return i;
  return inst[none - 1];  // another thread was first; slot k stays empty
}

void closed(long fd) {
  if (fd >= 0 && fd < kFds) current[fd].store(0, std::memory_order_release);
}

void account(long fd, bool write, const AtomxSyscall* c, bool ok, long bytes) {
  Instance& i = instanceOf(fd);
  (write ? i.writes : i.reads).fetch_add(1, std::memory_order_relaxed);
  if (ok && bytes > 0) (write ? i.writeBytes : i.readBytes).fetch_add(bytes, std::memory_order_relaxed);
  if (!ok) i.errors.fetch_add(1, std::memory_order_relaxed);
  i.ns.fetch_add(long(c->durationNs), std::memory_order_relaxed);
}

void hook(const AtomxSyscall* c) {
  if (c->pid != tablePid.load(std::memory_order_relaxed)) {  // a forked child: its own tables
    clear();
    tablePid.store(c->pid, std::memory_order_relaxed);
  }
  if (c->flags & (ATOMX_SYSCALL_I386 | ATOMX_SYSCALL_NO_RETURN)) return;
  const bool ok = c->result >= 0 || c->result <= -4096;
  // Message counts, not bytes, for recvmmsg/sendmmsg.
  const long bytes = ok && c->nr != SYS_recvmmsg && c->nr != SYS_sendmmsg ? c->result : 0;
  const long* a = c->args;
  switch (c->nr) {
    case SYS_read: case SYS_pread64: case SYS_readv: case SYS_preadv: case SYS_preadv2:
    case SYS_recvfrom: case SYS_recvmsg: case SYS_recvmmsg:
      return account(a[0], false, c, ok, bytes);
    case SYS_write: case SYS_pwrite64: case SYS_writev: case SYS_pwritev: case SYS_pwritev2:
    case SYS_sendto: case SYS_sendmsg: case SYS_sendmmsg: case SYS_vmsplice:
      return account(a[0], true, c, ok, bytes);
    case SYS_sendfile:  // (out, in, ...)
      account(a[1], false, c, ok, bytes);
      return account(a[0], true, c, ok, bytes);
    case SYS_tee:  // (in, out, ...)
      account(a[0], false, c, ok, bytes);
      return account(a[1], true, c, ok, bytes);
    case SYS_splice: case SYS_copy_file_range:  // (in, off, out, ...)
      account(a[0], false, c, ok, bytes);
      return account(a[2], true, c, ok, bytes);
    case SYS_close:
      if (ok) closed(a[0]);
      return;
    case SYS_dup2: case SYS_dup3:
      if (ok) closed(a[1]);
      return;
    case SYS_close_range:
      if (ok)
        for (unsigned long fd = (unsigned long)a[0]; fd <= (unsigned long)a[1] && fd < kFds; ++fd) closed(long(fd));
      return;
    default:
      return;
  }
}

struct Row {
  int fd;
  std::string path;
  long reads = 0, readBytes = 0, writes = 0, writeBytes = 0, ns = 0, errors = 0;
};

void write() {
  // Instances with the same descriptor and path are one row.
  std::map<std::pair<int, std::string>, Row> rows;
  const int n = std::min(used.load(), kInstances);
  for (int k = 0; k <= kInstances; ++k) {
    if (k >= n && k < kInstances) continue;
    const Instance& i = inst[k];
    if (!i.reads && !i.writes) continue;
    Row& r = rows[{i.fd, i.path}];
    r.fd = i.fd, r.path = i.path;
    r.reads += i.reads, r.readBytes += i.readBytes, r.writes += i.writes, r.writeBytes += i.writeBytes;
    r.ns += i.ns, r.errors += i.errors;
  }
  std::vector<Row> order;
  Row total;
  for (auto& [key, r] : rows) {
    order.push_back(r);
    total.reads += r.reads, total.readBytes += r.readBytes, total.writes += r.writes, total.writeBytes += r.writeBytes;
    total.ns += r.ns, total.errors += r.errors;
  }
  std::stable_sort(order.begin(), order.end(), [](const Row& a, const Row& b) {
    return a.readBytes + a.writeBytes > b.readBytes + b.writeBytes;
  });

  if (FILE* out = atomx::openToolOutput("io.out")) {
    std::fprintf(out, "io: reads and writes of %s (process %d)\n", programPath.c_str(), tablePid.load());
    if (startError)
      std::fprintf(out, "  NOT INTERCEPTED: Syscall User Dispatch failed (%s); needs Linux >= 5.11\n",
                   AtomxErrnoName(startError) ? AtomxErrnoName(startError) : "?");
    std::fprintf(out, "  read:    %10ld calls %16ld bytes\n", total.reads, total.readBytes);
    std::fprintf(out, "  written: %10ld calls %16ld bytes\n", total.writes, total.writeBytes);
    std::fprintf(out, "  %.6f s inside calls, %ld errors, %zu descriptor/file pairs\n\n", total.ns / 1e9, total.errors,
                 order.size());
    std::fprintf(out, "%4s %9s %14s %9s %14s %10s %6s  %s\n", "fd", "reads", "bytes read", "writes", "bytes written",
                 "seconds", "errors", "file");
    for (size_t k = 0; k < order.size() && long(k) < topN; ++k) {
      const Row& r = order[k];
      std::fprintf(out, "%4d %9ld %14ld %9ld %14ld %10.6f %6ld  %s\n", r.fd, r.reads, r.readBytes, r.writes, r.writeBytes,
                   r.ns / 1e9, r.errors, r.path.empty() ? "?" : r.path.c_str());
    }
    if (long(order.size()) > topN) std::fprintf(out, "  ... %ld more in io.json\n", long(order.size()) - topN);
    std::fclose(out);
  }
  if (FILE* out = atomx::openToolOutput("io.json")) {
    atomx::JsonWriter j(out);
    j.beginObject();
    j.key("tool").value("io");
    j.key("program").value(programPath);
    j.key("pid").value(tablePid.load());
    j.key("intercepted").value(startError == 0);
    j.key("reads").value(total.reads).key("bytesRead").value(total.readBytes);
    j.key("writes").value(total.writes).key("bytesWritten").value(total.writeBytes);
    j.key("seconds").fixed(total.ns / 1e9, 9).key("errors").value(total.errors);
    j.key("files").beginArray();
    for (const Row& r : order) {
      j.beginObject();
      j.key("fd").value(r.fd).key("path").value(r.path);
      j.key("reads").value(r.reads).key("bytesRead").value(r.readBytes);
      j.key("writes").value(r.writes).key("bytesWritten").value(r.writeBytes);
      j.key("seconds").fixed(r.ns / 1e9, 9).key("errors").value(r.errors);
      j.endObject();
    }
    j.endArray();
    j.endObject();
    std::fclose(out);
  }
}
}  // namespace

extern "C" void IoStart(long top, const char* program) {
  topN = top;
  programPath = program;
  clear();
  tablePid = getpid();
  const int r = AtomxSyscallsStart(hook);
  if (r < 0) {
    startError = -r;
    std::fprintf(stderr, "io: cannot intercept system calls: %s (Syscall User Dispatch needs Linux >= 5.11)\n",
                 AtomxErrnoName(r) ? AtomxErrnoName(r) : "error");
  }
}

extern "C" void IoEnd() {
  AtomxSyscallsStop();
  if (tablePid.load() != getpid()) clear(), tablePid = getpid();  // a child that did no I/O of its own
  write();
}
