/* dijkstra: shortest paths in a dense graph, with the priority queue kept
   as a linked list that enqueue() appends to by walking to its tail, in the
   style of MiBench's network/dijkstra (written for atomx).  The worked
   example of docs/melting.md: `atomx melt` finds the walk in enqueue's loop.
   Usage: dijkstra [PAIRS]  (default 20 source/destination pairs)
   Prints each pair's shortest distance and path, then, on stderr, how many
   times enqueue's loop stepped along the queue. */
#include <stdio.h>
#include <stdlib.h>

#define NUM_NODES 100
#define NONE 9999

struct qitem {
  int node, dist, prev;
  struct qitem *next;
};

static int adj[NUM_NODES][NUM_NODES];
static struct {
  int dist, prev;
} rgn[NUM_NODES];
static struct qitem *head;
static int qcount;
static long steps; /* enqueue's walk along the queue, for the tests */

static void enqueue(int node, int dist, int prev) {
  struct qitem *item = malloc(sizeof *item);
  struct qitem *last = head;
  if (!item) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  item->node = node;
  item->dist = dist;
  item->prev = prev;
  item->next = NULL;
  qcount++;
  if (!last) {
    head = item;
  } else {
    while (last->next) {
      last = last->next;
      steps++;
    }
    last->next = item;
  }
}

static void dequeue(int *node, int *dist, int *prev) {
  struct qitem *kill = head;
  if (head) {
    *node = head->node;
    *dist = head->dist;
    *prev = head->prev;
    head = head->next;
    free(kill);
    qcount--;
  }
}

static void print_path(int node) {
  if (rgn[node].prev != NONE) print_path(rgn[node].prev);
  printf(" %d", node);
}

static int dijkstra(int start, int end) {
  for (int i = 0; i < NUM_NODES; i++) {
    rgn[i].dist = NONE;
    rgn[i].prev = NONE;
  }
  if (start == end) return 0;
  rgn[start].dist = 0;
  rgn[start].prev = NONE;
  enqueue(start, 0, NONE);
  while (qcount > 0) {
    int node, dist, prev;
    dequeue(&node, &dist, &prev);
    for (int i = 0; i < NUM_NODES; i++) {
      int cost = adj[node][i];
      if (cost != NONE && (rgn[i].dist == NONE || rgn[i].dist > cost + dist)) {
        rgn[i].dist = dist + cost;
        rgn[i].prev = node;
        enqueue(i, dist + cost, node);
      }
    }
  }
  return rgn[end].dist;
}

int main(int argc, char **argv) {
  int pairs = argc > 1 ? atoi(argv[1]) : 20;
  unsigned seed = 12345;
  /* A dense graph with pseudo-random weights (a fixed LCG: the same graph
     every run); about one edge in ten is missing. */
  for (int i = 0; i < NUM_NODES; i++)
    for (int j = 0; j < NUM_NODES; j++) {
      seed = seed * 1103515245u + 12345u;
      int w = (int)(seed >> 16) % 100;
      adj[i][j] = i == j ? 0 : w < 10 ? NONE : w;
    }
  for (int k = 0; k < pairs; k++) {
    int start = k % NUM_NODES, end = (k + NUM_NODES / 2) % NUM_NODES;
    int d = dijkstra(start, end);
    printf("path %d -> %d: distance %d:", start, end, d);
    print_path(end);
    printf("\n");
  }
  fprintf(stderr, "enqueue stepped %ld times\n", steps);
  return 0;
}
