/* I/O on a file after it is unlinked, as sqlite3 does with its temporary
   files: strace -y prints such a descriptor as 3</tmp/name>(deleted), the
   kernel's link as "/tmp/name (deleted)" (tool.io.deleted). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  char name[64], block[4096];
  snprintf(name, sizeof name, "/tmp/atomx-deleted-%d", (int)getpid());
  int fd = open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 || unlink(name) != 0) return perror(name), 1;
  memset(block, 'x', sizeof block);
  for (int i = 0; i < 3; i++)
    if (pwrite(fd, block, sizeof block, (off_t)i * sizeof block) != sizeof block) return perror("pwrite"), 1;
  long got = 0;
  for (int i = 0; i < 5; i++) got += pread(fd, block, 1000, (off_t)i * 2000);
  printf("read %ld bytes\n", got);
  return close(fd);
}
