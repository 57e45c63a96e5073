/* Small freestanding helpers for the runtime blob: string functions and the
 * one-line failure message. */
#include "stub.h"
#include "../sys.h"

/* gcc may emit calls to memset/memcpy for struct copies even with
 * -fno-builtin; -fno-tree-loop-distribute-patterns keeps these loops from
 * being turned back into calls to themselves. */
void *memset(void *s, int c, unsigned long n) {
  unsigned char *p = s;
  while (n--) *p++ = (unsigned char)c;
  return s;
}

void *memcpy(void *d, const void *s, unsigned long n) {
  unsigned char *o = d;
  const unsigned char *i = s;
  while (n--) *o++ = *i++;
  return d;
}

unsigned long stub_strlen(const char *s) {
  unsigned long n = 0;
  while (s[n]) n++;
  return n;
}

int stub_streq(const char *a, const char *b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

const char *stub_program_name(void) {
  AtomxDescriptor *d = stub_descriptor();
  if (d->programName == 0) return "program";
  return (const char *)(d->programName + d->bias);
}

char *stub_append(char *p, char *end, const char *s) {
  while (*s && p < end) *p++ = *s++;
  return p;
}

int stub_same_bytes(const void *a, const void *b, unsigned long n) {
  const unsigned char *x = a, *y = b;
  while (n--)
    if (*x++ != *y++) return 0;
  return 1;
}

/* "atomx: <program>: <a><b><c>\n" (null parts skipped) as one write. */
void stub_warn(const char *a, const char *b, const char *c) {
  char line[512];
  char *end = line + sizeof line - 1;
  char *p = stub_append(line, end, "atomx: ");
  p = stub_append(p, end, stub_program_name());
  p = stub_append(p, end, ": ");
  if (a) p = stub_append(p, end, a);
  if (b) p = stub_append(p, end, b);
  if (c) p = stub_append(p, end, c);
  *p++ = '\n';
  sys_write(2, line, (unsigned long)(p - line));
}

/* stub_warn, then exit 127 (the status a shell uses for a command that
 * cannot run). */
void stub_fail(const char *a, const char *b, const char *c) {
  stub_warn(a, b, c);
  sys_exit_group(127);
}

char *stub_decimal(char *end, uint64_t v) {
  *--end = 0;
  do *--end = (char)('0' + v % 10), v /= 10;
  while (v);
  return end;
}
