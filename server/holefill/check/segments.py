"""Segments: the independent parts of a text with several holes (Python here; C and C++
cuts are found by holefill.check.segments_brace, with their own argument, and split here).

A check of a text with holes in three functions of a 1,000-line file looks at everything
between the first hole and the last, and its right context (the text after the hole being
filled, later holes included) grows with the distance between the holes: the incremental
engine's closure of that right context took seconds (DESIGN.md §3). Most of that text does not
matter for the hole being filled: a fixed line at column 0 that starts with `def` or `class`
between two holes starts a new top-level statement in every valid filling, so what comes
before it and what comes after it are checked apart.

The cut
-------
A *cut* is a line start p in the fixed text strictly between two holes (a chunk c_j,
1 <= j <= n-1) where

- p lies after the anchor points of c_j (holefill.lexing.anchors: alpha_s, alpha_c), in a
  chunk that the D lexeme of the hole before it does not pass through, and the line break
  before p is fixed and no backslash continues it;
- the line at p starts at column 0 with the keyword `def`, `async def` or `class` followed by
  fixed text, or with a run of one-line decorators (`@` at column 0) right above such a line;
- every *possible* reference reading of c_j (maximal munch from alpha_s and from alpha_c)
  reaches p and the keyword at lexeme boundaries without an error character and reads the
  keyword there, and the decorators close every bracket they open. A reading is impossible
  when a part of it that the fixed text decides (the lexeme's run died before the text read
  ends) holds an error character, or two lexemes of code on one line with only blanks
  between them that no sentence of the grammar puts side by side
  (holefill.grammar.adjacency): the rest of a docstring read as code, `sum of the values`.
  When no reading is possible, both count;
- in those readings the last line of code before p (blank lines and comments skipped) lies
  after the hole's own line, begins with a lexeme of its own (not the rest of a string)
  that is not a decorator's `@`, closes no bracket it did not open and continues no line.

The text is split at every cut into segments; each is a text with holes of its own (the first
starts with the document, the last ends with it), its anchor sites those of the document
restricted to it (the site of c_j ends at p; the part after p starts its segment and, like a
document's first chunk, has none).

Soundness: if every segment, filled, is valid, the document filled the same way is valid.
Segment A ends with a fixed line break after which segment B starts at column 0 with a
statement: by the lemma of holefill.check.window (A and B parse, A ends with a line break,
B starts at column 0 with a statement) A + B parses, and by induction the whole document.
The anchor rule holds as well: a valid A ends at a lexeme boundary (the tokenizer meets p
as the start of a file, and B's first character is no blank that a line break lexeme could
absorb), so the document's lexemes are A's followed by B's; the rule for c_j concerns only
positions before p, which A's check enforces, and B's sites are the document's.

Completeness (a cut refuses nothing the document allows): in a valid filling that keeps the
reading, the lexing has a boundary at alpha_s or alpha_c and is maximal munch from there,
the reading from that point, which is possible: its decided lexemes are the filling's, and
a valid filling has no error character and only neighbours the grammar allows on a line (the
layout adds no terminal between two lexemes of one line). So it reads the keyword at column
0 after an unescaped line break. A statement keyword cannot stand inside brackets, and the
decorators above it close what they open, so p is at bracket depth 0 at the start of a
logical line: a top-level statement starts there. The last line of code L before it closes
no bracket it did not open, so it starts at depth 0 too, after an unescaped line break: L
starts a logical line, which ends before p, and it is no decorator (no `@`; and a decorator
is followed by its definition): so the statements before p are A's, whole, and parse alone,
and those from p on are B's. (Without a line of code between
the hole and p, `@cache` typed into the hole could decorate the fixed definition; a
decorator whose brackets a hole opens is refused by the bracket rule.)

The checks per token then look at the segment of the hole being filled only; the others are
checked once per request, and their verdicts do not change while another segment's hole is
filled. A C or C++ segment that ends at a cut carries a *guard* after its last chunk
(holefill.lexing.guard): a comment that makes a lexeme left open by a filling visible to the
segment's check; it is part of the text checked, not of the user's text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from holefill.budget import Budget, poll
from holefill.lexing.anchors import ERROR, ReferenceLexer, Site
from holefill.lexing.relex import code_points

# A line that starts a top-level definition: the keyword and fixed text after it.
_DEFINITION = re.compile(r"\n((?:async[ \t]+)?def|class)[ \t(:]")
# How far the readings of one chunk are followed looking for a cut (characters): past it the
# chunk keeps no cut, which costs speed, never exactness.
MAX_SCAN = 20_000


@dataclass(frozen=True)
class Segment:
    """Holes `first` .. `first + len(chunks) - 2` of the document, with the user's text
    around them (`chunks`) and its anchor sites, numbered by chunk of the segment."""

    first: int
    chunks: tuple[str, ...]
    sites: tuple[Site, ...]
    guard: str = ""  # ends chunks[-1]: checked with it, not the user's text

    @property
    def holes(self) -> range:
        return range(self.first, self.first + len(self.chunks) - 1)


def split_segments(language: str, reference: ReferenceLexer | None, chunks: Sequence[str],
                   sites: Sequence[Site], adjacent: np.ndarray | None = None,
                   budget: Budget | None = None) -> list[Segment]:
    """The segments of `chunks` (the user's document, a hole between each pair of chunks)
    with `sites` its anchor sites (empty: the plain semantics, no readings to keep). One
    segment (the whole document) for other languages than Python, C and C++, and for one
    hole. `adjacent`: the grammar's adjacent terminals (Checker.adjacent), which let Python
    cuts set aside readings no filling can have. `budget`: polled per chunk (its deadline
    and cancel callback raise BudgetExhausted)."""
    whole = [Segment(0, tuple(chunks), tuple(sites))]
    if len(chunks) < 3 or reference is None or not sites:
        return whole
    cuts: dict[int, tuple[int, str]]
    if language == "python":
        by_chunk = {s.chunk: s for s in sites}
        cuts = {}
        for j in range(1, len(chunks) - 1):
            poll(budget)
            p = find_cut(reference, chunks[j], by_chunk.get(j), True, adjacent)
            if p is not None:
                cuts[j] = (p, "")
    elif language in ("c", "cpp"):
        from holefill.check.segments_brace import brace_cuts

        poll(budget)
        cuts = brace_cuts(language, reference, chunks, sites)
    else:
        return whole
    return split_at(chunks, sites, cuts) if cuts else whole


def split_at(chunks: Sequence[str], sites: Sequence[Site],
             cuts: dict[int, tuple[int, str]]) -> list[Segment]:
    """`chunks` split at the cuts (chunk -> (position, guard)): each segment's last chunk
    ends at its cut, followed by the guard, and the next segment starts there."""
    by_chunk = {s.chunk: s for s in sites}
    out: list[Segment] = []
    seg_chunks: list[str] = [chunks[0]]
    seg_sites: list[Site] = []
    first = 0
    for j in range(1, len(chunks)):
        site = by_chunk.get(j)
        local = len(seg_chunks)
        if j not in cuts:
            seg_chunks.append(chunks[j])
            if site is not None:
                seg_sites.append(site.moved(local, site.base))
            continue
        p, guard = cuts[j]
        seg_chunks.append(chunks[j][:p] + guard)
        if site is not None:
            rho = None if site.rho is None else min(site.rho, p)
            seg_sites.append(replace(site, chunk=local, length=p, rho=rho))
        out.append(Segment(first, tuple(seg_chunks), tuple(seg_sites), guard))
        first = j
        seg_chunks, seg_sites = [chunks[j][p:]], []
    out.append(Segment(first, tuple(seg_chunks), tuple(seg_sites)))
    return out


def find_cut(ref: ReferenceLexer, chunk: str, site: Site | None, anchored: bool,
             adjacent: np.ndarray | None = None) -> int | None:
    """The first cut in `chunk` (fixed text between two holes, with its anchor site), or
    None. Without anchors (`anchored` False) the plain semantics lets a hole's lexeme run
    over any fixed text, so no position is sure to start a statement: no cut. `adjacent`
    (holefill.grammar.adjacency) rules out readings no valid filling has."""
    if not anchored or site is None or site.passes or site.base:
        return None
    points = [x for x in (site.alpha_s, site.alpha_c) if x is not None]
    if not points:
        return None
    low = max(points)  # (rho bounds a comment from before, which ends at its line anyway)
    hole_line = chunk.find("\n")
    readings: list[_PartReading] | None = None
    for m in _DEFINITION.finditer(chunk, max(0, low - 1)):
        keyword = m.start() + 1
        if keyword > MAX_SCAN:
            return None
        p = _decorators_above(chunk, keyword)
        if p <= low or _continued(chunk, p - 1):
            continue
        if readings is None:
            readings = _possible_readings(ref, chunk, points, adjacent)
        word = len(m.group(1).split()[0])  # `async` starts the lexeme of `async def`
        if all(r.cuts(p, keyword, word, hole_line) for r in readings):
            return p
    return None


def _possible_readings(ref: ReferenceLexer, chunk: str, points: Sequence[int],
                       adjacent: np.ndarray | None) -> list[_PartReading]:
    """The readings of `chunk` from its anchor points that a valid filling may have (all of
    them when none may: the cut then refuses nothing either way)."""
    limit = min(len(chunk), MAX_SCAN + 64)
    readings = [_PartReading(ref, chunk, start, limit) for start in points]
    possible = [r for r in readings if r.possible(adjacent)]
    return possible or readings


def _decorators_above(text: str, keyword: int) -> int:
    """The start of the run of one-line decorators at column 0 right above the line at
    `keyword` (itself when there is none)."""
    p = keyword
    while p > 0:
        q = text.rfind("\n", 0, p - 1) + 1
        if not text.startswith("@", q) or q == 0:
            return p
        p = q
    return p


def _continued(text: str, newline: int) -> bool:
    """The line break at `newline` is escaped by a backslash (the line goes on)."""
    j = newline - 1
    if j >= 0 and text[j] == "\r":
        j -= 1
    return j >= 0 and text[j] == "\\"


_OPEN, _CLOSE = "([{", ")]}"
_OPEN_CODES = np.array([ord(c) for c in _OPEN], dtype=np.uint32)
_CLOSE_CODES = np.array([ord(c) for c in _CLOSE], dtype=np.uint32)
_LINE_BREAKS = np.array([ord("\n"), ord("\r")], dtype=np.uint32)


class _PartReading:
    """The reading of `chunk[start:limit]` by maximal munch (positions of the chunk), and
    what the cut conditions ask of it. A lexeme is *decided* when its run and the runs of
    all lexemes before it died inside the text read: any filling whose lexing has a boundary
    at `start` has it, since fixed text is read from there by the same deterministic munch
    (holefill.lexing.anchors)."""

    def __init__(self, ref: ReferenceLexer, chunk: str, start: int, limit: int) -> None:
        self.chunk, self.limit = chunk, limit
        got = ref.part_reading(chunk[start:limit]) if start < limit else None
        empty = np.zeros(0, dtype=np.int64)
        self.starts = got.starts + start if got is not None else empty
        self.ends = got.ends + start if got is not None else empty
        self.labels = got.labels if got is not None else empty
        # a lexeme after an undecided one starts where that one ends: undecided too
        ran_out = np.flatnonzero(got.scans + start >= limit) if got is not None else empty
        self.decided = np.arange(len(self.starts)) < (ran_out[0] if len(ran_out)
                                                       else len(self.starts))
        self.blank = np.isin(self.labels, list(ref.blank))
        real = (self.labels != ERROR) & ~self.blank & ~np.isin(self.labels,
                                                               list(ref.comment_like))
        self.real = np.flatnonzero(real)  # indexes of the lexemes of code
        self.real_starts = self.starts[self.real]
        errors = np.flatnonzero(self.labels == ERROR)
        self.first_error = int(self.starts[errors[0]]) if len(errors) else limit
        self.codes = codes = code_points(chunk[:limit])
        one = (self.ends[self.real] - self.real_starts) == 1
        first_codes = codes[self.real_starts] if len(self.real) else codes[:0]
        opens = one & np.isin(first_codes, _OPEN_CODES)
        closes = one & np.isin(first_codes, _CLOSE_CODES)
        # bracket depth after each lexeme of code, counted from the reading's start
        self.depth = np.cumsum(opens.astype(np.int64) - closes.astype(np.int64))

    def possible(self, adjacent: np.ndarray | None) -> bool:
        """False when no valid filling has this reading: a decided error character, or two
        decided lexemes of code on one line, with only blanks between them, that the grammar
        never puts side by side."""
        if np.any((self.labels == ERROR) & self.decided):
            return False
        if adjacent is None or len(self.real) < 2:
            return True
        i, k = self.real[:-1], self.real[1:]
        breaks = np.concatenate([[0], np.cumsum(np.isin(self.codes, _LINE_BREAKS))])
        blanks = np.concatenate([[0], np.cumsum(self.blank)])
        same_line = breaks[self.ends[i]] == breaks[self.starts[k]]
        only_blanks = blanks[k] - blanks[i + 1] == k - i - 1
        decided = self.decided[i] & self.decided[k]
        apart = ~adjacent[self.labels[i], self.labels[k]]
        return not np.any(same_line & only_blanks & decided & apart)

    def cuts(self, p: int, keyword: int, word: int, hole_line: int) -> bool:
        """Whether this reading makes p the start of a top-level statement in every valid
        filling that has it (see the module docstring): it reaches p and `keyword` at lexeme
        boundaries without an error character, reads the keyword there, the decorators from
        p on close every bracket they open, and the last line of code before p lies after
        the hole's own line, begins with its own lexeme (no decorator's `@`), closes no
        bracket it did not open and continues no line."""
        k = int(np.searchsorted(self.starts, keyword))
        if (k == len(self.starts) or int(self.starts[k]) != keyword
                or int(self.ends[k]) != keyword + word or self.first_error < keyword):
            return False
        if p != keyword and (not self._starts_code(p) or not self._balanced(p, keyword)):
            return False
        before = int(np.searchsorted(self.real_starts, p))
        if before == 0:
            return False
        chunk = self.chunk
        line = chunk.rfind("\n", 0, int(self.real_starts[before - 1])) + 1
        first = line
        while first < len(chunk) and chunk[first] in " \t":
            first += 1
        return (line > hole_line >= 0 and not chunk.startswith("@", first)
                and self._starts_code(first)
                and not _continued(chunk, line - 1) and self._balanced(line, p))

    def _starts_code(self, pos: int) -> bool:
        k = int(np.searchsorted(self.real_starts, pos))
        return k < len(self.real_starts) and int(self.real_starts[k]) == pos

    def _balanced(self, lo: int, hi: int) -> bool:
        """The lexemes of code in [lo, hi) close no bracket they did not open."""
        a, b = np.searchsorted(self.real_starts, [lo, hi])
        if a >= b:
            return True
        base = int(self.depth[a - 1]) if a > 0 else 0
        return int(self.depth[a:b].min()) >= base
