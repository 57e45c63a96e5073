#!/usr/bin/env bash
# wrong_events.sh ARGS...: atomx ($ATOMX_REAL) whose `atomx regen --events`
# leaves out the first event of kind $WRONG_EVENTS_DROP (fork, thread, ...),
# for events_vs_strace.py's self-test (trace.fails.events); every other
# command is atomx's own.
set -euo pipefail
for a in "$@"; do
  if [ "$a" = --events ]; then
    "${ATOMX_REAL:?}" "$@" | awk -v kind="${WRONG_EVENTS_DROP:?}" '$4 == kind && !dropped { dropped = 1; next } { print }'
    exit 0
  fi
done
exec "${ATOMX_REAL:?}" "$@"
