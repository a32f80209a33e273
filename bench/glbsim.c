/* SPDX-License-Identifier: MIT */
/* bench/glbsim.c - a trace-driven discrete-event simulation of the --mpi
 * work-stealing protocol (src/search/dist.c) on P ranks, one worker per
 * rank, executing a search tree recorded by bench/glbtrace
 * (src/search/trace.c) with its recorded per-state times.  The model and
 * its assumptions are in docs/SCALING.md.
 *
 *   bench/glbsim [options] TRACE
 *     --ranks=1,2,3,64,...  rank counts (default 1,2,3,64,256,1024,4096)
 *     --alpha=US            network latency per message (default 2)
 *     --beta=GBS            bandwidth per rank, GB/s (default 10)
 *     --nap=US              an idle rank's poll period (IDLE_NAP plus the
 *                           sleep's overshoot; default 250)
 *     --jitter=F            the nap varies uniformly by +-F (default 0.2)
 *     --seed=N              seed of the nap jitter (default 1)
 *     --poll=US             CPU cost of a busy rank's poll (default 0.5)
 *     --osend=US, --orecv=US  CPU cost of posting / receiving a message
 *                           (default 0.5 each); --oword=NS a verdict word
 *                           put into the cache (default 30)
 *     --token=tree|ring     dist.c's termination wave on a binary tree
 *                           (default) or Safra's token on the ring (the
 *                           protocol before it)
 *     --merge=trust|refind  rank 0 takes every other rank's result as sent
 *                           (dist.c, default: --adopt=US each, glbtrace's
 *                           adopt_us; default 100) or re-finds it at its
 *                           path (before: replay and check again, in path
 *                           order)
 *     --spin=S              an idle rank polls continuously for S seconds
 *                           after its last work or message, then naps
 *                           (dist.c's IDLE_SPIN, default 0.1; 0: naps at
 *                           once, as before); --spin-poll=US the period of
 *                           those polls (default 1)
 *     --serial=S            seconds outside the search (setup, ranking,
 *                           writing), added to both T1 and TP in `eff_run`
 *     --defer-over=S        a what-if: any single state's time past S seconds
 *                           is taken out of the search (and out of T1), as
 *                           if the early full-shape verification of new
 *                           bests were done after the search
 *     --wall                take the trace's wall intervals as they are
 *                           (default: scaled by its CPU/wall ratio)
 *     --passive=before|after  a poll's `passive` sampled before the receive
 *                           (dist.c) or after it (a variant)
 *     --no-keep-one         a rank between tasks may give away the last task
 *                           it has queued (dist.c keeps it since 0cf56ac:
 *                           --keep-one, the default)
 *     --per-rank            each rank's counters (states, busy seconds, steals)
 *     --csv                 machine-readable lines
 *
 * Output per P: predicted search wall TP (from the search's start on
 * every rank to rank 0's merged result list), efficiency T1/(P TP) with T1
 * the trace's one-worker search time, and with the serial seconds, steal
 * counts as in report.json's "mpi" rows (summed), idle share, replay
 * share, token rounds, verdict messages. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- protocol constants
 * The same as src/search/dist.c and pool.c. */
#define STEAL_BATCH 8      /* dist.c: most queued tasks in one batch */
#define VERDICT_BATCH 4096 /* dist.c: most verdict words in one message */
#define VERDICT_EVERY 0.005 /* dist.c: seconds between verdict batches */
#define POLL_STEPS 16      /* pool.c: loop steps between a worker's polls */
#define STAT_COUNT 39      /* src/core/stats.def: counters in a rank's outcome */
#define NCOLS 11           /* dist.c: columns of a rank's "mpi" row */

/* ---------------------------------------------------------------- the tree */

typedef struct tree {
  int32_t n;
  int32_t *par, *end; /* parent; one past the last node of the subtree (DFS order) */
  uint32_t *idx, *nmv; /* move index in the parent; moves of the state */
  uint16_t *depth;
  float *cost, *tail, *apply; /* seconds: enter interval, pop interval, replay of the move */
  uint16_t *sin, *spop;       /* loop steps: refused + 1 before/at entering; at the pop */
  uint32_t *solver;           /* solver calls in the state's intervals */
  uint8_t *result;            /* a new result was found entering it */
  int32_t *coff, *ch;         /* children (CSR, in move order) */
  double *apath;              /* replay cost of the path from the root */
  double total;               /* one-worker search seconds (sum of the intervals) */
  double check_med;           /* median time of a result state past its replay */
  double deferred;            /* seconds taken out by --defer-over */
  uint64_t states_rec, solver_rec, found_rec;
  double wall_rec, cpu_rec;
  bool complete;
} tree;

static void *xcalloc(size_t n, size_t k) {
  void *p = calloc(n ? n : 1, k);
  if (!p) {
    fprintf(stderr, "glbsim: out of memory\n");
    exit(3);
  }
  return p;
}

static bool get_var(const unsigned char *d, size_t n, size_t *at, uint64_t *v) {
  uint64_t x = 0;
  for (int sh = 0; sh < 64; sh += 7) {
    if (*at >= n)
      return false;
    unsigned b = d[(*at)++];
    x |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) {
      *v = x;
      return true;
    }
  }
  return false;
}

static int dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void load(tree *T, const char *path, bool wall, double defer_over) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "glbsim: cannot open %s\n", path);
    exit(2);
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *d = xcalloc((size_t)len + 1, 1);
  if (len < 8 || fread(d, 1, (size_t)len, f) != (size_t)len || memcmp(d, "MIRSTRC1", 8) != 0) {
    fprintf(stderr, "glbsim: %s is not a trace\n", path);
    exit(2);
  }
  fclose(f);
  size_t n = (size_t)len, at = 8;
  /* Nodes: at most one per ENTER record, each at least 4 bytes, + root. */
  size_t cap = n / 4 + 2;
  T->par = xcalloc(cap, sizeof *T->par);
  T->end = xcalloc(cap, sizeof *T->end);
  T->idx = xcalloc(cap, sizeof *T->idx);
  T->nmv = xcalloc(cap, sizeof *T->nmv);
  T->depth = xcalloc(cap, sizeof *T->depth);
  T->cost = xcalloc(cap, sizeof *T->cost);
  T->tail = xcalloc(cap, sizeof *T->tail);
  T->apply = xcalloc(cap, sizeof *T->apply);
  T->sin = xcalloc(cap, sizeof *T->sin);
  T->spop = xcalloc(cap, sizeof *T->spop);
  T->solver = xcalloc(cap, sizeof *T->solver);
  T->result = xcalloc(cap, sizeof *T->result);
  int32_t *stack = xcalloc(cap, sizeof *stack);
  int32_t sp = 0, nn = 0;
  uint64_t v;
  if (!get_var(d, n, &at, &v))
    goto bad;
  T->par[0] = -1;
  T->nmv[0] = (uint32_t)v;
  T->spop[0] = 1;
  stack[sp++] = nn++;
  bool ended = false;
  while (at < n && !ended) {
    unsigned fl = d[at++], kind = fl & 3;
    uint64_t idx = 0, nmv = 0, refused = 0, solver = 0, dt = 0, ap = 0;
    if (kind == 2) {
      uint64_t st, w, c, sv, fd;
      if (!get_var(d, n, &at, &st) || !get_var(d, n, &at, &w) || !get_var(d, n, &at, &c) ||
          !get_var(d, n, &at, &sv) || !get_var(d, n, &at, &fd))
        goto bad;
      T->states_rec = st;
      T->wall_rec = (double)w * 1e-9;
      T->cpu_rec = (double)c * 1e-9;
      T->solver_rec = sv;
      T->found_rec = fd;
      ended = true;
      break;
    }
    if (kind == 0 && (!get_var(d, n, &at, &idx) || !get_var(d, n, &at, &nmv)))
      goto bad;
    if ((fl & 16) && !get_var(d, n, &at, &refused))
      goto bad;
    if ((fl & 8) && !get_var(d, n, &at, &solver))
      goto bad;
    if (!get_var(d, n, &at, &dt))
      goto bad;
    if (kind == 0 && !get_var(d, n, &at, &ap))
      goto bad;
    if (kind == 0) {
      if (sp == 0 || (size_t)nn >= cap)
        goto bad;
      int32_t c = nn++;
      T->par[c] = stack[sp - 1];
      T->idx[c] = (uint32_t)idx;
      T->nmv[c] = (uint32_t)nmv;
      T->depth[c] = (uint16_t)(T->depth[T->par[c]] + 1);
      T->cost[c] = (float)(dt * 1e-9);
      T->apply[c] = (float)(ap * 1e-9);
      T->sin[c] = (uint16_t)(refused + 1 > 65535 ? 65535 : refused + 1);
      T->solver[c] += (uint32_t)solver;
      T->result[c] = (fl & 4) != 0;
      stack[sp++] = c;
    } else if (kind == 1) {
      if (sp == 0)
        goto bad;
      int32_t c = stack[--sp];
      T->tail[c] = (float)(dt * 1e-9);
      T->spop[c] = (uint16_t)(refused + 1 > 65535 ? 65535 : refused + 1);
      T->solver[c] += (uint32_t)solver;
      if (fl & 4) /* (a result seen at a pop: charged to the state) */
        T->result[c] = 1;
      T->end[c] = nn;
    } else {
      goto bad;
    }
  }
  /* A partial tree (a search stopped by a limit): close the open frames. */
  T->complete = sp == 0;
  while (sp > 0) {
    int32_t c = stack[--sp];
    T->end[c] = nn;
    if (!T->spop[c])
      T->spop[c] = 1;
  }
  T->n = nn;
  free(stack);
  free(d);
  /* Scale the wall intervals to CPU time (preemption on a shared machine). */
  double scale = 1;
  double sum = 0;
  for (int32_t i = 0; i < nn; i++)
    sum += (double)T->cost[i] + (double)T->tail[i];
  if (!wall && T->cpu_rec > 0 && T->wall_rec > 0 && T->cpu_rec < T->wall_rec)
    scale = T->cpu_rec / T->wall_rec;
  T->total = 0;
  for (int32_t i = 0; i < nn; i++) {
    T->cost[i] = (float)(T->cost[i] * scale);
    T->tail[i] = (float)(T->tail[i] * scale);
    T->apply[i] = (float)(T->apply[i] * scale);
    T->total += (double)T->cost[i] + (double)T->tail[i];
  }
  (void)sum;
  /* --defer-over: a state's time past the cap leaves the search. */
  if (defer_over > 0)
    for (int32_t i = 0; i < nn; i++)
      if (T->cost[i] > defer_over) {
        T->deferred += T->cost[i] - defer_over;
        T->total -= T->cost[i] - defer_over;
        T->cost[i] = (float)defer_over;
      }
  /* The median check time of the result states. */
  size_t nr = 0;
  for (int32_t i = 0; i < nn; i++)
    nr += T->result[i];
  if (nr) {
    double *own = xcalloc(nr, sizeof *own);
    nr = 0;
    for (int32_t i = 0; i < nn; i++)
      if (T->result[i])
        own[nr++] = (double)T->cost[i] - (double)T->apply[i];
    qsort(own, nr, sizeof *own, dcmp);
    T->check_med = own[nr / 2];
    free(own);
  }
  /* Children. */
  T->coff = xcalloc((size_t)nn + 1, sizeof *T->coff);
  T->ch = xcalloc((size_t)nn, sizeof *T->ch);
  for (int32_t i = 1; i < nn; i++)
    T->coff[T->par[i] + 1]++;
  for (int32_t i = 0; i < nn; i++)
    T->coff[i + 1] += T->coff[i];
  int32_t *fill = xcalloc((size_t)nn, sizeof *fill);
  for (int32_t i = 1; i < nn; i++) {
    int32_t p = T->par[i];
    T->ch[T->coff[p] + fill[p]++] = i;
  }
  free(fill);
  T->apath = xcalloc((size_t)nn, sizeof *T->apath);
  for (int32_t i = 1; i < nn; i++)
    T->apath[i] = T->apath[T->par[i]] + T->apply[i];
  return;
bad:
  fprintf(stderr, "glbsim: %s: malformed trace at byte %zu\n", path, at);
  exit(2);
}

/* ---------------------------------------------------------------- parameters */

typedef struct params {
  double alpha, beta, nap, jitter, poll, osend, orecv, oword, serial;
  double spin, spin_poll; /* idle: polls continuously for spin s after work or a message */
  double adopt;           /* rank 0's seconds per result taken as sent */
  double text;            /* bytes of a result's graph text in a rank's outcome */
  int tries;              /* dist.c's RANDOM_TRIES: random steals before lifelines */
  uint64_t seed;
  bool tree_token;
  bool per_rank; /* print each rank's counters */
  bool passive_after; /* variant: `passive` sampled after the receive */
  bool keep_one;      /* variant: an idle rank keeps one received task */
  bool trust; /* variant: rank 0 takes remote results without re-finding them */
} params;

/* ---------------------------------------------------------------- messages */

enum { TAG_STEAL = 1, TAG_WORK, TAG_TOKEN, TAG_DONE, TAG_VERDICT, TAG_WAVE, TAG_WAVE_UP };

typedef struct task {
  int32_t node;
  uint32_t lo, hi;
} task;

typedef struct msg {
  double arr;
  uint64_t seq; /* ties in send order */
  int src, tag;
  int64_t q;    /* token sum; STEAL: lifeline flag; WORK: reply flag */
  int black;    /* token colour */
  uint32_t k;   /* WORK: tasks; VERDICT: words */
  task *tasks;
} msg;

typedef struct mheap {
  msg **a;
  size_t n, cap;
} mheap;

static bool mless(const msg *x, const msg *y) {
  return x->arr < y->arr || (x->arr == y->arr && x->seq < y->seq);
}

static void mpush(mheap *h, msg *m) {
  if (h->n == h->cap) {
    h->cap = h->cap ? 2 * h->cap : 8;
    h->a = realloc(h->a, h->cap * sizeof *h->a);
    if (!h->a) {
      fprintf(stderr, "glbsim: out of memory\n");
      exit(3);
    }
  }
  size_t i = h->n++;
  while (i > 0 && mless(m, h->a[(i - 1) / 2])) {
    h->a[i] = h->a[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->a[i] = m;
}

static msg *mpop(mheap *h) {
  msg *top = h->a[0], *last = h->a[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && mless(h->a[c + 1], h->a[c]))
      c++;
    if (!mless(h->a[c], last))
      break;
    h->a[i] = h->a[c];
    i = c;
  }
  if (h->n)
    h->a[i] = last;
  return top;
}

/* ---------------------------------------------------------------- ranks */

typedef struct frame {
  int32_t node, kc; /* kc: next child position (coff-relative) */
  uint32_t next, end;
} frame;

typedef struct rank {
  /* The worker. */
  bool running;
  frame *fr;
  int nfr, capfr;
  int32_t at; /* the node the worker's frames stand at (replay reuses them) */
  task *dq;   /* deque: [head, tail), head the oldest */
  size_t dqh, dqt, dqcap;
  double t; /* next action */
  /* The protocol (dist.c). */
  uint64_t rng, jrng;
  int64_t count;
  bool black, have_token, token_black, token_out, terminated, asking, lifelines_set;
  int64_t token_q;
  int fails;
  uint32_t waiting; /* bit k: rank ^ 2^k is registered on this one */
  double vlast;
  uint64_t vlog, vsent;
  double nic;
  mheap in;
  /* Tree wave (dist.c). */
  int wave_pending;
  bool wave_on, wave_black;
  int64_t wave_q;
  /* Idle spin. */
  double active; /* last work or message */
  bool spinning; /* idle and polling continuously: a message wakes it */
  /* Counters. */
  uint64_t steal_requests, steals_served, steals_empty, lifeline_pushes, tasks_sent,
      tasks_received, verdicts_sent, verdicts_received, states, tokens, msgs_sent, vmsgs;
  double busy, replay, tdone, tlast;
  uint32_t nres; /* results found here */
} rank;

typedef struct sim {
  const tree *T;
  const params *pp;
  int P;
  rank *r;
  uint64_t seq;
  /* Ranks by next action time. */
  int *heap, *pos;
  int nh;
  int32_t *res_rank; /* rank that found each result node (-1: none) */
  uint64_t token_rounds;
} sim;

static bool rless(const sim *S, int a, int b) {
  return S->r[a].t < S->r[b].t || (S->r[a].t == S->r[b].t && a < b);
}

static void hswap(sim *S, int i, int j) {
  int a = S->heap[i], b = S->heap[j];
  S->heap[i] = b;
  S->heap[j] = a;
  S->pos[b] = i;
  S->pos[a] = j;
}

static void hdown(sim *S, int i) {
  for (;;) {
    int c = 2 * i + 1;
    if (c >= S->nh)
      return;
    if (c + 1 < S->nh && rless(S, S->heap[c + 1], S->heap[c]))
      c++;
    if (!rless(S, S->heap[c], S->heap[i]))
      return;
    hswap(S, i, c);
    i = c;
  }
}

static void hup(sim *S, int i) {
  while (i > 0 && rless(S, S->heap[i], S->heap[(i - 1) / 2])) {
    hswap(S, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
}

/* Post a message from rank `from` at its time *t (its CPU pays osend, its
 * link serialises the bytes). */
static msg *post(sim *S, int from, double *t, int dest, int tag, size_t bytes) {
  rank *a = &S->r[from];
  const params *pp = S->pp;
  *t += pp->osend;
  double dep = *t > a->nic ? *t : a->nic;
  a->nic = dep + (double)bytes / pp->beta;
  msg *m = xcalloc(1, sizeof *m);
  m->arr = a->nic + pp->alpha;
  m->seq = S->seq++;
  m->src = from;
  m->tag = tag;
  mpush(&S->r[dest].in, m);
  a->msgs_sent++;
  /* A spinning idle rank sees it at its next poll. */
  rank *b = &S->r[dest];
  if (b->spinning && m->arr + pp->spin_poll < b->t && S->pos[dest] < S->nh) {
    b->t = m->arr + pp->spin_poll;
    hup(S, S->pos[dest]);
  }
  return m;
}

static size_t task_bytes(const tree *T, const task *k) {
  return 12 + 4 * (size_t)T->depth[k->node];
}

/* mirs__search_split: the shallowest unexplored range of the running task. */
static bool split(sim *S, rank *a, task *out) {
  (void)S;
  for (int i = 0; i < a->nfr; i++) {
    frame *f = &a->fr[i];
    uint32_t rem = f->end > f->next ? f->end - f->next : 0;
    if (rem == 0 || (i == a->nfr - 1 && rem < 2))
      continue;
    uint32_t mid = f->next + rem / 2;
    out->node = f->node;
    out->lo = mid;
    out->hi = f->end;
    f->end = mid;
    return true;
  }
  return false;
}

/* send_work: up to STEAL_BATCH queued tasks (oldest first), else a split
 * of the running task (only from a busy poll: w). */
static bool send_work(sim *S, int me, double *t, int dest, bool reply, bool w) {
  rank *a = &S->r[me];
  task buf[STEAL_BATCH];
  uint32_t n = 0;
  size_t bytes = 8;
  /* (variant keep-one: a rank that is not running a task keeps its
   * newest queued task to start with) */
  size_t keep = S->pp->keep_one && !a->running ? 1 : 0;
  while (n < STEAL_BATCH && a->dqh + keep < a->dqt)
    buf[n++] = a->dq[a->dqh++];
  if (n == 0 && w && a->running && split(S, a, &buf[0]))
    n = 1;
  for (uint32_t i = 0; i < n; i++)
    bytes += task_bytes(S->T, &buf[i]);
  if (n || reply) {
    msg *m = post(S, me, t, dest, TAG_WORK, bytes);
    m->q = reply;
    m->k = n;
    if (n) {
      m->tasks = xcalloc(n, sizeof *m->tasks);
      memcpy(m->tasks, buf, n * sizeof *buf);
    }
  }
  if (n) {
    a->count++;
    a->tasks_sent += n;
  }
  return n > 0;
}

static void dq_push(rank *a, task k) {
  if (a->dqt == a->dqcap) {
    /* Compact, then grow. */
    size_t live = a->dqt - a->dqh;
    memmove(a->dq, a->dq + a->dqh, live * sizeof *a->dq);
    a->dqh = 0;
    a->dqt = live;
    if (a->dqt == a->dqcap) {
      a->dqcap = a->dqcap ? 2 * a->dqcap : 16;
      a->dq = realloc(a->dq, a->dqcap * sizeof *a->dq);
      if (!a->dq) {
        fprintf(stderr, "glbsim: out of memory\n");
        exit(3);
      }
    }
  }
  a->dq[a->dqt++] = k;
}

/* A wave reaches rank me (rank 0: starts there): on to its children. */
static void start_wave(sim *S, int me, double *t) {
  rank *a = &S->r[me];
  a->wave_on = true;
  a->wave_q = 0;
  a->wave_black = false;
  a->wave_pending = 0;
  for (int c = 2 * me + 1; c <= 2 * me + 2 && c < S->P; c++) {
    post(S, me, t, c, TAG_WAVE, 0);
    a->wave_pending++;
  }
}

static void handle(sim *S, int me, double *t, msg *m, bool w) {
  rank *a = &S->r[me];
  const params *pp = S->pp;
  *t += pp->orecv;
  a->active = *t;
  switch (m->tag) {
  case TAG_STEAL:
    if (m->q) {
      int k = 0;
      while ((1 << k) != (me ^ m->src))
        k++;
      a->waiting |= 1u << k;
    } else if (send_work(S, me, t, m->src, true, w)) {
      a->steals_served++;
    } else {
      a->steals_empty++;
    }
    break;
  case TAG_WORK:
    if (m->q)
      a->asking = false;
    if (m->k == 0) {
      if (m->q)
        a->fails++;
      break;
    }
    a->count--;
    a->black = true;
    a->fails = 0;
    a->lifelines_set = false;
    if (!m->q)
      a->lifeline_pushes++;
    for (uint32_t i = 0; i < m->k; i++) {
      a->tasks_received++;
      dq_push(a, m->tasks[i]);
    }
    break;
  case TAG_TOKEN:
    a->have_token = true;
    a->token_q = m->q;
    a->token_black = m->black != 0;
    break;
  case TAG_DONE:
    if (S->pp->tree_token && !a->terminated)
      for (int c = 2 * me + 1; c <= 2 * me + 2 && c < S->P; c++)
        post(S, me, t, c, TAG_DONE, 0);
    a->terminated = true;
    break;
  case TAG_VERDICT:
    a->verdicts_received += m->k;
    *t += pp->oword * m->k;
    break;
  case TAG_WAVE:
    start_wave(S, me, t);
    break;
  case TAG_WAVE_UP:
    a->wave_q += m->q;
    a->wave_black = a->wave_black || m->black;
    a->wave_pending--;
    break;
  default:
    break;
  }
  free(m->tasks);
  free(m);
}

static void share_verdicts(sim *S, int me, double *t) {
  rank *a = &S->r[me];
  if (S->P < 2 || *t - a->vlast < VERDICT_EVERY)
    return;
  a->vlast = *t;
  uint64_t k = a->vlog - a->vsent;
  if (k > VERDICT_BATCH)
    k = VERDICT_BATCH;
  if (!k)
    return;
  a->vsent += k;
  for (int d = 0; d < S->P; d++)
    if (d != me) {
      msg *m = post(S, me, t, d, TAG_VERDICT, 8 * k);
      m->k = (uint32_t)k;
      a->vmsgs++;
    }
  a->verdicts_sent += k;
}

/* Safra's token on the ring (dist.c). */
static void token_ring(sim *S, int me, double *t) {
  rank *a = &S->r[me];
  if (me == 0 && !a->token_out) {
    a->black = false;
    a->token_out = true;
    a->tokens++;
    msg *m = post(S, me, t, 1, TAG_TOKEN, 12);
    m->q = 0;
    m->black = 0;
    return;
  }
  if (!a->have_token)
    return;
  a->have_token = false;
  if (me == 0) {
    a->token_out = false;
    S->token_rounds++;
    if (!a->token_black && !a->black && a->token_q + a->count == 0) {
      a->terminated = true;
      for (int d = 1; d < S->P; d++)
        post(S, me, t, d, TAG_DONE, 0);
    }
    return;
  }
  msg *m = post(S, me, t, (me + 1) % S->P, TAG_TOKEN, 12);
  m->q = a->token_q + a->count;
  m->black = a->token_black || a->black;
  a->black = false;
}

/* dist.c: the same counts and colours collected by a wave on a binary
 * tree (children 2r+1, 2r+2): sent down at once, answered up by passive
 * ranks whose children have answered; DONE down the same tree. */
static void token_tree(sim *S, int me, double *t) {
  rank *a = &S->r[me];
  if (me == 0 && !a->wave_on) {
    a->black = false;
    a->tokens++;
    start_wave(S, me, t);
  }
  if (!a->wave_on || a->wave_pending > 0)
    return;
  a->wave_on = false;
  int64_t q = a->wave_q + a->count;
  bool black = a->wave_black || a->black;
  a->black = false;
  if (me == 0) {
    S->token_rounds++;
    if (!black && q == 0) {
      a->terminated = true;
      for (int c = 1; c <= 2 && c < S->P; c++)
        post(S, me, t, c, TAG_DONE, 0);
    }
    return;
  }
  msg *m = post(S, me, t, (me - 1) / 2, TAG_WAVE_UP, 12);
  m->q = q;
  m->black = black;
}

/* dist.c's step(): one poll of rank me at *t; passive: no task queued or
 * running; w: called from the running task (may split it). */
static void step(sim *S, int me, double *t, bool passive, bool w) {
  rank *a = &S->r[me];
  while (a->in.n && a->in.a[0]->arr <= *t)
    handle(S, me, t, mpop(&a->in), w);
  /* dist.c samples `passive` before the receive: a rank that has just
   * received work still asks for more and passes the token on.  The
   * variant samples it after. */
  if (S->pp->passive_after && (a->dqh < a->dqt || a->running))
    passive = false;
  share_verdicts(S, me, t);
  if (!passive) {
    for (int k = 0; (1 << k) < S->P; k++)
      if ((a->waiting >> k & 1u) && send_work(S, me, t, me ^ (1 << k), false, w))
        a->waiting &= ~(1u << k);
  }
  if (passive && !a->asking && !a->terminated && S->P > 1) {
    if (a->fails < S->pp->tries) {
      a->rng = a->rng * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
      int v = (int)((a->rng >> 33) % (uint64_t)(S->P - 1));
      if (v >= me)
        v++;
      msg *m = post(S, me, t, v, TAG_STEAL, 4);
      m->q = 0;
      a->asking = true;
      a->steal_requests++;
    } else if (!a->lifelines_set) {
      for (int k = 1; k < S->P; k <<= 1)
        if ((me ^ k) < S->P) {
          msg *m = post(S, me, t, me ^ k, TAG_STEAL, 4);
          m->q = 1;
        }
      a->lifelines_set = true;
    }
  }
  if (!passive || a->terminated)
    return;
  if (S->P == 1) {
    a->terminated = a->count == 0;
    return;
  }
  if (S->pp->tree_token)
    token_tree(S, me, t);
  else
    token_ring(S, me, t);
}

/* ---------------------------------------------------------------- the worker */

static void push_frame(sim *S, rank *a, int32_t node, uint32_t lo, uint32_t hi) {
  const tree *T = S->T;
  if (a->nfr == a->capfr) {
    a->capfr = a->capfr ? 2 * a->capfr : 32;
    a->fr = realloc(a->fr, (size_t)a->capfr * sizeof *a->fr);
    if (!a->fr) {
      fprintf(stderr, "glbsim: out of memory\n");
      exit(3);
    }
  }
  frame *f = &a->fr[a->nfr++];
  f->node = node;
  f->next = lo;
  f->end = hi;
  /* First child at or past lo. */
  int32_t b = T->coff[node], e = T->coff[node + 1];
  while (b < e) {
    int32_t m = b + (e - b) / 2;
    if (T->idx[T->ch[m]] < lo)
      b = m + 1;
    else
      e = m;
  }
  f->kc = b - T->coff[node];
}

/* Replay cost from the worker's node to node (shared prefix kept). */
static double replay_cost(const tree *T, int32_t from, int32_t to) {
  int32_t x = from, y = to;
  while (T->depth[x] > T->depth[y])
    x = T->par[x];
  while (T->depth[y] > T->depth[x])
    y = T->par[y];
  while (x != y) {
    x = T->par[x];
    y = T->par[y];
  }
  return T->apath[to] - T->apath[x];
}

static void start_task(sim *S, int me, task k, double *t) {
  rank *a = &S->r[me];
  const tree *T = S->T;
  double rc = replay_cost(T, a->at, k.node);
  *t += rc;
  a->replay += rc;
  a->busy += rc;
  a->nfr = 0;
  uint32_t hi = k.hi > T->nmv[k.node] ? T->nmv[k.node] : k.hi;
  push_frame(S, a, k.node, k.lo, hi);
  a->at = k.node;
  a->running = true;
}

/* Run POLL_STEPS loop steps of the running task (mirs__search_task_steps);
 * false when the task is done. */
static bool run_steps(sim *S, int me, double *t) {
  rank *a = &S->r[me];
  const tree *T = S->T;
  uint32_t steps = 0;
  double t0 = *t;
  while (steps < POLL_STEPS) {
    frame *f = &a->fr[a->nfr - 1];
    int32_t F = f->node;
    int32_t kc = T->coff[F] + f->kc;
    if (kc < T->coff[F + 1] && T->idx[T->ch[kc]] < f->end) {
      int32_t c = T->ch[kc];
      f->next = T->idx[c] + 1;
      f->kc++;
      *t += T->cost[c];
      steps += T->sin[c];
      a->states++;
      a->vlog += T->solver[c];
      if (T->result[c]) {
        S->res_rank[c] = me;
        a->nres++;
      }
      push_frame(S, a, c, 0, T->nmv[c]);
      continue;
    }
    /* The frame's moves are tried: its tail (the refused moves after its
     * last child) is this task's when its range reaches the last move. */
    if (f->end >= T->nmv[F]) {
      *t += T->tail[F];
      steps += T->spop[F];
    } else {
      steps++;
    }
    f->next = f->end;
    if (a->nfr == 1) {
      a->running = false;
      a->tlast = *t;
      a->at = F;
      a->busy += *t - t0;
      return false;
    }
    a->nfr--;
  }
  a->at = a->fr[a->nfr - 1].node;
  a->busy += *t - t0;
  return true;
}

/* One action of rank me at its time: the worker loop of pool.c with one
 * thread and dist.c's polls. */
static void act(sim *S, int me) {
  rank *a = &S->r[me];
  const params *pp = S->pp;
  double t = a->t;
  a->spinning = false;
  if (a->running) {
    /* A busy poll (after task_steps), then the next steps. */
    t += pp->poll;
    a->active = t;
    step(S, me, &t, false, true);
    run_steps(S, me, &t);
    a->t = t;
    return;
  }
  /* Between tasks: pop the newest queued task, else poll as an idle rank
   * and nap. */
  if (a->dqh < a->dqt) {
    task k = a->dq[--a->dqt];
    start_task(S, me, k, &t);
    run_steps(S, me, &t);
    a->t = t;
    return;
  }
  step(S, me, &t, true, false);
  if (a->terminated) {
    a->tdone = t;
    a->t = INFINITY;
    return;
  }
  if (t - a->active < pp->spin) {
    /* Polling continuously (dist.c's nap before IDLE_SPIN): the next
     * message is seen within a poll of its arrival (post() moves this
     * rank's time up when one is sent later). */
    double until = a->active + pp->spin;
    double arr = a->in.n ? a->in.a[0]->arr : INFINITY;
    double next = (arr < until ? arr : until) + pp->spin_poll;
    if (me == 0 && pp->tree_token && !a->wave_on && !a->terminated && S->P > 1)
      next = t + pp->spin_poll; /* its next poll starts the next wave */
    a->t = next > t + pp->spin_poll ? next : t + pp->spin_poll;
    a->spinning = true;
    return;
  }
  /* The nap's length varies (timer slack, scheduling): uniform in
   * nap (1 +- jitter), so idle ranks do not poll in lockstep. */
  a->jrng = a->jrng * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
  double u = (double)(a->jrng >> 11) * 0x1p-53;
  a->t = t + pp->nap * (1 + pp->jitter * (2 * u - 1));
}

/* ---------------------------------------------------------------- a run */

typedef struct outcome {
  double tp, work_end, search_end, finish, eff, eff_run, idle, replay;
  uint64_t steal_requests, steals_served, steals_empty, lifeline_pushes, tasks_sent, tokens,
      rounds, verdicts_sent, msgs, vmsgs, states;
  uint64_t res_remote;
} outcome;

static int ilog2c(int p) {
  int k = 0;
  while ((1 << k) < p)
    k++;
  return k;
}

static outcome simulate(const tree *T, const params *pp, int P) {
  sim S;
  memset(&S, 0, sizeof S);
  S.T = T;
  S.pp = pp;
  S.P = P;
  S.r = xcalloc((size_t)P, sizeof *S.r);
  S.heap = xcalloc((size_t)P, sizeof *S.heap);
  S.pos = xcalloc((size_t)P, sizeof *S.pos);
  S.res_rank = xcalloc((size_t)T->n, sizeof *S.res_rank);
  for (int32_t i = 0; i < T->n; i++)
    S.res_rank[i] = -1;
  for (int i = 0; i < P; i++) {
    rank *a = &S.r[i];
    a->rng = UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(i + 1);
    a->jrng = UINT64_C(0xD1B54A32D192ED03) * (uint64_t)(i + 1) + pp->seed;
    a->vlast = -1; /* (dist.c starts at 0 on a clock far from 0) */
    a->at = 0;
    S.heap[i] = i;
    S.pos[i] = i;
  }
  S.nh = P;
  /* Rank 0 holds the root task (api.c); every rank starts at time 0. */
  task root = {0, 0, T->nmv[0]};
  dq_push(&S.r[0], root);
  for (;;) {
    if (S.nh == 0)
      break;
    int me = S.heap[0];
    if (isinf(S.r[me].t)) {
      break;
    }
    act(&S, me);
    /* (act may have moved other ranks up: me is at pos[me].) */
    int i = S.pos[me];
    if (isinf(S.r[me].t)) {
      hswap(&S, i, --S.nh); /* done: out of the heap */
      if (i < S.nh) {
        hdown(&S, i);
        hup(&S, i);
      }
    } else {
      hdown(&S, i);
      hup(&S, i);
    }
  }
  outcome o;
  memset(&o, 0, sizeof o);
  double tdone = 0, busy = 0, replay = 0;
  for (int i = 0; i < P; i++) {
    rank *a = &S.r[i];
    if (a->tdone > tdone)
      tdone = a->tdone;
    if (a->tlast > o.work_end)
      o.work_end = a->tlast;
    busy += a->busy;
    replay += a->replay;
    o.steal_requests += a->steal_requests;
    o.steals_served += a->steals_served;
    o.steals_empty += a->steals_empty;
    o.lifeline_pushes += a->lifeline_pushes;
    o.tasks_sent += a->tasks_sent;
    o.tokens += a->tokens;
    o.verdicts_sent += a->verdicts_sent;
    o.msgs += a->msgs_sent;
    o.vmsgs += a->vmsgs;
    o.states += a->states;
  }
  o.rounds = S.token_rounds;
  if (pp->per_rank)
    for (int i = 0; i < P; i++) {
      rank *a = &S.r[i];
      printf("# rank %d: states %llu busy_s %.3f replay_s %.3f steal_requests %llu steals_served "
             "%llu steals_empty %llu lifeline_pushes %llu tasks_sent %llu tasks_received %llu "
             "results %u\n",
             i, (unsigned long long)a->states, a->busy, a->replay,
             (unsigned long long)a->steal_requests, (unsigned long long)a->steals_served,
             (unsigned long long)a->steals_empty, (unsigned long long)a->lifeline_pushes,
             (unsigned long long)a->tasks_sent, (unsigned long long)a->tasks_received, a->nres);
    }
  /* mirs__dist_finish: an all-to-all of message counts (Bruck: log2 P
   * rounds of P/2 8-byte counts), a gather of lengths (binomial tree) and
   * a gather of outcomes (rank 0 receives every rank's), then rank 0
   * re-finds every other rank's result at its path. */
  double fin = 0;
  if (P > 1) {
    int lg = ilog2c(P);
    fin += lg * (pp->alpha + (double)P * 4 / pp->beta);
    fin += lg * pp->alpha;
    double bytes = 0;
    for (int i = 1; i < P; i++)
      bytes += 8 + 4 + 8 * STAT_COUNT + 8 + 8 * NCOLS + 4 + 4;
    /* Results: hash, accepted, counted, length, path. */
    int32_t prev = 0;
    double merge = 0;
    for (int32_t c = 0; c < T->n; c++)
      if (S.res_rank[c] > 0) {
        bytes += 20 + 4.0 * T->depth[c];
        o.res_remote++;
        if (pp->trust) {
          /* dist.c: cost, flags and the graph's text (about 2 KB), read
           * back and hashed (glbtrace's adopt_us). */
          bytes += 28 + pp->text;
          merge += pp->adopt;
        } else {
          /* A re-found result skips the early checks (a new best is not
           * verified at full shape again): its check is taken as the
           * median of the result states' own times. */
          double own = T->cost[c] - T->apply[c];
          merge += replay_cost(T, prev, T->par[c]) + T->apply[c] +
                   (own < T->check_med ? own : T->check_med);
          prev = T->par[c];
        }
      }
    fin += pp->alpha + bytes / pp->beta + (P - 1) * pp->orecv + merge;
  }
  o.search_end = tdone;
  o.finish = fin;
  o.tp = tdone + fin;
  o.eff = T->total / ((double)P * o.tp);
  o.eff_run = (T->total + pp->serial) / ((double)P * (o.tp + pp->serial));
  o.idle = 1 - busy / ((double)P * o.tp);
  o.replay = replay / ((double)P * o.tp);
  for (int i = 0; i < P; i++) {
    rank *a = &S.r[i];
    while (a->in.n) {
      msg *m = mpop(&a->in);
      free(m->tasks);
      free(m);
    }
    free(a->in.a);
    free(a->fr);
    free(a->dq);
  }
  free(S.r);
  free(S.heap);
  free(S.pos);
  free(S.res_rank);
  return o;
}

/* ---------------------------------------------------------------- main */

static double num(const char *a, const char *name) {
  char *end;
  double v = strtod(a, &end);
  if (end == a || *end || !(v >= 0)) {
    fprintf(stderr, "glbsim: bad value for --%s: %s\n", name, a);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  params pp;
  memset(&pp, 0, sizeof pp);
  pp.alpha = 2e-6;
  pp.beta = 10e9;
  pp.nap = 250e-6;
  pp.jitter = 0.2;
  pp.poll = pp.osend = pp.orecv = 0.5e-6;
  pp.oword = 30e-9;
  pp.spin = 0.1;      /* dist.c's IDLE_SPIN */
  pp.spin_poll = 1e-6; /* an MPI_Iprobe and a sched_yield */
  pp.adopt = 100e-6;
  pp.text = 2048;
  pp.tries = 4; /* dist.c's RANDOM_TRIES */
  pp.seed = 1;
  pp.tree_token = true; /* dist.c since the tree wave */
  pp.trust = true;      /* dist.c: results taken as sent */
  pp.keep_one = true;   /* dist.c since commit 0cf56ac */
  const char *ranks = "1,2,3,64,256,1024,4096", *path = NULL;
  bool wall = false, csv = false;
  double defer_over = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = strchr(a, '=');
    v = v ? v + 1 : "";
    if (!strncmp(a, "--ranks=", 8))
      ranks = v;
    else if (!strncmp(a, "--alpha=", 8))
      pp.alpha = num(v, "alpha") * 1e-6;
    else if (!strncmp(a, "--beta=", 7))
      pp.beta = num(v, "beta") * 1e9;
    else if (!strncmp(a, "--nap=", 6))
      pp.nap = num(v, "nap") * 1e-6;
    else if (!strncmp(a, "--jitter=", 9))
      pp.jitter = num(v, "jitter");
    else if (!strncmp(a, "--seed=", 7))
      pp.seed = (uint64_t)num(v, "seed");
    else if (!strncmp(a, "--poll=", 7))
      pp.poll = num(v, "poll") * 1e-6;
    else if (!strncmp(a, "--osend=", 8))
      pp.osend = num(v, "osend") * 1e-6;
    else if (!strncmp(a, "--orecv=", 8))
      pp.orecv = num(v, "orecv") * 1e-6;
    else if (!strncmp(a, "--oword=", 8))
      pp.oword = num(v, "oword") * 1e-9;
    else if (!strncmp(a, "--serial=", 9))
      pp.serial = num(v, "serial");
    else if (!strcmp(a, "--token=ring"))
      pp.tree_token = false;
    else if (!strcmp(a, "--token=tree"))
      pp.tree_token = true;
    else if (!strcmp(a, "--merge=refind"))
      pp.trust = false;
    else if (!strcmp(a, "--merge=trust"))
      pp.trust = true;
    else if (!strcmp(a, "--passive=before"))
      pp.passive_after = false;
    else if (!strcmp(a, "--passive=after"))
      pp.passive_after = true;
    else if (!strcmp(a, "--keep-one"))
      pp.keep_one = true;
    else if (!strcmp(a, "--no-keep-one"))
      pp.keep_one = false;
    else if (!strncmp(a, "--spin=", 7))
      pp.spin = num(v, "spin");
    else if (!strncmp(a, "--spin-poll=", 12))
      pp.spin_poll = num(v, "spin-poll") * 1e-6;
    else if (!strncmp(a, "--adopt=", 8))
      pp.adopt = num(v, "adopt") * 1e-6;
    else if (!strncmp(a, "--text=", 7))
      pp.text = num(v, "text");
    else if (!strncmp(a, "--tries=", 8))
      pp.tries = (int)num(v, "tries");
    else if (!strcmp(a, "--per-rank"))
      pp.per_rank = true;
    else if (!strncmp(a, "--defer-over=", 13))
      defer_over = num(v, "defer-over");
    else if (!strcmp(a, "--wall"))
      wall = true;
    else if (!strcmp(a, "--csv"))
      csv = true;
    else if (a[0] == '-' || path) {
      fprintf(stderr, "usage: glbsim [--ranks=LIST] [--alpha=US] [--beta=GBS] [--nap=US] "
                      "[--jitter=F] [--seed=N] [--poll=US] [--osend=US] [--orecv=US] [--oword=NS] [--serial=S] "
                      "[--token=ring|tree] [--merge=refind|trust] [--passive=before|after] "
                      "[--keep-one|--no-keep-one] [--spin=S] [--spin-poll=US] [--adopt=US] [--text=BYTES] [--tries=N] [--per-rank] [--defer-over=S] [--wall] [--csv] TRACE\n");
      return 2;
    } else {
      path = a;
    }
  }
  if (!path) {
    fprintf(stderr, "glbsim: no trace given\n");
    return 2;
  }
  if (pp.beta <= 0) {
    fprintf(stderr, "glbsim: --beta must be positive\n");
    return 2;
  }
  tree T;
  memset(&T, 0, sizeof T);
  load(&T, path, wall, defer_over);
  uint64_t solver = 0, results = 0;
  double apply = 0, big = 0;
  for (int32_t i = 0; i < T.n; i++) {
    if (T.cost[i] > big)
      big = T.cost[i];
    if (T.tail[i] > big)
      big = T.tail[i];
    solver += T.solver[i];
    results += T.result[i];
    apply += T.apply[i];
  }
  /* The critical path: the most time along one root-to-state path (each
   * state's own interval, then its refused moves after its last child);
   * no schedule on any number of ranks ends sooner (T_inf). */
  double *down = xcalloc((size_t)T.n, sizeof *down), cpath = 0;
  for (int32_t i = 0; i < T.n; i++) {
    down[i] = (i ? down[T.par[i]] : 0) + T.cost[i];
    if (down[i] + T.tail[i] > cpath)
      cpath = down[i] + T.tail[i];
  }
  free(down);
  if (!csv)
    printf("# trace %s: %d states%s, T1 %.3f s (trace wall %.3f s, CPU %.3f s), %llu solver "
           "calls, %llu result states, replay cost per level %.1f us (mean), longest indivisible step %.3f s, "
           "critical path %.4f s (speedup <= %.0f), %.3f s deferred\n"
           "# alpha %.1f us, beta %.2f GB/s, nap %.0f us after %.3f s of polling (%.1f us a poll), "
           "poll %.2f us, osend %.2f us, orecv "
           "%.2f us, token %s, merge %s (%.1f us and %.0f bytes a result), %d random tries, passive %s%s\n"
           "%6s %10s %9s %9s %8s %8s %9s %9s %9s %9s %8s %7s %7s %7s %9s %9s\n",
           path, T.n - 1, T.complete ? "" : " (partial tree)", T.total, T.wall_rec, T.cpu_rec,
           (unsigned long long)solver, (unsigned long long)results,
           T.n > 1 ? apply / (T.n - 1) * 1e6 : 0.0, big, cpath, cpath > 0 ? T.total / cpath : 0.0, T.deferred, pp.alpha * 1e6, pp.beta * 1e-9, pp.nap * 1e6,
           pp.spin, pp.spin_poll * 1e6,
           pp.poll * 1e6, pp.osend * 1e6, pp.orecv * 1e6, pp.tree_token ? "tree" : "ring",
           pp.trust ? "trust" : "refind", pp.adopt * 1e6, pp.text, pp.tries, pp.passive_after ? "after" : "before",
           pp.keep_one ? ", keep-one" : "", "ranks",
           "TP_s", "work_s", "done_s", "eff", "eff_run", "steal_req", "served", "empty", "lifeline", "tasks",
           "idle%", "replay%", "rounds", "msgs", "verd_msgs");
  const char *p = ranks;
  while (*p) {
    char *end;
    long P = strtol(p, &end, 10);
    if (end == p || P < 1 || P > 65536) {
      fprintf(stderr, "glbsim: bad rank count in %s\n", ranks);
      return 2;
    }
    outcome o = simulate(&T, &pp, (int)P);
    if (csv)
      printf("%ld,%.3f,%.4f,%.6f,%.4f,%.4f,%llu,%llu,%llu,%llu,%llu,%.4f,%.4f,%llu,%llu,%llu,%s\n", P,
             pp.alpha * 1e6, pp.beta * 1e-9, o.tp, o.eff, o.eff_run,
             (unsigned long long)o.steal_requests, (unsigned long long)o.steals_served,
             (unsigned long long)o.steals_empty, (unsigned long long)o.lifeline_pushes,
             (unsigned long long)o.tasks_sent, o.idle, o.replay, (unsigned long long)o.rounds,
             (unsigned long long)o.msgs, (unsigned long long)o.vmsgs, pp.tree_token ? "tree" : "ring");
    else
      printf("%6ld %10.4f %9.4f %9.4f %7.1f%% %7.1f%% %9llu %9llu %9llu %9llu %8llu %6.1f%% %6.2f%% %7llu "
             "%9llu %9llu\n",
             P, o.tp, o.work_end, o.search_end, 100 * o.eff, 100 * o.eff_run, (unsigned long long)o.steal_requests,
             (unsigned long long)o.steals_served, (unsigned long long)o.steals_empty,
             (unsigned long long)o.lifeline_pushes, (unsigned long long)o.tasks_sent,
             100 * o.idle, 100 * o.replay, (unsigned long long)o.rounds,
             (unsigned long long)o.msgs, (unsigned long long)o.vmsgs);
    fflush(stdout);
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',')
      break;
  }
  return 0;
}
