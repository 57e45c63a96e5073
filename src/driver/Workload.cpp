#include "driver/Workload.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "driver/Process.h"
#include "support/Error.h"

namespace atomx::driver {

std::string escapeWord(const std::string& w) {
  std::string out;
  for (unsigned char c : w) {
    if (c <= ' ' || c == '\\' || c >= 0x7f) {
      char o[8];
      std::snprintf(o, sizeof o, "\\%03o", c);
      out += o;
    } else {
      out += char(c);
    }
  }
  return out.empty() ? "\\000" : out;  // (an empty word: a NUL, which no argument holds)
}

namespace {

// The filter every process of the workload inherits: execve and execveat
// stop for the tracer (SECCOMP_RET_TRACE), everything else runs.  A 32-bit
// or x32 system call is not ours to follow: it runs.
void installExecFilter() {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    std::fprintf(stderr, "atomx: cannot install the workload's exec filter: %s\n", std::strerror(errno));
    _exit(127);
  }
}

// A NUL-terminated string of the tracee's memory (at most PATH_MAX bytes).
bool readString(pid_t tid, uint64_t addr, std::string& out) {
  out.clear();
  char buf[256];
  while (out.size() < 4096) {
    // (A read stops at the end of a page: the next page may be unmapped.)
    const size_t n = std::min<size_t>(sizeof buf, 4096 - (addr & 4095));
    struct iovec local = {buf, n}, remote = {reinterpret_cast<void*>(addr), n};
    const ssize_t got = process_vm_readv(tid, &local, 1, &remote, 1, 0);
    if (got <= 0) return false;
    const char* end = static_cast<const char*>(std::memchr(buf, 0, size_t(got)));
    out.append(buf, end ? size_t(end - buf) : size_t(got));
    if (end) return true;
    addr += uint64_t(got);
  }
  return false;
}

std::vector<std::string> readArgv(pid_t tid, uint64_t addr) {
  std::vector<std::string> argv;
  for (int k = 0; addr && k < 4096; ++k, addr += 8) {
    uint64_t p = 0;
    struct iovec local = {&p, 8}, remote = {reinterpret_cast<void*>(addr), 8};
    if (process_vm_readv(tid, &local, 1, &remote, 1, 0) != 8 || !p) break;
    std::string s;
    if (!readString(tid, p, s)) break;
    argv.push_back(std::move(s));
  }
  return argv;
}

// The value of a `Key:\tN` line of /proc/TID/status; -1 when none.
long statusField(pid_t tid, const char* key) {
  std::ifstream in("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(in, line))
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') return std::atol(line.c_str() + n + 1);
  return -1;
}

uint64_t nowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

class Supervisor {
 public:
  Supervisor(pid_t root, const std::string& events, WorkloadPrograms& programs)
      : root_(root), programs_(programs), testDropUntraced_(std::getenv("ATOMX_TEST_DROP_UNTRACED") != nullptr) {
    events_ = open(events.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (events_ < 0) throw Error(events + ": cannot open the trace's event log: " + std::strerror(errno));
    known_.insert(root);
  }
  ~Supervisor() { close(events_); }

  WorkloadRun run() {
    WorkloadRun out;
    out.supervised = true;
    for (;;) {
      int st = 0;
      const pid_t tid = waitpid(-1, &st, __WALL);
      if (tid < 0) {
        if (errno == EINTR) continue;
        break;  // ECHILD: every process of the workload has ended
      }
      if (WIFEXITED(st) || WIFSIGNALED(st)) {
        if (tid == root_) out.status = shellStatus(st);
        known_.erase(tid);
        pending_.erase(tid);
        continue;
      }
      if (!WIFSTOPPED(st)) continue;
      stopped(tid, WSTOPSIG(st), st >> 16);
    }
    out.untraced = untraced_;
    return out;
  }

 private:
  struct Decision {
    int program = 0;  // 0: untraced
    std::string instrumented, why;
  };
  struct Pending {
    int program = 0;
    std::string path;
    std::vector<std::string> argv;
  };

  void resume(pid_t tid, int sig = 0) { ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(long(sig))); }

  void line(pid_t pid, const std::string& what) {
    const std::string l = std::to_string(nowNs()) + " " + std::to_string(pid) + " " + std::to_string(pid) + " " + what + "\n";
    if (write(events_, l.data(), l.size()) != ssize_t(l.size()))
      std::fprintf(stderr, "atomx: cannot write the trace's event log: %s\n", std::strerror(errno));
  }

  void stopped(pid_t tid, int sig, int event) {
    if (!known_.count(tid)) {
      // A new thread or process, auto-attached: it has not run yet.  A new
      // process runs its parent's program (fork, vfork, posix_spawn).
      known_.insert(tid);
      if (statusField(tid, "Tgid") == tid) {
        const long parent = statusField(tid, "PPid");
        const auto it = program_.find(pid_t(parent));
        const int program = program_[tid] = it == program_.end() ? 0 : it->second;  // (a reused pid's is gone)
        if (program) line(tid, "program " + std::to_string(program) + " fork " + path_[program]);
      }
    }
    if (sig == SIGTRAP && event == PTRACE_EVENT_SECCOMP) return exec(tid);
    if (sig == SIGTRAP && event == PTRACE_EVENT_EXEC) return execed(tid);
    if (event == PTRACE_EVENT_STOP) {
      // A group stop (SIGSTOP, ^Z) stays one until SIGCONT; the rest (a new
      // child's first stop) go on.
      if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
        ptrace(PTRACE_LISTEN, tid, nullptr, nullptr);
      else
        resume(tid);
      return;
    }
    if (sig == SIGTRAP && event != 0) return resume(tid);  // fork, vfork, clone, vfork-done, exit
    resume(tid, sig);                                      // a signal for the program
  }

  // The file an exec names, as the kernel resolves it: relative to the
  // caller's working directory or execveat's descriptor, /proc/self the
  // caller's.
  std::string resolve(pid_t tid, pid_t pid, const std::string& path, int dirfd, bool emptyPath) {
    const std::string proc = "/proc/" + std::to_string(pid);
    if (emptyPath && path.empty()) return proc + "/fd/" + std::to_string(dirfd);
    if (!path.empty() && path[0] == '/') {
      for (const auto& [self, real] : {std::pair<std::string, std::string>{"/proc/self/", proc + "/"},
                                       {"/proc/thread-self/", proc + "/task/" + std::to_string(tid) + "/"}})
        if (path.compare(0, self.size(), self) == 0) return real + path.substr(self.size());
      return path;
    }
    return (dirfd == AT_FDCWD ? "/proc/" + std::to_string(tid) + "/cwd" : proc + "/fd/" + std::to_string(dirfd)) + "/" + path;
  }

  void exec(pid_t tid) {
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, tid, nullptr, &regs) != 0) return resume(tid);
    const bool at = regs.orig_rax == __NR_execveat;
    const uint64_t pathAddr = at ? regs.rsi : regs.rdi, argvAddr = at ? regs.rdx : regs.rsi;
    const int dirfd = at ? int(regs.rdi) : AT_FDCWD;
    const bool emptyPath = at && (regs.r8 & AT_EMPTY_PATH);
    pending_.erase(tid);
    std::string path;
    if (!readString(tid, pathAddr, path)) return resume(tid);  // the kernel says EFAULT
    const pid_t pid = pid_t(statusField(tid, "Tgid"));
    const std::string file = resolve(tid, pid > 0 ? pid : tid, path, dirfd, emptyPath);
    struct stat st;
    if (stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return resume(tid);  // the exec fails: nothing runs
    Pending p;
    p.argv = readArgv(tid, argvAddr);
    std::error_code ec;
    p.path = std::filesystem::canonical(file, ec).string();
    if (ec) p.path = file;
    bool redirect = false;
    if (const auto ours = instrumented_.find({st.st_dev, st.st_ino}); ours != instrumented_.end()) {
      p.program = ours->second;  // an instrumented copy exec'd again (/proc/self/exe)
      p.path = path_[p.program];
    } else {
      const Decision& d = decide(p.path, st);
      p.program = d.program;
      redirect = d.program != 0;
      if (redirect) {
        // The copy's path below the red zone; the exec reads it from there.
        const std::string& copy = d.instrumented;
        const uint64_t addr = (regs.rsp - 128 - copy.size() - 1) & ~uint64_t(15);
        struct iovec local = {const_cast<char*>(copy.c_str()), copy.size() + 1},
                     remote = {reinterpret_cast<void*>(addr), copy.size() + 1};
        if (process_vm_writev(tid, &local, 1, &remote, 1, 0) != ssize_t(copy.size() + 1)) {
          std::fprintf(stderr, "atomx: %s runs untraced: cannot write to process %d's stack: %s\n", p.path.c_str(),
                       int(tid), std::strerror(errno));
          p.program = 0;
        } else {
          if (at) {
            regs.rdi = uint64_t(int64_t(AT_FDCWD));
            regs.rsi = addr;
            regs.r8 &= ~uint64_t(AT_EMPTY_PATH);
          } else {
            regs.rdi = addr;
          }
          if (ptrace(PTRACE_SETREGS, tid, nullptr, &regs) != 0) p.program = 0;
        }
      }
    }
    pending_[tid] = std::move(p);
    resume(tid);
  }

  const Decision& decide(const std::string& path, const struct stat& st) {
    const auto key = std::make_tuple(uint64_t(st.st_dev), uint64_t(st.st_ino), int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                                     int64_t(st.st_size));
    if (const auto it = decisions_.find(key); it != decisions_.end()) return it->second;
    Decision d;
    d.program = programs_.trace(path, d.instrumented, d.why);
    if (d.program) {
      path_[d.program] = path;
      struct stat copy;
      if (stat(d.instrumented.c_str(), &copy) == 0) instrumented_[{copy.st_dev, copy.st_ino}] = d.program;
    }
    return decisions_[key] = d;
  }

  // The exec succeeded: the process runs its new program from here on.
  void execed(pid_t pid) {
    unsigned long former = 0;
    ptrace(PTRACE_GETEVENTMSG, pid, nullptr, &former);
    auto it = pending_.find(pid_t(former));
    if (it == pending_.end()) it = pending_.find(pid);
    if (it != pending_.end()) {
      Pending& p = it->second;
      program_[pid] = p.program;
      if (p.program) {
        line(pid, "program " + std::to_string(p.program) + " exec " + p.path);
      } else {
        ++untraced_;
        std::string words = escapeWord(p.path);
        for (const std::string& a : p.argv) words += " " + escapeWord(a);
        if (!testDropUntraced_) line(pid, "untraced " + words);
      }
      pending_.erase(it);
    } else {
      program_[pid] = 0;  // an exec the filter did not stop (not x86-64's): not followed
    }
    if (former != static_cast<unsigned long>(pid)) known_.erase(pid_t(former));
    resume(pid);
  }

  pid_t root_;
  WorkloadPrograms& programs_;
  int events_ = -1;
  int untraced_ = 0;
  // ATOMX_TEST_DROP_UNTRACED: the untraced lines are not written (the
  // must-fail twin of the test that checks them against strace's execs).
  bool testDropUntraced_;
  std::set<pid_t> known_;                  // threads seen
  std::map<pid_t, int> program_;           // process -> the program it runs (0: untraced)
  std::map<int, std::string> path_;        // program -> its file
  std::map<pid_t, Pending> pending_;       // thread -> its exec under way
  std::map<std::tuple<uint64_t, uint64_t, int64_t, int64_t>, Decision> decisions_;
  std::map<std::pair<uint64_t, uint64_t>, int> instrumented_;  // (device, inode) of a copy -> its program
};

}  // namespace

WorkloadRun runWorkload(const std::string& exe, const std::string& fallback, const std::vector<std::string>& argv,
                        const std::string& events, WorkloadPrograms& programs) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The child waits for the word on `go`: 'S' supervised (the filter, then
  // the exec), 'F' not (atomx could not ptrace it: the fallback, as runChild).
  int go[2];
  if (pipe2(go, O_CLOEXEC) != 0) throw Error(std::string("pipe failed: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw Error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    close(go[1]);
    char word = 0;
    while (read(go[0], &word, 1) < 0 && errno == EINTR) {
    }
    const char* file = fallback.c_str();
    if (word == 'S') {
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(127);
      installExecFilter();
      file = exe.c_str();
    }
    execv(file, args.data());
    std::fprintf(stderr, "atomx: cannot run %s: %s\n", file, std::strerror(errno));
    _exit(127);
  }
  close(go[0]);
  const long options = PTRACE_O_TRACESECCOMP | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
                       PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;
  // ATOMX_TEST_NO_PTRACE: as if atomx could not ptrace (it runs under strace -f).
  bool seized = false;
  int seizeErrno = EPERM;
  if (!std::getenv("ATOMX_TEST_NO_PTRACE")) {
    seized = ptrace(PTRACE_SEIZE, pid, nullptr, reinterpret_cast<void*>(options)) == 0;
    seizeErrno = errno;
  }
  const char word = seized ? 'S' : 'F';
  if (write(go[1], &word, 1) != 1) {
  }
  close(go[1]);
  const ForwardedSignals forwarded(pid);
  if (!seized) {
    std::fprintf(stderr, "atomx: cannot follow the command's processes (ptrace: %s; is atomx itself traced?): %s\n",
                 std::strerror(seizeErrno),
                 fallback == exe ? ("nothing is traced (" + exe + " is not a program atomx traces)").c_str()
                                 : ("only " + exe + " is traced").c_str());
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return {shellStatus(status), false, 0};
  }
  Supervisor s(pid, events, programs);
  return s.run();
}

}  // namespace atomx::driver
