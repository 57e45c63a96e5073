/* wordfreq: counts the words on stdin and prints the ten most frequent.
   The bundled example that scripts/demo.sh rewrites with atomx. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry { char *word; int count; struct entry *next; };
static struct entry *table[4096];
static int distinct;

static unsigned hash(const char *s) {
  unsigned h = 5381;
  while (*s) h = h * 33 + (unsigned char)*s++;
  return h % 4096;
}

static void add(const char *w) {
  unsigned h = hash(w);
  for (struct entry *e = table[h]; e; e = e->next)
    if (strcmp(e->word, w) == 0) { e->count++; return; }
  struct entry *e = malloc(sizeof *e);
  e->word = strdup(w);
  e->count = 1;
  e->next = table[h];
  table[h] = e;
  distinct++;
}

static int by_count(const void *a, const void *b) {
  const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
  if (x->count != y->count) return y->count - x->count;
  return strcmp(x->word, y->word);
}

int main(void) {
  char word[256];
  int len = 0, c;
  while ((c = getchar()) != EOF) {
    if (isalnum(c) || c == '_') {
      if (len < 255) word[len++] = (char)c;
    } else if (len) {
      word[len] = 0;
      add(word);
      len = 0;
    }
  }
  struct entry **all = malloc(sizeof *all * (distinct ? distinct : 1));
  int n = 0;
  for (int i = 0; i < 4096; i++)
    for (struct entry *e = table[i]; e; e = e->next) all[n++] = e;
  qsort(all, n, sizeof *all, by_count);
  printf("%d distinct words\n", distinct);
  for (int i = 0; i < n && i < 10; i++) printf("%6d %s\n", all[i]->count, all[i]->word);
  return 0;
}
