// Markers from every stage of the program's life, appended to order.log
// (the analysis routines append "ProgramBefore"/"ProgramAfter" to it too).
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void mark(const char* s) {
  int fd = open("order.log", O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  if (write(fd, s, strlen(s)) < 0 || write(fd, "\n", 1) < 0) _exit(99);
  close(fd);
  printf("[%s]\n", s);
  fflush(stdout);
}

__attribute__((constructor)) static void ctor() { mark("constructor"); }
__attribute__((destructor)) static void dtor_attr() { mark("destructor-attribute"); }
static void on_exit_handler() { mark("atexit"); }
struct Global {
  Global() { mark("static-constructor"); }
  ~Global() { mark("static-destructor"); }
} global;

int main() {
  mark("main");
  atexit(on_exit_handler);
  return 3;
}
