/*
 * hf_munch.c -- maximal munch of fixed text (hf_munch in holefill.h).
 *
 * The reference reading D of a document (holefill.lexing.relex, holefill.lexing.anchors) is
 * maximal munch from the first character with one-character error recovery.  In Python it
 * cost tens of milliseconds per 10,000 lines for every cold request; this is the same loop
 * over int32 tables.  The Python reader stays the reference (tests/lexing/test_relex.py).
 */
#include "holefill.h"

/* One maximal-munch run from i: returns where the run stopped, the last accept in *end and
 * *label (-1 when none). */
static int64_t run_from(const HfLexTables *dfa, const int32_t *classes, int64_t base, int64_t hi,
                        int64_t i, int64_t *end, int32_t *label)
{
    int32_t s = dfa->start;
    int64_t j = i;
    *end = -1;
    *label = -1;
    while (j < hi) {
        int32_t c = classes[j - base];
        if (c < 0 || c >= dfa->n_classes)
            break; /* guarded by hf_munch's checks; never taken for valid classes */
        s = dfa->trans[(int64_t)s * dfa->n_classes + c];
        if (s < 0 || !dfa->alive[s])
            break;
        j++;
        if (dfa->accept[s] >= 0) {
            *end = j;
            *label = dfa->accept[s];
        }
    }
    return j;
}

/* Whether an old lexeme started at i - delta (old_starts sorted; *k only moves forward). */
static int in_step(const int64_t *old_starts, int64_t n_old, int64_t *k, int64_t want)
{
    while (*k < n_old && old_starts[*k] < want)
        (*k)++;
    return *k < n_old && old_starts[*k] == want;
}

static int is_error(const HfLexTables *dfa, int32_t label)
{
    return label < 0 || (label < dfa->n_labels && dfa->error_label[label]);
}

int64_t hf_munch(const HfLexTables *dfa, const int32_t *classes, int64_t base, int64_t n_known,
                 int64_t text_len, int64_t from, int64_t sync_from, int64_t delta,
                 const int64_t *old_starts, int64_t n_old, int64_t *starts, int64_t *ends,
                 int32_t *labels, int64_t *scans, int64_t *resume, int64_t *synced)
{
    if (!dfa || !resume || !synced || n_known < 0 || from < base || base + n_known > text_len
        || dfa->start < 0 || dfa->start >= dfa->n_states || (n_old > 0 && !old_starts))
        return -1;
    int64_t hi = base + n_known, i = from, count = 0, k = 0;
    *synced = -1;
    while (i < hi) {
        if (sync_from >= 0 && i >= sync_from && in_step(old_starts, n_old, &k, i - delta)) {
            *synced = k;
            break;
        }
        int64_t end;
        int32_t label;
        int64_t scan = run_from(dfa, classes, base, hi, i, &end, &label);
        if (scan == hi && hi < text_len)
            break; /* the run needs classes past the known ones */
        starts[count] = i;
        scans[count] = scan;
        if (end < 0 || is_error(dfa, label)) {
            ends[count] = i + 1;
            labels[count] = -1;
        } else {
            ends[count] = end;
            labels[count] = label;
        }
        i = ends[count++];
    }
    *resume = i;
    return count;
}
