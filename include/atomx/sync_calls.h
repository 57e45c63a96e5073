/* The calls at which a traced thread may synchronise with another thread or
 * process: the sync points of a trace's fallback schedule (docs/trace.md,
 * "Ordering threads and processes").  The recorder (runtime/trace/sync.c)
 * takes the program's imports of each through <atomx/hooks.h> and writes
 * two marks into the thread's stream around the call
 * (ATOMX_TRACE_MARK_SYNC_ENTERED, ATOMX_TRACE_MARK_SYNC_RETURNED in
 * <atomx/trace_format.h>: CLOCK_MONOTONIC before and after it); the reader
 * (src/trace/SyncPoints.cpp) pairs them with the calls of the regenerated
 * path and cuts the path there.  One list, in one place: a call's number in
 * the marks is its place here, so the list only grows at its end.
 *
 * Each entry: the function's name, and which way it synchronises:
 *   SEND     its effect another thread or process can observe happens
 *            inside the call, and nothing it waits for: the call is
 *            ordered at its entry (write: the bytes a reader will read;
 *            unlock: the lock another thread takes; create: the thread that
 *            starts; exit: the status a waiter collects);
 *   RECEIVE  it may wait for, or observe, another's effect: the call is
 *            ordered at its return (read, lock, wait, join, poll, sleep: a
 *            sleep orders nothing itself, but a thread that sleeps is
 *            meant to let others run, and its time is what the schedule
 *            says).
 * What follows any call is ordered at its return; what precedes it, before
 * its entry, whatever its way.  Why each is here:
 *   - system-call wrappers that move data between processes or threads, or
 *     wait for them: read, write and their vector, positioned and socket
 *     forms; accept, connect; poll, select, epoll_wait; pipe, open, close
 *     (a pipe's end closed is the EOF its reader sees); kill, raise
 *     (signals); wait, waitpid (a child's end); nanosleep, sleep, usleep,
 *     sched_yield;
 *   - libc's futex users: the pthread mutex, condition variable, rwlock,
 *     barrier, spin lock, semaphore and thread create/join/exit calls (the
 *     only way a program without its own atomics orders threads);
 *   - stdio that does I/O (its buffer is flushed through write, or filled
 *     through read, inside the call): fread, fwrite, fflush, fgets, fputs,
 *     puts, getc, fgetc, putc, fputc, putchar, getchar, printf, fprintf and
 *     their _chk forms (fortified builds call those);
 *   - exit (its handlers' output, the status a parent waits for).
 * fork, vfork and exec are not here: the recorder hooks them already and
 * their order is the event log's (fork, forked; docs/trace.md). */
#ifndef ATOMX_SYNC_CALLS_H
#define ATOMX_SYNC_CALLS_H

#define ATOMX_SYNC_SEND 1
#define ATOMX_SYNC_RECEIVE 2

#define ATOMX_SYNC_CALLS(X)                                                                             \
  X(read, RECEIVE) X(write, SEND) X(readv, RECEIVE) X(writev, SEND) X(pread, RECEIVE) X(pwrite, SEND)   \
  X(pread64, RECEIVE) X(pwrite64, SEND) X(recv, RECEIVE) X(recvfrom, RECEIVE) X(recvmsg, RECEIVE)       \
  X(send, SEND) X(sendto, SEND) X(sendmsg, SEND) X(accept, RECEIVE) X(accept4, RECEIVE)                 \
  X(connect, RECEIVE) X(poll, RECEIVE) X(select, RECEIVE) X(epoll_wait, RECEIVE) X(pipe, RECEIVE)       \
  X(pipe2, RECEIVE) X(open, RECEIVE) X(close, SEND) X(kill, SEND) X(raise, SEND) X(wait, RECEIVE)       \
  X(waitpid, RECEIVE) X(nanosleep, RECEIVE) X(sleep, RECEIVE) X(usleep, RECEIVE)                        \
  X(sched_yield, RECEIVE) X(pthread_mutex_lock, RECEIVE) X(pthread_mutex_trylock, RECEIVE)              \
  X(pthread_mutex_unlock, SEND) X(pthread_cond_wait, RECEIVE) X(pthread_cond_timedwait, RECEIVE)        \
  X(pthread_cond_signal, SEND) X(pthread_cond_broadcast, SEND) X(pthread_rwlock_rdlock, RECEIVE)        \
  X(pthread_rwlock_wrlock, RECEIVE) X(pthread_rwlock_unlock, SEND) X(pthread_barrier_wait, RECEIVE)     \
  X(pthread_spin_lock, RECEIVE) X(pthread_spin_unlock, SEND) X(sem_wait, RECEIVE) X(sem_post, SEND)     \
  X(pthread_create, SEND) X(pthread_join, RECEIVE) X(pthread_exit, SEND) X(fread, RECEIVE)              \
  X(fwrite, SEND) X(fflush, SEND) X(fgets, RECEIVE) X(fputs, SEND) X(puts, SEND) X(getc, RECEIVE)       \
  X(fgetc, RECEIVE) X(putc, SEND) X(fputc, SEND) X(putchar, SEND) X(getchar, RECEIVE)                  \
  X(printf, SEND) X(fprintf, SEND) X(__printf_chk, SEND) X(__fprintf_chk, SEND) X(__read_chk, RECEIVE)  \
  X(__fread_chk, RECEIVE) X(__fgets_chk, RECEIVE) X(exit, SEND) X(open64, RECEIVE) X(fclose, SEND)

/* ATOMX_SYNC_ID_read, ...: a call's number in the marks. */
enum {
#define ATOMX_SYNC_ENUM_(name, way) ATOMX_SYNC_ID_##name,
  ATOMX_SYNC_CALLS(ATOMX_SYNC_ENUM_)
#undef ATOMX_SYNC_ENUM_
  ATOMX_SYNC_COUNT
};

#endif
