/* The stepper (stepper.h). */
#define _GNU_SOURCE
#include "stepper.h"

#include <string.h>

#include "stores.h"

const int kGreg[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
                       REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};

int step_inserted(greg_t *g) {
  uint8_t *p = (uint8_t *)g[REG_RIP];
  int reg, disp, width, src, save, spill, len;
  int32_t imm;
  if ((len = atomx_stores_decode_store(p, &reg, &disp, &width, &src))) {
    /* A register's value: as it is in the context before the store (the
     * store may point the cursor register at a fresh buffer). */
    const uint64_t value = src >= 0 ? (uint64_t)g[kGreg[src]] : 0;
    uint8_t *at = step_store_at(g, reg, disp, width);
    if (!at) return 0;
    if (src >= 0) memcpy(at, &value, (size_t)width); /* its first bytes (little-endian) */
    else memcpy(at, p + len - width, (size_t)width);
    g[REG_RIP] += len;
    return 1;
  }
  if ((len = atomx_stores_decode_add(p, &reg, &disp, &imm))) {
    /* The value just put at disp(%r) (the site's own bytes). */
    uint64_t v;
    uint8_t *at = (uint8_t *)g[kGreg[reg]] + disp;
    memcpy(&v, at, 8);
    v += (uint64_t)(int64_t)imm;
    memcpy(at, &v, 8);
    g[REG_RIP] += len;
    return 1;
  }
  if ((len = atomx_stores_decode_fs_move(p, &reg, &save, &spill))) {
    if (spill && save) step_set_spill((uint64_t)g[kGreg[reg]]);
    else if (spill) g[kGreg[reg]] = (greg_t)step_spill();
    else if (save) step_set_cursor((uint8_t *)g[kGreg[reg]]);
    else g[kGreg[reg]] = (greg_t)step_cursor();
    g[REG_RIP] += len;
    return 1;
  }
  uint32_t site;
  if ((len = atomx_stores_decode_library_site(p, &site))) {
    step_set_library_slot(site);
    g[REG_RIP] += len;
    return 1;
  }
  if ((len = atomx_stores_decode_advance(p, &reg, &disp))) {
    g[kGreg[reg]] += disp;
    g[REG_RIP] += len;
    return 1;
  }
  /* lea disp8(%rsp),%rsp: 48 8D 64 24 d8; lea disp32(%rsp),%rsp: 48 8D A4 24 d32 */
  if (p[0] == 0x48 && p[1] == 0x8d && p[3] == 0x24 && (p[2] == 0x64 || p[2] == 0xa4)) {
    int32_t d;
    if (p[2] == 0x64) d = (int8_t)p[4];
    else memcpy(&d, p + 4, 4);
    g[REG_RSP] += d;
    g[REG_RIP] += p[2] == 0x64 ? 5 : 8;
    return 1;
  }
  if (p[0] >= 0x50 && p[0] <= 0x57 && p[0] != 0x54) { /* push %rax ... %rdi (not %rsp) */
    g[REG_RSP] -= 8;
    *(greg_t *)g[REG_RSP] = g[kGreg[p[0] - 0x50]];
    g[REG_RIP] += 1;
    return 1;
  }
  if (p[0] >= 0x58 && p[0] <= 0x5f && p[0] != 0x5c) { /* pop %rax ... %rdi (not %rsp) */
    g[kGreg[p[0] - 0x58]] = *(greg_t *)g[REG_RSP];
    g[REG_RSP] += 8;
    g[REG_RIP] += 1;
    return 1;
  }
  if (p[0] == 0xe9) { /* jmp rel32 */
    int32_t d;
    memcpy(&d, p + 1, 4);
    g[REG_RIP] += 5 + d;
    return 1;
  }
  if (p[0] == 0xeb) { /* jmp rel8 */
    g[REG_RIP] += 2 + (int8_t)p[1];
    return 1;
  }
  return 0;
}
