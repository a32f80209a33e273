/* SPDX-License-Identifier: MIT */
/* src/graph/lex.c - tokens of the .graph and µGraph text formats.
 *
 * Invariants: every read is guarded by `p < end`, so arbitrary bytes
 * (NULs, invalid UTF-8, unterminated buffers) are safe; a token never
 * spans a line break; line/column counters saturate at INT_MAX.  No
 * allocation, no context: the parser owns error reporting. */
#include "graph/lex.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Bytes that may start an identifier. */
static bool is_ident_start(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

/* Bytes that may continue an identifier. */
static bool is_ident_char(unsigned char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* Column of position q on the current line, saturating at INT_MAX. */
static int column_of(const mirs__graph_lexer *lx, const char *q) {
  size_t c = (size_t)(q - lx->line_start) + 1;
  return c > (size_t)INT_MAX ? INT_MAX : (int)c;
}

/* Start lexing len bytes at text. */
void mirs__graph_lex_init(mirs__graph_lexer *lx, const char *text, size_t len) {
  static const char empty[1] = {0};
  if (!text) {
    text = empty;
    len = 0;
  }
  lx->p = text;
  lx->end = text + len;
  lx->line_start = text;
  lx->line = 1;
}

/* Read the next token into *t. */
void mirs__graph_lex_next(mirs__graph_lexer *lx, mirs__graph_token *t) {
  const char *p = lx->p, *end = lx->end;
  /* Blanks and comments.  A comment runs to the line break, which stays. */
  for (;;) {
    if (p < end && (*p == ' ' || *p == '\t')) {
      p++;
    } else if (p < end && *p == '#') {
      while (p < end && *p != '\n' && !(*p == '\r' && p + 1 < end && p[1] == '\n'))
        p++;
    } else {
      break;
    }
  }
  memset(t, 0, sizeof *t);
  t->start = p;
  t->line = lx->line;
  t->col = column_of(lx, p);
  if (p >= end) {
    t->kind = MIRS__GRAPH_TOK_EOF;
    lx->p = p;
    return;
  }
  unsigned char c = (unsigned char)*p;
  if (c == '\n' || (c == '\r' && p + 1 < end && p[1] == '\n')) {
    t->kind = MIRS__GRAPH_TOK_NEWLINE;
    p += c == '\n' ? 1 : 2;
    t->len = (size_t)(p - t->start);
    lx->line_start = p;
    if (lx->line < INT_MAX)
      lx->line++;
    lx->p = p;
    return;
  }
  if (is_ident_start(c)) {
    while (p < end && is_ident_char((unsigned char)*p))
      p++;
    t->kind = MIRS__GRAPH_TOK_IDENT;
  } else if (c >= '0' && c <= '9') {
    uint64_t v = 0;
    bool over = false;
    while (p < end && *p >= '0' && *p <= '9') {
      unsigned d = (unsigned)(*p - '0');
      if (v > (UINT64_MAX - d) / 10)
        over = true;
      else
        v = v * 10 + d;
      p++;
    }
    /* A decimal: digits '.' digits, and/or an exponent e[+-]digits. */
    bool num = false;
    if (p + 1 < end && *p == '.' && p[1] >= '0' && p[1] <= '9') {
      num = true;
      p++;
      while (p < end && *p >= '0' && *p <= '9')
        p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
      const char *q = p + 1;
      if (q < end && (*q == '+' || *q == '-'))
        q++;
      if (q < end && *q >= '0' && *q <= '9') {
        num = true;
        p = q;
        while (p < end && *p >= '0' && *p <= '9')
          p++;
      }
    }
    if (p < end && is_ident_start((unsigned char)*p)) {
      while (p < end && is_ident_char((unsigned char)*p))
        p++;
      t->kind = MIRS__GRAPH_TOK_BADNAME;
    } else if (num) {
      t->kind = MIRS__GRAPH_TOK_NUM;
    } else {
      t->kind = MIRS__GRAPH_TOK_INT;
      t->value = over ? 0 : v;
      t->overflow = over;
    }
  } else {
    p++;
    switch (c) {
    case '=': t->kind = MIRS__GRAPH_TOK_EQ; break;
    case ':': t->kind = MIRS__GRAPH_TOK_COLON; break;
    case ',': t->kind = MIRS__GRAPH_TOK_COMMA; break;
    case '(': t->kind = MIRS__GRAPH_TOK_LPAREN; break;
    case ')': t->kind = MIRS__GRAPH_TOK_RPAREN; break;
    case '[': t->kind = MIRS__GRAPH_TOK_LBRACK; break;
    case ']': t->kind = MIRS__GRAPH_TOK_RBRACK; break;
    case '{': t->kind = MIRS__GRAPH_TOK_LBRACE; break;
    case '}': t->kind = MIRS__GRAPH_TOK_RBRACE; break;
    case '-': t->kind = MIRS__GRAPH_TOK_MINUS; break;
    default: t->kind = MIRS__GRAPH_TOK_BAD; break;
    }
  }
  t->len = (size_t)(p - t->start);
  lx->p = p;
}

/* Printable copy of s[0..len) into buf, cut at max input bytes. */
const char *mirs__graph_escape(const char *s, size_t len, size_t max, char *buf, size_t size) {
  size_t o = 0;
  if (size == 0)
    return buf;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    char tmp[8];
    if (i >= max) {
      snprintf(tmp, sizeof tmp, "...");
    } else if (c >= 0x20 && c < 0x7f && c != '\\') {
      tmp[0] = (char)c;
      tmp[1] = 0;
    } else if (c == '\\') {
      snprintf(tmp, sizeof tmp, "\\\\");
    } else {
      snprintf(tmp, sizeof tmp, "\\x%02x", c);
    }
    size_t n = strlen(tmp);
    if (o + n >= size)
      break;
    memcpy(buf + o, tmp, n);
    o += n;
    if (i >= max)
      break;
  }
  buf[o] = 0;
  return buf;
}

/* Describe t for a message. */
const char *mirs__graph_tok_describe(const mirs__graph_token *t, char *buf, size_t size) {
  char esc[96];
  switch (t->kind) {
  case MIRS__GRAPH_TOK_EOF:
    snprintf(buf, size, "end of file");
    break;
  case MIRS__GRAPH_TOK_NEWLINE:
    snprintf(buf, size, "end of line");
    break;
  case MIRS__GRAPH_TOK_BAD:
    snprintf(buf, size, "invalid character '%s'",
             mirs__graph_escape(t->start, t->len, 1, esc, sizeof esc));
    break;
  default:
    snprintf(buf, size, "'%s'", mirs__graph_escape(t->start, t->len, 40, esc, sizeof esc));
    break;
  }
  return buf;
}

/* True when t is the identifier word. */
bool mirs__graph_tok_is(const mirs__graph_token *t, const char *word) {
  size_t n = strlen(word);
  return t->kind == MIRS__GRAPH_TOK_IDENT && t->len == n && memcmp(t->start, word, n) == 0;
}
