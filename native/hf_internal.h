/*
 * hf_internal.h -- helpers shared by the core's .c files: the growable Array(T) and the
 * open-addressing hash map from 64-bit keys to int32 values.  Not part of the public API.
 */
#ifndef HF_INTERNAL_H
#define HF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "holefill.h"

#if defined(__GNUC__)
#define HF_INLINE static inline __attribute__((always_inline))
#define HF_LIKELY(x) __builtin_expect(!!(x), 1)
#define HF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define HF_INLINE static inline
#define HF_LIKELY(x) (x)
#define HF_UNLIKELY(x) (x)
#endif

/* ---- Array(T) ------------------------------------------------------------------------
 * One growable buffer type for everything.  `contents` is owned (hf_free).  Growth
 * failures leave the array untouched and make the macro evaluate to false, so callers
 * can turn out-of-memory into an error code instead of crashing. */
#define Array(T)       \
  struct {             \
    T *contents;       \
    size_t size;       \
    size_t capacity;   \
  }

#define array_init(a) ((a)->contents = NULL, (a)->size = 0, (a)->capacity = 0)

/* Frees the buffer and resets the array to empty. */
#define array_destroy(a) (hf_free((a)->contents), array_init(a))

/* Forgets the elements but keeps the buffer for reuse. */
#define array_clear(a) ((a)->size = 0)

/* Ensures capacity >= n; evaluates to false when memory ran out. */
#define array_reserve(a, n)                                                          \
  ((size_t)(n) <= (a)->capacity ||                                                   \
   ((a)->contents = hf__array_grow((a)->contents, &(a)->capacity,                    \
                                   sizeof *(a)->contents, (size_t)(n)),              \
    (size_t)(n) <= (a)->capacity))

/* Appends x; evaluates to false when memory ran out. */
#define array_push(a, x)                                                             \
  (array_reserve((a), (a)->size + 1) ? ((a)->contents[(a)->size++] = (x), true)      \
                                     : false)

/* Sets size to n (growing the buffer if needed, new elements uninitialised). */
#define array_resize(a, n) \
  (array_reserve((a), (n)) ? ((a)->size = (size_t)(n), true) : false)

/* Grows a buffer to at least `need` elements (doubling).  Returns the new buffer and
 * updates *capacity; on failure returns `contents` unchanged and leaves *capacity. */
void *hf__array_grow(void *contents, size_t *capacity, size_t elem_size, size_t need);

typedef Array(int32_t) HfInt32Array;
typedef Array(uint8_t) HfByteArray;

/* ---- HfMap: uint64 key -> int32 value --------------------------------------------------
 * Open addressing, power-of-two capacity, linear probing, load <= 1/2.  Clearing is O(1):
 * each slot carries the generation ("stamp") it was written in, and a slot whose stamp is
 * not the current one is empty.  So a reused map never pays for its peak size again. */
typedef struct HfMapSlot {
  uint64_t key;
  int32_t value;
  uint32_t stamp;
} HfMapSlot;

typedef struct HfMap {
  HfMapSlot *slots;
  size_t capacity; /* power of two, or 0 */
  size_t count;
  uint32_t stamp;  /* current generation, >= 1 */
} HfMap;

void hf_map_init(HfMap *self);
void hf_map_destroy(HfMap *self);
void hf_map_clear(HfMap *self);
/* Grows the table (slow path of hf_map_reserve). */
bool hf__map_grow(HfMap *self, size_t extra);

/* Makes room for `extra` more keys; false when memory ran out. */
HF_INLINE bool hf_map_reserve(HfMap *self, size_t extra) {
  return (self->count + extra) * 2 <= self->capacity || hf__map_grow(self, extra);
}

HF_INLINE uint64_t hf__hash64(uint64_t x) {
  /* splitmix64 finalizer: cheap and mixes packed (state, symbol) keys well. */
  x ^= x >> 30;
  x *= UINT64_C(0xbf58476d1ce4e5b9);
  x ^= x >> 27;
  x *= UINT64_C(0x94d049bb133111eb);
  x ^= x >> 31;
  return x;
}

/* Returns the slot holding `key`, or the empty slot where it would go (check
 * slot->stamp == self->stamp to tell them apart).  Requires capacity > count. */
HF_INLINE HfMapSlot *hf_map_probe(const HfMap *self, uint64_t key) {
  size_t mask = self->capacity - 1;
  size_t i = (size_t)hf__hash64(key) & mask;
  for (;;) {
    HfMapSlot *slot = &self->slots[i];
    if (slot->stamp != self->stamp || slot->key == key) return slot;
    i = (i + 1) & mask;
  }
}

/* Value for key, or -1. */
HF_INLINE int32_t hf_map_get(const HfMap *self, uint64_t key) {
  if (self->count == 0) return -1;
  const HfMapSlot *slot = hf_map_probe(self, key);
  return slot->stamp == self->stamp ? slot->value : -1;
}

/* Fills an empty slot returned by hf_map_probe (after hf_map_reserve(self, 1)). */
HF_INLINE void hf_map_fill(HfMap *self, HfMapSlot *slot, uint64_t key, int32_t value) {
  slot->key = key;
  slot->value = value;
  slot->stamp = self->stamp;
  self->count++;
}

/* ---- Grammar (immutable after construction) ------------------------------------------
 * Productions indexed by child, as CSR arrays: for a symbol X, the entries
 * [X_start[X], X_start[X+1]) of the pair arrays list the productions that use X. */
struct HfGrammar {
  int32_t n_terminals;
  int32_t n_symbols;
  int32_t start;
  HfInt32Array left_start;   /* n_symbols+1 offsets                                  */
  HfInt32Array left_pairs;   /* (A, Y) for every A -> X Y, grouped by X              */
  HfInt32Array right_start;  /* n_symbols+1 offsets                                  */
  HfInt32Array right_pairs;  /* (A, X) for every A -> X Y, grouped by Y              */
  HfInt32Array unary_start;  /* n_symbols+1 offsets                                  */
  HfInt32Array unary_parent; /* A for every A -> X, grouped by X                     */
  HfInt32Array nullable;     /* distinct A with A -> ε                               */
  HfByteArray used;          /* used[X] != 0 when X occurs in some right-hand side   */
  /* Context sets for the search's context filter (see hf_grammar__contexts), bitsets of
   * ctx_words 64-bit words over bit t = terminal t and bit HF_CTX_EDGE(n_terminals) = the
   * input boundary (⊢ in PREC, ⊣ in FOLL).  ctx_sets holds four families of n_symbols
   * rows each, row X of family f at ((f * n_symbols) + X) * ctx_words.  ctx_words == 0:
   * no sets (too large), the filter is off. */
  int32_t ctx_words;
  Array(uint64_t) ctx_sets;
};

/* Families of HfGrammar.ctx_sets. */
enum {
  HF_CTX_FIRST = 0, /* terminals that can begin a non-empty derivation of X            */
  HF_CTX_LAST = 1,  /* terminals that can end one                                       */
  HF_CTX_PREC = 2,  /* terminals (or ⊢) that can stand right before X in a sentential
                       form of the start symbol                                         */
  HF_CTX_FOLL = 3,  /* terminals (or ⊣) that can stand right after X                   */
  HF_CTX_FAMILIES = 4
};

/* Largest context-set table (in 64-bit words, 128 MB) a grammar builds; beyond it
 * ctx_words is 0 and the context filter is off for that grammar. */
#define HF_CTX_MAX_WORDS (UINT64_C(1) << 24)

/* The boundary bit (⊢ / ⊣) of a grammar with n terminals. */
#define HF_CTX_EDGE(n_terminals) (n_terminals)

HF_INLINE const uint64_t *hf_grammar__ctx(const HfGrammar *self, int family, int32_t sym) {
  return self->ctx_sets.contents +
         ((size_t)family * (size_t)self->n_symbols + (size_t)sym) * (size_t)self->ctx_words;
}

/* a ∩ b != ∅ for two bitsets of `words` words. */
HF_INLINE bool hf__bits_meet(const uint64_t *a, const uint64_t *b, int32_t words) {
  for (int32_t w = 0; w < words; w++)
    if (a[w] & b[w]) return true;
  return false;
}

#endif /* HF_INTERNAL_H */
