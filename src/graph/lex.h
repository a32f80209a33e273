/* SPDX-License-Identifier: MIT */
/* src/graph/lex.h - the lexer shared by the .graph and µGraph readers
 * (docs/FORMATS.md "Lexical rules").
 *
 * Invariants: the lexer reads a byte range [text, text+len) that need not
 * be NUL-terminated and may hold any bytes (NULs, invalid UTF-8); it never
 * reads outside that range and never allocates.  Every byte of the input
 * belongs to exactly one token, a comment or whitespace, so lexing always
 * terminates with MIRS__GRAPH_TOK_EOF.  Lines and columns are 1-based;
 * columns count bytes; both saturate at INT_MAX instead of overflowing.
 * "\n" and "\r\n" end a line; a lone "\r" is an invalid character. */
#ifndef MIRS_GRAPH_LEX_H
#define MIRS_GRAPH_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum mirs__graph_tok_kind {
  MIRS__GRAPH_TOK_EOF,
  MIRS__GRAPH_TOK_NEWLINE,
  MIRS__GRAPH_TOK_IDENT,   /* [A-Za-z_][A-Za-z0-9_]* */
  MIRS__GRAPH_TOK_INT,     /* [0-9]+, value in `value` unless `overflow` */
  MIRS__GRAPH_TOK_BADNAME, /* [0-9]+[A-Za-z_][A-Za-z0-9_]*: a name starting with a digit */
  MIRS__GRAPH_TOK_EQ,      /* = */
  MIRS__GRAPH_TOK_COLON,   /* : */
  MIRS__GRAPH_TOK_COMMA,   /* , */
  MIRS__GRAPH_TOK_LPAREN,  /* ( */
  MIRS__GRAPH_TOK_RPAREN,  /* ) */
  MIRS__GRAPH_TOK_LBRACK,  /* [ */
  MIRS__GRAPH_TOK_RBRACK,  /* ] */
  MIRS__GRAPH_TOK_LBRACE,  /* { */
  MIRS__GRAPH_TOK_RBRACE,  /* } */
  MIRS__GRAPH_TOK_MINUS,   /* - */
  MIRS__GRAPH_TOK_BAD,     /* one byte that starts no token */
  MIRS__GRAPH_TOK_NUM      /* [0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)? with a '.' or an exponent */
} mirs__graph_tok_kind;

typedef struct mirs__graph_token {
  mirs__graph_tok_kind kind;
  const char *start; /* first byte in the input */
  size_t len;        /* bytes (0 for EOF) */
  int line, col;     /* 1-based position of the first byte */
  uint64_t value;    /* INT: the value when !overflow */
  bool overflow;     /* INT: more than 64 bits */
} mirs__graph_token;

typedef struct mirs__graph_lexer {
  const char *p, *end;
  const char *line_start; /* first byte of the current line */
  int line;
} mirs__graph_lexer;

/* Start lexing len bytes at text (text may be NULL when len is 0). */
void mirs__graph_lex_init(mirs__graph_lexer *lx, const char *text, size_t len);
/* Read the next token into *t (comments and blanks are skipped). */
void mirs__graph_lex_next(mirs__graph_lexer *lx, mirs__graph_token *t);
/* Describe t for a message: "'name'", "'('", "end of line", "end of
 * file", "invalid character '\x00'"; long tokens are cut with "...",
 * unprintable bytes written as \xNN.  Returns buf. */
const char *mirs__graph_tok_describe(const mirs__graph_token *t, char *buf, size_t size);
/* Copy up to len bytes of s into buf as printable text (\xNN for
 * unprintable bytes, "..." when cut at max bytes).  Returns buf. */
const char *mirs__graph_escape(const char *s, size_t len, size_t max, char *buf, size_t size);
/* True when the token is the identifier word (exact match). */
bool mirs__graph_tok_is(const mirs__graph_token *t, const char *word);

#endif
