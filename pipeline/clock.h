/* Seconds on a monotonic clock, for the library's own timings (stage times, profiling). */
#ifndef TTP_CLOCK_H
#define TTP_CLOCK_H

#include <time.h>

static inline double clock_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
