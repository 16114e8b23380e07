/* The stop signals of a long command (classify): SIGINT, SIGTERM and SIGHUP are taken by a
   thread of their own (sigtimedwait), not by a handler, so that what they start may lock,
   flush and print.

   - The first signal is a request to stop: the hooks' `request` runs (classify: its rows
     flushed, ttp_cancel on the pipeline) and the command ends after the files in flight.
   - A signal of the same kind within STOP_SAME_SECONDS of the first is the same request and
     does nothing more: `timeout` signals the command and then its process group, Slurm every
     process of a step, mpirun forwards what the terminal sent to its ranks too.
   - Any other signal after the first is a second request: the hooks' `halt` runs, which ends
     the process at the next row boundary (classify: its rows flushed, its summary printed,
     _exit(128 + the signal)); with no hooks set, the process ends at once.
   - Between signals, the hooks' `tick` runs about every STOP_TICK_SECONDS (classify flushes
     its rows: a SIGKILL loses at most the last tick's).
   A signal ignored when the command started stays ignored (nohup's SIGHUP, a background job's
   SIGINT). cli_stop_start must be called before any thread is made (MPI, the library's
   workers, CUDA's), so that every thread inherits the mask that leaves the signals to the
   stop thread. */
#ifndef TTP_CLI_STOP_H
#define TTP_CLI_STOP_H

#define STOP_SAME_SECONDS 1.0
#define STOP_TICK_SECONDS 0.5

typedef struct cli_stop_hooks {
  void (*request)(void* user, int sig); /* the first signal */
  void (*halt)(void* user, int sig, int first); /* a second request (first: the first signal):
                                                    must end the process */
  void (*tick)(void* user);
  void* user;
} cli_stop_hooks;

/* Blocks the stop signals in the calling thread (and so in every thread it makes from now on)
   and starts the stop thread. Returns 0, or -1 when the thread cannot start (the signals then
   keep their usual effect). */
int cli_stop_start(void);

/* The hooks from now on (NULL: none). Waits for a hook that is running to return, so that
   after cli_stop_hooks(NULL) none runs. */
void cli_stop_hooks_set(const cli_stop_hooks* hooks);

/* The first stop signal received so far, or 0. */
int cli_stop_signal(void);

/* Ends the stop thread, as the command ends: the signals stay blocked, and one that comes
   from now on is dropped when the process exits. */
void cli_stop_end(void);

/* "SIGINT", "SIGTERM", "SIGHUP", or "a signal". */
const char* cli_signal_name(int sig);

#endif
