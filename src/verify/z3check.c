/* SPDX-License-Identifier: MIT */
/* src/verify/z3check.c - the Z3 subexpression checker (see z3check.h for
 * the encoding and the axioms).  The only file that includes z3.h.
 *
 * Invariants: the Z3 context is reference counted (Z3_mk_context_rc);
 * every AST this file keeps is inc_ref'd once and recorded either in
 * `held` (sorts, symbols, bound variables, axioms: released with the
 * solver) or in `qheld` (one query's terms: released when it ends), so
 * nothing leaks and nothing is freed early.  Z3 reports errors through
 * its error code (the handler ignores them); they are turned into
 * MIRS_SOLVER with Z3's message at the end of each entry point. */
#include "config.h"

#include "verify/z3check.h"

#include <stdio.h>
#include <string.h>
#include <z3.h>

struct mirs__z3_solver {
  mirs_context *ctx;
  Z3_context c;
  Z3_solver s;
  Z3_sort E, I, B, R;
  Z3_solver r; /* the countermodel solver (linear real arithmetic, no axioms) */
  Z3_func_decl add, mul, div, sum, rms, sub, fn[MIRS__ABS_FN_COUNT];
  Z3_ast x, y, z, i, j; /* bound variables */
  Z3_ast *held, *qheld;
  size_t nheld, capheld, nq, capq;
  bool nomem; /* holding a reference failed to allocate */
  bool hooked; /* its Z3_interrupt is a stop hook of the context */
  /* Targets whose weights (both families) are defined at the countermodel
   * solver's base level, so a query builds only its candidate's. */
  struct {
    const mirs__abs_arena *arena;
    mirs__abs_id id;
    uint64_t hash; /* (an id the arena released and reused is not taken for it) */
    Z3_ast w[2];
  } tw[8];
  int ntw;
};

static const char *const fn_names[MIRS__ABS_FN_COUNT] = {
    "exp", "sqrt", "silu", "gelu", "relu", "neg", "max", "causal_mask", "sigmoid", "tanh", "pow", "clamp",
    "min", "abs"};

/* Z3 error handler: errors are read back from the error code instead. */
static void ignore_error(Z3_context c, Z3_error_code e) {
  (void)c;
  (void)e;
}

/* Take a reference to a and record it (per query or permanent). */
static Z3_ast hold(mirs__z3_solver *s, Z3_ast a, bool query) {
  if (!a)
    return NULL;
  Z3_ast **arr = query ? &s->qheld : &s->held;
  size_t *n = query ? &s->nq : &s->nheld, *cap = query ? &s->capq : &s->capheld;
  if (mirs__core_grow(s->ctx, (void **)arr, cap, *n + 1, sizeof **arr) != MIRS_OK) {
    s->nomem = true;
    return a; /* still valid until the next Z3 call that may collect */
  }
  Z3_inc_ref(s->c, a);
  (*arr)[(*n)++] = a;
  return a;
}

/* Convert a pending Z3 error (or a failed hold) into a status, once. */
static mirs_status boundary(mirs__z3_solver *s, const char *what) {
  if (s->nomem) {
    s->nomem = false;
    return MIRS_FAIL(s->ctx, MIRS_NOMEM, "out of memory while %s", what);
  }
  Z3_error_code e = Z3_get_error_code(s->c);
  if (e == Z3_OK)
    return MIRS_OK;
  /* Resource exhaustion is not a solver error the search may skip: it
   * stops the search (exit 3) instead of going on without memory. */
  if (e == Z3_MEMOUT_FAIL)
    return MIRS_FAIL(s->ctx, MIRS_NOMEM, "z3 ran out of memory while %s", what);
  return MIRS_FAIL(s->ctx, MIRS_SOLVER, "z3 error while %s: %s", what, Z3_get_error_msg(s->c, e));
}

/* Declare a function symbol and keep it. */
static Z3_func_decl decl(mirs__z3_solver *s, const char *name, unsigned n, const Z3_sort *dom,
                         Z3_sort range) {
  Z3_func_decl d = Z3_mk_func_decl(s->c, Z3_mk_string_symbol(s->c, name), n, dom, range);
  hold(s, Z3_func_decl_to_ast(s->c, d), false);
  return d;
}

/* Apply f to one or two arguments. */
static Z3_ast app(mirs__z3_solver *s, Z3_func_decl f, Z3_ast a, Z3_ast b, bool query) {
  Z3_ast args[2] = {a, b};
  return hold(s, Z3_mk_app(s->c, f, b ? 2 : 1, args), query);
}

/* A (multi-)pattern of n terms. */
static Z3_pattern pat(mirs__z3_solver *s, unsigned n, Z3_ast t0, Z3_ast t1) {
  Z3_ast ts[2] = {t0, t1};
  Z3_pattern p = Z3_mk_pattern(s->c, n, ts);
  hold(s, Z3_pattern_to_ast(s->c, p), false);
  return p;
}

/* Assert ∀ bound. body with the given patterns. */
static void axiom(mirs__z3_solver *s, unsigned nb, const Z3_ast *bound, unsigned np,
                  const Z3_pattern *pats, Z3_ast body) {
  Z3_app b[5];
  for (unsigned k = 0; k < nb; k++)
    b[k] = Z3_to_app(s->c, bound[k]);
  Z3_ast q = hold(s, Z3_mk_forall_const(s->c, 0, nb, b, np, pats, body), false);
  if (q)
    Z3_solver_assert(s->c, s->s, q);
}

/* Assert ∀ bound. lhs = rhs, triggered by either side. */
static void equation(mirs__z3_solver *s, unsigned nb, const Z3_ast *bound, Z3_ast lhs, Z3_ast rhs) {
  Z3_pattern p[2] = {pat(s, 1, lhs, NULL), pat(s, 1, rhs, NULL)};
  axiom(s, nb, bound, 2, p, hold(s, Z3_mk_eq(s->c, lhs, rhs), false));
}

/* Assert the axioms listed in z3check.h. */
static void assert_axioms(mirs__z3_solver *s) {
  Z3_context c = s->c;
  Z3_ast x = s->x, y = s->y, z = s->z, i = s->i, j = s->j;
  Z3_ast xy[2] = {x, y}, xyz[3] = {x, y, z}, ix[2] = {i, x}, ixy[3] = {i, x, y}, ijx[3] = {i, j, x};
#define SUB(a, b) app(s, s->sub, (a), (b), false)
#define AND2(a, b) hold(s, Z3_mk_and(c, 2, (Z3_ast[]){(a), (b)}), false)
#define IMPL(a, b) hold(s, Z3_mk_implies(c, (a), (b)), false)
  Z3_ast one = hold(s, Z3_mk_int64(c, 1, s->I), false);
  Z3_ast zero = hold(s, Z3_mk_int64(c, 0, s->I), false);

  /* sub: reflexive, transitive */
  Z3_ast sxx = SUB(x, x);
  Z3_pattern p1 = pat(s, 1, sxx, NULL);
  axiom(s, 1, &x, 1, &p1, sxx);
  Z3_ast sxy = SUB(x, y), syz = SUB(y, z);
  Z3_pattern pt = pat(s, 2, sxy, syz);
  axiom(s, 3, xyz, 1, &pt, IMPL(AND2(sxy, syz), SUB(x, z)));

  /* arguments ⊑ applications */
  Z3_func_decl bins[3] = {s->add, s->mul, s->div};
  for (int k = 0; k < 3; k++) {
    Z3_ast t = app(s, bins[k], x, y, false);
    Z3_pattern p = pat(s, 1, t, NULL);
    axiom(s, 2, xy, 1, &p, AND2(SUB(x, t), SUB(y, t)));
  }
  for (int k = 0; k < MIRS__ABS_FN_COUNT; k++) {
    Z3_ast t = app(s, s->fn[k], x, NULL, false);
    Z3_pattern p = pat(s, 1, t, NULL);
    axiom(s, 1, &x, 1, &p, SUB(x, t));
  }
  Z3_ast six = app(s, s->sum, i, x, false), rix = app(s, s->rms, i, x, false);
  Z3_pattern psix = pat(s, 1, six, NULL), prix = pat(s, 1, rix, NULL);
  axiom(s, 2, ix, 1, &psix, SUB(x, six));
  axiom(s, 2, ix, 1, &prix, SUB(x, rix));
  /* partial sums: i | j → sum(i,x) ⊑ sum(j,x) */
  Z3_ast sjx = app(s, s->sum, j, x, false);
  Z3_pattern pij = pat(s, 2, six, sjx);
  Z3_ast divs = AND2(hold(s, Z3_mk_ge(c, i, one), false),
                     hold(s, Z3_mk_eq(c, hold(s, Z3_mk_mod(c, j, i), false), zero), false));
  axiom(s, 3, ijx, 1, &pij, IMPL(divs, SUB(six, sjx)));

  /* + and · commutative and associative */
  Z3_func_decl ac[2] = {s->add, s->mul};
  for (int k = 0; k < 2; k++) {
    Z3_ast a = app(s, ac[k], x, y, false), b = app(s, ac[k], y, x, false);
    Z3_pattern p = pat(s, 1, a, NULL);
    axiom(s, 2, xy, 1, &p, hold(s, Z3_mk_eq(c, a, b), false));
    equation(s, 3, xyz, app(s, ac[k], app(s, ac[k], x, y, false), z, false),
             app(s, ac[k], x, app(s, ac[k], y, z, false), false));
  }
  /* distributivity and division rules */
  equation(s, 3, xyz, app(s, s->mul, app(s, s->add, x, y, false), z, false),
           app(s, s->add, app(s, s->mul, x, z, false), app(s, s->mul, y, z, false), false));
  equation(s, 3, xyz,
           app(s, s->add, app(s, s->div, x, z, false), app(s, s->div, y, z, false), false),
           app(s, s->div, app(s, s->add, x, y, false), z, false));
  equation(s, 3, xyz, app(s, s->mul, x, app(s, s->div, y, z, false), false),
           app(s, s->div, app(s, s->mul, x, y, false), z, false));
  equation(s, 3, xyz, app(s, s->div, x, app(s, s->mul, y, z, false), false),
           app(s, s->div, app(s, s->div, x, y, false), z, false));

  /* sums */
  axiom(s, 2, ix, 1, &psix,
        IMPL(hold(s, Z3_mk_eq(c, i, one), false), hold(s, Z3_mk_eq(c, six, x), false)));
  Z3_ast nested = app(s, s->sum, i, sjx, false);
  Z3_pattern pn = pat(s, 1, nested, NULL);
  Z3_ast ij = hold(s, Z3_mk_mul(c, 2, (Z3_ast[]){i, j}), false);
  axiom(s, 3, ijx, 1, &pn,
        IMPL(AND2(hold(s, Z3_mk_ge(c, i, one), false), hold(s, Z3_mk_ge(c, j, one), false)),
             hold(s, Z3_mk_eq(c, nested, app(s, s->sum, ij, x, false)), false)));
  equation(s, 3, ixy, app(s, s->sum, i, app(s, s->mul, x, y, false), false),
           app(s, s->mul, six, y, false));
  equation(s, 3, ixy, app(s, s->sum, i, app(s, s->div, x, y, false), false),
           app(s, s->div, six, y, false));
  equation(s, 3, ixy, app(s, s->sum, i, app(s, s->add, x, y, false), false),
           app(s, s->add, six, app(s, s->sum, i, y, false), false));
#undef SUB
#undef AND2
#undef IMPL
}

/* Set the per-query limits on the solver. */
void mirs__z3_set_limits(mirs__z3_solver *s, unsigned timeout_ms, unsigned rlimit) {
  Z3_params p = Z3_mk_params(s->c);
  Z3_params_inc_ref(s->c, p);
  Z3_params_set_uint(s->c, p, Z3_mk_string_symbol(s->c, "timeout"),
                     timeout_ms ? timeout_ms : UINT32_MAX);
  Z3_params_set_uint(s->c, p, Z3_mk_string_symbol(s->c, "rlimit"), rlimit);
  Z3_solver_set_params(s->c, s->s, p);
  if (s->r)
    Z3_solver_set_params(s->c, s->r, p);
  Z3_params_dec_ref(s->c, p);
}

/* Create the context, symbols and axioms (body of mirs__z3_new). */
static mirs_status z3_setup(mirs__z3_solver *s, unsigned timeout_ms, unsigned rlimit) {
  Z3_config cfg = Z3_mk_config();
  if (!cfg)
    return MIRS_FAIL(s->ctx, MIRS_SOLVER, "z3: cannot create a configuration");
  Z3_set_param_value(cfg, "model", "false");
  s->c = Z3_mk_context_rc(cfg);
  Z3_del_config(cfg);
  if (!s->c)
    return MIRS_FAIL(s->ctx, MIRS_SOLVER, "z3: cannot create a context");
  Z3_set_error_handler(s->c, ignore_error);
  Z3_context c = s->c;
  s->E = Z3_mk_uninterpreted_sort(c, Z3_mk_string_symbol(c, "E"));
  hold(s, Z3_sort_to_ast(c, s->E), false);
  s->I = Z3_mk_int_sort(c);
  hold(s, Z3_sort_to_ast(c, s->I), false);
  s->B = Z3_mk_bool_sort(c);
  hold(s, Z3_sort_to_ast(c, s->B), false);
  s->R = Z3_mk_real_sort(c);
  hold(s, Z3_sort_to_ast(c, s->R), false);
  Z3_sort ee[2] = {s->E, s->E}, ie[2] = {s->I, s->E};
  s->add = decl(s, "add", 2, ee, s->E);
  s->mul = decl(s, "mul", 2, ee, s->E);
  s->div = decl(s, "div", 2, ee, s->E);
  s->sum = decl(s, "sum", 2, ie, s->E);
  s->rms = decl(s, "rms", 2, ie, s->E);
  s->sub = decl(s, "subexpr", 2, ee, s->B);
  for (int k = 0; k < MIRS__ABS_FN_COUNT; k++)
    s->fn[k] = decl(s, fn_names[k], 1, ee, s->E);
  s->x = hold(s, Z3_mk_const(c, Z3_mk_string_symbol(c, "x"), s->E), false);
  s->y = hold(s, Z3_mk_const(c, Z3_mk_string_symbol(c, "y"), s->E), false);
  s->z = hold(s, Z3_mk_const(c, Z3_mk_string_symbol(c, "z"), s->E), false);
  s->i = hold(s, Z3_mk_const(c, Z3_mk_string_symbol(c, "i"), s->I), false);
  s->j = hold(s, Z3_mk_const(c, Z3_mk_string_symbol(c, "j"), s->I), false);
  MIRS_CHECK(s->ctx, boundary(s, "declaring symbols"));
  s->s = Z3_mk_solver(c);
  if (!s->s)
    return boundary(s, "creating the solver");
  Z3_solver_inc_ref(c, s->s);
  s->r = Z3_mk_simple_solver(c);
  if (!s->r)
    return boundary(s, "creating the countermodel solver");
  Z3_solver_inc_ref(c, s->r);
  mirs__z3_set_limits(s, timeout_ms, rlimit);
  assert_axioms(s);
  return boundary(s, "asserting the axioms");
}

/* Stop hook (called from the watchdog thread): cancel the running query. */
static void interrupt_hook(void *arg) {
  Z3_interrupt((Z3_context)arg);
}

/* Create a worker's solver with the axioms asserted. */
mirs_status mirs__z3_new(mirs_context *ctx, unsigned timeout_ms, unsigned rlimit,
                         mirs__z3_solver **out) {
  *out = NULL;
  mirs__z3_solver *s = mirs__core_calloc(ctx, 1, sizeof *s);
  if (!s)
    return MIRS_NOMEM;
  s->ctx = ctx;
  if (ctx->opt.max_memory > 0) {
    /* Z3 allocates outside the context: bound it by the same limit (a
     * process-wide parameter, in megabytes). */
    char mb[32];
    long long m = (long long)(ctx->opt.max_memory >> 20) + 1;
    snprintf(mb, sizeof mb, "%lld", m < 128 ? 128 : m); /* (Z3's own floor) */
    Z3_global_param_set("memory_max_size", mb);
  }
  mirs_status st = z3_setup(s, timeout_ms, rlimit);
  if (st == MIRS_OK && mirs__core_hook_add(ctx, interrupt_hook, s->c) == MIRS_OK)
    s->hooked = true;
  if (st != MIRS_OK) {
    mirs__z3_free(s);
    return mirs__core_trace(ctx, st, __func__, __FILE__, __LINE__);
  }
  *out = s;
  return MIRS_OK;
}

/* Release every reference in arr[0..n). */
static void release_all(mirs__z3_solver *s, Z3_ast *arr, size_t *n) {
  while (*n > 0)
    Z3_dec_ref(s->c, arr[--*n]);
}

/* Free the solver, its context and every reference. */
void mirs__z3_free(mirs__z3_solver *s) {
  if (!s)
    return;
  if (s->hooked)
    mirs__core_hook_remove(s->ctx, interrupt_hook, s->c);
  if (s->c) {
    release_all(s, s->qheld, &s->nq);
    release_all(s, s->held, &s->nheld);
    if (s->s)
      Z3_solver_dec_ref(s->c, s->s);
    if (s->r)
      Z3_solver_dec_ref(s->c, s->r);
    Z3_del_context(s->c);
  }
  mirs__core_free(s->ctx, s->held);
  mirs__core_free(s->ctx, s->qheld);
  mirs__core_free(s->ctx, s);
}

/* The Z3 term of a normal-form node (defined below). */
static Z3_ast translate(mirs__z3_solver *s, const mirs__abs_arena *a, mirs__abs_id id);

/* Fold f over kids[off..off+n) of arena a, right-nested. */
static Z3_ast chain(mirs__z3_solver *s, const mirs__abs_arena *a, Z3_func_decl f, uint32_t off,
                    uint32_t n) {
  Z3_ast r = translate(s, a, a->kids[off + n - 1]);
  for (uint32_t k = n - 1; k-- > 0;)
    r = app(s, f, translate(s, a, a->kids[off + k]), r, true);
  return r;
}

/* The Z3 term of normal-form node id (atoms are constants "a!name"). */
static Z3_ast translate(mirs__z3_solver *s, const mirs__abs_arena *a, mirs__abs_id id) {
  const mirs__abs_node *p = mirs__abs_node_at(a, id);
  Z3_context c = s->c;
  switch ((mirs__abs_kind)p->kind) {
  case MIRS__ABS_ATOM: {
    char name[256];
    snprintf(name, sizeof name, "a!%s", mirs__abs_atom_name(a, id));
    return hold(s, Z3_mk_const(c, Z3_mk_string_symbol(c, name), s->E), true);
  }
  case MIRS__ABS_APP:
    return app(s, s->fn[p->fn], translate(s, a, p->arg), NULL, true);
  case MIRS__ABS_RMS:
    return app(s, s->rms, hold(s, Z3_mk_int64(c, p->k, s->I), true), translate(s, a, p->arg), true);
  case MIRS__ABS_BOX:
    return translate(s, a, p->arg);
  case MIRS__ABS_TERM: {
    Z3_ast num = chain(s, a, s->mul, p->off, p->n);
    if (p->k > 1)
      num = app(s, s->sum, hold(s, Z3_mk_int64(c, p->k, s->I), true), num, true);
    if (p->nd == 0)
      return num;
    Z3_ast den = chain(s, a, s->mul, p->off + p->n, p->nd);
    if (p->kd > 1)
      den = app(s, s->sum, hold(s, Z3_mk_int64(c, p->kd, s->I), true), den, true);
    return app(s, s->div, num, den, true);
  }
  case MIRS__ABS_POLY:
    return chain(s, a, s->add, p->off, p->n);
  }
  return NULL;
}

/* End a query opened with a push on solver sv: check goal (when it was
 * built without error), pop, release the query's terms; *r the result. */
static mirs_status finish_query(mirs__z3_solver *s, Z3_solver sv, Z3_ast goal, const char *what,
                                Z3_lbool *r) {
  *r = Z3_L_UNDEF;
  if (goal && Z3_get_error_code(s->c) == Z3_OK && !s->nomem) {
    Z3_solver_assert(s->c, sv, goal);
    *r = Z3_solver_check(s->c, sv);
  }
  mirs_status st = boundary(s, what);
  if (st == MIRS_OK && *r == Z3_L_UNDEF) {
    /* An unknown keeps the op, except when Z3 gave up for lack of memory
     * (a clean stop, exit 3). */
    Z3_string why = Z3_solver_get_reason_unknown(s->c, sv);
    if (why && (strstr(why, "memout") || strstr(why, "memory")))
      st = MIRS_FAIL(s->ctx, MIRS_NOMEM, "z3 ran out of memory while %s (%s)", what, why);
  }
  Z3_solver_pop(s->c, sv, 1);
  release_all(s, s->qheld, &s->nq);
  if (st != MIRS_OK)
    return st;
  return boundary(s, "popping a query");
}

/* Ask whether cand ⊑ target follows from the axioms. */
mirs_status mirs__z3_subexpr(mirs__z3_solver *s, const mirs__abs_arena *ca, mirs__abs_id cand,
                             const mirs__abs_arena *ta, mirs__abs_id target,
                             mirs__z3_answer *answer) {
  *answer = MIRS__Z3_UNKNOWN;
  Z3_context c = s->c;
  Z3_solver_push(c, s->s);
  Z3_ast ce = translate(s, ca, cand), te = translate(s, ta, target);
  Z3_ast goal = ce && te ? hold(s, Z3_mk_not(c, app(s, s->sub, ce, te, true)), true) : NULL;
  Z3_lbool r;
  MIRS_CHECK(s->ctx, finish_query(s, s->s, goal, "checking a subexpression query", &r));
  *answer = r == Z3_L_FALSE ? MIRS__Z3_UNSAT : r == Z3_L_TRUE ? MIRS__Z3_SAT : MIRS__Z3_UNKNOWN;
  return MIRS_OK;
}

/* ================================================================ countermodels
 *
 * A refutation needs a model of the axioms in which the candidate is not a
 * subexpression of the target (if candidate ⊑ target followed from the
 * axioms it would hold in every model).  The quantified encoding above
 * proves but in practice never finds such a model, so refutations are
 * sought in a family of models where every axiom holds by construction:
 * each expression denotes a weight, a non-negative real,
 *   atom v ↦ w_v;  x + y ↦ max(x, y);  x · y ↦ x + y;  x ÷ y ↦ x + K·y;
 *   f(x) ↦ x + c_f;  rms(n, x) ↦ x + r_n;  sum(i, x) ↦ x + σ·L(i);
 *   x ⊑ y  ↦  x ≤ y,
 * with parameters w, c, r, σ >= 0, a constant K >= 1, and L(i) the number
 * of prime factors of i below 1000, with multiplicity (additive, L(1) = 0,
 * and i | j gives L(i) <= L(j)).  Every axiom of z3check.h is then an
 * identity of max-plus arithmetic: ⊑ is a preorder; an argument weighs no
 * more than its application (weights are >= 0, K >= 1); + and · are
 * associative and commutative; (x+y)·z = x·z + y·z is
 * max(x,y) + z = max(x+z, y+z); the division rules add K·z on both sides;
 * sums merge and commute as L is additive.  So a choice of parameters
 * with weight(candidate) > weight(target) is a countermodel, found by Z3
 * in linear real arithmetic: a sound refutation.  Two families are asked
 * at once, K = 1 (an excess of factors anywhere) and K = 2 (a factor
 * moved from a denominator to a numerator, or back). */

/* A real numeral. */
static Z3_ast real(mirs__z3_solver *s, int64_t v) {
  return hold(s, Z3_mk_int64(s->c, v, s->R), true);
}

/* A parameter of family m (a real constant asserted >= 0 in this query). */
static Z3_ast param(mirs__z3_solver *s, int m, const char *kind, const char *name, int64_t k) {
  char buf[300];
  if (name)
    snprintf(buf, sizeof buf, "%s%d!%s", kind, m, name);
  else
    snprintf(buf, sizeof buf, "%s%d!%lld", kind, m, (long long)k);
  Z3_ast v = hold(s, Z3_mk_const(s->c, Z3_mk_string_symbol(s->c, buf), s->R), true);
  Z3_ast ge = v ? hold(s, Z3_mk_ge(s->c, v, real(s, 0)), true) : NULL;
  if (ge)
    Z3_solver_assert(s->c, s->r, ge);
  return v;
}

/* a + b (either may be NULL for 0). */
static Z3_ast radd(mirs__z3_solver *s, Z3_ast a, Z3_ast b) {
  if (!a || !b)
    return a ? a : b;
  return hold(s, Z3_mk_add(s->c, 2, (Z3_ast[]){a, b}), true);
}

/* k · a. */
static Z3_ast rscale(mirs__z3_solver *s, int64_t k, Z3_ast a) {
  if (!a || k == 1)
    return a;
  return hold(s, Z3_mk_mul(s->c, 2, (Z3_ast[]){real(s, k), a}), true);
}

static Z3_ast weight(mirs__z3_solver *s, const mirs__abs_arena *a, mirs__abs_id id, int m);

/* Sum of the weights of kids[off..off+n) (NULL when n == 0).  Equal
 * factors are adjacent (sorted by hash): a run of e copies is encoded once
 * as e · weight (a power by its exponent, not e repeated terms). */
static Z3_ast weight_product(mirs__z3_solver *s, const mirs__abs_arena *a, uint32_t off, uint32_t n,
                             int m) {
  Z3_ast r = NULL;
  for (uint32_t k = 0; k < n;) {
    uint32_t e = 1;
    while (k + e < n && a->kids[off + k + e] == a->kids[off + k])
      e++;
    r = radd(s, r, rscale(s, e, weight(s, a, a->kids[off + k], m)));
    k += e;
  }
  return r;
}

/* The weight of node id in family m (K = m + 1); NULL only on an error,
 * which boundary() reports. */
static Z3_ast weight(mirs__z3_solver *s, const mirs__abs_arena *a, mirs__abs_id id, int m) {
  const mirs__abs_node *p = mirs__abs_node_at(a, id);
  switch ((mirs__abs_kind)p->kind) {
  case MIRS__ABS_ATOM:
    return param(s, m, "w", mirs__abs_atom_name(a, id), 0);
  case MIRS__ABS_APP:
    return radd(s, weight(s, a, p->arg, m), param(s, m, "c", fn_names[p->fn], 0));
  case MIRS__ABS_RMS:
    return radd(s, weight(s, a, p->arg, m), param(s, m, "r", NULL, p->k));
  case MIRS__ABS_BOX:
    return weight(s, a, p->arg, m);
  case MIRS__ABS_TERM: {
    int64_t lk = mirs__abs_small_omega(p->k), lkd = p->nd ? mirs__abs_small_omega(p->kd) : 0;
    Z3_ast sigma = lk || lkd ? param(s, m, "s", "sum", 0) : NULL;
    Z3_ast num = radd(s, weight_product(s, a, p->off, p->n, m), lk ? rscale(s, lk, sigma) : NULL);
    if (p->nd == 0)
      return num ? num : real(s, 0);
    Z3_ast den =
        radd(s, weight_product(s, a, p->off + p->n, p->nd, m), lkd ? rscale(s, lkd, sigma) : NULL);
    return radd(s, num, rscale(s, m + 1, den));
  }
  case MIRS__ABS_POLY: {
    if (p->n == 0)
      return real(s, 0);
    if (p->n == 1)
      return weight(s, a, a->kids[p->off], m);
    /* max of the terms: v >= each, v = one of them */
    Z3_ast v = hold(s, Z3_mk_fresh_const(s->c, "max", s->R), true);
    Z3_ast *eq = mirs__core_calloc(s->ctx, p->n, sizeof *eq);
    if (!eq) {
      s->nomem = true;
      return NULL;
    }
    bool ok = v != NULL;
    for (uint32_t k = 0; ok && k < p->n; k++) {
      Z3_ast t = weight(s, a, a->kids[p->off + k], m);
      Z3_ast ge = t ? hold(s, Z3_mk_ge(s->c, v, t), true) : NULL;
      eq[k] = t ? hold(s, Z3_mk_eq(s->c, v, t), true) : NULL;
      ok = ge && eq[k];
      if (ok)
        Z3_solver_assert(s->c, s->r, ge);
    }
    Z3_ast any = ok ? hold(s, Z3_mk_or(s->c, p->n, eq), true) : NULL;
    mirs__core_free(s->ctx, eq);
    if (!any)
      return NULL;
    Z3_solver_assert(s->c, s->r, any);
    return v;
  }
  }
  return NULL;
}

/* Look for a countermodel to cand ⊑ target in the weight families. */
mirs_status mirs__z3_refute(mirs__z3_solver *s, const mirs__abs_arena *ca, mirs__abs_id cand,
                            const mirs__abs_arena *ta, mirs__abs_id target,
                            mirs__z3_answer *answer) {
  *answer = MIRS__Z3_UNKNOWN;
  Z3_context c = s->c;
  Z3_ast tw[2] = {NULL, NULL};
  for (int k = 0; k < s->ntw && !tw[0]; k++)
    if (s->tw[k].arena == ta && s->tw[k].id == target &&
        s->tw[k].hash == mirs__abs_hash(ta, target)) {
      tw[0] = s->tw[k].w[0];
      tw[1] = s->tw[k].w[1];
    }
  if (!tw[0] && s->ntw < (int)(sizeof s->tw / sizeof s->tw[0])) {
    /* Define the target's weights once, at the base level (they and their
     * constraints stay; each term keeps one reference of its own). */
    for (int m = 0; m < 2; m++)
      tw[m] = weight(s, ta, target, m);
    bool ok = tw[0] && tw[1] && Z3_get_error_code(c) == Z3_OK && !s->nomem;
    for (int m = 0; ok && m < 2; m++)
      hold(s, tw[m], false);
    release_all(s, s->qheld, &s->nq);
    MIRS_CHECK(s->ctx, boundary(s, "defining a target's weights"));
    if (ok) {
      s->tw[s->ntw].arena = ta;
      s->tw[s->ntw].id = target;
      s->tw[s->ntw].hash = mirs__abs_hash(ta, target);
      s->tw[s->ntw].w[0] = tw[0];
      s->tw[s->ntw].w[1] = tw[1];
      s->ntw++;
    } else {
      tw[0] = tw[1] = NULL;
    }
  }
  Z3_solver_push(c, s->r);
  Z3_ast gt[2] = {NULL, NULL};
  for (int m = 0; m < 2; m++) {
    Z3_ast cw = weight(s, ca, cand, m), t = tw[m] ? tw[m] : weight(s, ta, target, m);
    gt[m] = cw && t ? hold(s, Z3_mk_gt(c, cw, t), true) : NULL;
  }
  Z3_ast goal = gt[0] && gt[1] ? hold(s, Z3_mk_or(c, 2, gt), true) : NULL;
  Z3_lbool r;
  MIRS_CHECK(s->ctx, finish_query(s, s->r, goal, "looking for a countermodel", &r));
  /* sat: a countermodel, refuted; unsat: none in these families. */
  *answer = r == Z3_L_TRUE ? MIRS__Z3_SAT : r == Z3_L_FALSE ? MIRS__Z3_UNSAT : MIRS__Z3_UNKNOWN;
  return MIRS_OK;
}
