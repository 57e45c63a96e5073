#!/usr/bin/env bash
# tool.io.any_descriptor's workload (workload_vs_strace.py): deleted.c twice,
# the second time with descriptor 3 taken, so its file is fd 3, then fd 4.
"$1"
"$1" 3</dev/null
