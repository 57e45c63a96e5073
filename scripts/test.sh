#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds atomx and runs every test:
# unit tests and the pitfall programs (ctest), then the real-program corpus
# rewritten with the null tool in check mode (--poison-original).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
if [ -x corpus/build.sh ] && [ -x corpus/check.sh ]; then
  corpus/build.sh
  corpus/check.sh -- "$PWD/build/bin/atomx" --poison-original
fi
