"""Windows for the brace languages: C, C++ and JSON (the Python window is in window.py).

Without a window a C++ check lexes and searches the whole file (3 ms at 17 lines, 645 ms at
3,000), and the incremental engine's right context (closed once per hole, its triples growing
about quadratically with its length) is the whole rest of the file. The window here cuts the
text before the first hole and after the last one:

- the *head* (`brace_head`, also where the engine's left parse starts) is the start of the
  top-level declaration that holds the first hole (C, C++) or 0 (JSON, one top-level value);
- inside that declaration (or value), *regions* of fixed text before the first hole and after
  the last one are replaced by short stand-ins (`Window.prefix`, `Window.suffix`); the rest of
  the file after the last hole's top-level declaration is dropped (`Window.tail`).

Contract (soundness): for every filling y of the holes, if the windowed text filled with y is
valid for our grammar, so is the whole text filled with y. It holds for every y, not only for
fillings that keep the reading of the fixed text (the anchored semantics the checker applies
by default), so a windowed YES is a whole-file YES under both semantics. The converse may fail
(a window only over-rejects); on real code it holds: tests/check/test_window_brace.py replays
every token prefix of real middles and finds no NO, and sweeps random and structured fillings
(blocks closed and reopened, extra braces, containers ended early, strings and comments left
open) of HumanEval-X C++ files and JSON documents: no windowed YES where the file says NO in
about 18,000 fillings (the slow test there), no real middle refused.

Write the whole text as H L W R D: H the verified pieces before the head, L W R the top-level
declaration(s) from the head to the end e of the last hole's one (L before the first region
end on the left, R after the first region start on the right), D the pieces after e (JSON has
neither H nor D). The window is L' W R', with L' and R' the stand-in texts. Five facts make it
sound:

(1) Verified context. H and D are cut into top-level pieces at line starts (tree-sitter-cpp
proposes the pieces, our grammar judges them: `_accepts`, one cached check per piece, so a
file is checked once and an edit re-checks only the pieces it touched). The head is the start
of the top-level piece that holds the first hole, or the start of the first piece our grammar
refuses if that comes earlier (then the whole file is NO for every filling, and so is the
window: the refused piece is inside it). Every refused piece after the last hole is kept
inside the window too. So H and D are valid, each empty or ending with a line break that no
backslash continues.

(2) Concatenation (C). For our C and C++ grammars, if A and B are valid and A is empty or ends
with such a line break, A + B is valid: a translation unit is a sequence of declarations and
preprocessor lines (ISO C 6.9, ISO C++ [basic.link]), and a directive starts at a line start
(tests/check/test_window_brace.py pins this down for our grammar). So L W R valid implies
H L W R D valid.

(3) Stand-ins that force their reading. A region is fixed text that our grammar accepts in a
known role (each member checked on its own, cached), replaced by a short text that can only
be read in that role:

- a block body `{ Y }` becomes `{0;}`: a `{` followed by an expression statement opens a
  compound statement and nothing else (not an initializer list, class, enum or namespace
  body);
- after the last hole, the rest of a block after one of its statements, up to the block's
  `}`, becomes `0;`: the text before it ends with a fixed `;` or `}` after the last hole,
  after which `0;` can only be a new statement of the block that the fixed `}` closes; before
  the first hole, the statements of a block from its `{` up to the last complete one become
  `0;` (a statement right after a fixed `{`);
- likewise the members of a namespace body (C++) become `namespace _ {}`, which is only a
  declaration of a namespace body;
- JSON: after the last hole, the rest of an array after one of its elements (`, e2, ...`)
  becomes `,0`, of an object `,"":0`: a `,` after a fixed value only separates members of
  the container that the next fixed `]` or `}` closes, and `0` is only a value, `"":0` only
  a member. Before the first hole, the members from the `[` or `{` up to the last complete
  one become `0,` or `"":0,`. A complete long value becomes `0`.

Before the first hole the last complete member of each body stays (a filling may continue it:
`else`, more digits), and after the last hole the first member that ends where every reading
is code again (fact 4). If the windowed text is valid, every stand-in is read in its role, and
a context-free grammar lets a subtree be replaced by any other derivation of the same role:
the statements of a compound statement, the declarations of a namespace body, the members of
a JSON array or object each form a sequence whose members do not depend on their neighbours
(B: the grammar shape of ISO C/C++ and RFC 8259, and of our grammar files; a grammar that
gave, say, `switch` bodies a statement rule of their own would have to say so here). Putting
each region back gives L W R, valid.

(4) The same tokens around every region. Before the first hole there is no filling: the text
is read the same way in both texts, from the head (after a verified piece: code). After the
last hole a filling may end inside a string, comment, raw string or directive that runs on
into the fixed text, which changes how that text is read, and a region must be read the same
way in both texts. `_Modes` runs a small automaton over the fixed text from the last hole with
every lexical state a filling could leave (code, string, character, line or block comment, raw
string, directive, after an escape, after a `/` or an `R`; JSON: code, string, escape),
merging and dropping states as characters rule them out (a raw line break ends a string, `*/`
a block comment, a letter outside true/false/null is no JSON code), and a region may only
begin and end where every surviving state is plain code. The stand-ins contain no quote,
slash or backslash, so after each region both texts are in code again at the same place.
Block comments and raw strings count only when their terminator occurs before the end of the
window (the windowed text has no other); raw strings are taken as `R"(...)"` (our grammar has
no custom delimiters; a grammar with them needs the raw-string states widened).

(5) No lexeme runs on into the dropped text. A filling may leave a lexeme open that the
windowed text, ending at e, reads as something else: `/*2` as `/`, `*`, `2` when no `*/`
follows up to e, while in the whole text the comment runs on to the next `*/` in D and covers
the fixed text after the hole. Where D is dropped, the suffix ends with a guard
(holefill.lexing.guard): a block comment that makes such a lexeme end inside it, so that the
windowed check reads it across the fixed text and the anchors refuse it, as they do in the
whole text. The stand-ins contain no slash, star or quote, so a run alive across a region of
the whole text is alive across its stand-in too. When no guard can be built, D is kept.

The engine (holefill.check.incremental) starts its left parse at the head as it is (it has no
stand-in for the left) and reads the right up to the tail with the suffix.

Costs: one tree-sitter parse of the first chunk (head) and one of the text from the head on,
one check per top-level piece, member or body not seen before (about 0.1 ms per line, cached
by text: a second request on the same file re-checks nothing), a per-character pass over the
last hole's top-level declaration (C; JSON: until the readings agree, then a regular
expression scan).
"""

from __future__ import annotations

import bisect
import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from holefill.check import reparse

BRACE_LANGUAGES = frozenset({"c", "cpp", "json"})

# Our grammar checks per piece or region are cached by text across requests.
ACCEPT_CACHE_SIZE = 8192
WINDOW_CACHE_SIZE = 32
SOURCE_CACHE_SIZE = 8
CACHED_TEXT_CHARS = 2_000_000  # texts above this are not kept by the window caches
HEADS_KEPT = 8  # first chunks whose heads serve the texts that extend them
HEAD_REACH = 2_000  # by at most this many characters (typed text: a longer one is searched)
# The lexical pass of C/C++ stops this far after the last hole; regions lie before it.
C_MODES_LIMIT = 50_000
# The lexical pass before the first hole reads from the head on (one reading, about 35 ms
# per 100,000 characters): a hole deep in a 4,000-line class still gets its stand-ins.
C_LEFT_LIMIT = 400_000
# A region shorter than this (after stripping) is kept: its stand-in would save too little.
MIN_REGION = 12

# --- entry points ---------------------------------------------------------------------------


def brace_head(language: str, first: str) -> int:
    """Where the window, and the engine's left parse, may start in the first chunk `first`:
    a line start such that first[:head] is a run of top-level pieces our grammar accepts
    (fact 1 in the module docstring); 0 for JSON."""
    if language == "json":
        return 0
    return _c_head(language, first)


def brace_window(language: str, chunks: Sequence[str]) -> tuple[int, str, int, str]:
    """(head, prefix, tail, suffix) of the window around all holes of `chunks` (see the
    module docstring): cut `head` characters from the first chunk and put `prefix` before
    it, cut `tail` characters from the last chunk and put `suffix` after it."""
    if sum(map(len, chunks)) > CACHED_TEXT_CHARS:  # a huge file is not kept
        return _brace_window.__wrapped__(language, tuple(chunks))
    return _brace_window(language, tuple(chunks))


# Windows by text: typing in one hole leaves the segments and pieces between later holes as
# they were, and their windows cost several tree-sitter parses each. A remembered window is
# one a search could find for the text: its trees may be incremental parses that depend on
# the text the request started from (holefill.check.reparse), and any tree gives a sound
# window (the proposals are judged, facts 1-5).
@functools.lru_cache(maxsize=WINDOW_CACHE_SIZE)
def _brace_window(language: str, chunks: tuple[str, ...]) -> tuple[int, str, int, str]:
    start = brace_head(language, chunks[0])
    doc = "".join(chunks)[start:]  # the holes empty
    h = len(chunks[0]) - start  # the first hole
    p = len(doc) - len(chunks[-1])  # the last hole
    if language == "json":
        left, right, e = _json_regions(doc, h, p)
    else:
        left, right, e = _c_all_regions(language, doc, h, p)
    head, prefix = _stand_in_before(doc, left)
    cut, suffix = _stand_in(doc, right, e)
    if language != "json" and e < len(doc):  # fact 5: a guard where the tail is dropped
        from holefill.check.checker import Checker
        from holefill.lexing.guard import guard

        ref = Checker.for_language(language).lexer.reference
        got = guard(ref, doc[p:cut] + suffix, doc[e:])
        suffix += doc[e:] if got is None else got
    return start + head, prefix, len(doc) - cut, suffix


# --- parsing and checking -------------------------------------------------------------------


class _Source:
    """A text, its tree-sitter tree (holefill.check.reparse: fresh, or incremental from a
    recent fresh parse of a similar text), and offsets between code points (ours) and UTF-8
    bytes (tree-sitter's)."""

    def __init__(self, language: str, text: str) -> None:
        self.text = text
        data = text.encode("utf-8")
        self.tree = reparse.parse(language, data)  # nodes do not keep their tree alive
        self.root = self.tree.root_node
        # code point index of every non-ASCII character, and the extra bytes before it
        self._wide = [] if text.isascii() else \
            [m.start() for m in re.finditer(r"[^\x00-\x7f]", text)]
        extra, self._extra = 0, []
        for i in self._wide:
            self._extra.append(extra)
            extra += len(text[i].encode("utf-8")) - 1
        self._wide_bytes = [i + x for i, x in zip(self._wide, self._extra, strict=True)]
        self.starts: list[int] | None = None  # _piece_starts, kept with the remembered tree

    def char(self, byte: int) -> int:
        k = bisect.bisect_left(self._wide_bytes, byte)
        if k == 0:
            return byte
        extra = self._extra[k - 1] + len(self.text[self._wide[k - 1]].encode("utf-8")) - 1
        return byte - extra

    def byte(self, char: int) -> int:
        k = bisect.bisect_left(self._wide, char)
        if k == 0:
            return char
        return char + self._extra[k - 1] + len(self.text[self._wide[k - 1]].encode("utf-8")) - 1

    def start(self, node: Any) -> int:
        return self.char(node.start_byte)

    def end(self, node: Any) -> int:
        return self.char(node.end_byte)


@functools.lru_cache(maxsize=SOURCE_CACHE_SIZE)
def _remembered_source(language: str, text: str) -> _Source:
    """The parse of `text`, remembered: typing in a hole leaves the text after it as it was,
    and each fresh parse of a 10,000-line file takes 10-35 ms. The tree may be incremental
    from an earlier text's (holefill.check.reparse): a parse this text could get, not
    always the one a fresh parse gives."""
    return _Source(language, text)


def _source(language: str, text: str) -> _Source:
    """`_remembered_source`, for texts small enough to keep."""
    if len(text) > CACHED_TEXT_CHARS:
        return _Source(language, text)
    return _remembered_source(language, text)


def document_source(language: str, text: str) -> _Source:
    """`_source` for a request's whole document: its parse also proposes the piece starts of
    its segments' heads (`_proposed_starts`)."""
    src = _source(language, text)
    if len(text) >= HOLDER_MIN_CHARS:
        _hold(language, src)
    return src


@functools.lru_cache(maxsize=ACCEPT_CACHE_SIZE)
def _accepts(language: str, text: str) -> bool:
    """Whether our grammar accepts `text` as a whole program (UNKNOWN counts as no)."""
    from holefill.check.checker import Checker, Verdict

    return Checker.for_language(language).completable([text], anchored=False) is Verdict.YES


def _accepts_all(language: str, texts: Iterator[str]) -> bool:
    return all(_accepts(language, t) for t in texts)


# --- C and C++: the head and the top-level pieces ---------------------------------------------


def _c_head(language: str, first: str) -> int:
    """The nearest verified piece start at or before the hole's line (see brace_head), or
    the head of a recent first chunk that `first` extends: typing into the hole appends to
    the text before it, which leaves the verified pieces before that head as they were (the
    window may then start up to HEAD_REACH characters earlier than a search would put
    it)."""
    heads = _recent_heads(language)
    with heads.lock:
        for old, head in reversed(heads.items()):
            if 0 < len(first) - len(old) <= HEAD_REACH and first.startswith(old):
                heads.move_to_end(old)
                return head
    head = _searched_head(language, first)
    if len(first) <= CACHED_TEXT_CHARS:
        with heads.lock:
            heads[first] = head
            while len(heads) > HEADS_KEPT:
                heads.popitem(last=False)
    return head


class _Heads(OrderedDict[str, int]):
    """Recent first chunks and their heads, most recent last, with a lock (requests are
    prepared on worker threads)."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()


@functools.cache
def _recent_heads(language: str) -> _Heads:
    return _Heads()


def forget() -> None:
    """Drop the remembered windows, parses and heads (for benchmarks and tests that start
    cold; the grammar's answers on pieces, `_accepts`, stay)."""
    for f in (_brace_window, _remembered_source, _searched_head):
        f.cache_clear()
    for language in BRACE_LANGUAGES:
        with _recent_heads(language).lock:
            _recent_heads(language).clear()
        with _holders_lock:
            _recent_holders(language).clear()


@functools.lru_cache(maxsize=8)
def _searched_head(language: str, first: str) -> int:
    """The nearest verified piece start at or before the hole's line, searched."""
    hole_line = first.rfind("\n") + 1
    starts = [b for b in _proposed_starts(language, first) if b <= hole_line]
    if starts[-1] != hole_line and not first[hole_line:].strip() \
            and _clean_line_start(first, hole_line):
        starts.append(hole_line)  # the hole's line holds only blanks before the hole
    for a, b in zip(starts, starts[1:], strict=False):
        if not _accepts(language, first[a:b]):
            return a
    return starts[-1]


def _proposed_starts(language: str, first: str) -> list[int]:
    """Piece starts of `first` (a text before a hole): read off the tree of a recently
    parsed text that holds its lines up to the hole's (the request's document, which its
    cuts parsed without the holes' lines: a segment's text is a part of it), with the hole's
    line when it starts with code, or else off its own parse. Either tree only proposes
    starts; the pieces between them are checked by our grammar (`_searched_head`). At
    10,000 lines the segments' own parses took 20-25 ms of a request."""
    hole_line = first.rfind("\n") + 1
    lines = first[:hole_line]  # the document parsed for cuts leaves out the hole's line
    if len(lines) >= HOLDER_MIN_CHARS:
        with _holders_lock:
            holders = list(_recent_holders(language))
        for src in reversed(holders):
            a = 0 if src.text.startswith(lines) else src.text.find(lines)
            if a < 0:
                continue
            starts = _piece_starts(src)
            lo = bisect.bisect_right(starts, a)
            hi = bisect.bisect_left(starts, a + hole_line)
            got = [0, *(b - a for b in starts[lo:hi])]
            if _clean_line_start(first, hole_line) and (first[hole_line:hole_line + 1].isalpha()
                                                        or first.startswith(("_", "#"), hole_line)):
                got.append(hole_line)  # as a parse of `first` would propose it
            return got
    return _piece_starts(_source(language, first))


# Large texts parsed lately (a request's document), which the heads of its segments are
# read from; a few per language.
HOLDER_MIN_CHARS = 16_384
HOLDERS_KEPT = 2
_holders_lock = threading.Lock()


@functools.cache
def _recent_holders(language: str) -> list[_Source]:
    return []


def _hold(language: str, src: _Source) -> None:
    with _holders_lock:
        holders = _recent_holders(language)
        holders[:] = [h for h in holders if h.text != src.text][-(HOLDERS_KEPT - 1):] + [src]


def _piece_starts(src: _Source) -> list[int]:
    """0 and the line starts where a top-level node of the tree begins its line (only blanks
    before it on the line, and no backslash continuing the line before)."""
    if src.starts is not None:
        return list(src.starts)
    text, out = src.text, [0]
    for child in src.root.children:
        c = src.start(child)
        line = text.rfind("\n", 0, c) + 1
        if line > out[-1] and not text[line:c].strip(" \t\f\v\r") \
                and _clean_line_start(text, line):
            out.append(line)
    src.starts = out
    return list(out)


def _clean_line_start(text: str, pos: int) -> bool:
    """pos follows a line break that no backslash continues (or is 0)."""
    if pos == 0:
        return True
    if text[pos - 1] != "\n":
        return False
    i = pos - 2
    while i >= 0 and text[i] == "\r":
        i -= 1
    return i < 0 or text[i] != "\\"


# --- C and C++: the tail ----------------------------------------------------------------------


def _c_all_regions(language: str, doc: str, h: int, p: int
                   ) -> tuple[list[_Region], list[_Region], int]:
    """The regions before the first hole h and after the last hole p of `doc` (the text from
    the head on), and the end e of the window: the last hole's top-level piece, and every
    piece after it that our grammar refuses (facts 1 and 3). The pieces after the last hole
    come from a parse of the text after it alone: with the holes empty, an unclosed bracket
    of the filling's place can make tree-sitter read the whole rest of the file as one node."""
    starts = [p + b for b in _piece_starts(_source(language, doc[p:]))][1:] + [len(doc)]
    e = next((b for b in starts if doc[p:b].strip()), len(doc))
    later = [b for b in starts if b >= e]
    for a, b in zip(later, later[1:], strict=False):
        if b > a and not _accepts(language, doc[a:b]):
            e = b  # a refused piece stays in the window
    src = _source(language, doc[:e])
    left: list[_Region] = []
    if h <= C_LEFT_LIMIT:  # the text before the first hole is read from the head on
        left = _c_left_regions(language, src, h, _Modes(_C_AUTOMATON, doc, 0, h, 1 << CODE))
    modes = _Modes(_C_AUTOMATON, doc, p, min(e, p + C_MODES_LIMIT), _c_starts(doc[p:e]))
    closed = _directive_closed(doc[:e], p)
    right = src if closed is None else _source(language, closed)
    return left, _c_regions(language, right, p, e, modes), e


# A directive keyword and the neutral line that keeps its place in a conditional group.
_DIRECTIVE = re.compile(r"[ \t]*#[ \t]*([A-Za-z_]*)")
_NEUTRAL = {"if": "#if 1", "ifdef": "#if 1", "ifndef": "#if 1", "elif": "#elif 1",
            "elifdef": "#elif 1", "elifndef": "#elif 1", "else": "#else", "endif": "#endif"}


def _directive_closed(text: str, p: int) -> str | None:
    """`text` with the directive line that holds position p (continuations included)
    replaced by a well-formed line of the same length (`#if 1`, `#elif 1`, `#else`, `#endif`
    for the lines of a conditional group, blanks for the others; line breaks kept), or None
    when p is on no directive line or the line is too short.

    For tree-sitter's proposals after the last hole only: with the hole empty, a directive
    cut in the middle (`#if defined( B_NO_TY|include <vector>`) can be read across its line
    end, the body of the next `namespace` as a block, and a region's stand-in would then
    stand in the wrong role (a window NO where the file says YES). Soundness never rests on
    this reading: regions begin where every lexical state is code again (after the line's
    end) and our grammar checks their members."""
    start = text.rfind("\n", 0, p) + 1
    while start > 0 and not _clean_line_start(text, start):  # a continued line
        start = text.rfind("\n", 0, start - 1) + 1
    m = _DIRECTIVE.match(text, start)
    if m is None or m.end() > p + 1:
        return None
    end = start
    while True:  # the line's end, after its continuations
        end = text.find("\n", max(end, p))
        if end < 0:
            end = len(text)
            break
        if _clean_line_start(text, end + 1):
            break
        end += 1
    neutral = _NEUTRAL.get(m.group(1), "")
    if len(neutral) > end - start:
        return None
    line = "".join("\n" if ch == "\n" else " " for ch in text[start:end])
    return text[:start] + neutral + line[len(neutral):] + text[end:]


@dataclass(frozen=True)
class _Region:
    start: int
    end: int
    stand_in: str


# Tree-sitter node types of the bodies whose rest may become a stand-in, and the stand-ins.
_BLOCK = "compound_statement"
_DECLS = "declaration_list"  # namespace and extern "C" bodies
_RUN_STAND_IN = {_BLOCK: "0;", _DECLS: "namespace _ {}"}
_BODY_STAND_IN = "0;"


def _c_context(kind: str, item: str) -> str:
    """A whole program in which `item` stands where a member of a `kind` body does."""
    if kind == _BLOCK:
        return "void _() {\n" + item + "\n}\n"
    return "namespace _ {\n" + item + "\n}\n"


def _c_regions(language: str, src: _Source, p: int, e: int, modes: _Modes) -> list[_Region]:
    """The rests of the bodies around the last hole, then whole block bodies after it."""
    runs = []
    for body, kind in _enclosing(src, p, e, {_BLOCK: _BLOCK, _DECLS: _DECLS}):
        if kind == _DECLS and language != "cpp":
            continue
        region = _c_run(language, src, body, kind, p, modes)
        if region is not None:
            runs.append(region)
    bodies = list(_c_bodies(language, src, _tops_from(src, p), p, e, runs, modes))
    return sorted([*runs, *bodies], key=lambda r: r.start)


def _enclosing(src: _Source, p: int, e: int, kinds: dict[str, str]) -> list[tuple[Any, str]]:
    """The nodes of the given types that hold position p strictly inside (their opening
    bracket before it, their closing one at or after it) and end by e, innermost first."""
    out = []
    node = src.root
    b = src.byte(p)
    while True:
        child = next((c for c in node.children if c.start_byte < b < c.end_byte), None)
        if child is None:
            break
        if child.type in kinds and src.end(child) <= e:
            out.append((child, kinds[child.type]))
        node = child
    return out[::-1]


def _c_run(language: str, src: _Source, body: Any, kind: str, p: int,
           modes: _Modes) -> _Region | None:
    """The rest of `body` after its first member that ends with a fixed `;` or `}` after p,
    if our grammar accepts each later member in that kind of body."""
    text = src.text
    members = _inner(src, body, "{", "}")
    if members is None:
        return None
    close = src.end(body) - 1
    ends = [src.end(m) for m in members]
    # the first member after the hole that ends with a fixed `;` or `}` where every reading
    # is code again (the filling's own lexeme has ended by then)
    a = next((x for x in ends if x - 1 >= p and text[x - 1] in ";}" and modes.code_at(x)),
             None)
    if a is None or len(text[a:close].strip()) < MIN_REGION:
        return None
    rest = [m for m, x in zip(members, ends, strict=True) if x > a]
    if not modes.code_at(close) or not _tiles(src, rest, a, close):
        return None
    if not _accepts_all(language, (_c_context(kind, text[src.start(m):src.end(m)])
                                   for m in rest)):
        return None
    return _Region(a, close, "\n" + _RUN_STAND_IN[kind] + "\n")


def _tops_from(src: _Source, p: int) -> Iterator[Any]:
    """The top-level nodes from the one that holds or follows position p on."""
    b = src.byte(p)
    # Not `first_child_for_byte`: it crashed the process on real C headers (a segfault in the
    # node it returned), past the end and also inside the text.
    for node in src.root.children:
        if node.end_byte > b:
            yield node


def _c_bodies(language: str, src: _Source, nodes: Iterable[Any], p: int, e: int,
              runs: list[_Region], modes: _Modes) -> Iterator[_Region]:
    """Maximal block bodies after p (outside the runs) whose statements our grammar accepts,
    as regions between their braces."""
    for child in nodes:
        a, b = src.start(child), src.end(child)
        if a >= e:
            break
        if b <= p or any(r.start <= a and b <= r.end for r in runs):
            continue
        if child.type == _BLOCK and a > p and b <= e:
            region = _c_body(language, src, child, runs, modes)
            if region is not None:
                yield region
                continue
        yield from _c_bodies(language, src, child.children, p, e, runs, modes)


def _c_body(language: str, src: _Source, block: Any, runs: list[_Region],
            modes: _Modes) -> _Region | None:
    text = src.text
    members = _inner(src, block, "{", "}")
    a, b = src.start(block) + 1, src.end(block) - 1
    if members is None or len(text[a:b].strip()) < MIN_REGION:
        return None
    if any(a < r.end and r.start < b for r in runs):
        return None
    if not modes.code_at(a) or not modes.code_at(b) or not _tiles(src, members, a, b):
        return None
    if not _accepts_all(language, (_c_context(_BLOCK, text[src.start(m):src.end(m)])
                                   for m in members)):
        return None
    return _Region(a, b, _BODY_STAND_IN)


def _c_left_regions(language: str, src: _Source, h: int, modes: _Modes) -> list[_Region]:
    """Before the first hole h: the members of each body around it before the last one that
    ends before h (that one and the one holding the hole stay), and whole block bodies."""
    runs = []
    for body, kind in _enclosing(src, h, len(src.text), {_BLOCK: _BLOCK, _DECLS: _DECLS}):
        if kind == _DECLS and language != "cpp":
            continue
        members = _inner(src, body, "{", "}")
        if members is None:
            continue
        done = [m for m in members if src.end(m) <= h]
        region = _run_before(src, body, done, modes, "\n" + _RUN_STAND_IN[kind] + "\n")
        if region is not None and _accepts_all(language, (
                _c_context(kind, src.text[src.start(m):src.end(m)]) for m in done[:-1])):
            runs.append(region)
    bodies = _c_bodies(language, src, _tops_from(src, 0), -1, h, runs, modes)
    return sorted([*runs, *(b for b in bodies if b.end < h)], key=lambda r: r.start)


def _run_before(src: _Source, body: Any, done: list[Any], modes: _Modes,
                stand_in: str, sep: str = "") -> _Region | None:
    """The members of `body` from its opening bracket up to the last of `done` (which
    stays), when they alone fill that text and it is long enough to replace."""
    if len(done) < 2:
        return None
    a, b = src.start(body) + 1, src.start(done[-1])
    if len(src.text[a:b].strip()) < MIN_REGION or not modes.code_at(a) \
            or not modes.code_at(b) or not _tiles(src, done[:-1], a, b, sep=sep, last=sep):
        return None
    return _Region(a, b, stand_in)


def _inner(src: _Source, node: Any, opening: str, closing: str) -> list[Any] | None:
    """The children between a node's brackets, or None when the brackets are not there in
    the text (tree-sitter recovered from an error with a MISSING one)."""
    kids = node.children
    if len(kids) < 2:
        return None
    a, b = src.start(node), src.end(node)
    if src.text[a] != opening or src.text[b - 1] != closing or kids[-1].is_missing:
        return None
    return kids[1:-1]


def _tiles(src: _Source, members: list[Any], a: int, b: int, sep: str = "",
           last: str = "") -> bool:
    """The members cover text[a:b] with only blanks between them (JSON: a `sep` and blanks;
    before the first one a `sep` if a follows a member, nothing if it follows the opening
    bracket) and `last` and blanks after the last one: so the region is these members."""
    text, pos = src.text, a
    for k, m in enumerate(members):
        gap = text[pos:src.start(m)].strip()
        if gap != (sep if k or text[a - 1] not in "[{" else ""):
            return False
        pos = src.end(m)
    return text[pos:b].strip() == last


def _stand_in_before(doc: str, regions: list[_Region]) -> tuple[int, str]:
    """The cut before the first hole ends at the last region (0 without one); the prefix is
    the text up to there with every region replaced by its stand-in."""
    if not regions:
        return 0, ""
    return regions[-1].end, _replaced(doc, regions, 0, regions[-1].end)


def _replaced(doc: str, regions: list[_Region], start: int, end: int) -> str:
    pos, out = start, []
    for r in regions:
        out += [doc[pos:r.start], r.stand_in]
        pos = r.end
    out.append(doc[pos:end])
    return "".join(out)


def _stand_in(doc: str, regions: list[_Region], e: int) -> tuple[int, str]:
    """The copied part ends at the first region (or at e); the suffix is the rest up to e
    with every region replaced by its stand-in."""
    if not regions:
        return e, ""
    return regions[0].start, _replaced(doc, regions, regions[0].start, e)


# --- JSON -----------------------------------------------------------------------------------


_CONTAINERS = {"array": "array", "object": "object"}


def _json_regions(doc: str, h: int, p: int) -> tuple[list[_Region], list[_Region], int]:
    """Before the first hole h: the elements of the arrays and objects around it before the
    last complete one, and long complete values; after the last hole p: the rests of the
    containers around it, and long complete values (fact 3). The window ends at the end."""
    src = _source("json", doc)
    e = len(doc)
    before = _Modes(_JSON_AUTOMATON, doc, 0, h, 1 << J_CODE)
    runs = []
    for node, kind in _enclosing(src, h, e, _CONTAINERS):
        kids = _inner(src, node, *("[]" if kind == "array" else "{}"))
        if kids is None:
            continue
        done = [k for k in _json_members(kids) if src.end(k) < h]
        region = _run_before(src, node, done, before, "0," if kind == "array" else '"":0,',
                             sep=",")
        if region is not None and _json_members_valid(src, kind, done[:-1]):
            runs.append(region)
    values = [v for v in _json_values(src, src.root, -1, h, runs, before)
              if doc.find(_neighbour(doc, v.end, 1), v.end) < h]
    left = sorted([*runs, *values], key=lambda r: r.start)
    after = _Modes(_JSON_AUTOMATON, doc, p, e, _JSON_STARTS)
    runs = []
    for node, kind in _enclosing(src, p, e, _CONTAINERS):
        region = _json_run(src, node, kind, p, after)
        if region is not None:
            runs.append(region)
    values = list(_json_values(src, src.root, p, e, runs, after))
    return left, sorted([*runs, *values], key=lambda r: r.start), e


def _json_members(kids: list[Any]) -> list[Any]:
    return [k for k in kids if k.is_named and k.type != "comment"]


def _json_members_valid(src: _Source, kind: str, members: list[Any]) -> bool:
    """Each member is a valid element (array) or member (object) on its own."""
    wrap = (lambda t: t) if kind == "array" else (lambda t: "{" + t + "}")
    return _accepts_all("json", (wrap(src.text[src.start(m):src.end(m)]) for m in members))


def _json_run(src: _Source, node: Any, kind: str, p: int, modes: _Modes) -> _Region | None:
    """The elements of `node` after the first one that ends after p, as `,0` (array) or
    `,"":0` (object), when each of them is valid."""
    text = src.text
    brackets = "[]" if kind == "array" else "{}"
    kids = _inner(src, node, *brackets)
    if kids is None:
        return None
    members = _json_members(kids)
    ends = [src.end(m) for m in members]
    # after a member that ends after the hole, read as code, and ends like a value (not a
    # `{`, `[`, `,` or `:`: tree-sitter may recover from the hole's error with odd members)
    a = next((x for x in ends if x > p and modes.code_at(x)
              and _neighbour(text, x, -1) not in ("{", "[", ",", ":")), None)
    close = src.end(node) - 1
    if a is None or len(text[a:close].strip()) < MIN_REGION:
        return None
    rest = [m for m, x in zip(members, ends, strict=True) if x > a]
    if not rest or not modes.code_at(close) \
            or not _tiles(src, rest, a, close, sep=","):
        return None
    if not _json_members_valid(src, kind, rest):
        return None
    return _Region(a, close, ",0" if kind == "array" else ',"":0')


def _json_values(src: _Source, node: Any, p: int, e: int, runs: list[_Region],
                 modes: _Modes) -> Iterator[_Region]:
    """Maximal long values after p (outside the runs) that are valid, as `0`."""
    for child in node.children:
        a, b = src.start(child), src.end(child)
        if b <= p or a >= e or any(r.start <= a and b <= r.end for r in runs):
            continue
        if _is_value(src.text, node, child, a, b) and a > p and b - a >= MIN_REGION \
                and not any(a < r.end and r.start < b for r in runs) \
                and modes.code_at(a) and modes.code_at(b) \
                and _accepts("json", src.text[a:b]):
            yield _Region(a, b, "0")
            continue
        yield from _json_values(src, child, p, e, runs, modes)


def _is_value(text: str, parent: Any, child: Any, a: int, b: int) -> bool:
    """`child` (text[a:b]) stands where any JSON value may: an array element or a member's
    value, also in the text (after `[`, `,` or `:` and before `,`, `]` or `}`: tree-sitter
    may recover from the hole's error by reading a key as an element)."""
    if not child.is_named or child.type == "comment":
        return False
    if parent.type != "array" and not (parent.type == "pair"
                                       and parent.child_by_field_name("value") == child):
        return False
    return _neighbour(text, a, -1) in ("[", ",", ":") and _neighbour(text, b, 1) in (",", "]", "}")


def _neighbour(text: str, pos: int, direction: int) -> str:
    """The first non-blank character before `pos` (direction -1) or from it on (1); ""
    at the end of the text."""
    i = pos - 1 if direction < 0 else pos
    while 0 <= i < len(text) and text[i].isspace():
        i += direction
    return text[i] if 0 <= i < len(text) else ""


# --- lexical states after the last hole (fact 4) ----------------------------------------------

# C and C++ lexical states: code (also just after `R` or `/`), string, character, comments,
# raw string (`R"(`, inside, after `)`), directive, and the states after a backslash.
(CODE, CODE_R, SLASH, STR, STR_ESC, CHR, CHR_ESC, LINE, LINE_ESC, BLOCK, BLOCK_STAR,
 RAW_OPEN, RAW, RAW_PAREN, DIR, DIR_ESC) = range(16)
_BLOCK_STATES = (1 << BLOCK) | (1 << BLOCK_STAR)
_RAW_STATES = (1 << RAW_OPEN) | (1 << RAW) | (1 << RAW_PAREN)


def _c_code(state: int, ch: str) -> tuple[int, ...]:
    """The states after `ch` read in code (`state` is CODE, CODE_R or SLASH)."""
    if state == SLASH and ch in "/*":
        return (LINE,) if ch == "/" else (BLOCK,)
    if ch == '"':
        return (STR, RAW_OPEN) if state == CODE_R else (STR,)
    if ch == "'":  # a character literal, or a digit separator (1'000)
        return (CHR, CODE)
    return {"/": (SLASH,), "#": (DIR,), "R": (CODE_R,)}.get(ch, (CODE,))


def _c_step(state: int, ch: str) -> tuple[int, ...]:
    """Every state a C/C++ lexer may be in after reading `ch` in `state` (no state: the
    reading cannot go on). An over-approximation: it never drops a state our lexer can be in."""
    if state in (CODE, CODE_R, SLASH):
        return _c_code(state, ch)
    quote = {STR: '"', CHR: "'"}.get(state)
    if quote is not None:
        if ch == quote:
            return (CODE,)
        if ch == "\n":
            return ()
        return (state + 1,) if ch == "\\" else (state,)
    table: dict[int, Any] = {
        STR_ESC: lambda: (STR,),
        CHR_ESC: lambda: (CHR,),
        LINE: lambda: (CODE,) if ch == "\n" else (LINE_ESC,) if ch == "\\" else (LINE,),
        LINE_ESC: lambda: (LINE, CODE) if ch == "\n" else (LINE_ESC,) if ch in "\\\r"
        else (LINE,),
        BLOCK: lambda: (BLOCK_STAR,) if ch == "*" else (BLOCK,),
        BLOCK_STAR: lambda: (CODE,) if ch == "/" else (BLOCK_STAR,) if ch == "*" else (BLOCK,),
        RAW_OPEN: lambda: (RAW,) if ch == "(" else (),
        RAW: lambda: (RAW_PAREN,) if ch == ")" else (RAW,),
        RAW_PAREN: lambda: (CODE,) if ch == '"' else (RAW_PAREN,) if ch == ")" else (RAW,),
        DIR: lambda: (CODE,) if ch == "\n" else (DIR_ESC,) if ch == "\\" else (DIR,),
        DIR_ESC: lambda: (DIR_ESC,) if ch == "\r" else (DIR,),
    }
    return table[state]()


def _c_starts(fixed: str) -> int:
    """Every state a filling may leave before `fixed`; block comments and raw strings only
    when `fixed` can end them."""
    states = (1 << 16) - 1
    if "*/" not in fixed:
        states &= ~_BLOCK_STATES
    if ')"' not in fixed:
        states &= ~_RAW_STATES
    return states


# JSON lexical states: code, string, after a backslash in a string.
J_CODE, J_STR, J_ESC = range(3)
_JSON_CODE_CHARS = frozenset(" \t\n\r{}[],:0123456789+-.eEtruefalsn")
_JSON_STARTS = 0b111


def _json_step(state: int, ch: str) -> tuple[int, ...]:
    if state == J_CODE:
        if ch == '"':
            return (J_STR,)
        return (J_CODE,) if ch in _JSON_CODE_CHARS else ()
    if state == J_STR:
        if ch == '"':
            return (J_CODE,)
        if ch == "\\":
            return (J_ESC,)
        return () if ch < " " else (J_STR,)
    return (J_STR,) if ch in '"\\/bfnrtu' else ()


@dataclass(frozen=True)
class _Automaton:
    step: Any  # (state, char) -> states
    code: int  # the plain-code state
    scan: Any  # (text, state, start, stop) -> code positions after synchronising, or None


def _json_scan(text: str, state: int, start: int, stop: int) -> list[tuple[int, int]]:
    """Once one state is left, the JSON reading is deterministic: the spans [a, b) of text
    inside strings from `start` (in `state`) to `stop`; everything else is code."""
    spans, pos = [], start
    if state != J_CODE:  # inside a string; after a backslash the next character is escaped
        m = _JSON_STRING_REST.match(text, pos + (state == J_ESC))
        end = m.end() if m else stop
        spans.append((start, end))
        pos = end
    while pos < stop:
        q = text.find('"', pos, stop)
        if q < 0:
            break
        m = _JSON_STRING_REST.match(text, q + 1)
        end = m.end() if m else stop
        spans.append((q, end))
        pos = end
    return spans


_JSON_STRING_REST = re.compile(r'(?:[^"\\]|\\.)*"', re.S)

_C_AUTOMATON = _Automaton(_c_step, CODE, None)
_JSON_AUTOMATON = _Automaton(_json_step, J_CODE, _json_scan)


class _Modes:
    """The sets of lexical states every filling may leave at each position of text[p:stop]
    (see fact 4); `code_at(x)`: at x every surviving reading is plain code."""

    def __init__(self, automaton: _Automaton, text: str, p: int, stop: int, starts: int) -> None:
        self.p, self.stop = p, stop
        self.automaton = automaton
        self.masks = bytearray()  # C: per position, 1 when only code survives
        self.strings: list[tuple[int, int]] | None = None  # JSON after synchronising
        self.sync = stop
        step, code = automaton.step, 1 << automaton.code
        mask = starts
        for pos in range(p, stop):
            self.masks.append(mask == code)
            if automaton.scan is not None and mask & (mask - 1) == 0 and mask:
                # one state left: the rest of the reading is deterministic
                self.sync = pos
                self.strings = automaton.scan(text, mask.bit_length() - 1, pos, stop)
                return
            mask = _next_mask(step, mask, text[pos])
        self.masks.append(mask == code)

    def code_at(self, x: int) -> bool:
        if not self.p <= x <= self.stop:
            return False
        if x < self.sync or self.strings is None:
            return bool(self.masks[x - self.p]) if x - self.p < len(self.masks) else False
        k = bisect.bisect_right(self.strings, (x, len(self.masks) + self.stop + 1)) - 1
        return k < 0 or not self.strings[k][0] < x < self.strings[k][1]


@functools.lru_cache(maxsize=1 << 16)
def _next_mask(step: Any, mask: int, ch: str) -> int:
    out = 0
    while mask:
        low = mask & -mask
        for s in step(low.bit_length() - 1, ch):
            out |= 1 << s
        mask ^= low
    return out
