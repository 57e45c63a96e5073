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
 * Each entry: the function's name, which way it synchronises, and
 * whether it is marked ALWAYS or only while the process has other THREADS.
 * The ways:
 *   SEND     its effect another thread or process can observe happens
 *            inside the call, and nothing it waits for: the call is
 *            ordered at its entry (write: the bytes a reader will read;
 *            unlock: the lock another thread takes; create: the thread that
 *            starts; kill: the signal another process gets);
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
 *     barrier, spin lock, semaphore and thread create and join calls (the
 *     only way a program without its own atomics orders threads).  The
 *     mutex, rwlock, spin lock and condition variable calls are marked only
 *     once the process has more than one thread (THREADS below: a
 *     single-threaded sqlite3 locks and unlocks a mutex 780,000 times in
 *     its benchmark workload, and those marks tripled its trace; a
 *     process-shared one in memory shared between processes is then not
 *     ordered); the semaphores, often shared between processes, always;
 *   - stdio that does I/O (its buffer is flushed through write, or filled
 *     through read, inside the call): fread, fwrite, fflush, fgets, fputs,
 *     puts, getc, fgetc, putc, fputc, putchar, getchar, printf, fprintf and
 *     their _chk forms (fortified builds call those);
 * fork, vfork and exec are not here: the recorder hooks them already and
 * their order is the event log's (fork, forked; docs/trace.md).  Nor are
 * exit and pthread_exit: what waits for them (wait, join) returns after
 * them, which orders everything before them already; and a wrapper's frame
 * would move the stack of the handlers and destructors they run (a data
 * trace's references there, trace.cachesim.refsim.gzip's
 * __do_global_dtors_aux). */
#ifndef ATOMX_SYNC_CALLS_H
#define ATOMX_SYNC_CALLS_H

#define ATOMX_SYNC_SEND 1
#define ATOMX_SYNC_RECEIVE 2
#define ATOMX_SYNC_ALWAYS 0
#define ATOMX_SYNC_THREADS 1

#define ATOMX_SYNC_CALLS(X)                                                                                     \
  X(read, RECEIVE, ALWAYS) X(write, SEND, ALWAYS) X(readv, RECEIVE, ALWAYS) X(writev, SEND, ALWAYS)             \
  X(pread, RECEIVE, ALWAYS) X(pwrite, SEND, ALWAYS) X(pread64, RECEIVE, ALWAYS) X(pwrite64, SEND, ALWAYS)       \
  X(recv, RECEIVE, ALWAYS) X(recvfrom, RECEIVE, ALWAYS) X(recvmsg, RECEIVE, ALWAYS) X(send, SEND, ALWAYS)       \
  X(sendto, SEND, ALWAYS) X(sendmsg, SEND, ALWAYS) X(accept, RECEIVE, ALWAYS) X(accept4, RECEIVE, ALWAYS)       \
  X(connect, RECEIVE, ALWAYS) X(poll, RECEIVE, ALWAYS) X(select, RECEIVE, ALWAYS)                               \
  X(epoll_wait, RECEIVE, ALWAYS) X(pipe, RECEIVE, ALWAYS) X(pipe2, RECEIVE, ALWAYS) X(open, RECEIVE, ALWAYS)    \
  X(close, SEND, ALWAYS) X(kill, SEND, ALWAYS) X(raise, SEND, ALWAYS) X(wait, RECEIVE, ALWAYS)                  \
  X(waitpid, RECEIVE, ALWAYS) X(nanosleep, RECEIVE, ALWAYS) X(sleep, RECEIVE, ALWAYS)                           \
  X(usleep, RECEIVE, ALWAYS) X(sched_yield, RECEIVE, ALWAYS) X(pthread_mutex_lock, RECEIVE, THREADS)            \
  X(pthread_mutex_trylock, RECEIVE, THREADS) X(pthread_mutex_unlock, SEND, THREADS)                             \
  X(pthread_cond_wait, RECEIVE, THREADS) X(pthread_cond_timedwait, RECEIVE, THREADS)                            \
  X(pthread_cond_signal, SEND, THREADS) X(pthread_cond_broadcast, SEND, THREADS)                                \
  X(pthread_rwlock_rdlock, RECEIVE, THREADS) X(pthread_rwlock_wrlock, RECEIVE, THREADS)                         \
  X(pthread_rwlock_unlock, SEND, THREADS) X(pthread_barrier_wait, RECEIVE, ALWAYS)                              \
  X(pthread_spin_lock, RECEIVE, THREADS) X(pthread_spin_unlock, SEND, THREADS) X(sem_wait, RECEIVE, ALWAYS)     \
  X(sem_post, SEND, ALWAYS) X(pthread_create, SEND, ALWAYS) X(pthread_join, RECEIVE, ALWAYS)                    \
  X(fread, RECEIVE, ALWAYS) X(fwrite, SEND, ALWAYS) X(fflush, SEND, ALWAYS)       \
  X(fgets, RECEIVE, ALWAYS) X(fputs, SEND, ALWAYS) X(puts, SEND, ALWAYS) X(getc, RECEIVE, ALWAYS)               \
  X(fgetc, RECEIVE, ALWAYS) X(putc, SEND, ALWAYS) X(fputc, SEND, ALWAYS) X(putchar, SEND, ALWAYS)               \
  X(getchar, RECEIVE, ALWAYS) X(printf, SEND, ALWAYS) X(fprintf, SEND, ALWAYS) X(__printf_chk, SEND, ALWAYS)    \
  X(__fprintf_chk, SEND, ALWAYS) X(__read_chk, RECEIVE, ALWAYS) X(__fread_chk, RECEIVE, ALWAYS)                 \
  X(__fgets_chk, RECEIVE, ALWAYS) X(open64, RECEIVE, ALWAYS) X(fclose, SEND, ALWAYS)

/* ATOMX_SYNC_ID_read, ...: a call's number in the marks. */
enum {
#define ATOMX_SYNC_ENUM_(name, way, when) ATOMX_SYNC_ID_##name,
  ATOMX_SYNC_CALLS(ATOMX_SYNC_ENUM_)
#undef ATOMX_SYNC_ENUM_
  ATOMX_SYNC_COUNT
};

#endif
