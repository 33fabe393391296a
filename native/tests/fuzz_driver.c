/*
 * fuzz_driver.c -- a deterministic batch of random instances for sanitizer builds.
 *
 *   gcc -std=c99 -g -fsanitize=address,undefined -Inative native/hf_*.c native/tests/fuzz_driver.c
 *   ./a.out [seed] [count]
 *
 * Random 2NF grammars and NFAs (weighted ε edges, loops, several starts/finals, weights,
 * sometimes heavy enough for the heap overflow queue, sometimes large enough to grow every
 * map),
 * run through one reused checker per grammar in both modes, with tiny budgets, and with
 * malformed input.  Checks what can be checked without an oracle: both modes agree,
 * witnesses chain from a start to a final, their weight (ε-paths completed lightest, as
 * holefill.h describes) matches the stats, the minimum-weight mode is never heavier, a
 * budget never flips YES/NO, the context filter (on by default) changes neither verdicts
 * nor minimum witness weights (runs with it off compare), and no block is leaked (through a
 * swapped-in allocator).  One grammar in four has 62 or 127 unused terminals in front of
 * its symbols, so the filter's bitsets span two or three words.
 * Prints the seed; exits non-zero on the first violation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "holefill.h"

static uint64_t rng_state;

static uint32_t rng(void) {
  /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * UINT64_C(2685821657736338717)) >> 32);
}

static int32_t pick(int32_t lo, int32_t hi) { /* inclusive */
  return lo + (int32_t)(rng() % (uint32_t)(hi - lo + 1));
}

/* A swapped-in allocator that counts its own blocks, to test hf_set_allocator. */
static long custom_live;
static void *custom_malloc(size_t n) { custom_live++; return malloc(n); }
static void *custom_realloc(void *p, size_t n) { return realloc(p, n); }
static void custom_free(void *p) { custom_live--; free(p); }

#define FAIL(...)                                                  \
  do {                                                             \
    fprintf(stderr, "fuzz_driver: instance %d: ", instance);       \
    fprintf(stderr, __VA_ARGS__);                                  \
    fprintf(stderr, "\n");                                         \
    exit(1);                                                       \
  } while (0)

enum { MAX_STATES = 80, MAX_EDGES = 600 };

static int instance;
#define UNREACHED UINT64_MAX
/* eps[p][q]: lightest ε-path weight from p to q (0 on the diagonal), or UNREACHED. */
static uint64_t eps[MAX_STATES][MAX_STATES];

static void eps_closure(int32_t n, const int32_t *edges, int32_t n_edges) {
  for (int32_t p = 0; p < n; p++)
    for (int32_t q = 0; q < n; q++) eps[p][q] = p == q ? 0 : UNREACHED;
  for (int changed = 1; changed;) {
    changed = 0;
    for (int32_t i = 0; i < n_edges; i++) {
      const int32_t *e = edges + 4 * i;
      if (e[1] != -1) continue;
      for (int32_t p = 0; p < n; p++) {
        if (eps[p][e[0]] == UNREACHED) continue;
        uint64_t d = eps[p][e[0]] + (uint64_t)e[3];
        if (d < eps[p][e[2]]) {
          eps[p][e[2]] = d;
          changed = 1;
        }
      }
    }
  }
}

/* Lightest ε-path weight from any start to `state`, or UNREACHED. */
static uint64_t from_starts(const int32_t *starts, int32_t n_starts, int32_t state) {
  uint64_t best = UNREACHED;
  for (int32_t i = 0; i < n_starts; i++)
    if (eps[starts[i]][state] < best) best = eps[starts[i]][state];
  return best;
}

/* Checks the witness of the last run and returns its weight. */
static uint64_t check_witness(HfChecker *chk, const int32_t *edges, const int32_t *starts,
                              int32_t n_starts, const int32_t *finals, int32_t n_finals) {
  size_t n = hf_checker_witness_len(chk);
  int32_t ids[4096], ends[4096];
  if (n > 4096) FAIL("witness too long for the driver: %zu", n);
  if (hf_checker_witness(chk, ids, ends, n) != n) FAIL("witness copy short");
  uint64_t weight = 0;
  int32_t prev = -1;
  for (size_t k = 0; k < n; k++) {
    const int32_t *e = edges + 4 * ids[k];
    if (e[1] < 0) FAIL("leaf %zu is an epsilon edge", k);
    if (k == 0) {
      uint64_t offset = from_starts(starts, n_starts, e[0]);
      if (offset == UNREACHED) FAIL("first leaf does not start near a start state");
      weight += offset;
    } else if (e[0] != prev) {
      FAIL("leaf %zu starts in %d, previous ended in %d", k, e[0], prev);
    }
    if (eps[e[2]][ends[k]] == UNREACHED)
      FAIL("leaf %zu end %d not ε-reachable from %d", k, ends[k], e[2]);
    weight += (uint64_t)e[3] + eps[e[2]][ends[k]];
    prev = ends[k];
  }
  int ok = 0;
  if (n == 0) {
    /* The empty word: the core picks the lightest ε-path from a start to a final. */
    uint64_t best = UNREACHED;
    for (int32_t j = 0; j < n_finals; j++) {
      uint64_t d = from_starts(starts, n_starts, finals[j]);
      if (d < best) best = d;
    }
    ok = best != UNREACHED;
    weight = best;
  } else {
    for (int32_t j = 0; j < n_finals; j++) ok |= finals[j] == prev;
  }
  if (!ok) FAIL("witness does not end in a final state");
  HfStats stats;
  hf_checker_stats(chk, &stats);
  if (stats.weight != weight || stats.leaves != n) FAIL("stats disagree with witness");
  return weight;
}

/* A filtered right context grown in two blocks, with entries in both calls (some on old
 * states), answers the parser's questions at its entries like the unfiltered context built
 * in one call; a growth under tiny limits answers HF_UNKNOWN or the same. */
static void right_growth_round(const HfGrammar *g, int32_t n, const int32_t *edges,
                               int32_t n_edges, const int32_t *finals, int32_t n_finals,
                               int32_t n_t, int32_t pad) {
  static int32_t first[4 * MAX_EDGES], second[4 * MAX_EDGES], all[4 * MAX_EDGES];
  int32_t split = pick(1, n), n1 = 0, n2 = 0, fin1[4], fin2[4], f1 = 0, f2 = 0;
  for (int32_t i = 0; i < n_edges; i++) {
    const int32_t *e = edges + 4 * i;
    if (e[0] < split && e[2] < split) memcpy(first + 4 * n1++, e, 4 * sizeof *e);
    else if (e[0] >= split) memcpy(second + 4 * n2++, e, 4 * sizeof *e);
  }
  memcpy(all, first, (size_t)n1 * 4 * sizeof *all);
  memcpy(all + 4 * n1, second, (size_t)n2 * 4 * sizeof *all);
  for (int32_t i = 0; i < n_finals; i++) {
    if (finals[i] < split) fin1[f1++] = finals[i];
    else fin2[f2++] = finals[i];
  }
  int32_t entries1[3] = {0, pick(0, split - 1), pick(0, split - 1)};
  int32_t entries2[3] = {pick(0, n - 1), pick(0, n - 1), pick(split - 1, n - 1)};
  HfRight *plain = hf_right_new(g), *grown = hf_right_new(g), *tight = hf_right_new(g);
  HfParser *parser = hf_parser_new(g);
  if (!plain || !grown || !tight || !parser) FAIL("right/parser_new failed");
  HfLimits some = {200000, 200000, 0}; /* big unfiltered closures: UNKNOWN, compared no more */
  HfVerdict p = hf_right_add(plain, n, all, (size_t)(n1 + n2), finals, (size_t)n_finals,
                             NULL, 0, &some);
  HfVerdict g1 = hf_right_add(grown, split, first, (size_t)n1, fin1, (size_t)f1, entries1, 3,
                              &some);
  HfVerdict g2 = hf_right_add(grown, n, second, (size_t)n2, fin2, (size_t)f2, entries2, 3,
                              &some);
  if ((p != HF_YES && p != HF_UNKNOWN) || (g1 != HF_YES && g1 != HF_UNKNOWN) ||
      (g2 != HF_YES && g2 != HF_UNKNOWN))
    FAIL("right verdicts %d %d %d: %s", (int)p, (int)g1, (int)g2, hf_right_last_error(grown));
  int compare = p == HF_YES && g1 == HF_YES && g2 == HF_YES;
  HfLimits tiny = {(uint64_t)pick(1, 50), (uint64_t)pick(1, 50), 0};
  if (tiny.max_steps % 2) {
    /* or only a memory limit (1 to 50 KB, drawn above: no new draw, so the checker
     * instances stay as they were): out of it an answer is UNKNOWN, never wrong */
    tiny.max_bytes = tiny.max_items * 1024;
    tiny.max_steps = 0;
    tiny.max_items = 0;
  }
  HfVerdict t1 = hf_right_add(tight, split, first, (size_t)n1, fin1, (size_t)f1, entries1, 3,
                              &tiny);
  HfVerdict t2 = hf_right_add(tight, n, second, (size_t)n2, fin2, (size_t)f2, entries2, 3,
                              &tiny);
  if ((t1 != HF_YES && t1 != HF_UNKNOWN) || (t2 != HF_YES && t2 != HF_UNKNOWN))
    FAIL("tight growth verdicts %d %d", (int)t1, (int)t2);
  for (int k = 0; k < 6; k++) {
    int32_t at = k < 3 ? entries1[k] : entries2[k - 3];
    int32_t exits[3] = {0, rng() % 2 ? -1 : pick(0, n_t - 1) + pad, at};
    HfVerdict want = hf_parser_query(parser, plain, 1, NULL, 0, exits, 1, NULL);
    HfVerdict got = hf_parser_query(parser, grown, 1, NULL, 0, exits, 1, NULL);
    HfVerdict lim = hf_parser_query(parser, tight, 1, NULL, 0, exits, 1, NULL);
    if (!compare) continue;
    if (want != got) FAIL("grown right answered %d, plain %d (entry %d)", (int)got, (int)want,
                          (int)at);
    if (lim != want && lim != HF_UNKNOWN) FAIL("tight right answered %d, plain %d", (int)lim,
                                               (int)want);
  }
  hf_parser_forget(parser, plain);
  hf_parser_forget(parser, grown);
  hf_parser_forget(parser, tight);
  hf_parser_delete(parser);
  hf_right_delete(plain);
  hf_right_delete(grown);
  hf_right_delete(tight);
}

/* hf_munch on a random DFA over a random window of classes: the lexemes tile the text from
 * `from` to where it stopped, each is at least one character, no run reads past the known
 * classes, and out-of-range classes or arguments are refused or stop the run safely. */
static uint64_t munch_rng_state; /* its own stream: the checker instances stay as they were */

static void munch_round(void) {
  enum { MS = 6, MC = 4, MT = 40 };
  uint64_t checker_rng_state = rng_state;
  rng_state = munch_rng_state;
  int32_t trans[MS * MC], accept[MS], classes[MT];
  uint8_t alive[MS], errors[3];
  int64_t starts[MT], ends[MT], scans[MT], old[MT], resume, synced;
  int32_t labels[MT];
  int32_t n_states = pick(1, MS), n_classes = pick(1, MC);
  for (int32_t i = 0; i < n_states * n_classes; i++) trans[i] = pick(-1, n_states - 1);
  for (int32_t s = 0; s < n_states; s++) {
    accept[s] = rng() % 3 == 0 ? pick(0, 3) : -1; /* label 3 lies past n_labels */
    alive[s] = (uint8_t)(rng() % 4 != 0);
  }
  for (int i = 0; i < 3; i++) errors[i] = (uint8_t)(rng() % 4 == 0);
  HfLexTables dfa = {trans, n_states, n_classes, accept, alive, 0, errors, 3};
  int64_t text_len = pick(0, MT), base = pick(0, (int32_t)text_len);
  int64_t n_known = pick(0, (int32_t)(text_len - base)), from = base + pick(0, (int32_t)n_known);
  for (int64_t i = 0; i < n_known; i++) classes[i] = pick(rng() % 20 == 0 ? -1 : 0, n_classes);
  int64_t n_old = pick(0, MT);
  for (int64_t i = 0; i < n_old; i++) old[i] = (i ? old[i - 1] : 0) + pick(1, 3);
  int64_t sync_from = rng() % 2 ? -1 : pick(0, (int32_t)text_len);
  int64_t n = hf_munch(&dfa, classes, base, n_known, text_len, from, sync_from,
                       pick(-3, 3), old, n_old, starts, ends, labels, scans, &resume, &synced);
  if (n < 0) FAIL("valid munch arguments refused");
  int64_t at = from;
  for (int64_t i = 0; i < n; i++) {
    if (starts[i] != at || ends[i] <= at || scans[i] < at || scans[i] > base + n_known)
      FAIL("munch lexeme %lld: [%lld, %lld) scan %lld after %lld", (long long)i,
           (long long)starts[i], (long long)ends[i], (long long)scans[i], (long long)at);
    at = ends[i];
  }
  if (resume != at || at > base + n_known || synced >= n_old)
    FAIL("munch stopped at %lld after %lld (synced %lld)", (long long)resume, (long long)at,
         (long long)synced);
  if (hf_munch(&dfa, classes, base, n_known, text_len, base - 1, -1, 0, old, n_old, starts,
               ends, labels, scans, &resume, &synced) != -1)
    FAIL("munch from before the known classes accepted");
  munch_rng_state = rng_state;
  rng_state = checker_rng_state;
}

int main(int argc, char **argv) {
  uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 12345;
  int count = argc > 2 ? atoi(argv[2]) : 2000;
  printf("fuzz_driver seed=%llu count=%d\n", (unsigned long long)seed, count);
  rng_state = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
  munch_rng_state = rng_state ^ UINT64_C(0xD1B54A32D192ED03);
  hf_set_allocator(custom_malloc, custom_realloc, custom_free);

  static int32_t binary[3 * 64], unary[2 * 32], nullable[8];
  static int32_t edges[4 * MAX_EDGES], starts[4], finals[4];
  char error[128];
  int yes = 0, no = 0;

  for (instance = 0; instance < count;) {
    int big = rng() % 8 == 0;
    int32_t n_t = pick(1, 4), n_v = n_t + pick(1, big ? 10 : 5);
    /* Symbols are drawn from [0, n_v) and shifted up by `pad` unused terminals. */
    int32_t pad = rng() % 4 == 0 ? (rng() % 2 ? 62 : 127) : 0;
    int32_t n_bin = pick(0, big ? 40 : 10), n_un = pick(0, 8), n_null = pick(0, 3);
    for (int32_t i = 0; i < n_bin; i++) {
      binary[3 * i] = pick(n_t, n_v - 1);
      binary[3 * i + 1] = pick(0, n_v - 1);
      binary[3 * i + 2] = pick(0, n_v - 1);
    }
    for (int32_t i = 0; i < n_un; i++) {
      unary[2 * i] = pick(n_t, n_v - 1);
      unary[2 * i + 1] = i < 3 ? pick(0, n_t - 1) : pick(0, n_v - 1);
    }
    for (int32_t i = 0; i < n_null; i++) nullable[i] = pick(n_t, n_v - 1);
    for (int32_t i = 0; i < 3 * n_bin; i++) binary[i] += pad;
    for (int32_t i = 0; i < 2 * n_un; i++) unary[i] += pad;
    for (int32_t i = 0; i < n_null; i++) nullable[i] += pad;
    HfGrammar *g = hf_grammar_new(n_t + pad, n_v + pad, pick(n_t, n_v - 1) + pad, binary,
                                  (size_t)n_bin, unary, (size_t)n_un, nullable, (size_t)n_null,
                                  error, sizeof error);
    if (g == NULL) FAIL("valid grammar rejected: %s", error);
    HfChecker *chk = hf_checker_new(g);
    if (chk == NULL) FAIL("checker_new failed");

    for (int round = 0; round < 4 && instance < count; round++, instance++) {
      int32_t n = pick(1, big ? MAX_STATES : 8);
      int32_t n_edges = pick(0, big ? MAX_EDGES : 20);
      uint32_t scale = rng() % 5 == 0 ? 30000 : 1;
      for (int32_t i = 0; i < n_edges; i++) {
        int32_t *e = edges + 4 * i;
        e[0] = pick(0, n - 1);
        e[1] = pick(-1, n_t - 1);
        if (e[1] >= 0) e[1] += pad;
        e[2] = rng() % 3 == 0 ? e[0] : pick(0, n - 1);
        e[3] = (int32_t)(scale * (uint32_t)pick(0, 2)); /* ε edges weighted too */
      }
      int32_t n_starts = pick(0, 3), n_finals = pick(0, 3);
      for (int32_t i = 0; i < n_starts; i++) starts[i] = pick(0, n - 1);
      for (int32_t i = 0; i < n_finals; i++) finals[i] = pick(0, n - 1);
      eps_closure(n, edges, n_edges);

      HfVerdict best = hf_checker_run(chk, n, edges, (size_t)n_edges, starts,
                                      (size_t)n_starts, finals, (size_t)n_finals, NULL, 1,
                                      NULL, NULL);
      if (best != HF_YES && best != HF_NO) FAIL("min mode verdict %d", (int)best);
      uint64_t w_best = best == HF_YES
                            ? check_witness(chk, edges, starts, n_starts, finals, n_finals)
                            : 0;
      HfVerdict fast = hf_checker_run(chk, n, edges, (size_t)n_edges, starts,
                                      (size_t)n_starts, finals, (size_t)n_finals, NULL, 0,
                                      NULL, NULL);
      if (fast != best) FAIL("modes disagree: %d vs %d", (int)fast, (int)best);
      if (fast == HF_YES) {
        uint64_t w_fast = check_witness(chk, edges, starts, n_starts, finals, n_finals);
        if (w_fast < w_best) FAIL("fast witness %llu lighter than min %llu",
                                  (unsigned long long)w_fast, (unsigned long long)w_best);
      }
      /* The context filter never changes a verdict or the minimum weight. */
      hf_checker_set_context_filter(chk, 0);
      HfVerdict plain = hf_checker_run(chk, n, edges, (size_t)n_edges, starts,
                                       (size_t)n_starts, finals, (size_t)n_finals, NULL, 1,
                                       NULL, NULL);
      hf_checker_set_context_filter(chk, 1);
      if (plain != best) FAIL("unfiltered verdict %d, filtered %d", (int)plain, (int)best);
      if (plain == HF_YES) {
        uint64_t w_plain = check_witness(chk, edges, starts, n_starts, finals, n_finals);
        if (w_plain != w_best)
          FAIL("unfiltered weight %llu, filtered %llu", (unsigned long long)w_plain,
               (unsigned long long)w_best);
      }
      yes += best == HF_YES;
      no += best == HF_NO;
      right_growth_round(g, n, edges, n_edges, finals, n_finals, n_t, pad);
      munch_round();

      HfLimits tiny = {(uint64_t)pick(1, 50), (uint64_t)pick(1, 50), 0};
      HfVerdict limited = hf_checker_run(chk, n, edges, (size_t)n_edges, starts,
                                         (size_t)n_starts, finals, (size_t)n_finals, &tiny,
                                         (int)(rng() % 2), NULL, NULL);
      if (limited != HF_UNKNOWN && limited != best)
        FAIL("budgeted run answered %d, full run %d", (int)limited, (int)best);

      if (n_edges > 0 && rng() % 4 == 0) {
        int32_t *e = edges + 4 * pick(0, n_edges - 1);
        int32_t saved[4];
        memcpy(saved, e, sizeof saved);
        switch (rng() % 4) {
          case 0: e[1] = n_t + pad + pick(0, 3); break;
          case 1: e[2] = n + pick(0, 3); break;
          case 2: e[3] = -1 - pick(0, 5); break;
          default: e[1] = -1; e[3] = -1 - pick(0, 5); break; /* negative ε weight */
        }
        HfVerdict bad = hf_checker_run(chk, n, edges, (size_t)n_edges, starts,
                                       (size_t)n_starts, finals, (size_t)n_finals, NULL, 1,
                                       NULL, NULL);
        if (bad != HF_ERROR || hf_checker_last_error(chk)[0] == '\0')
          FAIL("malformed edge not reported (verdict %d)", (int)bad);
        memcpy(e, saved, sizeof saved);
      }
    }
    hf_checker_delete(chk);
    hf_grammar_delete(g);
  }
  hf_checker_delete(NULL);
  hf_grammar_delete(NULL);
  if (hf_live_blocks() != 0 || custom_live != 0)
    FAIL("leaked: %lld live blocks (custom allocator: %ld)", (long long)hf_live_blocks(),
         custom_live);
  hf_set_allocator(NULL, NULL, NULL);
  printf("fuzz_driver ok: %d YES, %d NO\n", yes, no);
  return 0;
}
