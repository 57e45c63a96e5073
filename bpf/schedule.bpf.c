/* The privileged schedule log (docs/trace.md, "The privileged schedule
 * log"): on every context switch of a thread of the trace, where it was.
 * Built with clang -target bpf and embedded in atomx as a skeleton
 * (bpftool gen skeleton); the collector, src/driver/ScheduleLog.cpp, loads
 * it, fills `tgids` and drains `records` into DIR/schedule.
 *
 * Which processes: the collector puts its own pid in `tgids` (FOLLOW: its
 * children are the trace's, it is not); every process forked by one in the
 * map joins it (sched_process_fork), so every process of the trace is
 * followed whatever runs it.  A process of the trace whose thread pointer
 * has no code map in its recorder's words (a program atomx did not
 * instrument) has its switches logged without a position.
 *
 * Where a thread switched out was: its user registers (bpf_task_pt_regs),
 * and the words the recorder keeps beside the cursor in the thread's TCB
 * (include/atomx/trace_format.h, ATOMX_TRACE_BUFFER_OFFSET...): the
 * buffer's base, its chunk's sequence number and the address map
 * (include/atomx/address_map.h), which says whether the user PC is in the
 * moved code, the original instruction it stands for, whether it is
 * inserted code, and which register holds the cursor in a loop that keeps
 * it there. */
#include "kernel.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include <atomx/address_map.h>
#include <atomx/trace_format.h>

char LICENSE[] SEC("license") = "GPL";

#define FOLLOW 2 /* tgids: the collector itself (its children are followed, it is not logged) */
#define TRACED 1

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 24);
} records SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, __u8);
} tgids SEC(".maps");

/* Records the ring buffer had no room for (the collector says how many). */
__u64 lost = 0;

/* The hardware number of each general register (rax 0 ... r15 15) -> its
 * word in the kernel's pt_regs. */
static const __u8 kPtRegs[16] = {10, 11, 12, 5, 19, 4, 13, 14, 9, 8, 7, 6, 3, 2, 1, 0};

static __always_inline int traced(__u32 tgid) {
  __u8 *v = bpf_map_lookup_elem(&tgids, &tgid);
  return v && *v == TRACED;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child) {
  __u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
  if (ptgid == ctgid || !bpf_map_lookup_elem(&tgids, &ptgid)) return 0;
  __u8 one = TRACED;
  bpf_map_update_elem(&tgids, &ctgid, &one, BPF_ANY);
  return 0;
}

/* The pair of the address map that covers `off` (atomx_map_find), its
 * successor's offset in *end (the end of an inserted run); -1: none. */
static __always_inline int map_find(const AtomxCodeMap *m, __u64 off, AtomxAddressPair *at, __u32 *end) {
  AtomxAddressPair p;
  if (m->count == 0 || bpf_probe_read_user(&p, sizeof p, m->pairs)) return -1;
  if (off < p.newOffset) return -1;
  __u64 lo = 0, hi = m->count;
  for (int i = 0; i < 32 && hi - lo > 1; i++) {
    __u64 mid = lo + (hi - lo) / 2;
    if (bpf_probe_read_user(&p, sizeof p, m->pairs + mid)) return -1;
    if (p.newOffset <= off) lo = mid;
    else hi = mid;
  }
  if (hi - lo > 1 || bpf_probe_read_user(at, sizeof *at, m->pairs + lo)) return -1;
  *end = 0xffffffffu;
  if (lo + 1 < m->count && !bpf_probe_read_user(&p, sizeof p, m->pairs + lo + 1)) *end = p.newOffset;
  return 0;
}

/* The register that keeps the cursor at `off` (atomx_cursor_register), or -1. */
static __always_inline int cursor_register(const AtomxCodeMap *m, __u64 off) {
  if (!m->regions || m->regionCount == 0) return -1;
  __u64 lo = 0, hi = m->regionCount;
  AtomxCursorRegion r;
  for (int i = 0; i < 32 && lo < hi; i++) {
    __u64 mid = lo + (hi - lo) / 2;
    if (bpf_probe_read_user(&r, sizeof r, m->regions + mid)) return -1;
    if (r.newEnd <= off) lo = mid + 1;
    else hi = mid;
  }
  if (lo >= m->regionCount || bpf_probe_read_user(&r, sizeof r, m->regions + lo)) return -1;
  return r.newStart <= off && off < r.newEnd && r.reg < 16 ? (int)r.reg : -1;
}

/* Whether the inserted code from `ip` to `end` still moves the cursor on:
 * `mov %REG,%fs:CURSOR` (64 4x 89 mod=00,rm=100 25 disp32), or in a loop
 * that keeps it in register `reg`, `lea disp8(%REG),%REG` (4x 8d mod=01).
 * Then the bytes of the stores it runs are not yet counted in the cursor. */
#define SCAN 64
static __always_inline int advance_pending(__u64 ip, __u64 end, int reg) {
  __u8 code[SCAN + 9];
  __builtin_memset(code, 0, sizeof code);
  if (bpf_probe_read_user(code, sizeof code, (void *)ip)) return 0;
  __u64 n = end > ip ? end - ip : 0;
  if (n > SCAN) n = SCAN;
  for (int i = 0; i < SCAN; i++) {
    if (i >= n) break;
    if (reg < 0) {
      if (code[i] == 0x64 && (code[i + 1] & 0xf0) == 0x40 && code[i + 2] == 0x89 && (code[i + 3] & 0xc7) == 0x04 &&
          code[i + 4] == 0x25 && code[i + 5] == ATOMX_TRACE_CURSOR_OFFSET && code[i + 6] == 0 && code[i + 7] == 0 &&
          code[i + 8] == 0)
        return 1;
    } else {
      const __u8 low = reg & 7, rex = 0x48 | (reg >= 8 ? 0x05 : 0);
      if (code[i] == rex && code[i + 1] == 0x8d && code[i + 2] == (0x40 | low << 3 | low)) return 1;
    }
  }
  return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next, unsigned int prev_state) {
  __u32 ptgid = BPF_CORE_READ(prev, tgid), ntgid = BPF_CORE_READ(next, tgid);
  const int out = traced(ptgid), in = traced(ntgid);
  if (!out && !in) return 0;
  AtomxScheduleRecord *r = bpf_ringbuf_reserve(&records, sizeof *r, 0);
  if (!r) {
    __sync_fetch_and_add(&lost, 1);
    return 0;
  }
  __builtin_memset(r, 0, sizeof *r);
  r->ns = bpf_ktime_get_ns();
  r->cpu = bpf_get_smp_processor_id();
  /* Still runnable (TASK_RUNNING): preempted, in the kernel or on its way
   * back to user mode (where `preempt` is false); else it blocked. */
  r->flags = prev_state == 0 ? ATOMX_SCHEDULE_PREEMPTED : 0;
  if (in) {
    r->flags |= ATOMX_SCHEDULE_IN;
    r->nextTid = BPF_CORE_READ(next, pid);
    r->nextExec = (__u32)BPF_CORE_READ(next, self_exec_id);
    r->nextPid = ntgid;
  }
  if (out) {
    r->flags |= ATOMX_SCHEDULE_OUT;
    r->prevTid = BPF_CORE_READ(prev, pid);
    r->prevExec = (__u32)BPF_CORE_READ(prev, self_exec_id);
    r->prevPid = ptgid;
    /* prev is still current: its user memory is the one mapped. */
    __u64 regs[ATOMX_PT_REGS_WORDS];
    struct pt_regs *pt = (struct pt_regs *)bpf_task_pt_regs(prev);
    if (pt && !bpf_probe_read_kernel(regs, sizeof regs, pt)) {
      for (int k = 0; k < 16; k++) r->regs[k] = regs[kPtRegs[k]];
      r->pc = regs[ATOMX_PT_REGS_IP];
      /* the run-time PC, until the address map says which original one */
      r->flags |= ATOMX_SCHEDULE_REGISTERS | ATOMX_SCHEDULE_UNTRACED_PC;
    }
    if (BPF_CORE_READ(prev, flags) & PF_EXITING) r->flags |= ATOMX_SCHEDULE_EXITING;
    const __u64 fs = BPF_CORE_READ(prev, thread.fsbase);
    __u64 words[2], mapAt = 0, cursor = 0, owner = 0;
    /* (words of another thread: a child on its parent's thread pointer,
     * posix_spawn's, before its exec) */
    if (fs && !bpf_probe_read_user(&cursor, 8, (void *)(fs + ATOMX_TRACE_CURSOR_OFFSET)) &&
        !bpf_probe_read_user(words, sizeof words, (void *)(fs + ATOMX_TRACE_BUFFER_OFFSET)) &&
        !bpf_probe_read_user(&mapAt, 8, (void *)(fs + ATOMX_TRACE_CODEMAP_OFFSET)) &&
        !bpf_probe_read_user(&owner, 8, (void *)(fs + ATOMX_TRACE_OWNER_OFFSET)) &&
        (owner == r->prevTid || (owner == 0 && words[0] == 0))) {
      r->flags |= ATOMX_SCHEDULE_RECORDER;
      AtomxCodeMap m;
      const __u64 ip = r->pc;
      int reg = -1;
      if ((r->flags & ATOMX_SCHEDULE_REGISTERS) && mapAt && !bpf_probe_read_user(&m, sizeof m, (void *)mapAt) && ip >= m.newStart &&
          ip < m.newEnd) {
        const __u64 off = ip - m.base;
        AtomxAddressPair at;
        __u32 end;
        if (!map_find(&m, off, &at, &end) && at.oldOffset != ATOMX_MAP_NONE) {
          r->flags &= ~ATOMX_SCHEDULE_UNTRACED_PC;
          reg = cursor_register(&m, off);
          if (at.oldOffset & ATOMX_MAP_INSERTED) {
            r->flags |= ATOMX_SCHEDULE_INSERTED;
            r->pc = m.linkBase + (at.oldOffset & ~ATOMX_MAP_INSERTED);
            if (advance_pending(ip, m.base + end, reg)) r->flags |= ATOMX_SCHEDULE_PENDING;
          } else {
            r->pc = m.linkBase + at.oldOffset + (off - at.newOffset);
          }
        }
      }
      if (reg >= 0 && reg < 16) {
        cursor = r->regs[reg & 15];
        r->flags |= ATOMX_SCHEDULE_CURSOR_REGISTER;
        /* The program's value of that register is in the spill word while
         * the loop runs (or it is dead there), as a signal mark's is. */
        __u64 spilled;
        if (!bpf_probe_read_user(&spilled, 8, (void *)(fs + ATOMX_TRACE_SPILL_OFFSET))) r->regs[reg & 15] = spilled;
      }
      if (!words[0]) r->flags |= ATOMX_SCHEDULE_NO_BUFFER;
      else if (cursor >= words[0] && cursor <= words[0] + ATOMX_TRACE_BUFFER_BYTES) {
        r->flags |= ATOMX_SCHEDULE_POSITION;
        r->chunk = words[1];
        r->offset = cursor - words[0];
      }
    }
  }
  /* No wakeup per record: the collector's thread, woken, would be switched
   * in on a CPU of the trace, which logs two more switches, which wake it
   * again.  It drains on its own every few milliseconds (ScheduleLog.cpp),
   * and is woken only when the buffer is half full. */
  const __u64 wake = bpf_ringbuf_query(&records, BPF_RB_AVAIL_DATA) > (1u << 23) ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
  bpf_ringbuf_submit(r, wake);
  return 0;
}
