#!/usr/bin/env bash
# run_fuzz.sh [SECONDS]
#
# Builds tests/fuzz/elf_reader_fuzz with clang (-fsanitize=fuzzer,address,
# undefined) in its own build directory, seeds a corpus with a few small real
# executables and fuzzes for SECONDS (default 60).  A crash, a sanitizer
# report, a timeout or an out-of-memory leaves the input in
# $BUILD/artifacts/ and makes this script exit non-zero.
#
# Environment:
#   ATOMX_FUZZ_BUILD  build directory   (default: <repo>/build-fuzz)
#   ATOMX_FUZZ_JOBS   parallel fuzzing processes (default 1; >1 uses -fork)
#   ATOMX_FUZZ_ARGS   extra libFuzzer flags, e.g. "-max_len=65536"
set -euo pipefail

SECONDS_TO_FUZZ=${1:-60}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=${ATOMX_FUZZ_BUILD:-$REPO/build-fuzz}
JOBS=${ATOMX_FUZZ_JOBS:-1}
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)

# libFuzzer's runtime (libclang_rt.fuzzer) is in Debian's libclang-rt-14-dev.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe/p.cpp"
if ! clang++ -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" 2>/dev/null; then
  echo "run_fuzz.sh: clang cannot link -fsanitize=fuzzer; installing libclang-rt-14-dev" >&2
  "$REPO/scripts/apt_install.sh" libclang-rt-14-dev
  clang++ -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p"
fi

CC=clang CXX=clang++ cmake -S "$HERE" -B "$BUILD" -DATOMX_FUZZ=ON >/dev/null
cmake --build "$BUILD" --target elf_reader_fuzz -j"$(nproc)"
FUZZER=$BUILD/bin/elf_reader_fuzz

# Seeds: tiny programs linked the way atomx wants (--emit-relocs), in a few
# shapes (PIE and not, a jump table, C++ exceptions), plus a stripped system
# binary.  -z noseparate-code keeps them small (~10 KB), which fuzzes faster.
CORPUS=$BUILD/corpus
ARTIFACTS=$BUILD/artifacts
mkdir -p "$CORPUS" "$ARTIFACTS"
cat >"$probe/hello.c" <<'EOF'
#include <stdio.h>
static int square(int x) { return x * x; }
int main(int argc, char **argv) { printf("%d %s\n", square(argc), argv[0]); return 0; }
EOF
cat >"$probe/switch.c" <<'EOF'
#include <stdio.h>
typedef int (*fn)(int);
static int add1(int x) { return x + 1; }
static int dbl(int x) { return x * 2; }
fn table[] = {add1, dbl};
int classify(int c) {
  switch (c) {
    case 0: return 7; case 1: return 9; case 2: return 4; case 3: return 1;
    case 4: return 8; case 5: return 3; default: return -1;
  }
}
int main(int argc, char **argv) { printf("%d\n", table[argc & 1](classify(argc))); return 0; }
EOF
cat >"$probe/throw.cpp" <<'EOF'
#include <cstdio>
#include <stdexcept>
static void may_throw(int n) { if (n > 1) throw std::runtime_error("many"); }
int main(int argc, char **) {
  try { may_throw(argc); } catch (const std::exception& e) { std::puts(e.what()); return 1; }
  return 0;
}
EOF
LINK="-Wl,--emit-relocs -Wl,-z,noseparate-code"
gcc -O2 $LINK "$probe/hello.c" -o "$CORPUS/seed-hello-pie"
gcc -O0 $LINK "$probe/hello.c" -o "$CORPUS/seed-hello-O0"
gcc -O2 -fno-pie -no-pie $LINK "$probe/switch.c" -o "$CORPUS/seed-switch-nopie"
clang -O2 $LINK "$probe/switch.c" -o "$CORPUS/seed-switch-clang" || true
g++ -O2 $LINK "$probe/throw.cpp" -o "$CORPUS/seed-throw" || true
cp /bin/true "$CORPUS/seed-bin-true"

echo "run_fuzz.sh: fuzzing for ${SECONDS_TO_FUZZ}s with $JOBS job(s); corpus $CORPUS" >&2
args=(-max_total_time="$SECONDS_TO_FUZZ" -timeout=20 -rss_limit_mb=2560 -print_final_stats=1
      -artifact_prefix="$ARTIFACTS/")
[ "$JOBS" -gt 1 ] && args+=(-fork="$JOBS")
# shellcheck disable=SC2206
args+=(${ATOMX_FUZZ_ARGS:-})
status=0
"$FUZZER" "${args[@]}" "$CORPUS" || status=$?
if [ "$status" -ne 0 ]; then
  echo "run_fuzz.sh: the fuzzer found a problem (status $status); inputs in $ARTIFACTS:" >&2
  ls -l "$ARTIFACTS" >&2
  echo "reproduce with: $FUZZER $ARTIFACTS/<file>" >&2
fi
exit "$status"
