/* The address map of an instrumented program: which original instruction
 * each address of the moved code stands for.  atomx writes it
 * (instrument/Instrumenter.cpp, addressMap); the runtime blob reads it for
 * original_address() (runtime/stub/after.c), and the trace recorder reads it
 * to say where an asynchronous signal interrupted a thread
 * (runtime/trace/marks.c).  This header is the one definition of it.
 *
 * The map is an array of pairs sorted by newOffset; both offsets count from
 * the descriptor's mapBase.  The pair with the greatest newOffset at or
 * below an address says what is there:
 *   - a plain pair: the program's own instructions, copied unchanged, the
 *     original at oldOffset + the distance from newOffset.  Every block
 *     start and every instruction right after inserted code has one;
 *   - ATOMX_MAP_INSERTED | old: code atomx inserted (a site's stores or
 *     call, a branch's edge stub, the jump that stitches a procedure to
 *     the next).  When it has run, the program goes on at the original
 *     instruction `old` (an edge stub: the edge's target);
 *   - ATOMX_MAP_NONE: no program code from here (the end of a moved
 *     procedure, with no other right behind it).
 * Addresses outside [newCodeStart, newCodeEnd) did not move. */
#ifndef ATOMX_ADDRESS_MAP_H
#define ATOMX_ADDRESS_MAP_H

#include <stdint.h>

typedef struct AtomxAddressPair {
  uint32_t newOffset;
  uint32_t oldOffset; /* an offset, ATOMX_MAP_INSERTED | an offset, or ATOMX_MAP_NONE */
} AtomxAddressPair;

#define ATOMX_MAP_INSERTED 0x80000000u
#define ATOMX_MAP_NONE 0xffffffffu

/* Where a loop keeps the thread's trace cursor in a register instead of
 * %fs:ATOMX_TRACE_CURSOR_OFFSET (docs/trace.md, "What the program
 * writes"): [newStart, newEnd), offsets from mapBase as the pairs', is
 * code of the loop's blocks (their instructions and the stores inserted
 * among them and after them) or of an edge stub of their branches, up to
 * the Save of an edge that leaves the loop, where general register `reg`
 * (a hardware number) holds the cursor and the thread pointer's copy may
 * be behind it.  An
 * array sorted by newStart, not overlapping; the trace recorder looks it
 * up on signals and faults only (runtime/trace/marks.c). */
typedef struct AtomxCursorRegion {
  uint32_t newStart;
  uint32_t newEnd;
  uint32_t reg;
} AtomxCursorRegion;

/* The map as the runtime hands it to an analysis object that asks for it
 * (it defines `AtomxCodeMap atomx_analysis_code_map`; the blob fills it in
 * before any ProgramBefore routine runs): run-time addresses. */
typedef struct AtomxCodeMap {
  const AtomxAddressPair *pairs;
  uint64_t count;
  uint64_t base;      /* run-time address of mapBase */
  uint64_t linkBase;  /* link-time mapBase: original addresses are linkBase + offset */
  uint64_t newStart;  /* run-time [newStart, newEnd): the moved code */
  uint64_t newEnd;
  const AtomxCursorRegion *regions; /* regionCount of them, offsets from mapBase as the pairs' */
  uint64_t regionCount;
} AtomxCodeMap;

/* The register that holds the cursor at offset `off` (from mapBase), or -1. */
static inline int atomx_cursor_register(const AtomxCursorRegion *r, uint64_t count, uint64_t off) {
  uint64_t lo = 0, hi = count; /* the first region at or after off is in [lo, hi] */
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (r[mid].newEnd <= off) lo = mid + 1;
    else hi = mid;
  }
  return lo < count && r[lo].newStart <= off && off < r[lo].newEnd ? (int)r[lo].reg : -1;
}

/* The index of the pair that covers offset `off` (from mapBase), or -1 when
 * `off` lies before the first pair. */
static inline int64_t atomx_map_find(const AtomxAddressPair *map, uint64_t count, uint64_t off) {
  if (count == 0 || off < map[0].newOffset) return -1;
  uint64_t lo = 0, hi = count; /* map[lo].newOffset <= off < map[hi].newOffset */
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (map[mid].newOffset <= off) lo = mid;
    else hi = mid;
  }
  return (int64_t)lo;
}

/* The original offset (from mapBase) of the code at offset `off` of the
 * moved code: the instruction copied there, or, in inserted code, the
 * instruction it stands before; -1 where the map has no program code. */
static inline int64_t atomx_map_original_offset(const AtomxAddressPair *map, uint64_t count, uint64_t off) {
  const int64_t at = atomx_map_find(map, count, off);
  if (at < 0 || map[at].oldOffset == ATOMX_MAP_NONE) return -1;
  if (map[at].oldOffset & ATOMX_MAP_INSERTED) return (int64_t)(map[at].oldOffset & ~ATOMX_MAP_INSERTED);
  return (int64_t)(map[at].oldOffset + (off - map[at].newOffset));
}

#endif
