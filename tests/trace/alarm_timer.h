/* What the asynchronous-signal programs of tests/trace (async_signals.c,
 * cursor_signals.c) share: a 50-microsecond interval timer whose SIGALRM
 * goes to `handler`, which may interrupt itself (SA_NODEFER), and the
 * timer stopped again. */
#ifndef ATOMX_TESTS_TRACE_ALARM_TIMER_H
#define ATOMX_TESTS_TRACE_ALARM_TIMER_H

#include <signal.h>
#include <string.h>
#include <sys/time.h>

static void start_alarm_timer(void (*handler)(int)) {
  struct sigaction act;
  memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART | SA_NODEFER;
  sigemptyset(&act.sa_mask);
  sigaction(SIGALRM, &act, NULL);
  struct itimerval every = {{0, 50}, {0, 50}};
  setitimer(ITIMER_REAL, &every, NULL);
}

static void stop_alarm_timer(void) {
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
}

#endif
