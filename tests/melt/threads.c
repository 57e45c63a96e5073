// Planted hot loops run by several threads (tests/melt/CMakeLists.txt):
// each of THREADS threads walks its own LIST-node list WALKS times, and
// the main thread walks one of them once more after joining them.  A
// sequence's occurrences are counted in each thread's own instruction
// sequence and summed: walk's loop body repeats (THREADS * WALKS + 1) * LIST
// times.  Usage: threads THREADS LIST WALKS
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct node {
  long value;
  struct node* next;
};

static long list_length, walks;

__attribute__((noipa)) long walk(const struct node* p) {
  long s = 0;
  while (p) {
    s += p->value;
    p = p->next;
  }
  return s;
}

static void* worker(void* arg) {
  struct node* nodes = arg;
  long s = 0;
  for (long k = 0; k < walks; k++) s += walk(nodes);
  return (void*)s;
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const int threads = atoi(argv[1]);
  list_length = atol(argv[2]);
  walks = atol(argv[3]);
  pthread_t tid[16];
  struct node* lists[16];
  if (threads < 1 || threads > 16) return 2;
  for (int t = 0; t < threads; t++) {
    lists[t] = calloc((size_t)list_length, sizeof(struct node));
    if (!lists[t]) return 1;
    for (long i = 0; i < list_length; i++) {
      lists[t][i].value = (i + t) % 7;
      lists[t][i].next = i + 1 < list_length ? &lists[t][i + 1] : NULL;
    }
  }
  for (int t = 0; t < threads; t++) pthread_create(&tid[t], NULL, worker, lists[t]);
  long total = 0;
  for (int t = 0; t < threads; t++) {
    void* r;
    pthread_join(tid[t], &r);
    total += (long)r;
  }
  total += walk(lists[0]);
  printf("%ld\n", total);
  return 0;
}
