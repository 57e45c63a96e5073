#!/usr/bin/env bash
# tool.syscall.leave_out's workload (workload_vs_strace.py): thread_exit
# ended by its worker thread (run 0, left out with --leave-out-thread-ends),
# then by its main thread (run 1, compared).
"$1" quick || echo "exit $?"
"$1" join
