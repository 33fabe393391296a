/*
 * hf_grammar.c -- validating a 2NF grammar and indexing its productions by child.
 */
#include <stdarg.h>
#include <stdio.h>

#include "hf_internal.h"

static void hf_grammar__error(char *error, size_t error_cap, const char *format, ...) {
  if (error == NULL || error_cap == 0) return;
  va_list args;
  va_start(args, format);
  vsnprintf(error, error_cap, format, args);
  va_end(args);
}

/* Builds one CSR index: `count` entries, entry i keyed by keys[i*stride + key_at] and
 * carrying `width` payload values taken from the offsets in `payload_at`. */
static bool hf_grammar__index(HfInt32Array *starts, HfInt32Array *out, int32_t n_symbols,
                              const int32_t *rows, size_t count, size_t stride,
                              size_t key_at, const size_t *payload_at, size_t width) {
  if (!array_resize(starts, (size_t)n_symbols + 1)) return false;
  if (!array_resize(out, count * width)) return false;
  memset(starts->contents, 0, starts->size * sizeof *starts->contents);
  for (size_t i = 0; i < count; i++) starts->contents[rows[i * stride + key_at] + 1]++;
  for (int32_t x = 0; x < n_symbols; x++) starts->contents[x + 1] += starts->contents[x];
  /* Fill with a moving cursor per key, then shift the offsets back. */
  for (size_t i = 0; i < count; i++) {
    int32_t slot = starts->contents[rows[i * stride + key_at]]++;
    for (size_t k = 0; k < width; k++)
      out->contents[(size_t)slot * width + k] = rows[i * stride + payload_at[k]];
  }
  for (int32_t x = n_symbols; x > 0; x--) starts->contents[x] = starts->contents[x - 1];
  starts->contents[0] = 0;
  return true;
}

HfGrammar *hf_grammar_new(int32_t n_terminals, int32_t n_symbols, int32_t start,
                          const int32_t *binary, size_t n_binary,
                          const int32_t *unary, size_t n_unary,
                          const int32_t *nullable, size_t n_nullable,
                          char *error, size_t error_cap) {
  HfGrammar *self = NULL;
  hf_grammar__error(error, error_cap, "%s", "");
  if (n_terminals < 0 || n_symbols <= n_terminals) {
    hf_grammar__error(error, error_cap,
                      "need 0 <= n_terminals < n_symbols (got n_terminals=%d, n_symbols=%d)",
                      (int)n_terminals, (int)n_symbols);
    return NULL;
  }
  if (start < n_terminals || start >= n_symbols) {
    hf_grammar__error(error, error_cap, "start = %d is not a nonterminal [%d, %d)",
                      (int)start, (int)n_terminals, (int)n_symbols);
    return NULL;
  }
  if ((n_binary && binary == NULL) || (n_unary && unary == NULL) ||
      (n_nullable && nullable == NULL)) {
    hf_grammar__error(error, error_cap, "%s", "NULL production array with non-zero count");
    return NULL;
  }
  if (n_binary > INT32_MAX / 2 || n_unary > INT32_MAX || n_nullable > INT32_MAX) {
    hf_grammar__error(error, error_cap, "%s", "too many productions");
    return NULL;
  }
  for (size_t i = 0; i < 3 * n_binary; i++) {
    int32_t x = binary[i];
    int32_t lo = i % 3 == 0 ? n_terminals : 0;
    if (x < lo || x >= n_symbols) {
      hf_grammar__error(error, error_cap, "binary[%zu] = %d is out of range [%d, %d)%s", i,
                        (int)x, (int)lo, (int)n_symbols,
                        i % 3 == 0 ? " (left-hand side must be a nonterminal)" : "");
      return NULL;
    }
  }
  for (size_t i = 0; i < 2 * n_unary; i++) {
    int32_t x = unary[i];
    int32_t lo = i % 2 == 0 ? n_terminals : 0;
    if (x < lo || x >= n_symbols) {
      hf_grammar__error(error, error_cap, "unary[%zu] = %d is out of range [%d, %d)%s", i,
                        (int)x, (int)lo, (int)n_symbols,
                        i % 2 == 0 ? " (left-hand side must be a nonterminal)" : "");
      return NULL;
    }
  }
  for (size_t i = 0; i < n_nullable; i++) {
    if (nullable[i] < n_terminals || nullable[i] >= n_symbols) {
      hf_grammar__error(error, error_cap,
                        "nullable[%zu] = %d is not a nonterminal [%d, %d)", i,
                        (int)nullable[i], (int)n_terminals, (int)n_symbols);
      return NULL;
    }
  }

  self = hf_malloc(sizeof *self);
  if (self == NULL) goto oom;
  self->n_terminals = n_terminals;
  self->n_symbols = n_symbols;
  self->start = start;
  array_init(&self->left_start);
  array_init(&self->left_pairs);
  array_init(&self->right_start);
  array_init(&self->right_pairs);
  array_init(&self->unary_start);
  array_init(&self->unary_parent);
  array_init(&self->nullable);
  array_init(&self->used);

  static const size_t left_payload[2] = {0, 2};   /* A -> X Y keyed by X: (A, Y) */
  static const size_t right_payload[2] = {0, 1};  /* keyed by Y: (A, X)          */
  static const size_t unary_payload[1] = {0};     /* A -> X keyed by X: A        */
  if (!hf_grammar__index(&self->left_start, &self->left_pairs, n_symbols, binary, n_binary,
                         3, 1, left_payload, 2))
    goto oom;
  if (!hf_grammar__index(&self->right_start, &self->right_pairs, n_symbols, binary,
                         n_binary, 3, 2, right_payload, 2))
    goto oom;
  if (!hf_grammar__index(&self->unary_start, &self->unary_parent, n_symbols, unary, n_unary,
                         2, 1, unary_payload, 1))
    goto oom;
  if (!array_resize(&self->used, (size_t)n_symbols)) goto oom;
  memset(self->used.contents, 0, (size_t)n_symbols);
  for (size_t i = 0; i < n_binary; i++) {
    self->used.contents[binary[3 * i + 1]] = 1;
    self->used.contents[binary[3 * i + 2]] = 1;
  }
  for (size_t i = 0; i < n_unary; i++) self->used.contents[unary[2 * i + 1]] = 1;
  /* Deduplicate nullable symbols with `used` bit 1 as scratch. */
  for (size_t i = 0; i < n_nullable; i++) {
    int32_t a = nullable[i];
    if (self->used.contents[a] & 2) continue;
    self->used.contents[a] |= 2;
    if (!array_push(&self->nullable, a)) goto oom;
  }
  for (size_t i = 0; i < self->nullable.size; i++)
    self->used.contents[self->nullable.contents[i]] &= 1;
  return self;

oom:
  hf_grammar__error(error, error_cap, "%s", "out of memory");
  hf_grammar_delete(self);
  return NULL;
}

void hf_grammar_delete(HfGrammar *self) {
  if (self == NULL) return;
  array_destroy(&self->left_start);
  array_destroy(&self->left_pairs);
  array_destroy(&self->right_start);
  array_destroy(&self->right_pairs);
  array_destroy(&self->unary_start);
  array_destroy(&self->unary_parent);
  array_destroy(&self->nullable);
  array_destroy(&self->used);
  hf_free(self);
}

int32_t hf_grammar_n_terminals(const HfGrammar *self) { return self ? self->n_terminals : 0; }
int32_t hf_grammar_n_symbols(const HfGrammar *self) { return self ? self->n_symbols : 0; }
