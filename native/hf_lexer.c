/*
 * hf_lexer.c -- the hole lexer's raw graph (holefill.lexing.holes.RawGraph) in C.
 *
 * A line-by-line port of HoleLexer._run, Coverage.flag_of / Coverage.limit, _Builder and
 * RawGraph.expand, built to give the very graph the Python path gives: the same state
 * numbering (places numbered in the order first met), the same edges in the same order,
 * with the same kinds, terms, weights and spans.  Where Python iterates a set (the states
 * a hole may leave the DFA in, the pairs a run crosses a hole with, the labels of lexemes
 * that end in a hole), both sides iterate in ascending order.
 *
 * Places are five int32 (chunk, pos, hole, kill, flag) as holefill.lexing.holes.Place.
 * The closure, pair-closure and compatibility caches live in the HfLexer, shared by every
 * graph of that lexer and guarded by a mutex (cffi releases the GIL around calls).
 */
#include <pthread.h>
#include <stdlib.h>

#include "hf_internal.h"

typedef struct Place {
  int32_t chunk, pos, hole, kill, flag;
} Place;

static const Place NO_PLACE = {-1, -1, -1, -1, 0};

enum { KIND_EPS_LINK = 0, KIND_LEXEME = 1, KIND_HOLE = 2 };
#define EPSILON (-1)
#define NONE_KEY (-1) /* an absent Coverage key (no limit) */

/* One cached pair closure: sorted pair codes y * (N + 1) + ky + 1, and the terminals
 * compatible with it (HoleLexer._compatible) as a bitset. */
typedef struct PairEntry {
  int32_t *pairs;
  int32_t n_pairs;
  uint64_t *compat;
} PairEntry;

static void pair_entry_free(PairEntry *e) {
  if (!e) return;
  hf_free(e->pairs);
  hf_free(e->compat);
  hf_free(e);
}

struct HfLexer {
  int32_t n_states, n_classes, n_terms, start;
  int32_t *trans;      /* n_states * n_classes */
  int32_t *accept;     /* n_states */
  uint8_t *killable;   /* n_states */
  uint8_t *alive_any;  /* n_states: alive[s] is not empty */
  uint64_t *alive;     /* n_states * tw */
  int32_t tw, sw;      /* words of a terminal bitset, of a state bitset */
  int32_t *weight;     /* 2 * n_terms: in a hole, then fixed text after one */
  uint8_t *ignored;    /* n_terms */
  uint8_t *comment_like;
  HfInt32Array hole_terms;
  HfInt32Array anywhere; /* ascending */
  pthread_mutex_t lock;  /* guards the caches below */
  uint64_t **reach;      /* n_states, lazily: states reachable from s */
  HfMap pair_index;      /* kill * N + s -> index in pairs */
  Array(PairEntry *) pairs;
};

/* ---- the lexer ------------------------------------------------------------------------ */

static void *dup_bytes(const void *src, size_t n) {
  void *p = hf_malloc(n ? n : 1);
  if (p && n) memcpy(p, src, n);
  return p;
}

HfLexer *hf_lexer_new(int32_t n_states, int32_t n_classes, int32_t n_terms, int32_t start,
                      const int32_t *trans, const int32_t *accept, const uint8_t *killable,
                      const uint8_t *alive, const int32_t *weight, const uint8_t *ignored,
                      const uint8_t *comment_like, const int32_t *hole_terms,
                      int32_t n_hole_terms, const int32_t *anywhere, int32_t n_anywhere) {
  if (n_states <= 0 || n_classes <= 0 || n_terms < 0) return NULL;
  HfLexer *self = hf_malloc(sizeof *self);
  if (!self) return NULL;
  memset(self, 0, sizeof *self);
  size_t ns = (size_t)n_states, nt = (size_t)n_terms;
  self->n_states = n_states;
  self->n_classes = n_classes;
  self->n_terms = n_terms;
  self->start = start;
  self->tw = (int32_t)((nt + 63) / 64);
  self->sw = (int32_t)((ns + 63) / 64);
  self->trans = dup_bytes(trans, ns * (size_t)n_classes * sizeof(int32_t));
  self->accept = dup_bytes(accept, ns * sizeof(int32_t));
  self->killable = dup_bytes(killable, ns);
  self->weight = dup_bytes(weight, 2 * nt * sizeof(int32_t));
  self->ignored = dup_bytes(ignored, nt);
  self->comment_like = dup_bytes(comment_like, nt);
  self->alive_any = hf_malloc(ns);
  self->alive = hf_malloc(ns * (size_t)(self->tw ? self->tw : 1) * sizeof(uint64_t));
  self->reach = hf_malloc(ns * sizeof(uint64_t *));
  array_init(&self->hole_terms);
  array_init(&self->anywhere);
  array_init(&self->pairs);
  hf_map_init(&self->pair_index);
  pthread_mutex_init(&self->lock, NULL);
  bool ok = self->trans && self->accept && self->killable && self->weight && self->ignored &&
            self->comment_like && self->alive_any && self->alive && self->reach &&
            array_resize(&self->hole_terms, n_hole_terms) &&
            array_resize(&self->anywhere, n_anywhere);
  if (!ok) {
    hf_lexer_delete(self);
    return NULL;
  }
  memset(self->reach, 0, ns * sizeof(uint64_t *));
  if (n_hole_terms) memcpy(self->hole_terms.contents, hole_terms, (size_t)n_hole_terms * 4);
  if (n_anywhere) memcpy(self->anywhere.contents, anywhere, (size_t)n_anywhere * 4);
  memset(self->alive, 0, ns * (size_t)(self->tw ? self->tw : 1) * sizeof(uint64_t));
  for (size_t s = 0; s < ns; s++) {
    self->alive_any[s] = 0;
    for (size_t t = 0; t < nt; t++)
      if (alive[s * nt + t]) {
        self->alive[s * (size_t)self->tw + t / 64] |= UINT64_C(1) << (t % 64);
        self->alive_any[s] = 1;
      }
  }
  return self;
}

void hf_lexer_delete(HfLexer *self) {
  if (!self) return;
  if (self->reach)
    for (int32_t s = 0; s < self->n_states; s++) hf_free(self->reach[s]);
  for (size_t i = 0; i < self->pairs.size; i++) pair_entry_free(self->pairs.contents[i]);
  array_destroy(&self->pairs);
  hf_map_destroy(&self->pair_index);
  pthread_mutex_destroy(&self->lock);
  hf_free(self->trans);
  hf_free(self->accept);
  hf_free(self->killable);
  hf_free(self->alive_any);
  hf_free(self->alive);
  hf_free(self->reach);
  hf_free(self->weight);
  hf_free(self->ignored);
  hf_free(self->comment_like);
  array_destroy(&self->hole_terms);
  array_destroy(&self->anywhere);
  hf_free(self);
}

HF_INLINE int32_t step(const HfLexer *lx, int32_t s, int32_t c) {
  return lx->trans[(size_t)s * (size_t)lx->n_classes + (size_t)c];
}

/* HoleLexer.reach (under the lock): the states reachable from s, s included. */
static const uint64_t *reach_locked(HfLexer *lx, int32_t s) {
  if (lx->reach[s]) return lx->reach[s];
  uint64_t *bits = hf_malloc((size_t)lx->sw * sizeof(uint64_t));
  int32_t *stack = hf_malloc((size_t)lx->n_states * sizeof(int32_t));
  if (!bits || !stack) {
    hf_free(bits);
    hf_free(stack);
    return NULL;
  }
  memset(bits, 0, (size_t)lx->sw * sizeof(uint64_t));
  size_t top = 0;
  bits[s / 64] |= UINT64_C(1) << (s % 64);
  stack[top++] = s;
  while (top) {
    int32_t x = stack[--top];
    for (int32_t c = 0; c < lx->n_classes; c++) {
      int32_t y = step(lx, x, c);
      if (y >= 0 && !(bits[y / 64] >> (y % 64) & 1)) {
        bits[y / 64] |= UINT64_C(1) << (y % 64);
        stack[top++] = y;
      }
    }
  }
  hf_free(stack);
  lx->reach[s] = bits;
  return bits;
}

/* Marks in `seen` (a bitset over pair codes) the pairs reachable from code c0 by one
 * string through a hole while the obliged run never accepts (HoleLexer._pair_closure);
 * *count: how many.  False when memory ran out. */
static bool pair_bfs(const HfLexer *lx, int32_t c0, uint64_t *seen, size_t *count) {
  int32_t N1 = lx->n_states + 1;
  HfInt32Array stack;
  array_init(&stack);
  seen[c0 / 64] |= UINT64_C(1) << (c0 % 64);
  *count = 1;
  bool ok = array_push(&stack, c0);
  while (ok && stack.size) {
    int32_t code = stack.contents[--stack.size];
    int32_t x = code / N1, kx = code % N1 - 1;
    for (int32_t c = 0; c < lx->n_classes && ok; c++) {
      int32_t y = step(lx, x, c);
      if (y < 0) continue;
      int32_t ky = kx >= 0 ? step(lx, kx, c) : -1;
      if (ky >= 0 && lx->accept[ky] >= 0) continue;
      int32_t cy = y * N1 + ky + 1;
      if (seen[cy / 64] >> (cy % 64) & 1) continue;
      seen[cy / 64] |= UINT64_C(1) << (cy % 64);
      ++*count;
      ok = array_push(&stack, cy);
    }
  }
  array_destroy(&stack);
  return ok;
}

/* The PairEntry of (s, kill) computed: the marked pairs in ascending order, and the
 * terminals an accept among them allows (HoleLexer._compatible). */
static PairEntry *pair_entry_new(const HfLexer *lx, int32_t s, int32_t kill) {
  size_t n = (size_t)lx->n_states, words = (n * (n + 1) + 63) / 64, count = 0;
  int32_t N1 = lx->n_states + 1;
  uint64_t *seen = hf_malloc(words * sizeof(uint64_t));
  PairEntry *e = hf_malloc(sizeof *e);
  if (e) e->pairs = NULL, e->n_pairs = 0;
  if (e) e->compat = hf_malloc((size_t)(lx->tw ? lx->tw : 1) * sizeof(uint64_t));
  bool ok = seen && e && e->compat;
  if (ok) {
    memset(seen, 0, words * sizeof(uint64_t));
    memset(e->compat, 0, (size_t)(lx->tw ? lx->tw : 1) * sizeof(uint64_t));
    ok = pair_bfs(lx, s * N1 + kill + 1, seen, &count) &&
         (e->pairs = hf_malloc(count * sizeof(int32_t))) != NULL;
  }
  for (size_t w = 0; ok && w < words; w++) {
    uint64_t bits = seen[w];
    while (bits) {
      int b = __builtin_ctzll(bits);
      bits &= bits - 1;
      int32_t code = (int32_t)(w * 64 + (size_t)b);
      e->pairs[e->n_pairs++] = code;
      int32_t x = code / N1, kx = code % N1 - 1;
      if (lx->accept[x] >= 0 && (kx < 0 || lx->killable[kx])) {
        int32_t t = lx->accept[x];
        e->compat[t / 64] |= UINT64_C(1) << (t % 64);
      }
    }
  }
  hf_free(seen);
  if (!ok) {
    pair_entry_free(e);
    return NULL;
  }
  return e;
}

/* The cached PairEntry of (s, kill) (under the lock).  Entries are allocated one by one and
 * never move, so a pointer stays valid while other threads add entries. */
static const PairEntry *pairs_locked(HfLexer *lx, int32_t s, int32_t kill) {
  uint64_t key = (uint64_t)kill * (uint64_t)lx->n_states + (uint64_t)s;
  int32_t got = hf_map_get(&lx->pair_index, key);
  if (got >= 0) return lx->pairs.contents[got];
  if (!hf_map_reserve(&lx->pair_index, 1) || !array_reserve(&lx->pairs, lx->pairs.size + 1))
    return NULL;
  PairEntry *e = pair_entry_new(lx, s, kill);
  if (!e) return NULL;
  HfMapSlot *slot = hf_map_probe(&lx->pair_index, key);
  hf_map_fill(&lx->pair_index, slot, key, (int32_t)lx->pairs.size);
  lx->pairs.contents[lx->pairs.size++] = e;
  return e;
}

static const PairEntry *pair_entry(HfLexer *lx, int32_t s, int32_t kill) {
  pthread_mutex_lock(&lx->lock);
  const PairEntry *e = pairs_locked(lx, s, kill);
  pthread_mutex_unlock(&lx->lock);
  return e;
}

static const uint64_t *reach_of(HfLexer *lx, int32_t s) {
  pthread_mutex_lock(&lx->lock);
  const uint64_t *r = reach_locked(lx, s);
  pthread_mutex_unlock(&lx->lock);
  return r;
}

/* ---- the graph ------------------------------------------------------------------------ */

typedef struct Site {
  int32_t chunk, base, length, alpha_s, alpha_c, passes, rho;
  int32_t n_pts, pts[2];
} Site;

/* One pending accept of a run: a lexeme `lab` that ends at (chunk, pos) unless a longer
 * one comes; kept in per-step pools as linked lists. */
typedef struct Pend {
  int32_t lab, chunk, pos, next;
} Pend;

/* An entry of a run's state map `cur`: DFA state and obliged state (code), pendings. */
typedef struct Entry {
  int32_t code, head, tail;
} Entry;

typedef Array(Entry) EntryArray;
typedef Array(Pend) PendArray;
typedef Array(Place) PlaceArray;

struct HfRawGraph {
  HfLexer *lx;
  int32_t n_chunks;
  HfInt32Array lengths;
  HfInt32Array cls_start; /* n_chunks + 1 offsets into cls */
  HfInt32Array cls;
  Array(Site) sites;      /* Coverage.sites, in the anchors' order */
  HfInt32Array by_chunk_start, by_chunk; /* site indices per chunk, CSR */
  /* the builder */
  HfInt32Array places;    /* 5 per state */
  HfInt32Array state_slots; /* open addressing: state + 1, 0 empty */
  HfInt32Array edges;     /* 4 per edge */
  HfInt32Array kinds, terms; /* an edge's span: the places of its two states */
  HfInt32Array edge_slots;
  HfByteArray done;       /* per state */
  HfInt32Array hole_states;
  /* the budget of the current call, and its cancel callback (polled every HF_RAW_POLL) */
  int64_t left, spent, next_poll;
  HfCancelFn cancel;
  void *cancel_ctx;
  /* scratch of a run */
  EntryArray cur, nxt;
  PendArray cur_pend, nxt_pend;
  HfMap index;            /* code -> entry of nxt */
  HfInt32Array through;   /* codes met at a crossing */
  Array(uint64_t) through_bits;
  Array(uint64_t) labels; /* terminal bitset */
  Array(uint64_t) plain;  /* state bitset */
  Array(uint64_t) closure; /* state bitset */
  PlaceArray todo;
};

enum { OK = 0, BUDGET = 1, NOMEM = 2, CANCELLED = 4 };
/* Steps between two polls of the cancel callback: a cancelled or late request stops its
 * graph (and its memory) within a few hundred microseconds. */
enum { HF_RAW_POLL = 4096 };

HF_INLINE uint64_t place_hash(Place p) {
  uint64_t h = (uint64_t)(uint32_t)p.chunk * UINT64_C(0x9E3779B97F4A7C15);
  h = hf__hash64(h ^ (uint64_t)(uint32_t)p.pos);
  h = hf__hash64(h ^ ((uint64_t)(uint32_t)p.hole << 1));
  h = hf__hash64(h ^ ((uint64_t)(uint32_t)p.kill << 2) ^ (uint64_t)p.flag);
  return h;
}

HF_INLINE bool place_eq(const int32_t *k, Place p) {
  return k[0] == p.chunk && k[1] == p.pos && k[2] == p.hole && k[3] == p.kill &&
         k[4] == p.flag;
}

HF_INLINE Place place_at(const int32_t *k) {
  Place p = {k[0], k[1], k[2], k[3], k[4]};
  return p;
}

static bool rehash_states(HfRawGraph *g, size_t cap) {
  HfInt32Array fresh;
  array_init(&fresh);
  if (!array_resize(&fresh, cap)) return false;
  memset(fresh.contents, 0, cap * sizeof(int32_t));
  size_t mask = cap - 1, n = g->places.size / 5;
  for (size_t s = 0; s < n; s++) {
    size_t i = (size_t)place_hash(place_at(&g->places.contents[5 * s])) & mask;
    while (fresh.contents[i]) i = (i + 1) & mask;
    fresh.contents[i] = (int32_t)s + 1;
  }
  array_destroy(&g->state_slots);
  g->state_slots = fresh;
  return true;
}

/* _Builder.state lookup: the state of p, or -1. */
static int32_t find_state(const HfRawGraph *g, Place p) {
  size_t mask = g->state_slots.size - 1;
  size_t i = (size_t)place_hash(p) & mask;
  for (;;) {
    int32_t v = g->state_slots.contents[i];
    if (!v) return -1;
    if (place_eq(&g->places.contents[5 * (size_t)(v - 1)], p)) return v - 1;
    i = (i + 1) & mask;
  }
}

/* _Builder.state: the state of p, numbered when first met; -1 when memory ran out. */
static int32_t state_of(HfRawGraph *g, Place p) {
  int32_t s = find_state(g, p);
  if (s >= 0) return s;
  size_t n = g->places.size / 5;
  if ((n + 1) * 2 > g->state_slots.size && !rehash_states(g, g->state_slots.size * 2))
    return -1;
  if (!array_reserve(&g->places, g->places.size + 5) || !array_push(&g->done, 0)) return -1;
  int32_t *k = &g->places.contents[g->places.size];
  k[0] = p.chunk, k[1] = p.pos, k[2] = p.hole, k[3] = p.kill, k[4] = p.flag;
  g->places.size += 5;
  size_t mask = g->state_slots.size - 1;
  size_t i = (size_t)place_hash(p) & mask;
  while (g->state_slots.contents[i]) i = (i + 1) & mask;
  g->state_slots.contents[i] = (int32_t)n + 1;
  return (int32_t)n;
}

HF_INLINE uint64_t edge_hash(int32_t sa, int32_t term, int32_t sb) {
  return hf__hash64(((uint64_t)(uint32_t)sa << 32 | (uint32_t)sb) ^
                    ((uint64_t)(uint32_t)term * UINT64_C(0x9E3779B97F4A7C15)));
}

static bool rehash_edges(HfRawGraph *g, size_t cap) {
  HfInt32Array fresh;
  array_init(&fresh);
  if (!array_resize(&fresh, cap)) return false;
  memset(fresh.contents, 0, cap * sizeof(int32_t));
  size_t mask = cap - 1, n = g->terms.size;
  for (size_t e = 0; e < n; e++) {
    const int32_t *q = &g->edges.contents[4 * e];
    size_t i = (size_t)edge_hash(q[0], g->terms.contents[e], q[2]) & mask;
    while (fresh.contents[i]) i = (i + 1) & mask;
    fresh.contents[i] = (int32_t)e + 1;
  }
  array_destroy(&g->edge_slots);
  g->edge_slots = fresh;
  return true;
}

HF_INLINE int spend(HfRawGraph *g, int64_t n) {
  g->spent += n;
  if (g->spent > g->left) return BUDGET;
  if (g->cancel != NULL && g->spent >= g->next_poll) {
    g->next_poll = g->spent + HF_RAW_POLL;
    if (g->cancel(g->cancel_ctx)) return CANCELLED;
  }
  return OK;
}

/* _Builder.add: the edge a -label-> b unless (state a, term, state b) is there already. */
static int add_edge(HfRawGraph *g, Place a, int32_t label, Place b, int32_t weight,
                    int32_t kind, int32_t term) {
  int32_t sa = state_of(g, a);
  if (sa < 0) return NOMEM;
  int32_t sb = state_of(g, b);
  if (sb < 0) return NOMEM;
  size_t mask = g->edge_slots.size - 1;
  size_t i = (size_t)edge_hash(sa, term, sb) & mask;
  for (;;) {
    int32_t v = g->edge_slots.contents[i];
    if (!v) break;
    const int32_t *q = &g->edges.contents[4 * (size_t)(v - 1)];
    if (q[0] == sa && q[2] == sb && g->terms.contents[v - 1] == term) return OK;
    i = (i + 1) & mask;
  }
  int stop = spend(g, 1);
  if (stop) return stop;
  size_t n = g->terms.size;
  if (!array_reserve(&g->edges, 4 * n + 4) ||
      !array_push(&g->kinds, kind) || !array_push(&g->terms, term))
    return NOMEM;
  g->edge_slots.contents[i] = (int32_t)n + 1;
  int32_t *q = &g->edges.contents[4 * n];
  q[0] = sa, q[1] = label, q[2] = sb, q[3] = weight;
  g->edges.size += 4;
  if ((n + 1) * 2 > g->edge_slots.size && !rehash_edges(g, g->edge_slots.size * 2))
    return NOMEM;
  return OK;
}

/* ---- Coverage ------------------------------------------------------------------------- */

HF_INLINE int64_t key2(int32_t a, int64_t b) { return (int64_t)a << 32 | b; }

/* Coverage.key */
HF_INLINE int64_t cov_key(const HfRawGraph *g, Place p) {
  if (p.hole >= 0) return key2(p.hole, 2 * (int64_t)g->lengths.contents[p.hole] + 1);
  return key2(p.chunk, 2 * (int64_t)p.pos);
}

/* Coverage.flag_of: the end's flag, or -1 when the anchors forbid the lexeme. */
static int32_t flag_of(const HfRawGraph *g, Place a, Place b, int32_t label) {
  if (!g->sites.size) return 0;
  int64_t ka = cov_key(g, a), kb = cov_key(g, b);
  int32_t flag = 0;
  int32_t j0 = (int32_t)(ka >> 32), j1 = (int32_t)(kb >> 32);
  for (int32_t j = j0 < 0 ? 0 : j0; j <= j1 && j < g->n_chunks; j++) {
    for (int32_t x = g->by_chunk_start.contents[j]; x < g->by_chunk_start.contents[j + 1];
         x++) {
      const Site *site = &g->sites.contents[g->by_chunk.contents[x]];
      int64_t base = site->base;
      int64_t end = key2(j, 2 * (base + site->length));
      if (!(ka < end && kb > key2(j, 2 * base))) continue; /* _sites_between */
      bool before = ka < key2(j, 2 * base);
      if (before && kb >= end && site->passes) continue;
      if (before && kb > end) return -1;
      int n_cov = 0;
      bool cov[2] = {false, false};
      for (int q = 0; q < site->n_pts; q++) {
        int64_t kx = key2(j, 2 * (base + site->pts[q]));
        if (ka < kx && kx < kb) cov[q] = true, n_cov++;
      }
      if (site->n_pts && n_cov == site->n_pts) return -1;
      if (site->n_pts == 2) {
        int64_t lo = base + site->pts[0], hi = base + site->pts[1];
        bool inside = a.hole < 0 && a.chunk == j && lo < a.pos && a.pos < hi;
        if (n_cov == 1 && cov[1] && a.flag && inside) return -1;
        if (b.hole < 0 && b.chunk == j && lo < b.pos && b.pos < hi &&
            ((n_cov == 1 && cov[0]) || (a.flag && inside)))
          flag = 1;
      }
      if (before && g->lx->comment_like[label] && site->rho >= 0 &&
          kb > key2(j, 2 * (base + site->rho)))
        return -1;
    }
  }
  return flag;
}

/* Coverage.limit: the last key where a lexeme from a may end, or NONE_KEY. */
static int64_t cov_limit(const HfRawGraph *g, Place a) {
  if (!g->sites.size) return NONE_KEY;
  int64_t ka = cov_key(g, a);
  for (size_t x = 0; x < g->sites.size; x++) {
    const Site *site = &g->sites.contents[x];
    int32_t j = site->chunk;
    int64_t base = site->base;
    if (key2(j, 2 * (base + site->length)) < ka) continue;
    if (ka < key2(j, 2 * base)) {
      if (site->passes) continue;
      return key2(j, 2 * (base + (site->n_pts ? site->pts[site->n_pts - 1] : site->length)));
    }
    if (site->n_pts == 1 && a.pos < base + site->pts[0])
      return key2(j, 2 * (base + site->pts[0]));
    if (site->n_pts == 2 && (a.pos < base + site->pts[0] || a.flag))
      return key2(j, 2 * (base + site->pts[1]));
  }
  return NONE_KEY;
}

/* ---- a run ---------------------------------------------------------------------------- */

typedef struct Run {
  HfRawGraph *g;
  Place origin;
  int32_t parked; /* origin.kill */
  int64_t limit;
  int32_t i;      /* the chunk the run is in */
  PlaceArray *ends;
} Run;

/* The `emit` of HoleLexer._run: an edge for the lexeme from the origin to `end`. */
static int emit(Run *r, int32_t label, Place end) {
  HfRawGraph *g = r->g;
  const HfLexer *lx = g->lx;
  Place o = r->origin;
  int32_t flag = flag_of(g, o, end, label);
  if (flag < 0) return OK;
  if (flag) end.flag = flag;
  bool touches = o.hole >= 0 || end.hole >= 0 || end.chunk != o.chunk;
  int32_t weight = touches ? lx->weight[label] : 0;
  if (!touches && o.pos == 0 && o.chunk > 0) weight = lx->weight[lx->n_terms + label];
  int rc = add_edge(g, o, lx->ignored[label] ? EPSILON : label, end, weight, KIND_LEXEME,
                    label);
  if (rc) return rc;
  return array_push(r->ends, end) ? OK : NOMEM;
}

HF_INLINE Place end_place(int32_t chunk, int32_t pos, int32_t kill) {
  Place p = {chunk, pos, -1, kill, 0};
  return p;
}

HF_INLINE const int32_t *row_of(const HfRawGraph *g, int32_t i) {
  return g->cls.contents + g->cls_start.contents[i];
}

HF_INLINE int32_t len_of(const HfRawGraph *g, int32_t i) { return g->lengths.contents[i]; }

/* The `confirm` of HoleLexer._run: the run died at position `at` of chunk i. */
static int confirm(Run *r, const PendArray *pool, int32_t head, int32_t ks, int32_t at) {
  HfRawGraph *g = r->g;
  const HfLexer *lx = g->lx;
  int32_t kill = r->i == r->origin.chunk ? r->parked : -1;
  if (ks >= 0) {
    const int32_t *row = row_of(g, r->i);
    int32_t n = len_of(g, r->i);
    for (int32_t x = at; x < n; x++) {
      ks = step(lx, ks, row[x]);
      if (ks < 0) break;
      if (lx->accept[ks] >= 0) return OK;
    }
    if (ks >= 0) kill = ks;
  }
  for (int32_t p = head; p >= 0; p = pool->contents[p].next) {
    const Pend *q = &pool->contents[p];
    int rc = emit(r, q->lab, end_place(q->chunk, q->pos, kill));
    if (rc) return rc;
  }
  return OK;
}

/* Appends an empty entry for `code` to nxt (and the index). */
static int32_t new_entry(HfRawGraph *g, int32_t code) {
  if (!hf_map_reserve(&g->index, 1)) return -1;
  Entry e = {code, -1, -1};
  if (!array_push(&g->nxt, e)) return -1;
  HfMapSlot *slot = hf_map_probe(&g->index, (uint64_t)code);
  hf_map_fill(&g->index, slot, (uint64_t)code, (int32_t)g->nxt.size - 1);
  return (int32_t)g->nxt.size - 1;
}

/* Appends pending (lab, chunk, pos) to nxt entry e unless it holds it already. */
static bool add_pend(HfRawGraph *g, int32_t e, int32_t lab, int32_t chunk, int32_t pos,
                     bool dedupe) {
  Entry *en = &g->nxt.contents[e];
  if (dedupe)
    for (int32_t p = en->head; p >= 0; p = g->nxt_pend.contents[p].next) {
      const Pend *q = &g->nxt_pend.contents[p];
      if (q->lab == lab && q->chunk == chunk && q->pos == pos) return true;
    }
  Pend q = {lab, chunk, pos, -1};
  if (!array_push(&g->nxt_pend, q)) return false;
  int32_t at = (int32_t)g->nxt_pend.size - 1;
  en = &g->nxt.contents[e];
  if (en->tail >= 0)
    g->nxt_pend.contents[en->tail].next = at;
  else
    en->head = at;
  en->tail = at;
  return true;
}

static void swap_buffers(HfRawGraph *g) {
  EntryArray te = g->cur;
  g->cur = g->nxt;
  g->nxt = te;
  PendArray tp = g->cur_pend;
  g->cur_pend = g->nxt_pend;
  g->nxt_pend = tp;
  array_clear(&g->nxt);
  array_clear(&g->nxt_pend);
  hf_map_clear(&g->index);
}

/* One character of the set run: cur -> nxt (the inner loop of HoleLexer._run). */
static int step_set(Run *r, int32_t c, int32_t k) {
  HfRawGraph *g = r->g;
  const HfLexer *lx = g->lx;
  int32_t N1 = lx->n_states + 1;
  for (size_t x = 0; x < g->cur.size; x++) {
    Entry en = g->cur.contents[x];
    int32_t s = en.code / N1, ks = en.code % N1 - 1;
    int32_t ky = ks >= 0 ? step(lx, ks, c) : -1;
    if (ky >= 0 && lx->accept[ky] >= 0) continue;
    int32_t y = step(lx, s, c);
    if (y < 0 || !lx->alive_any[y]) {
      int rc = confirm(r, &g->cur_pend, en.head, ky, k);
      if (rc) return rc;
      continue;
    }
    bool fresh = false;
    if (lx->accept[y] >= 0) {
      if (r->limit != NONE_KEY && key2(r->i, 2 * (int64_t)k) > r->limit) continue;
      fresh = true;
    } else if (en.head < 0 && r->limit != NONE_KEY && key2(r->i, 2 * (int64_t)k) >= r->limit) {
      continue;
    }
    int32_t code = y * N1 + ky + 1;
    int32_t e = hf_map_get(&g->index, (uint64_t)code);
    bool existed = e >= 0;
    if (!existed && (e = new_entry(g, code)) < 0) return NOMEM;
    if (fresh) {
      if (!add_pend(g, e, lx->accept[y], r->i, k, existed)) return NOMEM;
    } else {
      for (int32_t p = en.head; p >= 0; p = g->cur_pend.contents[p].next) {
        Pend q = g->cur_pend.contents[p];
        if (!add_pend(g, e, q.lab, q.chunk, q.pos, existed)) return NOMEM;
      }
    }
  }
  swap_buffers(g);
  return OK;
}

static int cmp_int32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Adds pair `code` to the crossing set (listed before it is marked, so that clearing the
 * listed codes always unmarks every marked one). */
HF_INLINE bool add_through(HfRawGraph *g, int32_t code) {
  uint64_t *w = &g->through_bits.contents[code / 64];
  uint64_t bit = UINT64_C(1) << (code % 64);
  if (*w & bit) return true;
  if (!array_push(&g->through, code)) return false;
  *w |= bit;
  return true;
}

/* Empties the crossing set (also after a call that stopped halfway). */
static void clear_through(HfRawGraph *g) {
  for (size_t x = 0; x < g->through.size; x++) {
    int32_t code = g->through.contents[x];
    g->through_bits.contents[code / 64] &= ~(UINT64_C(1) << (code % 64));
  }
  array_clear(&g->through);
}

/* The end of chunk i with live states (the first half of the crossing in HoleLexer._run):
 * lexemes whose run the filling may kill end at their pending accept, and those that end in
 * the hole get an edge per compatible terminal.  *stop: no lexeme from the origin may end
 * in the hole or after it. */
static int hole_lexemes(Run *r, int32_t k, bool *stop) {
  HfRawGraph *g = r->g;
  HfLexer *lx = g->lx;
  int32_t N1 = lx->n_states + 1, i = r->i, n = len_of(g, i);
  bool obliged = i == r->origin.chunk && r->parked >= 0;
  memset(g->labels.contents, 0, g->labels.size * sizeof(uint64_t));
  for (size_t x = 0; x < g->cur.size; x++) {
    Entry en = g->cur.contents[x];
    int32_t s = en.code / N1, ks = en.code % N1 - 1;
    if (lx->killable[s])
      for (int32_t p = en.head; p >= 0; p = g->cur_pend.contents[p].next) {
        Pend q = g->cur_pend.contents[p];
        int rc = emit(r, q.lab, end_place(q.chunk, q.pos, s));
        if (rc) return rc;
      }
    int32_t ob = obliged ? r->parked : ks;
    const uint64_t *add = lx->alive + (size_t)s * (size_t)lx->tw;
    if (ob >= 0) {
      const PairEntry *pe = pair_entry(lx, s, ob);
      if (!pe) return NOMEM;
      add = pe->compat;
    }
    for (int32_t w = 0; w < lx->tw; w++) g->labels.contents[w] |= add[w];
  }
  *stop = r->limit != NONE_KEY && key2(i, 2 * (int64_t)n + 1) > r->limit;
  if (*stop || (r->origin.chunk == i && r->origin.pos == k)) return OK;
  Place hole = NO_PLACE;
  hole.hole = i;
  for (int32_t w = 0; w < lx->tw; w++) {
    uint64_t bits = g->labels.contents[w];
    while (bits) {
      int b = __builtin_ctzll(bits);
      bits &= bits - 1;
      int rc = emit(r, w * 64 + b, hole);
      if (rc) return rc;
    }
  }
  return OK;
}

/* HoleLexer.closure of the states in g->plain, added to the crossing set as (y, -1). */
static int add_closure(HfRawGraph *g) {
  HfLexer *lx = g->lx;
  int32_t N1 = lx->n_states + 1;
  uint64_t *un = g->closure.contents;
  memset(un, 0, (size_t)lx->sw * sizeof(uint64_t));
  for (int32_t w = 0; w < lx->sw; w++) {
    uint64_t bits = g->plain.contents[w];
    while (bits) {
      int b = __builtin_ctzll(bits);
      bits &= bits - 1;
      const uint64_t *rs = reach_of(lx, w * 64 + b);
      if (!rs) return NOMEM;
      for (int32_t v = 0; v < lx->sw; v++) un[v] |= rs[v];
    }
  }
  for (int32_t w = 0; w < lx->sw; w++) {
    uint64_t bits = un[w];
    while (bits) {
      int b = __builtin_ctzll(bits);
      bits &= bits - 1;
      if (!add_through(g, (w * 64 + b) * N1)) return NOMEM;
    }
  }
  return OK;
}

/* The second half of the crossing: the states the run may be in after the hole (with the
 * obliged run's state), ascending, become cur with no pending accepts. */
static int cross_hole(Run *r) {
  HfRawGraph *g = r->g;
  HfLexer *lx = g->lx;
  int32_t N1 = lx->n_states + 1;
  bool obliged = r->i == r->origin.chunk && r->parked >= 0, any_plain = false;
  clear_through(g);
  memset(g->plain.contents, 0, g->plain.size * sizeof(uint64_t));
  for (size_t x = 0; x < g->cur.size; x++) {
    int32_t code = g->cur.contents[x].code;
    int32_t s = code / N1, ks = code % N1 - 1;
    int32_t ob = obliged ? r->parked : ks;
    if (ob >= 0) {
      const PairEntry *pe = pair_entry(lx, s, ob);
      if (!pe) return NOMEM;
      for (int32_t q = 0; q < pe->n_pairs; q++)
        if (!add_through(g, pe->pairs[q])) return NOMEM;
    } else {
      g->plain.contents[s / 64] |= UINT64_C(1) << (s % 64);
      any_plain = true;
    }
  }
  if (any_plain && add_closure(g)) return NOMEM;
  qsort(g->through.contents, g->through.size, sizeof(int32_t), cmp_int32);
  array_clear(&g->cur);
  array_clear(&g->cur_pend);
  for (size_t x = 0; x < g->through.size; x++) {
    Entry e = {g->through.contents[x], -1, -1};
    if (!array_push(&g->cur, e)) return NOMEM;
  }
  clear_through(g);
  return OK;
}

/* HoleLexer._run from `origin` (text resumes at chunk i, position k); `states` NULL for a
 * run from a boundary, else the states after the hole behind.  End places go to r->ends. */
static int run(HfRawGraph *g, Place origin, int32_t i, int32_t k, const int32_t *states,
               int32_t n_states, PlaceArray *ends) {
  HfLexer *lx = g->lx;
  int32_t N1 = lx->n_states + 1, last = g->n_chunks - 1;
  Run r = {g, origin, origin.kill, cov_limit(g, origin), i, ends};
  array_clear(&g->cur);
  array_clear(&g->cur_pend);
  array_clear(&g->nxt);
  array_clear(&g->nxt_pend);
  hf_map_clear(&g->index);
  if (!states) {
    const int32_t *row = row_of(g, i);
    int32_t s = lx->start, pos = k, n = len_of(g, i), lab = -1, end = -1;
    while (pos < n) {
      int32_t y = step(lx, s, row[pos]);
      if (y < 0 || !lx->alive_any[y]) break;
      s = y;
      pos++;
      if (lx->accept[s] >= 0) lab = lx->accept[s], end = pos;
    }
    if (pos < n) return lab >= 0 ? emit(&r, lab, end_place(i, end, r.parked)) : OK;
    Entry e = {s * N1, -1, -1};
    if (!array_push(&g->cur, e)) return NOMEM;
    if (lab >= 0) {
      Pend q = {lab, i, end, -1};
      if (!array_push(&g->cur_pend, q)) return NOMEM;
      g->cur.contents[0].head = g->cur.contents[0].tail = 0;
    }
    k = n;
  } else {
    for (int32_t x = 0; x < n_states; x++) {
      Entry e = {states[x] * N1, -1, -1};
      if (!array_push(&g->cur, e)) return NOMEM;
    }
  }
  for (;;) {
    const int32_t *row = row_of(g, r.i);
    int32_t n = len_of(g, r.i);
    while (k < n && g->cur.size) {
      int stop = spend(g, (int64_t)g->cur.size);
      if (stop) return stop;
      int32_t c = row[k];
      k++;
      int rc = step_set(&r, c, k);
      if (rc) return rc;
    }
    if (!g->cur.size) return OK;
    if (r.i == last) {
      for (size_t x = 0; x < g->cur.size; x++)
        for (int32_t p = g->cur.contents[x].head; p >= 0; p = g->cur_pend.contents[p].next) {
          Pend q = g->cur_pend.contents[p];
          int rc = emit(&r, q.lab, end_place(q.chunk, q.pos, -1));
          if (rc) return rc;
        }
      return OK;
    }
    bool stop;
    int rc = hole_lexemes(&r, k, &stop);
    if (rc || stop) return rc;
    if ((rc = cross_hole(&r))) return rc;
    r.i++;
    k = 0;
  }
}

/* ---- RawGraph ------------------------------------------------------------------------- */

void hf_raw_delete(HfRawGraph *self) {
  if (!self) return;
  array_destroy(&self->lengths);
  array_destroy(&self->cls_start);
  array_destroy(&self->cls);
  array_destroy(&self->sites);
  array_destroy(&self->by_chunk_start);
  array_destroy(&self->by_chunk);
  array_destroy(&self->places);
  array_destroy(&self->state_slots);
  array_destroy(&self->edges);
  array_destroy(&self->kinds);
  array_destroy(&self->terms);
  array_destroy(&self->edge_slots);
  array_destroy(&self->done);
  array_destroy(&self->hole_states);
  array_destroy(&self->cur);
  array_destroy(&self->nxt);
  array_destroy(&self->cur_pend);
  array_destroy(&self->nxt_pend);
  hf_map_destroy(&self->index);
  array_destroy(&self->through);
  array_destroy(&self->through_bits);
  array_destroy(&self->labels);
  array_destroy(&self->plain);
  array_destroy(&self->closure);
  array_destroy(&self->todo);
  hf_free(self);
}

/* Coverage.sites (those in a chunk of this text, in the anchors' order, with their sorted
 * distinct points) and Coverage.by_chunk (site indices per chunk, in that order). */
static bool load_sites(HfRawGraph *g, int32_t n_sites, const int32_t *sites) {
  int32_t n_chunks = g->n_chunks;
  for (int32_t x = 0; x < n_sites; x++) {
    const int32_t *v = &sites[7 * x];
    if (v[0] < 0 || v[0] >= n_chunks) continue;
    Site s = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], 0, {0, 0}};
    int32_t a = s.alpha_s, c = s.alpha_c;
    if (a >= 0 && c >= 0 && a != c) {
      s.n_pts = 2, s.pts[0] = a < c ? a : c, s.pts[1] = a < c ? c : a;
    } else if (a >= 0 || c >= 0) {
      s.n_pts = 1, s.pts[0] = a >= 0 ? a : c;
    }
    if (!array_push(&g->sites, s)) return false;
  }
  int32_t *start = g->by_chunk_start.contents;
  memset(start, 0, (size_t)(n_chunks + 1) * sizeof(int32_t));
  for (size_t x = 0; x < g->sites.size; x++) start[g->sites.contents[x].chunk + 1]++;
  for (int32_t j = 0; j < n_chunks; j++) start[j + 1] += start[j];
  HfInt32Array fill;
  array_init(&fill);
  if (!array_resize(&g->by_chunk, g->sites.size) || !array_resize(&fill, n_chunks)) {
    array_destroy(&fill);
    return false;
  }
  memcpy(fill.contents, start, (size_t)n_chunks * sizeof(int32_t));
  for (size_t x = 0; x < g->sites.size; x++)
    g->by_chunk.contents[fill.contents[g->sites.contents[x].chunk]++] = (int32_t)x;
  array_destroy(&fill);
  return true;
}

HfRawGraph *hf_raw_new(HfLexer *lexer, int32_t n_chunks, const int32_t *lengths,
                       const int32_t *classes, int32_t n_sites, const int32_t *sites) {
  if (!lexer || n_chunks < 1) return NULL;
  HfRawGraph *g = hf_malloc(sizeof *g);
  if (!g) return NULL;
  memset(g, 0, sizeof *g);
  g->lx = lexer;
  g->n_chunks = n_chunks;
  hf_map_init(&g->index);
  size_t total = 0;
  for (int32_t j = 0; j < n_chunks; j++) total += (size_t)lengths[j];
  size_t N = (size_t)lexer->n_states;
  size_t codes = N * (N + 1);
  bool ok = array_resize(&g->lengths, n_chunks) && array_resize(&g->cls_start, n_chunks + 1) &&
            array_resize(&g->cls, total) && array_resize(&g->by_chunk_start, n_chunks + 1) &&
            array_resize(&g->state_slots, 64) && array_resize(&g->edge_slots, 64) &&
            array_resize(&g->through_bits, (codes + 63) / 64) &&
            array_resize(&g->labels, lexer->tw ? lexer->tw : 1) &&
            array_resize(&g->plain, lexer->sw) && array_resize(&g->closure, lexer->sw);
  if (!ok) goto fail;
  memcpy(g->lengths.contents, lengths, (size_t)n_chunks * sizeof(int32_t));
  if (total) memcpy(g->cls.contents, classes, total * sizeof(int32_t));
  memset(g->state_slots.contents, 0, 64 * sizeof(int32_t));
  memset(g->edge_slots.contents, 0, 64 * sizeof(int32_t));
  memset(g->through_bits.contents, 0, g->through_bits.size * sizeof(uint64_t));
  g->cls_start.contents[0] = 0;
  for (int32_t j = 0; j < n_chunks; j++)
    g->cls_start.contents[j + 1] = g->cls_start.contents[j] + lengths[j];
  if (!load_sites(g, n_sites, sites)) goto fail;
  return g;
fail:
  hf_raw_delete(g);
  return NULL;
}

/* RawGraph.expand: the lexemes from the places in g->todo and every place they reach. */
static int expand_todo(HfRawGraph *g) {
  int32_t last = g->n_chunks - 1;
  while (g->todo.size) {
    Place p = g->todo.contents[--g->todo.size];
    if (p.hole >= 0) continue;
    int32_t s = find_state(g, p);
    if (s >= 0 && g->done.contents[s]) continue;
    if (s < 0 && (s = state_of(g, p)) < 0) return NOMEM;
    g->done.contents[s] = 1;
    if (p.pos < len_of(g, p.chunk)) {
      int rc = run(g, p, p.chunk, p.pos, NULL, 0, &g->todo);
      if (rc) return rc;
    } else if (p.chunk < last) {
      Place hole = NO_PLACE;
      hole.hole = p.chunk;
      int rc = add_edge(g, p, EPSILON, hole, 0, KIND_EPS_LINK, EPSILON);
      if (rc) return rc;
    }
  }
  return OK;
}

static void budget_begin(HfRawGraph *g, int64_t budget_left, HfCancelFn cancel,
                         void *cancel_ctx) {
  g->left = budget_left;
  g->spent = 0;
  g->cancel = cancel;
  g->cancel_ctx = cancel_ctx;
  g->next_poll = HF_RAW_POLL;
}

int hf_raw_start(HfRawGraph *g, int64_t budget_left, HfCancelFn cancel, void *cancel_ctx,
                 int64_t *spent) {
  budget_begin(g, budget_left, cancel, cancel_ctx);
  int rc = OK;
  int32_t last = g->n_chunks - 1;
  const HfLexer *lx = g->lx;
  array_clear(&g->todo);
  if (state_of(g, end_place(0, 0, -1)) < 0) rc = NOMEM;
  for (int32_t i = 1; i <= last && !rc; i++)
    if (!array_push(&g->todo, end_place(i, 0, -1))) rc = NOMEM;
  for (int32_t h = 0; h < last && !rc; h++) {
    Place hp = NO_PLACE;
    hp.hole = h;
    int32_t hs = state_of(g, hp);
    if (hs < 0 || !array_push(&g->hole_states, hs)) {
      rc = NOMEM;
      break;
    }
    rc = add_edge(g, hp, EPSILON, end_place(h + 1, 0, -1), 0, KIND_EPS_LINK, EPSILON);
    for (size_t t = 0; t < lx->hole_terms.size && !rc; t++) {
      int32_t term = lx->hole_terms.contents[t];
      rc = add_edge(g, hp, term, hp, lx->weight[term], KIND_HOLE, term);
    }
    if (!rc)
      rc = run(g, hp, h + 1, 0, lx->anywhere.contents, (int32_t)lx->anywhere.size, &g->todo);
  }
  if (!rc) rc = expand_todo(g);
  *spent = g->spent;
  return rc;
}

/* Whether a run may start from p: a place in a chunk of the text, or any hole place
 * (expand skips those). */
static bool valid_origin(const HfRawGraph *g, Place p) {
  if (p.hole >= 0) return true;
  return p.chunk >= 0 && p.chunk < g->n_chunks && p.pos >= 0 && p.kill >= -1 &&
         p.kill < g->lx->n_states;
}

int hf_raw_expand(HfRawGraph *g, const int32_t *places, int32_t n, int64_t budget_left,
                  HfCancelFn cancel, void *cancel_ctx, int64_t *spent) {
  budget_begin(g, budget_left, cancel, cancel_ctx);
  *spent = 0;
  for (int32_t x = 0; x < n; x++)
    if (!valid_origin(g, place_at(&places[5 * x]))) return HF_LEX_BAD_PLACE;
  int rc = OK;
  array_clear(&g->todo);
  for (int32_t x = 0; x < n && !rc; x++)
    if (!array_push(&g->todo, place_at(&places[5 * x]))) rc = NOMEM;
  if (!rc) rc = expand_todo(g);
  *spent = g->spent;
  return rc;
}

int32_t hf_raw_state(HfRawGraph *g, const int32_t *place) {
  return state_of(g, place_at(place));
}

int32_t hf_raw_find(const HfRawGraph *g, const int32_t *place) {
  return find_state(g, place_at(place));
}

int hf_raw_is_done(const HfRawGraph *g, int32_t state) {
  return state >= 0 && (size_t)state < g->done.size && g->done.contents[state];
}

int32_t hf_raw_n_states(const HfRawGraph *g) { return (int32_t)(g->places.size / 5); }
int32_t hf_raw_n_edges(const HfRawGraph *g) { return (int32_t)g->terms.size; }
const int32_t *hf_raw_edges(const HfRawGraph *g) { return g->edges.contents; }
const int32_t *hf_raw_kinds(const HfRawGraph *g) { return g->kinds.contents; }
const int32_t *hf_raw_terms(const HfRawGraph *g) { return g->terms.contents; }
const int32_t *hf_raw_places(const HfRawGraph *g) { return g->places.contents; }
int32_t hf_raw_n_holes(const HfRawGraph *g) { return (int32_t)g->hole_states.size; }
const int32_t *hf_raw_hole_states(const HfRawGraph *g) { return g->hole_states.contents; }

int32_t hf_raw_finals(const HfRawGraph *g, int32_t from_state, int32_t *out) {
  int32_t last = g->n_chunks - 1, end = len_of(g, last), count = 0;
  int32_t n = hf_raw_n_states(g);
  for (int32_t s = from_state < 0 ? 0 : from_state; s < n; s++) {
    const int32_t *k = &g->places.contents[5 * (size_t)s];
    if (k[0] == last && k[1] == end && k[2] == -1) {
      if (out) out[count] = s;
      count++;
    }
  }
  return count;
}
