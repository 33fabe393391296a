/*
 * hf_right.c -- every generating triple of an NFA: what the text after a hole accepts.
 *
 * An item (p, X, q) says that symbol X derives a word taking the NFA from p to q.  Items are
 * kept *ε-closed*: with p' ->ε* p and q ->ε* q', (p', X, q') is an item too.  Base items
 * (terminal edges, nullable symbols) are created closed, and composing closed items by
 * A -> X Y or A -> X keeps them closed (the ε moves at a join are absorbed by the left
 * item's right end), so no rule needs ε.  The closure is a plain agenda: pop an item,
 * combine it with the finalised items on either side through the grammar's child
 * indexes.  Unlike the checker's search it has no goal and keeps everything, because the
 * parser asks it about many left contexts (hf_parser_query).
 *
 * Growth: hf_right_add appends states and edges that leave only the new states, so the
 * ε-closures of old states stay as they are; new states that reach old ones by ε inherit
 * the old states' items; then the agenda runs on.  Nothing is recomputed.
 *
 * Growth of a filtered context (one built with entries): new edges and entries can only
 * add labels to IN(p) of old states p (OUT(q) of an old state depends on edges leaving it
 * and the states it reaches, which are all old).  Such a *grown* state may now admit
 * triples the filter dropped before; every one of them has its leftmost leaf at p, so
 * putting p's items back on the agenda (and its nullable items through the filter again)
 * derives them.  That runs before new states inherit from old ones, so they inherit the
 * grown states' new triples too.
 */
#include <stdio.h>

#include "hf_internal.h"

enum {
  HF_RIGHT_STATE_BITS = 24,
  HF_RIGHT_SYMBOL_BITS = 16,
  HF_RIGHT_DEFAULT_STEPS = 20000000,
  HF_RIGHT_DEFAULT_ITEMS = 2000000,
  /* 16 MB per head array at most: one context serves every entry of a hole (it grows by
   * them), and switching to the hash maps made each growth past the cap cost as much as
   * a fresh closure. */
  HF_RIGHT_DENSE_CELLS = 1 << 22,
  /* Dense heads come in blocks of this many states, so growing allocates and fills only
   * the new states' blocks (one array resized at each growth copied and refilled it all,
   * as costly as a small closure). */
  HF_RIGHT_BLOCK_SHIFT = 6,
  HF_RIGHT_BLOCK_STATES = 1 << HF_RIGHT_BLOCK_SHIFT,
};

typedef Array(int32_t *) HfBlockArray; /* owned blocks of dense heads */

typedef struct HfTriple {
  int32_t p, x, q;
  int32_t next_fwd;  /* next item with the same (p, x) */
  int32_t next_bwd;  /* next item with the same (q, x) */
  int32_t next_from; /* next item with the same p     */
} HfTriple;

struct HfRight {
  const HfGrammar *grammar;
  int32_t n_states;
  int complete;            /* 1 while every add saturated within its limits */
  uint64_t version;        /* bumped by every successful add                */
  char error[256];
  Array(HfTriple) items;
  HfMap item_index;        /* packed (p, x, q) -> item                      */
  HfMap fwd;               /* packed (p, x) -> first item (when not dense)   */
  HfMap bwd;               /* packed (q, x) -> first item (when not dense)   */
  /* Dense heads, (state, x) -> first item or -1, while states * symbols stays under
   * HF_RIGHT_DENSE_CELLS: a hash probe per partner lookup was most of the closure.  Block
   * b holds states [b * HF_RIGHT_BLOCK_STATES, ...), (state % block) * n_symbols + x. */
  int dense;
  HfBlockArray fwd_dense, bwd_dense;
  HfInt32Array from_head;  /* per state: first item starting there, or -1   */
  HfInt32Array eps_start, eps_list; /* ε edges by source (CSR over all states) */
  HfInt32Array reps_start, reps_list; /* ε edges by target                      */
  Array(int32_t) eps_pairs;         /* (from, to) of every ε edge so far      */
  HfByteArray final_flag;
  HfInt32Array agenda;
  HfInt32Array stack, mark;         /* ε-closure walks                        */
  int32_t mark_stamp;
  uint64_t steps;
  /* context filter (see hf_right_add): IN/OUT rows of ctx_words words per state */
  int entered;              /* the first add had entries: later adds may bring more   */
  int filtered;
  int32_t words;
  Array(uint64_t) ctx_in, ctx_out;
  HfInt32Array grown;       /* old states whose IN this add widened                   */
  /* memory limit of the running add (0: none); set when a growth would pass it */
  uint64_t max_bytes;
  int out_of_bytes;
};

HF_INLINE uint64_t hf_right__key(int32_t p, int32_t x, int32_t q) {
  return ((uint64_t)(uint32_t)p << (HF_RIGHT_STATE_BITS + HF_RIGHT_SYMBOL_BITS)) |
         ((uint64_t)(uint32_t)x << HF_RIGHT_STATE_BITS) | (uint64_t)(uint32_t)q;
}

HF_INLINE uint64_t hf_right__pair(int32_t s, int32_t x) {
  return ((uint64_t)(uint32_t)s << HF_RIGHT_SYMBOL_BITS) | (uint64_t)(uint32_t)x;
}

HfRight *hf_right_new(const HfGrammar *grammar) {
  if (grammar == NULL || grammar->n_symbols >= (1 << HF_RIGHT_SYMBOL_BITS)) return NULL;
  HfRight *self = hf_malloc(sizeof *self);
  if (self == NULL) return NULL;
  memset(self, 0, sizeof *self);
  self->grammar = grammar;
  self->complete = 1;
  array_init(&self->items);
  hf_map_init(&self->item_index);
  hf_map_init(&self->fwd);
  hf_map_init(&self->bwd);
  array_init(&self->fwd_dense);
  array_init(&self->bwd_dense);
  self->dense = 1;
  array_init(&self->from_head);
  array_init(&self->eps_start);
  array_init(&self->eps_list);
  array_init(&self->reps_start);
  array_init(&self->reps_list);
  array_init(&self->eps_pairs);
  array_init(&self->final_flag);
  array_init(&self->agenda);
  array_init(&self->stack);
  array_init(&self->mark);
  array_init(&self->ctx_in);
  array_init(&self->ctx_out);
  array_init(&self->grown);
  return self;
}

static void hf_right__free_blocks(HfRight *self) {
  for (size_t b = 0; b < self->fwd_dense.size; b++) hf_free(self->fwd_dense.contents[b]);
  for (size_t b = 0; b < self->bwd_dense.size; b++) hf_free(self->bwd_dense.contents[b]);
  array_destroy(&self->fwd_dense);
  array_destroy(&self->bwd_dense);
}

void hf_right_delete(HfRight *self) {
  if (self == NULL) return;
  array_destroy(&self->items);
  hf_map_destroy(&self->item_index);
  hf_map_destroy(&self->fwd);
  hf_map_destroy(&self->bwd);
  hf_right__free_blocks(self);
  array_destroy(&self->from_head);
  array_destroy(&self->eps_start);
  array_destroy(&self->eps_list);
  array_destroy(&self->reps_start);
  array_destroy(&self->reps_list);
  array_destroy(&self->eps_pairs);
  array_destroy(&self->final_flag);
  array_destroy(&self->agenda);
  array_destroy(&self->stack);
  array_destroy(&self->mark);
  array_destroy(&self->ctx_in);
  array_destroy(&self->ctx_out);
  array_destroy(&self->grown);
  hf_free(self);
}

int32_t hf_right_n_states(const HfRight *self) { return self ? self->n_states : 0; }
uint64_t hf_right_n_items(const HfRight *self) { return self ? self->items.size : 0; }
uint64_t hf_right_version(const HfRight *self) { return self ? self->version : 0; }
int hf_right_complete(const HfRight *self) { return self ? self->complete : 0; }
const char *hf_right_last_error(const HfRight *self) { return self ? self->error : ""; }

#define HF_ARRAY_BYTES(a) ((uint64_t)(a).capacity * sizeof *(a).contents)
#define HF_MAP_BYTES(m) ((uint64_t)(m).capacity * sizeof(HfMapSlot))

uint64_t hf_right_bytes(const HfRight *self) {
  if (self == NULL) return 0;
  uint64_t block = (uint64_t)HF_RIGHT_BLOCK_STATES * (uint64_t)self->grammar->n_symbols *
                   sizeof(int32_t);
  return sizeof *self + HF_ARRAY_BYTES(self->items) + HF_MAP_BYTES(self->item_index) +
         HF_MAP_BYTES(self->fwd) + HF_MAP_BYTES(self->bwd) +
         (self->fwd_dense.size + self->bwd_dense.size) * block +
         HF_ARRAY_BYTES(self->fwd_dense) + HF_ARRAY_BYTES(self->bwd_dense) +
         HF_ARRAY_BYTES(self->from_head) + HF_ARRAY_BYTES(self->eps_start) +
         HF_ARRAY_BYTES(self->eps_list) + HF_ARRAY_BYTES(self->reps_start) +
         HF_ARRAY_BYTES(self->reps_list) + HF_ARRAY_BYTES(self->eps_pairs) +
         HF_ARRAY_BYTES(self->final_flag) + HF_ARRAY_BYTES(self->agenda) +
         HF_ARRAY_BYTES(self->stack) + HF_ARRAY_BYTES(self->mark) +
         HF_ARRAY_BYTES(self->ctx_in) + HF_ARRAY_BYTES(self->ctx_out) +
         HF_ARRAY_BYTES(self->grown);
}

/* The bytes an array's next growth by one element adds (hf__array_grow's doubling). */
#define HF_ARRAY_GROWTH(a)                                                             \
  ((a).size < (a).capacity ? 0                                                         \
                           : ((a).capacity < 8 ? 8 : (a).capacity) * sizeof *(a).contents)

/* The bytes a map's next reserve of one key adds while it rehashes: its new slots, the old
 * ones still held (hf__map_grow doubles from 64). */
static uint64_t hf_right__map_growth(const HfMap *m) {
  if ((m->count + 1) * 2 <= m->capacity) return 0;
  return (m->capacity ? 2 * m->capacity : 64) * sizeof(HfMapSlot);
}

/* Whether adding one item keeps the context within max_bytes (every buffer that may grow
 * for it counted at its grown size); sets out_of_bytes when not. */
static bool hf_right__room(HfRight *self) {
  if (self->max_bytes == 0) return true;
  uint64_t growth = HF_ARRAY_GROWTH(self->items) + HF_ARRAY_GROWTH(self->agenda) +
                    hf_right__map_growth(&self->item_index);
  if (!self->dense)
    growth += hf_right__map_growth(&self->fwd) + hf_right__map_growth(&self->bwd);
  if (growth == 0 || hf_right_bytes(self) + growth <= self->max_bytes) return true;
  self->out_of_bytes = 1;
  return false;
}

/* The first item of the fwd (p, x) or bwd (q, x) chain, or -1. */
HF_INLINE int32_t hf_right__head(const HfRight *self, bool fwd, int32_t s, int32_t x) {
  if (self->dense) {
    int32_t *const *blocks = fwd ? self->fwd_dense.contents : self->bwd_dense.contents;
    return blocks[s >> HF_RIGHT_BLOCK_SHIFT]
                 [(size_t)(s & (HF_RIGHT_BLOCK_STATES - 1)) * (size_t)self->grammar->n_symbols +
                  (size_t)x];
  }
  return hf_map_get(fwd ? &self->fwd : &self->bwd, hf_right__pair(s, x));
}

/* Makes `id` the head of the chain, returning the previous head (-1: none); -2 when memory
 * ran out. */
static int32_t hf_right__push_head(HfRight *self, bool fwd, int32_t s, int32_t x, int32_t id) {
  if (self->dense) {
    int32_t **blocks = fwd ? self->fwd_dense.contents : self->bwd_dense.contents;
    int32_t *cell = &blocks[s >> HF_RIGHT_BLOCK_SHIFT]
                           [(size_t)(s & (HF_RIGHT_BLOCK_STATES - 1)) *
                                (size_t)self->grammar->n_symbols + (size_t)x];
    int32_t old = *cell;
    *cell = id;
    return old;
  }
  HfMap *m = fwd ? &self->fwd : &self->bwd;
  if (!hf_map_reserve(m, 1)) return -2;
  HfMapSlot *slot = hf_map_probe(m, hf_right__pair(s, x));
  if (slot->stamp == m->stamp) {
    int32_t old = slot->value;
    slot->value = id;
    return old;
  }
  hf_map_fill(m, slot, hf_right__pair(s, x), id);
  return -1;
}

/* Sizes the dense heads for n_states states (new blocks only), or moves them into the hash
 * maps when that many would be too large. */
static bool hf_right__size_heads(HfRight *self, int32_t n_states) {
  if (!self->dense) return true;
  size_t ns = (size_t)self->grammar->n_symbols;
  size_t block_cells = (size_t)HF_RIGHT_BLOCK_STATES * ns;
  size_t n_blocks = ((size_t)n_states + HF_RIGHT_BLOCK_STATES - 1) >> HF_RIGHT_BLOCK_SHIFT;
  if (n_blocks * block_cells <= HF_RIGHT_DENSE_CELLS) {
    for (int w = 0; w < 2; w++) {
      HfBlockArray *a = w ? &self->bwd_dense : &self->fwd_dense;
      if (!array_reserve(a, n_blocks)) return false;
      while (a->size < n_blocks) {
        int32_t *block = hf_malloc(block_cells * sizeof *block);
        if (block == NULL) return false;
        memset(block, 0xff, block_cells * sizeof *block);
        a->contents[a->size++] = block;
      }
    }
    return true;
  }
  for (int w = 0; w < 2; w++) {
    int32_t **blocks = w ? self->bwd_dense.contents : self->fwd_dense.contents;
    size_t have = w ? self->bwd_dense.size : self->fwd_dense.size;
    HfMap *m = w ? &self->bwd : &self->fwd;
    for (size_t c = 0; c < have * block_cells; c++) {
      int32_t head = blocks[c / block_cells][c % block_cells];
      if (head < 0) continue;
      if (!hf_map_reserve(m, 1)) return false;
      uint64_t key = hf_right__pair((int32_t)(c / ns), (int32_t)(c % ns));
      hf_map_fill(m, hf_map_probe(m, key), key, head);
    }
  }
  hf_right__free_blocks(self);
  self->dense = 0;
  return true;
}

/* Adds (p, x, q) unless present (or the context filter drops it); false only when memory
 * ran out. */
static bool hf_right__add(HfRight *self, int32_t p, int32_t x, int32_t q) {
  if (self->filtered && x >= self->grammar->n_terminals) {
    const HfGrammar *g = self->grammar;
    int32_t w = self->words;
    if (!hf__bits_meet(hf_grammar__ctx(g, HF_CTX_PREC, x),
                       self->ctx_in.contents + (size_t)p * (size_t)w, w) ||
        !hf__bits_meet(hf_grammar__ctx(g, HF_CTX_FOLL, x),
                       self->ctx_out.contents + (size_t)q * (size_t)w, w))
      return true;
  }
  uint64_t key = hf_right__key(p, x, q);
  if (!hf_right__room(self)) return false;
  if (!hf_map_reserve(&self->item_index, 1)) return false;
  HfMapSlot *slot = hf_map_probe(&self->item_index, key);
  if (slot->stamp == self->item_index.stamp) return true;
  if (self->items.size >= (size_t)INT32_MAX) return false;
  int32_t id = (int32_t)self->items.size;
  if (!array_reserve(&self->items, self->items.size + 1)) return false;
  if (!array_push(&self->agenda, id)) return false;
  hf_map_fill(&self->item_index, slot, key, id);
  HfTriple t = {p, x, q, -1, -1, -1};
  t.next_fwd = hf_right__push_head(self, true, p, x, id);
  t.next_bwd = hf_right__push_head(self, false, q, x, id);
  if (t.next_fwd == -2 || t.next_bwd == -2) return false;
  t.next_from = self->from_head.contents[p];
  self->from_head.contents[p] = id;
  self->items.contents[self->items.size++] = t;
  return true;
}

/* ε-closure of `s` (itself included) into self->stack: the states s reaches by ε moves
 * when `forward`, else the states that reach s. */
static bool hf_right__closure(HfRight *self, int32_t s, bool forward) {
  if (++self->mark_stamp == INT32_MAX) {
    memset(self->mark.contents, 0, self->mark.size * sizeof *self->mark.contents);
    self->mark_stamp = 1;
  }
  int32_t stamp = self->mark_stamp;
  const int32_t *start = forward ? self->eps_start.contents : self->reps_start.contents;
  const int32_t *list = forward ? self->eps_list.contents : self->reps_list.contents;
  array_clear(&self->stack);
  if (!array_push(&self->stack, s)) return false;
  self->mark.contents[s] = stamp;
  for (size_t k = 0; k < self->stack.size; k++) {
    int32_t u = self->stack.contents[k];
    for (int32_t e = start[u]; e < start[u + 1]; e++) {
      int32_t v = list[e];
      if (self->mark.contents[v] != stamp) {
        self->mark.contents[v] = stamp;
        if (!array_push(&self->stack, v)) return false;
      }
    }
  }
  return true;
}

/* One CSR over all states from the ε pairs, keyed by their source (at = 0) or target. */
static bool hf_right__csr(HfRight *self, HfInt32Array *starts, HfInt32Array *list, int at) {
  size_t n = (size_t)self->n_states;
  size_t m = self->eps_pairs.size / 2;
  if (!array_resize(starts, n + 1) || !array_resize(list, m)) return false;
  int32_t *st = starts->contents;
  const int32_t *pairs = self->eps_pairs.contents;
  memset(st, 0, (n + 1) * sizeof *st);
  for (size_t i = 0; i < m; i++) st[pairs[2 * i + at] + 1]++;
  for (size_t v = 0; v < n; v++) st[v + 1] += st[v];
  for (size_t i = 0; i < m; i++) list->contents[st[pairs[2 * i + at]]++] = pairs[2 * i + 1 - at];
  for (size_t v = n; v > 0; v--) st[v] = st[v - 1];
  st[0] = 0;
  return true;
}

static bool hf_right__index_eps(HfRight *self) {
  return hf_right__csr(self, &self->eps_start, &self->eps_list, 0) &&
         hf_right__csr(self, &self->reps_start, &self->reps_list, 1);
}

/* Runs the agenda to saturation; HF_UNKNOWN when a limit ran out. */
static HfVerdict hf_right__saturate(HfRight *self, uint64_t max_steps, uint64_t max_items) {
  const HfGrammar *g = self->grammar;
  while (self->agenda.size > 0) {
    if (self->steps > max_steps || self->items.size > max_items) return HF_UNKNOWN;
    HfTriple t = self->items.contents[self->agenda.contents[--self->agenda.size]];
    for (int32_t k = g->unary_start.contents[t.x]; k < g->unary_start.contents[t.x + 1]; k++) {
      self->steps++;
      if (!hf_right__add(self, t.p, g->unary_parent.contents[k], t.q)) return HF_ERROR;
    }
    /* t as the left child of A -> X Y: partners (q, Y, r). */
    for (int32_t k = g->left_start.contents[t.x]; k < g->left_start.contents[t.x + 1]; k++) {
      int32_t a = g->left_pairs.contents[2 * k], y = g->left_pairs.contents[2 * k + 1];
      int32_t id = hf_right__head(self, true, t.q, y);
      for (; id >= 0; id = self->items.contents[id].next_fwd) {
        self->steps++;
        if (!hf_right__add(self, t.p, a, self->items.contents[id].q)) return HF_ERROR;
      }
    }
    /* t as the right child of A -> Z X: partners (o, Z, p). */
    for (int32_t k = g->right_start.contents[t.x]; k < g->right_start.contents[t.x + 1]; k++) {
      int32_t a = g->right_pairs.contents[2 * k], z = g->right_pairs.contents[2 * k + 1];
      int32_t id = hf_right__head(self, false, t.p, z);
      for (; id >= 0; id = self->items.contents[id].next_bwd) {
        self->steps++;
        if (!hf_right__add(self, self->items.contents[id].p, a, t.q)) return HF_ERROR;
      }
    }
  }
  return HF_YES;
}

/* ORs `bits` (w words) into IN row `s`; an old state whose row changes goes to `grown`
 * (once: its mark is the stamp `grown_stamp` of this add). */
static bool hf_right__widen_in(HfRight *self, int32_t s, int32_t old, const uint64_t *bits,
                               HfInt32Array *seen, int32_t grown_stamp) {
  int32_t w = self->words;
  uint64_t *row = self->ctx_in.contents + (size_t)s * (size_t)w;
  bool changed = false;
  for (int32_t k = 0; k < w; k++) {
    if (bits[k] & ~row[k]) changed = true;
    row[k] |= bits[k];
  }
  if (changed && s < old && seen->contents[s] != grown_stamp) {
    seen->contents[s] = grown_stamp;
    if (!array_push(&self->grown, s)) return false;
  }
  return true;
}

/* IN(p) / OUT(q) of the context filter for the states added by this call (rows of old
 * states are kept), over the (ε-closed) edges; see hf_right_add.  Old states whose IN the
 * new edges or entries widen are listed in self->grown. */
static bool hf_right__contexts(HfRight *self, int32_t old, const int32_t *edges,
                               size_t n_edges, const int32_t *finals, size_t n_finals,
                               const int32_t *entries, size_t n_entries) {
  const HfGrammar *g = self->grammar;
  int32_t w = self->words = g->ctx_words;
  size_t n = (size_t)self->n_states * (size_t)w, had = (size_t)old * (size_t)w;
  if (!array_resize(&self->ctx_in, n) || !array_resize(&self->ctx_out, n)) return false;
  uint64_t *in = self->ctx_in.contents, *out = self->ctx_out.contents;
  memset(in + had, 0, (n - had) * sizeof *in);
  memset(out + had, 0, (n - had) * sizeof *out);
  array_clear(&self->grown);
  /* marks of the old states already listed as grown, one int per state */
  HfInt32Array seen;
  array_init(&seen);
  if (!array_resize(&seen, (size_t)self->n_states)) return false;
  memset(seen.contents, 0, (size_t)self->n_states * sizeof *seen.contents);
  Array(uint64_t) bits;
  array_init(&bits);
  if (!array_resize(&bits, (size_t)w)) goto oom;
  const int32_t edge_bit = HF_CTX_EDGE(g->n_terminals);
  for (size_t i = 0; i < n_edges; i++) {
    int32_t a = edges[4 * i], t = edges[4 * i + 1], b = edges[4 * i + 2];
    if (t < 0) continue;
    uint64_t bit = UINT64_C(1) << (t % 64);
    memset(bits.contents, 0, (size_t)w * sizeof *bits.contents);
    bits.contents[t / 64] = bit;
    if (!hf_right__closure(self, b, true)) goto oom;
    for (size_t k = 0; k < self->stack.size; k++)
      if (!hf_right__widen_in(self, self->stack.contents[k], old, bits.contents, &seen, 1))
        goto oom;
    /* a is new, and only new states reach a new state: OUT rows of old states stay */
    if (!hf_right__closure(self, a, false)) goto oom;
    for (size_t k = 0; k < self->stack.size; k++)
      out[(size_t)self->stack.contents[k] * (size_t)w + (size_t)(t / 64)] |= bit;
  }
  uint64_t edge_mask = UINT64_C(1) << (edge_bit % 64);
  for (size_t i = 0; i < n_finals; i++) {
    if (!hf_right__closure(self, finals[i], false)) goto oom;
    for (size_t k = 0; k < self->stack.size; k++)
      out[(size_t)self->stack.contents[k] * (size_t)w + (size_t)(edge_bit / 64)] |= edge_mask;
  }
  /* a new state that reaches old ones by ε is followed by what follows them */
  for (int32_t s = old; s < self->n_states && old > 0; s++) {
    if (!hf_right__closure(self, s, true)) goto oom;
    for (size_t k = 0; k < self->stack.size; k++) {
      int32_t u = self->stack.contents[k];
      if (u >= old) continue;
      for (int32_t j = 0; j < w; j++)
        out[(size_t)s * (size_t)w + (size_t)j] |= out[(size_t)u * (size_t)w + (size_t)j];
    }
  }
  /* an entry follows whatever the left ends with: every terminal, or nothing */
  memset(bits.contents, 0xff, (size_t)w * sizeof *bits.contents);
  for (size_t i = 0; i < n_entries; i++) {
    if (!hf_right__closure(self, entries[i], true)) goto oom;
    for (size_t k = 0; k < self->stack.size; k++)
      if (!hf_right__widen_in(self, self->stack.contents[k], old, bits.contents, &seen, 1))
        goto oom;
  }
  array_destroy(&bits);
  array_destroy(&seen);
  return true;
oom:
  array_destroy(&bits);
  array_destroy(&seen);
  return false;
}

/* Old states whose IN widened: their items go back on the agenda and their nullable items
 * through the filter again, so the triples the narrower filter dropped are derived. */
static bool hf_right__reseed(HfRight *self) {
  const HfGrammar *g = self->grammar;
  for (size_t i = 0; i < self->grown.size; i++) {
    int32_t v = self->grown.contents[i];
    for (int32_t id = self->from_head.contents[v]; id >= 0;
         id = self->items.contents[id].next_from)
      if (!array_push(&self->agenda, id)) return false;
    if (!hf_right__closure(self, v, true)) return false;
    for (size_t k = 0; k < g->nullable.size; k++)
      for (size_t m = 0; m < self->stack.size; m++)
        if (!hf_right__add(self, v, g->nullable.contents[k], self->stack.contents[m]))
          return false;
  }
  return true;
}

HfVerdict hf_right_add(HfRight *self, int32_t n_states, const int32_t *edges, size_t n_edges,
                       const int32_t *finals, size_t n_finals, const int32_t *entries,
                       size_t n_entries, const HfLimits *limits) {
  if (self == NULL) return HF_ERROR;
  self->error[0] = '\0';
  const HfGrammar *g = self->grammar;
  int32_t old = self->n_states;
  if (n_states < old || n_states >= (1 << HF_RIGHT_STATE_BITS)) {
    snprintf(self->error, sizeof self->error, "n_states = %d (had %d, at most %d)",
             (int)n_states, (int)old, (1 << HF_RIGHT_STATE_BITS) - 1);
    return HF_ERROR;
  }
  if ((n_edges && edges == NULL) || (n_finals && finals == NULL) ||
      (n_entries && entries == NULL)) {
    snprintf(self->error, sizeof self->error, "NULL array with a non-zero count");
    return HF_ERROR;
  }
  bool first = old == 0 && self->version == 0;
  if (n_entries && !first && !self->entered) {
    snprintf(self->error, sizeof self->error,
             "a context first built without entries (unfiltered) cannot take entries");
    return HF_ERROR;
  }
  for (size_t i = 0; i < n_entries; i++) {
    if (entries[i] < 0 || entries[i] >= n_states) {
      snprintf(self->error, sizeof self->error, "entries[%zu] = %d is not a state", i,
               (int)entries[i]);
      return HF_ERROR;
    }
  }
  for (size_t i = 0; i < n_edges; i++) {
    int32_t a = edges[4 * i], lab = edges[4 * i + 1], b = edges[4 * i + 2];
    if (a < old || a >= n_states || b < 0 || b >= n_states || lab < -1 ||
        lab >= g->n_terminals) {
      snprintf(self->error, sizeof self->error,
               "edges[%zu] = (%d, %d, %d): edges must leave new states [%d, %d), go to a "
               "state, and carry a terminal or -1", i, (int)a, (int)lab, (int)b, (int)old,
               (int)n_states);
      return HF_ERROR;
    }
  }
  for (size_t i = 0; i < n_finals; i++) {
    if (finals[i] < 0 || finals[i] >= n_states) {
      snprintf(self->error, sizeof self->error, "finals[%zu] = %d is not a state", i,
               (int)finals[i]);
      return HF_ERROR;
    }
    if (self->entered && finals[i] < old && !self->final_flag.contents[finals[i]]) {
      /* it would widen OUT of old states, which the filter's growth does not redo */
      snprintf(self->error, sizeof self->error,
               "finals[%zu] = %d: a filtered context takes new finals among new states only",
               i, (int)finals[i]);
      return HF_ERROR;
    }
  }
  uint64_t max_steps = limits && limits->max_steps ? limits->max_steps : HF_RIGHT_DEFAULT_STEPS;
  uint64_t max_items = limits && limits->max_items ? limits->max_items : HF_RIGHT_DEFAULT_ITEMS;
  HfVerdict verdict = HF_ERROR;
  self->steps = 0;
  self->max_bytes = limits ? limits->max_bytes : 0;
  self->out_of_bytes = 0;

  if (!hf_right__size_heads(self, n_states) ||
      !array_resize(&self->from_head, (size_t)n_states) ||
      !array_resize(&self->final_flag, (size_t)n_states) ||
      !array_resize(&self->mark, (size_t)n_states))
    goto oom;
  for (int32_t s = old; s < n_states; s++) {
    self->from_head.contents[s] = -1;
    self->final_flag.contents[s] = 0;
    self->mark.contents[s] = 0;
  }
  self->n_states = n_states;
  for (size_t i = 0; i < n_edges; i++) {
    if (edges[4 * i + 1] != -1) continue;
    if (!array_push(&self->eps_pairs, edges[4 * i]) ||
        !array_push(&self->eps_pairs, edges[4 * i + 2]))
      goto oom;
  }
  if (!hf_right__index_eps(self)) goto oom;
  /* A state that reaches a final by ε moves is final: the parser asks whether an exit's
   * state ends R (an empty rest) by this flag alone.  Only new states can reach the new
   * finals, and old finals are reached from new states only through their closures. */
  for (size_t i = 0; i < n_finals; i++) {
    if (!hf_right__closure(self, finals[i], false)) goto oom;
    for (size_t k = 0; k < self->stack.size; k++)
      self->final_flag.contents[self->stack.contents[k]] = 1;
  }
  for (int32_t s = old; s < n_states && old > 0; s++) {
    if (self->final_flag.contents[s]) continue;
    if (!hf_right__closure(self, s, true)) goto oom;
    for (size_t k = 0; k < self->stack.size; k++)
      if (self->final_flag.contents[self->stack.contents[k]]) self->final_flag.contents[s] = 1;
  }
  if (first && n_entries) self->entered = 1;
  if (self->entered && g->ctx_words > 0) {
    if (!hf_right__contexts(self, old, edges, n_edges, finals, n_finals, entries, n_entries))
      goto oom;
    self->filtered = 1;
    if (!hf_right__reseed(self)) goto oom;
    verdict = hf_right__saturate(self, max_steps, max_items);
    if (verdict == HF_ERROR) goto oom;
    if (verdict == HF_UNKNOWN) goto out_of_limits;
  }

  /* New states that reach old ones by ε start every item those start. */
  for (int32_t s = old; s < n_states; s++) {
    if (!hf_right__closure(self, s, true)) goto oom;
    for (size_t k = 0; k < self->stack.size; k++) {
      int32_t u = self->stack.contents[k];
      if (u >= old) continue;
      /* adding (s, x, q) links into s's list, never u's: the walk is stable */
      for (int32_t id = self->from_head.contents[u]; id >= 0;
           id = self->items.contents[id].next_from) {
        HfTriple t = self->items.contents[id];
        if (!hf_right__add(self, s, t.x, t.q)) goto oom;
      }
    }
  }
  /* Terminal edges, closed at both ends. */
  HfInt32Array ends;
  array_init(&ends);
  for (size_t i = 0; i < n_edges; i++) {
    int32_t a = edges[4 * i], lab = edges[4 * i + 1], b = edges[4 * i + 2];
    if (lab < 0) continue;
    if (!hf_right__closure(self, b, true)) goto oom_ends;
    array_clear(&ends);
    for (size_t k = 0; k < self->stack.size; k++)
      if (!array_push(&ends, self->stack.contents[k])) goto oom_ends;
    if (!hf_right__closure(self, a, false)) goto oom_ends;
    for (size_t k = 0; k < self->stack.size; k++)
      for (size_t m = 0; m < ends.size; m++)
        if (!hf_right__add(self, self->stack.contents[k], lab, ends.contents[m])) goto oom_ends;
  }
  array_destroy(&ends);
  /* Nullable symbols from every new state to its ε-closure. */
  for (int32_t s = old; s < n_states; s++) {
    if (!hf_right__closure(self, s, true)) goto oom;
    for (size_t k = 0; k < g->nullable.size; k++)
      for (size_t m = 0; m < self->stack.size; m++)
        if (!hf_right__add(self, s, g->nullable.contents[k], self->stack.contents[m])) goto oom;
  }
  verdict = hf_right__saturate(self, max_steps, max_items);
  if (verdict == HF_ERROR) goto oom;
out_of_limits:
  if (verdict == HF_UNKNOWN) {
    self->complete = 0;
    snprintf(self->error, sizeof self->error,
             "the closure ran out of its limits (%llu steps, %zu items, %llu bytes)",
             (unsigned long long)self->steps, self->items.size,
             (unsigned long long)hf_right_bytes(self));
  }
  self->version++;
  return verdict;

oom_ends:
  array_destroy(&ends);
oom:
  if (self->out_of_bytes) {
    /* not out of memory: out of the memory it was allowed, like any other limit */
    verdict = HF_UNKNOWN;
    goto out_of_limits;
  }
  self->complete = 0;
  snprintf(self->error, sizeof self->error, "out of memory");
  return HF_ERROR;
}

/* ---- read access for the parser (hf_internal.h) ---------------------------------------- */

int32_t hf_right__first_fwd(const HfRight *self, int32_t p, int32_t x) {
  return hf_right__head(self, true, p, x);
}

int32_t hf_right__first_bwd(const HfRight *self, int32_t q, int32_t x) {
  return hf_right__head(self, false, q, x);
}

void hf_right__item(const HfRight *self, int32_t id, int32_t *p, int32_t *q, int32_t *next_fwd,
                    int32_t *next_bwd) {
  const HfTriple *t = &self->items.contents[id];
  *p = t->p;
  *q = t->q;
  *next_fwd = t->next_fwd;
  *next_bwd = t->next_bwd;
}

int32_t hf_right__item_symbol(const HfRight *self, int32_t id) {
  return self->items.contents[id].x;
}

bool hf_right__is_final(const HfRight *self, int32_t s) {
  return self->final_flag.contents[s] != 0;
}
