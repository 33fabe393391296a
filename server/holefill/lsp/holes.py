"""Hole detection: the insertion points of a document where its text is unfinished.

Sources, in order of precedence when two fall on one place: the cursor, explicit markers,
positions a command passes (selections), and recent edit sites that the syntax tree shows
unfinished (DESIGN.md §3, step 2).

Markers: a marker is a placeholder, not user text. Its hole starts where the marker starts and
`Hole.end` is where it ends; filling the hole *replaces* the marker range by the fill, so the
edit producer deletes the marker and inserts the fill in one replacement. Every other hole is an
empty range (`offset == end`): filling inserts and never deletes user text. `chunks_for` gives
the texts between holes (markers taken out) and maps fills back to document edits. Every
occurrence of the marker counts, also inside strings and comments: it is explicit, and the
marker is configurable for files that need the literal text.

Edit sites: tree-sitter-python seldom makes MISSING nodes and often wraps much of a file in one
big ERROR node, and the damage from an edit may show lines away from it (deleting a closing
quote turns the code after it into string content; the error appears where that string ends).
So a site counts as unfinished when an ERROR or MISSING node contains it or lies within
`max_distance` lines of it, where the site is first widened to the whole string or comment it
sits in, and only lines with code count as distance. The tree also accepts code the language
rejects (Python: bad dedents, `try` without `except`, an empty block; JSON: bad escapes) and
rejects some valid code (tree-sitter-json 0.24: exponents like `7e+18`). So for Python and
JSON the language's own parser (`ast.parse`, `json.loads`) has the last word: a file it
accepts has no unfinished site, and sites the tree does not flag are flagged when it reports
an error near them (`_parser_flagged`). On 300 seeded cuts per setting from standard-library
files (1-100 characters at 1, 2 or 3 places) this finds every deletion that alone breaks the
file, and 97-98% of them when two or three are deleted together; the tree alone finds 88-91%.
The price is paid in files broken at several places: a harmless deletion near the damage of
another is a hole too (0% of them with one deletion, 23-24% with two, 34-45% with three).
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import tree_sitter

from holefill.languages import DEFAULT_HOLE_MARKER
from holefill.lsp.documents import Document

HoleReason = Literal["cursor", "marker", "position", "edit"]
# When holes merge, the merged hole keeps the reason that comes first here.
_PRECEDENCE: dict[str, int] = {"cursor": 0, "marker": 1, "position": 2, "edit": 3}

DEFAULT_MAX_DISTANCE = 3  # lines

# ast.parse passes per region beyond one per site in it that the tree did not flag (a parse of
# a whole file costs about 30 ms per 230 kB).
MAX_EXTRA_PARSES = 2
# Larger Python files are checked only inside the definitions around the sites, not whole.
WHOLE_FILE_PARSE_LIMIT = 300_000  # characters

_DETECTED_AT = re.compile(r"\(detected at line (\d+)\)")


@dataclass(frozen=True, order=True)
class Hole:
    """An insertion point. The fill replaces [offset, end) of the document: empty except for a
    marker, whose own text it replaces."""

    offset: int
    end: int
    reason: HoleReason


@dataclass(frozen=True)
class HoleChunks:
    """A document cut at its holes: `chunks[i]` is the text between `holes[i - 1]` and
    `holes[i]` (len(holes) + 1 chunks, markers taken out) and starts at document offset
    `starts[i]`."""

    chunks: tuple[str, ...]
    holes: tuple[Hole, ...]
    starts: tuple[int, ...]

    def to_document(self, chunk: int, offset_in_chunk: int) -> int:
        """The document offset of a position inside a chunk."""
        return self.starts[chunk] + offset_in_chunk

    def edits(self, fills: Sequence[str]) -> list[tuple[int, int, str]]:
        """(start, end, text) document replacements, sorted, that fill the holes."""
        if len(fills) != len(self.holes):
            raise ValueError(f"{len(fills)} fills for {len(self.holes)} holes")
        return [(h.offset, h.end, f) for h, f in zip(self.holes, fills, strict=True)]

    def filled(self, fills: Sequence[str]) -> str:
        """The document text with the holes filled."""
        self.edits(fills)  # checks the count
        return "".join(c + f for c, f in zip(self.chunks, [*fills, ""], strict=True))


def chunks_for(text: str, holes: Sequence[Hole]) -> HoleChunks:
    """Cut `text` at `holes` (sorted, disjoint, as find_holes returns them)."""
    chunks, starts, pos = [], [0], 0
    for hole in holes:
        if not pos <= hole.offset <= hole.end <= len(text):
            raise ValueError(f"holes must be sorted, disjoint and inside the text: {hole}")
        chunks.append(text[pos : hole.offset])
        pos = hole.end
        starts.append(pos)
    chunks.append(text[pos:])
    return HoleChunks(tuple(chunks), tuple(holes), tuple(starts))


def find_holes(
    doc: Document,
    *,
    cursor: int | None = None,
    marker: str = DEFAULT_HOLE_MARKER,
    positions: Sequence[int] = (),
    max_distance: int = DEFAULT_MAX_DISTANCE,
    parser_check: bool = True,
) -> list[Hole]:
    """The holes of `doc`, sorted by offset, disjoint. A hole that touches or lies inside a
    marker joins it; holes at one offset merge. `parser_check=False` judges edit sites by the
    tree alone, without the second opinion of the language's own parser."""
    n = len(doc.text)
    holes = [Hole(o, o, "position") for o in (min(max(p, 0), n) for p in positions)]
    if cursor is not None:
        c = min(max(cursor, 0), n)
        holes.append(Hole(c, c, "cursor"))
    markers = marker_holes(doc.text, marker)
    edits = unfinished_sites(doc, max_distance, parser_check=parser_check, markers=markers)
    holes += markers + [Hole(o, o, "edit") for o in edits]
    return merge_holes(holes)


def marker_holes(text: str, marker: str) -> list[Hole]:
    """One hole per (non-overlapping) occurrence of `marker`."""
    out: list[Hole] = []
    if not marker:
        return out
    at = text.find(marker)
    while at >= 0:
        out.append(Hole(at, at + len(marker), "marker"))
        at = text.find(marker, at + len(marker))
    return out


def merge_holes(holes: Sequence[Hole]) -> list[Hole]:
    """Sorted, with holes that overlap or touch merged (the merged hole spans them all and
    keeps the reason of highest precedence)."""
    out: list[Hole] = []
    for h in sorted(holes, key=lambda h: (h.offset, _PRECEDENCE[h.reason])):
        if out and h.offset <= out[-1].end:
            last = out[-1]
            reason = min(last.reason, h.reason, key=_PRECEDENCE.__getitem__)
            out[-1] = Hole(last.offset, max(last.end, h.end), reason)
        else:
            out.append(h)
    return out


# --- edit sites -----------------------------------------------------------------------------


def unfinished_sites(
    doc: Document,
    max_distance: int,
    *,
    parser_check: bool = True,
    markers: Sequence[Hole] = (),
) -> list[int]:
    """The ends of the recent edit sites (where typing would continue) that look unfinished:
    the tree has an error near them, or the language's own parser (CPython's for Python,
    `json` for JSON) reports one near them. When that parser accepts the whole file, no site
    is unfinished, whatever the tree says. Errors that `markers` cause are not held against
    the sites near them. Without a tree nothing can be judged and nothing is returned."""
    tree = doc.tree
    if tree is None or not doc.edit_sites:
        return []
    check = _PARSER_CHECKS.get(doc.language_id) if parser_check else None
    lines = _checked_lines(doc, markers, check.marker_stand_in) if check else []
    whole = None
    if check is not None and len(doc.text) <= WHOLE_FILE_PARSE_LIMIT:
        whole = check.errors(_Region(0, len(lines) - 1, ""), lines, 1 + MAX_EXTRA_PARSES)
        if not whole:
            return []
    errors = _error_rows(_errors_besides(doc, tree, markers))
    gap = _Gaps(doc, max_distance)
    flagged: dict[int, tuple[int, int]] = {}
    pending: dict[int, tuple[int, int]] = {}
    for site in doc.edit_sites:
        rows = _site_rows(doc, tree, site.end)
        near = any(gap(rows, e) <= max_distance for e in errors)
        (flagged if near else pending)[site.end] = rows
    if pending and check is not None:
        found = _parser_flagged(doc, check, lines, whole, pending, flagged, max_distance, gap)
        return [*flagged, *found]
    return list(flagged)


def _errors_besides(
    doc: Document, tree: tree_sitter.Tree, markers: Sequence[Hole]
) -> list[tree_sitter.Node]:
    """The error nodes, less those a marker explains: ones that touch a marker and end by the
    line after it (tree-sitter's recovery from a marker reaches at most that far)."""
    spans = [(doc.byte_offset(m.offset), doc.byte_offset(m.end)) for m in markers]
    rows = [doc.ts_point(m.offset)[0] for m in markers]
    return [
        e
        for e in error_nodes(tree)
        if not any(
            e.start_byte <= b and a <= e.end_byte and r <= e.start_point[0]
            and e.end_point[0] <= r + 1
            for (a, b), r in zip(spans, rows, strict=True)
        )
    ]


def _error_rows(nodes: Sequence[tree_sitter.Node]) -> list[tuple[int, int]]:
    return [(e.start_point[0], e.end_point[0]) for e in nodes]


def error_nodes(tree: tree_sitter.Tree) -> list[tree_sitter.Node]:
    """The outermost ERROR nodes and the MISSING nodes outside them; only subtrees that
    contain an error are visited."""
    out = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            out.append(node)  # an outer ERROR is at least as near as anything inside it
        else:
            stack.extend(c for c in node.children if c.has_error or c.is_missing)
    return out


def _is_lexical(node_type: str) -> bool:
    # Strings and comments in all three grammars: string, string_content, string_literal,
    # raw_string_literal, comment, ...
    return "string" in node_type or "comment" in node_type


def _site_rows(doc: Document, tree: tree_sitter.Tree, offset: int) -> tuple[int, int]:
    """The rows of a site, widened to the outermost string or comment on either side of it:
    an edit inside one shows its damage where that string or comment ends."""
    row = doc.ts_point(offset)[0]
    lo, hi = row, row
    byte = doc.byte_offset(offset)
    for b in {max(byte - 1, 0), byte}:
        node: tree_sitter.Node | None = tree.root_node.descendant_for_byte_range(b, b)
        outer = None
        while node is not None:
            if _is_lexical(node.type):
                outer = node
            node = node.parent
        if outer is not None:
            lo, hi = min(lo, outer.start_point[0]), max(hi, outer.end_point[0])
    return lo, hi


# Lines that start with one of these (after indentation) are comments; with blank lines they do
# not count as distance.
_LINE_COMMENTS: dict[str, tuple[str, ...]] = {"python": ("#",), "cpp": ("//",), "c": ("//",)}


class _Gaps:
    """Distances between row ranges of a document, counting only lines with code: an error
    reported after a run of comments and blank lines is still next to the edit above them."""

    def __init__(self, doc: Document, limit: int) -> None:
        self._doc = doc
        self._limit = limit
        self._comments = _LINE_COMMENTS.get(doc.language_id, ())

    def __call__(self, a: tuple[int, int], b: tuple[int, int]) -> int:
        """0 when the ranges overlap, else 1 + the code lines between them; counting stops
        once the result exceeds the limit."""
        if a[0] > b[0]:
            a, b = b, a
        if b[0] <= a[1]:
            return 0
        gap = 1
        for row in range(a[1] + 1, b[0]):
            if self._is_code(row):
                gap += 1
                if gap > self._limit:
                    break
        return gap

    def _is_code(self, row: int) -> bool:
        lines = self._doc.lines
        if row >= lines.line_count:
            return False
        start, end = lines.line_span(row)
        content = self._doc.text[start:end].strip()
        return bool(content) and not content.startswith(self._comments)


# --- the language's own parser as a second opinion ------------------------------------------


class _Region(NamedTuple):
    first: int  # rows of the document
    last: int
    indent: str  # removed from the start of each line


class _ParserCheck(NamedTuple):
    # errors(region, lines, max_parses): row ranges (document rows) of up to max_parses errors
    errors: Callable[[_Region, list[str], int], list[tuple[int, int]]]
    # what a marker becomes for the parser: a hole mostly stands for a name or a value
    marker_stand_in: str
    # whether sites are also checked inside the definitions around them
    by_definition: bool


def _parser_flagged(
    doc: Document,
    check: _ParserCheck,
    lines: list[str],
    whole: list[tuple[int, int]] | None,
    pending: dict[int, tuple[int, int]],
    flagged: dict[int, tuple[int, int]],
    max_distance: int,
    gap: _Gaps,
) -> list[int]:
    """Sites among `pending` (offset -> rows) that the parser reports an error near.

    A parser stops at its first error, and an error elsewhere must not hide the one at a site.
    So a Python site is also checked inside the function and class definitions around it,
    dedented: small, and independent of damage outside them. Each error goes to the nearest
    site of its region if that is within `max_distance`; an error nearest to a site the tree
    already `flagged` is that site's damage and flags no other. `whole` holds the errors of
    the whole file (None when it was too big to parse). Parser rows are lines split at \n,
    \r\n and \r; tree-sitter rows at \n only, so distances are approximate with lone \r."""
    errors: dict[_Region, list[tuple[int, int]]] = {}
    members: dict[_Region, list[int]] = {}
    if whole is not None:
        everything = _Region(0, len(lines) - 1, "")
        errors[everything], members[everything] = whole, list(pending)
    if check.by_definition:
        assert doc.tree is not None  # the caller checked
        for offset in pending:
            for region in _definitions_around(doc, doc.tree, offset, lines):
                members.setdefault(region, []).append(offset)
    found: set[int] = set()
    for region, offsets in members.items():
        if region not in errors:
            errors[region] = check.errors(region, lines, len(offsets) + MAX_EXTRA_PARSES)
        rows = {o: pending[o] for o in offsets}
        rows.update((o, r) for o, r in flagged.items() if region.first <= r[0] <= region.last)
        for err in errors[region]:
            near = {o: gap(r, err) for o, r in rows.items()}
            best = min(near.values())
            if best <= max_distance:
                found.update(o for o, d in near.items() if d == best and o in pending)
    return sorted(found)


def _checked_lines(doc: Document, markers: Sequence[Hole], stand_in: str) -> list[str]:
    """The lines of the text with their line breaks, split where LSP and Python split them,
    markers replaced by `stand_in` (a marker with a line break in it stays)."""
    text, starts = doc.text, doc.lines.starts
    lines = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    marker = text[markers[0].offset : markers[0].end] if markers else ""
    if marker and not any(c in marker for c in "\r\n"):
        lines = [line.replace(marker, stand_in) for line in lines]
    return lines


# Python: tree nodes whose text, dedented, is a program of its own.
_DEFINITIONS = ("function_definition", "class_definition", "decorated_definition")


def _definitions_around(
    doc: Document, tree: tree_sitter.Tree, offset: int, lines: list[str]
) -> list[_Region]:
    """The function and class definitions that contain an offset, innermost first."""
    out = []
    byte = doc.byte_offset(offset)
    node: tree_sitter.Node | None = tree.root_node.descendant_for_byte_range(byte, byte)
    while node is not None:
        parent = node.parent
        decorated = parent is not None and parent.type == "decorated_definition"
        if node.type in _DEFINITIONS and not decorated and node.start_point[0] < len(lines):
            row, col = node.start_point
            line = lines[row]
            indent = line[: len(line) - len(line.lstrip(" \t"))]
            if len(indent) == col:  # starts its line (indentation is ASCII, so bytes = chars)
                out.append(_Region(row, min(node.end_point[0], len(lines) - 1), indent))
        node = parent
    return out


def _python_errors(region: _Region, lines: list[str], max_parses: int) -> list[tuple[int, int]]:
    """Up to `max_parses` syntax errors of a region, found by parsing, blanking the lines of
    each error (a blank line is neutral in Python and keeps line numbers) and parsing again."""
    n = len(region.indent)
    text = [
        line[n:] if line.startswith(region.indent) else line
        for line in lines[region.first : region.last + 1]
    ]
    out: list[tuple[int, int]] = []
    for _ in range(max_parses):
        err = _python_first_error("".join(text), len(text) - 1)
        if err is None:
            break
        out.append((err.rows[0] + region.first, err.rows[1] + region.first))
        if err.to_end:
            break  # after an unterminated string nothing further down can be told apart
        for r in range(err.rows[0], err.rows[1] + 1):
            text[r] = text[r][len(text[r].rstrip("\r\n")) :]
    return out


class _PythonError(NamedTuple):
    rows: tuple[int, int]  # 0-based, first and last line the parser names
    to_end: bool  # an unterminated string: everything up to `detected at line N` is string


def _python_first_error(source: str, last: int) -> _PythonError | None:
    """Where the first syntax error ast.parse reports lies, or None when the text parses or
    the parser gives up otherwise."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. are SyntaxWarnings
            ast.parse(source)
    except SyntaxError as e:
        first = min(max((e.lineno or 1) - 1, 0), last)
        end = min(max((e.end_lineno or e.lineno or 1) - 1, first), last)
        detected = _DETECTED_AT.search(e.msg or "")
        if detected:
            end = min(max(end, int(detected.group(1)) - 1), last)
        return _PythonError((first, end), detected is not None)
    except (ValueError, RecursionError, MemoryError):  # null bytes, nesting too deep
        return None
    return None


def _json_errors(region: _Region, lines: list[str], max_parses: int) -> list[tuple[int, int]]:
    """The first error `json.loads` reports (it cannot go on after one)."""
    try:
        json.loads("".join(lines[region.first : region.last + 1]))
    except json.JSONDecodeError as e:
        row = min(region.first + e.lineno - 1, region.last)
        return [(row, row)]
    except (ValueError, RecursionError):
        return []
    return []


_PARSER_CHECKS: dict[str, _ParserCheck] = {
    "python": _ParserCheck(_python_errors, "__hole__", by_definition=True),
    "json": _ParserCheck(_json_errors, "null", by_definition=False),
}
