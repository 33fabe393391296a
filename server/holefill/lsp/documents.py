"""The document model: text per URI and version, kept in sync with the editor's changes.

Offsets are code points of the Python `str` (`offset`, `start`, `end` below); LSP positions
count `col_units` in the negotiated encoding and live only at the edge (`LineIndex`). A document
of a language we have a tree-sitter grammar for also keeps a syntax tree, updated with
`tree.edit` and an incremental reparse per change (DESIGN.md §3, step 1). Every change records
where it happened (`EditSite`), and later changes carry those sites along, so the hole detector
can ask the tree whether the places the user was editing are still unfinished.
"""

from __future__ import annotations

import bisect
import difflib
import functools
import importlib
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import tree_sitter
from lsprotocol import types

from holefill.errors import HolefillError

log = logging.getLogger(__name__)

ENCODINGS = ("utf-16", "utf-8", "utf-32")
DEFAULT_ENCODING = "utf-16"  # what LSP assumes when the client negotiates nothing
DEFAULT_MAX_SITES = 16

# LSP language ids with a tree-sitter grammar. C goes through the C++ grammar: the tree is a
# document model and a hint (DESIGN.md §10), and C++ accepts nearly all of C.
TREE_SITTER_MODULES = {
    "python": "tree_sitter_python",
    "cpp": "tree_sitter_cpp",
    "c": "tree_sitter_cpp",
    "json": "tree_sitter_json",
}

_BREAK = re.compile(r"\r\n|\r|\n")


class PositionError(HolefillError, ValueError):
    """A position that is not in the document (only strict conversions raise it)."""

    def __init__(self, line: int, col_units: int, why: str) -> None:
        super().__init__(f"position {line}:{col_units} is {why}")
        self.line = line
        self.col_units = col_units


class StaleChangeError(HolefillError, ValueError):
    """A change whose version is older than the document's: it is not applied."""

    def __init__(self, uri: str, version: int, current: int) -> None:
        super().__init__(f"ignored a change to {uri}: its version {version} is older than the "
                         f"document's {current}")


class UnknownDocumentError(HolefillError, LookupError):
    """A request named a URI that is not open."""

    def __init__(self, uri: str) -> None:
        super().__init__(f"document is not open: {uri}")
        self.uri = uri


_SURROGATE = re.compile("[\ud800-\udfff]")


def engine_text(text: str) -> str:
    """``text`` for the engine: a lone surrogate (a JSON string may carry one; a valid pair
    arrives as one code point) becomes U+FFFD, one code point for one, so offsets stay. The
    tokenizer and the checker take only encodable text; the document keeps the original."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def normalize_encoding(encoding: str) -> str:
    """"utf-8", "utf-16" or "utf-32" (also given as `types.PositionEncodingKind`)."""
    for name in ENCODINGS:
        if encoding == name:  # a PositionEncodingKind is a str enum: equal to its value
            return name
    raise ValueError(f"unknown position encoding {encoding!r}; expected one of {ENCODINGS}")


# --- positions ------------------------------------------------------------------------------


def _char_units(ch: str, encoding: str) -> int:
    cp = ord(ch)
    if encoding == "utf-32" or cp < 0x80:
        return 1
    if encoding == "utf-16":
        return 2 if cp > 0xFFFF else 1
    return 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


def units_of(s: str, encoding: str) -> int:
    """The length of `s` in code units of `encoding`."""
    if encoding == "utf-32" or s.isascii():  # isascii() is O(1) on CPython strings
        return len(s)
    if encoding == "utf-8":
        return len(s.encode("utf-8", "surrogatepass"))
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _index_after_units(s: str, col_units: int, encoding: str) -> tuple[int, bool]:
    """The index in `s` after `col_units` code units, rounded down to a character start and
    clamped to len(s); the flag says whether no rounding or clamping was needed."""
    if encoding == "utf-32" or s.isascii():
        return min(col_units, len(s)), col_units <= len(s)
    count = 0
    for i, ch in enumerate(s):
        width = _char_units(ch, encoding)
        if count + width > col_units:
            return i, count == col_units
        count += width
    return len(s), count == col_units


def _line_starts(text: str, lo: int, hi: int) -> list[int]:
    """The line starts i with max(lo, 1) <= i <= hi (0 always starts a line; callers add it)."""
    out = []
    # Start one early: a break ending at lo may begin at lo - 1, and a "\r" there followed by
    # "\n" at lo means lo does not start a line.
    for m in _BREAK.finditer(text, max(lo - 1, 0), min(hi + 1, len(text))):
        if m.end() > hi:
            break
        if m.end() >= lo:
            out.append(m.end())
    return out


class LineIndex:
    """The line starts of a text, for converting between offsets and LSP positions in
    O(log lines + line length). Lines end at "\\n", "\\r\\n" or "\\r", as LSP says; a text
    ending with a line break has an empty last line."""

    __slots__ = ("text", "starts")

    def __init__(self, text: str, starts: list[int] | None = None) -> None:
        self.text = text
        self.starts = starts if starts is not None else [0, *_line_starts(text, 1, len(text))]

    @property
    def line_count(self) -> int:
        return len(self.starts)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, min(max(offset, 0), len(self.text))) - 1

    def line_span(self, line: int) -> tuple[int, int]:
        """(start, end) of a line's content, its line break excluded."""
        start = self.starts[line]
        if line + 1 == len(self.starts):
            return start, len(self.text)
        end = self.starts[line + 1] - 1
        if self.text[end] == "\n" and end > start and self.text[end - 1] == "\r":
            end -= 1
        return start, end

    def offset_of(
        self, line: int, col_units: int, encoding: str = DEFAULT_ENCODING, *, strict: bool = False
    ) -> int:
        """The offset of an LSP position. Not strict: a column past the line's end means the end
        of the line, a line past the last one the end of the text, a column inside a character
        that character's start. Strict: each of those raises PositionError."""
        if line < 0 or col_units < 0:
            if strict:
                raise PositionError(line, col_units, "negative")
            line, col_units = max(line, 0), max(col_units, 0)
        if line >= len(self.starts):
            if strict:
                raise PositionError(line, col_units, f"past the last line ({len(self.starts) - 1})")
            return len(self.text)
        start, end = self.line_span(line)
        index, exact = _index_after_units(self.text[start:end], col_units, encoding)
        if strict and not exact:
            why = "past the end of its line" if start + index == end else "inside a character"
            raise PositionError(line, col_units, why)
        return start + index

    def position_of(self, offset: int, encoding: str = DEFAULT_ENCODING) -> tuple[int, int]:
        """(line, col_units) of an offset, clamped to the text; an offset between the "\\r" and
        "\\n" of a line break is taken as the end of its line."""
        offset = min(max(offset, 0), len(self.text))
        line = bisect.bisect_right(self.starts, offset) - 1
        start, end = self.line_span(line)
        return line, units_of(self.text[start : min(offset, end)], encoding)

    def replaced(self, new_text: str, start: int, end: int, inserted: int) -> LineIndex:
        """The index of `new_text`, which is this text with [start, end) replaced by `inserted`
        characters. Only the replaced region is scanned again; whether a position starts a line
        depends on the characters just before and at it, so starts before `start` stand and
        starts after `end` move by the length difference."""
        delta = inserted - (end - start)
        head = self.starts[: bisect.bisect_left(self.starts, start)] or [0]
        mid = _line_starts(new_text, max(start, 1), start + inserted)
        tail = [s + delta for s in self.starts[bisect.bisect_right(self.starts, end) :]]
        return LineIndex(new_text, head + mid + tail)


# --- diffs ----------------------------------------------------------------------------------


class Replacement(NamedTuple):
    """[start, end) of the old text becomes `text`."""

    start: int
    end: int
    text: str


# Character-level diffs run only on changed blocks up to this size (difflib is quadratic in
# the worst case); a larger block is reported as one replacement.
CHAR_DIFF_LIMIT = 400
# Equal runs shorter than this inside a changed block are chance matches ("e" in two unrelated
# words), not two separate edits.
MIN_EQUAL_RUN = 3


def _common_prefix_len(x: str, y: str) -> int:
    # Binary search over slice comparisons: C-speed memcmp instead of a Python loop per char.
    lo, hi = 0, min(len(x), len(y))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if x[:mid] == y[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix_len(x: str, y: str) -> int:
    lo, hi = 0, min(len(x), len(y))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if x[len(x) - mid :] == y[len(y) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _refine(old: str, a0: int, a1: int, new: str, b0: int, b1: int) -> Iterator[Replacement]:
    """The character-level replacements inside the changed block old[a0:a1] -> new[b0:b1]."""
    p = _common_prefix_len(old[a0:a1], new[b0:b1])
    a0, b0 = a0 + p, b0 + p
    s = _common_suffix_len(old[a0:a1], new[b0:b1])
    a1, b1 = a1 - s, b1 - s
    if a0 == a1 or b0 == b1 or max(a1 - a0, b1 - b0) > CHAR_DIFF_LIMIT:
        if a0 < a1 or b0 < b1:
            yield Replacement(a0, a1, new[b0:b1])
        return
    matcher = difflib.SequenceMatcher(None, old[a0:a1], new[b0:b1], autojunk=False)
    ops = [op[1:] for op in matcher.get_opcodes() if op[0] != "equal"]
    merged: list[list[int]] = []
    for i1, i2, j1, j2 in ops:
        if merged and i1 - merged[-1][1] < MIN_EQUAL_RUN:
            merged[-1][1], merged[-1][3] = i2, j2
        else:
            merged.append([i1, i2, j1, j2])
    for i1, i2, j1, j2 in merged:
        yield Replacement(a0 + i1, a0 + i2, new[b0 + j1 : b0 + j2])


def diff_replacements(old: str, new: str) -> list[Replacement]:
    """Sorted, disjoint replacements in `old`'s offsets that turn `old` into `new`.

    Lines first: the common head and tail lines are skipped, difflib aligns the lines between
    them, and only the changed line blocks are diffed by character, so the cost follows the
    size of the change (plus one linear split into lines)."""
    if old == new:
        return []
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_mid, b_mid = a[head : len(a) - tail], b[head : len(b) - tail]
    a_at = _offsets(a_mid, sum(map(len, a[:head])))
    b_at = _offsets(b_mid, sum(map(len, b[:head])))
    # Popular lines (blank ones) may only be skipped as junk in big blocks, where difflib's
    # quadratic corner would otherwise show.
    matcher = difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=len(a_mid) > 2000)
    out: list[Replacement] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            out.extend(_refine(old, a_at[i1], a_at[i2], new, b_at[j1], b_at[j2]))
    return out


def _offsets(lines: Sequence[str], first: int) -> list[int]:
    """The offsets of each line's start and, last, of the end of the last line."""
    out = [first]
    for line in lines:
        out.append(out[-1] + len(line))
    return out


# --- edit sites -----------------------------------------------------------------------------


@dataclass(frozen=True)
class EditSite:
    """Where a change happened: [start, end) is the text it inserted, in offsets of the
    current text (start == end after a pure deletion)."""

    start: int
    end: int

    def touches(self, other: EditSite) -> bool:
        return self.start <= other.end and other.start <= self.end


def _map_offset(x: int, start: int, end: int, inserted: int, is_end: bool) -> int:
    if x <= start:
        return x
    if x >= end:
        return x + inserted - (end - start)
    # Inside the replaced text: that text is gone, so the site collapses onto the new text.
    return start + inserted if is_end else start


def shift_sites(
    sites: Sequence[EditSite], start: int, end: int, inserted: int
) -> list[EditSite]:
    """`sites` after [start, end) was replaced by `inserted` characters: sites after the change
    move, sites inside deleted text collapse onto the replacement."""
    return [
        EditSite(
            _map_offset(s.start, start, end, inserted, False),
            _map_offset(s.end, start, end, inserted, True),
        )
        for s in sites
    ]


def record_sites(
    old: Sequence[EditSite], new: Sequence[EditSite], limit: int
) -> tuple[EditSite, ...]:
    """The site list after a change: `new` (one change's sites, in document order) first, each
    merged with the older sites it overlaps or touches (typing a word is one site, not one per
    key), then the remaining older ones, without repeats, at most `limit`."""
    rest = list(old)
    fresh: list[EditSite] = []
    for site in new:
        merged = site
        while True:
            near = [s for s in rest if s.touches(merged)]
            if not near:
                break
            rest = [s for s in rest if not s.touches(merged)]
            merged = EditSite(min(merged.start, *(s.start for s in near)),
                              max(merged.end, *(s.end for s in near)))
        fresh.append(merged)
    out: list[EditSite] = []
    for site in fresh + rest:
        if site not in out:
            out.append(site)
    return tuple(out[:limit])


# --- syntax trees ---------------------------------------------------------------------------


@functools.cache
def tree_sitter_language(language_id: str) -> tree_sitter.Language | None:
    """The tree-sitter grammar for an LSP language id, or None when we have none."""
    module_name = TREE_SITTER_MODULES.get(language_id)
    if module_name is None:
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        log.warning("%s is not installed; %s documents get no syntax tree", module_name,
                    language_id)
        return None
    return tree_sitter.Language(module.language())


def _utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


def _utf8_len(s: str) -> int:
    return len(s) if s.isascii() else len(_utf8(s))


def _advance(point: tuple[int, int], s: str) -> tuple[int, int]:
    """The tree-sitter point after `s` starting at `point`: rows count "\\n" only, columns
    are UTF-8 bytes, as in tree-sitter's lexer."""
    newlines = s.count("\n")
    if newlines == 0:
        return point[0], point[1] + _utf8_len(s)
    return point[0] + newlines, _utf8_len(s[s.rfind("\n") + 1 :])


# --- documents ------------------------------------------------------------------------------


class Document:
    """One open text document: text, version, position encoding, syntax tree (None for
    languages without a grammar), and the recent edit sites, newest first."""

    def __init__(
        self,
        uri: str,
        language_id: str,
        version: int,
        text: str,
        *,
        encoding: str = DEFAULT_ENCODING,
        max_sites: int = DEFAULT_MAX_SITES,
    ) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        self.encoding = encoding
        self.max_sites = max_sites
        self._lines = LineIndex(text)
        self._sites: tuple[EditSite, ...] = ()
        language = tree_sitter_language(language_id)
        self._parser = tree_sitter.Parser(language) if language is not None else None
        self._source = _utf8(text) if self._parser is not None else b""
        self._tree = self._parser.parse(self._source) if self._parser is not None else None

    @property
    def encoding(self) -> str:
        """The position encoding of this document's LSP positions."""
        return self._encoding

    @encoding.setter
    def encoding(self, encoding: str) -> None:
        self._encoding = normalize_encoding(encoding)

    @property
    def text(self) -> str:
        return self._lines.text

    @property
    def lines(self) -> LineIndex:
        return self._lines

    @property
    def tree(self) -> tree_sitter.Tree | None:
        return self._tree

    @property
    def source(self) -> bytes:
        """The UTF-8 bytes the tree was parsed from (empty without a tree)."""
        return self._source

    @property
    def edit_sites(self) -> tuple[EditSite, ...]:
        return self._sites

    # Conversions at the LSP edge.

    def offset_at(self, position: types.Position, *, strict: bool = False) -> int:
        return self._lines.offset_of(position.line, position.character, self.encoding,
                                     strict=strict)

    def position_at(self, offset: int) -> types.Position:
        line, col_units = self._lines.position_of(offset, self.encoding)
        return types.Position(line=line, character=col_units)

    def offsets_of(self, range: types.Range, *, strict: bool = False) -> tuple[int, int]:
        a = self.offset_at(range.start, strict=strict)
        b = self.offset_at(range.end, strict=strict)
        return (a, b) if a <= b else (b, a)

    def range_of(self, start: int, end: int) -> types.Range:
        return types.Range(start=self.position_at(start), end=self.position_at(end))

    def byte_offset(self, offset: int) -> int:
        """The UTF-8 byte offset of a code-point offset (what tree-sitter nodes report);
        O(1) for ASCII text, else linear in the offset."""
        return offset if self.text.isascii() else len(_utf8(self.text[:offset]))

    def ts_point(self, offset: int) -> tuple[int, int]:
        """The tree-sitter point (row, UTF-8 byte column) of an offset. Rows count "\\n" only,
        so they differ from LSP lines in files with lone "\\r" line breaks."""
        text = self.text
        line_start = text.rfind("\n", 0, offset) + 1
        return text.count("\n", 0, offset), _utf8_len(text[line_start:offset])

    # Changes.

    def apply_change(self, range: types.Range | None, text: str, version: int) -> None:
        """An LSP content change: `range` (in this document's encoding, clamped) replaced by
        `text`, or the whole text replaced when `range` is None."""
        if range is None:
            self.replace_all(text, version)
        else:
            start, end = self.offsets_of(range)
            self.replace_span(start, end, text, version)

    def replace_span(self, start: int, end: int, text: str, version: int) -> None:
        """[start, end) (code points) replaced by `text`; the tree is edited and reparsed."""
        start, end = sorted((min(max(start, 0), len(self.text)), min(max(end, 0), len(self.text))))
        self._edit_tree(start, end, text)
        new_text = self.text[:start] + text + self.text[end:]
        self._lines = self._lines.replaced(new_text, start, end, len(text))
        sites = shift_sites(self._sites, start, end, len(text))
        self._sites = record_sites(sites, [EditSite(start, start + len(text))], self.max_sites)
        self._finish(version)

    def replace_all(self, text: str, version: int) -> None:
        """The whole text replaced; the edit sites are found by diffing the two versions."""
        reps = diff_replacements(self.text, text)
        # Back to front: every replacement's offsets in the old text stay valid for the tree and
        # the sites while the ones after it are being applied.
        sites = list(self._sites)
        for rep in reversed(reps):
            self._edit_tree(rep.start, rep.end, rep.text)
            sites = shift_sites(sites, rep.start, rep.end, len(rep.text))
        new_sites, shift = [], 0
        for rep in reps:
            new_sites.append(EditSite(rep.start + shift, rep.start + shift + len(rep.text)))
            shift += len(rep.text) - (rep.end - rep.start)
        self._lines = LineIndex(text)
        self._sites = record_sites(sites, new_sites, self.max_sites)
        if self._parser is not None:
            self._source = _utf8(text)
        self._finish(version)

    def _edit_tree(self, start: int, end: int, inserted: str) -> None:
        """Tell the tree and the source bytes that [start, end) of the current text becomes
        `inserted` (called before self.text changes)."""
        if self._tree is None:
            return
        text = self.text
        start_byte = self.byte_offset(start)
        old_end_byte = start_byte + _utf8_len(text[start:end])
        start_point = self.ts_point(start)
        encoded = _utf8(inserted)
        self._tree.edit(
            start_byte=start_byte,
            old_end_byte=old_end_byte,
            new_end_byte=start_byte + len(encoded),
            start_point=start_point,
            old_end_point=_advance(start_point, text[start:end]),
            new_end_point=_advance(start_point, inserted),
        )
        self._source = self._source[:start_byte] + encoded + self._source[old_end_byte:]

    def _finish(self, version: int) -> None:
        self.version = version  # DocumentStore.change refuses versions that go back
        if self._parser is not None:
            self._tree = self._parser.parse(self._source, self._tree)


class DocumentStore:
    """The open documents by URI. `encoding` is the negotiated position encoding; set it
    before documents are opened (it is fixed at `initialize`)."""

    def __init__(
        self, *, encoding: str = DEFAULT_ENCODING, max_sites: int = DEFAULT_MAX_SITES
    ) -> None:
        self.encoding = encoding
        self.max_sites = max_sites
        self._docs: dict[str, Document] = {}

    @property
    def encoding(self) -> str:
        return self._encoding

    @encoding.setter
    def encoding(self, encoding: str) -> None:
        self._encoding = normalize_encoding(encoding)

    def open(self, uri: str, language_id: str, version: int, text: str) -> Document:
        """Open (or re-open, replacing) a document."""
        doc = Document(uri, language_id, version, text, encoding=self.encoding,
                       max_sites=self.max_sites)
        self._docs[uri] = doc
        return doc

    def change(
        self, uri: str, version: int, changes: Sequence[types.TextDocumentContentChangeEvent]
    ) -> Document:
        """Apply a didChange notification's content changes, in order. A version older than
        the document's is refused (StaleChangeError) and nothing is applied: the editor's
        later changes are relative to what it sent in order, not to a stale replay."""
        doc = self.get(uri)
        if version < doc.version:
            raise StaleChangeError(uri, version, doc.version)
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                doc.apply_change(change.range, change.text, version)
            else:
                doc.apply_change(None, change.text, version)
        return doc

    def close(self, uri: str) -> None:
        if self._docs.pop(uri, None) is None:
            raise UnknownDocumentError(uri)

    def get(self, uri: str) -> Document:
        try:
            return self._docs[uri]
        except KeyError:
            raise UnknownDocumentError(uri) from None

    def __contains__(self, uri: object) -> bool:
        return uri in self._docs

    def __len__(self) -> int:
        return len(self._docs)

    def uris(self) -> list[str]:
        return list(self._docs)
