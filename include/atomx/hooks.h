/* Taking over the calls the program's own code makes to a function it
 * imports from a shared library (the way the trace recorder sees the
 * program's sigaction, fork and exec, and the malloc tool every allocator
 * call, however it is made).  Implemented in libatomx_analysis.a
 * (runtime/analysis/hooks.c), which every analysis object links.
 *
 * The dynamic loader resolves every use of an imported function through
 * the program's dynamic relocations: its PLT and GOT slots
 * (R_X86_64_JUMP_SLOT, R_X86_64_GLOB_DAT: direct calls, calls through the
 * GOT, and the address taken in code) and data words initialised with the
 * function's address (R_X86_64_64: a table of function pointers such as
 * `struct { void *(*alloc)(size_t); void (*free)(void *); } mem = {malloc,
 * free}`).  Pointing all of them at a wrapper makes every call the program
 * makes -- directly, through a pointer it took, or a pointer a table of its
 * own holds -- call the wrapper.  Not seen: calls made inside shared
 * libraries (their own relocations), and pointers the program gets at run
 * time from dlsym.  A program that is linked statically, or that defines
 * the function itself, has no such relocation: nothing is changed. */
#ifndef ATOMX_HOOKS_H
#define ATOMX_HOOKS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Points every place in the main program that the loader filled with the
 * address of `name` (with a zero addend) at `wrapper`.  When `*real` is
 * null it gets what the program would have called: the value the loader
 * resolved (so an LD_PRELOAD interposer stays in the path), or, where the
 * program binds lazily and has not yet called it, the definition found in
 * the program's objects in load order.  Returns the number of places
 * changed (0: the program does not import `name`), or -1 when the program
 * cannot be found or `*real` cannot be resolved (then nothing is changed).
 * Call it before the program's code runs (a ProgramBefore routine, or the
 * analysis object's constructor); not thread-safe. */
int atomx_hook_import(const char *name, void *wrapper, void **real);

#ifdef __cplusplus
}
#endif

#endif
