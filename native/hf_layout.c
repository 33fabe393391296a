/*
 * hf_layout.c -- the product of a raw lexeme NFA with CPython's layout rules (NEWLINE,
 * INDENT, DEDENT, bracket depth), grown entry by entry.
 *
 * A transliteration of holefill.lexing.python_layout (PythonLayoutLexer.extend and the
 * rules it calls): same state numbering, same edge order, same dedup, so the Python code
 * stays the reference and tests compare the two products array for array.  The comments
 * there explain the rules; the ones here say how the C side represents them.
 *
 * Representation.  Indentation stacks are int32 sequences (known widths >= 0, packed pairs
 * of columns as python_layout.pack packs them (ALT_SPAN below), free zones
 * as the negative codes of python_layout.zone) interned to ids.  A product state's layout
 * key -- a Layout or an open hole ("open", (entry, cut, free), bol, carried) -- is a record
 * of HF_LAYOUT_KEY_FIELDS ints, also interned (the tag tells the two apart).  Layout moves
 * and tokens are int32 items: a terminal id, or HF_LAYOUT_DEDENT_STAR / _PLUS for a loop
 * of DEDENTs.  An alternative list (what a rule returns) is a flat int32 array of records
 * [key, own, n, items...].
 *
 * The text never reaches C: per raw edge Python hands over the few numbers the rules read
 * (widths of blanks and line breaks, see HF_LAYOUT_FACT_FIELDS).
 */
#include <stdio.h>

#include "hf_internal.h"

enum {
  /* python_layout constants */
  LT_NONE = 0, LT_SOME = 1, LT_UNKNOWN = 2,
  P_NONE = -1, P_FREE = -3,
  FREE0 = -1, FREE1 = -2,
  EPS = -1,
  KIND_EPS_LINK = 0, KIND_LEXEME = 1, KIND_HOLE = 2,
  DEAD = -1,
  D_STAR = HF_LAYOUT_DEDENT_STAR, D_PLUS = HF_LAYOUT_DEDENT_PLUS,
  TAG_LAYOUT = 0, TAG_OPEN = 1,
  NKEY = HF_LAYOUT_KEY_FIELDS,
  NEDGE = 13, /* an edge's quadruple, kind, term and text facts */
};

/* Raw edge field offsets: E_SAME_CHUNK on are the text facts (holefill.h). */
enum { E_SRC, E_LABEL, E_DST, E_WEIGHT, E_KIND, E_TERM, E_SAME_CHUNK, E_WS_BLANK, E_NL_SAME,
       E_NL_CARRIED, E_NL_LEAST_B, E_NL_BREAK_B, E_CONT_WS };

typedef struct Lay {
  int32_t depth, stack, line, pending, least;
  int32_t cont, comment, fixed, text_top;
} Lay;

typedef struct Open {
  int32_t stack, cut, free, bol, carried;
} Open;

/* Variable-length int32 records interned to dense ids (content hashing). */
typedef struct Interner {
  HfInt32Array pool;
  HfInt32Array offs; /* n+1 offsets into pool */
  int32_t *slots;    /* id+1, 0 empty */
  size_t cap;
} Interner;

struct HfLayout {
  /* configuration */
  int32_t n_terminals;
  int32_t nl, newline, indent, dedent, line_cont, ws, comment;
  int32_t unit; /* 0: not strict */
  int32_t bracket_weight;
  int32_t token_weight; /* a layout token in a hole */
  HfInt32Array bracket;   /* per terminal: 1 opener, -1 closer, 0 other */
  HfInt32Array same_line; /* (term, weight) pairs */
  HfInt32Array lead, blank_first;
  /* raw graph */
  int32_t n_raw;
  HfInt32Array raw_hole, raw_final, raw_ahead; /* per raw state */
  HfInt32Array raw_first, raw_last;            /* out-edge list per raw state */
  HfInt32Array raw_edges;                      /* NEDGE per edge */
  HfInt32Array raw_next;                       /* next out edge of the same state */
  /* interned stacks and keys */
  Interner stacks, keys;
  /* product */
  int32_t n_states;
  int32_t final;
  HfMap ids;                   /* (raw state << 32 | key) -> product state */
  HfInt32Array state_raw;      /* per product state: raw state or -1 */
  HfInt32Array state_key;      /* per product state: key or -1 */
  HfInt32Array edges;          /* quadruples */
  HfInt32Array kinds, terms, raw_edge, hole;
  Interner seen;               /* (a, label, b, raw) */
  HfInt32Array todo;           /* (raw state, key) pairs */
  /* per extend */
  HfInt32Array steps;
  HfMap memo;                  /* (lay key << 32 | term) -> offset in memo_pool */
  HfInt32Array memo_pool;
  int64_t budget_left;         /* < 0: no limit */
  int64_t spent;
  int failed;                  /* 1 out of memory, 2 budget, 3 cancelled */
  HfCancelFn cancel;           /* polled every HF_LAYOUT_POLL steps (NULL: never) */
  void *cancel_ctx;
  int64_t next_poll;
  int unusable;
  /* scratch */
  HfInt32Array tmp_stack, tmp_stack2, tmp_moves;
  HfInt32Array a_line, a_at, a_tok, a_fixed, a_le, a_le2, a_eof;
  char error[128];
};

/* ---- interning ------------------------------------------------------------------------ */

static void interner_init(Interner *in) {
  array_init(&in->pool);
  array_init(&in->offs);
  in->slots = NULL;
  in->cap = 0;
}

static void interner_destroy(Interner *in) {
  array_destroy(&in->pool);
  array_destroy(&in->offs);
  hf_free(in->slots);
  in->slots = NULL;
  in->cap = 0;
}

static int32_t interner_count(const Interner *in) {
  return in->offs.size ? (int32_t)in->offs.size - 1 : 0;
}

static const int32_t *interner_get(const Interner *in, int32_t id, int32_t *len) {
  int32_t a = in->offs.contents[id], b = in->offs.contents[id + 1];
  *len = b - a;
  return in->pool.contents + a;
}

static uint64_t hash_ints(const int32_t *rec, int32_t n) {
  uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)n;
  for (int32_t i = 0; i < n; i++) h = hf__hash64(h ^ (uint32_t)rec[i]) + (uint64_t)i;
  return h;
}

static bool interner_grow(Interner *in) {
  size_t cap = in->cap ? in->cap * 2 : 1024;
  int32_t *slots = hf_malloc(cap * sizeof *slots);
  if (!slots) return false;
  memset(slots, 0, cap * sizeof *slots);
  int32_t n = interner_count(in);
  for (int32_t id = 0; id < n; id++) {
    int32_t len;
    const int32_t *rec = interner_get(in, id, &len);
    size_t i = (size_t)hash_ints(rec, len) & (cap - 1);
    while (slots[i]) i = (i + 1) & (cap - 1);
    slots[i] = id + 1;
  }
  hf_free(in->slots);
  in->slots = slots;
  in->cap = cap;
  return true;
}

/* The id of `rec` (added when new; *added tells), or -1 when memory ran out.  `rec` must
 * not point into the interner's own pool. */
static int32_t intern(Interner *in, const int32_t *rec, int32_t n, bool *added) {
  if (in->offs.size == 0 && !array_push(&in->offs, 0)) return -1;
  if ((size_t)(interner_count(in) + 1) * 2 > in->cap && !interner_grow(in)) return -1;
  size_t mask = in->cap - 1;
  size_t i = (size_t)hash_ints(rec, n) & mask;
  while (in->slots[i]) {
    int32_t len;
    const int32_t *got = interner_get(in, in->slots[i] - 1, &len);
    if (len == n && memcmp(got, rec, (size_t)n * sizeof *rec) == 0) {
      if (added) *added = false;
      return in->slots[i] - 1;
    }
    i = (i + 1) & mask;
  }
  if (!array_reserve(&in->pool, in->pool.size + (size_t)n)) return -1;
  if (!array_reserve(&in->offs, in->offs.size + 1)) return -1;
  memcpy(in->pool.contents + in->pool.size, rec, (size_t)n * sizeof *rec);
  in->pool.size += (size_t)n;
  in->offs.contents[in->offs.size++] = (int32_t)in->pool.size;
  int32_t id = interner_count(in) - 1;
  in->slots[i] = id + 1;
  if (added) *added = true;
  return id;
}

/* ---- small helpers -------------------------------------------------------------------- */

#define PUSH(S, arr, x) ((void)(array_push((arr), (x)) || ((S)->failed = 1)))

/* Widths are python_layout.pack'ed pairs: col * ALT_SPAN + alt (tabs to 8 / tabs as 1). */
#define ALT_SPAN 1024
#define SPACE (ALT_SPAN + 1)
static int32_t pack(int32_t col, int32_t alt) { return col * ALT_SPAN + alt; }
static int32_t imax(int32_t a, int32_t b) { return a > b ? a : b; }
/* python_layout.deeper: w deeper than v in both counts (an INDENT's condition) */
static bool deeper(int32_t w, int32_t v) {
  return w / ALT_SPAN > v / ALT_SPAN && w % ALT_SPAN > v % ALT_SPAN;
}
/* python_layout.at_least: w at least the lower bound v in both counts */
static bool at_least(int32_t w, int32_t v) {
  return w >= 0 && w / ALT_SPAN >= v / ALT_SPAN && w % ALT_SPAN >= v % ALT_SPAN;
}
static int32_t widest(int32_t w, int32_t v) {
  return pack(imax(w / ALT_SPAN, v / ALT_SPAN), imax(w % ALT_SPAN, v % ALT_SPAN));
}
/* python_layout.join_least: a lower bound of blanks `before`, any blanks, blanks `after` */
static int32_t join_least(int32_t before, int32_t after) {
  return pack(imax(before / ALT_SPAN + after % ALT_SPAN, after / ALT_SPAN),
              before % ALT_SPAN + after % ALT_SPAN);
}
/* python_layout.reachable: some blanks take width p to width u */
static bool reachable(int32_t p, int32_t u) {
  int32_t cp = p / ALT_SPAN, ap = p % ALT_SPAN, cu = u / ALT_SPAN, au = u % ALT_SPAN;
  int32_t n = au - ap;
  if (n < 0 || cu < cp + n || (n && cu > (cp / 8 + n) * 8)) return false;
  if (cu == cp + n) return true;
  for (int32_t k = 1; k <= n; k++) {
    for (int32_t q = cp / 8; q <= (cp + n - k) / 8; q++) {
      int32_t j = cu - 8 * (q + k);
      if (j < 0) break;
      int32_t lo = imax(imax(0, 8 * q - cp), n - k - j - 7 * (k - 1));
      int32_t hi = 8 * q + 7 - cp < n - k - j ? 8 * q + 7 - cp : n - k - j;
      if (lo <= hi) return true;
    }
  }
  return false;
}
/* Reach specs (python_layout.EXACT_SHIFT): the least width below bit 23, a 5-bit code above
 * (k + 1 for k spaces after the hole's blanks; s + 1 with TAB_FLAG for s spaces and a tab). */
#define EXACT_SHIFT 23
#define TAB_FLAG (1 << 28)
#define LEAST_MASK ((1 << EXACT_SHIFT) - 1)
static int32_t spec_least(int32_t code) { return code & LEAST_MASK; }
static int32_t spec_join(int32_t p, int32_t code) {
  int32_t least = code & LEAST_MASK;
  if (code & TAB_FLAG) return p == 0 ? code : join_least(p, least);
  int32_t k = ((code >> EXACT_SHIFT) & 31) - 1;
  if (code == 0) k = 0;
  if (k >= 0 && least == k * SPACE)
    return p == 0 && k == 0 ? 0 : p + k * SPACE + ((k + 1) << EXACT_SHIFT);
  return join_least(p, least);
}
static int32_t spec_both(int32_t a, int32_t b) {
  if (a == 0 || a == b) return b;
  if (b == 0) return a;
  return widest(a & LEAST_MASK, b & LEAST_MASK);
}
static bool reaches(int32_t code, int32_t t) {
  if (t < 0) return false;
  int32_t least = code & LEAST_MASK, v = ((code >> EXACT_SHIFT) & 31) - 1;
  if (v < 0) return at_least(t, least);
  if (code & TAB_FLAG) {
    int32_t a = t % ALT_SPAN - least % ALT_SPAN;
    int32_t m8 = t / ALT_SPAN - least / ALT_SPAN + (v / 8 + 1) * 8;
    if (a < 0 || m8 % 8 || m8 < 8) return false;
    for (int32_t c = imax(a, m8 - 8 - v); c < m8 - v; c++)
      if (c >= 0 && reachable(0, pack(c, a))) return true;
    return false;
  }
  int32_t ks = v * SPACE;
  return at_least(t, ks) && reachable(least - ks, t - ks);
}

static int32_t zone(bool at_least_one, int32_t least) {
  return -(1 + (int32_t)at_least_one + 2 * least);
}
static int32_t zone_min(int32_t z) { return (-z - 1) % 2; }
static int32_t zone_least(int32_t z) { return (-z - 1) / 2; }
static int32_t free_all(int32_t m) { return zone_min(m) ? D_PLUS : D_STAR; }
static int32_t buried(int32_t z) { return zone(zone_min(z) != 0, 0); }

static const int32_t *stack_of(const HfLayout *S, int32_t id, int32_t *len) {
  return interner_get(&S->stacks, id, len);
}

/* Interns base[0..n) followed by extra[0..m) (base may point into the stack pool). */
static int32_t stack_make(HfLayout *S, const int32_t *base, int32_t n, const int32_t *extra,
                          int32_t m) {
  HfInt32Array *t = &S->tmp_stack2;
  if (!array_resize(t, (size_t)(n + m) + 1)) {
    S->failed = 1;
    return 0;
  }
  if (n) memcpy(t->contents, base, (size_t)n * sizeof *base);
  if (m) memcpy(t->contents + n, extra, (size_t)m * sizeof *extra);
  int32_t id = intern(&S->stacks, t->contents, n + m, NULL);
  if (id < 0) {
    S->failed = 1;
    return 0;
  }
  return id;
}

static int32_t key_of(HfLayout *S, const int32_t rec[NKEY]) {
  int32_t id = intern(&S->keys, rec, NKEY, NULL);
  if (id < 0) {
    S->failed = 1;
    return 0;
  }
  return id;
}

static int32_t lay_key(HfLayout *S, const Lay *l) {
  int32_t rec[NKEY] = {TAG_LAYOUT, l->depth, l->stack, l->line, l->pending,
                       l->cont, l->comment, l->fixed, l->least, l->text_top};
  return key_of(S, rec);
}

static int32_t open_key_of(HfLayout *S, const Open *o) {
  int32_t rec[NKEY] = {TAG_OPEN, o->stack, o->cut, o->free, o->bol, o->carried, 0, 0, 0, 0};
  return key_of(S, rec);
}

static const int32_t *key_rec(const HfLayout *S, int32_t key) {
  int32_t len;
  return interner_get(&S->keys, key, &len);
}

static bool key_is_layout(const HfLayout *S, int32_t key) {
  return key_rec(S, key)[0] == TAG_LAYOUT;
}

static Lay lay_get(const HfLayout *S, int32_t key) {
  const int32_t *r = key_rec(S, key);
  Lay l = {r[1], r[2], r[3], r[4], r[8], r[5], r[6], r[7], r[9]};
  return l;
}

static Open open_get(const HfLayout *S, int32_t key) {
  const int32_t *r = key_rec(S, key);
  Open o = {r[1], r[2], r[3], r[4], r[5]};
  return o;
}

static Lay lay_plain(int32_t depth, int32_t stack, int32_t line, int32_t pending) {
  Lay l = {depth, stack, line, pending, 0, 0, 0, 0, 0};
  return l;
}

/* python_layout.open_key(stack, carried) */
static int32_t open_key(HfLayout *S, int32_t stack, int32_t carried) {
  int32_t n;
  stack_of(S, stack, &n);
  Open o = {stack, n - 1, 0, 1, carried};
  return open_key_of(S, &o);
}

/* python_layout.hole_key */
static int32_t hole_key(HfLayout *S, Lay l) {
  if (l.pending != P_NONE) return open_key(S, l.stack, l.pending > 0 ? l.pending : 0);
  l.line = l.line == LT_SOME ? LT_SOME : LT_UNKNOWN;
  l.depth = 0;
  l.cont = 0;
  return lay_key(S, &l);
}

/* Appends an alternative record [key, own, n, items...] (items: `pre` then `post`). */
static void alt_push(HfLayout *S, HfInt32Array *out, int32_t key, int32_t own,
                     const int32_t *pre, int32_t n_pre, const int32_t *post, int32_t n_post) {
  if (!array_reserve(out, out->size + 3 + (size_t)(n_pre + n_post))) {
    S->failed = 1;
    return;
  }
  int32_t *p = out->contents + out->size;
  p[0] = key;
  p[1] = own;
  p[2] = n_pre + n_post;
  if (n_pre) memcpy(p + 3, pre, (size_t)n_pre * sizeof *pre);
  if (n_post) memcpy(p + 3 + n_pre, post, (size_t)n_post * sizeof *post);
  out->size += 3 + (size_t)(n_pre + n_post);
}

/* Walks an alternative list: *pos advances to the next record. */
static bool alt_next(const HfInt32Array *alts, size_t *pos, int32_t *key, int32_t *own,
                     const int32_t **items, int32_t *n) {
  if (*pos >= alts->size) return false;
  const int32_t *p = alts->contents + *pos;
  *key = p[0];
  *own = p[1];
  *n = p[2];
  *items = p + 3;
  *pos += 3 + (size_t)p[2];
  return true;
}

/* ---- indentation rules (python_layout: line_at, _pop, free_width_moves, ...) ---------- */
/* Move lists here are records [stack, 0, n, moves...] with moves already as items. */

static void pop_to(HfLayout *S, int32_t stack, int32_t w, int32_t upper, HfInt32Array *moves,
                   HfInt32Array *out) {
  int32_t n;
  const int32_t *st = stack_of(S, stack, &n);
  int32_t unit = S->unit;
  while (n > 0) {
    int32_t top = st[n - 1];
    if (top >= 0) {
      if (w == top) {
        alt_push(S, out, stack_make(S, st, n, NULL, 0), 0, moves->contents,
                 (int32_t)moves->size, NULL, 0);
        return;
      }
      if (w > top) return;
      n--;
      upper = top;
      PUSH(S, moves, S->dedent);
      continue;
    }
    int32_t m = top, a = st[n - 2];
    if (w > a && !unit && deeper(w, a) && deeper(upper, w)) {
      int32_t extra[2] = {FREE0, w};
      int32_t ds = D_STAR;
      int32_t id = stack_make(S, st, n - 1, extra, 2);
      alt_push(S, out, id, 0, moves->contents, (int32_t)moves->size, &ds, 1);
      return;
    }
    if (w > a) return;
    PUSH(S, moves, free_all(m));
    n--;
  }
}

static void line_at(HfLayout *S, int32_t stack, int32_t w, HfInt32Array *out) {
  int32_t n;
  const int32_t *st = stack_of(S, stack, &n);
  int32_t top = st[n - 1];
  HfInt32Array *mv = &S->tmp_moves;
  array_clear(mv);
  int32_t unit = S->unit;
  if (top >= 0) {
    if (w == top) {
      alt_push(S, out, stack, 0, NULL, 0, NULL, 0);
      return;
    }
    if (deeper(w, top)) {
      int32_t id = stack_make(S, st, n, &w, 1);
      alt_push(S, out, id, 0, &S->indent, 1, NULL, 0);
      return;
    }
    if (w > top) return; /* deeper by one count only: TabError */
    PUSH(S, mv, S->dedent);
    pop_to(S, stack_make(S, st, n - 1, NULL, 0), w, top, mv, out);
    return;
  }
  int32_t m = top, a = st[n - 2];
  if (w == a) {
    int32_t fa = free_all(m);
    alt_push(S, out, stack_make(S, st, n - 1, NULL, 0), 0, &fa, 1, NULL, 0);
    return;
  }
  if (w < a) {
    PUSH(S, mv, free_all(m));
    PUSH(S, mv, S->dedent);
    pop_to(S, stack_make(S, st, n - 2, NULL, 0), w, a, mv, out);
    return;
  }
  if (!deeper(w, a)) return;
  int32_t least = zone_least(m);
  if (unit) {
    if ((w - a) % unit) return;
    HfInt32Array *lv = &S->tmp_stack;
    array_clear(lv);
    for (int32_t x = a + unit; x <= w; x += unit) PUSH(S, lv, x);
    if (S->failed) return;
    int32_t id = stack_make(S, st, n - 1, lv->contents, (int32_t)lv->size);
    if (reaches(least, w)) alt_push(S, out, id, 0, NULL, 0, NULL, 0);
    int32_t dp = D_PLUS;
    alt_push(S, out, id, 0, &dp, 1, NULL, 0);
    if ((w - unit > a || !zone_min(m)) && reaches(least, w - unit))
      alt_push(S, out, id, 0, &S->indent, 1, NULL, 0);
    return;
  }
  int32_t ex[2] = {FREE0, w};
  if (reaches(least, w)) alt_push(S, out, stack_make(S, st, n - 1, ex, 2), 0, NULL, 0, NULL, 0);
  st = stack_of(S, stack, &n);
  if (deeper(w, widest(a + SPACE * zone_min(m), spec_least(least)))) {
    int32_t ex2[2] = {buried(m), w};
    alt_push(S, out, stack_make(S, st, n - 1, ex2, 2), 0, &S->indent, 1, NULL, 0);
    st = stack_of(S, stack, &n);
  }
  int32_t dp = D_PLUS;
  alt_push(S, out, stack_make(S, st, n - 1, ex, 2), 0, &dp, 1, NULL, 0);
}

static int32_t top_at_least(HfLayout *S, int32_t stack, int32_t w) {
  int32_t n;
  const int32_t *st = stack_of(S, stack, &n);
  int32_t top = st[n - 1];
  if (top >= 0 || n < 2) return stack;
  int32_t below = st[n - 2];
  if (zone_min(top) == 0 && reaches(w, below)) return stack;
  int32_t z = zone(true, spec_both(w, zone_least(top)));
  return stack_make(S, st, n - 1, &z, 1);
}

static void free_width_moves(HfLayout *S, int32_t stack, int32_t least, HfInt32Array *out) {
  int32_t n;
  const int32_t *st = stack_of(S, stack, &n);
  int32_t top = st[n - 1];
  if (top < 0) /* the line is the zone's top level */
    alt_push(S, out, top_at_least(S, stack, least), 0, NULL, 0, NULL, 0);
  else if (reaches(least, top))
    alt_push(S, out, stack, 0, NULL, 0, NULL, 0);
  int32_t deeper = zone(true, least);
  int32_t id = top < 0 ? stack_make(S, st, n - 1, &deeper, 1) : stack_make(S, st, n, &deeper, 1);
  alt_push(S, out, id, 0, &S->indent, 1, NULL, 0);
  HfInt32Array *mv = &S->tmp_moves;
  array_clear(mv);
  while (n > 1) {
    int32_t full;
    st = stack_of(S, stack, &full); /* stack_make may have moved the pool */
    int32_t x = st[n - 1];
    PUSH(S, mv, x >= 0 ? S->dedent : free_all(x));
    n--;
    if (reaches(least, st[n - 1])) {
      int32_t sid = stack_make(S, st, n, NULL, 0);
      alt_push(S, out, sid, 0, mv->contents, (int32_t)mv->size, NULL, 0);
    }
  }
}


static int32_t open_hole_exit(HfLayout *S, const Open *o) {
  int32_t n;
  const int32_t *st = stack_of(S, o->stack, &n);
  int32_t k = o->cut + 1;
  int32_t buf_last = st[k - 1] < 0 ? FREE0 : st[k - 1];
  int32_t extra[2] = {buf_last, 0};
  int32_t m = 1;
  if (o->free) {
    if (buf_last < 0)
      extra[0] = FREE1;
    else
      extra[m++] = FREE1;
  }
  return stack_make(S, st, k - 1, extra, m);
}

/* python_layout.open_hole_moves: (move item, next open hole) pairs into moves/nexts. */
static int32_t open_hole_moves(HfLayout *S, const Open *o, int32_t mv[4], Open nx[4]) {
  int32_t k = 0;
  Open base = {o->stack, o->cut, 1, 0, 0};
  mv[k] = S->indent, nx[k++] = base;
  int32_t n;
  const int32_t *st = stack_of(S, o->stack, &n);
  if (o->free) {
    mv[k] = S->dedent, nx[k++] = base;
    base.free = 0;
    mv[k] = S->dedent, nx[k++] = base;
  } else if (st[o->cut] < 0) {
    base.free = 0;
    mv[k] = S->dedent, nx[k++] = base;
    Open cut = {stack_make(S, st, o->cut, NULL, 0), o->cut - 1, 0, 0, 0};
    mv[k] = S->dedent, nx[k++] = cut;
  } else if (o->cut > 0) {
    Open cut = {stack_make(S, st, o->cut, NULL, 0), o->cut - 1, 0, 0, 0};
    mv[k] = S->dedent, nx[k++] = cut;
  }
  return k;
}

/* ---- layout steps (PythonLayoutLexer._line_end, _at_width, _token_alts, ...) ----------- */

static void line_end(HfLayout *S, int32_t key, const Lay *l, HfInt32Array *out) {
  if (l->line == LT_SOME) {
    alt_push(S, out, key, 0, &S->newline, 1, NULL, 0);
  } else if (l->line == LT_UNKNOWN) {
    alt_push(S, out, key, 0, &S->newline, 1, NULL, 0);
    alt_push(S, out, key, 0, NULL, 0, NULL, 0);
  } else {
    alt_push(S, out, key, 0, NULL, 0, NULL, 0);
  }
}

static void add_step(HfLayout *S, int32_t step) {
  for (size_t i = 0; i < S->steps.size; i++)
    if (S->steps.contents[i] == step) return;
  PUSH(S, &S->steps, step);
}

static void at_width(HfLayout *S, const Lay *l, int32_t w, HfInt32Array *out) {
  int32_t n;
  const int32_t *st = stack_of(S, l->stack, &n);
  if (l->text_top && w > st[n - 1]) add_step(S, w - st[n - 1]);
  HfInt32Array *tmp = &S->a_line;
  array_clear(tmp);
  line_at(S, l->stack, w, tmp);
  size_t pos = 0;
  int32_t stack, own, k;
  const int32_t *items;
  while (alt_next(tmp, &pos, &stack, &own, &items, &k)) {
    Lay l2 = *l;
    l2.stack = stack;
    l2.text_top = 1;
    alt_push(S, out, lay_key(S, &l2), 0, items, k, NULL, 0);
  }
}

/* python_layout._token_alts: records [layout key, 0, n, items...] with the token last. */
static void token_alts(HfLayout *S, int32_t key, int32_t term, HfInt32Array *out) {
  Lay l = lay_get(S, key);
  HfInt32Array *alts = &S->a_at;
  array_clear(alts);
  if (l.pending == P_FREE && l.depth == 0) {
    HfInt32Array *tmp = &S->a_line;
    array_clear(tmp);
    free_width_moves(S, l.stack, l.least, tmp);
    size_t pos = 0;
    int32_t stack, own, k;
    const int32_t *items;
    while (alt_next(tmp, &pos, &stack, &own, &items, &k)) {
      Lay l2 = l;
      l2.stack = stack;
      l2.least = 0;
      l2.text_top = 0;
      alt_push(S, alts, lay_key(S, &l2), 0, items, k, NULL, 0);
    }
  } else if (l.pending != P_NONE && l.depth == 0) {
    at_width(S, &l, l.pending, alts);
  } else {
    alt_push(S, alts, key, 0, NULL, 0, NULL, 0);
  }
  int32_t br = S->bracket.contents[term];
  size_t pos = 0;
  int32_t k2, own, k;
  const int32_t *items;
  while (alt_next(alts, &pos, &k2, &own, &items, &k)) {
    Lay l2 = lay_get(S, k2);
    l2.pending = P_NONE;
    l2.line = LT_SOME;
    l2.cont = l2.comment = l2.fixed = 0;
    int32_t d = l2.depth;
    if (br > 0) {
      l2.depth = d >= 0 ? d + 1 : d - 1;
      alt_push(S, out, lay_key(S, &l2), 0, items, k, &term, 1);
    } else if (br < 0) {
      if (d > 0) {
        l2.depth = d - 1;
        alt_push(S, out, lay_key(S, &l2), 0, items, k, &term, 1);
      } else if (d == -1) {
        l2.depth = 0;
        alt_push(S, out, lay_key(S, &l2), 0, items, k, &term, 1);
        l2.depth = -1;
        alt_push(S, out, lay_key(S, &l2), 0, items, k, &term, 1);
      } else if (d < -1) {
        l2.depth = d + 1;
        alt_push(S, out, lay_key(S, &l2), 0, items, k, &term, 1);
      }
    } else {
      alt_push(S, out, lay_key(S, &l2), 0, items, k, &term, 1);
    }
    if (S->failed) return;
  }
}

/* PythonLayoutLexer._token: token_alts memoised per extend. Returns the memo's slice
 * [*from, *to) of S->memo_pool. */
static void token(HfLayout *S, int32_t key, int32_t term, size_t *from, size_t *to) {
  uint64_t mk = ((uint64_t)(uint32_t)key << 32) | (uint32_t)term;
  int32_t at = hf_map_get(&S->memo, mk);
  if (at < 0) {
    HfInt32Array *tmp = &S->a_tok;
    array_clear(tmp);
    token_alts(S, key, term, tmp);
    if (S->failed || !hf_map_reserve(&S->memo, 1) ||
        !array_reserve(&S->memo_pool, S->memo_pool.size + tmp->size + 1)) {
      S->failed = 1;
      *from = *to = 0;
      return;
    }
    at = (int32_t)S->memo_pool.size;
    S->memo_pool.contents[S->memo_pool.size++] = (int32_t)tmp->size;
    if (tmp->size) memcpy(S->memo_pool.contents + S->memo_pool.size, tmp->contents,
                          tmp->size * sizeof *tmp->contents);
    S->memo_pool.size += tmp->size;
    hf_map_fill(&S->memo, hf_map_probe(&S->memo, mk), mk, at);
  }
  *from = (size_t)at + 1;
  *to = *from + (size_t)S->memo_pool.contents[at];
}

static void newline_moves(HfLayout *S, int32_t key, int32_t width, HfInt32Array *out) {
  Lay l = lay_get(S, key);
  if (l.depth != 0) {
    l.cont = l.comment = 0;
    alt_push(S, out, lay_key(S, &l), 0, NULL, 0, NULL, 0);
    return;
  }
  HfInt32Array *tmp = &S->a_le2;
  array_clear(tmp);
  line_end(S, key, &l, tmp);
  size_t pos = 0;
  int32_t k2, own, k;
  const int32_t *items;
  while (alt_next(tmp, &pos, &k2, &own, &items, &k)) {
    Lay l2 = l;
    l2.line = LT_NONE;
    l2.pending = width;
    l2.cont = l2.comment = l2.fixed = 0;
    alt_push(S, out, lay_key(S, &l2), 0, items, k, NULL, 0);
  }
}

/* python_layout.close_all appended after each line end: records [key, 0, n, items]. */
static void eof_moves(HfLayout *S, int32_t key, HfInt32Array *out) {
  Lay l = lay_get(S, key);
  if (l.depth != 0 || l.cont) return;
  HfInt32Array *tmp = &S->a_le2;
  array_clear(tmp);
  line_end(S, key, &l, tmp);
  HfInt32Array *mv = &S->tmp_moves;
  array_clear(mv);
  int32_t n;
  const int32_t *st = stack_of(S, l.stack, &n);
  for (int32_t i = n - 1; i >= 0; i--) {
    if (st[i] > 0)
      PUSH(S, mv, S->dedent);
    else if (st[i] < 0)
      PUSH(S, mv, free_all(st[i]));
  }
  size_t pos = 0;
  int32_t k2, own, k;
  const int32_t *items;
  while (alt_next(tmp, &pos, &k2, &own, &items, &k))
    alt_push(S, out, key, 0, items, k, mv->contents, (int32_t)mv->size);
}

/* ---- the product ----------------------------------------------------------------------- */

static int32_t new_state(HfLayout *S, int32_t raw, int32_t key) {
  PUSH(S, &S->state_raw, raw);
  PUSH(S, &S->state_key, key);
  return S->n_states++;
}

/* Steps between two polls of the cancel callback: a few hundred microseconds of work, so
 * that a cancelled or late request stops its product (and its memory) at once. */
enum { HF_LAYOUT_POLL = 4096 };

static bool spend(HfLayout *S, int64_t n) {
  S->spent += n;
  if (S->budget_left >= 0 && S->spent > S->budget_left) {
    S->failed = 2;
    return false;
  }
  if (S->cancel != NULL && S->spent >= S->next_poll) {
    S->next_poll = S->spent + HF_LAYOUT_POLL;
    if (S->cancel(S->cancel_ctx)) {
      S->failed = 3;
      return false;
    }
  }
  return true;
}

static void record_edge(HfLayout *S, int32_t a, int32_t label, int32_t b, int32_t weight,
                        int32_t kind, int32_t term, int32_t raw, int32_t hole) {
  int32_t q[4] = {a, label, b, weight};
  if (!array_reserve(&S->edges, S->edges.size + 4)) {
    S->failed = 1;
    return;
  }
  memcpy(S->edges.contents + S->edges.size, q, sizeof q);
  S->edges.size += 4;
  PUSH(S, &S->kinds, kind);
  PUSH(S, &S->terms, term);
  PUSH(S, &S->raw_edge, raw);
  PUSH(S, &S->hole, hole);
}

/* _Product.add (hole >= 0: the span is that hole's) */
static void prod_add(HfLayout *S, int32_t a, int32_t label, int32_t b, int32_t weight,
                     int32_t kind, int32_t term, int32_t raw, int32_t hole) {
  if (b == DEAD || S->failed) return;
  int32_t key[4] = {a, label, b, raw};
  bool added = false;
  if (intern(&S->seen, key, 4, &added) < 0) {
    S->failed = 1;
    return;
  }
  /* Python records the key after spending; a failed spend leaves the session unusable, so
   * the order does not show. */
  if (!added || !spend(S, 1)) return;
  record_edge(S, a, label, b, weight, kind, term, raw, hole);
}

/* _Product.add_tokens for the hole's same-line tokens */
static void prod_add_tokens(HfLayout *S, int32_t a, int32_t b, int32_t hole) {
  if (S->failed) return;
  int32_t key[4] = {a, -2, b, 0};
  bool added = false;
  if (intern(&S->seen, key, 4, &added) < 0) {
    S->failed = 1;
    return;
  }
  if (!added) return;
  int32_t n = (int32_t)S->same_line.size / 2;
  if (!spend(S, n)) return;
  for (int32_t i = 0; i < n; i++) {
    int32_t t = S->same_line.contents[2 * i], w = S->same_line.contents[2 * i + 1];
    record_edge(S, a, t, b, w, KIND_HOLE, t, -1, hole);
  }
}

static const int32_t *raw_edge_fields(const HfLayout *S, int32_t e) {
  return S->raw_edges.contents + (size_t)e * NEDGE;
}

/* extend's `state`: the product state (rs, key), or DEAD. */
static int32_t state(HfLayout *S, int32_t rs, int32_t key) {
  if (S->failed) return DEAD;
  uint64_t k = ((uint64_t)(uint32_t)rs << 32) | (uint32_t)key;
  int32_t s = hf_map_get(&S->ids, k);
  if (s >= 0) return s;
  const int32_t *r = key_rec(S, key);
  if (r[0] == TAG_LAYOUT && r[1] != 0) {
    int32_t depth = r[1] < 0 ? -r[1] : r[1];
    int32_t ahead = S->raw_ahead.contents[rs];
    if (ahead >= 0 && ahead < depth) return DEAD;
  }
  if (!hf_map_reserve(&S->ids, 1)) {
    S->failed = 1;
    return DEAD;
  }
  s = new_state(S, rs, key);
  hf_map_fill(&S->ids, hf_map_probe(&S->ids, k), k, s);
  PUSH(S, &S->todo, rs);
  PUSH(S, &S->todo, key);
  return s;
}

/* extend's `emit`: edges src -> ... -> dst labelled `toks`, then the lexeme of raw edge e
 * (label `label`, weight) when e >= 0. */
static void emit(HfLayout *S, int32_t src, const int32_t *toks, int32_t n, int32_t dst,
                 int32_t label, int32_t weight, int32_t e) {
  if (dst == DEAD || S->failed) return;
  if (n == 0 && e >= 0) {
    const int32_t *f = raw_edge_fields(S, e);
    prod_add(S, src, label, dst, weight, f[E_KIND], f[E_TERM], e, -1);
    return;
  }
  int32_t cur = src;
  for (int32_t j = 0; j < n; j++) {
    bool last = j == n - 1 && e < 0;
    int32_t nxt = last ? dst : new_state(S, -1, -1);
    int32_t t = toks[j];
    if (t == D_STAR || t == D_PLUS) {
      int32_t mid = new_state(S, -1, -1);
      if (t == D_PLUS)
        prod_add(S, cur, S->dedent, mid, 0, KIND_LEXEME, S->dedent, -1, -1);
      else
        prod_add(S, cur, EPS, mid, 0, KIND_EPS_LINK, EPS, -1, -1);
      prod_add(S, mid, S->dedent, mid, 0, KIND_LEXEME, S->dedent, -1, -1);
      prod_add(S, mid, EPS, nxt, 0, KIND_EPS_LINK, EPS, -1, -1);
    } else {
      prod_add(S, cur, t, nxt, 0, KIND_LEXEME, t, -1, -1);
    }
    cur = nxt;
  }
  if (e >= 0) {
    const int32_t *f = raw_edge_fields(S, e);
    prod_add(S, cur, label, dst, weight, f[E_KIND], f[E_TERM], e, -1);
  } else if (n == 0) {
    prod_add(S, src, EPS, dst, 0, KIND_EPS_LINK, EPS, -1, -1);
  }
}

/* Emits every record of `alts` (their keys already product keys) as `emit` does. */
static void emit_alts(HfLayout *S, int32_t src, int32_t rt, const HfInt32Array *alts,
                      size_t from, size_t to, int32_t label, int32_t weight, int32_t e,
                      bool drop_last) {
  size_t pos = from;
  while (pos < to && !S->failed) {
    const int32_t *p = alts->contents + pos;
    int32_t key = p[0], n = p[2];
    pos += 3 + (size_t)n;
    int32_t dst = state(S, rt, key); /* touches ids and todo, never `alts` */
    emit(S, src, p + 3, drop_last ? n - 1 : n, dst, label, weight, e);
  }
}

/* PythonLayoutLexer.fixed_moves: records [key, own, n, items...] into S->a_fixed. */
static void fixed_moves(HfLayout *S, int32_t key, const int32_t *f, bool eps_link,
                        bool to_hole, HfInt32Array *out) {
  Lay l = lay_get(S, key);
  int32_t label = f[E_LABEL], term = f[E_TERM];
  bool ends_line = l.depth == 0 && (eps_link ? l.comment != 0 : term == S->comment);
  HfInt32Array *le = &S->a_le;
  size_t pos;
  int32_t k2, own, k;
  const int32_t *items;
  if (to_hole && ends_line) {
    array_clear(le);
    line_end(S, key, &l, le);
    pos = 0;
    while (alt_next(le, &pos, &k2, &own, &items, &k))
      alt_push(S, out, open_key(S, l.stack, 0), 1, items, k, NULL, 0);
    return;
  }
  if (eps_link) {
    alt_push(S, out, hole_key(S, l), 0, NULL, 0, NULL, 0);
    return;
  }
  if (label == EPS) {
    Lay nx = l;
    if (term == S->line_cont) {
      nx.cont = 1;
      /* CPython: the first backslash after a nonzero width fixes it, alt = col */
      if (!l.fixed && l.pending > 0) nx.pending = pack(l.pending / ALT_SPAN, l.pending / ALT_SPAN);
      nx.fixed = l.fixed || l.pending > 0;
    } else if (term == S->comment) {
      nx.comment = 1;
    } else if (term == S->ws && l.cont && l.pending >= 0 && !l.fixed && !to_hole &&
               f[E_SAME_CHUNK]) {
      nx.pending = l.pending + f[E_WS_BLANK];
    }
    alt_push(S, out, to_hole ? hole_key(S, nx) : lay_key(S, &nx), 0, NULL, 0, NULL, 0);
    return;
  }
  if (term == S->nl) {
    if (l.depth != 0) {
      Lay nx = l;
      nx.comment = 0;
      alt_push(S, out, to_hole ? hole_key(S, nx) : lay_key(S, &nx), 0, NULL, 0, NULL, 0);
      return;
    }
    if (to_hole || !f[E_SAME_CHUNK]) {
      array_clear(le);
      line_end(S, key, &l, le);
      pos = 0;
      while (alt_next(le, &pos, &k2, &own, &items, &k)) {
        if (to_hole) {
          alt_push(S, out, open_key(S, l.stack, f[E_NL_CARRIED]), 0, items, k, NULL, 0);
          continue;
        }
        Lay nx = lay_plain(0, l.stack, LT_NONE, P_FREE);
        nx.least = spec_join(f[E_NL_CARRIED], f[E_NL_LEAST_B]);
        alt_push(S, out, lay_key(S, &nx), 0, items, k, NULL, 0);
      }
      return;
    }
    newline_moves(S, key, f[E_NL_SAME], out);
    return;
  }
  size_t from, to;
  token(S, key, term, &from, &to);
  pos = from;
  while (pos < to && !S->failed) {
    const int32_t *p = S->memo_pool.contents + pos;
    int32_t k3 = p[0], n = p[2];
    pos += 3 + (size_t)n;
    int32_t dst = to_hole ? hole_key(S, lay_get(S, k3)) : k3;
    p = S->memo_pool.contents + pos - 3 - (size_t)n;
    alt_push(S, out, dst, 1, p + 3, n - 1, NULL, 0);
  }
}

/* One leaving-the-hole layout list of extend (exits / exits_text / exits_blank). */
typedef struct Exits {
  int32_t n;
  int32_t keys[2];
} Exits;

static void nl_from_hole(HfLayout *S, int32_t src, int32_t rt, bool open, const Exits *ex,
                         const int32_t *f, int32_t e) {
  int32_t width = f[E_NL_BREAK_B]; /* -1: the break lies in the hole */
  int32_t weight = f[E_WEIGHT];
  for (int32_t i = 0; i < ex->n && !S->failed; i++) {
    Lay l0 = lay_get(S, ex->keys[i]);
    if (l0.depth != 0) {
      emit(S, src, NULL, 0, state(S, rt, ex->keys[i]), EPS, weight + S->bracket_weight, e);
      continue;
    }
    if (open) {
      Lay nx = l0;
      nx.line = LT_NONE;
      nx.pending = width < 0 ? P_FREE : width;
      nx.least = width < 0 ? f[E_NL_LEAST_B] : 0;
      emit(S, src, NULL, 0, state(S, rt, lay_key(S, &nx)), EPS, weight, e);
    } else if (width >= 0) {
      HfInt32Array *le = &S->a_le;
      array_clear(le);
      line_end(S, ex->keys[i], &l0, le);
      size_t pos = 0;
      int32_t k2, own, k;
      const int32_t *items;
      while (alt_next(le, &pos, &k2, &own, &items, &k)) {
        Lay nx = l0;
        nx.line = LT_NONE;
        nx.pending = width;
        int32_t dst = state(S, rt, lay_key(S, &nx));
        emit(S, src, items, k, dst, EPS, weight, e);
      }
    }
  }
}

static Exits exits_one(int32_t key) {
  Exits x = {1, {key, 0}};
  return x;
}

/* What extend knows at a hole state (see hole_state). */
typedef struct HoleCtx {
  bool open, bol, deep_enough;
  Open oh;
  int32_t entry_stack;
  Exits exits, exits_text, exits_blank;
} HoleCtx;

/* hole_state for an open hole ("open", oh, bol, carried): its own layout tokens. */
static void open_hole_state(HfLayout *S, int32_t src, int32_t rs, int32_t key, HoleCtx *c) {
  int32_t h = S->raw_hole.contents[rs];
  Open o = open_get(S, key);
  c->oh = o;
  c->bol = o.bol != 0;
  int32_t carried = o.carried;
  int32_t after = open_hole_exit(S, &o);
  int32_t n;
  const int32_t *st = stack_of(S, after, &n);
  int32_t top = st[n - 1];
  c->deep_enough = top < 0 || reaches(spec_join(carried, 0), top);
  c->entry_stack = after;
  Open line_start = o;
  line_start.bol = 1;
  line_start.carried = 0;
  if (c->bol) {
    if (c->deep_enough) {
      Open mid_o = o;
      mid_o.bol = 0;
      mid_o.carried = 0;
      prod_add_tokens(S, src, state(S, rs, open_key_of(S, &mid_o)), h);
    }
    int32_t mv[4];
    Open nx[4];
    int32_t k = open_hole_moves(S, &o, mv, nx);
    for (int32_t i = 0; i < k; i++) {
      nx[i].bol = 1;
      nx[i].carried = carried;
      int32_t dst = state(S, rs, open_key_of(S, &nx[i]));
      prod_add(S, src, mv[i], dst, S->token_weight, KIND_HOLE, mv[i], -1, h);
    }
    if (carried) {
      int32_t dst = state(S, rs, open_key_of(S, &line_start));
      prod_add(S, src, EPS, dst, S->token_weight, KIND_HOLE, S->newline, -1, h);
    }
  } else {
    prod_add_tokens(S, src, src, h);
    int32_t dst = state(S, rs, open_key_of(S, &line_start));
    prod_add(S, src, S->newline, dst, S->token_weight, KIND_HOLE, S->newline, -1, h);
  }
  if (!c->bol) {
    Lay x0 = lay_plain(0, after, LT_SOME, P_NONE), x1 = lay_plain(-1, after, LT_SOME, P_NONE);
    c->exits.n = 2;
    c->exits.keys[0] = lay_key(S, &x0);
    c->exits.keys[1] = lay_key(S, &x1);
    c->exits_text = c->exits_blank = c->exits;
    return;
  }
  Lay blank = lay_plain(0, after, LT_NONE, P_NONE);
  c->exits_blank = exits_one(lay_key(S, &blank));
  int32_t text_after = h + 1;
  int32_t need = spec_join(carried, S->lead.contents[text_after]);
  int32_t own = spec_join(carried, 0);
  c->exits.n = 0;
  if (c->deep_enough) {
    Lay x = lay_plain(0, top_at_least(S, after, own), LT_NONE, P_NONE);
    c->exits = exits_one(lay_key(S, &x));
  }
  c->exits_text.n = 0;
  if (S->blank_first.contents[text_after]) {
    c->exits_text = c->exits_blank;
  } else if (top < 0 || reaches(need, top)) {
    Lay x = lay_plain(0, top_at_least(S, after, need), LT_NONE, P_NONE);
    c->exits_text = exits_one(lay_key(S, &x));
  }
}

/* The edges of a hole state (before its out edges), and what leaving it looks like. */
static void hole_state(HfLayout *S, int32_t src, int32_t rs, int32_t key, HoleCtx *c) {
  c->open = !key_is_layout(S, key);
  if (c->open) {
    open_hole_state(S, src, rs, key, c);
    return;
  }
  int32_t h = S->raw_hole.contents[rs];
  Lay l = lay_get(S, key);
  prod_add_tokens(S, src, src, h);
  prod_add(S, src, S->newline, state(S, rs, open_key(S, l.stack, 0)), S->token_weight,
           KIND_HOLE, S->newline, -1, h);
  Lay l1 = l;
  l1.depth = -1;
  c->exits.n = 2;
  c->exits.keys[0] = key;
  c->exits.keys[1] = lay_key(S, &l1);
  c->exits_text = c->exits_blank = c->exits;
  c->entry_stack = l.stack;
  c->bol = false;
}

/* A raw edge e out of hole state (src, key). */
static void leave_hole(HfLayout *S, int32_t src, int32_t key, const HoleCtx *c, int32_t e) {
  const int32_t *f = raw_edge_fields(S, e);
  int32_t label = f[E_LABEL], rt = f[E_DST], weight = f[E_WEIGHT], term = f[E_TERM];
  bool to_hole = S->raw_hole.contents[rt] >= 0;
  if (to_hole) {
    bool bol_here = c->open && c->bol;
    if (term == S->nl) {
      if (!bol_here) {
        if (!c->open) {
          Lay l = lay_get(S, key);
          HfInt32Array *le = &S->a_le;
          array_clear(le);
          line_end(S, key, &l, le);
          size_t pos = 0;
          int32_t k2, own, k;
          const int32_t *items;
          while (alt_next(le, &pos, &k2, &own, &items, &k)) {
            int32_t dst = state(S, rt, open_key(S, c->entry_stack, 0));
            emit(S, src, items, k, dst, label, weight, e);
          }
        } else {
          emit(S, src, &S->newline, 1, state(S, rt, open_key(S, c->entry_stack, 0)), label,
               weight, e);
        }
        emit(S, src, NULL, 0, state(S, rt, key), label, weight, e);
      } else {
        emit(S, src, NULL, 0, state(S, rt, open_key(S, c->entry_stack, 0)), label, weight, e);
      }
    } else if (bol_here && term != S->comment) {
      if (c->deep_enough) {
        Open o = c->oh;
        o.bol = 0;
        o.carried = 0;
        emit(S, src, NULL, 0, state(S, rt, open_key_of(S, &o)), label, weight, e);
      }
    } else {
      emit(S, src, NULL, 0, state(S, rt, key), label, weight, e);
    }
    return;
  }
  if (term == S->nl) {
    nl_from_hole(S, src, rt, c->open, &c->exits_blank, f, e);
    return;
  }
  const Exits *leaving = term == S->comment ? &c->exits_blank
                         : (label == EPS && term != S->line_cont) ? &c->exits_text
                                                                  : &c->exits;
  for (int32_t i = 0; i < leaving->n && !S->failed; i++) {
    int32_t k0 = leaving->keys[i];
    Lay l0 = lay_get(S, k0);
    int32_t cost = weight + (l0.depth < 0 ? S->bracket_weight : 0);
    if (label == EPS) {
      if (term == S->line_cont && c->open && c->bol) {
        Lay fr = l0;
        fr.line = LT_NONE;
        fr.pending = P_FREE;
        fr.cont = 1;
        fr.least = f[E_CONT_WS] ? SPACE : 0;
        emit(S, src, NULL, 0, state(S, rt, lay_key(S, &fr)), label, cost, e);
        continue;
      }
      Lay nx = l0;
      nx.cont = term == S->line_cont;
      emit(S, src, NULL, 0, state(S, rt, lay_key(S, &nx)), label, cost, e);
      continue;
    }
    size_t from, to;
    token(S, k0, term, &from, &to);
    emit_alts(S, src, rt, &S->memo_pool, from, to, label, cost, e, true);
  }
}

static void expand(HfLayout *S, int32_t rs, int32_t key) {
  uint64_t k = ((uint64_t)(uint32_t)rs << 32) | (uint32_t)key;
  int32_t src = hf_map_get(&S->ids, k);
  bool in_hole = S->raw_hole.contents[rs] >= 0;
  HoleCtx c;
  memset(&c, 0, sizeof c);
  if (in_hole) {
    hole_state(S, src, rs, key, &c);
  } else if (S->raw_final.contents[rs]) {
    HfInt32Array *eof = &S->a_eof;
    array_clear(eof);
    eof_moves(S, key, eof);
    size_t pos = 0;
    int32_t k2, own, n;
    const int32_t *items;
    while (alt_next(eof, &pos, &k2, &own, &items, &n))
      emit(S, src, items, n, S->final, EPS, 0, -1);
  }
  for (int32_t e = S->raw_first.contents[rs]; e >= 0 && !S->failed;
       e = S->raw_next.contents[e]) {
    if (in_hole) {
      leave_hole(S, src, key, &c, e);
      continue;
    }
    const int32_t *f = raw_edge_fields(S, e);
    int32_t rt = f[E_DST];
    bool to_hole = S->raw_hole.contents[rt] >= 0;
    bool eps_link = f[E_KIND] == KIND_EPS_LINK;
    HfInt32Array *fx = &S->a_fixed;
    array_clear(fx);
    fixed_moves(S, key, f, eps_link, to_hole, fx);
    size_t pos = 0;
    int32_t k2, own, n;
    const int32_t *items;
    while (alt_next(fx, &pos, &k2, &own, &items, &n) && !S->failed) {
      int32_t dst = state(S, rt, k2);
      emit(S, src, items, n, dst, own ? f[E_LABEL] : EPS, f[E_WEIGHT], e);
    }
  }
}

/* ---- public API ------------------------------------------------------------------------ */

HfLayout *hf_layout_new(const int32_t *config, int32_t n_config, const int32_t *bracket,
                        int32_t n_terminals, const int32_t *same_line, int32_t n_same_line,
                        const int32_t *lead, const int32_t *blank_first, int32_t n_chunks) {
  if (n_config < HF_LAYOUT_CONFIG_FIELDS || n_terminals <= 0 || n_chunks <= 0) return NULL;
  HfLayout *S = hf_malloc(sizeof *S);
  if (!S) return NULL;
  memset(S, 0, sizeof *S);
  S->n_terminals = n_terminals;
  S->nl = config[0], S->newline = config[1], S->indent = config[2], S->dedent = config[3];
  S->line_cont = config[4], S->ws = config[5], S->comment = config[6];
  S->unit = config[7], S->bracket_weight = config[8], S->token_weight = config[9];
  interner_init(&S->stacks);
  interner_init(&S->keys);
  interner_init(&S->seen);
  hf_map_init(&S->ids);
  hf_map_init(&S->memo);
  bool ok = array_resize(&S->bracket, n_terminals) &&
            array_resize(&S->same_line, 2 * (size_t)n_same_line) &&
            array_resize(&S->lead, n_chunks) && array_resize(&S->blank_first, n_chunks);
  if (!ok) {
    hf_layout_delete(S);
    return NULL;
  }
  memcpy(S->bracket.contents, bracket, (size_t)n_terminals * sizeof(int32_t));
  if (n_same_line)
    memcpy(S->same_line.contents, same_line, 2 * (size_t)n_same_line * sizeof(int32_t));
  memcpy(S->lead.contents, lead, (size_t)n_chunks * sizeof(int32_t));
  memcpy(S->blank_first.contents, blank_first, (size_t)n_chunks * sizeof(int32_t));
  S->final = new_state(S, -1, -1);
  if (S->failed) {
    hf_layout_delete(S);
    return NULL;
  }
  return S;
}

void hf_layout_delete(HfLayout *S) {
  if (!S) return;
  HfInt32Array *arrays[] = {&S->bracket, &S->same_line, &S->lead, &S->blank_first,
                            &S->raw_hole, &S->raw_final, &S->raw_ahead, &S->raw_first,
                            &S->raw_last, &S->raw_edges, &S->raw_next, &S->state_raw,
                            &S->state_key, &S->edges, &S->kinds, &S->terms, &S->raw_edge,
                            &S->hole, &S->todo, &S->steps, &S->memo_pool, &S->tmp_stack,
                            &S->tmp_stack2, &S->tmp_moves, &S->a_line, &S->a_at, &S->a_tok,
                            &S->a_fixed, &S->a_le, &S->a_le2, &S->a_eof};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) array_destroy(arrays[i]);
  interner_destroy(&S->stacks);
  interner_destroy(&S->keys);
  interner_destroy(&S->seen);
  hf_map_destroy(&S->ids);
  hf_map_destroy(&S->memo);
  hf_free(S);
}

int hf_layout_raw(HfLayout *S, int32_t n_raw, const int32_t *hole, const int32_t *final,
                  const int32_t *ahead, int32_t n_new_edges, const int32_t *quads,
                  const int32_t *kinds, const int32_t *terms, int32_t n_facts,
                  const int32_t *facts) {
  if (S->unusable || n_raw < S->n_raw) return -1;
  if (!array_resize(&S->raw_hole, n_raw) || !array_resize(&S->raw_final, n_raw) ||
      !array_resize(&S->raw_ahead, n_raw) || !array_resize(&S->raw_first, n_raw) ||
      !array_resize(&S->raw_last, n_raw))
    return -1;
  for (int32_t i = S->n_raw; i < n_raw; i++) S->raw_first.contents[i] = -1;
  size_t bytes = (size_t)n_raw * sizeof(int32_t);
  if (n_raw) {
    memcpy(S->raw_hole.contents, hole, bytes);
    memcpy(S->raw_final.contents, final, bytes);
    memcpy(S->raw_ahead.contents, ahead, bytes);
  }
  S->n_raw = n_raw;
  size_t old = S->raw_next.size;
  if (!array_resize(&S->raw_edges, (old + (size_t)n_new_edges) * NEDGE) ||
      !array_resize(&S->raw_next, old + (size_t)n_new_edges))
    return -1;
  for (int32_t j = 0; j < n_new_edges; j++) {
    int32_t e = (int32_t)old + j;
    int32_t *f = S->raw_edges.contents + (size_t)e * NEDGE;
    memset(f, 0, NEDGE * sizeof *f);
    memcpy(f, quads + 4 * (size_t)j, 4 * sizeof *f);
    f[E_KIND] = kinds[j];
    f[E_TERM] = terms[j];
    int32_t src = f[E_SRC], dst = f[E_DST];
    if (src < 0 || src >= n_raw || dst < 0 || dst >= n_raw) {
      S->unusable = 1;
      return -1;
    }
    S->raw_next.contents[e] = -1;
    if (S->raw_first.contents[src] < 0)
      S->raw_first.contents[src] = e;
    else
      S->raw_next.contents[S->raw_last.contents[src]] = e;
    S->raw_last.contents[src] = e;
  }
  for (int32_t k = 0; k < n_facts; k++) {
    const int32_t *x = facts + (size_t)k * HF_LAYOUT_FACT_FIELDS;
    if (x[0] < (int32_t)old || x[0] >= (int32_t)S->raw_next.size) {
      S->unusable = 1;
      return -1;
    }
    memcpy(S->raw_edges.contents + (size_t)x[0] * NEDGE + E_SAME_CHUNK, x + 1,
           (HF_LAYOUT_FACT_FIELDS - 1) * sizeof *x);
  }
  return 0;
}

int32_t hf_layout_key(HfLayout *S, const int32_t *fields, int32_t n_fields) {
  if (S->unusable || n_fields < NKEY) return -1;
  int32_t len = n_fields - NKEY;
  int32_t stack = stack_make(S, fields + NKEY, len, NULL, 0);
  int32_t rec[NKEY];
  memcpy(rec, fields, sizeof rec);
  rec[fields[0] == TAG_LAYOUT ? 2 : 1] = stack;
  int32_t id = key_of(S, rec);
  if (S->failed) {
    S->unusable = 1;
    return -1;
  }
  return id;
}

int32_t hf_layout_key_fields(const HfLayout *S, int32_t key, int32_t *out, int32_t cap) {
  if (key < 0 || key >= interner_count(&S->keys)) return -1;
  const int32_t *r = key_rec(S, key);
  int32_t n;
  const int32_t *st = stack_of(S, r[r[0] == TAG_LAYOUT ? 2 : 1], &n);
  if (cap < NKEY + n) return NKEY + n;
  memcpy(out, r, NKEY * sizeof *r);
  memcpy(out + NKEY, st, (size_t)n * sizeof *st);
  return NKEY + n;
}

int32_t hf_layout_extend(HfLayout *S, const int32_t *entries, int32_t n_entries,
                         int64_t budget_left, HfCancelFn cancel, void *cancel_ctx,
                         int32_t *starts) {
  if (S->unusable) return -3;
  S->failed = 0;
  S->spent = 0;
  S->budget_left = budget_left;
  S->cancel = cancel;
  S->cancel_ctx = cancel_ctx;
  S->next_poll = HF_LAYOUT_POLL;
  array_clear(&S->steps);
  hf_map_clear(&S->memo);
  array_clear(&S->memo_pool);
  int32_t n_starts = 0;
  for (int32_t i = 0; i < n_entries; i++) {
    int32_t rs = entries[2 * i], key = entries[2 * i + 1];
    if (rs < 0 || rs >= S->n_raw || key < 0 || key >= interner_count(&S->keys)) {
      S->unusable = 1;
      return -3;
    }
    int32_t s = state(S, rs, key);
    if (s != DEAD) starts[n_starts++] = s;
  }
  while (S->todo.size && !S->failed) {
    int32_t key = S->todo.contents[--S->todo.size];
    int32_t rs = S->todo.contents[--S->todo.size];
    expand(S, rs, key);
  }
  S->cancel = NULL;
  S->cancel_ctx = NULL;
  if (S->failed) {
    S->unusable = 1;
    return S->failed == 2 ? -1 : S->failed == 3 ? -4 : -2;
  }
  return n_starts;
}

int64_t hf_layout_spent(const HfLayout *S) { return S->spent; }
int32_t hf_layout_n_states(const HfLayout *S) { return S->n_states; }
int32_t hf_layout_final(const HfLayout *S) { return S->final; }
size_t hf_layout_n_edges(const HfLayout *S) { return S->kinds.size; }
const int32_t *hf_layout_edges(const HfLayout *S) { return S->edges.contents; }
const int32_t *hf_layout_kinds(const HfLayout *S) { return S->kinds.contents; }
const int32_t *hf_layout_terms(const HfLayout *S) { return S->terms.contents; }
const int32_t *hf_layout_raw_edges(const HfLayout *S) { return S->raw_edge.contents; }
const int32_t *hf_layout_holes(const HfLayout *S) { return S->hole.contents; }
const int32_t *hf_layout_state_raw(const HfLayout *S) { return S->state_raw.contents; }
const int32_t *hf_layout_state_key(const HfLayout *S) { return S->state_key.contents; }

int32_t hf_layout_steps(const HfLayout *S, int32_t *out, int32_t cap) {
  int32_t n = (int32_t)S->steps.size;
  for (int32_t i = 0; i < n && i < cap; i++) out[i] = S->steps.contents[i];
  return n;
}
