/* Where analysis outputs go: the directory template of `atomx run
 * --output-dir` and of $ATOMX_OUTPUT_DIR, in Valgrind's conventions
 * (--log-file, --callgrind-out-file):
 *   %p        the process id (each process of the run gets its own directory)
 *   %q{VAR}   the value of the environment variable VAR
 *   %%        a %
 * Any other % is an error.  The one expansion: the runtime uses it for
 * AtomxOutputPath (runtime/analysis/analysis.c), atomx run to check the
 * template and to find the files afterwards (src/driver/Run.cpp). */
#ifndef ATOMX_OUTPUT_DIR_H
#define ATOMX_OUTPUT_DIR_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Expands `tmpl` into out[size] with `pid` (its text) for %p.  Returns the
 * length, or -1 for a bad % (then *bad points at it), -2 for a %q{VAR}
 * whose VAR is not set (*bad at it), -3 when out is too small.
 * *hasPid is set when the template contains %p. */
static inline int atomx_expand_output_dir(const char *tmpl, const char *pid, char *out, size_t size,
                                          const char **bad, int *hasPid) {
  size_t n = 0;
  *hasPid = 0;
  for (const char *s = tmpl; *s; s++) {
    const char *piece = s;
    size_t len = 1;
    if (*s == '%') {
      if (s[1] == '%') {
        s++;
      } else if (s[1] == 'p') {
        piece = pid, len = strlen(pid), s++, *hasPid = 1;
      } else if (s[1] == 'q' && s[2] == '{' && strchr(s + 3, '}')) {
        const char *end = strchr(s + 3, '}');
        char var[256];
        if ((size_t)(end - (s + 3)) >= sizeof var || end == s + 3) {
          *bad = s;
          return -1;
        }
        memcpy(var, s + 3, (size_t)(end - (s + 3)));
        var[end - (s + 3)] = 0;
        piece = getenv(var);
        if (!piece) {
          *bad = s;
          return -2;
        }
        len = strlen(piece), s = end;
      } else {
        *bad = s;
        return -1;
      }
    }
    if (n + len >= size) return -3;
    memcpy(out + n, piece, len);
    n += len;
  }
  if (n >= size) return -3;
  out[n] = 0;
  return (int)n;
}

#endif
