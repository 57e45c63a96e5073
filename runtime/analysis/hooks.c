/* <atomx/hooks.h>: the program's uses of an imported function pointed at
 * a wrapper, through its dynamic relocations. */
#define _GNU_SOURCE
#include <atomx/hooks.h>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

/* The main program's link map: the first object of the base namespace
 * (this object lives in a namespace of its own, dlmopen LM_ID_NEWLM). */
static const struct link_map *program_map(void) {
  void *libc = dlmopen(LM_ID_BASE, "libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (!libc) return NULL;
  const struct link_map *m = libc;
  while (m->l_prev) m = m->l_prev;
  dlclose(libc); /* only the count NOLOAD took: libc stays */
  return m;
}

struct dynamic {
  uintptr_t symtab, strtab, rela[2], relasz[2];
  int bindNow;
};

static int read_dynamic(const struct link_map *program, struct dynamic *d) {
  memset(d, 0, sizeof *d);
  const ElfW(Dyn) *dyn = program->l_ld;
  if (!dyn) return 0;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    switch (dyn->d_tag) {
      case DT_SYMTAB: d->symtab = dyn->d_un.d_ptr; break;
      case DT_STRTAB: d->strtab = dyn->d_un.d_ptr; break;
      case DT_JMPREL: d->rela[0] = dyn->d_un.d_ptr; break;
      case DT_PLTRELSZ: d->relasz[0] = dyn->d_un.d_val; break;
      case DT_RELA: d->rela[1] = dyn->d_un.d_ptr; break;
      case DT_RELASZ: d->relasz[1] = dyn->d_un.d_val; break;
      case DT_BIND_NOW: d->bindNow = 1; break;
      case DT_FLAGS: d->bindNow |= (dyn->d_un.d_val & DF_BIND_NOW) != 0; break;
      case DT_FLAGS_1: d->bindNow |= (dyn->d_un.d_val & DF_1_NOW) != 0; break;
    }
  }
  /* ld.so relocates these entries in place for the main program; a PIE's
   * may still be link-time offsets. */
  const uintptr_t bias = program->l_addr;
  if (bias && d->symtab < bias) {
    d->symtab += bias, d->strtab += bias;
    for (int t = 0; t < 2; t++) d->rela[t] += d->rela[t] ? bias : 0;
  }
  return d->symtab && d->strtab;
}

/* A place the loader wrote `name`'s address to: a PLT slot (filled at the
 * first call in a program bound lazily), a GOT slot or a data word. */
static int names(const struct dynamic *d, const ElfW(Rela) *r, const char *name) {
  const unsigned type = ELF64_R_TYPE(r->r_info);
  if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT && type != R_X86_64_64) return 0;
  if (type == R_X86_64_64 && r->r_addend != 0) return 0;
  const ElfW(Sym) *s = (const ElfW(Sym) *)d->symtab + ELF64_R_SYM(r->r_info);
  return ELF64_R_SYM(r->r_info) != 0 && strcmp((const char *)d->strtab + s->st_name, name) == 0;
}

/* What the program would call: a value the loader has resolved, or the
 * first definition in the program's objects in load order. */
static void *resolve(const struct link_map *program, const struct dynamic *d, const char *name) {
  const uintptr_t bias = program->l_addr;
  for (int t = 0; t < 2; t++) {
    const ElfW(Rela) *r = (const ElfW(Rela) *)d->rela[t];
    for (size_t k = 0; r && k < d->relasz[t] / sizeof *r; k++)
      if (names(d, &r[k], name) && (ELF64_R_TYPE(r[k].r_info) != R_X86_64_JUMP_SLOT || d->bindNow))
        return *(void **)(bias + r[k].r_offset);
  }
  for (const struct link_map *m = program->l_next; m; m = m->l_next) {
    if (!m->l_name || !m->l_name[0]) continue;
    void *h = dlmopen(LM_ID_BASE, m->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) continue;
    void *f = dlsym(h, name);
    dlclose(h);
    if (f) return f;
  }
  return NULL;
}

int atomx_hook_import(const char *name, void *wrapper, void **real) {
  const struct link_map *program = program_map();
  struct dynamic d;
  if (!program || !read_dynamic(program, &d)) return -1;
  const uintptr_t bias = program->l_addr;
  uintptr_t relroStart = 0, relroEnd = 0;
  const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
  for (unsigned long i = 0, n = getauxval(AT_PHNUM); ph && i < n; i++)
    if (ph[i].p_type == PT_GNU_RELRO) {
      relroStart = (bias + ph[i].p_vaddr) & ~(uintptr_t)4095;
      relroEnd = (bias + ph[i].p_vaddr + ph[i].p_memsz + 4095) & ~(uintptr_t)4095;
    }
  int changed = 0;
  for (int t = 0; t < 2; t++) {
    const ElfW(Rela) *r = (const ElfW(Rela) *)d.rela[t];
    for (size_t k = 0; r && k < d.relasz[t] / sizeof *r; k++) {
      if (!names(&d, &r[k], name)) continue;
      /* Resolved first: a slot is about to hold the wrapper.  Not the
       * value of a lazily bound slot: that is the PLT's way to the
       * resolver, which would write the function over the wrapper at the
       * first call. */
      if (!*real) *real = resolve(program, &d, name);
      if (!*real) return -1;
      void **slot = (void **)(bias + r[k].r_offset);
      const uintptr_t page = (uintptr_t)slot & ~(uintptr_t)4095;
      /* The RELRO part is read-only by now; the rest (a lazily bound
       * .got.plt, writable data) is writable and must stay so.  A word
       * may straddle two pages. */
      const int relro = (uintptr_t)slot >= relroStart && (uintptr_t)slot < relroEnd;
      const size_t span = ((uintptr_t)slot + sizeof *slot - 1) / 4096 * 4096 + 4096 - page;
      if (relro && mprotect((void *)page, span, PROT_READ | PROT_WRITE) != 0) continue;
      *slot = wrapper;
      changed++;
      if (relro) mprotect((void *)page, span, PROT_READ);
    }
  }
  return changed;
}
