/* The program's GOT slots: the recorder's wrappers of the functions the
 * program calls in its libc that it must see (signals.c: sigaction,
 * signal and the signal masks; process.c: fork and exec). */
#include "recorder.h"

#include <dlfcn.h>
#include <elf.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

void *programLibc;


/* Points the main program's GOT slots for `name` at `wrapper`. */
void hook_slots(const struct link_map *program, const char *name, void *wrapper, void **real) {
  const ElfW(Dyn) *dyn = program->l_ld;
  if (!dyn) return;
  uintptr_t symtab = 0, strtab = 0, rela[2] = {0, 0}, relasz[2] = {0, 0};
  for (; dyn->d_tag != DT_NULL; dyn++) {
    switch (dyn->d_tag) {
      case DT_SYMTAB: symtab = dyn->d_un.d_ptr; break;
      case DT_STRTAB: strtab = dyn->d_un.d_ptr; break;
      case DT_JMPREL: rela[0] = dyn->d_un.d_ptr; break;
      case DT_PLTRELSZ: relasz[0] = dyn->d_un.d_val; break;
      case DT_RELA: rela[1] = dyn->d_un.d_ptr; break;
      case DT_RELASZ: relasz[1] = dyn->d_un.d_val; break;
    }
  }
  /* ld.so relocates these entries in place for the main program; a PIE's
   * may still be link-time offsets. */
  const uintptr_t bias = program->l_addr;
  uintptr_t relroStart = 0, relroEnd = 0;
  const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
  for (unsigned long i = 0, n = getauxval(AT_PHNUM); ph && i < n; i++)
    if (ph[i].p_type == PT_GNU_RELRO) {
      relroStart = (bias + ph[i].p_vaddr) & ~(uintptr_t)4095;
      relroEnd = (bias + ph[i].p_vaddr + ph[i].p_memsz + 4095) & ~(uintptr_t)4095;
    }
  if (bias && symtab < bias) symtab += bias, strtab += bias, rela[0] += rela[0] ? bias : 0, rela[1] += rela[1] ? bias : 0;
  if (!symtab || !strtab) return;
  for (int t = 0; t < 2; t++) {
    const ElfW(Rela) *r = (const ElfW(Rela) *)rela[t];
    for (size_t k = 0; r && k < relasz[t] / sizeof *r; k++) {
      const unsigned type = ELF64_R_TYPE(r[k].r_info);
      if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
      const ElfW(Sym) *s = (const ElfW(Sym) *)symtab + ELF64_R_SYM(r[k].r_info);
      if (strcmp((const char *)strtab + s->st_name, name) != 0) continue;
      void **slot = (void **)(bias + r[k].r_offset);
      const uintptr_t page = (uintptr_t)slot & ~(uintptr_t)4095;
      /* The RELRO part is read-only by now; the rest (a lazily bound
       * .got.plt) is writable and must stay so. */
      const int relro = (uintptr_t)slot >= relroStart && (uintptr_t)slot < relroEnd;
      if (relro && mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) != 0) continue;
      /* The function itself, not what the slot holds: in a program bound
       * lazily that is the PLT's way to the resolver, which would write the
       * function into the slot over the wrapper at the first call. */
      if (!*real) *real = dlsym(programLibc, name);
      if (!*real) *real = *slot;
      *slot = wrapper;
      if (relro) mprotect((void *)page, 4096, PROT_READ);
    }
  }
}

/* `libc`: the program's libc, whose link map is in the program's
 * namespace; the first object of that namespace is the program. */
void hook_program(void *libc) {
  programLibc = libc;
  const struct link_map *program = libc;
  while (program->l_prev) program = program->l_prev;
  hook_signals(program);
  hook_process(program);
}
