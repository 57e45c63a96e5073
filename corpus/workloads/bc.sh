#!/usr/bin/env bash
# bc workload (C, single-threaded, linked with libreadline and libtinfo):
# arbitrary-precision arithmetic in lib/number.c (pi, e, logs, roots and
# Bessel functions from the -l math library, a 1000-digit factorial,
# conversions to other bases), the bytecode interpreter in execute.c
# (recursion, arrays by value and by reference, auto variables, loops with
# break/continue), the yacc/flex parser on files and stdin, and its error
# paths: syntax errors, runtime errors (divide by zero, negative square
# root, undefined function), POSIX-mode (-s) and warning-mode (-w)
# complaints, a missing file, a bad option. One session runs with -i, which
# sends a piped stdin through readline (with an inputrc written here) and
# its history.
# Usage: bc.sh BINARY   (cwd: an empty scratch directory)
. "$(dirname "$0")/_common.sh"
B=$1

# -- the main script: CPU-bound, most of the run time ----------------------
cat >main.bc <<'EOF'
/* constants to many digits with the math library (-l) */
scale = 900
p = 4*a(1)
p
scale = 500
e(1)
l(2)
scale = 1500
sqrt(2)
scale = 300
s(1) + c(1)
j(2, 3.5)
scale = 0

define fact(n) {
  if (n < 2) return (1)
  return (n * fact(n - 1))
}
fact(1000)
length(fact(450))

define fib(n) {
  if (n < 2) return (n)
  return (fib(n - 1) + fib(n - 2))
}
fib(21)

/* a sieve in an array */
define sieve(n) {
  auto i, j, c
  for (i = 2; i <= n; i++) s[i] = 1
  for (i = 2; i * i <= n; i++) {
    if (s[i] == 0) continue
    for (j = i * i; j <= n; j += i) s[j] = 0
  }
  c = 0
  for (i = 2; i <= n; i++) if (s[i]) c += 1
  return (c)
}
sieve(6000)

/* arrays: by value (a copy) and by reference (*a, a GNU extension) */
define sumv(a[], n) { auto i, t; for (i = 0; i < n; i++) { t += a[i]; a[i] = 0 }; return (t) }
define void fillr(*a[], n) { auto i; for (i = 0; i < n; i++) a[i] = i ^ 3 }
fillr(q[], 40)
sumv(q[], 40)
q[39]

/* the Collatz walk, with while, break and a string print */
define collatz(n) {
  auto k
  while (1) {
    if (n == 1) break
    if (n % 2) n = 3 * n + 1 else n /= 2
    k += 1
  }
  return (k)
}
m = 0
for (i = 1; i < 1200; i++) { t = collatz(i); if (t > m) { m = t; w = i } }
print "longest Collatz walk below 1200: ", w, " (", m, " steps)\n"

/* bases */
obase = 16
2 ^ 300
obase = 7
-123456789012345678901234567890
obase = 1000
fact(60)
obase = 10
ibase = 16
FFFFFFFFFFFFFFFF + 1
ibase = A
ibase = 2
1011011101111
ibase = 1010

/* scale, negative powers, modulus, last */
scale = 40
1 / 7
2 ^ -10
scale = 0
-17 % 5
scale = 6
-17.5 % 4
scale(3.14159)
length(123.4500)
.
last * 2
scale = 20
x = 100; while (x > 1) x = sqrt(x); x
print "e(-3)=", e(-3), "\tl(10)=", l(10), "\n"
limits
EOF

run "main" "$B" -l main.bc </dev/null >main.out

# -- the same script with long lines (BC_LINE_LENGTH) and BC_ENV_ARGS -------
run "line length 0" env BC_LINE_LENGTH=0 "$B" -l -q main.bc </dev/null >main.nowrap.out
run "line length 30 + env args" env BC_LINE_LENGTH=30 BC_ENV_ARGS="-q -l" "$B" <<'EOF'
scale = 120
a(1) * 4
x = sqrt(3)
x
EOF

# -- stdin, -q, several files in a row -------------------------------------
printf 'define sq(x) { return (x * x) }\n' >lib1.bc
printf 'sq(12345678987654321)\nsq(sq(99))\n' >use.bc
run "two files" "$B" -q lib1.bc use.bc </dev/null
run "files then stdin" "$B" -q lib1.bc <<'EOF'
sq(7) + sq(8)
scale = 10; 22 / 7
quit
never reached
EOF
run "stdin only" "$B" <<'EOF'
z = 2 ^ 512
z
z % 1000007
halt
EOF

# -- read() takes numbers from stdin while a file runs ---------------------
printf 'n = read(); m = read(); n * m; n ^ 5\n' >read.bc
run "read()" "$B" -q read.bc <<'EOF'
31415926
27182818
EOF

# -- error paths -----------------------------------------------------------
run "syntax error" "$B" -q <<'EOF'
1 + 2
3 + * 4
5 * 6
if (1 { print "no" }
7 * 8
define f(x) { return (x + }
9 * 9
EOF
run "divide by zero" "$B" -q <<'EOF'
1 / 0
define g(x) { return (10 % x) }
g(0)
scale = 5; 2 ^ -1 / (3 - 3)
print "still running\n"
EOF
run "runtime errors" "$B" -l -q <<'EOF'
sqrt(-4)
nosuch(3)
a[-1] = 2
l(-1)
ibase = 40
obase = 1
print "after the errors\n"
EOF
cat >posix.bc <<'EOF'
x = 3
x += 4
print "gnu print\n"
define long_name(x) { return (x) }
long_name(1)
if (x > 1) x else 0
x == 7 && 1
last
EOF
run "posix -s" "$B" -s posix.bc </dev/null
run "warnings -w" "$B" -w posix.bc </dev/null
run "missing file" "$B" no-such-file.bc </dev/null
run "bad option" "$B" --no-such-option </dev/null
run "help" "$B" --help </dev/null
run "version" "$B" --version </dev/null

# -- -i: a piped stdin read through readline (echoed, with history) --------
cat >inputrc <<'EOF'
set bell-style none
set enable-bracketed-paste off
set editing-mode emacs
"\C-xq": "quit\n"
EOF
run "interactive" env TERM=dumb INPUTRC=inputrc "$B" -i -q -l <<'EOF'
scale = 50
4 * a(1)
x = 3; y = 4
sqrt(x^2 + y^2)

1 / 0
x * y
quit
EOF
