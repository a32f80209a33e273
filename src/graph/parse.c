/* SPDX-License-Identifier: MIT */
/* src/graph/parse.c - reader for .graph programs and µGraph files
 * (docs/FORMATS.md).
 *
 * One statement per line.  Each line is first read completely for syntax
 * (one syntax error per line, then recovery at the next line); only a
 * syntactically complete statement is checked for meaning and handed to
 * the builder (mirs__graph_* / mirs__bg_*), which owns every shape rule:
 * its message becomes a diagnostic at the statement's most telling token.
 *
 * Invariants:
 *  - the graph is only ever changed through builder calls, so after any
 *    number of failed statements it is still consistent and later
 *    statements keep being checked;
 *  - a name whose definition failed is entered as "poisoned": using it
 *    fails silently, so one mistake gives one diagnostic, not a cascade;
 *  - kernel names live in `ks`; block names in `bs`, which is emptied at
 *    each `}`; a block name never equals a kernel name;
 *  - every allocation is owned by the parser struct and released by
 *    parser_free, whatever the exit path (errors, MIRS_NOMEM);
 *  - the result is MIRS_OK with a graph, or an error status with
 *    *out == NULL; MIRS_SHAPE only when every diagnostic came from the
 *    builder's shape checks, MIRS_PARSE otherwise. */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/lex.h"

#define NAME_MAX_LEN 256 /* longest accepted name, in bytes */
#define MAX_LIST 8       /* list entries kept per keyword argument */
#define MAX_POS 4        /* positional arguments kept per call */
#define MAX_KW 8         /* keyword arguments per call */

typedef mirs__graph_token tok_t;

/* ---------------------------------------------------------------- symbols */

typedef struct sym {
  char *name; /* NULL: empty slot */
  int32_t id; /* tensor id (kernel or block) when !poisoned */
  int line;   /* where it was defined */
  bool poisoned;
} sym;

/* Open-addressing hash table of names (power-of-two capacity, load <= 1/2). */
typedef struct symtab {
  sym *e;
  size_t cap, n;
} symtab;

/* FNV-1a hash of a byte string. */
static uint64_t name_hash(const char *s, size_t len) {
  uint64_t h = UINT64_C(1469598103934665603);
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)s[i]) * UINT64_C(1099511628211);
  return h;
}

/* Entry named s[0..len) in st, or NULL. */
static sym *sym_find(const symtab *st, const char *s, size_t len) {
  if (st->cap == 0)
    return NULL;
  size_t i = (size_t)name_hash(s, len) & (st->cap - 1);
  while (st->e[i].name) {
    if (strlen(st->e[i].name) == len && memcmp(st->e[i].name, s, len) == 0)
      return &st->e[i];
    i = (i + 1) & (st->cap - 1);
  }
  return NULL;
}

/* Free every name and the table itself; st becomes empty. */
static void sym_clear(mirs_context *ctx, symtab *st) {
  for (size_t i = 0; i < st->cap; i++)
    mirs__core_free(ctx, st->e[i].name);
  mirs__core_free(ctx, st->e);
  st->e = NULL;
  st->cap = st->n = 0;
}

/* Insert a name known to be absent; MIRS_NOMEM on allocation failure. */
static mirs_status sym_add(mirs_context *ctx, symtab *st, const char *s, size_t len, int32_t id,
                           int line, bool poisoned) {
  if (2 * (st->n + 1) > st->cap) {
    size_t ncap = st->cap ? 2 * st->cap : 64;
    sym *ne = mirs__core_calloc(ctx, ncap, sizeof *ne);
    if (!ne)
      return MIRS_NOMEM;
    for (size_t i = 0; i < st->cap; i++) {
      if (!st->e[i].name)
        continue;
      size_t j = (size_t)name_hash(st->e[i].name, strlen(st->e[i].name)) & (ncap - 1);
      while (ne[j].name)
        j = (j + 1) & (ncap - 1);
      ne[j] = st->e[i];
    }
    mirs__core_free(ctx, st->e);
    st->e = ne;
    st->cap = ncap;
  }
  char *copy = mirs__core_alloc(ctx, len + 1);
  if (!copy)
    return MIRS_NOMEM;
  memcpy(copy, s, len);
  copy[len] = 0;
  size_t i = (size_t)name_hash(s, len) & (st->cap - 1);
  while (st->e[i].name)
    i = (i + 1) & (st->cap - 1);
  st->e[i] = (sym){copy, id, line, poisoned};
  st->n++;
  return MIRS_OK;
}

/* ---------------------------------------------------------------- parser state */

/* A growable list of tokens (names of one statement). */
typedef struct toklist {
  tok_t *v;
  size_t n, cap;
} toklist;

typedef struct kwarg {
  tok_t key;
  bool is_list;
  tok_t vtok;               /* the integer (or its '-') or the '[' */
  int64_t v;                /* scalar value */
  bool is_real;             /* a real literal (eps=1e-5): the value is r */
  bool is_name;             /* a name (dtype=f32 only): the value is vtok */
  double r;                 /* the value of a real literal or an integer */
  int n;                    /* list length (saturating) */
  int64_t lv[MAX_LIST];     /* first MAX_LIST list entries */
  tok_t ltok[MAX_LIST];     /* and their tokens */
} kwarg;

typedef struct call {
  tok_t op, rparen;
  int npos; /* saturating count; the first MAX_POS are kept */
  tok_t pos[MAX_POS];
  bool lit[MAX_POS];         /* pos[i] is a number literal (its '-' when negative) */
  mirs__scalar litv[MAX_POS]; /* and its value */
  int nkw;
  kwarg kw[MAX_KW];
} call;

typedef struct parser {
  mirs_context *ctx;
  const char *file;
  mirs__graph_lexer lx;
  tok_t tok;            /* current token */
  bool brace_in_line;   /* a '{' was lexed on the current line */
  int brace_line;       /* line of the last '{' */
  bool custom_in_line;  /* the word `custom` was lexed on the current line */
  mirs__graph_tok_kind prev_kind; /* the token before the current one */

  mirs_graph *g;        /* created at the first statement that needs it */
  char *gname;          /* name from the header, or NULL */
  bool ugraph;
  symtab ks, bs;

  int64_t nerr;
  bool all_shape;       /* every diagnostic so far was a builder shape error */
  bool stop;            /* max_errors reached or out of memory */
  mirs_status fatal;    /* MIRS_NOMEM once memory ran out */
  bool fail;            /* the current statement failed (diagnosed or poisoned) */
  char first[MIRS__ERRMSG_SIZE]; /* the first diagnostic's message */
  int first_line, first_col;

  int nstmt;            /* statements started at kernel level */
  int header_line;      /* line of the program/ugraph header, 0 = none */
  bool saw_output;

  toklist lhs;          /* names defined by the current statement */
  toklist names;        /* scratch: output names */

  /* The open custom block. */
  bool in_block;
  bool block_bad;       /* an error inside (or on the header): do not attach */
  mirs__bgraph *bg;     /* NULL when the header could not be checked */
  int block_line;
  tok_t custom_tok;
  toklist clhs;         /* the custom statement's result names */
  int block_nout;       /* successful output(...) statements */
  int block_outstmts;   /* output(...) statements seen */
  int junk;             /* nested '{' of rejected lines inside the block */
  toklist closes;       /* the '}' of each attached custom kernel, in op order */
} parser;

/* ---------------------------------------------------------------- diagnostics */

/* Report an error at token at; `shape` marks a builder shape error. */
static void perr_at(parser *p, int line, int col, bool shape, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static void perr_at(parser *p, int line, int col, bool shape, const char *fmt, ...) {
  p->fail = true;
  if (p->in_block)
    p->block_bad = true;
  if (p->stop)
    return;
  if (p->nerr >= p->ctx->opt.max_errors) {
    mirs__core_diag(p->ctx, p->file, line, col,
                    "too many errors (the max_errors option is %" PRId64 "); stopping",
                    p->ctx->opt.max_errors);
    p->stop = true;
    return;
  }
  char msg[MIRS__ERRMSG_SIZE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mirs__core_diag(p->ctx, p->file, line, col, "%s", msg);
  if (p->nerr == 0)
  {
    memcpy(p->first, msg, sizeof msg);
    p->first_line = line;
    p->first_col = col;
  }
  p->nerr++;
  if (!shape)
    p->all_shape = false;
}

#define PERR(p, t, ...) perr_at((p), (t)->line, (t)->col, false, __VA_ARGS__)

/* Describe a token into a local buffer (for messages). */
#define DESC(t, buf) mirs__graph_tok_describe((t), (buf), sizeof(buf))

/* Record out-of-memory: the parse stops and returns MIRS_NOMEM. */
static void nomem(parser *p) {
  p->fatal = MIRS_NOMEM;
  p->stop = true;
  p->fail = true;
}

/* Turn a failed builder call into a diagnostic at t (or stop on NOMEM). */
static void builder_err(parser *p, const tok_t *t, mirs_status st) {
  if (st == MIRS_NOMEM) {
    nomem(p);
    return;
  }
  const char *m = mirs_last_error(p->ctx);
  perr_at(p, t->line, t->col, st == MIRS_SHAPE, "%s", m[0] ? m : mirs_status_str(st));
  mirs_clear_error(p->ctx);
}

/* ---------------------------------------------------------------- tokens */

/* Advance to the next token. */
static void next(parser *p) {
  if (p->tok.kind == MIRS__GRAPH_TOK_NEWLINE)
    p->brace_in_line = p->custom_in_line = false;
  p->prev_kind = p->tok.kind;
  mirs__graph_lex_next(&p->lx, &p->tok);
  if (mirs__graph_tok_is(&p->tok, "custom"))
    p->custom_in_line = true;
  if (p->tok.kind == MIRS__GRAPH_TOK_LBRACE) {
    p->brace_in_line = true;
    p->brace_line = p->tok.line;
  }
}

/* The token after the current one, without consuming anything. */
static tok_t peek(const parser *p) {
  mirs__graph_lexer copy = p->lx;
  tok_t t;
  mirs__graph_lex_next(&copy, &t);
  return t;
}

/* True at a line break or the end of the file. */
static bool at_eol(const parser *p) {
  return p->tok.kind == MIRS__GRAPH_TOK_NEWLINE || p->tok.kind == MIRS__GRAPH_TOK_EOF;
}

/* Require the end of the statement; consume the line break. */
static bool expect_eol(parser *p) {
  if (!at_eol(p)) {
    char d[128];
    PERR(p, &p->tok, "unexpected %s at the end of the statement", DESC(&p->tok, d));
    return false;
  }
  if (p->tok.kind == MIRS__GRAPH_TOK_NEWLINE)
    next(p);
  return true;
}

/* Append t to a token list. */
static bool toklist_push(parser *p, toklist *l, const tok_t *t) {
  if (mirs__core_grow(p->ctx, (void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) != MIRS_OK) {
    nomem(p);
    return false;
  }
  l->v[l->n++] = *t;
  return true;
}

/* Words that start statements and so cannot name tensors. */
static bool is_reserved(const tok_t *t) {
  return mirs__graph_tok_is(t, "program") || mirs__graph_tok_is(t, "ugraph") ||
         mirs__graph_tok_is(t, "input") || mirs__graph_tok_is(t, "output");
}

/* Copy an identifier token into buf (NAME_MAX_LEN + 1 bytes). */
static const char *tok_name(const tok_t *t, char *buf) {
  size_t n = t->len > NAME_MAX_LEN ? NAME_MAX_LEN : t->len;
  memcpy(buf, t->start, n);
  buf[n] = 0;
  return buf;
}

/* Diagnose a token where a name was expected: a name starting with a
 * digit gets its own message, anything else "expected ..., found X". */
static void bad_name(parser *p, const tok_t *t, const char *expected) {
  char d[128];
  if (t->kind == MIRS__GRAPH_TOK_BADNAME)
    PERR(p, t, "name %s starts with a digit", DESC(t, d));
  else
    PERR(p, t, "expected %s, found %s", expected, DESC(t, d));
}

/* Read an optionally negative integer.  Returns 1 with *v and *at set,
 * 0 when the current token starts no integer (nothing consumed, nothing
 * reported), -1 after reporting a malformed or too large integer. */
static int parse_int(parser *p, int64_t *v, tok_t *at) {
  bool neg = false;
  *at = p->tok;
  if (p->tok.kind == MIRS__GRAPH_TOK_MINUS) {
    neg = true;
    next(p);
    if (p->tok.kind != MIRS__GRAPH_TOK_INT) {
      char d[128];
      PERR(p, &p->tok, "expected a number after '-', found %s", DESC(&p->tok, d));
      return -1;
    }
  } else if (p->tok.kind != MIRS__GRAPH_TOK_INT) {
    return 0;
  }
  const tok_t *n = &p->tok;
  uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  if (n->overflow || n->value > lim) {
    char esc[64];
    PERR(p, at, "integer %s%s does not fit in 64 bits", neg ? "-" : "",
         mirs__graph_escape(n->start, n->len, 30, esc, sizeof esc));
    return -1;
  }
  if (neg)
    *v = n->value == lim ? INT64_MIN : -(int64_t)n->value;
  else
    *v = (int64_t)n->value;
  next(p);
  return 1;
}

/* Read a number literal (INT or NUM, after an optional '-') as an exact
 * decimal.  Returns 1 with *v and *at set, 0 when the current token starts
 * no number (nothing consumed), -1 after reporting a bad one. */
static int parse_number(parser *p, mirs__scalar *v, tok_t *at) {
  *at = p->tok;
  if (p->tok.kind == MIRS__GRAPH_TOK_MINUS) {
    tok_t nx = peek(p);
    if (nx.kind != MIRS__GRAPH_TOK_INT && nx.kind != MIRS__GRAPH_TOK_NUM)
      return 0;
    next(p);
  }
  if (p->tok.kind != MIRS__GRAPH_TOK_INT && p->tok.kind != MIRS__GRAPH_TOK_NUM)
    return 0;
  /* The '-' and the number are adjacent or not: parse the number's own
   * text and negate, so "- 2" reads as -2 like an integer keyword value. */
  int r = mirs__scalar_parse(p->tok.start, p->tok.len, v);
  if (r == 0 && at->kind == MIRS__GRAPH_TOK_MINUS)
    r = mirs__scalar_make(-v->m, v->e, v) ? 0 : 2;
  if (r != 0) {
    char esc[64];
    const char *txt = mirs__graph_escape(at->start, (size_t)(p->tok.start + p->tok.len - at->start),
                                         40, esc, sizeof esc);
    if (r == 1)
      PERR(p, at, "the number %s has more than 18 significant digits", txt);
    else
      PERR(p, at,
           "the number %s is out of range (a finite double with an exponent within +-%d)", txt,
           MIRS__SCALAR_EXP_MAX);
    return -1;
  }
  next(p);
  return 1;
}

/* ---------------------------------------------------------------- graph and names */

/* Create the graph on first need (named by the header, else "program"). */
static bool ensure_graph(parser *p) {
  if (p->g)
    return true;
  mirs_status st = mirs__graph_new(p->ctx, p->gname, &p->g);
  if (st != MIRS_OK) {
    if (st == MIRS_NOMEM) {
      nomem(p);
    } else {
      tok_t at = p->tok;
      builder_err(p, &at, st);
    }
    return false;
  }
  p->g->ugraph = p->ugraph;
  p->g->names_indexed = true; /* (this parser's symbol tables check every name) */
  return true;
}

/* Define name t in st as tensor id (or poisoned). */
static void define(parser *p, symtab *st, const tok_t *t, int32_t id, bool poisoned) {
  if (sym_add(p->ctx, st, t->start, t->len, id, t->line, poisoned) != MIRS_OK)
    nomem(p);
}

/* After a failed statement: enter each of its new names into st as
 * poisoned, and forget them. */
static void poison_lhs(parser *p, symtab *st) {
  for (size_t i = 0; i < p->lhs.n && !p->fatal; i++) {
    const tok_t *t = &p->lhs.v[i];
    if (t->kind != MIRS__GRAPH_TOK_IDENT || t->len > NAME_MAX_LEN || is_reserved(t))
      continue;
    if (!sym_find(st, t->start, t->len))
      define(p, st, t, -1, true);
  }
  p->lhs.n = 0;
}

/* Check that t may name a new tensor here; reports why not. */
static bool check_new_name(parser *p, const tok_t *t) {
  char d[128];
  if (is_reserved(t)) {
    PERR(p, t, "%s is a reserved word and cannot name a tensor", DESC(t, d));
    return false;
  }
  if (t->len > NAME_MAX_LEN) {
    PERR(p, t, "name %s is too long (%zu bytes; at most %d)", DESC(t, d), t->len, NAME_MAX_LEN);
    return false;
  }
  const sym *s;
  if (p->in_block) {
    if ((s = sym_find(&p->bs, t->start, t->len))) {
      PERR(p, t, "redefined name %s (first defined at line %d)", DESC(t, d), s->line);
      return false;
    }
    if ((s = sym_find(&p->ks, t->start, t->len))) {
      PERR(p, t,
           "block tensor %s has the same name as a kernel tensor (defined at line %d); "
           "block names must not shadow kernel names",
           DESC(t, d), s->line);
      return false;
    }
    for (size_t i = 0; i < p->clhs.n; i++) {
      const tok_t *c = &p->clhs.v[i];
      if (c->len == t->len && memcmp(c->start, t->start, t->len) == 0) {
        PERR(p, t, "block tensor %s has the same name as a result of its custom kernel",
             DESC(t, d));
        return false;
      }
    }
    return true;
  }
  if ((s = sym_find(&p->ks, t->start, t->len))) {
    PERR(p, t, "redefined name %s (first defined at line %d)", DESC(t, d), s->line);
    return false;
  }
  return true;
}

/* Check every name of p->lhs (all are checked; false if any failed). */
static bool check_lhs(parser *p) {
  bool ok = true;
  for (size_t i = 0; i < p->lhs.n; i++) {
    for (size_t j = 0; j < i; j++) {
      const tok_t *a = &p->lhs.v[j], *b = &p->lhs.v[i];
      if (a->len == b->len && memcmp(a->start, b->start, a->len) == 0) {
        char d[128];
        PERR(p, b, "name %s appears twice on the left of '='", DESC(b, d));
        ok = false;
        goto next_name;
      }
    }
    if (!check_new_name(p, &p->lhs.v[i]))
      ok = false;
  next_name:;
  }
  return ok;
}

/* Resolve an argument name at the current level.  Returns 1 with *id,
 * 0 for a poisoned name (statement fails silently), -1 after reporting. */
static int resolve(parser *p, const tok_t *t, int32_t *id) {
  char d[128];
  const sym *s = NULL;
  if (t->kind != MIRS__GRAPH_TOK_IDENT) { /* a number literal */
    PERR(p, t, "expected a tensor name, found the number %s", DESC(t, d));
    return -1;
  }
  if (p->in_block) {
    s = sym_find(&p->bs, t->start, t->len);
    if (!s && (s = sym_find(&p->ks, t->start, t->len))) {
      char nb[NAME_MAX_LEN + 1];
      PERR(p, t,
           "%s is a kernel tensor; inside a custom block load it first with "
           "'x = input(%s, imap=[...], fmap=f)'",
           DESC(t, d), tok_name(t, nb));
      return -1;
    }
  } else {
    s = sym_find(&p->ks, t->start, t->len);
  }
  if (!s) {
    PERR(p, t, "undefined name %s", DESC(t, d));
    return -1;
  }
  if (s->poisoned) {
    p->fail = true;
    if (p->in_block)
      p->block_bad = true;
    return 0;
  }
  *id = s->id;
  return 1;
}

/* ---------------------------------------------------------------- calls */

/* Parse "( args )" with p->tok at '('.  Syntax only. */
static bool parse_call(parser *p, call *c) {
  char d[128];
  next(p);
  if (p->tok.kind == MIRS__GRAPH_TOK_RPAREN) {
    c->rparen = p->tok;
    next(p);
    return true;
  }
  for (;;) {
    if (p->tok.kind == MIRS__GRAPH_TOK_IDENT) {
      tok_t nm = p->tok;
      tok_t nx = peek(p);
      if (nx.kind == MIRS__GRAPH_TOK_EQ) {
        for (int i = 0; i < c->nkw; i++) {
          if (c->kw[i].key.len == nm.len && memcmp(c->kw[i].key.start, nm.start, nm.len) == 0) {
            PERR(p, &nm, "duplicate keyword argument %s", DESC(&nm, d));
            return false;
          }
        }
        if (c->nkw == MAX_KW) {
          PERR(p, &nm, "too many keyword arguments");
          return false;
        }
        kwarg *k = &c->kw[c->nkw++];
        memset(k, 0, sizeof *k);
        k->key = nm;
        next(p);
        next(p);
        if (p->tok.kind == MIRS__GRAPH_TOK_LBRACK) {
          k->is_list = true;
          k->vtok = p->tok;
          next(p);
          if (p->tok.kind == MIRS__GRAPH_TOK_RBRACK) {
            next(p);
          } else {
            for (;;) {
              int64_t v;
              tok_t at;
              int r = parse_int(p, &v, &at);
              if (r < 0)
                return false;
              if (r == 0) {
                PERR(p, &p->tok, "expected an integer in the list, found %s", DESC(&p->tok, d));
                return false;
              }
              if (k->n < MAX_LIST) {
                k->lv[k->n] = v;
                k->ltok[k->n] = at;
              }
              if (k->n < INT_MAX)
                k->n++;
              if (p->tok.kind == MIRS__GRAPH_TOK_COMMA) {
                next(p);
              } else if (p->tok.kind == MIRS__GRAPH_TOK_RBRACK) {
                next(p);
                break;
              } else {
                PERR(p, &p->tok, "expected ',' or ']' in the list, found %s", DESC(&p->tok, d));
                return false;
              }
            }
          }
        } else if (p->tok.kind == MIRS__GRAPH_TOK_IDENT && mirs__graph_tok_is(&nm, "dtype")) {
          k->is_name = true;
          k->vtok = p->tok;
          next(p);
        } else if (p->tok.kind == MIRS__GRAPH_TOK_NUM) {
          char lit[64];
          size_t n = p->tok.len < sizeof lit - 1 ? p->tok.len : sizeof lit - 1;
          memcpy(lit, p->tok.start, n);
          lit[n] = '\0';
          k->is_real = true;
          k->r = strtod(lit, NULL);
          k->vtok = p->tok;
          next(p);
        } else {
          int r = parse_int(p, &k->v, &k->vtok);
          if (r < 0)
            return false;
          k->r = (double)k->v;
          if (r == 0) {
            char e[128];
            PERR(p, &p->tok, "expected an integer or a list after %s=, found %s", DESC(&nm, e),
                 DESC(&p->tok, d));
            return false;
          }
        }
      } else if (nx.kind == MIRS__GRAPH_TOK_LPAREN) {
        PERR(p, &nm,
             "nested calls are not supported: give %s(...) a name in a statement of its own",
             DESC(&nm, d));
        return false;
      } else {
        if (c->nkw > 0) {
          PERR(p, &nm, "positional argument %s after keyword arguments", DESC(&nm, d));
          return false;
        }
        if (c->npos < MAX_POS) {
          c->pos[c->npos] = nm;
          c->lit[c->npos] = false;
        }
        if (c->npos < INT_MAX)
          c->npos++;
        next(p);
      }
    } else if (p->tok.kind == MIRS__GRAPH_TOK_INT || p->tok.kind == MIRS__GRAPH_TOK_NUM ||
               (p->tok.kind == MIRS__GRAPH_TOK_MINUS && c->nkw == 0)) {
      mirs__scalar v;
      tok_t at;
      int r = parse_number(p, &v, &at);
      if (r < 0)
        return false;
      if (r == 0) {
        tok_t nx = peek(p);
        PERR(p, &nx, "expected a number after '-', found %s", DESC(&nx, d));
        return false;
      }
      if (c->nkw > 0) {
        PERR(p, &at, "positional argument after keyword arguments");
        return false;
      }
      if (c->npos < MAX_POS) {
        c->pos[c->npos] = at;
        c->lit[c->npos] = true;
        c->litv[c->npos] = v;
      }
      if (c->npos < INT_MAX)
        c->npos++;
    } else if (p->tok.kind == MIRS__GRAPH_TOK_BADNAME) {
      bad_name(p, &p->tok, "");
      return false;
    } else {
      PERR(p, &p->tok, "expected a tensor name or a keyword argument, found %s",
           DESC(&p->tok, d));
      return false;
    }
    if (p->tok.kind == MIRS__GRAPH_TOK_COMMA) {
      next(p);
    } else if (p->tok.kind == MIRS__GRAPH_TOK_RPAREN) {
      c->rparen = p->tok;
      next(p);
      return true;
    } else {
      PERR(p, &p->tok, "expected ',' or ')' in the argument list, found %s", DESC(&p->tok, d));
      return false;
    }
  }
}

/* Keyword argument named word, or NULL. */
static kwarg *kw_get(call *c, const char *word) {
  for (int i = 0; i < c->nkw; i++)
    if (mirs__graph_tok_is(&c->kw[i].key, word))
      return &c->kw[i];
  return NULL;
}

/* Check that every keyword of c is one of allowed[] (NULL-terminated);
 * reports the others with an op-specific message. */
static bool kw_only(parser *p, call *c, const char *opname, const char *const *allowed) {
  bool ok = true;
  char d[128];
  for (int i = 0; i < c->nkw; i++) {
    const tok_t *k = &c->kw[i].key;
    bool found = false;
    for (const char *const *a = allowed; *a; a++)
      if (mirs__graph_tok_is(k, *a))
        found = true;
    if (found)
      continue;
    ok = false;
    if (mirs__graph_tok_is(k, "dim"))
      PERR(p, k, "'%s' takes no dim= argument", opname);
    else if (mirs__graph_tok_is(k, "fused") && !p->in_block)
      PERR(p, k, "fused= is allowed only on elementwise operators inside a custom block");
    else if (mirs__graph_tok_is(k, "fused"))
      PERR(p, k, "'%s' takes no fused= argument (only elementwise operators are fused)", opname);
    else
      PERR(p, k, "unknown keyword argument %s for '%s'", DESC(k, d), opname);
  }
  return ok;
}

/* Require keyword `word` as a scalar; reports its absence at ')'. */
static kwarg *kw_scalar(parser *p, call *c, const char *opname, const char *word) {
  kwarg *k = kw_get(c, word);
  if (!k) {
    PERR(p, &c->rparen, "'%s' requires %s=", opname, word);
    return NULL;
  }
  if (k->is_list || k->is_real) {
    PERR(p, &k->vtok, "%s= takes an integer, not a %s", word, k->is_list ? "list" : "real number");
    return NULL;
  }
  return k;
}

/* Require keyword `word` as a list of exactly 3 integers. */
static kwarg *kw_list3(parser *p, call *c, const char *opname, const char *word,
                       const char *what) {
  kwarg *k = kw_get(c, word);
  if (!k) {
    PERR(p, &c->rparen, "'%s' requires %s=[..., ..., ...]", opname, word);
    return NULL;
  }
  if (!k->is_list) {
    PERR(p, &k->vtok, "%s= takes a list of 3 integers (%s), like %s=[1, 1, 1]", word, what, word);
    return NULL;
  }
  if (k->n != 3) {
    PERR(p, &k->vtok, "%s= needs exactly 3 entries (%s), got %d", word, what, k->n);
    return NULL;
  }
  return k;
}

/* ---------------------------------------------------------------- statements */

/* The dtype spelled by token t into *out; reports an unknown one. */
static bool dtype_of(parser *p, const tok_t *t, mirs_dtype *out) {
  char d[128];
  if (mirs__graph_tok_is(t, "f16"))
    *out = MIRS_F16;
  else if (mirs__graph_tok_is(t, "bf16"))
    *out = MIRS_BF16;
  else if (mirs__graph_tok_is(t, "f32"))
    *out = MIRS_F32;
  else {
    PERR(p, t, "unknown dtype %s (expected f16, bf16 or f32)", DESC(t, d));
    return false;
  }
  return true;
}

/* `program NAME` / `ugraph NAME`. */
static bool header_stmt(parser *p) {
  tok_t kw = p->tok;
  char d[128];
  next(p);
  if (p->tok.kind != MIRS__GRAPH_TOK_IDENT) {
    char e[32];
    snprintf(e, sizeof e, "a name after '%s'", mirs__graph_tok_is(&kw, "ugraph") ? "ugraph" : "program");
    bad_name(p, &p->tok, e);
    return false;
  }
  tok_t name = p->tok;
  next(p);
  if (!expect_eol(p))
    return false;
  if (p->header_line) {
    PERR(p, &kw, "%s: a header was already given at line %d", DESC(&kw, d), p->header_line);
    return true;
  }
  if (p->nstmt > 1) {
    PERR(p, &kw, "%s must be the first statement", DESC(&kw, d));
    return true;
  }
  if (name.len > NAME_MAX_LEN) {
    PERR(p, &name, "name %s is too long (%zu bytes; at most %d)", DESC(&name, d), name.len,
         NAME_MAX_LEN);
    return true;
  }
  p->header_line = kw.line;
  char buf[NAME_MAX_LEN + 1];
  p->gname = mirs__core_strdup(p->ctx, tok_name(&name, buf));
  if (!p->gname)
    nomem(p);
  p->ugraph = mirs__graph_tok_is(&kw, "ugraph");
  return true;
}

/* `input NAME : DTYPE[d0, d1, ...]`. */
static bool input_stmt(parser *p) {
  char d[128];
  next(p);
  if (p->tok.kind != MIRS__GRAPH_TOK_IDENT) {
    bad_name(p, &p->tok, "a name after 'input'");
    return false;
  }
  tok_t name = p->tok;
  if (!toklist_push(p, &p->lhs, &name))
    return false;
  next(p);
  if (p->tok.kind != MIRS__GRAPH_TOK_COLON) {
    PERR(p, &p->tok, "expected ':' after the input name, found %s", DESC(&p->tok, d));
    return false;
  }
  next(p);
  if (p->tok.kind != MIRS__GRAPH_TOK_IDENT) {
    PERR(p, &p->tok, "expected a dtype (f16, bf16 or f32), found %s", DESC(&p->tok, d));
    return false;
  }
  tok_t dt = p->tok;
  next(p);
  if (p->tok.kind != MIRS__GRAPH_TOK_LBRACK) {
    PERR(p, &p->tok, "expected '[' after the dtype, found %s", DESC(&p->tok, d));
    return false;
  }
  next(p);
  if (p->tok.kind == MIRS__GRAPH_TOK_RBRACK) {
    PERR(p, &p->tok, "a tensor needs at least one dimension");
    return false;
  }
  mirs__shape shape = {0};
  int64_t maxdims = p->ctx->opt.max_dims;
  if (maxdims > MIRS_MAX_DIMS)
    maxdims = MIRS_MAX_DIMS;
  int64_t maxel = p->ctx->opt.max_elements, numel = 1;
  for (;;) {
    int64_t v;
    tok_t at;
    int r = parse_int(p, &v, &at);
    if (r < 0)
      return false;
    if (r == 0) {
      PERR(p, &p->tok, "expected a dimension, found %s", DESC(&p->tok, d));
      return false;
    }
    if (v < 1) {
      PERR(p, &at, "dimension must be at least 1, got %" PRId64, v);
      return false;
    }
    if (shape.ndim >= maxdims) {
      PERR(p, &at, "too many dimensions: at most %" PRId64 " (the max_dims option)", maxdims);
      return false;
    }
    if (v > maxel / numel) {
      PERR(p, &at,
           "tensor %s has more than %" PRId64 " elements (the max_elements option)",
           DESC(&name, d), maxel);
      return false;
    }
    numel *= v;
    shape.d[shape.ndim++] = v;
    if (p->tok.kind == MIRS__GRAPH_TOK_COMMA) {
      next(p);
    } else if (p->tok.kind == MIRS__GRAPH_TOK_RBRACK) {
      next(p);
      break;
    } else {
      PERR(p, &p->tok, "expected ',' or ']' in the dimension list, found %s", DESC(&p->tok, d));
      return false;
    }
  }
  if (!expect_eol(p))
    return false;
  if (!check_new_name(p, &name))
    return true;
  mirs_dtype dtype;
  if (!dtype_of(p, &dt, &dtype))
    return true;
  if (!ensure_graph(p))
    return true;
  char buf[NAME_MAX_LEN + 1];
  int32_t id;
  mirs_status st = mirs__graph_add_input(p->g, tok_name(&name, buf), dtype, &shape, &id);
  if (st != MIRS_OK) {
    builder_err(p, &name, st);
    return true;
  }
  define(p, &p->ks, &name, id, false);
  return true;
}

/* `output A, B, ...` at kernel level. */
static bool output_stmt(parser *p) {
  char d[128];
  tok_t kw = p->tok;
  p->saw_output = true;
  next(p);
  if (p->tok.kind == MIRS__GRAPH_TOK_LPAREN) {
    PERR(p, &kw,
         "output(...) with omap= may appear only inside a custom block; "
         "at kernel level write 'output NAME'");
    return false;
  }
  p->names.n = 0;
  for (;;) {
    if (p->tok.kind != MIRS__GRAPH_TOK_IDENT) {
      bad_name(p, &p->tok, p->names.n ? "a name after ','" : "a name after 'output'");
      return false;
    }
    if (!toklist_push(p, &p->names, &p->tok))
      return false;
    next(p);
    if (p->tok.kind == MIRS__GRAPH_TOK_COMMA) {
      next(p);
    } else if (at_eol(p)) {
      break;
    } else {
      PERR(p, &p->tok, "expected ',' or the end of the line after an output name, found %s",
           DESC(&p->tok, d));
      return false;
    }
  }
  expect_eol(p);
  for (size_t i = 0; i < p->names.n && !p->stop; i++) {
    const tok_t *t = &p->names.v[i];
    int32_t id;
    if (resolve(p, t, &id) <= 0)
      continue;
    bool dup = false;
    for (int32_t j = 0; j < p->g->nout; j++)
      if (p->g->outputs[j] == id)
        dup = true;
    if (dup) {
      PERR(p, t, "%s is already an output (listed twice)", DESC(t, d));
      continue;
    }
    mirs_status st = mirs__graph_mark_output(p->g, id);
    if (st != MIRS_OK)
      builder_err(p, t, st);
  }
  return true;
}

/* Look up an operator by spelling; MIRS_OP_COUNT when unknown. */
static mirs_op op_lookup(const tok_t *t) {
  for (int i = 0; i < MIRS_OP_COUNT; i++)
    if (mirs__graph_tok_is(t, mirs__graph_ops[i].name))
      return (mirs_op)i;
  return MIRS_OP_COUNT;
}

/* Open a block after a custom(...) { line; bg may be NULL. */
static void open_block(parser *p, const tok_t *custom_tok, mirs__bgraph *bg, bool bad) {
  p->in_block = true;
  p->block_bad = bad;
  p->bg = bg;
  p->block_line = custom_tok->line;
  p->custom_tok = *custom_tok;
  p->block_nout = 0;
  p->block_outstmts = 0;
  p->junk = 0;
}

/* Semantics of `NAMES = custom(grid=..., block=..., forloop=F) {`. */
static void custom_sem(parser *p, call *c) {
  bool ok = check_lhs(p);
  static const char *const allowed[] = {"grid", "block", "forloop", NULL};
  if (c->npos > 0) {
    PERR(p, &c->pos[0],
         "'custom' takes only keyword arguments (grid=, block=, forloop=); "
         "its inputs are the input(...) statements of its block");
    ok = false;
  }
  if (!kw_only(p, c, "custom", allowed))
    ok = false;
  int32_t grid[3], block[3], forloop = 1;
  bool dims_ok = true;
  const char *what[2] = {"grid", "block"};
  int32_t *dst[2] = {grid, block};
  for (int w = 0; w < 2; w++) {
    kwarg *k = kw_list3(p, c, "custom", what[w], "x, y, z");
    if (!k) {
      dims_ok = false;
      continue;
    }
    for (int i = 0; i < 3; i++) {
      if (k->lv[i] < 1 || k->lv[i] > INT32_MAX) {
        PERR(p, &k->ltok[i], "%s= entries must be between 1 and %d, got %" PRId64, what[w],
             INT32_MAX, k->lv[i]);
        dims_ok = false;
        break;
      }
      dst[w][i] = (int32_t)k->lv[i];
    }
  }
  kwarg *f = kw_scalar(p, c, "custom", "forloop");
  if (!f) {
    dims_ok = false;
  } else if (f->v < 1 || f->v > INT32_MAX) {
    PERR(p, &f->vtok, "forloop= must be between 1 and %d, got %" PRId64, INT32_MAX, f->v);
    dims_ok = false;
  } else {
    forloop = (int32_t)f->v;
  }
  mirs__bgraph *bg = NULL;
  if (dims_ok) {
    mirs_status st = mirs__bg_new(p->ctx, grid, block, forloop, &bg);
    if (st != MIRS_OK) {
      builder_err(p, &c->op, st);
      bg = NULL;
    }
  }
  ok = ok && dims_ok && bg && !p->fail;
  if (!ok)
    poison_lhs(p, &p->ks);
  open_block(p, &c->op, bg, !ok);
  if (ok) {
    /* The result names wait for the closing brace. */
    for (size_t i = 0; i < p->lhs.n; i++)
      if (!toklist_push(p, &p->clhs, &p->lhs.v[i]))
        return;
    p->lhs.n = 0;
  }
}

/* Semantics of `t = input(X, imap=[..], fmap=f)` inside a block. */
static void block_input_sem(parser *p, call *c) {
  char d[128];
  static const char *const allowed[] = {"imap", "fmap", NULL};
  bool ok = check_lhs(p);
  int32_t src = -1;
  if (c->npos != 1) {
    PERR(p, c->npos > 1 ? &c->pos[1] : &c->rparen, "'input' takes 1 kernel tensor, got %d",
         c->npos);
    ok = false;
  } else {
    const tok_t *t = &c->pos[0];
    const sym *s = sym_find(&p->ks, t->start, t->len);
    if (!s && sym_find(&p->bs, t->start, t->len)) {
      PERR(p, t, "%s is a block tensor; input(...) loads a kernel tensor", DESC(t, d));
      ok = false;
    } else if (!s) {
      PERR(p, t, "undefined name %s", DESC(t, d));
      ok = false;
    } else if (s->poisoned) {
      p->fail = p->block_bad = true;
      ok = false;
    } else {
      src = s->id;
    }
  }
  if (!kw_only(p, c, "input", allowed))
    ok = false;
  int32_t imap[3];
  int32_t fmap = -1;
  kwarg *ki = kw_list3(p, c, "input", "imap", "the tensor dim split by grid x, y, z; -1 none");
  if (!ki) {
    ok = false;
  } else {
    for (int i = 0; i < 3; i++) {
      if (ki->lv[i] < -1 || ki->lv[i] >= MIRS_MAX_DIMS) {
        PERR(p, &ki->ltok[i], "imap entries must be a tensor dimension (0..%d) or -1, got %" PRId64,
             MIRS_MAX_DIMS - 1, ki->lv[i]);
        ok = false;
        break;
      }
      imap[i] = (int32_t)ki->lv[i];
    }
  }
  kwarg *kf = kw_scalar(p, c, "input", "fmap");
  if (!kf) {
    ok = false;
  } else if (kf->v < -1 || kf->v >= MIRS_MAX_DIMS) {
    PERR(p, &kf->vtok, "fmap= must be a tensor dimension (0..%d) or -1, got %" PRId64,
         MIRS_MAX_DIMS - 1, kf->v);
    ok = false;
  } else {
    fmap = (int32_t)kf->v;
  }
  if (p->lhs.n > 1) {
    PERR(p, &p->lhs.v[1], "'input' produces one tensor, but %zu names are given before '='",
         p->lhs.n);
    ok = false;
  }
  if (!ok || !p->bg || p->fail) {
    p->fail = true;
    return;
  }
  char buf[NAME_MAX_LEN + 1];
  int32_t id;
  mirs_status st = mirs__bg_add_input(p->g, p->bg, tok_name(&p->lhs.v[0], buf), src, imap, fmap, &id);
  if (st != MIRS_OK) {
    /* Point at the map entry that names a dim the tensor lacks, if any. */
    const tok_t *at = &c->op;
    int rank = p->g->t[src].shape.ndim;
    for (int i = 2; i >= 0; i--)
      if (imap[i] >= rank)
        at = &ki->ltok[i];
    if (fmap >= rank)
      at = &kf->vtok;
    builder_err(p, at, st);
    return;
  }
  define(p, &p->bs, &p->lhs.v[0], id, false);
}

/* Number literals among c's arguments: add/sub/mul/div with one constant
 * operand become the *_scalar ops, pow takes (x, exponent) and clamp
 * (x, lo, hi).  Rewrites c to the tensor argument alone and *op to the op
 * that takes the constants (cst).  False after reporting a misuse. */
static bool const_args(parser *p, call *c, mirs_op *op, mirs__scalar *cst) {
  const char *name = mirs__graph_ops[*op].name;
  int nlit = 0, n = c->npos < MAX_POS ? c->npos : MAX_POS;
  for (int i = 0; i < n; i++)
    nlit += c->lit[i];
  if (mirs__op_nconst(*op) > 0 && *op != MIRS_OP_POW && *op != MIRS_OP_CLAMP) {
    PERR(p, &c->op, "'%s' is internal: write the constant as an operand, like add(x, 0.5), "
                    "sub(1, x) or div(x, 8)", name);
    return false;
  }
  bool arith = *op == MIRS_OP_ADD || *op == MIRS_OP_SUB || *op == MIRS_OP_MUL || *op == MIRS_OP_DIV;
  if (nlit == 0 && !(*op == MIRS_OP_POW || *op == MIRS_OP_CLAMP))
    return true;
  if (arith) {
    if (c->npos != 2)
      return true; /* (op_sem reports the count) */
    if (nlit == 2) {
      PERR(p, &c->pos[1], "'%s' of two numbers: at least one operand must be a tensor", name);
      return false;
    }
    int k = c->lit[0] ? 0 : 1;
    mirs__scalar v = c->litv[k];
    if (*op == MIRS_OP_ADD) {
      *op = MIRS_OP_ADD_SCALAR;
    } else if (*op == MIRS_OP_MUL) {
      *op = MIRS_OP_MUL_SCALAR;
    } else if (*op == MIRS_OP_SUB) {
      *op = k == 1 ? MIRS_OP_ADD_SCALAR : MIRS_OP_RSUB_SCALAR;
      if (k == 1)
        mirs__scalar_make(-v.m, v.e, &v);
    } else {
      if (k == 1 && v.m == 0) {
        PERR(p, &c->pos[1], "division by the constant 0");
        return false;
      }
      *op = k == 1 ? MIRS_OP_DIV_SCALAR : MIRS_OP_RDIV_SCALAR;
    }
    cst[0] = v;
    c->pos[0] = c->pos[1 - k];
    c->lit[0] = false;
    c->npos = 1;
    return true;
  }
  int want = *op == MIRS_OP_POW ? 2 : *op == MIRS_OP_CLAMP ? 3 : 0;
  if (want == 0) {
    for (int i = 0; i < n; i++)
      if (c->lit[i]) {
        PERR(p, &c->pos[i],
             "'%s' takes tensor arguments; a number may be an operand of add, sub, mul, div, "
             "pow or clamp only", name);
        return false;
      }
  }
  const char *form = *op == MIRS_OP_POW ? "pow(x, exponent)" : "clamp(x, lo, hi)";
  if (c->npos != want) {
    PERR(p, c->npos > want ? &c->pos[want] : &c->rparen, "'%s' takes %d arguments, %s; got %d",
         name, want, form, c->npos);
    return false;
  }
  for (int i = 0; i < want; i++)
    if (c->lit[i] != (i > 0)) {
      PERR(p, &c->pos[i], "'%s' is %s: argument %d must be %s", name, form, i + 1,
           i > 0 ? "a number" : "a tensor name");
      return false;
    }
  for (int i = 1; i < want; i++)
    cst[i - 1] = c->litv[i];
  if (*op == MIRS_OP_CLAMP && cst[0].v > cst[1].v) {
    PERR(p, &c->pos[2], "clamp: the lower bound is above the upper bound");
    return false;
  }
  c->npos = 1;
  return true;
}

/* Semantics of a compute or accumulator op (kernel or block level). */
static void op_sem(parser *p, call *c, mirs_op op) {
  mirs__scalar cst[2];
  memset(cst, 0, sizeof cst);
  if (!const_args(p, c, &op, cst)) {
    p->fail = true;
    return;
  }
  const mirs__opinfo *info = &mirs__graph_ops[op];
  bool ok = check_lhs(p);
  bool has_dim = mirs__op_has_dim(op);
  bool fusable = p->in_block && mirs__op_is_elementwise(op);
  const char *allowed[3] = {NULL, NULL, NULL};
  allowed[0] = has_dim ? "dim" : fusable ? "fused" : mirs__op_has_eps(op) ? "eps" : NULL;
  if (op == MIRS_OP_ACCUM_RMS && !p->in_block)
    allowed[0] = NULL; /* (a block op: its own error follows) */
  if (!kw_only(p, c, info->name, allowed))
    ok = false;
  int32_t in[2] = {-1, -1};
  int nin = info->arity;
  if (c->npos != nin) {
    PERR(p, c->npos > nin ? &c->pos[nin] : &c->rparen, "'%s' takes %d argument%s, got %d",
         info->name, nin, nin == 1 ? "" : "s", c->npos);
    ok = false;
  } else {
    for (int i = 0; i < nin; i++)
      if (resolve(p, &c->pos[i], &in[i]) <= 0)
        ok = false;
  }
  int dim = -1;
  kwarg *kd = NULL;
  if (has_dim) {
    kd = kw_scalar(p, c, info->name, "dim");
    if (!kd) {
      ok = false;
    } else if (kd->v < -MIRS_MAX_DIMS || kd->v >= MIRS_MAX_DIMS) {
      PERR(p, &kd->vtok, "dim=%" PRId64 " is out of range (a tensor has at most %d dimensions)",
           kd->v, MIRS_MAX_DIMS);
      ok = false;
    } else {
      dim = (int)kd->v;
    }
  }
  double eps = mirs__op_eps_default(op);
  kwarg *ke = mirs__op_has_eps(op) ? kw_get(c, "eps") : NULL;
  if (ke) {
    if (ke->is_list || !(ke->r >= 0.0 && ke->r < 1.0)) { /* (NaN fails too) */
      PERR(p, &ke->vtok, "eps= must be a number in [0, 1), like eps=1e-5");
      ok = false;
    }
    eps = ke->r;
  }
  bool fused = false;
  kwarg *kf = fusable ? kw_get(c, "fused") : NULL;
  if (kf) {
    if (kf->is_list || kf->is_real || kf->v < 0 || kf->v > 1) {
      PERR(p, &kf->vtok, "fused= must be 0 or 1");
      ok = false;
    }
    fused = !kf->is_list && kf->v == 1;
  }
  if (p->lhs.n > 1) {
    PERR(p, &p->lhs.v[1], "'%s' produces one tensor, but %zu names are given before '='",
         info->name, p->lhs.n);
    ok = false;
  }
  if (!ok || p->fail || (p->in_block && !p->bg)) {
    p->fail = true;
    return;
  }
  char buf[NAME_MAX_LEN + 1];
  const char *name = tok_name(&p->lhs.v[0], buf);
  int32_t id;
  mirs_status st;
  int rank;
  if (p->in_block) {
    st = mirs__bg_add_op_c(p->g, p->bg, name, op, nin, in, dim, fused, cst, &id);
    rank = p->bg->t[in[0]].shape.ndim;
  } else {
    st = mirs__graph_add_op_c(p->g, name, op, nin, in, dim, cst, &id);
    rank = p->g->t[in[0]].shape.ndim;
  }
  if (st == MIRS_OK && p->in_block)
    p->bg->ops[p->bg->nops - 1].eps = mirs__op_has_eps(op) ? eps : 0.0;
  else if (st == MIRS_OK)
    p->g->ops[p->g->nops - 1].eps = mirs__op_has_eps(op) ? eps : 0.0;
  if (st != MIRS_OK) {
    /* A dim outside the argument's rank is best shown at the dim. */
    const tok_t *at = (kd && (dim < -rank || dim >= rank)) ? &kd->vtok : &c->op;
    builder_err(p, at, st);
    return;
  }
  define(p, p->in_block ? &p->bs : &p->ks, &p->lhs.v[0], id, false);
}

/* Semantics of a layout op: reshape(x, shape=[...]) or permute(x,
 * dims=[...]).  The entries that are wrong whatever x's shape (a reshape
 * dim below 1 other than one -1; a permute entry out of x's rank range or
 * repeated) are shown at the entry; the rest (element counts) comes from
 * the builder, shown at the list. */
static void layout_sem(parser *p, call *c, mirs_op op) {
  const char *name = mirs__graph_ops[op].name;
  const char *word = op == MIRS_OP_RESHAPE ? "shape" : "dims";
  const char *allowed[2] = {word, NULL};
  bool ok = check_lhs(p);
  if (!kw_only(p, c, name, allowed))
    ok = false;
  int32_t x = -1;
  if (c->npos != 1) {
    PERR(p, c->npos > 1 ? &c->pos[1] : &c->rparen, "'%s' takes 1 argument, got %d", name,
         c->npos);
    ok = false;
  } else if (resolve(p, &c->pos[0], &x) <= 0) {
    ok = false;
  }
  kwarg *k = kw_get(c, word);
  if (!k) {
    PERR(p, &c->rparen, "'%s' requires %s=[...], like %s", name, word,
         op == MIRS_OP_RESHAPE ? "shape=[2, 4, 16]" : "dims=[0, 2, 1, 3]");
    ok = false;
  } else if (!k->is_list) {
    PERR(p, &k->vtok, "%s= takes a list of integers, like %s", word,
         op == MIRS_OP_RESHAPE ? "shape=[2, 4, 16]" : "dims=[0, 2, 1, 3]");
    ok = false;
    k = NULL;
  } else if (k->n < 1 || k->n > MIRS_MAX_DIMS) {
    PERR(p, &k->vtok, "%s= needs 1 to %d entries, got %d", word, MIRS_MAX_DIMS, k->n);
    ok = false;
    k = NULL;
  }
  int rank = ok && x >= 0 ? p->g->t[x].shape.ndim : 0;
  for (int i = 0; k && i < k->n; i++) {
    int64_t v = k->lv[i];
    if (op == MIRS_OP_RESHAPE && v < 1 && v != -1) {
      PERR(p, &k->ltok[i], "reshape: shape= entry %" PRId64 " is not a dimension (>= 1, or -1 "
           "for the one inferred)", v);
      ok = false;
      break;
    }
    for (int j = 0; op == MIRS_OP_RESHAPE && v == -1 && j < i; j++)
      if (k->lv[j] == -1) {
        PERR(p, &k->ltok[i], "reshape: shape= may hold only one -1 (the dim inferred)");
        ok = false;
      }
    if (op != MIRS_OP_PERMUTE || rank == 0)
      continue;
    if (v < -rank || v >= rank) {
      PERR(p, &k->ltok[i], "permute: dims= entry %" PRId64 " is out of range for rank %d "
           "(valid: %d to %d)", v, rank, -rank, rank - 1);
      ok = false;
      break;
    }
    for (int j = 0; j < i; j++)
      if ((k->lv[j] + rank) % rank == (v + rank) % rank) {
        PERR(p, &k->ltok[i], "permute: dims= is not a permutation: dim %" PRId64
             " appears twice", (v + rank) % rank);
        ok = false;
        break;
      }
    if (!ok)
      break;
  }
  if (p->lhs.n > 1) {
    PERR(p, &p->lhs.v[1], "'%s' produces one tensor, but %zu names are given before '='", name,
         p->lhs.n);
    ok = false;
  }
  if (!ok || p->fail) {
    p->fail = true;
    return;
  }
  mirs__shape lay = {.ndim = k->n};
  memcpy(lay.d, k->lv, sizeof(int64_t) * (size_t)k->n);
  char buf[NAME_MAX_LEN + 1];
  int32_t id;
  mirs_status st = mirs__graph_add_layout(p->g, tok_name(&p->lhs.v[0], buf), op, x, &lay, &id);
  if (st != MIRS_OK) {
    builder_err(p, &k->vtok, st);
    return;
  }
  define(p, &p->ks, &p->lhs.v[0], id, false);
}

/* Semantics of slice(x, dim=D, start=S, len=L).  The shape rule
 * (mirs__shape_layout) decides; its reason is shown at the value it is
 * about: dim= when D is out of x's range, start= when S is, else len=. */
static void slice_sem(parser *p, call *c) {
  const char *allowed[4] = {"dim", "start", "len", NULL};
  bool ok = check_lhs(p);
  if (!kw_only(p, c, "slice", allowed))
    ok = false;
  int32_t x = -1;
  if (c->npos != 1) {
    PERR(p, c->npos > 1 ? &c->pos[1] : &c->rparen, "'slice' takes 1 argument, got %d", c->npos);
    ok = false;
  } else if (resolve(p, &c->pos[0], &x) <= 0) {
    ok = false;
  }
  kwarg *kv[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; i++)
    if ((kv[i] = kw_scalar(p, c, "slice", allowed[i])) == NULL)
      ok = false;
  if (p->lhs.n > 1) {
    PERR(p, &p->lhs.v[1], "'slice' produces one tensor, but %zu names are given before '='",
         p->lhs.n);
    ok = false;
  }
  if (!ok || p->fail) {
    p->fail = true;
    return;
  }
  const mirs__shape *xs = &p->g->t[x].shape;
  mirs__shape lay = {.ndim = 3, .d = {kv[0]->v, kv[1]->v, kv[2]->v}}, rl, rs;
  char why[512];
  if (!mirs__shape_layout(MIRS_OP_SLICE, xs, &lay, &rl, &rs, why, sizeof why)) {
    int64_t r = xs->ndim, d = lay.d[0] < 0 ? lay.d[0] + r : lay.d[0];
    int at = d < 0 || d >= r ? 0 : lay.d[1] < 0 || lay.d[1] >= xs->d[d] ? 1 : 2;
    PERR(p, &kv[at]->vtok, "%s", why);
    return;
  }
  char buf[NAME_MAX_LEN + 1];
  int32_t id;
  mirs_status st =
      mirs__graph_add_layout(p->g, tok_name(&p->lhs.v[0], buf), MIRS_OP_SLICE, x, &lay, &id);
  if (st != MIRS_OK) {
    builder_err(p, &c->op, st);
    return;
  }
  define(p, &p->ks, &p->lhs.v[0], id, false);
}

/* `A, B = op(args) [{]` at either level. */
static bool assign_stmt(parser *p) {
  char d[128];
  for (;;) {
    if (p->tok.kind != MIRS__GRAPH_TOK_IDENT) {
      bad_name(p, &p->tok, p->lhs.n ? "a name after ','" : "a statement");
      return false;
    }
    if (!toklist_push(p, &p->lhs, &p->tok))
      return false;
    next(p);
    if (p->tok.kind != MIRS__GRAPH_TOK_COMMA)
      break;
    next(p);
  }
  if (p->tok.kind != MIRS__GRAPH_TOK_EQ) {
    const tok_t *last = &p->lhs.v[p->lhs.n - 1];
    char e[128];
    PERR(p, &p->tok, "expected '=' after %s, found %s", DESC(last, e), DESC(&p->tok, d));
    return false;
  }
  next(p);
  if (p->tok.kind != MIRS__GRAPH_TOK_IDENT) {
    PERR(p, &p->tok, "expected an operator name after '=', found %s", DESC(&p->tok, d));
    return false;
  }
  call c;
  memset(&c, 0, sizeof c);
  c.op = p->tok;
  next(p);
  if (p->tok.kind != MIRS__GRAPH_TOK_LPAREN) {
    char e[128];
    PERR(p, &p->tok, "expected '(' after %s, found %s", DESC(&c.op, e), DESC(&p->tok, d));
    return false;
  }
  if (!parse_call(p, &c))
    return false;
  mirs_op op = op_lookup(&c.op);
  if (op == MIRS_OP_CUSTOM) {
    if (p->tok.kind != MIRS__GRAPH_TOK_LBRACE) {
      PERR(p, &p->tok, "expected '{' after custom(...), found %s", DESC(&p->tok, d));
      /* Treat the following lines as its (rejected) block anyway. */
      while (!at_eol(p))
        next(p);
      if (p->in_block) {
        p->junk++;
      } else {
        poison_lhs(p, &p->ks);
        open_block(p, &c.op, NULL, true);
      }
      expect_eol(p);
      return true;
    }
    next(p);
    if (!at_eol(p)) {
      PERR(p, &p->tok, "unexpected %s after '{': block statements start on the next line",
           DESC(&p->tok, d));
      return false;
    }
    expect_eol(p);
    if (p->in_block) {
      PERR(p, &c.op, "custom kernels cannot be nested: 'custom' may appear only at kernel level");
      p->junk++;
      return true;
    }
    custom_sem(p, &c);
    return true;
  }
  if (!expect_eol(p))
    return false;
  if (op == MIRS_OP_COUNT) {
    PERR(p, &c.op, "unknown operator %s", DESC(&c.op, d));
    return true;
  }
  if (op == MIRS_OP_OUTPUT) {
    if (p->in_block)
      PERR(p, &c.op,
           "output(...) stores a tile and yields no tensor: write 'output(t, omap=[...])' "
           "without a name and '='");
    else
      PERR(p, &c.op, "'output' is a block-level operator; it may appear only inside a custom block");
    return true;
  }
  int level = p->in_block ? MIRS_LEVEL_B : MIRS_LEVEL_K;
  if (!(mirs__graph_ops[op].levels & level)) {
    PERR(p, &c.op, "'%s' is a %s-level operator; it may appear only %s", mirs__graph_ops[op].name,
         p->in_block ? "kernel" : "block",
         p->in_block ? "at kernel level" : "inside a custom block");
    return true;
  }
  if (!ensure_graph(p))
    return true;
  if (op == MIRS_OP_INPUT)
    block_input_sem(p, &c);
  else if (op == MIRS_OP_SLICE)
    slice_sem(p, &c);
  else if (mirs__op_is_layout(op))
    layout_sem(p, &c, op);
  else
    op_sem(p, &c, op);
  return true;
}

/* `output(t, omap=[o0, o1, o2])` inside a block. */
static bool block_output_stmt(parser *p) {
  char d[128];
  call c;
  memset(&c, 0, sizeof c);
  c.op = p->tok;
  p->block_outstmts++;
  next(p);
  if (p->tok.kind != MIRS__GRAPH_TOK_LPAREN) {
    PERR(p, &p->tok,
         "expected '(' after 'output' inside a custom block (output(t, omap=[o0, o1, o2])), "
         "found %s",
         DESC(&p->tok, d));
    return false;
  }
  if (!parse_call(p, &c) || !expect_eol(p))
    return false;
  static const char *const allowed[] = {"omap", "dtype", NULL};
  bool ok = kw_only(p, &c, "output", allowed);
  /* dtype=: how the kernel tensor is stored (default: as the kernel's
   * first input), e.g. f32 partial sums of a split-K kernel. */
  int32_t stored = -1;
  kwarg *kd = kw_get(&c, "dtype");
  if (kd && !kd->is_name) {
    PERR(p, &kd->vtok, "dtype= takes f16, bf16 or f32");
    ok = false;
  } else if (kd) {
    mirs_dtype dt;
    if (dtype_of(p, &kd->vtok, &dt))
      stored = (int32_t)dt;
    else
      ok = false;
  }
  int32_t t = -1;
  if (c.npos != 1) {
    PERR(p, c.npos > 1 ? &c.pos[1] : &c.rparen, "'output' takes 1 block tensor, got %d", c.npos);
    ok = false;
  } else if (resolve(p, &c.pos[0], &t) <= 0) {
    ok = false;
  }
  int32_t omap[3];
  kwarg *k = kw_list3(p, &c, "output", "omap", "the output dim split by grid x, y, z; -1 none");
  if (!k) {
    ok = false;
  } else {
    for (int i = 0; i < 3; i++) {
      if (k->lv[i] < -1 || k->lv[i] >= MIRS_MAX_DIMS) {
        PERR(p, &k->ltok[i], "omap entries must be a dimension (0..%d) or -1, got %" PRId64,
             MIRS_MAX_DIMS - 1, k->lv[i]);
        ok = false;
        break;
      }
      omap[i] = (int32_t)k->lv[i];
    }
  }
  if (!ok || p->fail || !p->bg) {
    p->fail = p->block_bad = true;
    return true;
  }
  mirs_status st = mirs__bg_add_output_dt(p->g, p->bg, t, omap, stored);
  if (st != MIRS_OK) {
    const tok_t *at = &c.op;
    int rank = p->bg->t[t].shape.ndim;
    for (int i = 2; i >= 0; i--)
      if (omap[i] >= rank)
        at = &k->ltok[i];
    builder_err(p, at, st);
    return true;
  }
  p->block_nout++;
  return true;
}

/* Close the open block at token at ('}' or end of file). */
static void close_block(parser *p, const tok_t *at, bool eof) {
  char **names = NULL;
  size_t n = p->clhs.n;
  if (!eof && p->block_outstmts == 0)
    PERR(p, at, "custom block has no output(...) statement");
  if (!p->block_bad && p->bg && n != (size_t)p->block_nout) {
    PERR(p, &p->clhs.v[0], "custom kernel has %zu result name%s but its block stores %d output%s",
         n, n == 1 ? "" : "s", p->block_nout, p->block_nout == 1 ? "" : "s");
  }
  bool attached = false;
  if (!p->block_bad && p->bg && !p->stop) {
    names = mirs__core_calloc(p->ctx, n ? n : 1, sizeof *names);
    if (!names) {
      nomem(p);
      goto done;
    }
    for (size_t i = 0; i < n; i++) {
      char buf[NAME_MAX_LEN + 1];
      names[i] = mirs__core_strdup(p->ctx, tok_name(&p->clhs.v[i], buf));
      if (!names[i]) {
        nomem(p);
        goto done;
      }
    }
    mirs__bgraph *bg = p->bg;
    p->bg = NULL; /* owned by the graph from here, also on failure */
    int32_t first;
    mirs_status st = mirs__graph_add_custom(p->g, bg, (const char *const *)names, &first);
    if (st != MIRS_OK) {
      builder_err(p, &p->custom_tok, st);
      goto done;
    }
    const mirs__kop *kop = &p->g->ops[p->g->nops - 1];
    for (size_t i = 0; i < n && i < (size_t)kop->nout; i++)
      define(p, &p->ks, &p->clhs.v[i], kop->out[i], false);
    attached = true;
    toklist_push(p, &p->closes, at);
  }
done:
  if (names) {
    for (size_t i = 0; i < n; i++)
      mirs__core_free(p->ctx, names[i]);
    mirs__core_free(p->ctx, names);
  }
  if (p->bg) {
    mirs__bg_free(p->ctx, p->bg);
    p->bg = NULL;
  }
  sym_clear(p->ctx, &p->bs);
  p->in_block = false;
  if (!attached && !p->fatal) {
    for (size_t i = 0; i < n; i++) {
      const tok_t *t = &p->clhs.v[i];
      if (!sym_find(&p->ks, t->start, t->len))
        define(p, &p->ks, t, -1, true);
    }
  }
  p->clhs.n = 0;
}

/* One statement inside a custom block. */
static bool block_stmt(parser *p) {
  char d[128];
  tok_t t = p->tok;
  if (t.kind == MIRS__GRAPH_TOK_RBRACE) {
    next(p);
    if (!at_eol(p)) {
      PERR(p, &p->tok, "unexpected %s after '}': '}' must be alone on its line", DESC(&p->tok, d));
      while (!at_eol(p))
        next(p);
    }
    expect_eol(p);
    if (p->junk > 0)
      p->junk--;
    else
      close_block(p, &t, false);
    return true;
  }
  if (t.kind == MIRS__GRAPH_TOK_IDENT) {
    tok_t nx = peek(p);
    bool lhs = nx.kind == MIRS__GRAPH_TOK_EQ || nx.kind == MIRS__GRAPH_TOK_COMMA;
    if (!lhs && mirs__graph_tok_is(&t, "output"))
      return block_output_stmt(p);
    if (!lhs && mirs__graph_tok_is(&t, "input")) {
      PERR(p, &t,
           "input declarations belong at kernel level; inside a custom block write "
           "'t = input(TENSOR, imap=[i0, i1, i2], fmap=f)'");
      return false;
    }
    if (!lhs && (mirs__graph_tok_is(&t, "program") || mirs__graph_tok_is(&t, "ugraph"))) {
      PERR(p, &t, "%s must be the first statement of the file", DESC(&t, d));
      return false;
    }
  }
  return assign_stmt(p);
}

/* One statement at kernel level. */
static bool kernel_stmt(parser *p) {
  char d[128];
  tok_t t = p->tok;
  p->nstmt++;
  if (t.kind == MIRS__GRAPH_TOK_IDENT) {
    tok_t nx = peek(p);
    bool lhs = nx.kind == MIRS__GRAPH_TOK_EQ || nx.kind == MIRS__GRAPH_TOK_COMMA;
    if (!lhs && (mirs__graph_tok_is(&t, "program") || mirs__graph_tok_is(&t, "ugraph")))
      return header_stmt(p);
    if (!lhs && mirs__graph_tok_is(&t, "input"))
      return input_stmt(p);
    if (!lhs && mirs__graph_tok_is(&t, "output"))
      return output_stmt(p);
    return assign_stmt(p);
  }
  if (t.kind == MIRS__GRAPH_TOK_RBRACE) {
    PERR(p, &t, "unexpected '}': no custom block is open");
    return false;
  }
  if (t.kind == MIRS__GRAPH_TOK_BADNAME) {
    bad_name(p, &t, "a statement");
    return false;
  }
  PERR(p, &t, "expected a statement, found %s", DESC(&t, d));
  return false;
}

/* Skip the rest of a rejected line.  A line that ends with '{', or a
 * custom(...) line with a '{' anywhere, opens a rejected block, so that
 * the block's statements are not misread at kernel level. */
static void recover(parser *p) {
  while (!at_eol(p))
    next(p);
  bool brace = p->brace_in_line &&
               (p->custom_in_line || p->prev_kind == MIRS__GRAPH_TOK_LBRACE);
  if (p->tok.kind == MIRS__GRAPH_TOK_NEWLINE)
    next(p);
  if (!brace)
    return;
  if (p->in_block) {
    p->junk++;
  } else {
    tok_t at = p->tok;
    open_block(p, &at, NULL, true);
    p->block_line = p->brace_line;
  }
}

/* Where to report a whole-graph validation failure: the '}' of the custom
 * kernel the message names ("custom kernel NAME: ..."), else at eof. */
static const tok_t *validate_pos(const parser *p, const tok_t *eof) {
  const char *msg = mirs_last_error(p->ctx);
  const char *lead = "custom kernel ";
  size_t ll = strlen(lead);
  if (strncmp(msg, lead, ll) != 0)
    return eof;
  size_t k = 0;
  for (int32_t i = 0; i < p->g->nops; i++) {
    const mirs__kop *op = &p->g->ops[i];
    if (op->op != MIRS_OP_CUSTOM)
      continue;
    if (k >= p->closes.n)
      break;
    const char *name = p->g->t[op->out[0]].name;
    size_t nl = strlen(name);
    if (strncmp(msg + ll, name, nl) == 0 && msg[ll + nl] == ':')
      return &p->closes.v[k];
    k++;
  }
  return eof;
}

/* Release everything the parser owns (not the graph on success). */
static void parser_free(parser *p) {
  if (p->bg)
    mirs__bg_free(p->ctx, p->bg);
  sym_clear(p->ctx, &p->ks);
  sym_clear(p->ctx, &p->bs);
  mirs__core_free(p->ctx, p->lhs.v);
  mirs__core_free(p->ctx, p->names.v);
  mirs__core_free(p->ctx, p->clhs.v);
  mirs__core_free(p->ctx, p->closes.v);
  mirs__core_free(p->ctx, p->gname);
}

/* Parse a .graph program or µGraph text. */
mirs_status mirs__graph_parse(mirs_context *ctx, const char *text, size_t len, const char *filename,
                              mirs_graph **out) {
  if (!ctx)
    return MIRS_INVALID_ARG;
  if (!out)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__graph_parse: out is NULL");
  *out = NULL;
  if (!text && len > 0)
    return MIRS_FAIL(ctx, MIRS_INVALID_ARG, "mirs__graph_parse: text is NULL");
  mirs__core_diag_clear(ctx);
  mirs_clear_error(ctx);
  MIRS_INC(&ctx->stats, files_parsed);
  parser p;
  memset(&p, 0, sizeof p);
  p.ctx = ctx;
  p.file = filename ? filename : "<input>";
  p.all_shape = true;
  mirs__graph_lex_init(&p.lx, text, len);
  next(&p);
  while (!p.stop) {
    if (p.tok.kind == MIRS__GRAPH_TOK_EOF)
      break;
    if (p.tok.kind == MIRS__GRAPH_TOK_NEWLINE) {
      next(&p);
      continue;
    }
    p.lhs.n = 0;
    p.fail = false;
    symtab *level = p.in_block ? &p.bs : &p.ks;
    bool ok = p.in_block ? block_stmt(&p) : kernel_stmt(&p);
    if (!ok && p.fail && !p.fatal && level == &p.ks)
      poison_lhs(&p, level); /* before recover() may open a block */
    if (!ok)
      recover(&p);
    if (p.fail && !p.fatal)
      poison_lhs(&p, level);
  }
  tok_t eof = p.tok;
  if (!p.stop && p.in_block) {
    PERR(&p, &eof, "expected '}' to close the custom block opened at line %d", p.block_line);
    p.block_bad = true;
    close_block(&p, &eof, true);
  }
  if (!p.stop && !p.saw_output)
    PERR(&p, &eof, "no output statement (a program needs at least one 'output NAME')");
  if (!p.stop && p.nerr == 0 && ensure_graph(&p)) {
    mirs_status st = mirs__graph_validate(p.g);
    if (st != MIRS_OK)
      builder_err(&p, validate_pos(&p, &eof), st);
  }
  if (p.fatal) {
    mirs__graph_free(p.g);
    parser_free(&p);
    if (mirs_last_status(ctx) != MIRS_NOMEM)
      return MIRS_FAIL(ctx, MIRS_NOMEM, "%s: out of memory while parsing", p.file);
    return MIRS_NOMEM;
  }
  if (p.nerr > 0) {
    mirs_status st = p.all_shape ? MIRS_SHAPE : MIRS_PARSE;
    mirs__graph_free(p.g);
    parser_free(&p);
    if (p.nerr == 1)
      return MIRS_FAIL(ctx, st, "%s:%d:%d: error: %s", p.file, p.first_line, p.first_col,
                       p.first);
    return MIRS_FAIL(ctx, st, "%s:%d:%d: error: %s (and %" PRId64 " more error%s)", p.file,
                     p.first_line, p.first_col, p.first, p.nerr - 1, p.nerr == 2 ? "" : "s");
  }
  p.g->names_indexed = false;
  *out = p.g;
  p.g = NULL;
  parser_free(&p);
  return MIRS_OK;
}
