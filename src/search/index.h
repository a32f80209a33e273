/* SPDX-License-Identifier: MIT */
/* src/search/index.h - index labels, reduction sites and index multiplicities
 * (index.c): the dimension-aware part of the pruning.  See
 * docs/ARCHITECTURE.md. */
#ifndef MIRS_SEARCH_INDEX_H
#define MIRS_SEARCH_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "graph/graph.h"

/* Most reduction sites of a program (index.c). */
#define MIRS__MAX_SITES 64
/* Most sinks (sites and labelled output dims) of a program (index.c). */
#define MIRS__MAX_SINKS 128

/* Index labels (index.c, option index_check).  Every dim of the program's
 * tensors gets a label: the class of dims the program's ops identify
 * (elementwise ops align dims, matmul contracts a's last with b's
 * second-to-last); a dim of extent 1 has none.  A label is *reducible*
 * when the program sums over it (sum, a matmul contraction) or normalises
 * it (rms_norm).  The search carries the labels through every candidate
 * tensor and refuses an op that aligns or contracts two different labels
 * or reduces a label the program never reduces: such a value mixes
 * indices the program keeps apart (a sum over the batch dim, Q's head dim
 * contracted with V's sequence dim), so its abstract expression with
 * indices is no subexpression of an output -- the dimension-aware part of
 * the pruning that the index-free expressions of absexpr.h cannot see.
 *
 * Reduction sites.  Each reduction of the program (sum, a matmul's
 * contraction, rms_norm) is a *site*: its label, whether it is an rms,
 * and the inputs its summand depends on *through* that label (an input
 * that holds the label, or any input inside a non-linear function, a
 * denominator or an rms of a value that holds it): the factors that
 * cannot be taken out of the sum.  A candidate's reduction over label l
 * needs a site of its kind over l whose inputs its operands all depend
 * on: summing V over the sequence alone, when every sum over the
 * sequence also holds exp(Q K), builds nothing an output contains.
 *
 * Index multiplicities (option index_degree).  Each dim of a value is one
 * instance of its label (an index variable); its *multiplicity* in input
 * a is how many factors of a indexed by that instance one term of the
 * value holds: 1 for an input that holds the dim, the sum for mul, the
 * maximum for add, twice for square, MIRS__DEG_INF when a sits inside a
 * non-linear function (exp, sqrt, silu, gelu, relu, an rms over another
 * dim, a denominator) of a value that holds the instance.  Packed: 4 bits
 * per input, inputs 0 to 15 (the others are not tracked).  A site also
 * records the multiplicities of its summand through the reduced instance:
 * (X W)^2 sums x_k w_k (1 and 1) and squares afterwards, so the sum over k
 * of x_k x_k w_k w_k, or a value x_k x_k, is no part of it.  A candidate's
 * reduction needs a site whose multiplicities bound its summand's; and a
 * value is refused at once when some dim's multiplicities exceed those of
 * every *sink* of its label (the sites, and the program outputs' dims):
 * multiplicities never decrease along ops until the instance is reduced
 * or stored. */
#define MIRS__DEG_INF 15
#define MIRS__DEG_ATOMS 16
#define MIRS__LAB_NONE (-1)
#define MIRS__LAB_MAX 64

typedef struct mirs__search_space mirs__search_space;
typedef struct mirs__search_btinfo mirs__search_btinfo;
typedef struct mirs__search_worker mirs__search_worker;

/* Label the dims of program's tensors into plab (program->nt *
 * MIRS_MAX_DIMS entries); set sp->reducible and the reduction sites.
 * When the program has an op the labelling does not know (a custom
 * kernel), more than MIRS__LAB_MAX classes or 64 inputs, every entry is
 * MIRS__LAB_NONE (no label refuses anything); with more than
 * MIRS__MAX_SITES reductions sp->nsites is -1 (no site check). */
mirs_status mirs__search_label_program(mirs_context *ctx, const mirs_graph *program, int8_t *plab,
                                       mirs__search_space *sp);
/* Multiplicities of a program input (input index i, labels lab): 1 in
 * input i for each labelled dim. */
void mirs__search_input_deg(const int8_t *lab, int i, uint64_t *deg);
/* One operand of the index rule: labels, inputs it depends on, index
 * multiplicities per dim (see "Index multiplicities"). */
typedef struct mirs__search_ix {
  const int8_t *lab;
  uint64_t atoms;
  const uint64_t *deg;
} mirs__search_ix;
/* Labels of op's result (rank nd; operands a, b: b = a for a unary op)
 * into out, its multiplicities into deg; false when op aligns or
 * contracts two different labels, reduces a label the program never
 * reduces, or reduces one with no matching site for its operands (inputs
 * and multiplicities), or when the result holds a dim whose
 * multiplicities no sink of its label bounds.  dim: the reduced dim
 * (SUM, ACCUM_SUM). */
bool mirs__search_label_rule(const mirs__search_space *sp, mirs_op op, int dim, int nd,
                             const mirs__search_ix *a, const mirs__search_ix *b, int8_t *out,
                             uint64_t *deg);
/* The rule for block op `op` on operands with infos in[0..nin) (rank nd):
 * sets out->lab, out->atoms and out->deg. */
bool mirs__search_bop_labels(const mirs__search_space *sp, mirs_op op, int dim, int nin, int nd,
                             const mirs__search_btinfo *in, mirs__search_btinfo *out);
/* The rule for kernel op `op` on w's kernel tensors in[0..nin) (rank nd):
 * labels into lab, the inputs it depends on into *atoms, multiplicities
 * into deg. */
bool mirs__search_kop_labels(const mirs__search_worker *w, mirs_op op, int dim, int nin,
                             const int32_t *in, int nd, int8_t *lab, uint64_t *atoms,
                             uint64_t *deg);

#endif
