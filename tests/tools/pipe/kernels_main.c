// Driver of kernels.S: calls each kernel a fixed number of times (the
// counts expected_stalls.py expects).
#include <stdio.h>
#include <stdlib.h>

long k_independent(long), k_load_use(long*), k_mul_chain(long, long), k_div(unsigned long, unsigned long);
long k_loop(long, long*), k_chase(void**), k_flags(long*, long), k_stack(long), k_branchy(long, long*);
double k_fp(double*, double, double, double);  // %xmm1, %xmm2: the last two

static void* cells[4];

int main(int argc, char** argv) {
  const long reps = argc > 1 ? atol(argv[1]) : 1000;  // the test uses 1000
  cells[0] = &cells[1], cells[1] = &cells[2], cells[2] = &cells[3], cells[3] = cells;
  long* data = calloc(reps / 10 + 8, sizeof(long));
  for (long k = 0; k < reps / 10 + 8; ++k) data[k] = k;
  long sum = 0;
  double x = 2.0, fsum = 0;
  for (long r = 0; r < reps; ++r) {
    sum += k_independent(r) + k_load_use(&data[r % 8]) + k_mul_chain(r, 3) + k_div(r + 100, 7);
    sum += (long)k_chase(cells) & 1;
    sum += k_flags(&data[5], r % 10) + k_stack(r);
    fsum += k_fp(&x, 0.0, 1.0, 3.0);
    sum += k_branchy(r % 4 == 0 ? -r - 1 : r, &data[3]);  // negative a quarter of the time
  }
  for (int k = 0; k < 10; ++k) sum += k_loop(reps / 10, data);  // the loop body runs reps times
  printf("%ld %.3f\n", sum, fsum);
  return 0;
}
