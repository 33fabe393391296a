"""Maximal munch of a whole document, re-read only where it changed since a recent reading.

The anchors (holefill.lexing.anchors) need the document's own reading D: maximal munch from
its first character, every hole empty. A request costs one such reading of the whole file
(C++ at 10,000 lines: tens of milliseconds in Python), although typing along changes a few
characters at the cursor. `Relexer` keeps the readings of recent texts and reads a new text
from the nearest one:

- Each lexeme is stored with its *scan*: the last character the DFA read to decide it (the
  character on which the run died, or the text's length when it ran to the end).
- Let the old and the new text share a prefix of length ``d`` and a suffix of length ``e``.
  Maximal munch from a boundary is deterministic and reads no character past the scan, so
  every old lexeme up to the first whose scan is ``>= d`` is a lexeme of the new text, at the
  same place (by induction from position 0).
- The new text is lexed from the end of those lexemes. Once a new lexeme begins at a
  position ``a`` inside the shared suffix where an old lexeme began (at ``a - delta``, also
  inside the shared suffix, ``delta`` the change of length), the rest of both texts is the
  same string read from a boundary: the old lexemes from there on, moved by ``delta``.

So the result equals a reading from scratch (tests/lexing/test_relex.py compares them on
random edits), at a cost proportional to the changed region and the lexemes it disturbs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, AnyStr

import numpy as np

ERROR = -1  # the label of an error character (as in holefill.lexing.anchors)
FIRST_WINDOW = 2048  # characters whose classes are computed at once; doubled on demand
KEEP = 4  # recent readings kept


@dataclass(frozen=True)
class Reading:
    """The lexemes of one text: parallel arrays, in text order; lexemes tile the text.
    (numpy: a large file's reading is reused by slices and shifts, not Python loops.)"""

    text: str
    starts: np.ndarray
    ends: np.ndarray
    labels: np.ndarray
    scans: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)

    def covering(self, pos: int) -> int | None:
        """The index of the lexeme that holds character ``pos``, or None past the end."""
        k = int(np.searchsorted(self.starts, pos, side="right")) - 1
        return k if 0 <= k < len(self.starts) and pos < self.ends[k] else None

    def is_boundary(self, pos: int) -> bool:
        """Whether a lexeme begins or ends at ``pos``."""
        k = int(np.searchsorted(self.starts, pos))
        return (k < len(self.starts) and int(self.starts[k]) == pos) or (
            len(self.ends) > 0 and int(self.ends[-1]) == pos)

    def triples(self) -> list[tuple[int, int, int]]:
        return list(zip(self.starts.tolist(), self.ends.tolist(), self.labels.tolist(),
                        strict=True))


# munch(classes, i, n) -> (end, label, scan end) as holefill.grammar.tables.LexerDFA.munch
Munch = Callable[[Sequence[int], int, int], tuple[int, int, int]]


class Relexer:
    """Readings of whole texts by maximal munch with one-character error recovery, each from
    the most similar recent reading (module docstring). Thread-safe."""

    def __init__(self, classes: Callable[[str], list[int]], munch: Munch,
                 error_terms: frozenset[int], native: NativeReader | None = None) -> None:
        """`native`: reads with the C munch (holefill.check.core.NativeMunch) and classes
        computed by numpy; without it, `classes` and `munch` in Python (the reference)."""
        self.classes, self.munch, self.error_terms = classes, munch, error_terms
        self.native = native
        self._recent: list[Reading] = []
        self._lock = threading.Lock()

    def read(self, text: str) -> Reading:
        with self._lock:
            recent = list(self._recent)
        old, d, e = _nearest(recent, text)
        got = self._read(text, old, d, e)
        with self._lock:
            self._recent = [got, *(r for r in self._recent if r.text != text)][:KEEP]
        return got

    def _read(self, text: str, old: Reading | None, d: int, e: int) -> Reading:
        if old is not None and old.text == text:
            return old
        parts: list[tuple[np.ndarray, ...]] = []
        i = 0
        if old is not None:  # the old lexemes up to the first that read the changed text
            late = np.flatnonzero(old.scans >= d)
            keep = int(late[0]) if len(late) else len(old)
            if keep:
                parts.append((old.starts[:keep], old.ends[:keep], old.labels[:keep],
                              old.scans[:keep]))
                i = int(old.ends[keep - 1])
        if self.native is not None:
            native, tail = self._lex_native(text, i, old, e)
            parts += native
        else:
            new, tail = self._lex(text, i, old, e)
            if new[0]:
                parts.append(tuple(np.asarray(x, dtype=np.int64) for x in new))
        if old is not None and tail is not None:
            delta = len(text) - len(old.text)
            parts.append((old.starts[tail:] + delta, old.ends[tail:] + delta,
                          old.labels[tail:], old.scans[tail:] + delta))
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return Reading(text, empty, empty, empty, empty)
        return Reading(text, *(np.concatenate([p[f] for p in parts]) for f in range(4)))

    def _lex(self, text: str, i: int, old: Reading | None,
             e: int) -> tuple[tuple[list[int], list[int], list[int], list[int]], int | None]:
        """Lexemes of ``text`` from boundary ``i`` until the end, or until one begins where
        an old lexeme began inside the shared suffix (its index in ``old`` is returned)."""
        starts: list[int] = []
        ends: list[int] = []
        labels: list[int] = []
        scans: list[int] = []
        n = len(text)
        lo, hi = i, min(n, i + FIRST_WINDOW)
        cls = self.classes(text[lo:hi])
        delta = 0 if old is None else n - len(old.text)
        while i < n:
            if old is not None and i >= n - e:
                k = int(np.searchsorted(old.starts, i - delta))
                if k < len(old) and int(old.starts[k]) == i - delta:  # in step again
                    return (starts, ends, labels, scans), k
            end, lab, j = self.munch(cls, i - lo, hi - lo)
            if j == hi - lo and hi < n:  # the run reached the classes computed so far
                lo, hi = i, min(n, i + 2 * (hi - lo))
                cls = self.classes(text[lo:hi])
                continue
            starts.append(i)
            scans.append(j + lo)
            if end < 0 or lab in self.error_terms:
                ends.append(i + 1)
                labels.append(ERROR)
            else:
                ends.append(end + lo)
                labels.append(lab)
            i = ends[-1]
        return (starts, ends, labels, scans), None

    def _lex_native(self, text: str, i: int, old: Reading | None,
                    e: int) -> tuple[list[tuple[np.ndarray, ...]], int | None]:
        """`_lex` in C: the same lexemes, as blocks of arrays (one per window of classes)."""
        assert self.native is not None
        n = len(text)
        delta = 0 if old is None else n - len(old.text)
        sync = -1 if old is None else n - e
        old_starts = None if old is None else old.starts
        blocks: list[tuple[np.ndarray, ...]] = []
        size = FIRST_WINDOW
        while i < n:
            hi = min(n, i + size)
            cls = self.native.classes(text[i:hi])
            starts, ends, labels, scans, i, synced = self.native.munch.run(
                cls, i, n, i, sync, delta, old_starts)
            if len(starts):
                blocks.append((starts, ends, labels, scans))
            if synced >= 0:
                return blocks, synced
            size *= 2
        return blocks, None


@dataclass(frozen=True)
class NativeReader:
    """What `Relexer` reads with in C: the munch and the classes of a text as an array."""

    munch: Any  # holefill.check.core.NativeMunch
    boundaries: np.ndarray  # LexerDFA.boundaries
    ascii: np.ndarray  # the classes of code points 0..127 (int32)

    def classes(self, text: str) -> np.ndarray:
        return text_classes(self.boundaries, self.ascii, text)


def class_tables(boundaries: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """A LexerDFA's boundaries as an array, and the classes of code points 0..127."""
    bounds = np.array(boundaries, dtype=np.int64)
    return bounds, np.searchsorted(bounds, np.arange(128), side="right").astype(np.int32)


def code_points(text: str) -> np.ndarray:
    """The code points of `text` as uint32 (lone surrogates included)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def text_classes(boundaries: np.ndarray, ascii_classes: np.ndarray, text: str) -> np.ndarray:
    """The character classes of `text` as int32 (LexerDFA: bisect_right over the
    boundaries; lone surrogates are code points like any other)."""
    points = code_points(text)
    out = ascii_classes[np.minimum(points, 127)]
    wide = np.flatnonzero(points > 127)
    if len(wide):
        out[wide] = np.searchsorted(boundaries, points[wide], side="right")
    return out


def native_reader(dfa: Any, error_terms: frozenset[int], n_labels: int) -> NativeReader:
    """The C reader of one lexer DFA (holefill.grammar.tables.LexerDFA), built once per DFA:
    flattening the tables took 1.3 ms, and every engine's layout lexer asks for one."""
    from holefill.check.core import NativeMunch

    key = (id(dfa), error_terms, n_labels)
    with _READERS_LOCK:
        got = _READERS.get(key)
    if got is not None and got[0] is dfa:
        return got[1]
    reader = NativeReader(NativeMunch(dfa, error_terms, n_labels), *class_tables(dfa.boundaries))
    with _READERS_LOCK:
        _READERS[key] = (dfa, reader)  # the DFA is kept: its id is not reused
    return reader


# the readers built so far, by DFA (a few: one or two per language)
_READERS: dict[tuple[int, frozenset[int], int], tuple[Any, NativeReader]] = {}
_READERS_LOCK = threading.Lock()


def _nearest(recent: Sequence[Reading], text: str) -> tuple[Reading | None, int, int]:
    """The recent reading sharing the most prefix and suffix with ``text``, and those
    lengths."""
    best: tuple[Reading | None, int, int] = (None, 0, 0)
    for r in recent:
        d = common_prefix(r.text, text)
        e = common_suffix(r.text, text, min(len(r.text), len(text)) - d)
        if best[0] is None or d + e > best[1] + best[2]:
            best = (r, d, e)
    return best


def common_prefix(a: AnyStr, b: AnyStr) -> int:
    """The length of the longest common prefix (slices compared in C, halving)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # a[:lo] == b[:lo]; a[:hi+1] differs unless hi is the end
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: AnyStr, b: AnyStr, limit: int) -> int:
    """The length of the longest common suffix, at most ``limit`` (at most the shorter
    length)."""
    lo, hi = 0, max(0, limit)
    na, nb = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[na - mid: na - lo] == b[nb - mid: nb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo
