"""Anchors: the fixed text outside the holes keeps its reading.

Without this rule a filling may stay valid by swallowing the user's code: a hole that ends in
``B'''`` and a later hole that ends in ``'''`` turn every line between them into one bytes
literal; a ``#`` at a mid-line cursor comments out the rest of the line. The rule is part of
lexing with holes (the lexeme NFA simply lacks the edges that would do it), so the core, the
witness and decoding all obey it.

What "the reading" of fixed text is
-----------------------------------
The fixed text is the chunks; the holes lie between them. Two readings of a chunk ``c_j``
that follows a hole (``j >= 1``; the first chunk has a known context and lexes
deterministically) are *reference readings*:

- **S (the chunk's own reading)**: maximal munch of ``c_j`` from its first character, as if a
  lexeme boundary stood there (the hole ended what came before).
- **D (the document's reading)**: maximal munch of the document as the user has it, every
  hole empty. When hole ``j-1`` lies strictly inside a D lexeme (the cursor inside a string,
  a comment, a docstring, a word), that lexeme's text after the hole was already inside a
  lexeme that touches the hole.

Both readings recover from lexing errors one character at a time: a position where no lexeme
ends is an *error character* (an unclosed quote, a stray ``$``), and lexing resumes at the
next character. A terminal the language marks as an error lexeme (Python's unclosed triple
quote) counts as no lexeme at all.

The rule
--------
Only the lexemes that touch a hole may change. For chunk ``j`` (after hole ``j-1``):

- ``head``: the first real lexeme of S with the error characters around it; it touches the
  hole and may be merged with or split by the hole's text.
- ``alpha_s``: the start of the next real lexeme of S; ``alpha_c``: the end of the D lexeme
  that spans hole ``j-1`` (when there is one and it ends inside ``c_j``).
- Every lexing must have a lexeme boundary at ``alpha_s`` **or** at ``alpha_c``. From a
  boundary in fixed text, maximal munch is deterministic, so the lexemes after that boundary
  are exactly the reference reading's (up to the lexeme that touches the next hole).
- A lexeme that would pass through all of ``c_j`` (from hole ``j-1`` into hole ``j``) exists
  only when the D lexeme did so already (``passes``).
- A comment-like lexeme (an ignored terminal that is not blank) that begins before ``c_j`` may
  not cover a real lexeme of ``c_j``: it ends at ``rho`` at the latest (the first real,
  non-blank lexeme of S), or at ``alpha_c`` when the D lexeme spanning the hole was already
  there. This is the mid-line ``#``: commenting out the head alone would otherwise be allowed.

Argument (the guarantee): let a filling's lexing obey the rule. For chunk ``j`` with a
boundary at ``alpha_s``: every lexeme after it begins at a boundary of fixed text and is read
by the same deterministic maximal munch as in S, until the lexeme that reaches hole ``j``;
every character before ``alpha_s`` belongs to the head, which touches hole ``j-1``. With a
boundary at ``alpha_c`` instead, the characters before it were inside the D lexeme that spans
the hole (so inside a lexeme of the user's document that touches the hole), and the lexemes
after it are D's, which is also maximal munch from a boundary of fixed text. So every lexeme
of fixed text that touches no hole is one of a reference reading; a filling cannot turn code
into string or comment content, or back, except inside lexemes that touched a hole in the
user's text. Conversely the rule refuses nothing a user's edit keeps: an insertion at the
cursor leaves both sides' lexemes that do not touch it in place (S for text after a closed
construct, D for the inside of a string or comment the cursor sits in).

Costs: one maximal munch over the windowed text (D) and a few lexemes per chunk (S), once per
request; checking an edge is a comparison of a few positions.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from holefill.grammar.tables import LexerDFA, TerminalInfo
from holefill.lexing.relex import Reading, Relexer, class_tables, native_reader, text_classes

ERROR = -1  # the label of an error character in a reference reading
LONG_TEXT = 512  # texts longer than this get their character classes from numpy


@dataclass(frozen=True)
class Site:
    """The fixed text that follows a hole: `length` characters from position `base` of chunk
    `chunk`. While the hole is open, base is 0 and the site is the whole chunk after it; once
    the hole is closed (its filling decided, as in decoding) the site lies inside the merged
    chunk and keeps its anchors there. Anchor positions are relative to `base`."""

    chunk: int
    base: int = 0
    length: int = 0
    alpha_s: int | None = None
    alpha_c: int | None = None
    passes: bool = False  # the D lexeme spanning the hole before also spans this whole site
    rho: int | None = None  # comment-like lexemes from before end here at the latest

    @property
    def points(self) -> tuple[int, ...]:
        """The one or two positions of which the lexing must have a boundary at one."""
        return tuple(sorted({x for x in (self.alpha_s, self.alpha_c) if x is not None}))

    def moved(self, chunk: int, base: int) -> Site:
        return replace(self, chunk=chunk, base=base)


@dataclass(frozen=True)
class Anchors:
    """The sites of a partial output, in text order."""

    sites: tuple[Site, ...]

    def in_chunk(self, j: int) -> tuple[Site, ...]:
        return tuple(s for s in self.sites if s.chunk == j)


class ReferenceLexer:
    """Maximal munch with positions and error recovery, for reference readings."""

    def __init__(self, dfa: LexerDFA, terminals: Sequence[TerminalInfo],
                 error_terms: frozenset[int] = frozenset()) -> None:
        self.dfa = dfa
        self.error_terms = error_terms
        self.names = tuple(t.name for t in terminals)  # by label
        self.blank = frozenset(i for i, t in enumerate(terminals)
                               if t.example is not None and t.example.strip() == ""
                               and not t.literal)
        self.comment_like = frozenset(i for i, t in enumerate(terminals)
                                      if t.ignored and i not in self.blank)
        self._tables: tuple[np.ndarray, np.ndarray] | None = None  # for long texts
        native = native_reader(dfa, error_terms, len(terminals))
        self._relexer = Relexer(self.classes, dfa.munch, error_terms, native)
        # readings of parts of a document (holefill.check.segments), kept apart from the
        # documents' own so neither pushes the other's out of its recent readings
        self._parts = Relexer(self.classes, dfa.munch, error_terms, native)

    def reading(self, text: str) -> Reading:
        """The lexemes of all of `text` from its start (as `lex`), re-read only where it
        differs from a recent text (holefill.lexing.relex): typing along re-reads a few
        lexemes of a large file, not the file."""
        return self._relexer.read(text)

    def part_reading(self, text: str) -> Reading:
        """`reading` for a part of a document (a chunk from an anchor point)."""
        return self._parts.read(text)

    def classes(self, text: str) -> list[int]:
        if len(text) > LONG_TEXT:  # numpy: a 145,000-character chunk took 10 ms one by one
            if self._tables is None:
                self._tables = class_tables(self.dfa.boundaries)
            return text_classes(*self._tables, text).tolist()
        ascii_cls, bounds = self.dfa.class_of_ascii, self.dfa.boundaries
        return [ascii_cls[c] if (c := ord(ch)) < 128 and ascii_cls
                else bisect.bisect_right(bounds, c) for ch in text]

    def lex(self, cls: Sequence[int], start: int = 0,
            stop: int | None = None) -> Iterator[tuple[int, int, int]]:
        """(start, end, label) per lexeme from `start`, label ERROR for an error character;
        `stop` ends the text there (a lexeme cannot run past it)."""
        n = len(cls) if stop is None else stop
        i = start
        while i < n:
            end, lab, _ = self.dfa.munch(cls, i, n)
            if end < 0 or lab in self.error_terms:
                yield i, i + 1, ERROR
                i += 1
            else:
                yield i, end, lab
                i = end


def compute_anchors(ref: ReferenceLexer, chunks: Sequence[str]) -> Anchors:
    """The anchors of every chunk of `chunks` (the user's document: one hole between each
    pair of neighbours), as the module docstring defines them: one site per chunk after a
    hole."""
    out: list[Site] = []
    spanning = _spanning_lexemes(ref, chunks)
    for j in range(1, len(chunks)):
        if not chunks[j]:
            continue  # two holes side by side: no fixed text to keep
        alpha_s, rho = _own_reading(ref, chunks[j])
        alpha_c, passes, c_comment = None, False, False
        span = spanning[j - 1]
        if span is not None:
            end, label = span
            c_comment = label in ref.comment_like
            if end <= len(chunks[j]):
                alpha_c = end
            else:
                passes = True
        if c_comment and alpha_c is not None:
            rho = alpha_c if rho is None else max(rho, alpha_c)
        elif c_comment and passes:
            rho = None  # the user's comment runs through this chunk: no limit from S
        out.append(Site(j, 0, len(chunks[j]), alpha_s, alpha_c, passes, rho))
    return Anchors(tuple(out))


def _own_reading(ref: ReferenceLexer, chunk: str) -> tuple[int | None, int | None]:
    """alpha_s and rho of a chunk from its own reading S: its first lexemes only, read from
    a prefix of the chunk that grows while a lexeme's run reaches its end (the chunk after a
    hole may be the rest of a large file)."""
    width = OWN_READING_WINDOW
    while True:
        part = chunk[:width]
        got = _own_reading_of(ref, ref.classes(part), len(part) < len(chunk))
        if got is not None:
            return got
        width *= 4


OWN_READING_WINDOW = 512


def _own_reading_of(ref: ReferenceLexer, cls: Sequence[int],
                    cut: bool) -> tuple[int | None, int | None] | None:
    """`_own_reading` on the classes of a prefix of the chunk; None when `cut` (the prefix
    is not the whole chunk) and a run read up to its end before the answer was known."""
    n = len(cls)
    alpha_s = rho = None
    seen_head = False
    i = 0
    while i < n:
        end, lab, scan = ref.dfa.munch(cls, i, n)
        if cut and scan >= n:
            return None
        if end < 0 or lab in ref.error_terms:
            i += 1
            continue
        if rho is None and lab not in ref.blank:
            rho = i
        if seen_head:
            alpha_s = i
            break
        seen_head = True
        i = end
    else:
        if cut:
            return None
    if rho is None and seen_head:
        rho = n  # only blank lexemes: a comment may cover them all
    return alpha_s, rho


def _spanning_lexemes(ref: ReferenceLexer,
                      chunks: Sequence[str]) -> list[tuple[int, int] | None]:
    """Per hole, the D lexeme that spans it strictly (begins before it, ends after it), as
    (end relative to the start of the chunk after the hole, label), or None."""
    text = "".join(chunks)
    offsets = []
    at = 0
    for c in chunks[:-1]:
        at += len(c)
        offsets.append(at)
    out: list[tuple[int, int] | None] = [None] * len(offsets)
    if not offsets:
        return out
    reading = ref.reading(text)
    for h, at in enumerate(offsets):
        if at == 0:
            continue
        k = reading.covering(at - 1)  # the lexeme of the character before the hole
        if k is None or reading.ends[k] <= at or reading.labels[k] == ERROR:
            continue
        out[h] = (int(reading.ends[k]) - at, int(reading.labels[k]))
    return out


def respected(ref: ReferenceLexer, chunks: Sequence[str], fills: Sequence[str],
              anchors: Anchors) -> bool:
    """Whether the filled text, lexed by maximal munch, keeps the anchors of `chunks` (used
    to accept a rendered witness: rendering may lex differently from the witness path)."""
    if not anchors.sites:
        return True
    text_parts, starts = [], []
    at = 0
    for j, chunk in enumerate(chunks):
        starts.append(at)
        text_parts.append(chunk)
        at += len(chunk)
        if j < len(fills):
            text_parts.append(fills[j])
            at += len(fills[j])
    reading = ref.reading("".join(text_parts))
    for site in anchors.sites:
        lo = starts[site.chunk] + site.base
        hi = lo + site.length
        # the one lexeme that may begin before the site and reach into it
        k = reading.covering(lo - 1) if lo > 0 else None
        a, b, lab = ((int(reading.starts[k]), int(reading.ends[k]), int(reading.labels[k]))
                     if k is not None else (lo, lo, ERROR))
        through = a < lo and b > hi
        if site.passes and a < lo and b >= hi:
            continue  # like the user's lexeme, one lexeme covers the whole site
        if through and not site.passes:
            return False
        if not through and site.points and not any(reading.is_boundary(lo + x)
                                                   for x in site.points):
            return False
        if site.rho is not None and lab in ref.comment_like and a < lo and b > lo + site.rho:
            return False
    return True


def closed(anchors: Anchors, chunks: Sequence[str], fills: Sequence[str]) -> Anchors:
    """The sites of `anchors` (of `chunks`) in the one-chunk text `chunks` filled with
    `fills`: checking that text with them asks whether the filling keeps the reading."""
    starts, at = [], 0
    for j, chunk in enumerate(chunks):
        starts.append(at)
        at += len(chunk) + (len(fills[j]) if j < len(fills) else 0)
    return Anchors(tuple(s.moved(0, starts[s.chunk] + s.base) for s in anchors.sites))


PLAIN = Anchors(())  # no anchoring: the plain-grammar semantics of the papers
