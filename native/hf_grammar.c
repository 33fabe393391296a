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

/* ---- context sets ----------------------------------------------------------------------
 * FIRST/LAST/PREC/FOLL (see hf_internal.h) are the least solution of inclusions between
 * sets, one node per (family, symbol):
 *   X -> Y Z:  FIRST(X) ⊇ FIRST(Y), and ⊇ FIRST(Z) if Y is nullable;
 *              LAST(X)  ⊇ LAST(Z),  and ⊇ LAST(Y)  if Z is nullable;
 *              PREC(Y)  ⊇ PREC(X);  PREC(Z) ⊇ LAST(Y), and ⊇ PREC(X) if Y is nullable;
 *              FOLL(Z)  ⊇ FOLL(X);  FOLL(Y) ⊇ FIRST(Z), and ⊇ FOLL(X) if Z is nullable;
 *   X -> Y:    all four of X flow to/from Y the same way (FIRST, LAST up; PREC, FOLL down);
 *   FIRST(t) = LAST(t) = {t} for a terminal t; PREC(S) ∋ ⊢, FOLL(S) ∋ ⊣.
 * Why PREC(A) holds every terminal that precedes A in a derivation S =>* u A v (u, v
 * terminal words; the last letter of u, or ⊢ when u = ε): walk the derivation tree from
 * the root to A's node.  The root starts at the beginning (⊢ ∈ PREC(S)).  If node X ->
 * Y Z is on the path, Y starts where X starts (PREC(Y) ⊇ PREC(X)), and Z starts after Y's
 * yield: its last letter is in LAST(Y) when that yield is non-empty; when it is empty, Y
 * is nullable and Z starts where X starts.  Unary nodes keep the start.  FOLL mirrors it.
 * So the sets over-approximate the real contexts (they ignore whether the rest of the
 * sentential form can be completed), which is what the filter needs: it may only drop
 * items that no derivation uses.
 * Solved by a worklist over the inclusion graph: each set only grows, at most
 * n_terminals + 1 times, so the work is O(edges * (n_terminals + 1) * ctx_words). */

/* Nullable closure (A -> ε, A -> X with X nullable, A -> X Y with both nullable), by a
 * worklist over the child indexes.  null[X] != 0 on return for nullable X. */
static bool hf_grammar__nullable_closure(const HfGrammar *self, uint8_t *null,
                                         HfInt32Array *stack) {
  memset(null, 0, (size_t)self->n_symbols);
  array_clear(stack);
  for (size_t i = 0; i < self->nullable.size; i++) {
    int32_t a = self->nullable.contents[i];
    null[a] = 1;
    if (!array_push(stack, a)) return false;
  }
  const int32_t *left_start = self->left_start.contents;
  const int32_t *left_pairs = self->left_pairs.contents;
  const int32_t *right_start = self->right_start.contents;
  const int32_t *right_pairs = self->right_pairs.contents;
  const int32_t *unary_start = self->unary_start.contents;
  const int32_t *unary_parent = self->unary_parent.contents;
  while (stack->size > 0) {
    int32_t x = stack->contents[--stack->size];
    for (int32_t k = unary_start[x]; k < unary_start[x + 1]; k++) {
      int32_t a = unary_parent[k];
      if (null[a]) continue;
      null[a] = 1;
      if (!array_push(stack, a)) return false;
    }
    /* A -> X Y with Y nullable, and A -> Y X with Y nullable. */
    for (int pass = 0; pass < 2; pass++) {
      const int32_t *st = pass == 0 ? left_start : right_start;
      const int32_t *pairs = pass == 0 ? left_pairs : right_pairs;
      for (int32_t k = st[x]; k < st[x + 1]; k++) {
        int32_t a = pairs[2 * k], other = pairs[2 * k + 1];
        if (null[a] || !null[other]) continue;
        null[a] = 1;
        if (!array_push(stack, a)) return false;
      }
    }
  }
  return true;
}

static bool hf_grammar__contexts(HfGrammar *self, const int32_t *binary, size_t n_binary,
                                 const int32_t *unary, size_t n_unary) {
  bool ok = false;
  const int32_t n = self->n_symbols, words = self->ctx_words;
  const size_t n_nodes = (size_t)HF_CTX_FAMILIES * (size_t)n;
  HfByteArray null, queued;
  HfInt32Array pairs, graph_start, graph_list, stack;
  array_init(&null);
  array_init(&queued);
  array_init(&pairs);
  array_init(&graph_start);
  array_init(&graph_list);
  array_init(&stack);
  if (!array_resize(&null, (size_t)n) || !array_resize(&queued, n_nodes) ||
      !array_resize(&graph_start, n_nodes + 1) ||
      !array_reserve(&pairs, 2 * (10 * n_binary + 4 * n_unary)) ||
      !array_resize(&self->ctx_sets, n_nodes * (size_t)words))
    goto exit;
  if (!hf_grammar__nullable_closure(self, null.contents, &stack)) goto exit;

  /* The inclusion graph: pairs (from, to) meaning set[to] ⊇ set[from]. */
#define HF_NODE(family, sym) ((int32_t)(family) * n + (sym))
#define HF_FLOW(from, to)                                                   \
  do {                                                                      \
    pairs.contents[pairs.size++] = (from);                                  \
    pairs.contents[pairs.size++] = (to);                                    \
  } while (0)
  for (size_t i = 0; i < n_binary; i++) {
    int32_t x = binary[3 * i], y = binary[3 * i + 1], z = binary[3 * i + 2];
    HF_FLOW(HF_NODE(HF_CTX_FIRST, y), HF_NODE(HF_CTX_FIRST, x));
    HF_FLOW(HF_NODE(HF_CTX_LAST, z), HF_NODE(HF_CTX_LAST, x));
    HF_FLOW(HF_NODE(HF_CTX_PREC, x), HF_NODE(HF_CTX_PREC, y));
    HF_FLOW(HF_NODE(HF_CTX_LAST, y), HF_NODE(HF_CTX_PREC, z));
    HF_FLOW(HF_NODE(HF_CTX_FOLL, x), HF_NODE(HF_CTX_FOLL, z));
    HF_FLOW(HF_NODE(HF_CTX_FIRST, z), HF_NODE(HF_CTX_FOLL, y));
    if (null.contents[y]) {
      HF_FLOW(HF_NODE(HF_CTX_FIRST, z), HF_NODE(HF_CTX_FIRST, x));
      HF_FLOW(HF_NODE(HF_CTX_PREC, x), HF_NODE(HF_CTX_PREC, z));
    }
    if (null.contents[z]) {
      HF_FLOW(HF_NODE(HF_CTX_LAST, y), HF_NODE(HF_CTX_LAST, x));
      HF_FLOW(HF_NODE(HF_CTX_FOLL, x), HF_NODE(HF_CTX_FOLL, y));
    }
  }
  for (size_t i = 0; i < n_unary; i++) {
    int32_t x = unary[2 * i], y = unary[2 * i + 1];
    HF_FLOW(HF_NODE(HF_CTX_FIRST, y), HF_NODE(HF_CTX_FIRST, x));
    HF_FLOW(HF_NODE(HF_CTX_LAST, y), HF_NODE(HF_CTX_LAST, x));
    HF_FLOW(HF_NODE(HF_CTX_PREC, x), HF_NODE(HF_CTX_PREC, y));
    HF_FLOW(HF_NODE(HF_CTX_FOLL, x), HF_NODE(HF_CTX_FOLL, y));
  }
#undef HF_FLOW
  /* CSR by source node. */
  size_t n_flows = pairs.size / 2;
  if (!array_resize(&graph_list, n_flows)) goto exit;
  int32_t *gs = graph_start.contents;
  memset(gs, 0, (n_nodes + 1) * sizeof *gs);
  for (size_t i = 0; i < n_flows; i++) gs[pairs.contents[2 * i] + 1]++;
  for (size_t v = 0; v < n_nodes; v++) gs[v + 1] += gs[v];
  for (size_t i = 0; i < n_flows; i++)
    graph_list.contents[gs[pairs.contents[2 * i]]++] = pairs.contents[2 * i + 1];
  for (size_t v = n_nodes; v > 0; v--) gs[v] = gs[v - 1];
  gs[0] = 0;

  /* Seeds, then propagate. */
  uint64_t *sets = self->ctx_sets.contents;
  memset(sets, 0, n_nodes * (size_t)words * sizeof *sets);
  memset(queued.contents, 0, n_nodes);
  array_clear(&stack);
  const int32_t edge_bit = HF_CTX_EDGE(self->n_terminals);
  for (int32_t t = 0; t < self->n_terminals; t++) {
    for (int family = HF_CTX_FIRST; family <= HF_CTX_LAST; family++) {
      int32_t v = HF_NODE(family, t);
      sets[(size_t)v * (size_t)words + (size_t)(t / 64)] |= UINT64_C(1) << (t % 64);
      queued.contents[v] = 1;
      if (!array_push(&stack, v)) goto exit;
    }
  }
  for (int family = HF_CTX_PREC; family <= HF_CTX_FOLL; family++) {
    int32_t v = HF_NODE(family, self->start);
    sets[(size_t)v * (size_t)words + (size_t)(edge_bit / 64)] |= UINT64_C(1) << (edge_bit % 64);
    queued.contents[v] = 1;
    if (!array_push(&stack, v)) goto exit;
  }
#undef HF_NODE
  while (stack.size > 0) {
    int32_t u = stack.contents[--stack.size];
    queued.contents[u] = 0;
    const uint64_t *from = sets + (size_t)u * (size_t)words;
    for (int32_t k = gs[u]; k < gs[u + 1]; k++) {
      int32_t v = graph_list.contents[k];
      uint64_t *to = sets + (size_t)v * (size_t)words;
      uint64_t grew = 0;
      for (int32_t w = 0; w < words; w++) {
        grew |= from[w] & ~to[w];
        to[w] |= from[w];
      }
      if (grew && !queued.contents[v]) {
        queued.contents[v] = 1;
        if (!array_push(&stack, v)) goto exit;
      }
    }
  }
  ok = true;

exit:
  array_destroy(&null);
  array_destroy(&queued);
  array_destroy(&pairs);
  array_destroy(&graph_start);
  array_destroy(&graph_list);
  array_destroy(&stack);
  return ok;
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
  /* Bounds keep every int32 offset of the indexes (and of the context sets' inclusion
   * graph, 10 entries per binary and 4 per unary production) in range. */
  if (n_binary > INT32_MAX / 32 || n_unary > INT32_MAX / 16 || n_nullable > INT32_MAX ||
      n_symbols > INT32_MAX / HF_CTX_FAMILIES) {
    hf_grammar__error(error, error_cap, "%s", "too many productions or symbols");
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
  array_init(&self->ctx_sets);
  self->ctx_words = (n_terminals + 1 + 63) / 64;
  /* Context sets cost 4 * n_symbols * ctx_words words; past HF_CTX_MAX_WORDS (a grammar
   * with tens of thousands of terminals) the filter is off for this grammar instead. */
  if ((uint64_t)HF_CTX_FAMILIES * (uint64_t)n_symbols * (uint64_t)self->ctx_words >
      HF_CTX_MAX_WORDS)
    self->ctx_words = 0;

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
  if (self->ctx_words > 0 && !hf_grammar__contexts(self, binary, n_binary, unary, n_unary))
    goto oom;
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
  array_destroy(&self->ctx_sets);
  hf_free(self);
}

int32_t hf_grammar_n_terminals(const HfGrammar *self) { return self ? self->n_terminals : 0; }
int32_t hf_grammar_n_symbols(const HfGrammar *self) { return self ? self->n_symbols : 0; }
