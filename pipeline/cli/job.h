/* classify as one of the ranks of an MPI job (`mpirun -n N ttapipe classify ...`, `srun`): the
   ranks take the sorted list's files in turn (rank r: files r, r + N, ...), each classifies its
   own (into its part file of the output as the rows are done, or into memory without -o:
   cmd_classify.c), and rank 0 deals the rows back into the one output a single process would
   write (rows.h) and prints the summary summed over the ranks, with each rank's time. Built
   with Open MPI where CMake finds it (TTAPIPE_MPI); without, or outside a launcher, a job is
   one rank. */
#ifndef TTP_CLI_JOB_H
#define TTP_CLI_JOB_H

#include <stddef.h>
#include <stdio.h>

typedef struct cli_job {
  int rank, size; /* 0 and 1 outside an MPI launch */
  int mpi;        /* MPI_Init was called */
  int local_rank; /* the rank among those of its machine (0 outside MPI): its GPU by default */
} cli_job;

/* Starts MPI when the process was launched by mpirun or srun (their environment says so). */
void cli_job_start(cli_job* job);
void cli_job_end(cli_job* job);

/* Whether every rank's ok is true (a collective: every rank calls it). */
int cli_job_all_ok(const cli_job* job, int ok);

/* Every rank's output (text, n bytes) to rank 0, which deals the rows back into out. Returns
   CLI_EXIT_OK, or CLI_EXIT_FATAL on rank 0 after printing why. A collective. */
int cli_job_gather_rows(const cli_job* job, const char* text, size_t n, FILE* out,
                        const char* out_name);

/* values[0..count-1] summed over the ranks, into rank 0's (a collective). */
void cli_job_sum(const cli_job* job, double* values, int count);

/* Every rank's value, into all[0..size-1] on rank 0 (a collective). */
void cli_job_gather_double(const cli_job* job, double value, double* all);

#endif
