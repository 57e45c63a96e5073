#!/usr/bin/env bash
# Fake rewriter for testing the workloads' determinism: OUT is a wrapper
# script that runs (a copy of) IN pinned to one CPU, with the same argv[0].
# A workload that passes with it does not depend on thread scheduling.
# Usage: pin-one-cpu.sh IN -o OUT
set -euo pipefail
[[ ${2:-} == -o && $# -eq 3 ]] || { echo "usage: $0 IN -o OUT" >&2; exit 2; }
cp "$1" "$3.orig"
cat >"$3" <<WRAP
#!/usr/bin/env bash
exec taskset -c 0 bash -c 'exec -a "\$0" "$3.orig" "\$@"' "\$0" "\$@"
WRAP
chmod +x "$3"
