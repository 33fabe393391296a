/*
 * hf_alloc.c -- the swappable allocator, the live-block counter, Array growth and HfMap.
 */
#include <stdlib.h>

#include "hf_internal.h"

/* The only global of the library: the allocator table and its counters (live blocks, live
 * bytes and the highest live bytes since the last hf_reset_peak_bytes). */
static struct {
  void *(*malloc_fn)(size_t);
  void *(*realloc_fn)(void *, size_t);
  void (*free_fn)(void *);
  int64_t live;
  int64_t bytes;
  int64_t peak;
} hf__allocator = {malloc, realloc, free, 0, 0, 0};

/* The counters are touched from any thread that owns a checker; use atomics where the
 * compiler offers them so the counts stay exact (C99 itself has none). */
#if defined(__GNUC__)
#define HF_ADD(field, n) __atomic_add_fetch(&hf__allocator.field, (n), __ATOMIC_RELAXED)
#define HF_GET(field) __atomic_load_n(&hf__allocator.field, __ATOMIC_RELAXED)
#define HF_SET(field, v) __atomic_store_n(&hf__allocator.field, (v), __ATOMIC_RELAXED)
#else
#define HF_ADD(field, n) (hf__allocator.field += (n))
#define HF_GET(field) (hf__allocator.field)
#define HF_SET(field, v) ((void)(hf__allocator.field = (v)))
#endif

/* Every block carries its size in a header, so that hf_free knows how many bytes leave
 * (the counters must not depend on malloc_usable_size, which C99 does not have). The
 * header is as large as the strictest alignment of the types blocks hold. */
typedef union HfHeader {
  size_t size;
  long double ld;
  void *p;
  uint64_t u;
  double d;
} HfHeader;

static void hf__count(int64_t delta) {
  int64_t now = HF_ADD(bytes, delta);
  /* a lost race only lowers the peak by one block's difference: good enough for a figure */
  if (delta > 0 && now > HF_GET(peak)) HF_SET(peak, now);
}

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
  if (size > SIZE_MAX - sizeof(HfHeader)) return NULL;
  HfHeader *h = hf__allocator.malloc_fn(sizeof *h + (size ? size : 1));
  if (h == NULL) return NULL;
  h->size = size;
  HF_ADD(live, 1);
  hf__count((int64_t)size);
  return h + 1;
}

void *hf_realloc(void *ptr, size_t size) {
  if (ptr == NULL) return hf_malloc(size);
  if (size > SIZE_MAX - sizeof(HfHeader)) return NULL;
  HfHeader *old = (HfHeader *)ptr - 1;
  size_t had = old->size;
  /* realloc(p, 0) is implementation-defined; never ask for it. */
  HfHeader *h = hf__allocator.realloc_fn(old, sizeof *h + (size ? size : 1));
  if (h == NULL) return NULL;
  h->size = size;
  hf__count((int64_t)size - (int64_t)had);
  return h + 1;
}

void hf_free(void *ptr) {
  if (ptr == NULL) return;
  HfHeader *h = (HfHeader *)ptr - 1;
  hf__count(-(int64_t)h->size);
  hf__allocator.free_fn(h);
  HF_ADD(live, -1);
}

int64_t hf_live_blocks(void) { return HF_GET(live); }

int64_t hf_live_bytes(void) { return HF_GET(bytes); }

int64_t hf_peak_bytes(void) { return HF_GET(peak); }

void hf_reset_peak_bytes(void) { HF_SET(peak, HF_GET(bytes)); }

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
