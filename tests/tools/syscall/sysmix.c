/* sysmix.c -- a known, deterministic sequence of system calls for the
 * syscall and io tools: plain calls, failing calls (ENOENT, EBADF), file and
 * pipe I/O of every read/write flavour, a signal handler (rt_sigreturn),
 * a fork whose child does its own calls, a vfork+_exit, and output written
 * with write(2) (no stdio buffer left for exit() to flush after
 * ProgramAfter).  With an argument "empty" it does nothing at all. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static void on_usr1(int sig) { (void)sig; handled++; }

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "empty") == 0) return 0;
  for (int i = 0; i < 7; i++) syscall(SYS_getppid);
  for (int i = 0; i < 3; i++)
    if (open("/nonexistent/atomx", O_RDONLY) >= 0) return 1;
  (void)!write(-1, "x", 1); /* EBADF */

  /* Not mkstemp: glibc's takes getrandom only when its clock-based name
   * is rejected, which depends on the time. */
  char path[64];
  snprintf(path, sizeof path, "/tmp/atomx-sysmix-%ld", (long)getpid());
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return 1;
  char buf[1000];
  memset(buf, 'a', sizeof buf);
  for (int i = 0; i < 10; i++) (void)!write(fd, buf, sizeof buf);
  struct iovec iov[2] = {{buf, 300}, {buf + 300, 200}};
  (void)!pwritev(fd, iov, 2, 0);
  (void)!pread(fd, buf, 1000, 5000);
  lseek(fd, 0, SEEK_SET);
  (void)!readv(fd, iov, 2);
  long total = 0;
  ssize_t n;
  while ((n = read(fd, buf, 777)) > 0) total += n;
  int devnull = open("/dev/null", O_WRONLY);
  lseek(fd, 0, SEEK_SET);
  (void)!sendfile(devnull, fd, NULL, 4096);
  for (int i = 0; i < 11; i++) (void)!write(devnull, buf, 10 + i);
  close(devnull);
  close(fd);
  unlink(path);

  int p[2];
  if (pipe(p) != 0) return 1;
  (void)!write(p[1], "hello", 5);
  (void)!read(p[0], buf, sizeof buf);
  close(p[0]);
  close(p[1]);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  raise(SIGUSR1);

  pid_t child = fork();
  if (child == 0) {
    for (int i = 0; i < 4; i++) syscall(SYS_getppid);
    int dn = open("/dev/null", O_WRONLY);
    (void)!write(dn, "child", 5);
    close(dn);
    exit(0);
  }
  int status;
  waitpid(child, &status, 0);
  child = vfork();
  if (child == 0) _exit(3);
  waitpid(child, &status, 0);

  char line[128];
  snprintf(line, sizeof line, "read back %ld bytes, handled %d, vfork child status %d\n", total, (int)handled,
           WEXITSTATUS(status));
  say(line);
  return 0;
}
