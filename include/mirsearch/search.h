/* SPDX-License-Identifier: MIT */
/* mirsearch/search.h - superoptimise a tensor program: search the µGraphs
 * that compute the same function, verify them, rank them by cost.
 *
 *   mirs_search *s;
 *   mirs_search_create(ctx, program, &s);      options are read from ctx now
 *   mirs_search_set_callbacks(s, progress, on_result, should_stop, user);
 *   mirs_search_run(s);                         MIRS_OK also when stopped early
 *   if (mirs_search_stopped(s)) mirs_search_checkpoint(s, "search.ckpt");
 *   for (int i = 0; i < mirs_search_num_results(s); i++)
 *     use(mirs_search_result(s, i), mirs_search_result_cost(s, i));
 *   mirs_search_destroy(s);
 *
 * Results are verified graphs, deduplicated by canonical hash and sorted
 * by (predicted seconds, hash); each names its outputs like the program,
 * so mirs_graph_eval of a result and of the program compare output by
 * output.  The space, its limits (max_states, time_limit, max_memory) and
 * pruning are options (mirs_options_help; names in src/core/options.def).
 * A search stopped by a limit or by should_stop returns MIRS_OK with the
 * results so far and stats.complete = 0.  Errors follow mirsearch/core.h. */
#ifndef MIRSEARCH_SEARCH_H
#define MIRSEARCH_SEARCH_H

#include <stdint.h>

#include "mirsearch/core.h"
#include "mirsearch/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mirs_search mirs_search;

/* Statistics of a search (sums over its workers). */
typedef struct mirs_search_stats {
  /* Bytes of this struct the library filled (at most what the caller
   * passed: mirs_search_get_stats passes sizeof for you), so the struct
   * can grow at its end without breaking programs built against an older
   * header. */
  size_t struct_size;
  uint64_t states_explored; /* partial graphs entered */
  uint64_t candidates_verified; /* complete candidates compared by fingerprints */
  uint64_t graphs_found; /* verified graphs with a new canonical hash */
  uint64_t prune_calls; /* abstract-expression checks */
  uint64_t prune_cache_hits; /* checks answered by the verdict cache */
  uint64_t solver_calls; /* checks sent to Z3 */
  double wall_seconds;
  double solver_seconds; /* time spent in Z3 (summed over workers) */
  int complete; /* 1 when the whole space was searched */
  /* Fingerprint trials per candidate, and log2 of the false-accept bound
   * every result meets (the option verify_log2_bound): a result whose
   * degree needs more trials was verified again with them. */
  int fingerprint_trials;
  double log2_false_accept_bound;
} mirs_search_stats;

/* Called now and then during mirs_search_run. */
typedef void (*mirs_search_progress_fn)(void *user, const mirs_search_stats *stats);
/* Called for each new verified graph (owned by the search; cost in
 * predicted seconds). */
typedef void (*mirs_search_result_fn)(void *user, const mirs_graph *graph, double cost);
/* Polled during the search: nonzero stops it (cleanly, complete = 0). */
typedef int (*mirs_search_stop_fn)(void *user);

/* Prepare a search for program (copied; it may be destroyed afterwards).
 * MIRS_INVALID_ARG for a bad search option (the message names it) or a
 * program without outputs, MIRS_UNSUPPORTED when the program cannot be
 * fingerprinted (an exp of an exp); with the option verify=gpu, the GPU
 * backend's error (MIRS_NO_DEVICE, or MIRS_UNSUPPORTED without CUDA)
 * when it cannot be used. */
MIRS_API mirs_status mirs_search_create(mirs_context *ctx, const mirs_graph *program,
                                        mirs_search **out);
/* Install callbacks (each may be NULL) and their user pointer. */
MIRS_API mirs_status mirs_search_set_callbacks(mirs_search *s, mirs_search_progress_fn progress,
                                               mirs_search_result_fn on_result,
                                               mirs_search_stop_fn should_stop, void *user);
/* Search; may be called once per search object. */
MIRS_API mirs_status mirs_search_run(mirs_search *s);
/* Results, best first (index in [0, count)); NULL / NaN / 0 when out of range. */
MIRS_API int mirs_search_num_results(const mirs_search *s);
MIRS_API const mirs_graph *mirs_search_result(const mirs_search *s, int index);
MIRS_API double mirs_search_result_cost(const mirs_search *s, int index);
MIRS_API uint64_t mirs_search_result_hash(const mirs_search *s, int index);
/* Kernel launches of result index. */
MIRS_API int mirs_search_result_kernels(const mirs_search *s, int index);
/* File name mirsearch gives result index in its candidates/ directory:
 * "RANK-HASH.ugraph", RANK 1-based and zero-padded to four digits. */
MIRS_API mirs_status mirs_search_result_file_name(const mirs_search *s, int index, char *buf,
                                                  size_t size);
/* Statistics so far: fills at most size bytes of *out (the macro passes
 * sizeof *out, so a program built against an older header stays safe). */
MIRS_API mirs_status mirs_search_get_stats_sized(const mirs_search *s, mirs_search_stats *out,
                                                 size_t size);
#define mirs_search_get_stats(s, out) mirs_search_get_stats_sized((s), (out), sizeof *(out))

/* The search's report as JSON (the report.json that `mirsearch` writes:
 * statistics, the device, non-default options, the unfused program's
 * predicted time, results grouped by equal cost with each result's
 * kernels: grid, block, forloop range, shared memory, predicted time).
 * At most top results are listed (0: all); each result's "file" is
 * "candidates/RANK-HASH.ugraph" as mirsearch names them.  NUL-terminated
 * text from the context allocator: release with mirs_free. */
MIRS_API mirs_status mirs_search_report_json(const mirs_search *s, int top, char **out,
                                             size_t *len);
/* ---- measured ranking (docs/GPU.md).
 * After a run, time the model's first top results on GPU 0 (top <= 0:
 * the option measure_top), each compiled and checked against the float64
 * interpreter of the program first (mirs_codegen_rank); the fastest
 * checked one becomes the best (mirs_search_best), and the report gives
 * both times, the rank correlation and "times": "measured".  Without a
 * GPU or a CUDA build nothing is timed: MIRS_OK, the model's order stays
 * and the report says why ("measurement": {"skipped": ...}).  A result
 * whose harness fails (mirs_codegen_rank_all) is not timed, and the
 * others are: MIRS_OK, and mirs_search_result_measure_error says why.
 * The time_limit option, counted from the run's start, covers the
 * measurement too: at that deadline the results not yet timed are left
 * untimed (their error says so) and the times taken stand.
 * Other errors (a stop request, no memory) are returned, and the model's
 * order stays.  Results, their order and their files do not change. */
MIRS_API mirs_status mirs_search_measure(mirs_search *s, int top);
/* The index of the best result: the measured fastest after
 * mirs_search_measure timed them, else 0 (the model's). -1: no result. */
MIRS_API int mirs_search_best(const mirs_search *s);
/* How many results mirs_search_measure timed (0: none), and result
 * index's median time in microseconds (NAN: not timed, or wrong). */
MIRS_API int mirs_search_measured(const mirs_search *s);
MIRS_API double mirs_search_result_measured_us(const mirs_search *s, int index);
/* Why result index was not timed by the last mirs_search_measure: its
 * harness failed (the error), or the time limit came first.  Valid until
 * the next measurement or the search's destruction; NULL where it was
 * timed (or checked and found wrong), or was not among those measured. */
MIRS_API const char *mirs_search_result_measure_error(const mirs_search *s, int index);
/* ---- threads, stopping, checkpoints.
 * mirs_search_run runs on the option `threads` workers (0: the CPUs this
 * process may use); the results, their order and every result graph's
 * text are the same for any number of threads and across checkpoint and
 * resume.  Callbacks: progress and should_stop are called only from the
 * thread that called mirs_search_run; on_result from whichever worker
 * thread found the result, one call at a time; the context's allocator
 * and log callback from any worker thread (log messages one at a time). */

/* Ask a running search to stop at its next node boundary (run then
 * returns MIRS_OK with complete = 0 and the open work kept).  Callable
 * from any thread and from a signal handler. */
MIRS_API mirs_status mirs_search_stop(mirs_search *s);
/* Why a run stopped before it searched the whole space, from
 * mirsearch/stop.def: MIRS_STOP_TIME, MIRS_STOP_MEMORY, MIRS_STOP_STATES
 * (the limits), MIRS_STOP_INTERRUPT, MIRS_STOP_CALLER, MIRS_STOP_FAILURE;
 * MIRS_STOP_NONE when it did not stop. */
typedef enum mirs_stop {
#define MIRS_STOP(name, reason, log) MIRS_STOP_##name,
#include "mirsearch/stop.def"
#undef MIRS_STOP
  MIRS_STOP_COUNT
} mirs_stop;
/* Why the last run did not search the whole space (MIRS_STOP_NONE when it
 * did, or has not run). */
MIRS_API mirs_stop mirs_search_stop_why(const mirs_search *s);
/* The same as text: "the time limit", "the memory limit", "the state
 * limit", "an interrupt (mirs_interrupt)", "the caller (mirs_search_stop
 * or should_stop)" or "a failure"; "" when it did (or has not run).  A
 * static string. */
MIRS_API const char *mirs_search_stop_reason(const mirs_search *s);
/* Nonzero when the last run stopped before it finished: with open work,
 * or with the whole space explored but its final verification cut short
 * (a checkpoint of it resumes; then only that verification runs). */
MIRS_API int mirs_search_stopped(const mirs_search *s);
/* Worker threads the last run used. */
MIRS_API int mirs_search_threads(const mirs_search *s);
/* Write s's checkpoint (results found, open work, counters) to path
 * atomically (temp file, fsync, rename); after a run, or from a callback
 * is not allowed.  MIRS_INVALID_ARG after a run served from the result
 * cache (mirs_search_cache_status 1: nothing was searched). */
MIRS_API mirs_status mirs_search_checkpoint(mirs_search *s, const char *path);
/* While running, also write a checkpoint to path every
 * `checkpoint_interval` seconds (option; 0 = never); NULL turns it off. */
MIRS_API mirs_status mirs_search_set_checkpoint(mirs_search *s, const char *path);

/* Distributed search over MPI (docs/DISTRIBUTED.md).  A library built
 * without MPI returns MIRS_UNSUPPORTED ("built without MPI") from
 * mirs_mpi_init and mirs_search_set_mpi.
 *
 * mirs_mpi_init initialises MPI (MPI_THREAD_FUNNELED) unless the caller
 * already has, and gives this process's rank and the number of ranks.
 * mirs_search_set_mpi (every rank, after create and, on rank 0 only, a
 * resume; before run) is collective over MPI_COMM_WORLD (it duplicates
 * it): every rank calls it at the same point, so a failure on one rank
 * before it must be agreed on first (mirs_mpi_agree), as the mirsearch
 * program does.  It makes mirs_search_run one search over all ranks of
 * MPI_COMM_WORLD: each rank runs its thread pool, idle ranks steal work,
 * and when the search ends or stops, rank 0 holds every result and all
 * open work (the same results as one process; write outputs and
 * checkpoints there).  Other ranks end with no results and no open work.
 * Option max_states is refused (MIRS_UNSUPPORTED).  The calling thread
 * must be the one that initialised MPI.
 * mirs_mpi_agree (every rank at once) returns rank 0's value where it is
 * not 0, else the largest value any rank gave: an exit status all ranks
 * agree on.
 * mirs_search_mpi_stats copies at most n of this rank's protocol counters
 * (steal requests, steals served, steals answered empty, lifeline pushes,
 * tasks sent, tasks received, verdicts sent, verdicts received, tokens
 * started) into out and returns how many there are (0: not distributed). */
MIRS_API mirs_status mirs_mpi_init(mirs_context *ctx, int *rank, int *nranks);
MIRS_API mirs_status mirs_search_set_mpi(mirs_search *s);
MIRS_API int mirs_mpi_agree(int value);
MIRS_API void mirs_mpi_finalize(void);
MIRS_API int mirs_search_mpi_stats(const mirs_search *s, uint64_t *out, int n);
/* Before the run: continue the search a checkpoint recorded.  The search
 * must be created for the same program with the same search options.
 * MIRS_INVALID_ARG, with a message naming the file and the mismatch, for
 * a file that is damaged, truncated, of another format or mirsearch
 * version, or written for another program or other options. */
MIRS_API mirs_status mirs_search_resume(mirs_search *s, const char *path);
/* The program a checkpoint was written for (a new graph in ctx), and its
 * search options set in ctx; an option ctx already sets to another value
 * is refused (MIRS_INVALID_ARG), as mirs_search_resume would. */
MIRS_API mirs_status mirs_checkpoint_load_program(mirs_context *ctx, const char *path,
                                                  mirs_graph **program);
/* Release the search and its results (NULL is a no-op). */
MIRS_API void mirs_search_destroy(mirs_search *s);

#ifdef __cplusplus
}
#endif
#endif
