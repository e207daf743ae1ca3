/* The CPU a 100 Hz wake-up costs the woken thread (thread CPU clock per wake-up) and how late
 * it wakes, with timer slack 1 ns / 50 us (the default) / 0.5 ms / 2 ms (clock_nanosleep to an
 * absolute deadline) and with a periodic timerfd, 3 rounds interleaved: whether letting the
 * kernel batch the timer with others makes a wake-up cheaper.
 * Build: gcc -O2 -o /tmp/proc_wake_slack docs/bench/proc_wake_slack.c; run: /tmp/proc_wake_slack [SECONDS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static double ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  int secs = argc > 1 ? atoi(argv[1]) : 2;
  long slack[] = {1, 50000, 500000, 2000000};
  for (int round = 0; round < 3; round++)
    for (int way = 0; way < 5; way++) {
      int ticks = secs * 100, tfd = -1;
      double late = 0, worst = 0;
      prctl(PR_SET_TIMERSLACK, way < 4 ? slack[way] : 50000, 0, 0, 0);
      struct timespec next;
      clock_gettime(CLOCK_MONOTONIC, &next);
      if (way == 4) {
        tfd = timerfd_create(CLOCK_MONOTONIC, 0);
        struct itimerspec its = {{0, 10000000}, {0, 10000000}};
        timerfd_settime(tfd, 0, &its, NULL);
      }
      double c0 = ns(CLOCK_THREAD_CPUTIME_ID);
      for (int s = 0; s < ticks; s++) {
        next.tv_nsec += 10000000;
        if (next.tv_nsec >= 1000000000) { next.tv_nsec -= 1000000000; next.tv_sec++; }
        if (way < 4) {
          clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
          double l = ns(CLOCK_MONOTONIC) - (next.tv_sec * 1e9 + next.tv_nsec);
          late += l;
          if (l > worst) worst = l;
        } else {
          uint64_t x;
          if (read(tfd, &x, 8) != 8) return 1;
        }
      }
      double per = (ns(CLOCK_THREAD_CPUTIME_ID) - c0) / ticks / 1000;
      if (tfd >= 0) close(tfd);
      if (way < 4)
        printf("round %d clock_nanosleep, slack %7ld ns: %5.1f us CPU per wake-up, late mean %4.0f us, worst %5.0f us\n",
               round, slack[way], per, late / ticks / 1000, worst / 1000);
      else
        printf("round %d timerfd (periodic):            %5.1f us CPU per wake-up\n", round, per);
    }
  return 0;
}
