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

Indented cuts
-------------
A file that is one 4,000-line class has no column-0 definition between its holes. A cut
may also lie at a line indented by L (spaces and tabs, no form feed) that starts `def`,
`async def` or `class` (or its run of one-line decorators at L), under the conditions above
read at L instead of column 0, and two more:

- L is the body indentation of the top-level statement around p, which is a definition
  (`class`, `def`, or a decorator's `@`: no clause after a later hole continues it, as an
  `except` would a `try`): the shallowest indentation of a logical line of D (the document
  with its holes empty, read by our own lexer; a line a hole lies in does not count)
  between the nearest logical line at column 0 above p and p (`_OuterIndent`);
- in every possible reading, the logical lines from p on stay at L or deeper until one at
  column 0 that is no `else`, `elif`, `except` or `finally` (as far as the reading is
  decided; `_PartReading.stays_inside`).

A = the text before p followed by the guard G = L `pass`; B = `class _:` followed by the
text from p (the wrapper, a segment's `prefix`).

Soundness, for any L: if A and B, filled, parse, so does the document. G parses after A, so
at A's end the tokenizer's stack holds L or the last line opened a block (G then indents to
L): the document's line at p, a statement at L like G's, is read the same way. From there B
is read as in its wrapper: the stack tops agree at every line (B's own blocks are pushed
alike, and a dedent of B lands on L, on 0 or on a level B pushed itself: in the wrapper any
other width is an error), so the tokens are the same but for extra DEDENTs where the
document closes blocks of A that the wrapper lacks, and those end blocks that hold at least
their header's first statement. B's statements at L continue A's block at L, which accepts
any statement (G is one: not a `match` body, which takes `case` blocks only), and no line
of B at a new shallower width continues a statement of A (it would not parse after
`class _:` either). So the document's tokens are A's statements followed by B's, nested as
the grammar allows.

Completeness: in a valid filling that keeps the reading, the line at p starts a statement
at L (the argument above), after a fixed line of code that is no decorator: G parses after
A as that line does. The stack at p is [0, L] when D's reading is the filling's up to there
(the first condition: no line of the top-level statement is shallower than L), and B's
lines stay at L or deeper until column 0 (the second), so B parses in its wrapper. Fillings
that move the user's code elsewhere (a line of B at a width the wrapper lacks, after a
filling closed the class and opened other blocks) may be refused: the structure the user
wrote is kept (holefill.check.structure). Cost: one reading of D per request (about 10 ms
for 200,000 characters), and a window of each segment that parses its part of the class
only (holefill.check.window).

The checks per token then look at the segment of the hole being filled only; the others are
checked once per request, and their verdicts do not change while another segment's hole is
filled. A C or C++ segment that ends at a cut carries a *guard* after its last chunk
(holefill.lexing.guard): a comment that makes a lexeme left open by a filling visible to the
segment's check; it is part of the text checked, not of the user's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from holefill.budget import Budget, poll
from holefill.check.window import _CONTINUATION
from holefill.lexing.anchors import ERROR, ReferenceLexer, Site
from holefill.lexing.relex import code_points

# A line that starts a definition: its indentation, the keyword and fixed text after it.
_DEFINITION = re.compile(r"\n([ \t]*)((?:async[ \t]+)?def|class)[ \t(:]")
# A top-level statement whose body no clause continues: a definition or its decorator.
_DEFINITION_START = re.compile(r"@|class\b|def\b|async[ \t]+def\b")
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
    prefix: str = ""  # starts chunks[0] (an indented cut's wrapper), not the user's text

    @property
    def holes(self) -> range:
        return range(self.first, self.first + len(self.chunks) - 1)


def split_segments(language: str, reference: ReferenceLexer | None, chunks: Sequence[str],
                   sites: Sequence[Site], adjacent: np.ndarray | None = None,
                   budget: Budget | None = None, indented: bool = True) -> list[Segment]:
    """The segments of `chunks` (the user's document, a hole between each pair of chunks)
    with `sites` its anchor sites (empty: the plain semantics, no readings to keep). One
    segment (the whole document) for other languages than Python, C and C++, and for one
    hole. `adjacent`: the grammar's adjacent terminals (Checker.adjacent), which let Python
    cuts set aside readings no filling can have. `budget`: polled per chunk (its deadline
    and cancel callback raise BudgetExhausted). `indented`: Python cuts inside a top-level
    statement too (see "Indented cuts")."""
    whole = [Segment(0, tuple(chunks), tuple(sites))]
    if len(chunks) < 3 or reference is None or not sites:
        return whole
    cuts: dict[int, tuple[int, str, str]]
    if language == "python":
        by_chunk = {s.chunk: s for s in sites}
        cuts = {}
        outer: list[_OuterIndent] = []  # read when first asked

        def outer_indent(j: int) -> Callable[[int], str | None]:
            def at(p: int) -> str | None:
                if not outer:
                    outer.append(_OuterIndent(ref, chunks))
                return outer[0](j, p)
            return at

        ref = reference
        for j in range(1, len(chunks) - 1):
            poll(budget)
            found = find_cut(reference, chunks[j], by_chunk.get(j), True, adjacent,
                             outer_indent(j) if indented else None)
            if found is not None:
                p, lead = found
                nl = "\r\n" if "\r\n" in chunks[j] else "\n"
                cuts[j] = (p, f"{lead}pass{nl}" if lead else "",
                           f"class _:{nl}" if lead else "")
    elif language in ("c", "cpp"):
        from holefill.check.segments_brace import brace_cuts

        poll(budget)
        cuts = {j: (p, guard, "") for j, (p, guard)
                in brace_cuts(language, reference, chunks, sites).items()}
    else:
        return whole
    return split_at(chunks, sites, cuts) if cuts else whole


def split_at(chunks: Sequence[str], sites: Sequence[Site],
             cuts: dict[int, tuple[int, str, str]]) -> list[Segment]:
    """`chunks` split at the cuts (chunk -> (position, guard, prefix)): each segment's
    last chunk ends at its cut, followed by the guard, and the next segment starts there,
    after the prefix."""
    by_chunk = {s.chunk: s for s in sites}
    out: list[Segment] = []
    seg_chunks: list[str] = [chunks[0]]
    seg_sites: list[Site] = []
    first, prefix = 0, ""
    for j in range(1, len(chunks)):
        site = by_chunk.get(j)
        local = len(seg_chunks)
        if j not in cuts:
            seg_chunks.append(chunks[j])
            if site is not None:
                seg_sites.append(site.moved(local, site.base))
            continue
        p, guard, wrapper = cuts[j]
        seg_chunks.append(chunks[j][:p] + guard)
        if site is not None:
            rho = None if site.rho is None else min(site.rho, p)
            seg_sites.append(replace(site, chunk=local, length=p, rho=rho))
        out.append(Segment(first, tuple(seg_chunks), tuple(seg_sites), guard, prefix))
        first, prefix = j, wrapper
        seg_chunks, seg_sites = [prefix + chunks[j][p:]], []
    out.append(Segment(first, tuple(seg_chunks), tuple(seg_sites), "", prefix))
    return out


def find_cut(ref: ReferenceLexer, chunk: str, site: Site | None, anchored: bool,
             adjacent: np.ndarray | None = None,
             outer: Callable[[int], str | None] | None = None) -> tuple[int, str] | None:
    """The first cut in `chunk` (fixed text between two holes, with its anchor site): its
    line start and its indentation ("" at the top level), or None. Without anchors
    (`anchored` False) the plain semantics lets a hole's lexeme run over any fixed text, so
    no position is sure to start a statement: no cut. `adjacent` (holefill.grammar.adjacency)
    rules out readings no valid filling has. `outer(p)`: the body indentation of the
    top-level statement around the line at p (`_outer_indent`); without it, top-level
    cuts only."""
    if not anchored or site is None or site.passes or site.base:
        return None
    points = [x for x in (site.alpha_s, site.alpha_c) if x is not None]
    if not points:
        return None
    low = max(points)  # (rho bounds a comment from before, which ends at its line anyway)
    hole_line = chunk.find("\n")
    readings: list[_PartReading] | None = None
    for m in _DEFINITION.finditer(chunk, max(0, low - 1)):
        lead = m.group(1)
        keyword = m.start(2)
        if keyword > MAX_SCAN:
            return None
        at = _decorators_above(chunk, keyword, lead)
        p = at - len(lead)
        if p <= low or _continued(chunk, p - 1):
            continue
        if lead and (outer is None or "\f" in lead or outer(p) != lead):
            continue
        if readings is None:
            readings = _possible_readings(ref, chunk, points, adjacent)
        word = len(m.group(2).split()[0])  # `async` starts the lexeme of `async def`
        if all(r.cuts(at, keyword, word, hole_line) for r in readings) and (
                not lead or all(r.stays_inside(at, lead) for r in readings)):
            return p, lead
    return None


class _OuterIndent:
    """The indentation of the body of the top-level statement around a line of the
    document with its holes empty (D), by our own lexer's reading of D: the shallowest
    indentation of a logical line (its first lexeme of code, outside brackets, after an
    unescaped line break) between that statement's first line (the nearest logical line at
    column 0 above) and the line asked about. Read once per request, when the first
    indented cut is tried (a few milliseconds for 200,000 characters). D's reading may not
    be a filling's: a wrong answer only makes the cut's wrapper refuse fillings (see the
    module docstring), never accept one the document does not."""

    def __init__(self, ref: ReferenceLexer, chunks: Sequence[str]) -> None:
        self.offsets = np.cumsum([0, *map(len, chunks[:-1])])
        self.text = text = "".join(chunks)
        got = ref.part_reading(text)
        labels = got.labels
        real = ((labels != ERROR) & ~np.isin(labels, list(ref.blank))
                & ~np.isin(labels, list(ref.comment_like)))
        starts, ends = got.starts[real], got.ends[real]
        codes = code_points(text)
        one = (ends - starts) == 1
        first = codes[starts] if len(starts) else codes[:0]
        step = ((one & np.isin(first, _OPEN_CODES)).astype(np.int64)
                - (one & np.isin(first, _CLOSE_CODES)).astype(np.int64))
        depth = np.concatenate([[0], np.cumsum(step)[:-1]]) if len(step) else step
        breaks = np.flatnonzero(np.isin(codes, _LINE_BREAKS))
        line_start = np.zeros(len(starts), dtype=np.int64)
        before = np.searchsorted(breaks, starts)  # line breaks before each lexeme
        has = before > 0
        line_start[has] = breaks[before[has] - 1] + 1
        prev_end = np.concatenate([[0], ends[:-1]]) if len(ends) else ends
        escaped = np.zeros(len(starts), dtype=bool)
        behind = line_start - 2  # the character before the line break
        behind = np.where((line_start >= 2) & (codes[np.maximum(line_start - 1, 0)]
                                               == ord("\n")) & (codes[np.maximum(behind, 0)]
                                                                == ord("\r")),
                          behind - 1, behind)
        escaped[behind >= 0] = codes[behind[behind >= 0]] == ord("\\")
        # a line a hole lies in takes its indentation from the filling: not counted
        holes = self.offsets[1:]
        fixed = np.searchsorted(holes, line_start) == np.searchsorted(holes, starts,
                                                                        side="right")
        logical = (prev_end <= line_start) & (depth == 0) & ~escaped & fixed
        self.pos = starts[logical]
        self.width = (starts - line_start)[logical]
        self.line_start = line_start[logical]

    def __call__(self, j: int, p: int) -> str | None:
        """The body indentation around the line that starts at chunks[j][p]; None when no
        line at column 0 is above it, or tabs and spaces are mixed in that width."""
        at = int(np.searchsorted(self.pos, int(self.offsets[j]) + p))
        tops = np.flatnonzero(self.width[:at] == 0)
        if not len(tops) or tops[-1] + 1 >= at:
            return None
        if not _DEFINITION_START.match(self.text, int(self.pos[tops[-1]])):
            return None  # an `if`, `try`, ...: a clause after a later hole may continue it
        widths = self.width[tops[-1] + 1:at]
        low = int(widths.min())
        if low == 0:
            return None
        leads = {self.text[a:a + low] for a in self.line_start[tops[-1] + 1:at][widths == low]}
        lead = leads.pop()
        return None if leads or lead.strip(" \t") else lead


def _possible_readings(ref: ReferenceLexer, chunk: str, points: Sequence[int],
                       adjacent: np.ndarray | None) -> list[_PartReading]:
    """The readings of `chunk` from its anchor points that a valid filling may have (all of
    them when none may: the cut then refuses nothing either way)."""
    limit = min(len(chunk), MAX_SCAN + 64)
    readings = [_PartReading(ref, chunk, start, limit) for start in points]
    possible = [r for r in readings if r.possible(adjacent)]
    return possible or readings


def _decorators_above(text: str, keyword: int, lead: str = "") -> int:
    """The start (its `@`) of the run of one-line decorators at indentation `lead` right
    above the line at `keyword` (the keyword when there is none)."""
    p = keyword
    while p > len(lead):
        q = text.rfind("\n", 0, p - len(lead) - 1) + 1
        if not text.startswith(lead + "@", q) or q == 0:
            return p
        p = q + len(lead)
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
        self._widths: tuple[np.ndarray, np.ndarray] | None = None

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

    def stays_inside(self, at: int, lead: str) -> bool:
        """Whether this reading, from the definition at `at` (indented by `lead`) on, keeps
        every logical line as deep as `lead` or deeper until one at column 0 that continues
        no statement (`else`, `elif`, `except`, `finally`); lines after an undecided lexeme
        are not read. The wrapper of an indented cut opens `lead` only (module docstring);
        this keeps it from refusing the user's own lines (a misread only costs a cut)."""
        k0 = int(np.searchsorted(self.real_starts, at))
        base = int(self.depth[k0 - 1]) if k0 > 0 else 0
        width, first = self._line_widths()
        undecided = np.flatnonzero(~self.decided[self.real[k0:]])
        stop = k0 + (int(undecided[0]) if len(undecided) else len(self.real) - k0)
        before = np.concatenate([[0], self.depth[:-1]])[k0:stop]
        out = np.flatnonzero(first[k0:stop] & (before == base) & (width[k0:stop] < len(lead)))
        if not len(out):
            return True
        k = k0 + int(out[0])
        pos = int(self.real_starts[k])
        return int(width[k]) == 0 and _CONTINUATION.match(self.chunk, pos) is None

    def _line_widths(self) -> tuple[np.ndarray, np.ndarray]:
        """For each lexeme of code: its column, and whether it is the first of a logical
        line (after an unescaped line break, only blanks before it on its line)."""
        if self._widths is None:
            starts = self.real_starts
            breaks = np.flatnonzero(np.isin(self.codes, _LINE_BREAKS))
            n = np.searchsorted(breaks, starts)
            line = np.where(n > 0, breaks[np.maximum(n - 1, 0)] + 1, 0)
            prev_end = np.concatenate([[0], self.ends[self.real][:-1]])
            escaped = np.array([_continued(self.chunk, int(x) - 1) if x > 0 else False
                                for x in line], dtype=bool) if len(line) else line > 0
            first = (n > 0) & (prev_end <= line) & ~escaped
            self._widths = (starts - line, first)
        return self._widths

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
