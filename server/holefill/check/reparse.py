"""Tree-sitter parses of the brace languages, reused across keystrokes.

The brace windows and cuts (holefill.check.window_brace, holefill.check.segments_brace) read
tree-sitter trees of texts of up to the whole file: at 10,000 lines each fresh parse takes
10-35 ms, and typing a few characters into a hole changes every text that holds the hole, so
a cache by text alone finds nothing and a request re-parsed 400-700k characters. Here a
text close to one parsed fresh before (one edited span, small against the text) is parsed
incrementally from that tree (`Tree.edit` and `Parser.parse(new, old_tree)`): tree-sitter
re-reads the edited span and re-uses the rest, 1-3 ms at 10,000 lines.

Bases are fresh trees and, for one more edit, trees parsed incrementally from a fresh one
(a request parses a text and then the same text with one directive line closed; a
keystroke edits both): a tree is a function of its text and of at most two earlier texts
(a fresh base, usually the text as it was when its request started cold, and one text
between), not of the whole history of edits.

Why a tree that depends on its base is acceptable
-------------------------------------------------
An incremental parse need not equal a fresh parse of the same text: where tree-sitter
recovers from an error (a hole, or a half-typed statement in it) it may recover differently
from a tree it re-uses parts of (a few states in a thousand of typing real code, all inside
the declaration being typed; tests/check/test_reparse.py measures it). Nothing we build
rests on the tree being right, only on our grammar: a tree proposes top-level piece starts,
regions and cut candidates, and every proposal is judged (pieces and region members by our
grammar, stand-ins by the lexical automaton, cuts by conditions (a)-(d) of
holefill.check.segments_brace). So a different tree may give a different window or cut, as a
different tree-sitter version would, never a YES the whole text refuses. What differs is
reproducibility: the window of a text can depend on the text the request started from. The
caches keyed by text (windows, heads) say so: a remembered answer is one a search could find
for the text, not the one a fresh search finds.

`fresh_parses()` turns the re-use off (every parse fresh, the old behaviour): for the
benchmark (benchmarks/bench_reparse.py) and the tests that compare the two.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from holefill.lexing.relex import common_prefix, common_suffix

# Fresh trees kept as bases, per language (a request's texts: document, heads, pieces).
BASES = 12
SECOND_BASES = 4  # incremental trees kept as bases for one more edit
# Texts shorter than this are parsed fresh (under a millisecond): their trees stay a
# function of the text alone.
MIN_REPARSE_BYTES = 8_192
# An incremental parse only when the edited span of the new text is at most this share of it.
MAX_EDIT_SHARE = 0.25
MAX_BASE_BYTES = 8_000_000  # texts above this are not kept as bases


@dataclass
class _Switch:
    incremental: bool = True


_SWITCH = _Switch()


@contextlib.contextmanager
def fresh_parses() -> Iterator[None]:
    """Within the block every parse is fresh and no base is kept or used (the behaviour
    before re-use; for benchmarks and tests)."""
    was = _SWITCH.incremental
    _SWITCH.incremental = False
    try:
        yield
    finally:
        _SWITCH.incremental = was


@functools.cache
def parser(language: str) -> Any:
    import tree_sitter

    if language == "json":
        import tree_sitter_json as grammar
    else:  # C is read with the C++ grammar: it only proposes pieces and regions
        import tree_sitter_cpp as grammar  # type: ignore[no-redef]
    return tree_sitter.Parser(tree_sitter.Language(grammar.language()))


@functools.cache
def _bases(language: str) -> OrderedDict[bytes, Any]:
    """Fresh trees by their text, most recently used last."""
    return OrderedDict()


@functools.cache
def _seconds(language: str) -> OrderedDict[bytes, Any]:
    """Trees parsed incrementally from a fresh base, by their text, most recent last: bases
    for a text one more edit away (the same text with a directive line closed, after a
    keystroke), whose trees are kept as bases by no one."""
    return OrderedDict()


def forget() -> None:
    """Drop every base (for benchmarks and tests that start cold)."""
    with _LOCK:
        for language in ("c", "cpp", "json"):
            _bases(language).clear()
            _seconds(language).clear()


# The server prepares requests on worker threads: the pools are shared, and so is each
# language's parser (a tree-sitter parser is not safe to use from two threads at once).
_LOCK = threading.Lock()


def parse(language: str, data: bytes) -> Any:
    """The tree of `data` (UTF-8): incremental from the base that shares the most with it
    when the edit between them is small (see the module docstring), else fresh (and kept as
    a base)."""
    with _LOCK:
        return _parse(language, data)


def _parse(language: str, data: bytes) -> Any:
    keep = _SWITCH.incremental and MIN_REPARSE_BYTES <= len(data) <= MAX_BASE_BYTES
    if keep:
        got = _nearest(data, _bases(language), _seconds(language))
        if got is not None:
            pool, old, tree, start, old_end, new_end = got
            edited = tree.copy()  # the base stays as it was
            edited.edit(start, old_end, new_end, _point(old, start), _point(old, old_end),
                        _point(data, new_end))
            tree = parser(language).parse(data, edited)
            if pool is _bases(language):
                _remember(_seconds(language), data, tree, SECOND_BASES)
            return tree
    tree = parser(language).parse(data)
    if keep:
        _remember(_bases(language), data, tree, BASES)
    return tree


def _remember(pool: OrderedDict[bytes, Any], data: bytes, tree: Any, size: int) -> None:
    pool[data] = tree
    pool.move_to_end(data)
    while len(pool) > size:
        pool.popitem(last=False)


def _nearest(data: bytes, *pools: OrderedDict[bytes, Any]
             ) -> tuple[OrderedDict[bytes, Any], bytes, Any, int, int, int] | None:
    """(pool, base text, its tree, start, old end, new end) of the base whose single edit
    to `data` replaces the fewest bytes (the first pool's on a tie), if what it removes and
    what it inserts are each at most MAX_EDIT_SHARE of `data`: a text further away costs
    about a fresh parse, and its tree would depend on the base for nothing."""
    best, limit, most = None, 2 * len(data) + 1, int(len(data) * MAX_EDIT_SHARE)
    for pool in pools:
        for old, tree in pool.items():
            if abs(len(old) - len(data)) > most:
                continue
            start = common_prefix(old, data)
            tail = common_suffix(old, data, min(len(old), len(data)) - start)
            old_end, new_end = len(old) - tail, len(data) - tail
            if old_end - start <= most and new_end - start <= most \
                    and old_end + new_end - 2 * start < limit:
                limit = old_end + new_end - 2 * start
                best = (pool, old, tree, start, old_end, new_end)
    if best is not None:
        best[0].move_to_end(best[1])
    return best


def _point(data: bytes, offset: int) -> tuple[int, int]:
    """Tree-sitter's (row, column in bytes) of a byte offset."""
    return data.count(b"\n", 0, offset), offset - (data.rfind(b"\n", 0, offset) + 1)
