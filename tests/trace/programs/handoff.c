/* Threads that hand work to each other the two ways a fallback schedule
 * must order (tests/trace/merge_oracle.py; docs/trace.md, "Ordering
 * threads and processes"):
 *   - a producer writes RECORDS numbered 16-byte records to a pipe, one
 *     write each (atomic: under PIPE_BUF), and a consumer reads them back,
 *     16 bytes a read, so the k-th read returns the k-th write's record;
 *     the consumer acknowledges every other record through a second pipe,
 *     which the producer waits for, so that the two interleave;
 *   - two threads take TICKETS tickets each from a counter under a mutex
 *     (take_ticket, called with it held), and the program keeps its own
 *     record of who took each.
 * With `fork`, the producer is a process of its own (forked before any
 * thread: the records cross processes).  ORDER_FILE gets the record: a
 * line `TID` per ticket, in ticket order, then `producer TID` (the forked
 * producer's pid) and `consumer TID`.  Exits 1 if a record came back
 * wrong. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define RECORDS 64
#define TICKETS 100

static int fds[2], acks[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned counter;
static long taker[2 * TICKETS];
static long producerTid, consumerTid;
static volatile unsigned sink;

struct record {
  uint64_t number, check;
};

__attribute__((noinline)) static void send_record(uint64_t k) {
  struct record r = {k, k * 2654435761u};
  if (write(fds[1], &r, sizeof r) != sizeof r) exit(1);
}

__attribute__((noinline)) static int receive_record(uint64_t k) {
  struct record r;
  if (read(fds[0], &r, sizeof r) != sizeof r) return 0;
  return r.number == k && r.check == k * 2654435761u;
}

static void *producer(void *arg) {
  (void)arg;
  producerTid = syscall(SYS_gettid);
  for (uint64_t k = 0; k < RECORDS; k++) {
    for (unsigned i = 0; i < (unsigned)(k % 7) * 50; i++) sink += i; /* some work between writes */
    send_record(k);
    char ack;
    if (k % 2 == 1 && read(acks[0], &ack, 1) != 1) exit(1);
  }
  return NULL;
}

static void *consumer(void *arg) {
  (void)arg;
  consumerTid = syscall(SYS_gettid);
  for (uint64_t k = 0; k < RECORDS; k++) {
    if (!receive_record(k)) exit(1);
    if (k % 2 == 1 && write(acks[1], "a", 1) != 1) exit(1);
  }
  return NULL;
}

/* Called with the lock held: the ticket's taker, in the program's record. */
__attribute__((noinline)) static void take_ticket(long tid) { taker[counter++] = tid; }

static pthread_barrier_t start; /* the two takers begin together */

static void *ticket_taker(void *arg) {
  const long tid = syscall(SYS_gettid);
  pthread_barrier_wait(&start);
  for (unsigned k = 0; k < TICKETS; k++) {
    for (unsigned i = 0; i < (k * 37 + (unsigned)(uintptr_t)arg * 11) % 300; i++) sink += i;
    pthread_mutex_lock(&lock);
    take_ticket(tid);
    pthread_mutex_unlock(&lock);
    sched_yield(); /* the other taker's turn, as often as not */
  }
  return NULL;
}

int main(int argc, char **argv) {
  const int forked = argc == 3 && strcmp(argv[2], "fork") == 0;
  if (argc != 2 && !forked) {
    fprintf(stderr, "usage: handoff ORDER_FILE [fork]\n");
    return 2;
  }
  if (pipe(fds) != 0 || pipe(acks) != 0) return 1;
  /* Locked while the process has one thread: calls the recorder leaves
   * unmarked (include/atomx/sync_calls.h, THREADS). */
  pthread_mutex_lock(&lock);
  counter = 0;
  pthread_mutex_unlock(&lock);
  pthread_barrier_init(&start, NULL, 2);
  pthread_t t[4];
  pid_t child = 0;
  if (forked) { /* the producer is a process of its own, forked before any thread */
    child = fork();
    if (child < 0) return 1;
    if (child == 0) {
      producer(NULL);
      _exit(0);
    }
    producerTid = child;
  } else {
    pthread_create(&t[0], NULL, producer, NULL);
  }
  pthread_create(&t[1], NULL, consumer, NULL);
  pthread_create(&t[2], NULL, ticket_taker, (void *)1);
  pthread_create(&t[3], NULL, ticket_taker, (void *)2);
  for (int i = forked; i < 4; i++) pthread_join(t[i], NULL);
  int status;
  if (forked && (waitpid(child, &status, 0) != child || status != 0)) return 1;
  FILE *f = fopen(argv[1], "w");
  if (!f) return 1;
  for (unsigned k = 0; k < counter; k++) fprintf(f, "%ld\n", taker[k]);
  fprintf(f, "producer %ld\nconsumer %ld\n", producerTid, consumerTid);
  fclose(f);
  printf("%u tickets, %d records\n", counter, RECORDS);
  return 0;
}
