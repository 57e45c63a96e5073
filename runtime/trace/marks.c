/* Signal marks (include/atomx/trace_format.h, AtomxTraceMark): where in
 * the thread's path a handler of the program ran, and where the thread
 * went on.  The point is the stream position and the original address of
 * the instruction the thread was at, found through the address map (and
 * the stepper, when the signal interrupted inserted code). */
#include "recorder.h"

#include <atomx/address_map.h>

/* The address map, filled in by the atomx runtime before the program starts
 * (include/atomx/address_map.h). */
AtomxCodeMap atomx_analysis_code_map;

/* pc is in the moved code, where atomx inserted its code (every witness
 * store among it). */
int in_moved_code(uint64_t pc) {
  const AtomxCodeMap *m = &atomx_analysis_code_map;
  return m->pairs && pc >= m->newStart && pc < m->newEnd;
}

/* The register that holds the thread's cursor at pc, in a loop that
 * keeps it there (AtomxCursorRegion), or -1: the cursor is %fs's. */
int cursor_register_at(uint64_t pc) {
  const AtomxCodeMap *m = &atomx_analysis_code_map;
  if (!in_moved_code(pc) || !m->regions) return -1;
  return atomx_cursor_register(m->regions, m->regionCount, pc - m->base);
}

/* The cursor a witness store through register `reg` at g's pc writes at:
 * the register itself in a loop that keeps the cursor there, else %fs's
 * copy (the fault handler's and the stepper's full-buffer swap). */
uint8_t *store_cursor(const greg_t *g, int reg) {
  return cursor_register_at((uint64_t)g[REG_RIP]) == reg ? (uint8_t *)g[kGreg[reg]] : cursor();
}

/* ATOMX_TEST_NO_CURSOR_SYNC=1 (a test's hook): signals leave the cursor
 * of a promoted loop alone, so that a handler's records land where the
 * loop's next ones go. */
int noCursorSync;

/* A signal interrupted the thread at g: where a loop holds the cursor in a
 * register, the thread pointer's copy is made current (before a handler
 * of the program runs, or the streams are written), or, `back`, the
 * register is given the copy (when the handler returns: it may have
 * recorded, or a mark have ended the chunk). */
void sync_cursor(greg_t *g, int back) {
  const int r = cursor_register_at((uint64_t)g[REG_RIP]);
  if (r < 0 || noCursorSync) return;
  if (back) g[kGreg[r]] = (greg_t)cursor();
  else set_cursor((uint8_t *)g[kGreg[r]]);
}

/* Where the interrupted thread is in the program's traced code: the
 * original address of the instruction it runs next, 0 outside that code
 * (a library, the recorder, code atomx left in place), or
 * ATOMX_TRACE_MARK_UNKNOWN.  Inserted code the signal interrupted is run
 * to its end first, so that every record due before that instruction is
 * in the stream, and the handler's records come after them, not inside a
 * sequence of stores that has read the cursor but not yet moved it. */
uint64_t interrupted_at(ucontext_t *uc) {
  const AtomxCodeMap *m = &atomx_analysis_code_map;
  greg_t *g = uc->uc_mcontext.gregs;
  for (int steps = 0; steps < 256; steps++) {
    const uint64_t rip = (uint64_t)g[REG_RIP];
    /* Before a measured library call (library.c): in its call code, or the
     * recorder's routine (the site's stores have run). */
    if (!in_moved_code(rip)) return library_interrupted(g);
    const int64_t k = atomx_map_find(m->pairs, m->count, rip - m->base);
    if (k < 0 || m->pairs[k].oldOffset == ATOMX_MAP_NONE) return library_interrupted(g);
    if (!(m->pairs[k].oldOffset & ATOMX_MAP_INSERTED)) return m->linkBase + m->pairs[k].oldOffset + (rip - m->base - m->pairs[k].newOffset);
    if (!step_inserted(g)) {
      const uint64_t library = library_interrupted(g);
      return library ? library : ATOMX_TRACE_MARK_UNKNOWN;
    }
  }
  return ATOMX_TRACE_MARK_UNKNOWN;
}

/* A mark at the cursor of the calling thread's buffer (the thread is at an
 * instruction of its own, not inside inserted code: the cursor is the
 * stream position), with every signal blocked (a signal handler, or
 * sync.c's slow way). */
void add_mark(uint16_t kind, int sig, uint64_t pc) {
  struct buffer *b = own_buffer();
  int moved = 0; /* the thread's buffer or chunk changed (publish) */
  if (!b) {
    b = new_buffer();
    set_cursor(stream_begin(b));
    moved = 1;
  }
  uint8_t *c = cursor();
  if (!c || c < b->base || c > b->base + BUFFER_BYTES) {
    c = b->base;
    set_cursor(c);
    moved = 1;
  }
  /* Under the buffer's lock: another thread's exit may be writing the
   * buffer's last chunk (flush_all). */
  for (;;) {
    if (moved) publish(b), moved = 0;
    lock_buffer(b);
    if (b->markCount < MAX_MARKS) {
      b->marks[b->markCount++] = (AtomxTraceMark){(uint32_t)(c - b->base), kind, (uint16_t)sig, pc};
      unlock_buffer(b);
      return;
    }
    unlock_buffer(b);
    hand_off(b, c); /* the chunk ends here */
    c = b->base;
    set_cursor(c);
    moved = 1;
  }
}

