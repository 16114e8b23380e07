/* classify as one rank of an MPI job: see job.h. */
#include "job.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rows.h"

#ifdef TTAPIPE_MPI
#include <limits.h>
#include <mpi.h>

void cli_job_start(cli_job* job) {
  *job = (cli_job){0, 1, 0, 0};
  /* Open MPI's mpirun, or a PMI/PMIx launcher such as srun. */
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_RANK")) return;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) return;
  job->mpi = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &job->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &job->size);
  MPI_Comm local;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, job->rank, MPI_INFO_NULL,
                          &local) == MPI_SUCCESS) {
    MPI_Comm_rank(local, &job->local_rank);
    MPI_Comm_free(&local);
  }
}

void cli_job_end(cli_job* job) {
  if (job->mpi) MPI_Finalize();
  job->mpi = 0;
}

int cli_job_all_ok(const cli_job* job, int ok) {
  if (job->size == 1) return ok;
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all;
}

int cli_job_gather_rows(const cli_job* job, const char* text, size_t n, FILE* out,
                        const char* out_name) {
  /* Sizes first (an output over 2 GiB a rank is refused: MPI counts are ints). */
  long long mine = (long long)n;
  long long* sizes = job->rank == 0 ? calloc((size_t)job->size, sizeof *sizes) : NULL;
  MPI_Gather(&mine, 1, MPI_LONG_LONG, sizes, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  int fits = n < INT_MAX, all_fit = 0;
  MPI_Allreduce(&fits, &all_fit, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!all_fit) {
    free(sizes);
    return job->rank == 0 ? cli_fail("a rank's output is over 2 GiB: use --shard and merge")
                          : CLI_EXIT_FATAL;
  }
  int* counts = NULL;
  int* offsets = NULL;
  char* all = NULL;
  size_t total = 0;
  int rc = CLI_EXIT_OK;
  if (job->rank == 0) {
    counts = calloc((size_t)job->size, sizeof *counts);
    offsets = calloc((size_t)job->size, sizeof *offsets);
    for (int r = 0; r < job->size; r++) total += (size_t)sizes[r];
    all = malloc(total ? total : 1);
    if (!counts || !offsets || !all || total >= INT_MAX) rc = CLI_EXIT_FATAL;
    for (int r = 0, at = 0; rc == CLI_EXIT_OK && r < job->size; r++)
      counts[r] = (int)sizes[r], offsets[r] = at, at += counts[r];
  }
  int ok = cli_job_all_ok(job, rc == CLI_EXIT_OK);
  if (ok)
    MPI_Gatherv(text, (int)n, MPI_CHAR, all, counts, offsets, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (job->rank == 0) {
    if (!ok) {
      rc = cli_fail("the ranks' outputs (%zu bytes) do not fit in memory or in MPI's counts: "
                    "use --shard and merge", total);
    } else {
      char** texts = calloc((size_t)job->size, sizeof *texts);
      size_t* lens = calloc((size_t)job->size, sizeof *lens);
      char(*names)[32] = calloc((size_t)job->size, sizeof *names);
      const char** name_ptrs = calloc((size_t)job->size, sizeof *name_ptrs);
      if (!texts || !lens || !names || !name_ptrs) {
        rc = cli_fail("out of memory");
      } else {
        for (int r = 0; r < job->size; r++) {
          texts[r] = all + offsets[r], lens[r] = (size_t)counts[r];
          snprintf(names[r], sizeof names[r], "rank %d's rows", r);
          name_ptrs[r] = names[r];
        }
        rc = cli_deal_rows(texts, lens, name_ptrs, job->size, out, out_name);
      }
      free(texts), free(lens), free(names), free(name_ptrs);
    }
  }
  free(sizes), free(counts), free(offsets), free(all);
  return rc;
}

void cli_job_sum(const cli_job* job, double* values, int count) {
  if (job->size == 1) return;
  double* sums = malloc((size_t)count * sizeof *sums);
  if (!sums) return;
  MPI_Reduce(values, sums, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (job->rank == 0) memcpy(values, sums, (size_t)count * sizeof *sums);
  free(sums);
}

void cli_job_gather_double(const cli_job* job, double value, double* all) {
  if (job->size == 1) {
    all[0] = value;
    return;
  }
  MPI_Gather(&value, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}

#else /* without MPI: always one rank, and classify never gathers (finish_job is for more) */

void cli_job_start(cli_job* job) { *job = (cli_job){0, 1, 0, 0}; }
void cli_job_end(cli_job* job) { (void)job; }
int cli_job_all_ok(const cli_job* job, int ok) {
  (void)job;
  return ok;
}
int cli_job_gather_rows(const cli_job* job, const char* text, size_t n, FILE* out,
                        const char* out_name) {
  (void)job, (void)text, (void)n, (void)out, (void)out_name;
  return cli_fail("internal: rows gathered without MPI");
}
void cli_job_sum(const cli_job* job, double* values, int count) { (void)job, (void)values, (void)count; }
void cli_job_gather_double(const cli_job* job, double value, double* all) {
  (void)job;
  all[0] = value;
}

#endif
