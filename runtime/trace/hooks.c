/* The recorder's wrappers of the functions the program calls in its libc
 * that it must see (signals.c: sigaction, signal and the signal masks;
 * process.c: fork and exec; sync.c: the sync points), put in the program's PLT and GOT slots and
 * function-pointer data by <atomx/hooks.h> (libatomx_analysis.a). */
#include "recorder.h"

#include <dlfcn.h>

void *programLibc;

/* `libc`: the program's libc (a handle in the program's namespace). */
void hook_program(void *libc) {
  programLibc = libc;
  hook_signals();
  hook_process();
  hook_sync();
}
