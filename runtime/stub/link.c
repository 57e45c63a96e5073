/* Finding the program's C library from the initial stack, and looking up its
 * symbols through its dynamic section, without any help from libc.
 *
 * Path: auxv (after argc, argv, envp) -> AT_PHDR/AT_PHNUM -> PT_DYNAMIC ->
 * DT_DEBUG -> struct r_debug -> r_map (namespace 0).  If the program has no
 * DT_DEBUG (or ld.so did not fill it), ld.so itself (AT_BASE) exports the
 * same struct as `_r_debug`. */
#include <elf.h>

#include "link.h"
#include "stub.h"

/* The public part of glibc's struct link_map and struct r_debug (<link.h>). */
struct stub_link_map {
  uint64_t l_addr;
  const char *l_name;
  Elf64_Dyn *l_ld;
  struct stub_link_map *l_next, *l_prev;
};
struct stub_r_debug {
  int r_version;
  struct stub_link_map *r_map;
};

/* ld.so relocates some d_ptr values in place (x86-64 glibc does); others stay
 * link-time.  A link-time address of a shared object is below its load
 * address, so only those need l_addr added. */
static uint64_t dyn_address(uint64_t base, uint64_t ptr) { return ptr < base ? ptr + base : ptr; }

static uint64_t auxv_value(const uint64_t *auxv, uint64_t type) {
  for (; auxv[0] != AT_NULL; auxv += 2)
    if (auxv[0] == type) return auxv[1];
  return 0;
}

static uint32_t gnu_hash(const char *s) {
  uint32_t h = 5381;
  for (; *s; s++) h = h * 33 + (unsigned char)*s;
  return h;
}

static uint32_t sysv_hash(const char *s) {
  uint32_t h = 0;
  for (; *s; s++) {
    h = (h << 4) + (unsigned char)*s;
    uint32_t g = h & 0xf0000000u;
    h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

struct dyn_tables {
  uint64_t base;
  const Elf64_Sym *symtab;
  const char *strtab;
  const uint32_t *gnuHash;
  const uint32_t *sysvHash;
  const uint16_t *versym;
};

static void read_dynamic(uint64_t base, const Elf64_Dyn *dyn, struct dyn_tables *t) {
  memset(t, 0, sizeof *t);
  t->base = base;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    uint64_t p = dyn_address(base, dyn->d_un.d_ptr);
    switch (dyn->d_tag) {
      case DT_SYMTAB: t->symtab = (const Elf64_Sym *)p; break;
      case DT_STRTAB: t->strtab = (const char *)p; break;
      case DT_GNU_HASH: t->gnuHash = (const uint32_t *)p; break;
      case DT_HASH: t->sysvHash = (const uint32_t *)p; break;
      case DT_VERSYM: t->versym = (const uint16_t *)p; break;
    }
  }
}

/* 2 = a definition with the default version (dlsym@@GLIBC_2.34),
 * 1 = a definition with a hidden, older version (dlsym@GLIBC_2.2.5), 0 = no. */
static int match(const struct dyn_tables *t, uint32_t index, const char *name) {
  const Elf64_Sym *s = &t->symtab[index];
  if (s->st_shndx == SHN_UNDEF || s->st_value == 0) return 0;
  int type = ELF64_ST_TYPE(s->st_info);
  if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT && type != STT_NOTYPE) return 0;
  if (!stub_streq(t->strtab + s->st_name, name)) return 0;
  if (t->versym && (t->versym[index] & 0x8000)) return 1;
  return 2;
}

static const Elf64_Sym *lookup(const struct dyn_tables *t, const char *name) {
  if (!t->symtab || !t->strtab) return 0;
  const Elf64_Sym *hidden = 0;
  if (t->gnuHash) {
    uint32_t nbuckets = t->gnuHash[0], symoffset = t->gnuHash[1], bloomSize = t->gnuHash[2];
    const uint32_t *buckets = t->gnuHash + 4 + 2 * bloomSize; /* the bloom words are 64-bit */
    const uint32_t *chain = buckets + nbuckets;
    uint32_t h = gnu_hash(name);
    uint32_t i = nbuckets ? buckets[h % nbuckets] : 0;
    if (i < symoffset) return 0;
    for (;; i++) {
      uint32_t h2 = chain[i - symoffset];
      if ((h | 1) == (h2 | 1)) {
        int m = match(t, i, name);
        if (m == 2) return &t->symtab[i];
        if (m == 1 && !hidden) hidden = &t->symtab[i];
      }
      if (h2 & 1) break;
    }
    return hidden;
  }
  if (t->sysvHash) {
    uint32_t nbucket = t->sysvHash[0];
    const uint32_t *bucket = t->sysvHash + 2, *chain = bucket + nbucket;
    if (nbucket == 0) return 0;
    for (uint32_t i = bucket[sysv_hash(name) % nbucket]; i != STN_UNDEF; i = chain[i]) {
      int m = match(t, i, name);
      if (m == 2) return &t->symtab[i];
      if (m == 1 && !hidden) hidden = &t->symtab[i];
    }
  }
  return hidden;
}

static uint64_t symbol_address(uint64_t base, const Elf64_Dyn *dyn, const char *name) {
  struct dyn_tables t;
  read_dynamic(base, dyn, &t);
  const Elf64_Sym *s = lookup(&t, name);
  if (!s) return 0;
  uint64_t a = base + s->st_value;
  if (ELF64_ST_TYPE(s->st_info) == STT_GNU_IFUNC) a = ((uint64_t(*)(void))a)();
  return a;
}

int stub_object_defines(const void *handle, const char *name) {
  const struct stub_link_map *l = (const struct stub_link_map *)handle;
  struct dyn_tables t;
  read_dynamic(l->l_addr, l->l_ld, &t);
  return lookup(&t, name) != 0;
}

static int contains(const char *s, const char *part) {
  unsigned long n = stub_strlen(part);
  for (; *s; s++) {
    unsigned long i = 0;
    while (i < n && s[i] == part[i]) i++;
    if (i == n) return 1;
  }
  return 0;
}

/* r_debug through the program's DT_DEBUG. */
static struct stub_r_debug *r_debug_from_program(const uint64_t *auxv) {
  const Elf64_Phdr *phdr = (const Elf64_Phdr *)auxv_value(auxv, AT_PHDR);
  uint64_t phnum = auxv_value(auxv, AT_PHNUM);
  if (!phdr) return 0;
  uint64_t bias = 0; /* non-PIE programs may lack PT_PHDR; their bias is 0 */
  for (uint64_t i = 0; i < phnum; i++)
    if (phdr[i].p_type == PT_PHDR) bias = (uint64_t)phdr - phdr[i].p_vaddr;
  for (uint64_t i = 0; i < phnum; i++) {
    if (phdr[i].p_type != PT_DYNAMIC) continue;
    for (const Elf64_Dyn *d = (const Elf64_Dyn *)(phdr[i].p_vaddr + bias); d->d_tag != DT_NULL; d++)
      if (d->d_tag == DT_DEBUG) return (struct stub_r_debug *)d->d_un.d_ptr;
  }
  return 0;
}

/* r_debug through ld.so's exported `_r_debug`. */
static struct stub_r_debug *r_debug_from_ldso(const uint64_t *auxv) {
  uint64_t base = auxv_value(auxv, AT_BASE);
  if (!base) return 0;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
  const Elf64_Phdr *phdr = (const Elf64_Phdr *)(base + eh->e_phoff);
  for (int i = 0; i < eh->e_phnum; i++)
    if (phdr[i].p_type == PT_DYNAMIC)
      return (struct stub_r_debug *)symbol_address(base, (const Elf64_Dyn *)(base + phdr[i].p_vaddr), "_r_debug");
  return 0;
}

const char *stub_find_libc(uint64_t *initialStack, struct stub_libc *libc) {
  uint64_t argc = initialStack[0];
  const uint64_t *p = initialStack + 1 + argc + 1; /* envp */
  while (*p) p++;
  const uint64_t *auxv = p + 1;

  struct stub_r_debug *r = r_debug_from_program(auxv);
  if (!r || !r->r_map) r = r_debug_from_ldso(auxv);
  if (!r || !r->r_map) return "cannot find the dynamic linker's list of loaded objects (is the program static?)";

  struct stub_link_map *c = 0;
  for (struct stub_link_map *l = r->r_map; l; l = l->l_next)
    if (l->l_name && contains(l->l_name, "libc.so.6")) c = l;
  if (!c) return "the program does not use the GNU C library (libc.so.6)";

  /* Look in libc first; glibc before 2.34 keeps the dl* functions in
   * libdl.so.2, so fall back to any other loaded object of the program. */
  struct {
    const char *name;
    uint64_t *slot;
  } wanted[] = {
      {"dlmopen", &libc->dlmopen},           {"dlsym", &libc->dlsym},
      {"dlerror", &libc->dlerror},           {"__cxa_atexit", &libc->cxa_atexit},
      {"sigaction", &libc->sigaction},
  };
  for (unsigned i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
    uint64_t a = symbol_address(c->l_addr, c->l_ld, wanted[i].name);
    for (struct stub_link_map *l = r->r_map; l && !a; l = l->l_next)
      if (l != c && l->l_ld) a = symbol_address(l->l_addr, l->l_ld, wanted[i].name);
    if (!a) {
      libc->missing = wanted[i].name;
      return "the program's C library has no ";
    }
    *wanted[i].slot = a;
  }
  /* libc's definitions only: ld.so calls whichever malloc the program's
   * scope found first, and heap.c takes over only when that is libc's. */
  libc->malloc = symbol_address(c->l_addr, c->l_ld, "malloc");
  libc->calloc = symbol_address(c->l_addr, c->l_ld, "calloc");
  libc->realloc = symbol_address(c->l_addr, c->l_ld, "realloc");
  libc->free = symbol_address(c->l_addr, c->l_ld, "free");
  libc->ldsoBase = auxv_value(auxv, AT_BASE);
  return 0;
}
