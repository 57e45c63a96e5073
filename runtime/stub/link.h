/* link.c: the program's own libc, found through ld.so's list of loaded objects. */
#ifndef ATOMX_STUB_LINK_H
#define ATOMX_STUB_LINK_H

#include <stdint.h>

/* Run-time addresses of the few libc functions the runtime calls. */
struct stub_libc {
  uint64_t dlmopen, dlsym, dlerror, cxa_atexit, sigaction;
  const char *missing; /* on failure: the function that was not found, or 0 */
};

/* Fills *libc from the process's initial stack (argc, argv, envp, auxv).
 * Returns 0, or the start of an error message (followed by libc->missing if
 * that is set). */
const char *stub_find_libc(uint64_t *initialStack, struct stub_libc *libc);

#endif
