/* The stepper: runs the code atomx inserted (the witness stores of
 * stores.h, and the jumps of edge stubs and stitches) on an interrupted
 * thread's context, one instruction at a time, as the CPU would have.  The
 * recorder runs a sequence of stores that a signal interrupted to its end
 * (marks.c), so that the handler's records come after the sequence's, not
 * inside a sequence that has read the cursor but not yet moved it.
 *
 * stepper.c needs only what is declared here, so that a unit test can run
 * it on its own (tests/unit/stepper_test.cpp): the functions under
 * "Given by" are the recorder's (buffer.c) or the test's. */
#ifndef ATOMX_TRACE_STEPPER_H
#define ATOMX_TRACE_STEPPER_H

#include <stdint.h>
#include <sys/ucontext.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(hidden)

/* gregs index of each hardware register number. */
extern const int kGreg[16];

/* Runs the instruction at g[REG_RIP] on the context g: 1, or 0 (and g
 * unchanged) for an instruction of another form, or a store that is not
 * a trace store's. */
int step_inserted(greg_t *g);

/* Given by the recorder (or a test): the thread's cursor, read and set;
 * the thread's library slot, set; and where a store of `width` bytes at disp(%r), %r the hardware register
 * `reg` of g, writes them: in the thread's buffer, or in a fresh one that
 * %r and the cursor are pointed at (the store faulted, or would have); 0
 * when it is not a trace store. */
uint8_t *step_cursor(void);
void step_set_cursor(uint8_t *c);
/* The thread's library slot (stores.h, atomx_stores_library_site), set. */
void step_set_library_slot(uint32_t site);
/* The thread's word at ATOMX_TRACE_SPILL_OFFSET, read and set. */
uint64_t step_spill(void);
void step_set_spill(uint64_t v);
uint8_t *step_store_at(greg_t *g, int reg, int disp, int width);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif

#endif
