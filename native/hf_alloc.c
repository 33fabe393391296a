/*
 * hf_alloc.c -- the swappable allocator, the live-block counter, Array growth and HfMap.
 */
#include <stdlib.h>

#include "hf_internal.h"

/* The only global of the library: the allocator table and its live-block counter. */
static struct {
  void *(*malloc_fn)(size_t);
  void *(*realloc_fn)(void *, size_t);
  void (*free_fn)(void *);
  int64_t live;
} hf__allocator = {malloc, realloc, free, 0};

/* The counter is touched from any thread that owns a checker; use atomics where the
 * compiler offers them so the count stays exact (C99 itself has none). */
#if defined(__GNUC__)
#define HF_LIVE_ADD(n) ((void)__atomic_fetch_add(&hf__allocator.live, (n), __ATOMIC_RELAXED))
#define HF_LIVE_GET() __atomic_load_n(&hf__allocator.live, __ATOMIC_RELAXED)
#else
#define HF_LIVE_ADD(n) ((void)(hf__allocator.live += (n)))
#define HF_LIVE_GET() (hf__allocator.live)
#endif

void hf_set_allocator(void *(*new_malloc)(size_t), void *(*new_realloc)(void *, size_t),
                      void (*new_free)(void *)) {
  if (new_malloc == NULL || new_realloc == NULL || new_free == NULL) {
    hf__allocator.malloc_fn = malloc;
    hf__allocator.realloc_fn = realloc;
    hf__allocator.free_fn = free;
  } else {
    hf__allocator.malloc_fn = new_malloc;
    hf__allocator.realloc_fn = new_realloc;
    hf__allocator.free_fn = new_free;
  }
}

void *hf_malloc(size_t size) {
  void *p = hf__allocator.malloc_fn(size ? size : 1);
  if (p != NULL) HF_LIVE_ADD(1);
  return p;
}

void *hf_realloc(void *ptr, size_t size) {
  if (ptr == NULL) return hf_malloc(size);
  /* realloc(p, 0) is implementation-defined; never ask for it. */
  return hf__allocator.realloc_fn(ptr, size ? size : 1);
}

void hf_free(void *ptr) {
  if (ptr == NULL) return;
  hf__allocator.free_fn(ptr);
  HF_LIVE_ADD(-1);
}

int64_t hf_live_blocks(void) { return HF_LIVE_GET(); }

void *hf__array_grow(void *contents, size_t *capacity, size_t elem_size, size_t need) {
  size_t cap = *capacity < 8 ? 8 : *capacity;
  while (cap < need) {
    if (cap > SIZE_MAX / 2) return contents;
    cap *= 2;
  }
  if (cap > SIZE_MAX / elem_size) return contents;
  void *grown = hf_realloc(contents, cap * elem_size);
  if (grown == NULL) return contents;
  *capacity = cap;
  return grown;
}

/* ---- HfMap ---------------------------------------------------------------------------- */

void hf_map_init(HfMap *self) {
  self->slots = NULL;
  self->capacity = 0;
  self->count = 0;
  self->stamp = 1;
}

void hf_map_destroy(HfMap *self) {
  hf_free(self->slots);
  hf_map_init(self);
}

void hf_map_clear(HfMap *self) {
  self->count = 0;
  if (self->stamp == UINT32_MAX) {
    /* Generation counter wrapped: really wipe once every 4 billion clears. */
    if (self->slots != NULL) memset(self->slots, 0, self->capacity * sizeof *self->slots);
    self->stamp = 1;
  } else {
    self->stamp++;
  }
}

bool hf__map_grow(HfMap *self, size_t extra) {
  size_t need = self->count + extra;
  size_t cap = self->capacity ? self->capacity : 64;
  while (cap < need * 2) {
    if (cap > SIZE_MAX / 2 / sizeof(HfMapSlot)) return false;
    cap *= 2;
  }
  /* calloc-like: stamp 0 is never a live generation. */
  HfMapSlot *slots = hf_malloc(cap * sizeof *slots);
  if (slots == NULL) return false;
  memset(slots, 0, cap * sizeof *slots);
  HfMap grown = {slots, cap, 0, 1};
  for (size_t i = 0; i < self->capacity; i++) {
    const HfMapSlot *old = &self->slots[i];
    if (old->stamp != self->stamp) continue;
    HfMapSlot *slot = hf_map_probe(&grown, old->key);
    hf_map_fill(&grown, slot, old->key, old->value);
  }
  hf_free(self->slots);
  *self = grown;
  return true;
}
