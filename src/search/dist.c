/* SPDX-License-Identifier: MIT */
/* src/search/dist.c - the distributed search (--mpi): the pool's protocol
 * between processes.  The only file that includes mpi.h; built without
 * MPI, mirs_mpi_init says so and nothing else here runs.
 *
 * Each rank runs the thread pool (pool.c) on its share of the tasks; only
 * the pool's thread 0 calls MPI (MPI_THREAD_FUNNELED), from its poll
 * (mirs__dist_poll, every few states, and in a loop while the rank is
 * idle) and after the pool has stopped (mirs__dist_finish).  See
 * docs/DISTRIBUTED.md.
 *
 * Work stealing.  An idle rank sends a steal request to a random victim;
 * the victim answers with a batch of its oldest (shallowest) queued tasks,
 * or one range split off its running task, or nothing.  After RANDOM_TRIES
 * empty answers the rank registers with its lifeline buddies (hypercube
 * neighbours rank ^ 2^k) and asks nobody any more; a buddy that has work
 * pushes a batch to every rank registered with it.  So an idle machine
 * sends a bounded number of requests, not a storm.
 *
 * Termination: Safra's algorithm (EWD998) over work messages (those that
 * carry tasks), with the token's round made a wave on a binary tree
 * (parent (r-1)/2, children 2r+1 and 2r+2): 2 log2 P hops instead of the
 * ring's P (0.4 s per round at 1,024 ranks, docs/SCALING.md).  Each rank
 * counts work messages sent minus received and turns black on receiving
 * one.  Rank 0, passive (no task queued or running in its pool), starts a
 * wave: WAVE goes down the tree at once; a rank answers its parent when
 * it is passive and its children have answered, with the sum of its
 * count and theirs and the OR of the colours, and turns white.  Rank 0
 * declares termination when the wave comes back white to a white passive
 * rank 0 with a sum of zero: no rank works and no task is in flight.
 * Safra's invariant is about the set of ranks already visited in a round,
 * not about the order of the visits, so it holds for the tree as for the
 * ring.  DONE goes down the same tree.
 *
 * Stops.  A rank whose search halts (signal, time limit, error) sends STOP
 * to every rank; a rank that receives STOP halts its pool too.  A halted
 * rank keeps its open work (and any task that still arrives) in s->open,
 * never gives work away and counts as passive, so the same token detects
 * when every rank has stopped and nothing is in flight.
 *
 * Idle ranks.  A rank with no work polls continuously (yielding the CPU
 * between polls) for IDLE_SPIN seconds after its last work or message,
 * then naps IDLE_NAP between polls: a steal answer or a wave crosses an
 * idle rank in microseconds, not a nap, while a rank idle for long costs
 * little CPU.
 *
 * Shutdown.  Every message sent is counted per destination; after DONE,
 * an all-to-all of those counts tells each rank how many messages it must
 * still receive, it drains them (sending nothing more), so no message and
 * no send request is left at MPI_Finalize.  Then each rank sends rank 0
 * its results (hash, accepted, smallest path, cost and graph text), open
 * tasks and counters; rank 0 takes them as sent (mirs__sink_adopt: the
 * sink keeps each hash's smallest path and that instance's graph), so its
 * result list is the one a single process finds, without searching again.
 * The results are verified at full shape at the end on rank 0, as a
 * single process does (no rank verifies a new best when it finds it:
 * sink.c's early_verify).
 *
 * Verdicts.  The pruning cache logs the verdicts Z3 decided on this rank
 * (mirs__prune_log_*); thread 0 sends the new ones to every other rank in
 * bounded batches (at most VERDICT_BATCH words, at most every
 * VERDICT_EVERY seconds), which put them into their caches.
 *
 * Messages are raw bytes in the host's byte order (the ranks run the same
 * build on one kind of machine). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include "search/search.h"
#include "search/wire.h"

#ifdef HAVE_MPI
#include <mpi.h>

/* Random steal requests before an idle rank waits on its lifelines (4:
 * the scaling model gives 48.6% at 1,024 ranks on mha against 31.5% with
 * 2, and 80.1% against 78.8% on the cluster-sized mha search; bench/
 * RESULTS.md, "Scaling model, third protocol"). */
#define RANDOM_TRIES 4
/* Most queued tasks sent in one batch. */
#define STEAL_BATCH 8
/* Most verdict words in one message, and seconds between batches. */
#define VERDICT_BATCH 4096
#define VERDICT_EVERY 0.005
/* Nanoseconds an idle rank sleeps between polls, once it has been idle
 * for IDLE_SPIN seconds (before that it polls continuously). */
#define IDLE_NAP 200000
#define IDLE_SPIN 0.1

enum { TAG_STEAL = 1, TAG_WORK, TAG_WAVE, TAG_WAVE_UP, TAG_STOP, TAG_DONE, TAG_VERDICT };

/* The counters (mpi_counters.def): CTR_name indexes mirs__dist.ctr. */
enum {
#define MIRS_MPI_STAT(name)
#define MIRS_MPI_COUNTER(name, row) CTR_##name,
#include "search/mpi_counters.def"
#undef MIRS_MPI_COUNTER
#undef MIRS_MPI_STAT
  NCTR
};
/* Per rank, in report.json's "mpi" list. */
static const char *const cols[] = {
#define MIRS_MPI_STAT(name) #name,
#define MIRS_MPI_COUNTER(name, row) ROW_##row(#name)
#define ROW_0(x)
#define ROW_1(x) x,
#include "search/mpi_counters.def"
#undef MIRS_MPI_COUNTER
#undef MIRS_MPI_STAT
};
#define NCOLS (sizeof cols / sizeof *cols)

/* A message being sent (its buffer lives until the send completes). */
typedef struct outmsg {
  MPI_Request req;
  void *buf;
} outmsg;

struct mirs__dist {
  mirs_search *s;
  MPI_Comm comm;
  int rank, size;
  uint64_t rng;
  /* Safra's termination detection, on the tree. */
  int64_t count; /* work messages sent minus received */
  bool black;
  bool wave_on;  /* a wave has reached this rank (rank 0: started) and is not answered */
  int wave_wait; /* children yet to answer this wave */
  int64_t wave_q;
  bool wave_black;
  bool terminated;
  double active; /* when this rank last had work or a message (idle spin) */
  /* Stealing. */
  bool asking; /* a random steal request is unanswered */
  int fails;   /* empty answers since the last work */
  bool lifelines_set;
  bool *waiting; /* ranks registered on this one as their lifeline */
  /* Stops. */
  bool stop_sent;
  /* Messages per peer (shutdown drain). */
  int64_t *sent, *recvd;
  outmsg *out;
  size_t nout, capout;
  /* Verdicts. */
  size_t vsent;
  double vlast;
  /* Counters (report.json "mpi"). */
  uint64_t ctr[NCTR];
  mirs_status failed; /* the first error of this rank's protocol */
  uint64_t (*rows)[NCOLS]; /* rank 0, after the search: every rank's row */
};

/* ---------------------------------------------------------------- messages */

/* Start sending n bytes of buf to dest (copied). */
static void post(mirs__dist *d, int dest, int tag, const void *buf, size_t n) {
  if (d->failed != MIRS_OK)
    return;
  mirs_context *ctx = d->s->ctx;
  /* Completed sends first: their buffers are freed, their slots reused. */
  for (size_t i = 0; i < d->nout;) {
    int flag = 0;
    MPI_Test(&d->out[i].req, &flag, MPI_STATUS_IGNORE);
    if (flag) {
      mirs__core_free(ctx, d->out[i].buf);
      d->out[i] = d->out[--d->nout];
    } else {
      i++;
    }
  }
  void *copy = mirs__core_alloc(ctx, n ? n : 1);
  if (!copy || mirs__core_grow(ctx, (void **)&d->out, &d->capout, d->nout + 1, sizeof *d->out) !=
                   MIRS_OK) {
    mirs__core_free(ctx, copy);
    d->failed = MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (an MPI message)");
    return;
  }
  if (n)
    memcpy(copy, buf, n);
  outmsg *m = &d->out[d->nout++];
  m->buf = copy;
  MPI_Isend(copy, (int)n, MPI_BYTE, dest, tag, d->comm, &m->req);
  d->sent[dest]++;
}

/* ---------------------------------------------------------------- the protocol */

static bool halted(const mirs__dist *d) {
  return (atomic_load(&d->s->halt) & ~MIRS__HALT_CHECKPOINT) != 0;
}

/* Halt this rank's search (a STOP from another rank, or an error). */
static void halt_search(mirs_search *s, int bits, int why) {
  int none = MIRS_STOP_NONE;
  atomic_compare_exchange_strong(&s->halt_why, &none, why);
  atomic_fetch_or(&s->halt, bits);
}

/* Send a batch of work to dest (flag 1: the answer to its steal
 * request); false when there was nothing to send. */
static bool send_work(mirs__dist *d, mirs__pool *p, mirs__search_worker *w, int dest, bool reply) {
  mirs_context *ctx = d->s->ctx;
  mirs__buf b;
  mirs__buf_init(&b, ctx);
  uint32_t n = 0;
  mirs__wire_put_u32(&b, reply);
  mirs__wire_put_u32(&b, 0); /* the count, set below */
  if (p && !halted(d)) {
    /* The oldest queued tasks, else a range split off the running task.
     * A rank keeps its last task: one that has just received a single
     * task and no worker has started it yet would otherwise hand it on to
     * the next thief, and two idle ranks could pass one task back and
     * forth while neither runs it (found by bench/glbsim). */
    mirs__task *t;
    while (n < STEAL_BATCH && mirs__pool_pending(p) > 1 &&
           (t = mirs__pool_give(p, NULL)) != NULL) {
      mirs__wire_put_task(&b, t);
      mirs__task_free(ctx, t);
      n++;
    }
    if (n == 0 && w && (t = mirs__pool_give(p, w)) != NULL) {
      mirs__wire_put_task(&b, t);
      mirs__task_free(ctx, t);
      n++;
    }
  }
  if (b.failed) {
    /* The tasks are lost to this rank: a failure, which stops the search. */
    d->failed = MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (tasks for another rank)");
    halt_search(d->s, MIRS__HALT_ERROR, MIRS_STOP_FAILURE);
    mirs__buf_free(&b);
    return false;
  }
  memcpy(b.data + sizeof(uint32_t), &n, sizeof n);
  if (n || reply)
    post(d, dest, TAG_WORK, b.data, b.len);
  mirs__buf_free(&b);
  if (n) {
    d->count++;
    d->ctr[CTR_tasks_sent] += n;
  }
  return n > 0;
}

/* A wave reaches this rank (rank 0: starts there): sent on to the
 * children, answered once they have answered and this rank is passive. */
static void start_wave(mirs__dist *d) {
  d->wave_on = true;
  d->wave_q = 0;
  d->wave_black = false;
  d->wave_wait = 0;
  for (int c = 2 * d->rank + 1; c <= 2 * d->rank + 2 && c < d->size; c++) {
    post(d, c, TAG_WAVE, NULL, 0);
    d->wave_wait++;
  }
}

/* Handle one received message. */
static void handle(mirs__dist *d, mirs__pool *p, mirs__search_worker *w, int src, int tag,
                   const unsigned char *buf, size_t n) {
  mirs_search *s = d->s;
  mirs_context *ctx = s->ctx;
  mirs__wire_reader r = {buf, n, 0, false};
  switch (tag) {
  case TAG_STEAL:
    if (mirs__wire_get_u32(&r)) { /* a lifeline registration */
      d->waiting[src] = true;
    } else if (send_work(d, p, w, src, true)) {
      d->ctr[CTR_steals_served]++;
    } else {
      d->ctr[CTR_steals_empty]++;
    }
    break;
  case TAG_WORK: {
    bool reply = mirs__wire_get_u32(&r) != 0;
    uint32_t k = mirs__wire_get_u32(&r);
    if (reply)
      d->asking = false;
    if (k == 0) {
      if (reply)
        d->fails++;
      break;
    }
    d->count--;
    d->black = true;
    d->fails = 0;
    d->lifelines_set = false;
    if (!reply)
      d->ctr[CTR_lifeline_pushes]++;
    for (uint32_t i = 0; i < k; i++) {
      mirs__task *t = mirs__wire_get_task(ctx, &r);
      if (!t)
        break;
      d->ctr[CTR_tasks_received]++;
      /* Into the pool, or kept as open work once the pool has stopped. */
      if (!p || mirs__pool_take(p, t) != MIRS_OK) {
        t->next = s->open;
        s->open = t;
      }
    }
    if (r.bad) {
      d->failed = MIRS_FAIL(ctx, MIRS_INTERNAL, "a malformed work message from rank %d", src);
      halt_search(s, MIRS__HALT_ERROR, MIRS_STOP_FAILURE);
    }
    break;
  }
  case TAG_WAVE: /* from the parent: down to the children at once */
    start_wave(d);
    break;
  case TAG_WAVE_UP:
    d->wave_q += (int64_t)mirs__wire_get_u64(&r);
    d->wave_black = d->wave_black || mirs__wire_get_u32(&r) != 0;
    d->wave_wait--;
    break;
  case TAG_STOP: {
    int why = (int)mirs__wire_get_u32(&r);
    halt_search(s, MIRS__HALT_USER, why > 0 && why < MIRS_STOP_COUNT ? why : MIRS_STOP_CALLER);
    d->stop_sent = true; /* every rank has its own STOP from the sender */
    break;
  }
  case TAG_DONE:
    if (!d->terminated)
      for (int c = 2 * d->rank + 1; c <= 2 * d->rank + 2 && c < d->size; c++)
        post(d, c, TAG_DONE, NULL, 0);
    d->terminated = true;
    break;
  case TAG_VERDICT:
    for (size_t i = 0; i < n / sizeof(uint64_t); i++) {
      mirs__prune_log_put(s->prune, mirs__wire_get_u64(&r));
      d->ctr[CTR_verdicts_received]++;
    }
    break;
  default:
    break;
  }
}

/* Receive and handle every message that has arrived. */
static void receive(mirs__dist *d, mirs__pool *p, mirs__search_worker *w) {
  for (;;) {
    int flag = 0;
    MPI_Status ms;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, d->comm, &flag, &ms);
    if (!flag)
      return;
    int n = 0;
    MPI_Get_count(&ms, MPI_BYTE, &n);
    unsigned char *buf = mirs__core_alloc(d->s->ctx, (size_t)n + 1);
    if (!buf) {
      d->failed = MIRS_FAIL(d->s->ctx, MIRS_NOMEM, "out of memory (an MPI message)");
      return;
    }
    MPI_Recv(buf, n, MPI_BYTE, ms.MPI_SOURCE, ms.MPI_TAG, d->comm, MPI_STATUS_IGNORE);
    d->recvd[ms.MPI_SOURCE]++;
    d->active = mirs__core_now();
    handle(d, p, w, ms.MPI_SOURCE, ms.MPI_TAG, buf, (size_t)n);
    mirs__core_free(d->s->ctx, buf);
  }
}

/* Send this rank's new verdicts to the others (bounded batches). */
static void share_verdicts(mirs__dist *d, bool force) {
  double now = mirs__core_now();
  if (d->size < 2 || (!force && now - d->vlast < VERDICT_EVERY))
    return;
  d->vlast = now;
  uint64_t buf[VERDICT_BATCH];
  size_t k = mirs__prune_log_read(d->s->prune, d->vsent, buf, VERDICT_BATCH);
  if (!k)
    return;
  d->vsent += k;
  for (int r = 0; r < d->size; r++)
    if (r != d->rank)
      post(d, r, TAG_VERDICT, buf, k * sizeof *buf);
  d->ctr[CTR_verdicts_sent] += k;
}

/* One step of the protocol; passive: no task queued or running here. */
static void step(mirs__dist *d, mirs__pool *p, mirs__search_worker *w, bool passive) {
  mirs_search *s = d->s;
  receive(d, p, w);
  share_verdicts(d, false);
  bool stopped = halted(d);
  if (stopped && !d->stop_sent) {
    uint32_t why = (uint32_t)atomic_load(&s->halt_why);
    for (int r = 0; r < d->size; r++)
      if (r != d->rank)
        post(d, r, TAG_STOP, &why, sizeof why);
    d->stop_sent = true;
  }
  passive = passive || stopped;
  if (!stopped && !passive) {
    /* Work to spare for the ranks waiting on this one. */
    for (int r = 0; r < d->size; r++)
      if (d->waiting[r] && send_work(d, p, w, r, false))
        d->waiting[r] = false;
  }
  if (!stopped && passive && !d->asking && !d->terminated && d->size > 1) {
    if (d->fails < RANDOM_TRIES) {
      d->rng = d->rng * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
      int v = (int)((d->rng >> 33) % (uint64_t)(d->size - 1));
      if (v >= d->rank)
        v++;
      uint32_t lifeline = 0;
      post(d, v, TAG_STEAL, &lifeline, sizeof lifeline);
      d->asking = true;
      d->ctr[CTR_steal_requests]++;
    } else if (!d->lifelines_set) {
      uint32_t lifeline = 1;
      for (int k = 1; k < d->size; k <<= 1)
        if ((d->rank ^ k) < d->size)
          post(d, d->rank ^ k, TAG_STEAL, &lifeline, sizeof lifeline);
      d->lifelines_set = true;
    }
  }
  /* Safra's wave. */
  if (!passive || d->terminated)
    return;
  if (d->size == 1) {
    d->terminated = d->count == 0;
    return;
  }
  if (d->rank == 0 && !d->wave_on) {
    d->black = false;
    d->ctr[CTR_tokens]++;
    start_wave(d);
  }
  if (!d->wave_on || d->wave_wait > 0)
    return;
  d->wave_on = false;
  int64_t q = d->wave_q + d->count;
  bool black = d->wave_black || d->black;
  d->black = false;
  if (d->rank == 0) {
    if (!black && q == 0) {
      d->terminated = true;
      for (int c = 1; c <= 2 && c < d->size; c++)
        post(d, c, TAG_DONE, NULL, 0);
    }
    return;
  }
  unsigned char msg[12];
  uint32_t b = black;
  memcpy(msg, &q, 8);
  memcpy(msg + 8, &b, 4);
  post(d, (d->rank - 1) / 2, TAG_WAVE_UP, msg, sizeof msg);
}

/* An idle rank between polls: a yield for IDLE_SPIN seconds after its
 * last work or message, then naps. */
static void nap(mirs__dist *d) {
  if (mirs__core_now() - d->active < IDLE_SPIN)
    sched_yield();
  else
    nanosleep(&(struct timespec){0, IDLE_NAP}, NULL);
}

/* Thread 0's poll. */
void mirs__dist_poll(mirs__dist *d, mirs__pool *p, mirs__search_worker *w) {
  if (d->failed != MIRS_OK)
    halt_search(d->s, MIRS__HALT_ERROR, MIRS_STOP_FAILURE);
  bool busy = mirs__pool_busy(p);
  if (busy || d->active == 0)
    d->active = mirs__core_now();
  step(d, p, w, !busy);
  if (d->terminated)
    mirs__pool_finish(p);
  else if (!w)
    nap(d); /* idle: waiting on other ranks */
}

/* ---------------------------------------------------------------- the end */

/* This rank's row of counters. */
static void own_row(const mirs__dist *d, uint64_t *row) {
  const mirs_search *s = d->s;
  uint64_t v[NCOLS] = {
#define MIRS_MPI_STAT(name) s->stats.v[MIRS__STAT_##name],
#define MIRS_MPI_COUNTER(name, row) ROW_##row(d->ctr[CTR_##name])
#include "search/mpi_counters.def"
#undef MIRS_MPI_COUNTER
#undef MIRS_MPI_STAT
  };
  memcpy(row, v, sizeof v);
}

/* This rank's part of the outcome, for rank 0. */
static mirs_status pack_outcome(mirs__dist *d, mirs_status st, mirs__buf *b) {
  mirs_search *s = d->s;
  const char *msg = st == MIRS_OK ? "" : mirs_last_error(s->ctx);
  mirs__wire_put_u32(b, (uint32_t)st);
  mirs__wire_put_u32(b, (uint32_t)strlen(msg));
  mirs__wire_put(b, msg, strlen(msg));
  mirs__wire_put_u32(b, MIRS__STAT_COUNT);
  for (int i = 0; i < MIRS__STAT_COUNT; i++)
    mirs__wire_put_u64(b, s->stats.v[i]);
  mirs__wire_put(b, &s->solver_seconds, sizeof s->solver_seconds);
  uint64_t row[NCOLS];
  own_row(d, row);
  mirs__wire_put(b, row, sizeof row);
  size_t nent = mirs__sink_nentries(s);
  mirs__wire_put_u32(b, (uint32_t)nent);
  for (size_t i = 0; i < nent; i++) {
    mirs__sink_view e;
    mirs__sink_entry_view(s, i, &e);
    mirs__wire_put_u64(b, e.hash);
    mirs__wire_put_u32(b, e.res != NULL);
    mirs__wire_put_u32(b, e.counted);
    mirs__wire_put_u32(b, (uint32_t)e.plen);
    mirs__wire_put(b, e.path, sizeof *e.path * (size_t)e.plen);
    if (!e.res)
      continue;
    /* The result as found: cost, flags, and the graph's canonical text,
     * unless it was matched on a reduced instance: of those rank 0
     * reports only the best verify_full_max, and re-finds each of them at
     * its path when it verifies it (thousands of texts would cross rank
     * 0's link, and be stored there, for nothing). */
    const mirs__search_result *res = e.res;
    bool text = !res->reduced || s->ctx->opt.verify_full_max < 0;
    mirs__wire_put(b, &res->cost, sizeof res->cost);
    mirs__wire_put(b, &res->found_at, sizeof res->found_at);
    mirs__wire_put_u32(b, (uint32_t)res->kernels);
    mirs__wire_put_u32(b, (uint32_t)res->reduced | (uint32_t)res->verified << 1 |
                   (uint32_t)res->float_checked << 2 | (uint32_t)!text << 3);
    size_t at = b->len;
    mirs__wire_put_u32(b, 0); /* the text's length, set below */
    if (text)
      mirs__graph_print(res->g, b);
    uint32_t tl = (uint32_t)(b->len - at - sizeof tl);
    if (!b->failed)
      memcpy(b->data + at, &tl, sizeof tl);
  }
  uint32_t ntasks = 0;
  for (const mirs__task *t = s->open; t; t = t->next)
    ntasks++;
  mirs__wire_put_u32(b, ntasks);
  for (const mirs__task *t = s->open; t; t = t->next)
    mirs__wire_put_task(b, t);
  return b->failed ? MIRS_FAIL(s->ctx, MIRS_NOMEM, "out of memory (the outcome of a rank)")
                   : MIRS_OK;
}

/* Rank 0: merge the outcome of rank `from` (its bytes in r). */
static mirs_status merge_outcome(mirs__dist *d, int from, mirs__wire_reader *r, uint32_t **pbuf,
                                 size_t *pcap) {
  mirs_search *s = d->s;
  mirs_context *ctx = s->ctx;
  char who[32];
  snprintf(who, sizeof who, "rank %d", from);
  mirs_status rst = (mirs_status)mirs__wire_get_u32(r);
  uint32_t ml = mirs__wire_get_u32(r);
  const char *msg = mirs__wire_get(r, ml);
  if (rst != MIRS_OK && !r->bad)
    return MIRS_FAIL(ctx, rst, "%s failed: %.*s", who, (int)ml, msg ? msg : "");
  mirs__stats st = {{0}};
  uint32_t ns = mirs__wire_get_u32(r);
  for (uint32_t i = 0; i < ns && !r->bad; i++) {
    uint64_t v = mirs__wire_get_u64(r);
    if (i < MIRS__STAT_COUNT)
      st.v[i] = v;
  }
  double solver = 0;
  mirs__wire_get_into(r, &solver, sizeof solver);
  mirs__wire_get_into(r, d->rows[from], sizeof *d->rows);
  uint32_t nent = mirs__wire_get_u32(r);
  if (!r->bad && nent > (r->n - r->at) / 20) /* at least 20 bytes each */
    r->bad = true;
  mirs_status ret = MIRS_OK;
  for (uint32_t i = 0; ret == MIRS_OK && i < nent && !r->bad; i++) {
    uint64_t hash = mirs__wire_get_u64(r);
    bool accepted = mirs__wire_get_u32(r) != 0;
    uint32_t counted = mirs__wire_get_u32(r), len = mirs__wire_get_u32(r);
    if (len > (r->n - r->at) / 4) {
      r->bad = true;
      break;
    }
    ret = mirs__core_grow(ctx, (void **)pbuf, pcap, (size_t)len + 1, sizeof **pbuf);
    if (ret != MIRS_OK)
      break;
    mirs__wire_get_into(r, *pbuf, 4 * (size_t)len);
    mirs__search_result res = {0}, *rp = NULL;
    if (accepted) {
      mirs__wire_get_into(r, &res.cost, sizeof res.cost);
      mirs__wire_get_into(r, &res.found_at, sizeof res.found_at);
      res.kernels = (int32_t)mirs__wire_get_u32(r);
      uint32_t flags = mirs__wire_get_u32(r), tl = mirs__wire_get_u32(r);
      const char *text = mirs__wire_get(r, tl);
      if (r->bad)
        break;
      res.hash = hash;
      res.reduced = flags & 1;
      res.verified = (flags >> 1) & 1;
      res.float_checked = (flags >> 2) & 1;
      /* Kept as text: read (and its hash checked) only if it is verified,
       * checked or reported (mirs__sink_graph); most never are.  No text:
       * re-found at its path if it is. */
      if (flags & 8) {
        if (tl != 0 || !res.reduced) {
          r->bad = true;
          break;
        }
      } else {
        res.text = mirs__core_alloc(ctx, (size_t)tl + 1);
        if (!res.text) {
          ret = MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (a result from %s)", who);
          break;
        }
        memcpy(res.text, text, tl);
        res.text[tl] = '\0';
        res.tlen = tl;
      }
      rp = &res;
    }
    bool seen = mirs__sink_find(s, hash) >= 0;
    ret = mirs__sink_adopt(s, hash, *pbuf, (int32_t)len, counted, rp);
    if (ret == MIRS_OK && seen) {
      /* Found on two ranks: one graph and one duplicate in one process. */
      MIRS_INC(&st, duplicates);
      if (accepted && st.v[MIRS__STAT_graphs_found])
        st.v[MIRS__STAT_graphs_found]--;
      for (int k = 0; k < MIRS__SINK_NCOUNTED; k++)
        if (((counted >> k) & 1) && st.v[mirs__sink_counted[k]])
          st.v[mirs__sink_counted[k]]--;
    }
  }
  uint32_t ntasks = ret == MIRS_OK ? mirs__wire_get_u32(r) : 0;
  for (uint32_t i = 0; ret == MIRS_OK && i < ntasks && !r->bad; i++) {
    mirs__task *t = mirs__wire_get_task(ctx, r);
    if (t) {
      t->next = s->open;
      s->open = t;
    }
  }
  if (ret == MIRS_OK && (r->bad || r->at != r->n))
    ret = MIRS_FAIL(ctx, MIRS_INTERNAL, "a malformed outcome from %s", who);
  if (ret == MIRS_OK) {
    mirs__sink_add_stats(s, &st);
    s->solver_seconds += solver;
  }
  return ret;
}

/* After the pool: finish the protocol, drain, gather on rank 0. */
mirs_status mirs__dist_finish(mirs_search *s, mirs_status st) {
  mirs__dist *d = s->dist;
  mirs_context *ctx = s->ctx;
  if (st != MIRS_OK)
    halt_search(s, MIRS__HALT_ERROR, MIRS_STOP_FAILURE);
  while (!d->terminated) {
    step(d, NULL, NULL, true);
    if (!d->terminated)
      nap(d);
  }
  /* Drain: every message sent to this rank is received (sending nothing
   * more), then every send of this rank completes. */
  int64_t *expect = mirs__core_calloc(ctx, (size_t)d->size, sizeof *expect);
  if (!expect)
    return MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (MPI shutdown)");
  MPI_Alltoall(d->sent, 1, MPI_INT64_T, expect, 1, MPI_INT64_T, d->comm);
  for (;;) {
    bool all = true;
    for (int r = 0; r < d->size; r++)
      all = all && d->recvd[r] >= expect[r];
    if (all)
      break;
    int flag = 0;
    MPI_Status ms;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, d->comm, &flag, &ms);
    if (!flag) {
      nap(d);
      continue;
    }
    int n = 0;
    MPI_Get_count(&ms, MPI_BYTE, &n);
    unsigned char *buf = mirs__core_alloc(ctx, (size_t)n + 1);
    MPI_Recv(buf ? buf : (unsigned char *)expect, buf ? n : 0, MPI_BYTE, ms.MPI_SOURCE, ms.MPI_TAG,
             d->comm, MPI_STATUS_IGNORE);
    d->recvd[ms.MPI_SOURCE]++;
    if (buf && ms.MPI_TAG == TAG_VERDICT)
      handle(d, NULL, NULL, ms.MPI_SOURCE, ms.MPI_TAG, buf, (size_t)n);
    mirs__core_free(ctx, buf);
  }
  mirs__core_free(ctx, expect);
  for (size_t i = 0; i < d->nout; i++) {
    MPI_Wait(&d->out[i].req, MPI_STATUS_IGNORE);
    mirs__core_free(ctx, d->out[i].buf);
  }
  d->nout = 0;
  if (st == MIRS_OK)
    st = d->failed;
  /* Gather the outcomes on rank 0. */
  mirs__buf b;
  mirs__buf_init(&b, ctx);
  mirs_status pst = pack_outcome(d, st, &b);
  int len = pst == MIRS_OK && b.len <= (size_t)INT32_MAX ? (int)b.len : 0;
  int *lens = NULL, *offs = NULL;
  unsigned char *all = NULL;
  size_t total = 0;
  if (d->rank == 0) {
    lens = mirs__core_calloc(ctx, (size_t)d->size, sizeof *lens);
    offs = mirs__core_calloc(ctx, (size_t)d->size, sizeof *offs);
  }
  MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, d->comm);
  if (d->rank == 0 && lens && offs) {
    for (int r = 0; r < d->size; r++) {
      offs[r] = (int)total;
      total += (size_t)lens[r];
    }
    if (total > (size_t)INT32_MAX)
      total = 0; /* (reported below) */
    all = mirs__core_alloc(ctx, total + 1);
  }
  MPI_Gatherv(b.data, len, MPI_BYTE, all, lens, offs, MPI_BYTE, 0, d->comm);
  mirs__buf_free(&b);
  if (d->rank != 0) {
    /* The results and the open work are rank 0's now. */
    mirs__task_free_list(ctx, s->open);
    s->open = NULL;
    return st != MIRS_OK ? st : pst;
  }
  if (st == MIRS_OK)
    st = pst;
  if (st == MIRS_OK && (!lens || !offs || !all))
    st = MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (the outcomes of the ranks)");
  if (st == MIRS_OK && !(d->rows = mirs__core_calloc(ctx, (size_t)d->size, sizeof *d->rows)))
    st = MIRS_FAIL(ctx, MIRS_NOMEM, "out of memory (the outcomes of the ranks)");
  if (st == MIRS_OK)
    own_row(d, d->rows[0]);
  uint32_t *pbuf = NULL;
  size_t pcap = 0;
  for (int r = 1; st == MIRS_OK && r < d->size; r++) {
    if (lens[r] == 0) {
      st = MIRS_FAIL(ctx, MIRS_INTERNAL, "rank %d sent no outcome", r);
      break;
    }
    mirs__wire_reader rd = {all + offs[r], (size_t)lens[r], 0, false};
    st = merge_outcome(d, r, &rd, &pbuf, &pcap);
  }
  mirs__core_free(ctx, pbuf);
  mirs__core_free(ctx, all);
  mirs__core_free(ctx, lens);
  mirs__core_free(ctx, offs);
  return st;
}

/* ---------------------------------------------------------------- setup */

bool mirs__dist_root(const mirs_search *s) {
  return !s->dist || s->dist->rank == 0;
}

void mirs__dist_free(mirs__dist *d) {
  if (!d)
    return;
  mirs_context *ctx = d->s->ctx;
  for (size_t i = 0; i < d->nout; i++) {
    MPI_Cancel(&d->out[i].req);
    MPI_Request_free(&d->out[i].req);
    mirs__core_free(ctx, d->out[i].buf);
  }
  mirs__core_free(ctx, d->out);
  mirs__core_free(ctx, d->sent);
  mirs__core_free(ctx, d->recvd);
  mirs__core_free(ctx, d->waiting);
  mirs__core_free(ctx, d->rows);
  if (d->comm != MPI_COMM_NULL)
    MPI_Comm_free(&d->comm);
  mirs__core_free(ctx, d);
}

mirs_status mirs_mpi_init(mirs_context *ctx, int *rank, int *nranks) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  int inited = 0, provided = 0;
  MPI_Initialized(&inited);
  if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return MIRS_FAIL(ctx, MIRS_INTERNAL, "MPI_Init_thread failed");
  if (inited)
    MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_FUNNELED)
    return MIRS_FAIL(ctx, MIRS_UNSUPPORTED,
                     "the MPI library does not support MPI_THREAD_FUNNELED");
  int r = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (rank)
    *rank = r;
  if (nranks)
    *nranks = n;
  return MIRS_OK;
}

int mirs_mpi_agree(int value) {
  int inited = 0, fin = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&fin);
  if (!inited || fin)
    return value;
  int rank = 0, in[2], out[2] = {0, 0};
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  in[0] = rank == 0 ? value : INT32_MIN;
  in[1] = value;
  MPI_Allreduce(in, out, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return out[0] != 0 ? out[0] : out[1];
}

void mirs_mpi_finalize(void) {
  int inited = 0, fin = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&fin);
  if (inited && !fin)
    MPI_Finalize();
}

mirs_status mirs_search_set_mpi(mirs_search *s) {
  if (!s)
    return MIRS_INVALID_ARG;
  mirs_context *ctx = s->ctx;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs_search_set_mpi: call mirs_mpi_init first");
  if (s->ran || s->dist)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "mirs_search_set_mpi: only a search that has not run can be distributed");
  if (ctx->opt.max_states > 0)
    return MIRS_FAIL(ctx, MIRS_UNSUPPORTED,
                     "max_states is not supported in a distributed search (it would need a "
                     "global budget); use time_limit");
  mirs__dist *d = mirs__core_calloc(ctx, 1, sizeof *d);
  if (!d)
    return MIRS_NOMEM;
  d->s = s;
  d->comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &d->comm);
  MPI_Comm_rank(d->comm, &d->rank);
  MPI_Comm_size(d->comm, &d->size);
  d->rng = UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(d->rank + 1);
  d->sent = mirs__core_calloc(ctx, (size_t)d->size, sizeof *d->sent);
  d->recvd = mirs__core_calloc(ctx, (size_t)d->size, sizeof *d->recvd);
  d->waiting = mirs__core_calloc(ctx, (size_t)d->size, sizeof *d->waiting);
  mirs_status st = d->sent && d->recvd && d->waiting ? MIRS_OK : MIRS_NOMEM;
  /* A test hook (builds with fault injection): no verdict sharing, the
   * baseline tests/mpi.sh measures sharing against. */
  bool share = true;
#ifdef MIRS_FAULT_INJECTION
  share = getenv("MIRS_TEST_NO_VERDICT_SHARING") == NULL;
#endif
  if (st == MIRS_OK && d->size > 1 && share)
    st = mirs__prune_log_enable(s->prune);
  if (st != MIRS_OK) {
    mirs__dist_free(d);
    return MIRS_FAIL(ctx, st, "out of memory (the distributed search)");
  }
  if (d->rank != 0 && s->resumed) {
    mirs__dist_free(d);
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG,
                     "mirs_search_set_mpi: only rank 0 resumes a checkpoint");
  }
  s->dist = d;
  s->ranks = d->size;
  /* Periodic checkpoints would need every rank's open work at one
   * moment; a distributed search writes its checkpoint only when it
   * stops.  Said at run time to whoever asked for them. */
  if (d->rank == 0 && mirs__core_option_given(ctx, "checkpoint_interval") &&
      ctx->opt.checkpoint_interval > 0)
    mirs__core_log(ctx, MIRS_LOG_WARNING,
                   "search: --checkpoint-interval is not used with --mpi: a distributed search "
                   "writes its checkpoint only when it stops (a signal, a limit)");
  return MIRS_OK;
}

int mirs__dist_ranks(const mirs_search *s) {
  return s->dist ? s->dist->size : 1;
}

void mirs__dist_report(const mirs_search *s, mirs__buf *b) {
  const mirs__dist *d = s->dist;
  if (!d || !d->rows)
    return;
  mirs__buf_puts(b, ",\n  \"mpi\": [");
  for (int r = 0; r < d->size; r++) {
    mirs__buf_printf(b, "%s{\"rank\": %d", r ? ", " : "", r);
    for (size_t k = 0; k < NCOLS; k++)
      mirs__buf_printf(b, ", \"%s\": %llu", cols[k], (unsigned long long)d->rows[r][k]);
    mirs__buf_puts(b, "}");
  }
  mirs__buf_puts(b, "]");
}

int mirs_search_mpi_stats(const mirs_search *s, uint64_t *out, int n) {
  if (!s || !s->dist)
    return 0;
  const mirs__dist *d = s->dist;
  for (int i = 0; i < n && i < NCTR; i++)
    out[i] = d->ctr[i];
  return NCTR;
}

#else /* no MPI */

struct mirs__dist {
  int unused;
};

void mirs__dist_poll(mirs__dist *d, mirs__pool *p, mirs__search_worker *w) {
  (void)d;
  (void)p;
  (void)w;
}

mirs_status mirs__dist_finish(mirs_search *s, mirs_status st) {
  (void)s;
  return st;
}

bool mirs__dist_root(const mirs_search *s) {
  (void)s;
  return true;
}

void mirs__dist_free(mirs__dist *d) {
  (void)d;
}

mirs_status mirs_mpi_init(mirs_context *ctx, int *rank, int *nranks) {
  (void)rank;
  (void)nranks;
  if (!ctx)
    return MIRS_INVALID_ARG;
  return MIRS_FAIL(ctx, MIRS_UNSUPPORTED,
                   "this mirsearch was built without MPI (configure found no MPICH, or "
                   "--without-mpi): --mpi is not available");
}

int mirs_mpi_agree(int value) {
  return value;
}

void mirs_mpi_finalize(void) {
}

mirs_status mirs_search_set_mpi(mirs_search *s) {
  if (!s)
    return MIRS_INVALID_ARG;
  return MIRS_FAIL(s->ctx, MIRS_UNSUPPORTED, "this mirsearch was built without MPI");
}

int mirs__dist_ranks(const mirs_search *s) {
  (void)s;
  return 1;
}

void mirs__dist_report(const mirs_search *s, mirs__buf *b) {
  (void)s;
  (void)b;
}

int mirs_search_mpi_stats(const mirs_search *s, uint64_t *out, int n) {
  (void)s;
  (void)out;
  (void)n;
  return 0;
}

#endif
