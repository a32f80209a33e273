/* SPDX-License-Identifier: MIT */
/* src/verify/z3check.h - the Z3 subexpression checker, the fallback of
 * pruning for (candidate, target) pairs the normal form, the cache and the
 * unit weight models cannot decide: it looks for a countermodel among the
 * weight models (mirs__z3_refute), and it can try to prove a pair from
 * the quantified axioms below (mirs__z3_subexpr, which the tests use).
 * z3check.c is the only file that includes z3.h; Z3 error codes become
 * MIRS_SOLVER (with Z3's message) there and nowhere else.
 *
 * One solver per worker thread: its Z3 context, sorts, function symbols and
 * axioms are created once; each query runs under push/pop with the
 * per-query limits set on the solver.  Encoding (E an uninterpreted sort,
 * extents Int):
 *   add, mul, div : E×E→E;  exp, sqrt, silu, gelu, relu, neg : E→E;
 *   sum, rms : Int×E→E;     sub : E×E→Bool (x is a subexpression of y)
 * axioms, each with the triggers noted:
 *   sub reflexive {sub(x,x)}, transitive {sub(x,y), sub(y,z)};
 *   args ⊑ application: x,y ⊑ add(x,y) {add(x,y)}, same for mul and div,
 *     x ⊑ f(x) {f(x)}, x ⊑ sum(i,x) {sum(i,x)}, x ⊑ rms(i,x) {rms(i,x)};
 *   partial sums: i | j → sum(i,x) ⊑ sum(j,x) {sum(i,x), sum(j,x)};
 *   + and · commutative {add(x,y)} and associative {both sides};
 *   (x+y)·z = x·z + y·z;  x/z + y/z = (x+y)/z;  x·(y/z) = (x·y)/z;
 *   x/(y·z) = (x/y)/z {both sides each};
 *   sum(1,x) = x {sum(i,x)};  sum(i,sum(j,x)) = sum(i·j,x) {lhs};
 *   sum(i,x·y) = sum(i,x)·y;  sum(i,x/y) = sum(i,x)/y;
 *   sum(i,x+y) = sum(i,x) + sum(i,y) {both sides each}.
 * A query asserts ¬sub(candidate, target): unsat proves the candidate may
 * be kept, sat (a model of the axioms where it is not a subexpression)
 * refutes it, anything else is unknown and keeps it. */
#ifndef MIRS_VERIFY_Z3CHECK_H
#define MIRS_VERIFY_Z3CHECK_H

#include "verify/absexpr.h"

typedef struct mirs__z3_solver mirs__z3_solver;

typedef enum mirs__z3_answer {
  MIRS__Z3_UNSAT,  /* candidate ⊑ target follows from the axioms */
  MIRS__Z3_SAT,    /* it does not */
  MIRS__Z3_UNKNOWN /* timeout, resource limit or incompleteness */
} mirs__z3_answer;

/* Create a Z3 context with the axioms asserted; limits as for set_limits.
 * MIRS_SOLVER with Z3's message on failure. */
mirs_status mirs__z3_new(mirs_context *ctx, unsigned timeout_ms, unsigned rlimit,
                         mirs__z3_solver **out);
void mirs__z3_free(mirs__z3_solver *s);
/* Per-query limits: wall-clock ms and Z3 resource units (0: none). */
void mirs__z3_set_limits(mirs__z3_solver *s, unsigned timeout_ms, unsigned rlimit);
/* Look for a countermodel to cand ⊑ target in the weight families of
 * z3check.c (models of every axiom above, decided in linear real
 * arithmetic without quantifiers): SAT when one exists (cand is refuted,
 * soundly), UNSAT when none does (nothing is proved), UNKNOWN at a limit.
 * This is what pruning asks: only a refutation prunes. */
mirs_status mirs__z3_refute(mirs__z3_solver *s, const mirs__abs_arena *ca, mirs__abs_id cand,
                            const mirs__abs_arena *ta, mirs__abs_id target,
                            mirs__z3_answer *answer);
/* Ask whether cand (of arena ca) ⊑ target (of arena ta) follows from the
 * quantified axioms (E-matching): UNSAT proves it.  Its SAT answers are
 * rare (no finite model is usually found), so pruning does not use it;
 * the tests use it to check the axiom set. */
mirs_status mirs__z3_subexpr(mirs__z3_solver *s, const mirs__abs_arena *ca, mirs__abs_id cand,
                             const mirs__abs_arena *ta, mirs__abs_id target,
                             mirs__z3_answer *answer);

#endif
