"""Where a "no" happens: the first place in a text with holes that no filling can repair.

Built on the public `Checker` API only. For a fixed-text length L, the *probe* P(L) is the
text cut after its first L fixed characters (holes before that point stay holes) followed by
one more hole. If P(L) is not completable, no filling of the holes, and nothing whatever
after the cut, makes a program, so the character at L - 1 is a place no filling repairs; and
every longer probe is NO as well (a completion of P(L + k) is one of P(L): the trailing hole
takes the extra text). So the completable probes form a prefix of 0..N, and the shortest NO
probe is found by galloping from the start (probes of 256, 512, ... characters: a mistake
early in a long file costs little) and then bisecting. P(0) is a lone hole, completable in
every language we ship. When even P(N) is completable, the text is right as far as it goes
and ends too early (an unclosed bracket after the last hole): the place is the end.

An UNKNOWN answer (the work budget ran out, or the check was cancelled) decides nothing, so
the search stops and reports no place: a wrong place would send the user to fix the wrong
line. The checker's own rules for fixed text (a lexeme from a hole may not swallow the user's
text) keep the monotonicity in all but contrived cases; where it failed, the place found is
still one where a completable probe is followed by one more character that makes it NO.

Cost: about log2(N) + 2 checks, most of them shorter than the text; the full text is checked
once to confirm the NO.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from holefill.check.checker import DEFAULT_MAX_STEPS, Checker, Verdict
from holefill.positions import line_col

GALLOP_START = 256  # fixed characters in the first probe


@dataclass(frozen=True)
class Place:
    """A place in the document (the chunks joined by what stands for each hole)."""

    offset: int  # code points into the document
    line: int  # 0-based
    col: int  # 0-based, code points
    chunk: int  # the chunk that holds the place
    chunk_offset: int  # code points into that chunk
    at_end: bool  # the text ends too early: the place is its end, not a character

    def __str__(self) -> str:
        return f"line {self.line + 1}, column {self.col + 1}"


def first_unrepairable(
    checker: Checker,
    chunks: Sequence[str],
    *,
    hole_text: str | Sequence[str] = "",
    max_steps: int = DEFAULT_MAX_STEPS,
    cancel: Callable[[], bool] | None = None,
) -> Place | None:
    """The first place of `chunks` (a hole between each pair) that no filling can repair, or
    None when the text is completable or any check on the way answered UNKNOWN.

    `hole_text` is what stands for each hole in the document whose lines and columns are
    reported: the marker (`"<|hole|>"`) for a file with markers, "" for an editor's cursor,
    or one string per hole.
    """
    chunks = list(chunks)
    marks = _hole_texts(hole_text, len(chunks) - 1)
    probe = _Probe(checker, chunks, max_steps, cancel)
    if probe.verdict(list(chunks)) is not Verdict.NO:
        return None
    n = probe.total
    lo, hi = 0, None  # P(lo) is completable; P(hi) is not
    size = min(GALLOP_START, n)
    while hi is None:
        verdict = probe.at(size)
        if verdict is Verdict.UNKNOWN:
            return None
        if verdict is Verdict.NO:
            hi = size
        elif size == n:
            return _place(chunks, marks, n, at_end=True)
        else:
            lo, size = size, min(n, 2 * size)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        verdict = probe.at(mid)
        if verdict is Verdict.UNKNOWN:
            return None
        if verdict is Verdict.NO:
            hi = mid
        else:
            lo = mid
    return _place(chunks, marks, hi - 1, at_end=False)


class _Probe:
    """Checks of P(L) for one text; fixed-text offsets map to (chunk, offset)."""

    def __init__(self, checker: Checker, chunks: list[str], max_steps: int,
                 cancel: Callable[[], bool] | None) -> None:
        self.checker, self.chunks, self.max_steps, self.cancel = checker, chunks, max_steps, cancel
        self.ends = _ends(chunks)  # fixed characters up to the end of each chunk
        self.total = self.ends[-1]

    def at(self, size: int) -> Verdict:
        i, k = _locate(self.ends, size)
        return self.verdict([*self.chunks[:i], self.chunks[i][:k], ""])

    def verdict(self, chunks: list[str]) -> Verdict:
        if self.cancel is not None and self.cancel():
            return Verdict.UNKNOWN
        res = self.checker.check(chunks, max_steps=self.max_steps, cancel=self.cancel)
        return res.verdict


def _locate(ends: list[int], size: int) -> tuple[int, int]:
    """The chunk i and offset k at which the first `size` fixed characters end (the earliest
    chunk when `size` falls on a boundary: the hole after that chunk is then the cut)."""
    i = bisect.bisect_left(ends, size)
    return i, size - (ends[i - 1] if i else 0)


def _hole_texts(hole_text: str | Sequence[str], holes: int) -> list[str]:
    if isinstance(hole_text, str):
        return [hole_text] * holes
    marks = list(hole_text)
    if len(marks) != holes:
        raise ValueError(f"{len(marks)} hole texts for {holes} holes")
    return marks


def _place(chunks: list[str], marks: list[str], fixed: int, *, at_end: bool) -> Place:
    """The Place of fixed character number `fixed` (or of the end, `fixed` == total)."""
    ends = _ends(chunks)
    if at_end:
        i, k = len(chunks) - 1, len(chunks[-1])
    else:
        i = bisect.bisect_right(ends, fixed)  # the chunk that holds the character
        k = fixed - (ends[i - 1] if i else 0)
    document = "".join(c + m for c, m in zip(chunks, [*marks, ""], strict=True))
    offset = sum(len(c) + len(m) for c, m in zip(chunks[:i], marks[:i], strict=True)) + k
    line, col = line_col(document, offset)
    return Place(offset, line, col, i, k, at_end)


def _ends(chunks: list[str]) -> list[int]:
    return list(itertools.accumulate(len(c) for c in chunks))
