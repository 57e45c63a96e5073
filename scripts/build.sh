#!/usr/bin/env bash
# Configures and builds atomx into build/ (the tool is build/bin/atomx).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=${ATOMX_BUILD_TYPE:-RelWithDebInfo} >/dev/null
cmake --build build -j"$(nproc)"
