/*
 * holefill.h -- the whole public API of the holefill native core (C99).
 *
 * The core decides whether L(G) ∩ L(N) is empty, for a context-free grammar G in C2F+ε
 * ("2NF": every production is A -> X Y, A -> X or A -> ε) and an NFA N over G's
 * terminals.  It runs a weighted bottom-up search over the *implicit* intersection grammar
 * (Bar-Hillel construction, see docs and the MRI paper, Alg. 2): an item (p, A, q) means
 * "A derives a word that takes N from state p to state q".  Items are finalized lightest
 * first (Knuth's generalisation of Dijkstra, bucket queue), so a witness returned in
 * `want_witness` mode has minimum total edge weight, ε edges included.
 *
 * Context filter (on by default, see hf_checker_set_context_filter): the grammar records,
 * per symbol A, PREC(A) -- the terminals (or the beginning of input ⊢) that can stand right
 * before A in a sentential form of the start symbol -- and FOLL(A) -- those (or the end
 * ⊣) that can stand right after it.  A run records, per NFA state p, IN(p) -- the labels of
 * ε-composed edges ending at p, plus ⊢ if p is ε-reachable from a start -- and OUT(q) --
 * the labels of composed edges leaving q, plus ⊣ if q is final.  A nonterminal item
 * (p, A, q) is created only if PREC(A) ∩ IN(p) and FOLL(A) ∩ OUT(q) are non-empty.  It
 * assumes nothing about the input: every item of a derivation of a goal passes, so
 * verdicts and witness weights are exactly those of the unfiltered search (which of
 * several equally light witnesses is returned may differ).  It only saves work: items
 * (p, A, q) whose neighbouring lexemes cannot surround an A, such as a list nonterminal
 * starting in the middle of a list.
 *
 * Symbols are int32: 0 .. n_terminals-1 are terminals, n_terminals .. n_symbols-1 are
 * nonterminals.  A terminal needs no A -> a rule: its items are the NFA edges it labels.
 *
 * Threads: an HfGrammar is immutable after hf_grammar_new and may be shared by any number
 * of checkers and threads.  An HfChecker is used by one thread at a time.
 *
 * Memory: everything goes through hf_malloc / hf_realloc / hf_free (see hf_set_allocator).
 * hf_live_blocks() counts blocks currently allocated; it is zero once every object is
 * deleted; hf_live_bytes() counts their bytes.
 *
 * This header is also the cffi cdef: native/build.py strips the preprocessor lines below,
 * so the declarations must stay plain C (no macros, no #ifdef inside the API).
 */
#ifndef HOLEFILL_H
#define HOLEFILL_H

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------------------------
 * Allocator (the only global state of the library).
 * ------------------------------------------------------------------------------------- */

/* Replaces the allocator used by every hf_* object.  Passing NULL for any of the three
 * restores the C library's malloc/realloc/free for all three.  Call it only while no hf_*
 * object is alive (blocks must be freed by the allocator that made them). */
void hf_set_allocator(void *(*new_malloc)(size_t), void *(*new_realloc)(void *, size_t),
                      void (*new_free)(void *));

/* The library's allocation entry points (exported so tests and drivers can use them).
 * hf_malloc(0) returns a unique non-NULL block; hf_free(NULL) is a no-op. */
void *hf_malloc(size_t size);
void *hf_realloc(void *ptr, size_t size);
void hf_free(void *ptr);

/* Number of blocks allocated through hf_malloc/hf_realloc and not yet freed. */
int64_t hf_live_blocks(void);

/* Bytes those blocks hold (as asked for; the allocator's own overhead not counted), and the
 * most they held at once since the last hf_reset_peak_bytes (or the start).  Figures for
 * measuring memory: a lost race between threads may leave the peak one block low. */
int64_t hf_live_bytes(void);
int64_t hf_peak_bytes(void);
void hf_reset_peak_bytes(void);

/* ---------------------------------------------------------------------------------------
 * Verdicts, limits, statistics.
 * ------------------------------------------------------------------------------------- */

typedef enum HfVerdict {
  HF_ERROR = -1,     /* bad input or out of memory; see hf_checker_last_error        */
  HF_NO = 0,         /* L(G) ∩ L(N) is empty (only ever said when the search finished) */
  HF_YES = 1,        /* non-empty; a witness is available (hf_checker_witness)         */
  HF_UNKNOWN = 2,    /* a limit in HfLimits ran out before the answer was known        */
  HF_CANCELLED = 3   /* the cancel callback returned non-zero                          */
} HfVerdict;

/* Work limits of one hf_checker_run.  0 means "the default".
 *
 * max_steps  default 20,000,000.  One step is one inner-loop combination: a production
 *            examined for a popped item, or a finalized partner item combined with it.
 *            Measured 50-200 ns per step (the search is bound by cache misses on the item
 *            hash map), so the default bounds a run at roughly 1-4 s.
 * max_items  default 2,000,000.  Distinct items (p, A, q) discovered, terminal items
 *            included.  Each item costs about 90 bytes (item record, item hash map, two
 *            finalized-item indexes, queue entry; measured), up to twice that while a
 *            table doubles, so the default bounds memory at about 200-400 MB.
 * Running out of either answers HF_UNKNOWN (never HF_NO). */
typedef struct HfLimits {
  uint64_t max_steps;
  uint64_t max_items;
  /* Bytes the object's buffers may hold at once, growth included (0: no limit).  Only
   * hf_right_add keeps to it so far (see there); running out answers HF_UNKNOWN. */
  uint64_t max_bytes;
} HfLimits;

/* Counters of the last hf_checker_run (all zero before the first run). */
typedef struct HfStats {
  uint64_t steps;          /* inner-loop combinations, as counted against max_steps      */
  uint64_t items;          /* distinct items discovered, as counted against max_items    */
  uint64_t finalized;      /* items popped from the queue and finalized                   */
  uint64_t useful_states;  /* NFA states both reachable from a start and co-reachable    */
  uint64_t edges;          /* terminal edges after ε-elimination and trimming             */
  uint64_t leaves;         /* witness length (0 unless HF_YES)                            */
  uint64_t weight;         /* witness total weight, ε edges included (see
                              hf_checker_witness; minimum when want_witness was set)     */
} HfStats;

/* Cancellation callback: polled every 4096 steps; return non-zero to stop the run, which
 * then answers HF_CANCELLED.  It must not call back into the same checker. */
typedef int (*HfCancelFn)(void *ctx);

/* ---------------------------------------------------------------------------------------
 * Grammar.
 * ------------------------------------------------------------------------------------- */

typedef struct HfGrammar HfGrammar;

/* Builds an immutable grammar with its production indexes and the context sets of the
 * filter (PREC/FOLL above; cost O(productions * n_terminals / 64) time and
 * 4 * n_symbols * (n_terminals / 64 + 1) words of memory; past 2^24 words, i.e. a grammar
 * with tens of thousands of terminals, the sets are skipped and the filter is off).
 *
 * binary:   n_binary triples (A, X, Y) in one flat array: A -> X Y.
 * unary:    n_unary pairs (A, X):                          A -> X.
 * nullable: n_nullable nonterminals A:                     A -> ε.
 * A must be a nonterminal; X, Y any symbol; start a nonterminal.  At most 2^26 binary
 * and 2^27 unary productions, and n_symbols < 2^29.
 * The arrays are copied; they may be NULL when their count is 0.
 * Returns NULL on bad input or out of memory, with a NUL-terminated message naming the
 * offending array and index written to `error` (at most error_cap bytes; error may be
 * NULL).  The caller deletes the grammar with hf_grammar_delete, after every checker that
 * uses it. */
HfGrammar *hf_grammar_new(int32_t n_terminals, int32_t n_symbols, int32_t start,
                          const int32_t *binary, size_t n_binary,
                          const int32_t *unary, size_t n_unary,
                          const int32_t *nullable, size_t n_nullable,
                          char *error, size_t error_cap);

/* Frees the grammar; NULL is a no-op. */
void hf_grammar_delete(HfGrammar *self);

int32_t hf_grammar_n_terminals(const HfGrammar *self);
int32_t hf_grammar_n_symbols(const HfGrammar *self);

/* ---------------------------------------------------------------------------------------
 * Checker: a reusable search handle.  Buffers are kept (cleared, not freed) between runs,
 * so repeated runs on one handle allocate almost nothing.
 * ------------------------------------------------------------------------------------- */

typedef struct HfChecker HfChecker;

/* Creates a checker for `grammar`, which is borrowed: it must outlive the checker.
 * Returns NULL when grammar is NULL or memory runs out. */
HfChecker *hf_checker_new(const HfGrammar *grammar);

/* Frees the checker and all its buffers; NULL is a no-op. */
void hf_checker_delete(HfChecker *self);

/* Turns the context filter (see the top of this header) on (non-zero, the default) or off
 * for the following runs.  It never changes a verdict or a witness weight, only the work;
 * off is for tests and benchmarks that compare.  NULL is a no-op. */
void hf_checker_set_context_filter(HfChecker *self, int enabled);

/* Decides whether the grammar's language meets the NFA's.
 *
 * edges:   n_edges quadruples (from, label, to, weight) in one flat array.  label is a
 *          terminal id or -1 for ε; weight >= 0, on ε edges too.  Loops and ε-cycles
 *          are allowed.  The weight of a path is the sum of ALL its edge weights, ε edges
 *          included; the weight of a word is that of its lightest accepting path.
 * starts:  n_starts start states; finals: n_finals final states (duplicates allowed).
 * All arrays are borrowed for the duration of the call only.  States are 0..n_states-1.
 * An item (p, A, q) is packed into 64 bits, so 2*bits(n_states-1) + bits(n_symbols-1)
 * must be <= 64 (e.g. 2^20 states with 2^24 symbols); larger inputs are HF_ERROR.
 * limits:  may be NULL (all defaults).
 * want_witness: 0 stops as soon as a goal item (s, S, f) -- s ε-reachable from a start,
 *          f a final -- is discovered; non-zero returns a witness of minimum total weight
 *          (ε weights counted).  Its cost: the search stops once the lightest goal is
 *          finalized, plus, when ε edges of weight > 0 lead from the starts, until the
 *          queue's weight reaches the lightest goal total (an item's weight does not count
 *          the ε-path from a start to its first state).  A limit that runs out in between
 *          answers HF_UNKNOWN.  Both modes provide a witness on HF_YES; verdicts do not
 *          depend on the mode or on the weights.
 * cancel:  may be NULL; cancel_ctx is passed to it unchanged.
 *
 * Returns HF_YES / HF_NO / HF_UNKNOWN / HF_CANCELLED, or HF_ERROR for bad input (message
 * from hf_checker_last_error names the offending array index) or out of memory.  The
 * checker stays usable after any verdict. */
HfVerdict hf_checker_run(HfChecker *self, int32_t n_states,
                         const int32_t *edges, size_t n_edges,
                         const int32_t *starts, size_t n_starts,
                         const int32_t *finals, size_t n_finals,
                         const HfLimits *limits, int want_witness,
                         HfCancelFn cancel, void *cancel_ctx);

/* Number of leaves of the witness of the last run (0 unless it answered HF_YES; also 0
 * for a witness of the empty word). */
size_t hf_checker_witness_len(const HfChecker *self);

/* Copies up to `cap` witness leaves, left to right: edge_ids[k] is the index of the
 * ORIGINAL edge (quadruple index into the `edges` array of the last run) of leaf k, and
 * end_states[k] the state the leaf ends in after its trailing ε moves: leaf k is edge
 * e_k followed by an ε-path from to(e_k) to end_states[k].  The leaves chain exactly:
 * from(e_{k+1}) == end_states[k]; from(e_0) is ε-reachable from a start state;
 * end_states[last] is final.  The ε-paths themselves are not returned; with d(x, y) the
 * lightest ε-path weight (d(X, y) = min over x in X), the witness weight in HfStats is
 *     d(starts, from(e_0)) + sum over k of (weight(e_k) + d(to(e_k), end_states[k])),
 * and for the empty word (no leaves) min over finals f of d(starts, f).  A caller
 * rebuilding the full path must use lightest ε-paths to get that weight.  Either output
 * may be NULL.  Returns the number of leaves copied. */
size_t hf_checker_witness(const HfChecker *self, int32_t *edge_ids, int32_t *end_states,
                          size_t cap);

/* Copies the counters of the last run into *out. */
void hf_checker_stats(const HfChecker *self, HfStats *out);

/* Message of the last HF_ERROR ("" when the last run did not fail).  Owned by the checker,
 * valid until its next run or deletion. */
const char *hf_checker_last_error(const HfChecker *self);

/* ---------------------------------------------------------------------------------------
 * Right contexts: what the text after a hole accepts.
 *
 * An HfRight holds every generating triple (p, X, q) of an NFA R over the grammar's
 * terminals: symbol X derives a word that takes R from state p to state q (ε moves at either
 * end included).  Decoding builds R once per hole from the hole and the fixed text after it
 * (later holes included) and then asks, token after token, whether the text typed so far
 * can be completed through R (hf_parser_query).  Its cost is that of the closure, once; the
 * questions never look at R's text again.
 * ------------------------------------------------------------------------------------- */

typedef struct HfRight HfRight;

/* Creates an empty right context (no states) for `grammar`, which is borrowed and must
 * outlive it.  NULL when grammar is NULL, has 2^16 or more symbols, or memory runs out. */
HfRight *hf_right_new(const HfGrammar *grammar);

/* Frees it; NULL is a no-op.  Parsers that used it must not query it afterwards. */
void hf_right_delete(HfRight *self);

/* Grows R to n_states states (at least as many as before, fewer than 2^24), adds `edges`
 * (n_edges quadruples (from, label, to, weight) as for hf_checker_run; weights are ignored,
 * label -1 is ε) and final states, and extends the closure.  Every edge must leave a state
 * added by this call (so the closure of the old states stays valid and is only extended);
 * edges may lead to any state.  Arrays are borrowed for the call.
 *
 * entries: the states where questions will enter R (n_entries may be 0).  With entries on
 * the first call, the closure keeps only triples (p, A, q) whose neighbours can surround A:
 * PREC(A) meets the labels that can come before p (every terminal at an entry, since the
 * left may end with anything) and FOLL(A) meets the labels after q (⊣ at a final), as the
 * checker's context filter does (exact for questions that enter at the entries of all
 * calls so far; often several times fewer triples).  Such a filtered context grows like any
 * other, and later calls may bring more entries, new states or old ones (an old state that
 * becomes an entry, or that new edges reach with new labels, gets the triples the filter
 * dropped there; its new finals must be new states).  A context first built without
 * entries takes none later.
 *
 * Returns HF_YES when the closure is complete; HF_UNKNOWN when `limits` ran out first
 * (max_steps: combinations tried; max_items: triples kept, 100 to 250 bytes each with their
 * indexes (measured); defaults 20,000,000 and 2,000,000; max_bytes: what hf_right_bytes
 * would say after the growth of a buffer that grows with the items, counting a rehashed
 * table's old slots too, checked before each such growth; the buffers that grow with the
 * states, a few bytes per state, are counted but not checked; default none), after which the
 * context is incomplete for good and questions answer UNKNOWN instead of NO; HF_ERROR for
 * bad input or out of memory (message: hf_right_last_error). */
HfVerdict hf_right_add(HfRight *self, int32_t n_states, const int32_t *edges, size_t n_edges,
                       const int32_t *finals, size_t n_finals, const int32_t *entries,
                       size_t n_entries, const HfLimits *limits);

int32_t hf_right_n_states(const HfRight *self);
uint64_t hf_right_n_items(const HfRight *self);
/* Bytes its buffers hold (capacities, not sizes: what it keeps allocated). */
uint64_t hf_right_bytes(const HfRight *self);
/* Bumped by every hf_right_add: parsers recompute what they derived from an older R. */
uint64_t hf_right_version(const HfRight *self);
/* 1 while every hf_right_add saturated within its limits. */
int hf_right_complete(const HfRight *self);
/* Message of the last HF_ERROR ("" otherwise), owned by the context. */
const char *hf_right_last_error(const HfRight *self);

/* ---------------------------------------------------------------------------------------
 * Parser: an incremental Earley recognizer over the text left of a hole.
 *
 * It reads the terminals of the fixed text before a hole and of what was typed into it,
 * one set per terminal; truncating undoes the last terminals (a refused candidate).  Its
 * question, hf_parser_query, is the completability of the input so far followed by a small
 * junction NFA J (the end of the current lexeme, the hole's entry, layout tokens) leading
 * into a right context.  What one question derives for the fixed sets is kept for the next,
 * so the cost per token depends on the grammar and on the new terminals, not on the file.
 * ------------------------------------------------------------------------------------- */

typedef struct HfParser HfParser;

/* Creates a parser at the start of input (position 0) for `grammar` (borrowed).  NULL when
 * grammar is NULL or memory runs out. */
HfParser *hf_parser_new(const HfGrammar *grammar);

/* Frees it; NULL is a no-op. */
void hf_parser_delete(HfParser *self);

/* Back to position 0 (no input).  HF_YES, or HF_ERROR when memory ran out. */
HfVerdict hf_parser_reset(HfParser *self);

/* Reads n terminals.  HF_YES when the input is still a prefix of some sentence after each;
 * HF_NO when terminal i is not (the parser then stays after terminal i-1: the input read
 * is always a viable prefix); HF_UNKNOWN when `limits` ran out (max_items: items kept,
 * 12 bytes each, default 4,000,000; max_steps default 20,000,000), also leaving the parser
 * before the terminal that hit it; HF_ERROR for a bad terminal or out of memory. */
HfVerdict hf_parser_push(HfParser *self, const int32_t *terminals, size_t n,
                         const HfLimits *limits);

/* The number of terminals read. */
int32_t hf_parser_position(const HfParser *self);

/* Forgets every terminal after the first `position` (no-op when it has read fewer). */
void hf_parser_truncate(HfParser *self, int32_t position);

/* 1 when the input read so far is a sentence of the grammar. */
int hf_parser_accepts(const HfParser *self);

/* Decides whether the input read, followed by a word of the junction J and then by a word of
 * `right` (from the state the junction's exit enters to a final state of R), can be a
 * sentence.  J has states 0..n_junction-1; state 0 is the parser's position.  `edges` are
 * n_edges quadruples (from, label, to, weight) with from < to (J is acyclic, numbered in
 * order), label a terminal or -1 (ε), weight ignored; `exits` are n_exits triples
 * (from, label, r): from J state `from`, the terminal `label` (or nothing, -1) leads into
 * state r of R.  Returns HF_YES / HF_NO, HF_UNKNOWN when `limits` (as for hf_parser_push)
 * ran out or R is incomplete, HF_ERROR for bad input (hf_parser_last_error).  The parser is
 * left at its position. */
HfVerdict hf_parser_query(HfParser *self, const HfRight *right, int32_t n_junction,
                          const int32_t *edges, size_t n_edges, const int32_t *exits,
                          size_t n_exits, const HfLimits *limits);

/* Drops what the parser derived for `right` (its tables are keyed by the context's address
 * and version).  Call it before hf_right_delete for every context the parser queried: a
 * context allocated later at the same address, with the same version, would otherwise be
 * answered from the deleted one's tables. */
void hf_parser_forget(HfParser *self, const HfRight *right);

/* Message of the last HF_ERROR ("" otherwise), owned by the parser. */
const char *hf_parser_last_error(const HfParser *self);

/* ---------------------------------------------------------------------------------------
 * Maximal munch of fixed text (the reference reading D of holefill.lexing.relex).
 * ------------------------------------------------------------------------------------- */

/* A lexer DFA over character classes, borrowed from the caller: `trans` holds n_states rows
 * of n_classes next states (-1: dead); accept[s] is the terminal s accepts or -1; alive[s]
 * is 1 when some accepting state is reachable from s; error_label[t] (t < n_labels) is 1
 * for terminals that stand for a lexing error. */
typedef struct HfLexTables {
    const int32_t *trans;
    int32_t n_states;
    int32_t n_classes;
    const int32_t *accept;
    const uint8_t *alive;
    int32_t start;
    const uint8_t *error_label;
    int32_t n_labels;
} HfLexTables;

/* Reads lexemes by maximal munch from position `from` of a text of `text_len` characters,
 * whose character classes are known for positions base .. base+n_known-1 (`classes`).
 * Per lexeme it writes its start, end, label and scan (the position where its DFA run
 * stopped: the dead character, or the text's end); a character no lexeme starts with, or a
 * lexeme labelled an error terminal, is an error lexeme of one character, label -1.
 * It stops at the end of the text; before a lexeme whose run reached the end of the known
 * classes while the text goes on (the caller computes more and calls again from *resume);
 * and, when sync_from >= 0, at a position i >= sync_from where an old reading had a lexeme
 * start at i - delta (old_starts: n_old sorted positions): *synced is then its index in
 * old_starts, else -1.  Output arrays must hold base + n_known - from entries.  Returns the
 * number of lexemes written, -1 for bad arguments. */
int64_t hf_munch(const HfLexTables *dfa, const int32_t *classes, int64_t base, int64_t n_known,
                 int64_t text_len, int64_t from, int64_t sync_from, int64_t delta,
                 const int64_t *old_starts, int64_t n_old, int64_t *starts, int64_t *ends,
                 int32_t *labels, int64_t *scans, int64_t *resume, int64_t *synced);

/* ---------------------------------------------------------------------------------------
 * Python layout product: a raw lexeme NFA (lexemes with holes) times CPython's layout
 * rules (NEWLINE / INDENT / DEDENT, brackets), grown entry by entry.  A transliteration of
 * holefill.lexing.python_layout.PythonLayoutLexer.extend: same states, same edges in the
 * same order.  The text stays in Python, which hands over per raw edge the numbers the
 * rules read (HF_LAYOUT_FACT_FIELDS).
 * ------------------------------------------------------------------------------------- */

typedef struct HfLayout HfLayout;

enum HfLayoutConsts {
  /* config: nl, newline, indent, dedent, line_cont, ws, comment terminal ids, the strict
   * indentation unit (0: none), the bracket-guess weight, the weight of a layout token
   * (NEWLINE, INDENT, DEDENT, a blank line) a hole holds */
  HF_LAYOUT_CONFIG_FIELDS = 10,
  /* per raw edge of a line break, blank or line continuation, its text facts: the edge,
   * same_chunk (a.chunk == b.chunk), ws_blank (packed indent width of a blank's text within a
   * chunk), nl_same (indent width of a line break's text after its breaks, within a chunk),
   * nl_carried (_nl_break_width of the rest of a's chunk, or 0), nl_least_b (blank_spec
   * of b's chunk before b, a reach spec), nl_break_b (_nl_break_width of that, -1 for None), cont_ws (1
   * when b's chunk goes on with a blank after b); 0 where not read */
  HF_LAYOUT_FACT_FIELDS = 8,
  /* a layout key: [0, depth, -, line, pending, cont, comment, fixed, least, text_top] or
   * an open hole [1, -, cut, free, bol, carried, 0, 0, 0, 0]; "-" is the stack's slot,
   * whose contents follow the record */
  HF_LAYOUT_KEY_FIELDS = 10,
  HF_LAYOUT_DEDENT_STAR = -10, /* layout items: any number of DEDENTs */
  HF_LAYOUT_DEDENT_PLUS = -11  /* at least one */
};

/* A session with no raw graph yet.  bracket[t]: 1 opener, -1 closer, 0 other, for the
 * n_terminals terminals; same_line: n_same_line (terminal, weight) pairs, the tokens a hole
 * holds on one line; lead / blank_first: per chunk (PythonLayoutLexer.product_session).
 * NULL on bad input or out of memory. */
HfLayout *hf_layout_new(const int32_t *config, int32_t n_config, const int32_t *bracket,
                        int32_t n_terminals, const int32_t *same_line, int32_t n_same_line,
                        const int32_t *lead, const int32_t *blank_first, int32_t n_chunks);
void hf_layout_delete(HfLayout *self);

/* Takes the raw graph's current snapshot: per raw state (n_raw) its hole index or -1, a
 * final flag, and the brackets the text after it can close (-1: none known); the edges
 * added since the last call (n_new_edges quadruples, kinds, terms) and the text facts of
 * those that need them (n_facts records of HF_LAYOUT_FACT_FIELDS).  0, or -1 on bad input
 * (the session is then unusable) or out of memory. */
int hf_layout_raw(HfLayout *self, int32_t n_raw, const int32_t *hole, const int32_t *final,
                  const int32_t *ahead, int32_t n_new_edges, const int32_t *quads,
                  const int32_t *kinds, const int32_t *terms, int32_t n_facts,
                  const int32_t *facts);

/* The id of a layout key (HF_LAYOUT_KEY_FIELDS ints, then the stack), or -1. */
int32_t hf_layout_key(HfLayout *self, const int32_t *fields, int32_t n_fields);
/* Writes key's fields (stack slot as given, stack after) when cap allows; returns their
 * count, -1 for an unknown key. */
int32_t hf_layout_key_fields(const HfLayout *self, int32_t key, int32_t *out, int32_t cap);

/* Grows the product from n_entries (raw state, key) pairs; writes their product states
 * (DEAD ones left out) to starts (room for n_entries) and returns how many.  budget_left:
 * edges it may add (< 0: no limit); cancel (may be NULL) is polled every few thousand
 * edges with cancel_ctx.  -1: the budget ran out, -2: out of memory, -3: bad input or an
 * unusable session, -4: cancelled; after any of them the session is unusable. */
int32_t hf_layout_extend(HfLayout *self, const int32_t *entries, int32_t n_entries,
                         int64_t budget_left, HfCancelFn cancel, void *cancel_ctx,
                         int32_t *starts);

/* Steps the last extend spent (one per edge added). */
int64_t hf_layout_spent(const HfLayout *self);
int32_t hf_layout_n_states(const HfLayout *self);
int32_t hf_layout_final(const HfLayout *self);
size_t hf_layout_n_edges(const HfLayout *self);
/* The product, owned by the session (valid until the next extend): quadruples, then per
 * edge its kind, terminal, raw edge (-1: none) and hole (-1: not a hole token). */
const int32_t *hf_layout_edges(const HfLayout *self);
const int32_t *hf_layout_kinds(const HfLayout *self);
const int32_t *hf_layout_terms(const HfLayout *self);
const int32_t *hf_layout_raw_edges(const HfLayout *self);
const int32_t *hf_layout_holes(const HfLayout *self);
/* Per product state: its raw state and key (-1 for states between layout tokens). */
const int32_t *hf_layout_state_raw(const HfLayout *self);
const int32_t *hf_layout_state_key(const HfLayout *self);
/* The indentation steps between lines of fixed text the last extend saw (strict mode's
 * evidence): writes up to cap, returns how many. */
int32_t hf_layout_steps(const HfLayout *self, int32_t *out, int32_t cap);

/* ---------------------------------------------------------------------------------------
 * The hole lexer's raw graph (holefill.lexing.holes, native/hf_lexer.c).
 *
 * The lexeme NFA of a text with holes, built exactly as holefill.lexing.holes.RawGraph
 * builds it (same states in the same order, same edges in the same order): the Python
 * module computes the character classes and the anchors and reads the arrays back.
 * A place is five int32 (chunk, pos, hole, kill, flag), -1 for absent fields.
 *
 * Threads: an HfLexer may be shared by graphs on any number of threads (its caches are
 * guarded by a mutex); an HfRawGraph is used by one thread at a time and must not
 * outlive its lexer.
 * ------------------------------------------------------------------------------------- */

typedef struct HfLexer HfLexer;
typedef struct HfRawGraph HfRawGraph;

/* Results of hf_raw_start / hf_raw_expand. */
enum { HF_LEX_OK = 0, HF_LEX_BUDGET = 1, HF_LEX_NOMEM = 2, HF_LEX_BAD_PLACE = 3,
       HF_LEX_CANCELLED = 4 };

/* The lexer DFA (holefill.grammar.tables.LexerDFA) and what the graph needs per terminal.
 * trans: n_states * n_classes (-1 dead); alive: n_states * n_terms bytes (1 when the
 * terminal is in alive[s]); weight: 2 * n_terms, HoleLexer.weight then
 * HoleLexer.fixed_weight; hole_terms: HoleLexer.hole_terminals;
 * anywhere: HoleLexer.anywhere, ascending.  Copies everything; NULL when out of memory. */
HfLexer *hf_lexer_new(int32_t n_states, int32_t n_classes, int32_t n_terms, int32_t start,
                      const int32_t *trans, const int32_t *accept, const uint8_t *killable,
                      const uint8_t *alive, const int32_t *weight, const uint8_t *ignored,
                      const uint8_t *comment_like, const int32_t *hole_terms,
                      int32_t n_hole_terms, const int32_t *anywhere, int32_t n_anywhere);
void hf_lexer_delete(HfLexer *self);

/* A graph over n_chunks chunks: lengths per chunk, the classes of all chunks one after the
 * other, and the anchor sites as 7 int32 each (chunk, base, length, alpha_s, alpha_c,
 * passes, rho; -1 for None).  Nothing is built until hf_raw_start. */
HfRawGraph *hf_raw_new(HfLexer *lexer, int32_t n_chunks, const int32_t *lengths,
                       const int32_t *classes, int32_t n_sites, const int32_t *sites);
void hf_raw_delete(HfRawGraph *self);

/* What RawGraph.__init__ builds: the holes, the runs from them, the lexemes from every
 * chunk start after the first.  budget_left: the steps the caller's budget has left
 * (INT64_MAX: none); *spent: the steps spent (per new edge and per step of a set run).
 * HF_LEX_BUDGET when spent exceeded budget_left, HF_LEX_CANCELLED when `cancel` (may be
 * NULL; polled every few thousand steps with cancel_ctx) returned non-zero: the graph is
 * then partial. */
int hf_raw_start(HfRawGraph *self, int64_t budget_left, HfCancelFn cancel, void *cancel_ctx,
                 int64_t *spent);

/* RawGraph.expand of n places (5 int32 each), budget and cancel as for hf_raw_start.
 * HF_LEX_BAD_PLACE (nothing done) when a place outside the holes is not in a chunk of the
 * text (chunk, pos >= 0, kill a DFA state or -1). */
int hf_raw_expand(HfRawGraph *self, const int32_t *places, int32_t n, int64_t budget_left,
                  HfCancelFn cancel, void *cancel_ctx, int64_t *spent);

/* The state of a place, or -1 when it has none; whether a state was expanded. */
int32_t hf_raw_find(const HfRawGraph *self, const int32_t *place);
int hf_raw_is_done(const HfRawGraph *self, int32_t state);

/* _Builder.state: the state of a place, numbered now when it has none (-1: out of memory). */
int32_t hf_raw_state(HfRawGraph *self, const int32_t *place);

/* The graph so far: states (places, 5 int32 each, numbered in the order first met), edges
 * (quadruples from, label, to, weight; an edge's span is the places of its two states),
 * their kinds and terms, the hole states, and the finals from state from_state on
 * (ascending; out may be NULL to count them).  Pointers stay valid until the next start /
 * expand. */
int32_t hf_raw_n_states(const HfRawGraph *self);
int32_t hf_raw_n_edges(const HfRawGraph *self);
const int32_t *hf_raw_edges(const HfRawGraph *self);
const int32_t *hf_raw_kinds(const HfRawGraph *self);
const int32_t *hf_raw_terms(const HfRawGraph *self);
const int32_t *hf_raw_places(const HfRawGraph *self);
int32_t hf_raw_n_holes(const HfRawGraph *self);
const int32_t *hf_raw_hole_states(const HfRawGraph *self);
int32_t hf_raw_finals(const HfRawGraph *self, int32_t from_state, int32_t *out);

#endif /* HOLEFILL_H */
