/* link.c: the program's own libc, found through ld.so's list of loaded objects. */
#ifndef ATOMX_STUB_LINK_H
#define ATOMX_STUB_LINK_H

#include <stdint.h>

/* Run-time addresses of the few libc functions the runtime calls. */
struct stub_libc {
  uint64_t dlmopen, dlsym, dlerror, cxa_atexit, sigaction;
  /* libc's own malloc family (0 if absent) and ld.so's load address
   * (AT_BASE): heap.c redirects ld.so's allocations while it loads the
   * analysis object. */
  uint64_t malloc, calloc, realloc, free, ldsoBase;
  const char *missing; /* on failure: the function that was not found, or 0 */
};

/* Fills *libc from the process's initial stack (argc, argv, envp, auxv).
 * Returns 0, or the start of an error message (followed by libc->missing if
 * that is set). */
const char *stub_find_libc(uint64_t *initialStack, struct stub_libc *libc);

/* Whether the object a dlopen handle (glibc: its struct link_map) names
 * defines `name` in its own dynamic symbol table.  Looking first keeps
 * dlsym from failing: a failed dlsym makes the program's libc malloc its
 * dlerror state on the program's heap. */
int stub_object_defines(const void *handle, const char *name);

#endif
