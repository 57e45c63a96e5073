/* The few kernel types the schedule log's eBPF program reads
 * (bpf/schedule.bpf.c), written by hand instead of a vmlinux.h generated
 * from the build machine's kernel: with preserve_access_index, libbpf
 * relocates each field access against the running kernel's BTF (CO-RE), so
 * only the fields named here need to exist, wherever they are. */
#ifndef ATOMX_BPF_KERNEL_H
#define ATOMX_BPF_KERNEL_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
#define true 1
#define false 0

enum bpf_map_type { BPF_MAP_TYPE_HASH = 1, BPF_MAP_TYPE_RINGBUF = 27 };
enum { BPF_ANY = 0, BPF_NOEXIST = 1 };
enum { BPF_RB_NO_WAKEUP = 1, BPF_RB_FORCE_WAKEUP = 2 };
enum { BPF_RB_AVAIL_DATA = 0 };

struct thread_struct {
  unsigned long fsbase;
} __attribute__((preserve_access_index));

#define PF_EXITING 0x00000004 /* the task is in do_exit: its user memory may be gone */
struct task_struct {
  unsigned int flags;
  int pid;
  int tgid;
  __u64 self_exec_id;
  struct thread_struct thread;
} __attribute__((preserve_access_index));

/* x86-64's saved user registers, in the kernel's order (its layout is the
 * ABI of ptrace's PTRACE_GETREGS too): read whole, as 21 words. */
#define ATOMX_PT_REGS_WORDS 21
#define ATOMX_PT_REGS_IP 16

#endif
