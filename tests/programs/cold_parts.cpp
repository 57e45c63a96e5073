// cold_parts.cpp -- pitfall 9: functions split into hot and `.cold` parts.
//
// gcc -O2 moves unlikely blocks (__builtin_expect, calls to
// __attribute__((cold)) functions, throw paths) of a function into a
// separate piece `foo.cold` in .text.unlikely, far away from `foo`.  The two
// pieces jump into each other with ordinary relative jumps, the cold piece
// has its own FDE in .eh_frame (and call-site entries in the same LSDA), and
// jump table entries of a switch in `foo` may point into `foo.cold`.
// A rewriter that treats each symbol as a self-contained procedure, or
// assumes a jump table only targets its own function, or forgets the FDE of
// the cold piece, breaks when the cold path actually runs -- which this
// program makes it do, deterministically.
#include <cstdio>
#include <stdexcept>
#include <string>

#define NOINLINE __attribute__((noinline))

static int cold_reports;

__attribute__((cold, noinline)) static void report(const char *what, int v)
{
    cold_reports++;
    std::printf("  [cold] %s %d\n", what, v);
}

// Hot loop with an unlikely error path that rejoins the hot path.
NOINLINE long checked_sum(const int *v, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++) {
        if (__builtin_expect(v[i] < 0, 0)) {
            report("negative value at", i);
            s -= 1000;
            continue;
        }
        s += v[i];
    }
    return s;
}

// Unlikely path that throws: the throw and possibly the landing pads end up
// in the .cold piece.
struct Guard {
    const char *n;
    explicit Guard(const char *s) : n(s) {}
    ~Guard() { std::printf("  ~Guard(%s)\n", n); }
};

NOINLINE int parse_digit(char c)
{
    Guard g("parse_digit");
    if (__builtin_expect(c < '0' || c > '9', 0))
        throw std::invalid_argument(std::string("not a digit: ") + c);
    return c - '0';
}

NOINLINE int parse_number(const char *s)
{
    int v = 0;
    for (; *s; s++) {
        if (__builtin_expect(*s == '_', 0)) {
            report("skipping separator", v);
            continue;
        }
        v = v * 10 + parse_digit(*s);
    }
    return v;
}

// A switch whose rare cases call the cold function: their blocks are moved
// to dispatch.cold, so entries of dispatch's jump table point there.
NOINLINE int dispatch(int op, int x)
{
    switch (op) {
    case 0: return x + 1;
    case 1: return x * 2;
    case 2: report("rare op 2 on", x); return x - 3;
    case 3: return x ^ 0x55;
    case 4: return x << 1;
    case 5: report("rare op 5 on", x); return x / 2;
    case 6: return x % 7;
    case 7: return -x;
    case 8: report("rare op 8 on", x); throw std::out_of_range("op 8 is forbidden");
    case 9: return x * x;
    default: return 0;
    }
}

int main()
{
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    int data[] = { 5, 8, -1, 13, 21, -34, 55 };
    std::printf("checked_sum = %ld\n", checked_sum(data, 7));

    const char *inputs[] = { "1234", "9_876", "12x4", "42" };
    for (const char *in : inputs) {
        try {
            std::printf("parse_number(%s) = %d\n", in, parse_number(in));
        } catch (const std::invalid_argument &e) {
            std::printf("parse_number(%s) threw: %s\n", in, e.what());
        }
    }

    long acc = 0;
    for (int round = 0; round < 3; round++) {
        for (int op = 0; op <= 10; op++) {
            try {
                acc = acc * 3 + dispatch(op, 10 + round + op);
            } catch (const std::out_of_range &e) {
                std::printf("  dispatch threw: %s\n", e.what());
                acc += 1;
            }
            acc %= 1000003;
        }
    }
    std::printf("dispatch acc = %ld, cold reports = %d\n", acc, cold_reports);
    return cold_reports;
}
