"""Segments of C and C++ texts: where fixed text between two holes ends one top-level
declaration and starts the next, the text before and the text after are checked apart.

Without segments one brace window (holefill.check.window_brace) spans every hole: with three
holes spread through a 10,000-line file, preparing the request took 4.7 s and the first check
fell back to the classic check (docs/notes/i14b.md). holefill.check.segments splits the text
at the cuts found here, as it does for Python's top-level definitions, and each segment gets
its own window and engine.

The cut
-------
A *cut* is a position p in a chunk c_j that lies between two holes (1 <= j <= n-1) with:

(a) a site for c_j (holefill.lexing.anchors) with anchor points, whose D lexeme does not pass
    through c_j, and p after both points;
(b) p a line start after a line break of c_j that no backslash continues, and c_j[p] a letter
    or `_` (the line starts at column 0 with code: no blank, directive or comment);
(c) both reference readings of c_j (maximal munch from alpha_s and from alpha_c) reach p at a
    lexeme boundary without an error character, and the DFA run of every lexeme before p
    dies at p at the latest (reading c_j[p] kills the whitespace before it);
(d) a guard G for the text before p followed by c_j[p] (holefill.lexing.guard: a block
    comment holding a terminator for each lexeme a filling may have left open);
(e) (for completeness only, see below) in the document with its holes empty (tree-sitter reads
    it without the part of each hole's line before the hole: `proposal_text`), tree-sitter-cpp
    starts a top-level node on p's line, and our grammar accepts that node's text on its own
    (or, when hole j lies in it, the fixed text from p to the hole as the start of a
    program); our lexer's reading of that document is at p at depth 0 of brackets and of
    conditional groups (the halves of `#ifdef __cplusplus extern "C" {` included), right
    after a `;`, a `}` or a directive line, counted forwards from hole j-1 (a closer without
    an opener closes one from before the hole: the depth stays 0) and backwards from the end
    of the document (an opener without a closer after it is closed in a hole).
    Backwards, the brackets of a hole's own declaration do not count: when the chunk before
    hole k holds a head (a line start where tree-sitter starts a top-level node with code
    at column 0) that passes the forward count, the last such head q starts the declaration
    that hole k lies in, and its brackets up to the closer that ends it are left out: the
    closer of the last bracket open at the hole (counted from q; a closer of another kind
    closes one the hole opened, and so does one of the outermost bracket's kind with more
    of the body after it, unless no later one has a line at column 0 after it), or, with
    none open there, the deepest closer before the next head (what the hole opened). A span
    that removed `f(int a) {` or a loop's `{` leaves a `}` without its opener after it;
    counted, it would put every line before the hole inside a bracket, and the text would
    not be cut anywhere before it (three holes in a 10,000-line file then shared one
    segment).

The first such p of each chunk cuts the text: segment A is the text up to p followed by G,
segment B the text from p on (its first chunk, like a document's, has no site; c_j's site in A
ends at p).

Soundness: if A, filled with y, with its guard, and B filled with y are valid (our grammar,
anchored), the document filled with y is valid.

1. Lexemes. A's check has a lexeme boundary at an anchor point of c_j (its site). From there
   maximal munch reads c_j's reference reading, whose lexemes before p are the same in A, in
   A + G and in the document, since their runs have died by p (c). A lexeme that began before
   that point (in a filling) and whose run is still alive at p would go on into the
   document's B; in A + G it accepts inside G instead (d) and covers both anchor points,
   which c_j's site refuses. So no lexeme of A crosses p, G is one ignored lexeme, and the
   document's maximal munch, which meets the same text up to p, has A's lexemes before p and
   a boundary at p. From p on it has B's: the same text, and B's first lexeme starts with a
   letter, so it is none of the lexemes that only a file's start allows (PP_FIRST and its
   kind start with `#`) nor the lead of a directive. The sites: c_j's rule concerns positions
   before p, which A's check enforces (no lexeme passes through c_j, as none crosses p); B's
   sites are the document's for the later chunks.
2. Parse. A's lexemes derive `start`, and so do B's; B starts with a code lexeme, so its
   derivation is the alternative `[PP_FIRST] _top*` without PP_FIRST, a run of `_top`. Every
   alternative of `start` ends with `_top*` (grammars/cpp.lark, grammars/c.lark), so A's
   lexemes followed by B's derive `start`: fact 2 of holefill.check.window_brace, for a B
   that starts with code.

What is lost (a cut refuses a filling the document allows): the document filled with y is
valid but its parse does not put p between two top-level declarations, i.e. y pairs brackets
or conditional groups across the cut (`namespace a {` typed into one hole and its `}` into
the next, around the fixed declarations), or y leaves a lexeme open across it (a comment
opened in one hole and closed in fixed text after p, which the document's anchors refuse as
well). The user's own text, filled with what was removed, puts p between top-level
declarations whenever (e) reads it right: the fixed text alone balances its brackets up to p
and tree-sitter starts a declaration there; it reads it wrong only when the removed texts
themselves open a bracket in one hole that another closes, or when a removed text closes
a bracket or group that the fixed text opened before an earlier hole (the forward count
starts again at every hole), or the declaration (e) reads around a hole is not the one the
removed text belongs to. On 600 random cuts of the C/C++ corpus with 2 and 3 holes, 337 are
split (747 segments) and the real middles are refused in 3, each a removed text that closes
a namespace or include guard opened before the first hole (208 split and the same 3 refused
before the hole's own declaration was left out of the backward count, 298 before a closer
with more of the body after it counted as the hole's, 315 with tree-sitter reading the
holes' lines). Decoding then stays valid, but
each hole must close what it opens within its segment. When every filling keeps p between
top-level declarations, A's and B's checks answer what the document's would: the document's
lexing has its boundary at p (c), and the declarations before p and after it parse alone.

Costs: one tree-sitter parse and one maximal munch of the document (holes empty), a few
lexemes per candidate and a guard per cut (a few milliseconds): 0.1 s at 10,000 lines.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence

import numpy as np

from holefill.check.window_brace import (
    ACCEPT_CACHE_SIZE,
    _accepts,
    _clean_line_start,
    _piece_starts,
    document_source,
)
from holefill.lexing.anchors import ReferenceLexer, Site
from holefill.lexing.guard import guard
from holefill.lexing.relex import Reading, code_points

# The digraphs `<%` `%>` `<:` `:>` count as the brackets they spell.
_DEPTH = {'"{"': 1, '"("': 1, '"["': 1, '"[["': 2, '"}"': -1, '")"': -1, '"]"': -1,
          '"<%"': 1, '"<:"': 1, '"%>"': -1, '":>"': -1}
_GROUP = {"PP_IF": 1, "PP_IF_FIRST": 1, "PP_EXTERN_C": 1, "PP_EXTERN_C_FIRST": 1,
          "PP_ENDIF": -1, "PP_EXTERN_C_END": -1}
_BRACKET = {'"("': 1, '"["': 2, '"[["': 2, '"{"': 3, '")"': -1, '"]"': -2, '"}"': -3,
            '"<:"': 2, '"<%"': 3, '":>"': -2, '"%>"': -3}
_ENDS = frozenset({'";"', '"}"', '"%>"'})


def brace_cuts(language: str, ref: ReferenceLexer, chunks: Sequence[str],
               sites: Sequence[Site]) -> dict[int, tuple[int, str]]:
    """The cut of each chunk between two holes that has one: chunk -> (p, guard)."""
    by_chunk = {s.chunk: s for s in sites}
    offsets = [0]
    for c in chunks[:-1]:
        offsets.append(offsets[-1] + len(c))
    text = "".join(chunks)
    stop = offsets[-1]  # candidates lie before the last hole
    starts = [*_proposed_piece_starts(language, ref, chunks, offsets), len(text)]
    heads = [(b, e) for b, e in zip(starts, starts[1:], strict=False)
             if _column0_code(text, b)]
    tops = [(b, e) for b, e in heads if b < stop]
    top_level = _top_level(ref, text, {b for b, _ in heads}, offsets[1:])
    out: dict[int, tuple[int, str]] = {}
    for j in range(1, len(chunks) - 1):
        site = by_chunk.get(j)
        if site is None or site.passes or site.base or not site.points:
            continue
        lo, hi = offsets[j] + max(site.points), offsets[j] + len(chunks[j])
        for b, e in tops:
            if not (lo < b < hi and b in top_level):
                continue
            got = cut_at(ref, chunks[j], site, b - offsets[j])
            if got is not None and (_accepts(language, text[b:e]) if e <= hi
                                    else _begins_program(language, text[b:hi])):
                out[j] = (b - offsets[j], got)
                break
    return out


def _proposed_piece_starts(language: str, ref: ReferenceLexer, chunks: Sequence[str],
                           offsets: Sequence[int]) -> list[int]:
    """The piece starts of the document (tree-sitter's proposals, condition e), read off a
    parse of the document without the part of each hole's line before the hole
    (`proposal_text`), mapped back to the document. Typing into a hole changes only that
    part until a line break is typed, so the parse is the remembered one; a parse of the
    whole document re-read everything after the cursor once the typed text left a bracket
    open (17 ms at 10,000 lines)."""
    proposal, kept = proposal_text(chunks, ref.reading("".join(chunks)))
    t_starts = [t for t, _, _ in kept]
    text_end = offsets[-1] + len(chunks[-1])
    out: list[int] = []
    for b in _piece_starts(document_source(language, proposal)):
        i = bisect.bisect_right(t_starts, b) - 1
        t, j, _ = kept[i]
        at = offsets[j] + (b - t)
        if at == 0 or (at < text_end and _clean_line_start_in(chunks, offsets, at)):
            out.append(at)
    # a hole's line left out, when it starts with code at column 0, is proposed as a parse
    # of the document would: a declaration may start there
    for _, j, keep in kept:
        if keep < len(chunks[j]) and _column0_code(chunks[j], keep) \
                and _clean_line_start_in(chunks, offsets, offsets[j] + keep):
            out.append(offsets[j] + keep)
    return sorted(set(out))


def proposal_text(chunks: Sequence[str], reading: Reading
                  ) -> tuple[str, list[tuple[int, int, int]]]:
    """The document for tree-sitter's proposals, and (start in that text, chunk, kept
    length) per chunk: a chunk before a hole ends at its last line start when the document's
    reading (holes empty) has a lexeme boundary (or blanks) there and the hole is a
    boundary or lies in a word of its line (the part of the hole's line before the hole,
    which typing changes, is left out; inside a comment or a string that runs through the
    hole it stays); the last chunk whole."""
    parts, kept, at, start = [], [], 0, 0
    for j, chunk in enumerate(chunks):
        keep = len(chunk)
        line = chunk.rfind("\n") + 1
        if j < len(chunks) - 1 and line > 0 and _free_line_start(reading, start + line) \
                and _line_lexeme_at(reading, start + line, start + len(chunk)):
            keep = line
        kept.append((at, j, keep))
        parts.append(chunk[:keep])
        at += keep
        start += len(chunk)
    return "".join(parts), kept


def _free_line_start(reading: Reading, line: int) -> bool:
    """A lexeme boundary at the line start `line`, or blanks around it (a line break and
    the indentation after it read as one lexeme)."""
    k = reading.covering(line)
    if k is None or int(reading.starts[k]) == line:
        return True
    return not reading.text[int(reading.starts[k]): int(reading.ends[k])].strip()


def _line_lexeme_at(reading: Reading, line: int, hole: int) -> bool:
    """The hole is a lexeme boundary, or lies in a word of its line (a name or a number
    being typed): no comment or string runs through it, whose rest the proposal text would
    read as code."""
    k = reading.covering(hole)
    if k is None or int(reading.starts[k]) == hole:
        return True
    a, b = int(reading.starts[k]), int(reading.ends[k])
    return a >= line and _WORD.fullmatch(reading.text, a, b) is not None


_WORD = re.compile(r"\w+")


def _clean_line_start_in(chunks: Sequence[str], offsets: Sequence[int], at: int) -> bool:
    """`_clean_line_start` at document position `at` (a hole before it: not a line start)."""
    j = bisect.bisect_right(offsets, at) - 1
    pos = at - offsets[j]
    return pos > 0 and _clean_line_start(chunks[j], pos)


@functools.lru_cache(maxsize=ACCEPT_CACHE_SIZE)
def _begins_program(language: str, text: str) -> bool:
    """Our grammar accepts `text` followed by a hole as a whole program (UNKNOWN: no)."""
    from holefill.check.checker import Checker, Verdict

    return Checker.for_language(language).completable([text, ""],
                                                      anchored=False) is Verdict.YES


def cut_at(ref: ReferenceLexer, chunk: str, site: Site, p: int) -> str | None:
    """The guard of a cut at p in `chunk` when conditions (a)-(d) of the module docstring
    hold there, else None."""
    if not (site.points and max(site.points) < p < len(chunk)) or site.passes or site.base:
        return None
    if not _column0_code(chunk, p):
        return None
    cls = _classes(ref, chunk)
    if not all(_reads_to(ref, cls, start, p) for start in site.points):
        return None
    return guard(ref, chunk[:p], chunk[p:])


@functools.lru_cache(maxsize=4)
def _classes(ref: ReferenceLexer, chunk: str) -> list[int]:
    """The character classes of a chunk between holes, remembered: each candidate of the
    chunk reads them, and typing into another hole leaves the chunk as it was."""
    return ref.classes(chunk)


def _column0_code(text: str, p: int) -> bool:
    return (0 < p < len(text) and (text[p].isalpha() or text[p] == "_")
            and text[p].isascii() and _clean_line_start(text, p))


def _reads_to(ref: ReferenceLexer, cls: Sequence[int], start: int, p: int) -> bool:
    """Maximal munch from `start` reaches p at a lexeme boundary without an error character,
    and every run on the way dies by p."""
    dfa, n, i = ref.dfa, len(cls), start
    while i < p:
        end, lab, ran = dfa.munch(cls, i, n)
        if end < 0 or lab in ref.error_terms or end > p or ran > p:
            return False
        i = end
    return i == p


def _top_level(ref: ReferenceLexer, text: str, wanted: set[int],
               holes: Sequence[int]) -> set[int]:
    """The positions of `wanted` (the declaration heads) where the reading of `text`
    (condition e) is at bracket depth 0 outside conditional groups, right after a `;`, a `}`
    or a directive line: counted forwards from the last hole before it (a closer without an
    opener since then closes one from before the hole) and backwards from the end of the
    text (an opener without a closer after it is closed in a hole), the brackets of each
    hole's own declaration left out (`_declared_holes`). The counts are running sums held
    at 0 from below, taken with numpy over the whole reading (a 10,000-line file has
    100,000 lexemes)."""
    if not wanted:
        return set()
    depth_of, group_of, ends_at = _label_tables(ref)
    reading = ref.reading(text)
    labels = reading.labels
    keep = labels >= 0
    keep[keep] = ~_ignored_table(ref)[labels[keep]]
    starts, labels = reading.starts[keep], labels[keep]
    depth, group = depth_of[labels], group_of[labels]
    # forwards: counted again from each hole (what a hole holds is unknown)
    seg = np.searchsorted(np.asarray(holes, dtype=np.int64), starts, side="right")
    bounds = np.flatnonzero(np.diff(seg)) + 1
    before_d, before_g = np.zeros(len(starts), np.int64), np.zeros(len(starts), np.int64)
    for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), len(starts)], strict=True):
        before_d[lo + 1:hi] = _held_at_zero(depth[lo:hi - 1])
        before_g[lo + 1:hi] = _held_at_zero(group[lo:hi - 1])
    after_end = np.zeros(len(starts), bool)
    after_end[1:] = ends_at[labels[:-1]]
    asked = np.isin(starts, np.fromiter(wanted, np.int64, len(wanted)))
    forward = asked & (before_d == 0) & (before_g == 0) & after_end
    # backwards from the end of the text, the lexeme itself counted; the brackets from a hole
    # to the next declaration are the hole's declaration's, when a declaration starts in the
    # chunk before the hole
    back_steps = depth.copy()
    heads = np.sort(np.fromiter(wanted, np.int64))
    brackets = _bracket_table(ref)[labels]
    settles = _settling(text, starts, labels, ref)
    for lo, hi in _declared_holes(starts, depth, brackets, starts[forward], heads, holes,
                                  len(text), settles):
        back_steps[(starts >= lo) & (starts < hi)] = 0
    back_d = _held_at_zero(-back_steps[::-1])[::-1]
    back_g = _held_at_zero(-group[::-1])[::-1]
    return set(starts[forward & (back_d == 0) & (back_g == 0)].tolist())


def _declared_holes(starts: np.ndarray, depth: np.ndarray, brackets: np.ndarray,
                    declared: np.ndarray, heads: np.ndarray, holes: Sequence[int],
                    n: int, settles: np.ndarray | None = None) -> list[tuple[int, int]]:
    """(q, end) for each hole h whose chunk before it holds one of `declared`, q the last of
    them: the declaration that q starts and h lies in, read from the brackets around h
    (`settles`: see _declaration_end)."""
    out, lo = [], 0
    for h in holes:
        inside = declared[(declared >= lo) & (declared < h)]
        lo = h
        if not len(inside):
            continue
        q = int(inside.max())
        k = int(np.searchsorted(heads, h, side="right"))
        end = int(heads[k]) if k < len(heads) else n
        a, b, c = (int(i) for i in np.searchsorted(starts, [q, h, end]))
        at = _declaration_end(depth[a:c], brackets[a:c], b - a,
                              None if settles is None else settles[a:c])
        out.append((q, int(starts[b + at]) + 1 if at is not None else end))
    return out


def _declaration_end(depth: np.ndarray, kinds: np.ndarray, h: int,
                     settles: np.ndarray | None = None) -> int | None:
    """The index, counted from the hole h, of the closer that ends the declaration the hole
    lies in (`depth` and bracket `kinds` of the lexemes from the declaration's start to the
    next head, the hole before lexeme h): the closer of the last bracket still open at the
    hole, a closer of another kind counting as closing one the hole opened; with none open
    at the hole, the deepest closer (what the hole opened). None when there is none.

    `settles` (per lexeme; None: all) marks closers after which the declaration may end: the
    next line of code starts at column 0 (a `;` may come first). A closer of the outermost
    bracket that does not settle (`    }` with more of the body after it) is taken as
    closing one the hole opened (a span that removed `for (...) {`), and the next one that
    settles as the end; if none settles, the first such closer is."""
    held = _open_brackets(depth[:h], kinds[:h])
    if not held:
        count = np.cumsum(depth[h:])
        if not len(count) or count.min() >= 0:
            return None
        return int(np.flatnonzero(count == count.min())[0])
    own: list[int] = []  # opened after the hole
    first: int | None = None
    for i, (step, kind) in enumerate(zip(depth[h:].tolist(), kinds[h:].tolist(), strict=True)):
        if kind > 0:
            own.extend([kind] * step)
        elif kind < 0:
            if own and own[-1] == -kind:
                own.pop()
            elif not own and held[-1] == -kind:
                if len(held) == 1:
                    first = i if first is None else first
                    if settles is None or settles[h + i]:
                        return i
                    continue  # it closes what the hole opened
                held.pop()
    return first


def _settling(text: str, starts: np.ndarray, labels: np.ndarray,
              ref: ReferenceLexer) -> np.ndarray:
    """Per lexeme of code (`starts`, `labels`): whether the next one begins a line at
    column 0 (or begins with the line break before it), or is a `;` after which the next
    one does (or the text ends)."""
    if not len(starts):
        return np.zeros(0, bool)
    codes = code_points(text)
    column0 = np.zeros(len(starts), bool)
    column0[starts == 0] = True
    inner = starts > 0
    column0[inner] = codes[starts[inner] - 1] == ord("\n")
    column0 |= codes[starts] == ord("\n")  # a directive's lexeme takes its line break
    next0 = np.append(column0[1:], True)  # the text's end settles too
    semi = np.append(labels[1:] == _semicolon(ref), False)
    after_semi = np.append(next0[1:], True)
    return next0 | (semi & after_semi)


@functools.lru_cache(maxsize=8)
def _semicolon(ref: ReferenceLexer) -> int:
    return ref.names.index('";"') if '";"' in ref.names else -1


def _open_brackets(depth: np.ndarray, kinds: np.ndarray) -> list[int]:
    """The brackets left open by lexemes of these depth steps and bracket kinds (1 `(`,
    2 `[`, 3 `{`, a closer the negative; `[[` opens two), a closer without its opener
    ignored."""
    stack: list[int] = []
    for step, kind in zip(depth.tolist(), kinds.tolist(), strict=True):
        if kind > 0:
            stack.extend([kind] * step)
        elif kind < 0 and stack and stack[-1] == -kind:
            stack.pop()
    return stack


@functools.lru_cache(maxsize=8)
def _bracket_table(ref: ReferenceLexer) -> np.ndarray:
    """Per terminal: its bracket kind (see _open_brackets), 0 for none."""
    return np.array([_BRACKET.get(n, 0) for n in ref.names], np.int64)


def _held_at_zero(steps: np.ndarray) -> np.ndarray:
    """x[i] = max(0, x[i-1] + steps[i]) from x[-1] = 0, for every i: the running sum minus
    its lowest point so far when that is below 0."""
    if not len(steps):
        return np.zeros(0, np.int64)
    total = np.cumsum(steps, dtype=np.int64)
    return total - np.minimum(np.minimum.accumulate(total), 0)


@functools.lru_cache(maxsize=8)
def _label_tables(ref: ReferenceLexer) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per terminal: its bracket and conditional-group steps, and whether a top-level
    declaration may start after it (a `;`, a `}` or a directive line)."""
    names = ref.names
    depth = np.array([_DEPTH.get(n, 0) for n in names], np.int64)
    group = np.array([_GROUP.get(n, 0) for n in names], np.int64)
    ends = np.array([n in _ENDS or n.startswith("PP_") for n in names], bool)
    return depth, group, ends


@functools.lru_cache(maxsize=8)
def _ignored_table(ref: ReferenceLexer) -> np.ndarray:
    """Per terminal: blank or comment-like (not counted)."""
    return np.array([i in ref.blank or i in ref.comment_like for i in range(len(ref.names))],
                    bool)
