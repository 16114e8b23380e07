/* The stop signals, taken by a thread of their own: see stop.h. */
#include "stop.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
enum { STOP_SIGNALS = sizeof stop_signals / sizeof stop_signals[0] };

/* One per process, as signals are. */
static struct {
  pthread_mutex_t lock; /* guards what follows; held while a hook runs */
  cli_stop_hooks hooks;
  int has_hooks;
  int first;       /* the first signal taken, 0 before */
  double first_at; /* when, in seconds of CLOCK_MONOTONIC */
  sigset_t taken;  /* the signals the thread waits for */
  pthread_t thread;
  int running;
} stop = {.lock = PTHREAD_MUTEX_INITIALIZER};

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

const char* cli_signal_name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP"
                                                                               : "a signal";
}

/* A signal taken, the lock held. */
static void on_signal(int sig) {
  const double t = now_seconds();
  if (!stop.first) {
    stop.first = sig, stop.first_at = t;
    if (stop.has_hooks && stop.hooks.request) stop.hooks.request(stop.hooks.user, sig);
    return;
  }
  if (sig == stop.first && t - stop.first_at <= STOP_SAME_SECONDS) return; /* the same request */
  if (stop.has_hooks && stop.hooks.halt) stop.hooks.halt(stop.hooks.user, sig, stop.first);
  fprintf(stderr, "ttapipe: stopped by %s after %s\n", cli_signal_name(sig),
          cli_signal_name(stop.first));
  _exit(128 + sig);
}

static void* stop_thread(void* arg) {
  (void)arg;
  const long tick_ns = (long)(STOP_TICK_SECONDS * 1e9);
  for (;;) {
    /* Cancellable only while it waits: never while it holds the lock or a hook runs. */
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
    const struct timespec tick = {tick_ns / 1000000000L, tick_ns % 1000000000L};
    const int sig = sigtimedwait(&stop.taken, NULL, &tick);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_mutex_lock(&stop.lock);
    if (sig > 0)
      on_signal(sig);
    else if (stop.has_hooks && stop.hooks.tick)
      stop.hooks.tick(stop.hooks.user);
    pthread_mutex_unlock(&stop.lock);
  }
  return NULL;
}

int cli_stop_start(void) {
  sigemptyset(&stop.taken);
  for (int i = 0; i < STOP_SIGNALS; i++) {
    struct sigaction now;
    if (sigaction(stop_signals[i], NULL, &now) == 0 && now.sa_handler != SIG_IGN)
      sigaddset(&stop.taken, stop_signals[i]);
  }
  sigset_t before;
  pthread_sigmask(SIG_BLOCK, &stop.taken, &before);
  if (pthread_create(&stop.thread, NULL, stop_thread, NULL) != 0) {
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    return -1;
  }
  stop.running = 1;
  return 0;
}

void cli_stop_hooks_set(const cli_stop_hooks* hooks) {
  pthread_mutex_lock(&stop.lock);
  stop.has_hooks = hooks != NULL;
  if (hooks) stop.hooks = *hooks;
  pthread_mutex_unlock(&stop.lock);
}

int cli_stop_signal(void) {
  pthread_mutex_lock(&stop.lock);
  const int sig = stop.first;
  pthread_mutex_unlock(&stop.lock);
  return sig;
}

void cli_stop_end(void) {
  if (!stop.running) return;
  pthread_cancel(stop.thread);
  pthread_join(stop.thread, NULL);
  stop.running = 0;
  stop.has_hooks = 0;
  /* The signals stay blocked: the command is ending, with its own status and summary, and one
     that comes now (two of other kinds 1 ms apart, the second after the first request had
     stopped the run) is dropped at the exit. */
}
