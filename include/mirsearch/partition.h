/* SPDX-License-Identifier: MIT */
/* mirsearch/partition.h - superoptimise a whole program: cut it into
 * pieces the search handles, search each (or take it from the result
 * cache), and stitch the bests into one µGraph of the whole program.
 *
 *   mirs_partition *p;
 *   mirs_partition_create(ctx, program, &p);   the cut: partition_* options read now
 *   mirs_partition_set_callbacks(p, progress, should_stop, user);
 *   mirs_partition_run(p);                      MIRS_OK also when stopped early
 *   if (!mirs_partition_stopped(p)) {
 *     const mirs_graph *best = mirs_partition_result(p);   the stitched µGraph
 *     mirs_partition_cuda(p, NULL, &cu);                    its CUDA C
 *     mirs_partition_report_json(p, &json, &len);           per-piece report
 *   }
 *   mirs_partition_destroy(p);
 *
 * Pieces (docs/PARTITION.md): connected, convex sets of the program's
 * operators that the search supports (in its space for the program:
 * named in the options kernel_ops or block_ops, or offered whenever a
 * program holds them), each at most partition_max_ops operators with
 * at most partition_max_inputs inputs and partition_max_outputs outputs,
 * and none holding an exp of an exp (no sound fingerprint).  An operator
 * the search does not handle stays as it is (a predefined kernel op: one
 * library call) and is its own piece of kind MIRS_PIECE_LIBRARY.  Each
 * piece is a program of its own: inputs named x0, x1, ... and outputs
 * y0, y1, ... in the order the whole program first uses them, so equal
 * pieces (the same layer repeated) have equal canonical hashes and share
 * cache entries.
 *
 * Every piece is searched with the context's search options (threads,
 * limits and the space: mirs_options_help) by mirs_search_run, which
 * consults the result cache when the option cache_dir is set (an empty
 * cache_dir, the library's default, means no cache; mirsearch sets it to
 * $XDG_CACHE_HOME/mirsearch unless --no-cache).  The stitched µGraph
 * keeps the program's input and output names and is verified against
 * the whole program (fingerprints at full shape with the search's bound,
 * and float64 where it fits eval_max_elements) before run returns.
 *
 * A run stopped (mirs_interrupt, should_stop, a limit) returns MIRS_OK
 * with mirs_partition_stopped(p) != 0: the pieces finished before are in
 * the cache, so running again resumes there; nothing is stitched.
 * Errors follow mirsearch/core.h. */
#ifndef MIRSEARCH_PARTITION_H
#define MIRSEARCH_PARTITION_H

#include <stdint.h>

#include "mirsearch/core.h"
#include "mirsearch/graph.h"
#include "mirsearch/search.h"
#include "mirsearch/verify.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mirs_partition mirs_partition;

/* What became of a piece. */
typedef enum mirs_piece_kind {
  MIRS_PIECE_SEARCHED = 0, /* searched in this run; its best is used */
  MIRS_PIECE_CACHED = 1,   /* served from the result cache (no search ran) */
  MIRS_PIECE_LIBRARY = 2,  /* operators the search does not handle: kept as library calls */
  MIRS_PIECE_KEPT = 3,     /* searched (or cached), but nothing beat the piece as written:
                              its operators are kept */
  MIRS_PIECE_PENDING = 4   /* not (yet) searched: the run stopped before it */
} mirs_piece_kind;

/* One piece, as mirs_partition_piece fills it.  Caller-allocated: the
 * library fills at most struct_size bytes (set it; MIRS_PIECE_INFO_INIT). */
typedef struct mirs_piece_info {
  size_t struct_size;
  mirs_piece_kind kind;
  int num_ops;             /* operators of the whole program in the piece */
  int num_inputs, num_outputs;
  uint64_t program_hash;   /* canonical hash of the piece's program */
  uint64_t best_hash;      /* canonical hash of the µGraph used (the piece's own when kept) */
  double cost_before;      /* predicted seconds of the piece as written (cost model) */
  double cost_after;       /* predicted seconds of what the stitched graph runs for it */
  double speedup;          /* cost_before / cost_after (1 for kept and library pieces) */
  int kernels;             /* kernel launches of what is used */
  int complete;            /* its search covered the whole space */
  uint64_t states_explored; /* of its search in this run (0 when cached) */
  double wall_seconds;     /* of its search in this run */
  int from_cache;          /* its results came from the cache (kind CACHED, or KEPT) */
} mirs_piece_info;
#define MIRS_PIECE_INFO_INIT {sizeof(mirs_piece_info), MIRS_PIECE_PENDING, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

/* The whole run, as mirs_partition_get_stats fills it (sized the same way). */
typedef struct mirs_partition_stats {
  size_t struct_size;
  int pieces;              /* pieces in all (library pieces included) */
  int searched, cached, library, kept, pending; /* pieces of each kind */
  double cost_before;      /* predicted seconds of the whole program as written */
  double cost_after;       /* ... of the stitched µGraph */
  double speedup;          /* cost_before / cost_after */
  int kernels;             /* kernel launches of the stitched µGraph */
  int stopped;             /* the run stopped before every piece was done */
  mirs_verify_result verify; /* the stitched µGraph against the whole program */
  uint64_t states_explored; /* summed over the pieces searched in this run */
  double wall_seconds;
} mirs_partition_stats;

/* Called after each piece is done (done of total; piece is its index). */
typedef void (*mirs_partition_progress_fn)(void *user, int piece, int done, int total);
/* Polled between pieces and during their searches: nonzero stops the run. */
typedef int (*mirs_partition_stop_fn)(void *user);

/* Cut program (copied; it may be destroyed afterwards) into pieces, with
 * the options of ctx as they are now (partition_max_ops,
 * partition_max_inputs, partition_max_outputs, and kernel_ops and
 * block_ops for what the search supports); the search options and
 * cache_dir are read by each piece's search, during mirs_partition_run.  MIRS_INVALID_ARG for a program without outputs or a bad
 * option (the message names it).  No search runs yet: the pieces can be
 * listed before mirs_partition_run. */
MIRS_API mirs_status mirs_partition_create(mirs_context *ctx, const mirs_graph *program,
                                           mirs_partition **out);
/* Install callbacks (each may be NULL) and their user pointer. */
MIRS_API mirs_status mirs_partition_set_callbacks(mirs_partition *p,
                                                  mirs_partition_progress_fn progress,
                                                  mirs_partition_stop_fn should_stop, void *user);
/* Distribute the pieces over the ranks of MPI_COMM_WORLD (after
 * mirs_mpi_init; every rank calls it, then mirs_partition_run): each rank
 * searches its share of the pieces on its own threads and rank 0 stitches
 * and holds the results.  MIRS_UNSUPPORTED when built without MPI. */
MIRS_API mirs_status mirs_partition_set_mpi(mirs_partition *p);
/* Search every piece (or take it from the cache), stitch, verify.  May be
 * called once.  MIRS_OK also when stopped (mirs_partition_stopped). */
MIRS_API mirs_status mirs_partition_run(mirs_partition *p);
/* Ask a running partition to stop (any thread, a signal handler). */
MIRS_API mirs_status mirs_partition_stop(mirs_partition *p);
/* Nonzero when the last run stopped before it was done. */
MIRS_API int mirs_partition_stopped(const mirs_partition *p);

/* The program, as given to create. */
MIRS_API const mirs_graph *mirs_partition_program(const mirs_partition *p);
/* Pieces, in the order the stitched graph runs them. */
MIRS_API int mirs_partition_num_pieces(const mirs_partition *p);
/* Piece index's summary (MIRS_INVALID_ARG on a bad index). */
MIRS_API mirs_status mirs_partition_piece(const mirs_partition *p, int index,
                                          mirs_piece_info *out);
/* Piece index as a program of its own (inputs x0.., outputs y0..); NULL
 * on a bad index.  Owned by p. */
MIRS_API const mirs_graph *mirs_partition_piece_program(const mirs_partition *p, int index);
/* The µGraph used for piece index after run (a search's best, a cached
 * one, or the piece's program when kept); NULL before run, for a pending
 * piece and on a bad index.  Owned by p. */
MIRS_API const mirs_graph *mirs_partition_piece_best(const mirs_partition *p, int index);
/* Operator j (0 <= j < num_ops) of piece index: its index among the whole
 * program's kernel ops (mirs_graph_kernel); -1 out of range. */
MIRS_API int mirs_partition_piece_op(const mirs_partition *p, int index, int j);

/* The stitched µGraph of the whole program after a run that was not
 * stopped; NULL otherwise.  Owned by p. */
MIRS_API const mirs_graph *mirs_partition_result(const mirs_partition *p);
/* The whole run's summary (after run; pieces counted before it). */
MIRS_API mirs_status mirs_partition_get_stats_sized(const mirs_partition *p,
                                                    mirs_partition_stats *out, size_t size);
#define mirs_partition_get_stats(p, out) mirs_partition_get_stats_sized((p), (out), sizeof *(out))
/* CUDA C of the stitched µGraph (mirs_codegen_cuda; entry NULL: "mirs_" +
 * the program's name), NUL-terminated from the context allocator: release
 * with mirs_free.  MIRS_INVALID_ARG when there is no stitched graph. */
MIRS_API mirs_status mirs_partition_cuda(const mirs_partition *p, const char *entry, char **text);
/* The report as JSON (what `mirsearch partition` writes as partition.json:
 * the program, each piece's operators (names of the tensors they define),
 * kind, hashes, predicted seconds before and after, speedup, and whether
 * it came from the cache; the whole program's; the verification), from
 * the context allocator: release with mirs_free. */
MIRS_API mirs_status mirs_partition_report_json(const mirs_partition *p, char **out, size_t *len);
/* The same as a table for people (one row per piece: kind, operators,
 * predicted microseconds before and after, speedup, "cache" for a piece
 * served from the cache; then the whole program's row and the verdict),
 * released the same way. */
MIRS_API mirs_status mirs_partition_report_table(const mirs_partition *p, char **out,
                                                 size_t *len);
/* Release p and everything it owns (NULL is a no-op). */
MIRS_API void mirs_partition_destroy(mirs_partition *p);

/* ---------------------------------------------------------------- result cache
 *
 * mirs_search_run consults it when the option cache_dir names a
 * directory: an entry is keyed by the program's canonical text (its hash
 * names the file), the search options the results depend on, the device
 * profile's numbers and the mirsearch version (docs/PARTITION.md).  Only
 * complete searches are stored.  A hit is verified again (fingerprints at
 * full shape, float64) like results found by a search; a damaged or
 * foreign entry is ignored with a warning.  Entries are written to a temp
 * file in the same directory, synced and renamed, so concurrent writers
 * leave a valid cache. */

/* The directory mirsearch uses by default: $XDG_CACHE_HOME/mirsearch, else
 * $HOME/.cache/mirsearch (not created here).  MIRS_NOT_FOUND when neither
 * variable is set, MIRS_INVALID_ARG when buf is too small. */
MIRS_API mirs_status mirs_cache_default_dir(char *buf, size_t size);
/* Whether the last mirs_search_run of s was served from the cache (1),
 * searched and stored (2), searched and not stored (0: no cache, an
 * incomplete search, or a write that failed with a warning). */
MIRS_API int mirs_search_cache_status(const mirs_search *s);

#ifdef __cplusplus
}
#endif
#endif
