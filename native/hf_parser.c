/*
 * hf_parser.c -- an incremental Earley recognizer over the text left of a hole, asking a
 * right context (HfRight) whether what was read can still be completed.
 *
 * Sets and items.  Set k holds items (rule, dot, origin) after k terminals.  Nullable
 * symbols are handled as Aycock and Horspool do: predicting a nullable B also moves the
 * dot over B, so an item complete with its own set as origin (an ε derivation) needs no
 * completion step.  A finished set gets an index of its items by the symbol after the dot
 * (sorted pairs), which completion and scanning read.  Pushing a terminal appends a set;
 * truncating drops sets from the end (the rollback of a refused candidate).
 *
 * The question.  The left context is the input w read so far; the text after it is a
 * small acyclic NFA J (the end of the current lexeme, the hole's entry, layout tokens)
 * whose exits lead into states of the right context R.  Some word u of J and v of R make
 * w u v a sentence iff some chain of items, one per level of the parse, can finish: an
 * item (A -> α • β, i) in the set reached by u needs β to derive a word from the exit's
 * R state to some q, and then A's parents, items (B -> γ • A δ, j) in set i, need δ to
 * derive one from q on, and so on up to the start symbol, which must end in a final
 * state.  Up(i, A) is that set of states q for each symbol A awaited in set i:
 *     Up(i, A) = ∪ over (B -> γ • A δ, j) in set i of  pre_δ(Up(j, B)),
 *     Up(0, S) ∋ the finals of R,
 * where pre_δ(U) = { q : δ derives a word from q to a state of U } is read off R's
 * triples (δ has at most one symbol in 2NF).  Items whose origin is their own set make the
 * equations of one set cyclic; they are solved by iterating to the least fixpoint.  Up
 * depends only on sets up to i, so it is computed once per set (lazily, when a question
 * reaches that set) and reused by every later question: per token, only the new sets
 * are new.  Exact: a yes is a derivation, a no means no chain exists (every derivation of
 * w u v has such a chain at the split point).
 *
 * A growing R.  R only grows (hf_right_add: states, triples and finals are added, never
 * removed), and every equation above is a union of monotone maps that distribute over
 * unions of U and of R's triples, so the rows computed for an older R are below the new
 * least fixpoint.  A query after a growth therefore brings every table up to date instead
 * of emptying it (the cost that was 15-35 ms per token on a 27,000-state C++ context):
 * sets in order, each row gains pre_δ over all triples of the bits its parent gained
 * (semi-naive), plus pre_δ over the new triples of the parent's whole row, plus new finals
 * in Up(0, S); gains then travel within the set along its own items until none is left.
 */
#include <stdio.h>
#include <stdlib.h>

#include "hf_internal.h"

/* R's read access, from hf_right.c. */
int32_t hf_right__first_fwd(const HfRight *self, int32_t p, int32_t x);
int32_t hf_right__first_bwd(const HfRight *self, int32_t q, int32_t x);
void hf_right__item(const HfRight *self, int32_t id, int32_t *p, int32_t *q, int32_t *next_fwd,
                    int32_t *next_bwd);
bool hf_right__is_final(const HfRight *self, int32_t s);
int32_t hf_right__item_symbol(const HfRight *self, int32_t id);

enum { HF_PARSER_DEFAULT_ITEMS = 4000000, HF_PARSER_DEFAULT_STEPS = 20000000 };

typedef struct HfPItem {
  int32_t rule, dot, origin;
} HfPItem;

typedef struct HfWait {
  int32_t symbol, item;
} HfWait;

/* The Up rows of one set for one right context, computed on demand: a set keeps one table
 * per context it was asked about (so questions about several contexts do not undo each
 * other's work), holding only the nonterminals a question reached. */
typedef struct HfUpTable {
  const HfRight *right;
  uint64_t version;       /* the context's version it was computed for              */
  uint64_t n_items;       /* the context's triples then (later ones are new to it)  */
  int32_t words;          /* bitset width: the context's states / 64, rounded up     */
  int32_t count, cap;     /* rows                                                    */
  int32_t *syms;          /* owned: the nonterminal of each row                      */
  uint64_t *bits;         /* owned: cap rows of `words` words                        */
  uint64_t *gain;         /* owned, during a refresh only: what each row gained      */
  struct HfUpTable *next; /* the set's next table                                    */
} HfUpTable;

typedef struct HfSet {
  int32_t items_start;  /* its items are [items_start, next set's items_start)     */
  int32_t wait_start;   /* its waiting pairs, sorted by symbol                     */
  HfUpTable *up;        /* owned list                                               */
} HfSet;

struct HfParser {
  const HfGrammar *grammar;
  char error[256];
  /* rules: 0..n_rules-1, lhs and up to two right-hand symbols */
  int32_t n_rules;
  HfInt32Array lhs, rhs0, rhs1, len;
  HfInt32Array by_lhs_start, by_lhs; /* CSR: the rules of each nonterminal */
  HfByteArray nullable;
  /* sets */
  Array(HfSet) sets;
  Array(HfPItem) items;
  Array(HfWait) waits;
  HfMap dedup;                       /* (rule, dot, origin) of the set being built */
  HfInt32Array todo;                 /* symbols of a set's group (Up rows)           */
  HfInt32Array frames;               /* (set, symbol) pairs of the Up evaluation     */
  HfVerdict fault;                   /* why the last Up evaluation returned NULL     */
  Array(uint64_t) scratch;
  uint64_t steps, max_steps, max_items;
  int limit_hit;
};

/* ---- construction ------------------------------------------------------------------- */

static bool hf_parser__rules(HfParser *self) {
  const HfGrammar *g = self->grammar;
  int32_t nt = g->n_terminals, ns = g->n_symbols;
  /* binary rules from the left-child index, unary from the unary index, then ε rules */
  for (int32_t x = 0; x < ns; x++) {
    for (int32_t k = g->left_start.contents[x]; k < g->left_start.contents[x + 1]; k++) {
      if (!array_push(&self->lhs, g->left_pairs.contents[2 * k]) ||
          !array_push(&self->rhs0, x) ||
          !array_push(&self->rhs1, g->left_pairs.contents[2 * k + 1]) ||
          !array_push(&self->len, 2))
        return false;
    }
    for (int32_t k = g->unary_start.contents[x]; k < g->unary_start.contents[x + 1]; k++) {
      if (!array_push(&self->lhs, g->unary_parent.contents[k]) ||
          !array_push(&self->rhs0, x) || !array_push(&self->rhs1, -1) ||
          !array_push(&self->len, 1))
        return false;
    }
  }
  for (size_t k = 0; k < g->nullable.size; k++) {
    if (!array_push(&self->lhs, g->nullable.contents[k]) || !array_push(&self->rhs0, -1) ||
        !array_push(&self->rhs1, -1) || !array_push(&self->len, 0))
      return false;
  }
  self->n_rules = (int32_t)self->lhs.size;
  /* CSR by left-hand side */
  if (!array_resize(&self->by_lhs_start, (size_t)ns + 1) ||
      !array_resize(&self->by_lhs, (size_t)self->n_rules))
    return false;
  int32_t *st = self->by_lhs_start.contents;
  memset(st, 0, ((size_t)ns + 1) * sizeof *st);
  for (int32_t r = 0; r < self->n_rules; r++) st[self->lhs.contents[r] + 1]++;
  for (int32_t x = 0; x < ns; x++) st[x + 1] += st[x];
  for (int32_t r = 0; r < self->n_rules; r++) self->by_lhs.contents[st[self->lhs.contents[r]]++] = r;
  for (int32_t x = ns; x > 0; x--) st[x] = st[x - 1];
  st[0] = 0;
  /* nullable closure: A -> ε, A -> X with X nullable, A -> X Y with both nullable */
  if (!array_resize(&self->nullable, (size_t)ns)) return false;
  memset(self->nullable.contents, 0, (size_t)ns);
  bool grew = true;
  while (grew) {
    grew = false;
    for (int32_t r = 0; r < self->n_rules; r++) {
      int32_t a = self->lhs.contents[r];
      if (self->nullable.contents[a]) continue;
      int32_t n = self->len.contents[r];
      bool all = true;
      if (n >= 1) all = self->rhs0.contents[r] >= nt && self->nullable.contents[self->rhs0.contents[r]];
      if (n == 2 && all)
        all = self->rhs1.contents[r] >= nt && self->nullable.contents[self->rhs1.contents[r]];
      if (all) {
        self->nullable.contents[a] = 1;
        grew = true;
      }
    }
  }
  return true;
}

HfParser *hf_parser_new(const HfGrammar *grammar) {
  if (grammar == NULL) return NULL;
  HfParser *self = hf_malloc(sizeof *self);
  if (self == NULL) return NULL;
  memset(self, 0, sizeof *self);
  self->grammar = grammar;
  array_init(&self->lhs);
  array_init(&self->rhs0);
  array_init(&self->rhs1);
  array_init(&self->len);
  array_init(&self->by_lhs_start);
  array_init(&self->by_lhs);
  array_init(&self->nullable);
  array_init(&self->sets);
  array_init(&self->items);
  array_init(&self->waits);
  hf_map_init(&self->dedup);
  array_init(&self->todo);
  array_init(&self->frames);
  array_init(&self->scratch);
  if (!hf_parser__rules(self) || hf_parser_reset(self) != HF_YES) {
    hf_parser_delete(self);
    return NULL;
  }
  return self;
}

static void hf_parser__free_up(HfSet *s) {
  while (s->up != NULL) {
    HfUpTable *t = s->up;
    s->up = t->next;
    hf_free(t->syms);
    hf_free(t->bits);
    hf_free(t->gain);
    hf_free(t);
  }
}

void hf_parser_forget(HfParser *self, const HfRight *right) {
  if (self == NULL) return;
  for (size_t k = 0; k < self->sets.size; k++) {
    HfUpTable **link = &self->sets.contents[k].up;
    while (*link != NULL) {
      HfUpTable *t = *link;
      if (t->right != right) {
        link = &t->next;
        continue;
      }
      *link = t->next;
      hf_free(t->syms);
      hf_free(t->bits);
      hf_free(t->gain);
      hf_free(t);
    }
  }
}

void hf_parser_delete(HfParser *self) {
  if (self == NULL) return;
  for (size_t k = 0; k < self->sets.size; k++) hf_parser__free_up(&self->sets.contents[k]);
  array_destroy(&self->lhs);
  array_destroy(&self->rhs0);
  array_destroy(&self->rhs1);
  array_destroy(&self->len);
  array_destroy(&self->by_lhs_start);
  array_destroy(&self->by_lhs);
  array_destroy(&self->nullable);
  array_destroy(&self->sets);
  array_destroy(&self->items);
  array_destroy(&self->waits);
  hf_map_destroy(&self->dedup);
  array_destroy(&self->todo);
  array_destroy(&self->frames);
  array_destroy(&self->scratch);
  hf_free(self);
}

const char *hf_parser_last_error(const HfParser *self) { return self ? self->error : ""; }

int32_t hf_parser_position(const HfParser *self) {
  return self ? (int32_t)self->sets.size - 1 : -1;
}

/* ---- building sets --------------------------------------------------------------------- */

HF_INLINE int32_t hf_parser__next(const HfParser *self, HfPItem it) {
  if (it.dot >= self->len.contents[it.rule]) return -1;
  return it.dot == 0 ? self->rhs0.contents[it.rule] : self->rhs1.contents[it.rule];
}

/* Adds an item to the set being built (the last one) unless it is there. */
static bool hf_parser__add(HfParser *self, int32_t rule, int32_t dot, int32_t origin) {
  uint64_t key = ((uint64_t)(uint32_t)rule << 34) | ((uint64_t)(uint32_t)dot << 32) |
                 (uint64_t)(uint32_t)origin;
  if (!hf_map_reserve(&self->dedup, 1)) return false;
  HfMapSlot *slot = hf_map_probe(&self->dedup, key);
  if (slot->stamp == self->dedup.stamp) return true;
  HfPItem it = {rule, dot, origin};
  if (!array_push(&self->items, it)) return false;
  hf_map_fill(&self->dedup, slot, key, 1);
  return true;
}

static int hf_parser__wait_cmp(const void *a, const void *b) {
  const HfWait *x = a, *y = b;
  if (x->symbol != y->symbol) return x->symbol < y->symbol ? -1 : 1;
  return x->item < y->item ? -1 : x->item > y->item;
}

/* First waiting pair of set k for `symbol` (index into waits), and the end of set k's
 * pairs in *end. */
static int32_t hf_parser__waiting(const HfParser *self, int32_t k, int32_t symbol, int32_t *end) {
  int32_t lo = self->sets.contents[k].wait_start;
  int32_t hi = k + 1 < (int32_t)self->sets.size ? self->sets.contents[k + 1].wait_start
                                                : (int32_t)self->waits.size;
  *end = hi;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (self->waits.contents[mid].symbol < symbol) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Whether some item of set k awaits `symbol`. */
static bool hf_parser__awaits(const HfParser *self, int32_t k, int32_t symbol) {
  int32_t end;
  int32_t w = hf_parser__waiting(self, k, symbol, &end);
  return (w < end && self->waits.contents[w].symbol == symbol) ||
         (k == 0 && symbol == self->grammar->start);
}

/* Closes the last set (predict, complete) and indexes it.  Its seed items are in place. */
static HfVerdict hf_parser__close(HfParser *self) {
  int32_t k = (int32_t)self->sets.size - 1;
  int32_t nt = self->grammar->n_terminals;
  for (size_t c = (size_t)self->sets.contents[k].items_start; c < self->items.size; c++) {
    if (++self->steps > self->max_steps || self->items.size > self->max_items) {
      self->limit_hit = 1;
      return HF_UNKNOWN;
    }
    HfPItem it = self->items.contents[c];
    int32_t x = hf_parser__next(self, it);
    if (x >= nt) {
      for (int32_t j = self->by_lhs_start.contents[x]; j < self->by_lhs_start.contents[x + 1]; j++)
        if (!hf_parser__add(self, self->by_lhs.contents[j], 0, k)) return HF_ERROR;
      if (self->nullable.contents[x] && !hf_parser__add(self, it.rule, it.dot + 1, it.origin))
        return HF_ERROR;
    } else if (x < 0 && it.origin < k) {
      int32_t a = self->lhs.contents[it.rule], end;
      for (int32_t w = hf_parser__waiting(self, it.origin, a, &end);
           w < end && self->waits.contents[w].symbol == a; w++) {
        HfPItem p = self->items.contents[self->waits.contents[w].item];
        if (!hf_parser__add(self, p.rule, p.dot + 1, p.origin)) return HF_ERROR;
      }
    }
  }
  /* index: (symbol after the dot, item) sorted */
  size_t first = self->waits.size;
  self->sets.contents[k].wait_start = (int32_t)first;
  for (int32_t c = self->sets.contents[k].items_start; c < (int32_t)self->items.size; c++) {
    int32_t x = hf_parser__next(self, self->items.contents[c]);
    if (x < 0) continue;
    HfWait w = {x, c};
    if (!array_push(&self->waits, w)) return HF_ERROR;
  }
  if (self->waits.size > first) /* qsort wants a buffer even for no elements */
    qsort(self->waits.contents + first, self->waits.size - first, sizeof(HfWait),
          hf_parser__wait_cmp);
  return HF_YES;
}

static bool hf_parser__open_set(HfParser *self) {
  HfSet s = {(int32_t)self->items.size, (int32_t)self->waits.size, NULL};
  hf_map_clear(&self->dedup);
  return array_push(&self->sets, s);
}

/* Drops sets from `count` on (their items, waits and Up tables). */
static void hf_parser__drop(HfParser *self, int32_t count) {
  if (count >= (int32_t)self->sets.size) return;
  HfSet s = self->sets.contents[count];
  self->items.size = (size_t)s.items_start;
  self->waits.size = (size_t)s.wait_start;
  for (size_t k = (size_t)count; k < self->sets.size; k++)
    hf_parser__free_up(&self->sets.contents[k]);
  self->sets.size = (size_t)count;
}

HfVerdict hf_parser_reset(HfParser *self) {
  if (self == NULL) return HF_ERROR;
  self->error[0] = '\0';
  hf_parser__drop(self, 0);
  self->steps = 0;
  self->max_steps = UINT64_MAX;
  self->max_items = UINT64_MAX;
  if (!hf_parser__open_set(self)) return HF_ERROR;
  int32_t s = self->grammar->start;
  for (int32_t j = self->by_lhs_start.contents[s]; j < self->by_lhs_start.contents[s + 1]; j++)
    if (!hf_parser__add(self, self->by_lhs.contents[j], 0, 0)) return HF_ERROR;
  return hf_parser__close(self);
}

/* Scans terminal t from set `from` into a new set; HF_NO when nothing waits for it. */
static HfVerdict hf_parser__scan(HfParser *self, int32_t from, int32_t t) {
  int32_t end;
  int32_t w = hf_parser__waiting(self, from, t, &end);
  if (w >= end || self->waits.contents[w].symbol != t) return HF_NO;
  if (!hf_parser__open_set(self)) return HF_ERROR;
  for (; w < end && self->waits.contents[w].symbol == t; w++) {
    HfPItem p = self->items.contents[self->waits.contents[w].item];
    if (!hf_parser__add(self, p.rule, p.dot + 1, p.origin)) return HF_ERROR;
  }
  return hf_parser__close(self);
}

HfVerdict hf_parser_push(HfParser *self, const int32_t *terminals, size_t n,
                         const HfLimits *limits) {
  if (self == NULL || (n && terminals == NULL)) return HF_ERROR;
  self->error[0] = '\0';
  self->steps = 0;
  self->limit_hit = 0;
  self->max_steps = limits && limits->max_steps ? limits->max_steps : HF_PARSER_DEFAULT_STEPS;
  self->max_items = limits && limits->max_items ? limits->max_items : HF_PARSER_DEFAULT_ITEMS;
  for (size_t i = 0; i < n; i++) {
    int32_t t = terminals[i];
    if (t < 0 || t >= self->grammar->n_terminals) {
      snprintf(self->error, sizeof self->error, "terminals[%zu] = %d is not a terminal", i,
               (int)t);
      return HF_ERROR;
    }
    int32_t before = (int32_t)self->sets.size;
    HfVerdict v = hf_parser__scan(self, before - 1, t);
    if (v != HF_YES) {
      hf_parser__drop(self, before);
      if (v == HF_ERROR) snprintf(self->error, sizeof self->error, "out of memory");
      return v;
    }
  }
  return HF_YES;
}

void hf_parser_truncate(HfParser *self, int32_t position) {
  if (self == NULL || position < 0) return;
  hf_parser__drop(self, position + 1);
}

int hf_parser_accepts(const HfParser *self) {
  if (self == NULL) return 0;
  int32_t k = (int32_t)self->sets.size - 1;
  int32_t s = self->grammar->start;
  for (size_t c = (size_t)self->sets.contents[k].items_start; c < self->items.size; c++) {
    HfPItem it = self->items.contents[c];
    if (it.origin == 0 && self->lhs.contents[it.rule] == s && hf_parser__next(self, it) < 0)
      return 1;
  }
  return k == 0 && self->nullable.contents[s];
}

/* ---- Up tables ----------------------------------------------------------------------- */

/* The table of set k for context r (created empty when missing; a stale one, computed for
 * an older version of r, is emptied). NULL when memory ran out. */
static HfUpTable *hf_parser__table(HfParser *self, int32_t k, const HfRight *r) {
  HfSet *set = &self->sets.contents[k];
  for (HfUpTable *t = set->up; t != NULL; t = t->next) {
    if (t->right != r) continue;
    if (t->version != hf_right_version(r)) { /* not refreshed (hf_parser__refresh) */
      t->count = 0;
      t->version = hf_right_version(r);
      t->n_items = hf_right_n_items(r);
      t->words = (hf_right_n_states(r) + 63) / 64 + 1;
      hf_free(t->bits);
      t->bits = NULL;
      t->cap = 0;
    }
    return t;
  }
  HfUpTable *t = hf_malloc(sizeof *t);
  if (t == NULL) return NULL;
  memset(t, 0, sizeof *t);
  t->right = r;
  t->version = hf_right_version(r);
  t->n_items = hf_right_n_items(r);
  t->words = (hf_right_n_states(r) + 63) / 64 + 1;
  t->next = set->up;
  set->up = t;
  return t;
}

/* The row of `a` in table t, or NULL. */
static uint64_t *hf_parser__up(const HfUpTable *t, int32_t a) {
  for (int32_t i = 0; i < t->count; i++)
    if (t->syms[i] == a) return t->bits + (size_t)i * (size_t)t->words;
  return NULL;
}

/* A new zeroed row for `a` in t; NULL when memory ran out. */
static uint64_t *hf_parser__new_row(HfUpTable *t, int32_t a) {
  if (t->count == t->cap) {
    int32_t cap = t->cap ? 2 * t->cap : 8;
    int32_t *syms = hf_realloc(t->syms, (size_t)cap * sizeof *syms);
    if (syms == NULL) return NULL;
    t->syms = syms;
    uint64_t *bits = hf_realloc(t->bits, (size_t)cap * (size_t)t->words * sizeof *bits);
    if (bits == NULL) return NULL;
    t->bits = bits;
    t->cap = cap;
  }
  uint64_t *row = t->bits + (size_t)t->count * (size_t)t->words;
  memset(row, 0, (size_t)t->words * sizeof *row);
  t->syms[t->count++] = a;
  return row;
}

HF_INLINE int32_t hf__ctz64(uint64_t x) {
#if defined(__GNUC__)
  return __builtin_ctzll(x);
#else
  int32_t n = 0;
  while (!(x & 1)) {
    x >>= 1;
    n++;
  }
  return n;
#endif
}

/* out |= pre_y(u): the states q with (q, y, q') in R for some q' in u. */
static void hf_parser__pre(HfParser *self, const HfRight *r, int32_t words, int32_t y,
                           const uint64_t *u, uint64_t *out) {
  for (int32_t w = 0; w < words; w++) {
    for (uint64_t bits = u[w]; bits; bits &= bits - 1) {
      int32_t q2 = w * 64 + hf__ctz64(bits);
      int32_t p, q, nf, nb;
      for (int32_t id = hf_right__first_bwd(r, q2, y); id >= 0; id = nb) {
        hf_right__item(r, id, &p, &q, &nf, &nb);
        out[p / 64] |= UINT64_C(1) << (p % 64);
        self->steps++;
      }
    }
  }
}

/* ---- Up tables after R grew (see "A growing R" at the top of this file) ----------------- */

/* The table of set k for context r, or NULL; never creates or empties one. */
static HfUpTable *hf_parser__find_table(const HfParser *self, int32_t k, const HfRight *r) {
  for (HfUpTable *t = self->sets.contents[k].up; t != NULL; t = t->next)
    if (t->right == r) return t;
  return NULL;
}

/* R's triples from id `from` on, grouped by symbol: ids[start[y] .. start[y + 1]). */
typedef struct HfFresh {
  HfInt32Array start, ids;
} HfFresh;

static bool hf_parser__fresh(const HfParser *self, const HfRight *r, uint64_t from,
                             HfFresh *out) {
  int32_t ns = self->grammar->n_symbols;
  int32_t m1 = (int32_t)hf_right_n_items(r), m0 = (int32_t)from;
  if (!array_resize(&out->start, (size_t)ns + 1) || !array_resize(&out->ids, (size_t)(m1 - m0)))
    return false;
  int32_t *start = out->start.contents;
  memset(start, 0, ((size_t)ns + 1) * sizeof *start);
  for (int32_t id = m0; id < m1; id++) start[hf_right__item_symbol(r, id) + 1]++;
  for (int32_t y = 0; y < ns; y++) start[y + 1] += start[y];
  for (int32_t id = m0; id < m1; id++) out->ids.contents[start[hf_right__item_symbol(r, id)]++] = id;
  for (int32_t y = ns; y > 0; y--) start[y] = start[y - 1]; /* the cursors ran to the ends */
  start[0] = 0;
  return true;
}

/* out |= pre_y(u) over the fresh triples only. */
static void hf_parser__pre_fresh(HfParser *self, const HfRight *r, const HfFresh *fresh,
                                 int32_t y, const uint64_t *u, uint64_t *out) {
  int32_t p, q, nf, nb;
  for (int32_t i = fresh->start.contents[y]; i < fresh->start.contents[y + 1]; i++) {
    hf_right__item(r, fresh->ids.contents[i], &p, &q, &nf, &nb);
    if ((u[q / 64] >> (q % 64)) & 1) out[p / 64] |= UINT64_C(1) << (p % 64);
    self->steps++;
  }
}

/* Rows of `words` words (the context has more states now); new bits zero. */
static bool hf_parser__widen(HfUpTable *t, int32_t words) {
  if (words == t->words) return true;
  if (t->cap > 0) {
    uint64_t *bits = hf_malloc((size_t)t->cap * (size_t)words * sizeof *bits);
    if (bits == NULL) return false;
    memset(bits, 0, (size_t)t->cap * (size_t)words * sizeof *bits);
    for (int32_t i = 0; i < t->count; i++)
      memcpy(bits + (size_t)i * (size_t)words, t->bits + (size_t)i * (size_t)t->words,
             (size_t)t->words * sizeof *bits);
    hf_free(t->bits);
    t->bits = bits;
  }
  t->words = words;
  return true;
}

/* Adds `add` to row `row` of t, and what is new to its gain and to `pend`. */
static void hf_parser__gain(HfUpTable *t, uint64_t *pend, int32_t row, const uint64_t *add) {
  size_t at = (size_t)row * (size_t)t->words;
  for (int32_t i = 0; i < t->words; i++) {
    uint64_t fresh = add[i] & ~t->bits[at + i];
    t->bits[at + i] |= fresh;
    t->gain[at + i] |= fresh;
    pend[at + i] |= fresh;
  }
}

/* Brings table t of set k (stale: computed for an older R) up to date; every table of an
 * earlier set is, with its gains.  False when memory ran out. */
static bool hf_parser__refresh_table(HfParser *self, const HfRight *r, int32_t k, HfUpTable *t,
                                     const HfFresh *fresh) {
  int32_t words = (hf_right_n_states(r) + 63) / 64 + 1;
  if (!hf_parser__widen(t, words)) return false;
  size_t n = (size_t)t->count * (size_t)words;
  t->gain = hf_malloc((n + 1) * sizeof *t->gain);
  uint64_t *pend = hf_malloc((n + 1) * sizeof *pend);
  uint64_t *add = hf_malloc((size_t)words * sizeof *add);
  uint64_t *d = hf_malloc((size_t)words * sizeof *d);
  bool ok = t->gain != NULL && pend != NULL && add != NULL && d != NULL;
  if (!ok) goto out;
  memset(t->gain, 0, n * sizeof *t->gain);
  memset(pend, 0, n * sizeof *pend);
  /* Seeds: gains of parents in earlier sets (over all triples), fresh triples over whole
   * parent rows, new finals. */
  for (int32_t row = 0; row < t->count; row++) {
    int32_t x = t->syms[row], end;
    memset(add, 0, (size_t)words * sizeof *add);
    for (int32_t w = hf_parser__waiting(self, k, x, &end);
         w < end && self->waits.contents[w].symbol == x; w++) {
      HfPItem it = self->items.contents[self->waits.contents[w].item];
      bool last = it.dot + 1 >= self->len.contents[it.rule];
      int32_t b = self->lhs.contents[it.rule], y = self->rhs1.contents[it.rule];
      const HfUpTable *pt = it.origin == k ? t : hf_parser__find_table(self, it.origin, r);
      const uint64_t *parent = pt != NULL ? hf_parser__up(pt, b) : NULL;
      if (parent == NULL) continue; /* the parent's chain ended */
      if (!last) hf_parser__pre_fresh(self, r, fresh, y, parent, add);
      if (it.origin == k || pt->gain == NULL) continue; /* same set: propagated below */
      const uint64_t *pg = pt->gain + (parent - pt->bits);
      if (last) {
        for (int32_t i = 0; i < words; i++) add[i] |= pg[i];
      } else {
        hf_parser__pre(self, r, words, y, pg, add);
      }
    }
    if (k == 0 && x == self->grammar->start)
      for (int32_t q = 0; q < hf_right_n_states(r); q++)
        if (hf_right__is_final(r, q)) add[q / 64] |= UINT64_C(1) << (q % 64);
    hf_parser__gain(t, pend, row, add);
  }
  /* Gains travel along the set's own items (origin k) until none is pending. */
  for (bool moved = true; moved;) {
    moved = false;
    for (int32_t src = 0; src < t->count; src++) {
      uint64_t *ps = pend + (size_t)src * (size_t)words;
      bool any = false;
      for (int32_t i = 0; i < words && !any; i++) any = ps[i] != 0;
      if (!any) continue;
      moved = true;
      memcpy(d, ps, (size_t)words * sizeof *d);
      memset(ps, 0, (size_t)words * sizeof *ps);
      int32_t a = t->syms[src];
      for (int32_t row = 0; row < t->count; row++) {
        int32_t x = t->syms[row], end;
        for (int32_t w = hf_parser__waiting(self, k, x, &end);
             w < end && self->waits.contents[w].symbol == x; w++) {
          HfPItem it = self->items.contents[self->waits.contents[w].item];
          if (it.origin != k || self->lhs.contents[it.rule] != a) continue;
          if (it.dot + 1 >= self->len.contents[it.rule]) {
            hf_parser__gain(t, pend, row, d);
          } else {
            memset(add, 0, (size_t)words * sizeof *add);
            hf_parser__pre(self, r, words, self->rhs1.contents[it.rule], d, add);
            hf_parser__gain(t, pend, row, add);
          }
        }
      }
    }
  }
  t->version = hf_right_version(r);
  t->n_items = hf_right_n_items(r);
out:
  hf_free(pend);
  hf_free(add);
  hf_free(d);
  return ok;
}

/* Brings every table of context r up to date, sets in order (a row's parents lie in its own
 * or earlier sets); on running out of memory, drops them all (they are computed again on
 * demand, as before a growth). */
static void hf_parser__refresh(HfParser *self, const HfRight *r) {
  uint64_t v = hf_right_version(r), from = UINT64_MAX;
  for (size_t k = 0; k < self->sets.size; k++) {
    HfUpTable *t = hf_parser__find_table(self, (int32_t)k, r);
    if (t != NULL && t->version != v && t->n_items < from) from = t->n_items;
  }
  if (from == UINT64_MAX) return;
  HfFresh fresh;
  array_init(&fresh.start);
  array_init(&fresh.ids);
  /* a table computed with more triples than `from` finds some of them again: true triples,
   * so what they add is in the new fixpoint too */
  bool ok = hf_parser__fresh(self, r, from, &fresh);
  for (size_t k = 0; k < self->sets.size && ok; k++) {
    HfUpTable *t = hf_parser__find_table(self, (int32_t)k, r);
    if (t != NULL && t->version != v) ok = hf_parser__refresh_table(self, r, (int32_t)k, t, &fresh);
  }
  for (size_t k = 0; k < self->sets.size; k++) {
    HfUpTable *t = hf_parser__find_table(self, (int32_t)k, r);
    if (t == NULL) continue;
    hf_free(t->gain);
    t->gain = NULL;
  }
  if (!ok) hf_parser_forget(self, r);
  array_destroy(&fresh.start);
  array_destroy(&fresh.ids);
}

/* The nonterminals whose Up rows in set k the row of `a` depends on within the set (through
 * items whose origin is k itself: predictions, left recursion), `a` included, into
 * self->todo (as symbols). */
static bool hf_parser__same_set(HfParser *self, int32_t k, int32_t a) {
  array_clear(&self->todo);
  if (!array_push(&self->todo, a)) return false;
  for (size_t i = 0; i < self->todo.size; i++) {
    int32_t x = self->todo.contents[i], end;
    for (int32_t w = hf_parser__waiting(self, k, x, &end);
         w < end && self->waits.contents[w].symbol == x; w++) {
      HfPItem it = self->items.contents[self->waits.contents[w].item];
      if (it.origin != k) continue;
      int32_t b = self->lhs.contents[it.rule];
      bool seen = false;
      for (size_t j = 0; j < self->todo.size && !seen; j++) seen = self->todo.contents[j] == b;
      if (!seen && !array_push(&self->todo, b)) return false;
    }
  }
  return true;
}

/* Up(k, a) for context r: the states where `a`, begun at set k, may end so that the rest of
 * the input's chains can be completed through R (see the top of this file).  Computed on
 * demand with the rows it needs in earlier sets; a set's rows that depend on each other are
 * solved together as a least fixpoint.  NULL when `a` is awaited nowhere in set k (its chain
 * ends) or on an error or limit (self->fault says which). */
static const uint64_t *hf_parser__up_get(HfParser *self, const HfRight *r, int32_t k0,
                                         int32_t a0) {
  HfUpTable *t0 = hf_parser__table(self, k0, r);
  if (t0 == NULL) {
    self->fault = HF_ERROR;
    return NULL;
  }
  uint64_t *got = hf_parser__up(t0, a0);
  if (got != NULL) return got;
  /* explicit stack of (set, symbol) frames: earlier sets first */
  size_t base = self->frames.size;
  if (!array_push(&self->frames, k0) || !array_push(&self->frames, a0)) goto oom;
  while (self->frames.size > base) {
    int32_t k = self->frames.contents[self->frames.size - 2];
    int32_t a = self->frames.contents[self->frames.size - 1];
    HfUpTable *t = hf_parser__table(self, k, r);
    if (t == NULL) goto oom;
    if (hf_parser__up(t, a) != NULL) {
      self->frames.size -= 2;
      continue;
    }
    if (!hf_parser__same_set(self, k, a)) goto oom;
    /* rows needed from earlier sets first */
    size_t before = self->frames.size;
    for (size_t i = 0; i < self->todo.size; i++) {
      int32_t x = self->todo.contents[i], end;
      for (int32_t w = hf_parser__waiting(self, k, x, &end);
           w < end && self->waits.contents[w].symbol == x; w++) {
        HfPItem it = self->items.contents[self->waits.contents[w].item];
        if (it.origin == k) continue;
        HfUpTable *to = hf_parser__table(self, it.origin, r);
        if (to == NULL) goto oom;
        int32_t b = self->lhs.contents[it.rule];
        if (hf_parser__up(to, b) == NULL && hf_parser__awaits(self, it.origin, b)) {
          if (!array_push(&self->frames, it.origin) || !array_push(&self->frames, b)) goto oom;
        }
      }
    }
    if (self->frames.size > before) continue;
    /* all inputs known: solve the rows of this set's group together */
    int32_t words = t->words;
    size_t first = (size_t)t->count;
    for (size_t i = 0; i < self->todo.size; i++)
      if (hf_parser__up(t, self->todo.contents[i]) == NULL &&
          hf_parser__new_row(t, self->todo.contents[i]) == NULL)
        goto oom;
    if (k == 0) {
      uint64_t *top = hf_parser__up(t, self->grammar->start);
      if (top != NULL)
        for (int32_t q = 0; q < hf_right_n_states(r); q++)
          if (hf_right__is_final(r, q)) top[q / 64] |= UINT64_C(1) << (q % 64);
    }
    if (!array_resize(&self->scratch, (size_t)words)) goto oom;
    uint64_t *add = self->scratch.contents;
    bool grew = true;
    while (grew) {
      grew = false;
      for (size_t row = first; row < (size_t)t->count; row++) {
        int32_t x = t->syms[row], end;
        for (int32_t w = hf_parser__waiting(self, k, x, &end);
             w < end && self->waits.contents[w].symbol == x; w++) {
          HfPItem it = self->items.contents[self->waits.contents[w].item];
          const HfUpTable *pt = it.origin == k ? t : hf_parser__table(self, it.origin, r);
          const uint64_t *parent = hf_parser__up(pt, self->lhs.contents[it.rule]);
          if (parent == NULL) continue; /* the parent's chain ended */
          uint64_t *dst = t->bits + row * (size_t)words;
          if (it.dot + 1 >= self->len.contents[it.rule]) {
            memcpy(add, parent, (size_t)words * sizeof *add);
          } else {
            memset(add, 0, (size_t)words * sizeof *add);
            hf_parser__pre(self, r, words, self->rhs1.contents[it.rule], parent, add);
          }
          for (int32_t i = 0; i < words; i++) {
            if (add[i] & ~dst[i]) grew = true;
            dst[i] |= add[i];
          }
        }
      }
      if (self->steps > self->max_steps) {
        self->limit_hit = 1;
        t->count = (int32_t)first; /* drop the unfinished rows */
        self->frames.size = base;
        self->fault = HF_UNKNOWN;
        return NULL;
      }
    }
    self->frames.size -= 2;
  }
  return hf_parser__up(t0, a0);
oom:
  self->frames.size = base;
  self->fault = HF_ERROR;
  return NULL;
}

/* Whether `rest` (0, 1 or 2 symbols of a rule after some dot) derives a word from R state
 * `s` into a state of u. */
static bool hf_parser__reaches(HfParser *self, const HfRight *r, int32_t rule, int32_t from_dot,
                               int32_t s, const uint64_t *u) {
  int32_t n = self->len.contents[rule];
  int32_t p, q, nf, nb;
  if (from_dot >= n) return (u[s / 64] >> (s % 64)) & 1;
  int32_t x = from_dot == 0 ? self->rhs0.contents[rule] : self->rhs1.contents[rule];
  for (int32_t id = hf_right__first_fwd(r, s, x); id >= 0; id = nf) {
    hf_right__item(r, id, &p, &q, &nf, &nb);
    self->steps++;
    if (from_dot + 1 >= n) {
      if ((u[q / 64] >> (q % 64)) & 1) return true;
    } else {
      int32_t y = self->rhs1.contents[rule];
      int32_t p2, q2, nf2, nb2;
      for (int32_t id2 = hf_right__first_fwd(r, q, y); id2 >= 0; id2 = nf2) {
        hf_right__item(r, id2, &p2, &q2, &nf2, &nb2);
        self->steps++;
        if ((u[q2 / 64] >> (q2 % 64)) & 1) return true;
      }
    }
  }
  return false;
}

/* Whether some item of set k, with `label` scanned (or nothing, label -1), can go on from
 * R state s. */
static HfVerdict hf_parser__exit(HfParser *self, const HfRight *r, int32_t k, int32_t label,
                                 int32_t s) {
  int32_t c0 = self->sets.contents[k].items_start;
  int32_t c1 = k + 1 < (int32_t)self->sets.size ? self->sets.contents[k + 1].items_start
                                                : (int32_t)self->items.size;
  for (int32_t c = c0; c < c1; c++) {
    HfPItem it = self->items.contents[c];
    int32_t x = hf_parser__next(self, it);
    if (label >= 0 && x != label) continue;
    int32_t dot = label >= 0 ? it.dot + 1 : it.dot;
    self->fault = HF_YES;
    const uint64_t *u = hf_parser__up_get(self, r, it.origin, self->lhs.contents[it.rule]);
    if (u == NULL && self->fault != HF_YES) return self->fault;
    if (u != NULL && hf_parser__reaches(self, r, it.rule, dot, s, u)) return HF_YES;
    if (self->steps > self->max_steps) {
      self->limit_hit = 1;
      return HF_UNKNOWN;
    }
  }
  return HF_NO;
}

HfVerdict hf_parser_query(HfParser *self, const HfRight *right, int32_t n_junction,
                          const int32_t *edges, size_t n_edges, const int32_t *exits,
                          size_t n_exits, const HfLimits *limits) {
  if (self == NULL || right == NULL) return HF_ERROR;
  self->error[0] = '\0';
  if (n_junction < 1 || (n_edges && edges == NULL) || (n_exits && exits == NULL)) {
    snprintf(self->error, sizeof self->error, "a junction needs a state 0 and its arrays");
    return HF_ERROR;
  }
  int32_t nt = self->grammar->n_terminals, nr = hf_right_n_states(right);
  for (size_t i = 0; i < n_edges; i++) {
    int32_t a = edges[4 * i], lab = edges[4 * i + 1], b = edges[4 * i + 2];
    if (a < 0 || b <= a || b >= n_junction || lab < -1 || lab >= nt) {
      snprintf(self->error, sizeof self->error,
               "edges[%zu] = (%d, %d, %d): junction edges go forward (from < to < %d) and "
               "carry a terminal or -1", i, (int)a, (int)lab, (int)b, (int)n_junction);
      return HF_ERROR;
    }
  }
  for (size_t i = 0; i < n_exits; i++) {
    int32_t a = exits[3 * i], lab = exits[3 * i + 1], s = exits[3 * i + 2];
    if (a < 0 || a >= n_junction || lab < -1 || lab >= nt || s < 0 || s >= nr) {
      snprintf(self->error, sizeof self->error,
               "exits[%zu] = (%d, %d, %d): from a junction state, with a terminal or -1, "
               "into a state of the right context [0, %d)", i, (int)a, (int)lab, (int)s,
               (int)nr);
      return HF_ERROR;
    }
  }
  self->steps = 0;
  self->limit_hit = 0;
  hf_parser__refresh(self, right); /* tables computed before R last grew */
  self->max_steps = limits && limits->max_steps ? limits->max_steps : HF_PARSER_DEFAULT_STEPS;
  self->max_items = limits && limits->max_items ? limits->max_items : HF_PARSER_DEFAULT_ITEMS;
  int32_t base = (int32_t)self->sets.size - 1; /* junction state 0 */
  HfVerdict verdict = HF_NO;
  HfInt32Array set_of;
  array_init(&set_of);
  if (!array_resize(&set_of, (size_t)n_junction)) goto oom;
  set_of.contents[0] = base;
  for (int32_t u = 1; u < n_junction; u++) set_of.contents[u] = -1;
  /* Junction states in order (edges go forward): a state's set is the union of what its
   * incoming edges bring. */
  for (int32_t u = 1; u < n_junction; u++) {
    bool opened = false;
    for (size_t i = 0; i < n_edges; i++) {
      if (edges[4 * i + 2] != u) continue;
      int32_t from = set_of.contents[edges[4 * i]], lab = edges[4 * i + 1];
      if (from < 0) continue;
      if (!opened) {
        if (!hf_parser__open_set(self)) goto oom;
        opened = true;
      }
      int32_t c0 = self->sets.contents[from].items_start;
      int32_t c1 = self->sets.contents[from + 1].items_start;
      if (lab < 0) {
        for (int32_t c = c0; c < c1; c++) {
          HfPItem p = self->items.contents[c];
          if (!hf_parser__add(self, p.rule, p.dot, p.origin)) goto oom;
        }
      } else {
        int32_t end;
        for (int32_t w = hf_parser__waiting(self, from, lab, &end);
             w < end && self->waits.contents[w].symbol == lab; w++) {
          HfPItem p = self->items.contents[self->waits.contents[w].item];
          if (!hf_parser__add(self, p.rule, p.dot + 1, p.origin)) goto oom;
        }
      }
    }
    if (!opened) continue;
    int32_t k = (int32_t)self->sets.size - 1;
    if ((size_t)self->sets.contents[k].items_start == self->items.size) {
      hf_parser__drop(self, k); /* nothing reached this state */
      continue;
    }
    HfVerdict v = hf_parser__close(self);
    if (v == HF_ERROR) goto oom;
    if (v == HF_UNKNOWN) {
      verdict = HF_UNKNOWN;
      goto done;
    }
    set_of.contents[u] = k;
  }
  for (size_t i = 0; i < n_exits; i++) {
    int32_t k = set_of.contents[exits[3 * i]];
    if (k < 0) continue;
    HfVerdict v = hf_parser__exit(self, right, k, exits[3 * i + 1], exits[3 * i + 2]);
    if (v == HF_YES) {
      verdict = HF_YES;
      goto done;
    }
    if (v == HF_ERROR) goto oom;
    if (v == HF_UNKNOWN) verdict = HF_UNKNOWN;
  }
  if (verdict == HF_NO && !hf_right_complete(right)) verdict = HF_UNKNOWN;
done:
  hf_parser__drop(self, base + 1);
  array_destroy(&set_of);
  return verdict;
oom:
  hf_parser__drop(self, base + 1);
  array_destroy(&set_of);
  snprintf(self->error, sizeof self->error, "out of memory");
  return HF_ERROR;
}
