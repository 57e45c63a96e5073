#!/usr/bin/env bash
# tool.malloc.argv0's workload: allocs, and allocs refusing an argument, which
# names it by its argv[0] (as getopt does): under callgrind that is the
# checker's copy of the program, not the wrapper's path.
set -u
"$1" 2
"$1" 2 extra || echo "exit $?"
