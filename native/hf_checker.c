/*
 * hf_checker.c -- the emptiness search over the implicit intersection grammar.
 *
 * Outline of one run:
 *   1. validate the NFA (errors name the offending array index);
 *   2. trim it: keep states reachable from a start AND co-reachable to a final, using only
 *      ε edges and edges whose terminal occurs in some production (others can never be
 *      part of a word of L(G));
 *   3. eliminate ε: every terminal edge p -t-> q of weight w becomes p -t-> q' of weight
 *      w + d(q, q') for each q' ε-reachable from q, d being the lightest ε-path weight; the
 *      start set becomes the states ε-reachable from a start, each with its offset
 *      d(starts, s);
 *   4. Knuth/Dijkstra over items (p, A, q): seed with terminal items (one per composed
 *      edge) and nullable items (p, A, p); pop the lightest, finalize it, index it, and
 *      combine it with finalized partners only.  A goal item (s, S, f) costs
 *      offset(s) + weight; since offsets are not part of item weights, the lightest goal
 *      is known once the popped weight reaches the best goal total found so far.
 *      A nonterminal item is only created when its neighbouring lexemes fit the symbol's
 *      context sets (the context filter, below the NFA preprocessing): exact, it only
 *      drops items no goal derivation uses.
 * Nothing is |Q|^2-sized: items live in a hash map keyed by the packed triple, and the
 * finalized ones are threaded into two lists, by (p, A) and by (q, A).
 */
#include <stdarg.h>
#include <stdio.h>

#include "hf_internal.h"

enum {
  HF_DEFAULT_MAX_STEPS = 20000000, /* keep in sync with holefill.h */
  HF_DEFAULT_MAX_ITEMS = 2000000,
  HF_POLL_EVERY = 4096,
  /* Weights below this go to the O(1) bucket queue, heavier ones to a binary heap. */
  HF_BUCKET_LIMIT = 1 << 16,
};

/* How an item was derived: its back-pointer for witness reconstruction. */
enum { HF_KIND_EDGE = 0, HF_KIND_EMPTY = 1, HF_KIND_UNARY = 2, HF_KIND_BINARY = 3 };

typedef struct HfItem {
  int32_t p, q, sym;
  uint8_t kind;
  uint8_t done;       /* finalized: weight is minimal, item is in the indexes          */
  uint64_t weight;
  int32_t left;       /* EDGE: composed edge index; UNARY/BINARY: first child item     */
  int32_t right;      /* BINARY: second child item                                     */
  int32_t next_left;  /* next finalized item with the same (p, sym), or -1             */
  int32_t next_right; /* next finalized item with the same (q, sym), or -1             */
} HfItem;

typedef struct HfEdge {
  int32_t from, label, to, orig;
  uint64_t weight;
} HfEdge;

typedef struct HfQueueEntry {
  int32_t item;
  int32_t next;
} HfQueueEntry;

typedef struct HfHeapEntry {
  uint64_t weight;
  int32_t id; /* an item (search queue) or a state (ε-distances) */
} HfHeapEntry;

typedef Array(HfHeapEntry) HfHeap;
typedef Array(uint64_t) HfUint64Array;

/* Per-state flags. */
enum { HF_REACH = 1, HF_COREACH = 2, HF_START = 4, HF_FINAL = 8 };
#define HF_USEFUL (HF_REACH | HF_COREACH)

struct HfChecker {
  const HfGrammar *grammar;
  char error[256];
  HfStats stats;

  /* NFA preprocessing, sized by the last run's n_states / n_edges. */
  HfByteArray state_flags;
  HfInt32Array out_start, out_list; /* edge indices by from-state (CSR)        */
  HfInt32Array in_start, in_list;   /* edge indices by to-state (CSR)          */
  HfInt32Array closure_mark;        /* ε-distance stamps: closure_dist[s] is
                                       valid when closure_mark[s] is the stamp */
  HfUint64Array closure_dist;       /* lightest ε-path weight from the sources */
  HfUint64Array start_dist;         /* offset of each HF_START state           */
  HfHeap eps_heap;                  /* Dijkstra queue of the ε-distances       */
  HfInt32Array stack;
  Array(HfEdge) edges;              /* composed terminal edges                 */
  HfUint64Array ctx_in, ctx_out;    /* per state, grammar->ctx_words words: IN(p) and
                                       OUT(q) of the context filter (rows of useful
                                       states only are written)                   */
  int context_filter;               /* hf_checker_set_context_filter, default 1 */

  /* Search. */
  Array(HfItem) items;
  HfMap item_map;    /* packed (p, sym, q) -> item                            */
  HfMap left_index;  /* packed (p, sym) -> first finalized item starting at p */
  HfMap right_index; /* packed (q, sym) -> first finalized item ending at q   */
  HfInt32Array buckets;          /* weight -> first queue entry, or -1 */
  Array(HfQueueEntry) entries;
  HfHeap heap;
  size_t cursor;                 /* lightest possibly non-empty bucket */

  /* Result. */
  HfInt32Array witness_edges, witness_states;
};

/* Per-run constants, kept together so the hot helpers take one pointer. */
typedef struct HfRun {
  int vbits, qbits;
  /* Context filter (NULL prec when off): a nonterminal item (p, A, q) is created only if
   * PREC(A) meets IN(p) and FOLL(A) meets OUT(q); rows are `words` wide. */
  const uint64_t *prec, *foll, *in, *out;
  int32_t words;
  int32_t start_sym;
  uint64_t max_items;
  int want_witness;
  int32_t goal; /* item index of the lightest goal item found so far, else -1 */
  uint64_t best; /* its total weight, start offset included (valid when goal >= 0) */
} HfRun;

/* ---- lifecycle ------------------------------------------------------------------------ */

HfChecker *hf_checker_new(const HfGrammar *grammar) {
  if (grammar == NULL) return NULL;
  HfChecker *self = hf_malloc(sizeof *self);
  if (self == NULL) return NULL;
  memset(self, 0, sizeof *self);
  self->grammar = grammar;
  array_init(&self->state_flags);
  array_init(&self->out_start);
  array_init(&self->out_list);
  array_init(&self->in_start);
  array_init(&self->in_list);
  array_init(&self->closure_mark);
  array_init(&self->closure_dist);
  array_init(&self->start_dist);
  array_init(&self->eps_heap);
  array_init(&self->stack);
  array_init(&self->edges);
  array_init(&self->ctx_in);
  array_init(&self->ctx_out);
  self->context_filter = 1;
  array_init(&self->items);
  hf_map_init(&self->item_map);
  hf_map_init(&self->left_index);
  hf_map_init(&self->right_index);
  array_init(&self->buckets);
  array_init(&self->entries);
  array_init(&self->heap);
  array_init(&self->witness_edges);
  array_init(&self->witness_states);
  return self;
}

void hf_checker_delete(HfChecker *self) {
  if (self == NULL) return;
  array_destroy(&self->state_flags);
  array_destroy(&self->out_start);
  array_destroy(&self->out_list);
  array_destroy(&self->in_start);
  array_destroy(&self->in_list);
  array_destroy(&self->closure_mark);
  array_destroy(&self->closure_dist);
  array_destroy(&self->start_dist);
  array_destroy(&self->eps_heap);
  array_destroy(&self->stack);
  array_destroy(&self->edges);
  array_destroy(&self->ctx_in);
  array_destroy(&self->ctx_out);
  array_destroy(&self->items);
  hf_map_destroy(&self->item_map);
  hf_map_destroy(&self->left_index);
  hf_map_destroy(&self->right_index);
  array_destroy(&self->buckets);
  array_destroy(&self->entries);
  array_destroy(&self->heap);
  array_destroy(&self->witness_edges);
  array_destroy(&self->witness_states);
  hf_free(self);
}

void hf_checker_set_context_filter(HfChecker *self, int enabled) {
  if (self != NULL) self->context_filter = enabled != 0;
}

static HfVerdict hf_checker__fail(HfChecker *self, const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(self->error, sizeof self->error, format, args);
  va_end(args);
  return HF_ERROR;
}

/* ---- input validation ------------------------------------------------------------------ */

static HfVerdict hf_checker__validate(HfChecker *self, int32_t n_states, const int32_t *edges,
                                      size_t n_edges, const int32_t *starts, size_t n_starts,
                                      const int32_t *finals, size_t n_finals) {
  int32_t n_terminals = self->grammar->n_terminals;
  if (n_states < 0) return hf_checker__fail(self, "n_states = %d is negative", (int)n_states);
  if ((n_edges && edges == NULL) || (n_starts && starts == NULL) ||
      (n_finals && finals == NULL))
    return hf_checker__fail(self, "%s", "NULL array with non-zero count");
  if (n_edges > (size_t)INT32_MAX / 4)
    return hf_checker__fail(self, "n_edges = %zu is too large", n_edges);
  for (size_t i = 0; i < n_edges; i++) {
    const int32_t *e = edges + 4 * i;
    if (e[0] < 0 || e[0] >= n_states)
      return hf_checker__fail(self, "edges[%zu] (edge %zu, from) = %d is not a state [0, %d)",
                              4 * i, i, (int)e[0], (int)n_states);
    if (e[1] < -1 || e[1] >= n_terminals)
      return hf_checker__fail(self,
                              "edges[%zu] (edge %zu, label) = %d is not a terminal [0, %d) "
                              "or -1 (epsilon)",
                              4 * i + 1, i, (int)e[1], (int)n_terminals);
    if (e[2] < 0 || e[2] >= n_states)
      return hf_checker__fail(self, "edges[%zu] (edge %zu, to) = %d is not a state [0, %d)",
                              4 * i + 2, i, (int)e[2], (int)n_states);
    if (e[3] < 0)
      return hf_checker__fail(self, "edges[%zu] (edge %zu, weight) = %d is negative",
                              4 * i + 3, i, (int)e[3]);
  }
  for (size_t i = 0; i < n_starts; i++)
    if (starts[i] < 0 || starts[i] >= n_states)
      return hf_checker__fail(self, "starts[%zu] = %d is not a state [0, %d)", i,
                              (int)starts[i], (int)n_states);
  for (size_t i = 0; i < n_finals; i++)
    if (finals[i] < 0 || finals[i] >= n_states)
      return hf_checker__fail(self, "finals[%zu] = %d is not a state [0, %d)", i,
                              (int)finals[i], (int)n_states);
  return HF_YES;
}

/* ---- binary heap (min on weight) --------------------------------------------------------
 * Used for ε-distances and, in the search, for weights too heavy for the bucket queue. */

static bool hf_heap__push(HfHeap *self, uint64_t weight, int32_t id) {
  HfHeapEntry entry = {weight, id};
  if (!array_push(self, entry)) return false;
  HfHeapEntry *h = self->contents;
  size_t i = self->size - 1;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (h[parent].weight <= weight) break;
    h[i] = h[parent];
    i = parent;
  }
  h[i] = entry;
  return true;
}

/* Removes and returns the lightest entry; the heap must not be empty. */
static HfHeapEntry hf_heap__pop(HfHeap *self) {
  HfHeapEntry *h = self->contents;
  HfHeapEntry top = h[0];
  HfHeapEntry last = h[--self->size];
  size_t n = self->size, i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && h[child + 1].weight < h[child].weight) child++;
    if (last.weight <= h[child].weight) break;
    h[i] = h[child];
    i = child;
  }
  if (n > 0) h[i] = last;
  return top;
}

/* ---- NFA preprocessing ----------------------------------------------------------------- */

/* An edge can be part of a word of L(G) only when it is ε or its terminal is used. */
HF_INLINE bool hf_checker__edge_usable(const HfChecker *self, const int32_t *e) {
  return e[1] < 0 || self->grammar->used.contents[e[1]];
}

/* CSR of the usable edges, keyed by from-state (key_at 0) or to-state (key_at 2). */
static bool hf_checker__edge_csr(HfChecker *self, HfInt32Array *starts, HfInt32Array *list,
                                 int32_t n_states, const int32_t *edges, size_t n_edges,
                                 int key_at) {
  if (!array_resize(starts, (size_t)n_states + 1)) return false;
  if (!array_resize(list, n_edges)) return false;
  int32_t *st = starts->contents;
  memset(st, 0, ((size_t)n_states + 1) * sizeof *st);
  for (size_t i = 0; i < n_edges; i++)
    if (hf_checker__edge_usable(self, edges + 4 * i)) st[edges[4 * i + key_at] + 1]++;
  for (int32_t s = 0; s < n_states; s++) st[s + 1] += st[s];
  for (size_t i = 0; i < n_edges; i++)
    if (hf_checker__edge_usable(self, edges + 4 * i))
      list->contents[st[edges[4 * i + key_at]]++] = (int32_t)i;
  for (int32_t s = n_states; s > 0; s--) st[s] = st[s - 1];
  st[0] = 0;
  return true;
}

/* Marks `flag` on every state reachable from the seeds through usable edges, walking the
 * CSR (forward from starts, or backward from finals).  Explicit stack. */
static bool hf_checker__flood(HfChecker *self, const int32_t *seeds, size_t n_seeds,
                              uint8_t flag, const HfInt32Array *csr_start,
                              const HfInt32Array *csr_list, const int32_t *edges,
                              int other_at) {
  uint8_t *flags = self->state_flags.contents;
  array_clear(&self->stack);
  for (size_t i = 0; i < n_seeds; i++) {
    if (flags[seeds[i]] & flag) continue;
    flags[seeds[i]] |= flag;
    if (!array_push(&self->stack, seeds[i])) return false;
  }
  while (self->stack.size > 0) {
    int32_t s = self->stack.contents[--self->stack.size];
    for (int32_t k = csr_start->contents[s]; k < csr_start->contents[s + 1]; k++) {
      int32_t t = edges[4 * (size_t)csr_list->contents[k] + other_at];
      if (flags[t] & flag) continue;
      flags[t] |= flag;
      if (!array_push(&self->stack, t)) return false;
    }
  }
  return true;
}

/* Lightest ε-path weights from `sources` (all at distance 0) to every useful state they
 * ε-reach, by Dijkstra over the ε edges.  On return self->stack holds those states (each
 * once, sources included) and closure_dist[s] their distances.  Closures are usually a
 * handful of states, so the marks are stamped (closure_mark[s] == stamp means
 * closure_dist[s] is set in this call) instead of reset per call. */
static bool hf_checker__eps_distances(HfChecker *self, const int32_t *sources,
                                      size_t n_sources, int32_t stamp, const int32_t *edges) {
  int32_t *mark = self->closure_mark.contents;
  uint64_t *dist = self->closure_dist.contents;
  const uint8_t *flags = self->state_flags.contents;
  const int32_t *out_start = self->out_start.contents;
  const int32_t *out_list = self->out_list.contents;
  HfHeap *heap = &self->eps_heap;
  array_clear(&self->stack);
  array_clear(heap);
  for (size_t i = 0; i < n_sources; i++) {
    int32_t s = sources[i];
    if ((flags[s] & HF_USEFUL) != HF_USEFUL || mark[s] == stamp) continue;
    mark[s] = stamp;
    dist[s] = 0;
    if (!hf_heap__push(heap, 0, s)) return false;
  }
  while (heap->size > 0) {
    HfHeapEntry top = hf_heap__pop(heap);
    int32_t s = top.id;
    /* Stale entry: s was pushed again with a lower distance (pushes only on a strict
     * decrease, so exactly one entry per state settles it). */
    if (top.weight != dist[s]) continue;
    if (!array_push(&self->stack, s)) return false;
    for (int32_t k = out_start[s]; k < out_start[s + 1]; k++) {
      const int32_t *e = edges + 4 * (size_t)out_list[k];
      int32_t t = e[2];
      if (e[1] != -1 || (flags[t] & HF_USEFUL) != HF_USEFUL) continue;
      uint64_t d = top.weight + (uint64_t)e[3];
      if (mark[t] == stamp && dist[t] <= d) continue;
      mark[t] = stamp;
      dist[t] = d;
      if (!hf_heap__push(heap, d, t)) return false;
    }
  }
  return true;
}

enum { HF_PREPARE_OK = 0, HF_PREPARE_OOM = 1, HF_PREPARE_FULL = 2 };

/* Steps 2 and 3 of the outline.  Fills state_flags and the composed edge list, which may
 * hold at most `max_edges` edges (each becomes an item, so max_items bounds it too). */
static int hf_checker__prepare(HfChecker *self, int32_t n_states, const int32_t *edges,
                               size_t n_edges, const int32_t *starts, size_t n_starts,
                               const int32_t *finals, size_t n_finals, uint64_t max_edges) {
  if (!array_resize(&self->state_flags, (size_t)n_states)) return HF_PREPARE_OOM;
  if (!array_resize(&self->closure_mark, (size_t)n_states)) return HF_PREPARE_OOM;
  if (!array_resize(&self->closure_dist, (size_t)n_states)) return HF_PREPARE_OOM;
  if (!array_resize(&self->start_dist, (size_t)n_states)) return HF_PREPARE_OOM;
  memset(self->state_flags.contents, 0, (size_t)n_states);
  memset(self->closure_mark.contents, 0xff, (size_t)n_states * sizeof(int32_t));
  if (!hf_checker__edge_csr(self, &self->out_start, &self->out_list, n_states, edges,
                            n_edges, 0))
    return HF_PREPARE_OOM;
  if (!hf_checker__edge_csr(self, &self->in_start, &self->in_list, n_states, edges, n_edges,
                            2))
    return HF_PREPARE_OOM;
  if (!hf_checker__flood(self, starts, n_starts, HF_REACH, &self->out_start, &self->out_list,
                         edges, 2))
    return HF_PREPARE_OOM;
  if (!hf_checker__flood(self, finals, n_finals, HF_COREACH, &self->in_start, &self->in_list,
                         edges, 0))
    return HF_PREPARE_OOM;
  uint8_t *flags = self->state_flags.contents;
  uint64_t useful = 0;
  for (int32_t s = 0; s < n_states; s++) useful += (flags[s] & HF_USEFUL) == HF_USEFUL;
  self->stats.useful_states = useful;
  for (size_t i = 0; i < n_finals; i++)
    if ((flags[finals[i]] & HF_USEFUL) == HF_USEFUL) flags[finals[i]] |= HF_FINAL;

  /* Start set = useful states ε-reachable from a useful start, each with its offset (the
   * lightest ε-path from any start): one multi-source Dijkstra. */
  int32_t stamp = 0;
  if (!hf_checker__eps_distances(self, starts, n_starts, stamp++, edges)) return HF_PREPARE_OOM;
  uint64_t *dist = self->closure_dist.contents;
  for (size_t c = 0; c < self->stack.size; c++) {
    int32_t s = self->stack.contents[c];
    flags[s] |= HF_START;
    self->start_dist.contents[s] = dist[s];
  }

  /* Composed edges, grouped by target so that each closure is computed once. */
  array_clear(&self->edges);
  for (int32_t q = 0; q < n_states; q++) {
    int32_t first = self->in_start.contents[q], last = self->in_start.contents[q + 1];
    if ((flags[q] & HF_USEFUL) != HF_USEFUL) continue;
    bool has_terminal_in = false;
    for (int32_t k = first; k < last && !has_terminal_in; k++) {
      const int32_t *e = edges + 4 * (size_t)self->in_list.contents[k];
      has_terminal_in = e[1] != -1 && (flags[e[0]] & HF_USEFUL) == HF_USEFUL;
    }
    if (!has_terminal_in) continue;
    bool has_eps = false;
    for (int32_t k = self->out_start.contents[q]; k < self->out_start.contents[q + 1]; k++)
      if (edges[4 * (size_t)self->out_list.contents[k] + 1] == -1) has_eps = true;
    if (has_eps) {
      if (!hf_checker__eps_distances(self, &q, 1, stamp++, edges)) return HF_PREPARE_OOM;
    } else {
      /* The common case: no ε move out of q, its closure is q alone (no stamp needed, the
       * distance is read right below). */
      array_clear(&self->stack);
      if (!array_push(&self->stack, q)) return HF_PREPARE_OOM;
      dist[q] = 0;
    }
    const int32_t *closure = self->stack.contents;
    size_t n_closure = self->stack.size;
    for (int32_t k = first; k < last; k++) {
      int32_t i = self->in_list.contents[k];
      const int32_t *e = edges + 4 * (size_t)i;
      if (e[1] == -1 || (flags[e[0]] & HF_USEFUL) != HF_USEFUL) continue;
      if (self->edges.size + n_closure > max_edges) return HF_PREPARE_FULL;
      for (size_t c = 0; c < n_closure; c++) {
        HfEdge composed = {e[0], e[1], closure[c], i, (uint64_t)e[3] + dist[closure[c]]};
        if (!array_push(&self->edges, composed)) return HF_PREPARE_OOM;
      }
    }
  }
  self->stats.edges = self->edges.size;
  return HF_PREPARE_OK;
}

/* ---- context filter --------------------------------------------------------------------
 * Why it is exact.  Every item the search needs lies in a derivation of a goal item
 * (s, S, f): its leaves are composed edges chaining s = r0 -a1-> r1 ... -an-> rn = f.  An
 * item (p, A, q) in it covers a1..an's slice a(i+1)..aj with p = ri, q = rj, and S =>*
 * a1..ai A a(j+1)..an.  If i > 0, ai labels a composed edge ending at p, so ai ∈ IN(p),
 * and ai ∈ PREC(A) by construction of PREC (hf_grammar.c); if i = 0, p = s is in the start
 * set, so ⊢ ∈ IN(p) and ⊢ ∈ PREC(A).  Symmetrically FOLL(A) meets OUT(q).  So the filter
 * only drops items of no goal derivation.  Knuth's search over the remaining items still
 * finds every goal, and the lightest one at its true weight: all items of the lightest
 * goal derivation pass.  Verdicts and witness weights are unchanged (the witness itself may
 * differ between equally light ones).  Terminal items are the edges and are not
 * filtered. */

/* IN(p) / OUT(q) for the useful states, from the composed edges. */
static bool hf_checker__contexts(HfChecker *self, int32_t n_states, int32_t words) {
  size_t row = (size_t)words;
  if (!array_resize(&self->ctx_in, (size_t)n_states * row)) return false;
  if (!array_resize(&self->ctx_out, (size_t)n_states * row)) return false;
  uint64_t *in = self->ctx_in.contents, *out = self->ctx_out.contents;
  const uint8_t *flags = self->state_flags.contents;
  const int32_t edge_bit = HF_CTX_EDGE(self->grammar->n_terminals);
  const uint64_t edge_mask = UINT64_C(1) << (edge_bit % 64);
  for (int32_t s = 0; s < n_states; s++) {
    if ((flags[s] & HF_USEFUL) != HF_USEFUL) continue;
    memset(in + (size_t)s * row, 0, row * sizeof *in);
    memset(out + (size_t)s * row, 0, row * sizeof *out);
    if (flags[s] & HF_START) in[(size_t)s * row + (size_t)(edge_bit / 64)] |= edge_mask;
    if (flags[s] & HF_FINAL) out[(size_t)s * row + (size_t)(edge_bit / 64)] |= edge_mask;
  }
  for (size_t i = 0; i < self->edges.size; i++) {
    const HfEdge *e = &self->edges.contents[i];
    uint64_t bit = UINT64_C(1) << (e->label % 64);
    out[(size_t)e->from * row + (size_t)(e->label / 64)] |= bit;
    in[(size_t)e->to * row + (size_t)(e->label / 64)] |= bit;
  }
  return true;
}

/* Can a nonterminal `sym` starting at p take part in a goal derivation? */
HF_INLINE bool hf_checker__left_fits(const HfRun *run, int32_t p, int32_t sym) {
  return run->prec == NULL ||
         hf__bits_meet(run->prec + (size_t)sym * (size_t)run->words,
                       run->in + (size_t)p * (size_t)run->words, run->words);
}

/* ... and ending at q? */
HF_INLINE bool hf_checker__right_fits(const HfRun *run, int32_t q, int32_t sym) {
  return run->prec == NULL ||
         hf__bits_meet(run->foll + (size_t)sym * (size_t)run->words,
                       run->out + (size_t)q * (size_t)run->words, run->words);
}

/* ---- priority queue ------------------------------------------------------------------- */

HF_INLINE bool hf_checker__push(HfChecker *self, uint64_t weight, int32_t item) {
  if (HF_UNLIKELY(weight >= HF_BUCKET_LIMIT)) return hf_heap__push(&self->heap, weight, item);
  size_t w = (size_t)weight;
  if (w >= self->buckets.size) {
    size_t old = self->buckets.size;
    if (!array_resize(&self->buckets, w + 1)) return false;
    memset(self->buckets.contents + old, 0xff, (w + 1 - old) * sizeof(int32_t));
  }
  HfQueueEntry entry = {item, self->buckets.contents[w]};
  /* Entries are addressed by int32; more pushes than that is treated as out of memory. */
  if (HF_UNLIKELY(self->entries.size >= INT32_MAX)) return false;
  if (!array_push(&self->entries, entry)) return false;
  self->buckets.contents[w] = (int32_t)(self->entries.size - 1);
  return true;
}

/* Lightest live item, or -1 when the queue is empty.  Stale entries (item already
 * finalized, or pushed again with a lower weight) are skipped: lazy deletion. */
static int32_t hf_checker__pop(HfChecker *self) {
  int32_t *buckets = self->buckets.contents;
  while (self->cursor < self->buckets.size) {
    int32_t e = buckets[self->cursor];
    if (e < 0) {
      self->cursor++;
      continue;
    }
    HfQueueEntry entry = self->entries.contents[e];
    buckets[self->cursor] = entry.next;
    const HfItem *it = &self->items.contents[entry.item];
    if (!it->done && it->weight == self->cursor) return entry.item;
  }
  while (self->heap.size > 0) {
    HfHeapEntry top = hf_heap__pop(&self->heap);
    const HfItem *it = &self->items.contents[top.id];
    if (!it->done && it->weight == top.weight) return top.id;
  }
  return -1;
}

/* ---- search --------------------------------------------------------------------------- */

enum { HF_DISCOVER_OK = 0, HF_DISCOVER_GOAL = 1, HF_DISCOVER_OOM = 2, HF_DISCOVER_FULL = 3 };

HF_INLINE uint64_t hf_checker__item_key(const HfRun *run, int32_t p, int32_t sym, int32_t q) {
  return ((((uint64_t)p << run->qbits) | (uint64_t)q) << run->vbits) | (uint64_t)sym;
}

HF_INLINE uint64_t hf_checker__index_key(const HfRun *run, int32_t state, int32_t sym) {
  return ((uint64_t)state << run->vbits) | (uint64_t)sym;
}

/* Records that item (p, sym, q) is derivable with `weight` via (kind, left, right):
 * creates it, or lowers its weight if it is not finalized yet. */
static int hf_checker__discover(HfChecker *self, HfRun *run, int32_t p, int32_t sym,
                                int32_t q, uint64_t weight, uint8_t kind, int32_t left,
                                int32_t right) {
  if (HF_UNLIKELY(!hf_map_reserve(&self->item_map, 1))) return HF_DISCOVER_OOM;
  uint64_t key = hf_checker__item_key(run, p, sym, q);
  HfMapSlot *slot = hf_map_probe(&self->item_map, key);
  if (slot->stamp == self->item_map.stamp) {
    HfItem *it = &self->items.contents[slot->value];
    if (it->done || it->weight <= weight) return HF_DISCOVER_OK;
    it->weight = weight;
    it->kind = kind;
    it->left = left;
    it->right = right;
    return hf_checker__push(self, weight, slot->value) ? HF_DISCOVER_OK : HF_DISCOVER_OOM;
  }
  if (HF_UNLIKELY(self->items.size >= run->max_items)) return HF_DISCOVER_FULL;
  if (HF_UNLIKELY(!array_reserve(&self->items, self->items.size + 1))) return HF_DISCOVER_OOM;
  int32_t index = (int32_t)self->items.size++;
  HfItem *it = &self->items.contents[index];
  it->p = p;
  it->q = q;
  it->sym = sym;
  it->kind = kind;
  it->done = 0;
  it->weight = weight;
  it->left = left;
  it->right = right;
  it->next_left = -1;
  it->next_right = -1;
  hf_map_fill(&self->item_map, slot, key, index);
  if (!hf_checker__push(self, weight, index)) return HF_DISCOVER_OOM;
  if (sym == run->start_sym && !run->want_witness) {
    const uint8_t *flags = self->state_flags.contents;
    if ((flags[p] & HF_START) && (flags[q] & HF_FINAL)) {
      run->goal = index;
      return HF_DISCOVER_GOAL;
    }
  }
  return HF_DISCOVER_OK;
}

/* Threads a just-finalized item into the (p, sym) and (q, sym) lists. */
static bool hf_checker__index(HfChecker *self, const HfRun *run, int32_t index) {
  HfItem *it = &self->items.contents[index];
  if (!hf_map_reserve(&self->left_index, 1) || !hf_map_reserve(&self->right_index, 1))
    return false;
  uint64_t key = hf_checker__index_key(run, it->p, it->sym);
  HfMapSlot *slot = hf_map_probe(&self->left_index, key);
  if (slot->stamp == self->left_index.stamp) {
    it->next_left = slot->value;
    slot->value = index;
  } else {
    hf_map_fill(&self->left_index, slot, key, index);
  }
  key = hf_checker__index_key(run, it->q, it->sym);
  slot = hf_map_probe(&self->right_index, key);
  if (slot->stamp == self->right_index.stamp) {
    it->next_right = slot->value;
    slot->value = index;
  } else {
    hf_map_fill(&self->right_index, slot, key, index);
  }
  return true;
}

static int hf__bits(uint64_t n) {
  int bits = 1;
  while (bits < 64 && (n >> bits) != 0) bits++;
  return bits;
}

/* Leaves of the goal item's derivation, left to right (explicit stack). */
static bool hf_checker__build_witness(HfChecker *self, int32_t goal) {
  array_clear(&self->witness_edges);
  array_clear(&self->witness_states);
  array_clear(&self->stack);
  if (!array_push(&self->stack, goal)) return false;
  while (self->stack.size > 0) {
    const HfItem *it = &self->items.contents[self->stack.contents[--self->stack.size]];
    switch (it->kind) {
      case HF_KIND_EDGE:
        if (!array_push(&self->witness_edges, self->edges.contents[it->left].orig) ||
            !array_push(&self->witness_states, it->q))
          return false;
        break;
      case HF_KIND_UNARY:
        if (!array_push(&self->stack, it->left)) return false;
        break;
      case HF_KIND_BINARY:
        if (!array_push(&self->stack, it->right) || !array_push(&self->stack, it->left))
          return false;
        break;
      default: /* HF_KIND_EMPTY: no leaves */
        break;
    }
  }
  const HfItem *it = &self->items.contents[goal];
  self->stats.leaves = self->witness_edges.size;
  self->stats.weight = self->start_dist.contents[it->p] + it->weight;
  if (self->stats.leaves == 0) {
    /* The empty word: S derives ε on every useful state alike, so the caller completes it
     * with the lightest ε-path from a start to any final; report that weight, whichever
     * goal item (s, S, s) stopped the search. */
    const uint8_t *flags = self->state_flags.contents;
    for (size_t s = 0; s < self->state_flags.size; s++)
      if ((flags[s] & (HF_START | HF_FINAL)) == (HF_START | HF_FINAL) &&
          self->start_dist.contents[s] < self->stats.weight)
        self->stats.weight = self->start_dist.contents[s];
  }
  return true;
}

HfVerdict hf_checker_run(HfChecker *self, int32_t n_states,
                         const int32_t *edges, size_t n_edges,
                         const int32_t *starts, size_t n_starts,
                         const int32_t *finals, size_t n_finals,
                         const HfLimits *limits, int want_witness,
                         HfCancelFn cancel, void *cancel_ctx) {
  if (self == NULL) return HF_ERROR;
  HfVerdict verdict = HF_NO;
  const HfGrammar *g = self->grammar;
  self->error[0] = '\0';
  memset(&self->stats, 0, sizeof self->stats);
  array_clear(&self->witness_edges);
  array_clear(&self->witness_states);
  array_clear(&self->items);
  array_clear(&self->entries);
  array_clear(&self->heap);
  array_clear(&self->buckets);
  self->cursor = 0;
  hf_map_clear(&self->item_map);
  hf_map_clear(&self->left_index);
  hf_map_clear(&self->right_index);
  uint64_t steps = 0;

  verdict = hf_checker__validate(self, n_states, edges, n_edges, starts, n_starts, finals,
                                 n_finals);
  if (verdict == HF_ERROR) return verdict;
  verdict = HF_NO;

  HfRun run;
  run.vbits = hf__bits((uint64_t)g->n_symbols - 1);
  run.qbits = hf__bits(n_states > 0 ? (uint64_t)n_states - 1 : 0);
  if (2 * run.qbits + run.vbits > 64)
    return hf_checker__fail(self, "n_states = %d is too large for n_symbols = %d",
                            (int)n_states, (int)g->n_symbols);
  run.start_sym = g->start;
  run.prec = run.foll = run.in = run.out = NULL;
  run.words = g->ctx_words;
  run.want_witness = want_witness;
  run.goal = -1;
  run.best = 0;
  run.max_items = limits && limits->max_items ? limits->max_items : HF_DEFAULT_MAX_ITEMS;
  if (run.max_items > INT32_MAX) run.max_items = INT32_MAX;
  uint64_t max_steps = limits && limits->max_steps ? limits->max_steps : HF_DEFAULT_MAX_STEPS;
  uint64_t poll_at = max_steps < HF_POLL_EVERY ? max_steps + 1 : HF_POLL_EVERY;

  switch (hf_checker__prepare(self, n_states, edges, n_edges, starts, n_starts, finals,
                              n_finals, run.max_items)) {
    case HF_PREPARE_OOM:
      goto oom;
    case HF_PREPARE_FULL:
      verdict = HF_UNKNOWN;
      goto exit;
    default:
      break;
  }

  if (self->context_filter && g->ctx_words > 0) {
    if (!hf_checker__contexts(self, n_states, g->ctx_words)) goto oom;
    run.prec = hf_grammar__ctx(g, HF_CTX_PREC, 0);
    run.foll = hf_grammar__ctx(g, HF_CTX_FOLL, 0);
    run.in = self->ctx_in.contents;
    run.out = self->ctx_out.contents;
  }

  /* Poll once up front so a cancelled request never pays for a search. */
  if (cancel != NULL && cancel(cancel_ctx)) {
    verdict = HF_CANCELLED;
    goto exit;
  }

  int status = HF_DISCOVER_OK;
  /* Seeds: terminal items, then nullable items on every useful state. */
  for (size_t i = 0; i < self->edges.size && status == HF_DISCOVER_OK; i++) {
    const HfEdge *e = &self->edges.contents[i];
    status = hf_checker__discover(self, &run, e->from, e->label, e->to, e->weight,
                                  HF_KIND_EDGE, (int32_t)i, -1);
  }
  for (size_t k = 0; k < g->nullable.size && status == HF_DISCOVER_OK; k++) {
    int32_t a = g->nullable.contents[k];
    if (!g->used.contents[a] && a != g->start) continue;
    for (int32_t s = 0; s < n_states && status == HF_DISCOVER_OK; s++)
      if ((self->state_flags.contents[s] & HF_USEFUL) == HF_USEFUL &&
          hf_checker__left_fits(&run, s, a) && hf_checker__right_fits(&run, s, a))
        status = hf_checker__discover(self, &run, s, a, s, 0, HF_KIND_EMPTY, -1, -1);
  }

  const int32_t *left_start = g->left_start.contents, *left_pairs = g->left_pairs.contents;
  const int32_t *right_start = g->right_start.contents,
                *right_pairs = g->right_pairs.contents;
  const int32_t *unary_start = g->unary_start.contents,
                *unary_parent = g->unary_parent.contents;

/* One unit of work; polls the step limit and the cancel callback every HF_POLL_EVERY. */
#define HF_STEP()                                                            \
  do {                                                                       \
    if (HF_UNLIKELY(++steps >= poll_at)) {                                   \
      if (steps > max_steps) {                                               \
        verdict = HF_UNKNOWN;                                                \
        goto exit;                                                           \
      }                                                                      \
      if (cancel != NULL && cancel(cancel_ctx)) {                            \
        verdict = HF_CANCELLED;                                              \
        goto exit;                                                           \
      }                                                                      \
      poll_at = steps + HF_POLL_EVERY;                                       \
      if (poll_at > max_steps + 1) poll_at = max_steps + 1;                  \
    }                                                                        \
  } while (0)

  while (status == HF_DISCOVER_OK) {
    int32_t index = hf_checker__pop(self);
    if (index < 0) break;
    HfItem *it = &self->items.contents[index];
    /* Every item still queued weighs at least this one, so no goal found later can beat
     * the best total found so far. */
    if (run.goal >= 0 && it->weight >= run.best) {
      status = HF_DISCOVER_GOAL;
      break;
    }
    it->done = 1;
    self->stats.finalized++;
    const int32_t p = it->p, x = it->sym, q = it->q;
    const uint64_t w = it->weight;
    if (want_witness && x == run.start_sym &&
        (self->state_flags.contents[p] & HF_START) &&
        (self->state_flags.contents[q] & HF_FINAL)) {
      /* The goal's total counts the ε-path from a start to p, which the item's weight
       * does not; with a zero offset (the usual case) it is the lightest at once. */
      uint64_t total = self->start_dist.contents[p] + w;
      if (run.goal < 0 || total < run.best) {
        run.goal = index;
        run.best = total;
      }
      if (run.best <= w) {
        status = HF_DISCOVER_GOAL;
        break;
      }
    }
    /* Index first, so that A -> X X can pair the item with itself. */
    if (!hf_checker__index(self, &run, index)) goto oom;

    for (int32_t k = unary_start[x]; k < unary_start[x + 1] && status == HF_DISCOVER_OK; k++) {
      HF_STEP();
      int32_t a = unary_parent[k];
      if (!hf_checker__left_fits(&run, p, a) || !hf_checker__right_fits(&run, q, a)) continue;
      status = hf_checker__discover(self, &run, p, a, q, w, HF_KIND_UNARY, index, -1);
    }
    /* A -> X Y: partners (q, Y, r) start where this item ends. */
    for (int32_t k = left_start[x]; k < left_start[x + 1] && status == HF_DISCOVER_OK; k++) {
      HF_STEP();
      int32_t a = left_pairs[2 * k], y = left_pairs[2 * k + 1];
      if (!hf_checker__left_fits(&run, p, a)) continue;
      int32_t j = hf_map_get(&self->left_index, hf_checker__index_key(&run, q, y));
      while (j >= 0 && status == HF_DISCOVER_OK) {
        HF_STEP();
        const HfItem *partner = &self->items.contents[j];
        int32_t next = partner->next_left;
        if (!hf_checker__right_fits(&run, partner->q, a)) {
          j = next;
          continue;
        }
        status = hf_checker__discover(self, &run, p, a, partner->q, w + partner->weight,
                                      HF_KIND_BINARY, index, j);
        j = next;
      }
    }
    /* A -> Y X: partners (o, Y, p) end where this item starts. */
    for (int32_t k = right_start[x]; k < right_start[x + 1] && status == HF_DISCOVER_OK;
         k++) {
      HF_STEP();
      int32_t a = right_pairs[2 * k], y = right_pairs[2 * k + 1];
      if (!hf_checker__right_fits(&run, q, a)) continue;
      int32_t j = hf_map_get(&self->right_index, hf_checker__index_key(&run, p, y));
      while (j >= 0 && status == HF_DISCOVER_OK) {
        HF_STEP();
        const HfItem *partner = &self->items.contents[j];
        int32_t next = partner->next_right;
        if (!hf_checker__left_fits(&run, partner->p, a)) {
          j = next;
          continue;
        }
        status = hf_checker__discover(self, &run, partner->p, a, q, w + partner->weight,
                                      HF_KIND_BINARY, j, index);
        j = next;
      }
    }
  }
#undef HF_STEP
  /* The queue ran dry after a goal was finalized (its offset kept the search going). */
  if (status == HF_DISCOVER_OK && run.goal >= 0) status = HF_DISCOVER_GOAL;

  switch (status) {
    case HF_DISCOVER_GOAL:
      verdict = HF_YES;
      if (!hf_checker__build_witness(self, run.goal)) goto oom;
      break;
    case HF_DISCOVER_FULL:
      verdict = HF_UNKNOWN;
      break;
    case HF_DISCOVER_OOM:
      goto oom;
    default:
      verdict = HF_NO;
      break;
  }

exit:
  self->stats.steps = steps;
  self->stats.items = self->items.size;
  return verdict;

oom:
  array_clear(&self->witness_edges);
  array_clear(&self->witness_states);
  self->stats.leaves = 0;
  verdict = hf_checker__fail(self, "%s", "out of memory");
  goto exit;
}

size_t hf_checker_witness_len(const HfChecker *self) {
  return self ? self->witness_edges.size : 0;
}

size_t hf_checker_witness(const HfChecker *self, int32_t *edge_ids, int32_t *end_states,
                          size_t cap) {
  if (self == NULL) return 0;
  size_t n = self->witness_edges.size < cap ? self->witness_edges.size : cap;
  if (edge_ids != NULL && n > 0)
    memcpy(edge_ids, self->witness_edges.contents, n * sizeof *edge_ids);
  if (end_states != NULL && n > 0)
    memcpy(end_states, self->witness_states.contents, n * sizeof *end_states);
  return n;
}

void hf_checker_stats(const HfChecker *self, HfStats *out) {
  if (out == NULL) return;
  if (self == NULL) {
    memset(out, 0, sizeof *out);
    return;
  }
  *out = self->stats;
}

const char *hf_checker_last_error(const HfChecker *self) {
  return self ? self->error : "no checker";
}
