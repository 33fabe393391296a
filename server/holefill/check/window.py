"""The window: the part of a text with holes that a check has to look at.

A check lexes the whole text, so its cost grows with the file. Most of the file is fixed text
far from the holes; the window cuts a *head* off the first chunk and a *tail* off the last one
(and may wrap what is left in a fixed line before and after) so that checking the rest answers
for the whole file (DESIGN.md §3, step 3).

Contract (soundness): for every filling y of the holes, if the windowed text filled with y is
a valid program, so is the whole text filled with y. The converse may fail (a window only
over-rejects); on real code it holds, and tests/check/test_window.py measures it. "Valid" is
`ast.parse`'s verdict, the question the Python grammar answers: syntax, not the compiler's
later checks (a `from __future__` import after other statements), which no context-free check
sees anyway.

Python, top level: the window W is a run of whole top-level statements. Lemma: if `ast.parse`
accepts A and B, A is empty or ends with a line break, and B starts at column 0 with a
character that may start a statement, then it accepts A + B. A ends outside every bracket,
string and backslash continuation and not after a decorator (else it would not parse), so the
tokenizer meets B's first line as at the start of a file, but for indentation levels that this
column-0 line closes; the tokens are A's statements followed by B's, and B cannot extend A's
last statement (only `else`, `elif`, `except`, `finally` could, and B would not parse alone).
With the head H and tail T fixed and parsed here: W parses => H + W + T parses. T starts
after a fixed line break, so no filling glues W's last line onto T's first.

Python, indented: a hole inside a 3,000-line class would still need the whole class. When the
holes sit in the body of a top-level compound statement, W is a run of statements at that
body's indentation L (so the tokenizer's indentation stack is [0, L] where W starts), checked
as V = "class _:" + W + J "pass" where J is the indentation of T's first line (0 or L). We
check that P = H + L "pass" + T parses with that `pass` as a statement (the file with W
replaced by one statement, so H ends at a statement boundary of that block and T may follow a
statement at L) and that W's last line break and the character before it are fixed and no
backslash. If V parses, the tokenizer sees W in the whole file exactly as in V (same stack at
its start, same lines), reaches T's first line with the same stack as V's closing line, and
W's tokens followed by `pass` close as statements: so the whole file's tokens are P's with
one statement replaced by a run of statements that leaves the same open blocks, which keeps P
valid. Fillings may dedent to column 0 and open new blocks: then T's first line meets the
same open blocks as the closing `pass` (it takes T's indentation for this reason). `class _`
has no `else`/`except` that a column-0 line of a filling could attach to; so a filling that
leaves the body through the enclosing statement's `else:` or `except:` is over-rejected (1 of
7,000 standard-library cuts); `find_window(..., indented=False)` allows it.

Python, nested: the body may lie deeper (a method's body inside a class, an `if` inside a
loop). The window is then a run of statements of the innermost body that holds the holes, at
L_k with the tokenizer's stack [0, L_1, ..., L_k] (read from P's parse tree: the lines of
the statements that enclose the placeholder, not guessed from the lines around it), wrapped
in one `class _:` line per level: V = "class _:" + L_1 "class _:" + ... + L_(k-1) "class _:"
+ W + J "pass" + one "pass" line per level below J. The same argument as above holds level
by level; the extra `pass` lines stand for the file going on at those levels: a filling that
closed the enclosing blocks and opened new ones at other widths leaves a stack on which one
of them is an "unindent does not match", as the file's later lines would be. Heads and tails
are tried from the innermost body out, within one budget of parses. Every level but one kind
holds statements: the body of a `match` holds `case` blocks only, so a filling that dedents
to it could write there a statement that `class _:` allows and the file does not (`if 0:`
where `case 2:` belongs). No window is taken inside a `match` statement (the placeholder's
enclosing nodes hold no `ast.Match`); the body around the `match` line is tried instead.
(17,500 random and structured fillings of 700 standard-library cuts: no window that parses
where the file does not; the slow test of tests/check/test_window.py.)

Cost: a few `ast.parse` calls of the head, the tail and the enclosing top-level statement (about
10 ms per 1,000 lines): P is parsed once per (head, tail) pair, and its tree gives both the
verdict and the levels; an error at or before the placeholder's line condemns the head, one
after it the tail. P's answers are kept by text, so a request after typing in the hole (P
unchanged) parses nothing of the class again. A window stays valid while text is only
inserted into holes (`Window.apply`), so callers compute it once per request, not once per
check. The incremental engine reads its left from the window's start too, after the
`class _:` lines (holefill.check.incremental), so neither preparation nor typing reads a
4,000-line class.

C, C++ and JSON windows (a head at the top-level declaration of the first hole, and stand-ins
for the fixed text of the blocks, namespaces, arrays and objects before the first hole and
after the last one) have their own contract and soundness argument in
holefill.check.window_brace.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
import threading
import warnings
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from holefill.budget import Budget, poll
from holefill.check.window_brace import BRACE_LANGUAGES, brace_head, brace_window
from holefill.languages import get_language
from holefill.lexing.anchors import Anchors

# Parse attempts per boundary search before giving up on it (each costs one `ast.parse`).
MAX_PARSE_ATTEMPTS = 64
MAX_INDENTED_ATTEMPTS = 16

# A line starting with one of these continues the compound statement before it.
_CONTINUATION = re.compile(r"(?:else|elif|except|finally)\b")
_CONTINUATION_WORDS = ("else", "elif", "except", "finally")
# Statements a decorator just before them would apply to.
_DECORATABLE = re.compile(r"(?:@|def\b|class\b|async\b)")


@dataclass(frozen=True)
class Window:
    """Cut `head` characters from the start of the first chunk and `tail` from the end of the
    last, then put `prefix` before and `suffix` after (fixed text of an indented window).
    Window() is the whole text."""

    head: int = 0
    tail: int = 0
    prefix: str = ""
    suffix: str = ""

    def apply(self, chunks: Sequence[str]) -> list[str]:
        """The windowed chunks. Valid for any later state of the same document in which text
        was only inserted into holes (so chunks[0] still starts with the head and chunks[-1]
        still ends with the tail), also after holes were closed, down to a single chunk."""
        out = list(chunks)
        if not out:
            raise ValueError("chunks must hold at least one string")
        end = len(out[-1]) - self.tail
        room = len(out[0]) if len(out) > 1 else end
        if end < 0 or self.head > room:
            raise ValueError(f"{self} does not fit these chunks; was fixed text removed?")
        out[-1] = out[-1][:end] + self.suffix
        out[0] = self.prefix + out[0][self.head :]
        return out

    @property
    def whole(self) -> bool:
        return self == Window()

    def map_anchors(self, anchors: Anchors, chunks: Sequence[str]) -> Anchors:
        """Anchor sites of `chunks` as sites of `self.apply(chunks)`: the first chunk moves by
        the head cut and the prefix; a site in the last chunk ends where its tail is cut."""
        shift = len(self.prefix) - self.head
        end = len(chunks[-1]) - self.tail
        last = len(chunks) - 1
        out = []
        for site in anchors.sites:
            if site.chunk == 0:
                site = site.moved(0, site.base + shift)
            if site.chunk == last and site.base + site.length > end:
                site = replace(site, length=max(0, end - site.base))
            out.append(site)
        return Anchors(tuple(out))


def find_window(language: str, chunks: Sequence[str], *, indented: bool = True,
                budget: Budget | None = None) -> Window:
    """The nearest clean boundaries around all holes of `chunks` (see the module docstring;
    C, C++ and JSON: holefill.check.window_brace); `indented=False` keeps Python windows to
    whole top-level statements. Texts without holes get the whole text. `budget`: its
    deadline and cancel callback are polled between parses (BudgetExhausted)."""
    name = get_language(language).name
    if len(chunks) < 2:
        return Window()
    if name in BRACE_LANGUAGES:
        head, prefix, tail, suffix = brace_window(name, chunks)
        return Window(head, tail, prefix, suffix)
    if name != "python":
        return Window()
    return _python_window(chunks, indented, budget)


def left_start(language: str, first: str) -> int:
    """Where a left-to-right parse of the text before the first hole may start with the
    file's own parse state: for Python the start of the top-level statement that holds the
    hole (text before it is whole statements, see the module docstring); otherwise the
    start of the file. The incremental engine (holefill.check.incremental) reads the left
    from there, so that every clause the file allows after a dedent is allowed. C and C++:
    the start of the top-level declaration that holds the hole, the text before it accepted
    by our grammar piece by piece; JSON: 0 (holefill.check.window_brace)."""
    name = get_language(language).name
    if name in BRACE_LANGUAGES:
        return brace_head(name, first)
    if name != "python":
        return 0
    return _top_head(first)


def _python_window(chunks: Sequence[str], indented: bool, budget: Budget | None) -> Window:
    first, last = chunks[0], chunks[-1]
    s0 = _top_head(first, budget)
    t0 = _top_tail(last, _decorator_pending(chunks, ""), budget)
    if indented:
        found = _indented_window(chunks, s0, t0, budget)
        if found is not None:
            return found
    return Window(s0, len(last) - t0)


# --- top level --------------------------------------------------------------------------


def _top_head(text: str, budget: Budget | None = None) -> int:
    """The nearest line start s before the first hole (at the end of `text`) where text[:s]
    is a run of whole statements and text[s:] starts a new one; 0 when there is none."""
    attempts = 0
    limit_line = None  # after a failed parse: no boundary can lie past this line
    for s, line in _line_starts_backwards(text, 0, first_line=False):
        if limit_line is not None and line > limit_line:
            continue
        if not _starts_statement(text, s) or _continues(text, s):
            continue
        if attempts == MAX_PARSE_ATTEMPTS:
            break
        attempts += 1
        error_line = _parse_error_line(text[:s], budget)
        if error_line is None:
            return s
        # An unclosed bracket or string is reported at its first line, and every boundary
        # after that line is inside it; any other error sits at the end: try the next line up.
        if error_line:
            limit_line = error_line
    return 0


def _top_tail(text: str, pending: bool, budget: Budget | None = None) -> int:
    """The nearest line start t after the last hole (at the start of `text`) where text[t:]
    is a run of whole statements; len(text) (an empty tail) when there is none. text[t - 1]
    is a fixed line break, so the window's last line cannot run into the tail."""
    attempts = 0
    for t in _line_starts_forwards(text, len(text)):
        if attempts == MAX_PARSE_ATTEMPTS:
            break
        if not _starts_statement(text, t) or _CONTINUATION.match(text, t):
            continue
        decorated, pending = _maybe_decorated(text, t, t, pending)
        if decorated:
            continue
        attempts += 1
        # Starting inside a string or brackets fails early in the tail, so tries are cheap.
        if _parse_error_line(text[t:], budget) is None:
            return t
    return len(text)


# --- indented -----------------------------------------------------------------------------


def _indented_window(chunks: Sequence[str], s0: int, t0: int,
                     budget: Budget | None = None) -> Window | None:
    """A run of statements at the body indentation of the top-level statement that holds the
    holes (between s0 and t0), or None. Heads are checked with the placeholder `pass` after
    them, pairs by parsing the top-level statement with the run replaced by it (P in the
    module docstring; the text outside [s0, t0) was parsed by the top-level search)."""
    first, last = chunks[0], chunks[-1]
    nl = "\r\n" if "\r\n" in first[s0:] else "\n"
    parses_left = [MAX_INDENTED_ATTEMPTS]
    for lead, heads in _body_levels(first, s0):  # the innermost body first
        if any(_has_shallower_line(chunk, lead) for chunk in chunks[1:-1]):
            continue  # fixed text between holes leaves this body (`elif`, a new statement)
        tails = _indented_tails(last, t0, lead, _decorator_pending(chunks, lead))
        if not tails:
            continue
        found = _window_at(first, last, s0, t0, lead, heads, tails, nl, parses_left, budget)
        if found is not None or parses_left[0] <= 0:
            return found
    return None


def _window_at(first: str, last: str, s0: int, t0: int, lead: str, heads: list[int],
               tails: list[int], nl: str, parses_left: list[int],
               budget: Budget | None = None) -> Window | None:
    """The window of statements at indentation `lead`, nearest head and tail first;
    parses_left[0] counts the parses left; `budget` is polled before each. One parse per
    (head, tail) pair, of P: the enclosing top-level statement with the run replaced by the
    placeholder; its tree gives the blocks around the placeholder. An error at or before the
    placeholder's line condemns the head (every tail fails with it); one after it, the
    tail."""
    placeholder = f"{lead}pass{nl}"
    for s in heads:
        head = first[s0:s] + placeholder
        line = head.count("\n")  # the placeholder ends with the last line break
        for t in tails:
            parses_left[0] -= 1
            if parses_left[0] < 0:
                return None
            found = _placeholder_tree(head + last[t:t0], line, lead, budget)
            if isinstance(found, int):
                if 0 < found <= line or (found == 0 and t == tails[0]
                                        and _parse_error_line(head, budget) is not None):
                    break  # the head fails: try a nearer one
                continue
            if found is None:
                break  # the placeholder is no statement at `lead` (inside a string)
            if found.in_match:
                return None  # a level of the stack holds `case` blocks only: see the docstring
            levels = found.levels
            if levels is None:
                return None
            wrapper = "".join(f"{level}class _:{nl}" for level in ["", *levels[:-1]])
            # The closing `pass` takes the tail's indentation: see the module docstring.
            # One more `pass` per enclosing level below it: a filling that closed those
            # blocks and opened others at new widths fails here, as in the file.
            closing = "".join(f"{level}pass{nl}" for level in
                              [_lead(last, t), *reversed(levels[:-1])]
                              if len(level) <= len(_lead(last, t)))
            return Window(s, len(last) - t, wrapper, closing)
        else:
            return None  # every tail fails after a sound head: a nearer head will not help
    return None


def _placeholder_tree(source: str, line: int, lead: str,
                      budget: Budget | None) -> _Placed | int | None:
    """The blocks around the placeholder `pass` of P (`source`) on `line` at `lead` when P
    parses; the line of its error (0 unknown) when it does not; None when the placeholder
    is not that statement. Kept per source (levels, not trees: a tree of a 4,000-line class
    kept alive makes every garbage collection slow): typing in a hole leaves P as it was,
    so the next request asks the same."""
    key = (source, line, lead)
    with _PATHS_LOCK:
        if key in _PATHS:
            _PATHS.move_to_end(key)
            return _PATHS[key]
    poll(budget)
    got: _Placed | int | None = _by_members(source, line, lead, budget)
    if got is _WHOLE:
        tree = _parse(source)
        if isinstance(tree, int):
            got = tree
        else:
            got = _placed(source, _placeholder_path(tree, line, lead), lead)
    with _PATHS_LOCK:
        _PATHS[key] = got
        while len(_PATHS) > ERROR_LINES_KEPT:
            _PATHS.popitem(last=False)
    return got


# P of a large class is parsed as runs of its members. The class's body indentation L is
# that of its first line of code after the header; a *member* starts at a line at exactly L
# that begins `def`, `async def`, `class` or a decorator run. If the first part (the header
# and the members before the first such line) parses alone as one `class` or `def` whose
# body sits at L, and each later member parses as the body of `class _:` (one statement:
# no line of it leaves the class), then P parses: the class is open at the end of each
# part, and each member continues its body at L (no `else`/`except` can start a member,
# and a part that parsed alone ends with no decorator). Members are answered from a cache
# by text, so a request at a new place in the class parses the placeholder's member only.
# A part that fails sends P to one parse of its own (a border inside a string): exact.
_WHOLE: Any = object()
_MEMBER = r"(?:@|(?:async[ \t]+)?def\b|class\b)"


def _by_members(source: str, line: int, lead: str, budget: Budget | None
                ) -> _Placed | int | None:
    """`_placeholder_tree`'s answer from P's members (see above), or _WHOLE."""
    if len(source) < BLOCKS_FROM or not re.match(r"(?:async[ \t]+)?def\b|class\b|@", source):
        return _WHOLE
    body = _STATEMENT_LINE.search(source)
    if body is None or not body.group(1) or "\r" in source.replace("\r\n", ""):
        return _WHOLE
    indent = body.group(1)
    starts = [m.start() for m in re.finditer(rf"(?<=\n){re.escape(indent)}{_MEMBER}", source)
              if not _decorated(source, m.start(), indent)][1:]  # the first: in the header's
    if not starts:
        return _WHOLE
    parts = [source[a:b] for a, b in zip([0, *starts], [*starts, len(source)], strict=True)]
    first_lines = list(itertools.accumulate([1, *(p.count("\n") for p in parts[:-1])]))
    k = next(i for i in range(len(parts) - 1, -1, -1) if first_lines[i] <= line)
    for i, part in enumerate(parts):
        poll(budget)
        if i != k and not (_opening_part(part, indent) if i == 0 else _member_parses(part)):
            return _WHOLE
    if k == 0:
        tree = _parse(parts[0])
        if isinstance(tree, int) or not _opening_tree(tree, parts[0], indent):
            return _WHOLE
        return _placed(parts[0], _placeholder_path(tree, line, lead), lead)
    wrapped = "class _:\n" + parts[k]
    tree = _parse(wrapped)
    if isinstance(tree, int) or len(tree.body) != 1:
        return _WHOLE
    return _placed(wrapped, _placeholder_path(tree, line - first_lines[k] + 2, lead), lead)


def _placed(source: str, path: list[ast.AST] | None, lead: str) -> _Placed | None:
    """The placeholder's levels from its enclosing nodes in the tree of `source`."""
    if path is None:
        return None
    if any(isinstance(node, ast.Match) for node in path):
        return _Placed(None, True)  # (a `case` block has no line of its own in 3.9-3.11)
    return _Placed(_path_levels(source, path, lead), False)


def _decorated(source: str, at: int, indent: str) -> bool:
    """The member line at `at` belongs to a decorator above it: the nearest line above at
    exactly the member's indentation (deeper lines continue a decorator's brackets) is one.
    A misjudged border only makes a part fail, and P is then parsed whole."""
    pos = at
    for _ in range(32):
        if pos <= 0:
            return False
        above = source.rfind("\n", 0, pos - 1) + 1
        here = _lead(source, above)
        rest = source[above + len(here): above + len(here) + 1]
        if rest and rest not in "#\r\n" and len(here) <= len(indent):
            return here == indent and rest == "@"
        pos = above
    return False


@functools.lru_cache(maxsize=4096)
def _member_parses(part: str) -> bool:
    tree = _parse("class _:\n" + part)
    return not isinstance(tree, int) and len(tree.body) == 1


@functools.lru_cache(maxsize=256)
def _opening_part(part: str, indent: str) -> bool:
    tree = _parse(part)
    return not isinstance(tree, int) and _opening_tree(tree, part, indent)


def _opening_tree(tree: ast.Module, part: str, indent: str) -> bool:
    """One `class` or `def` whose body's first statement is at `indent`."""
    if len(tree.body) != 1 or not isinstance(
            tree.body[0], ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    first = tree.body[0].body[0]
    text = part.split("\n")[first.lineno - 1]
    return _lead(text, 0) == indent and first.col_offset == len(indent.encode())


@dataclass(frozen=True)
class _Placed:
    """Where P's placeholder sits: the levels open there (`_path_levels`, None when unsure)
    and whether a `match` statement encloses it."""

    levels: list[str] | None
    in_match: bool


_PATHS: OrderedDict[tuple[str, int, str], _Placed | int | None] = OrderedDict()
_PATHS_LOCK = threading.Lock()


def forget() -> None:
    """Drop every parse kept by text (for benchmarks that start cold, like
    holefill.check.window_brace.forget)."""
    with _PATHS_LOCK:
        _PATHS.clear()
    with _ERROR_LINES_LOCK:
        _ERROR_LINES.clear()
    _block_parses.cache_clear()


def _path_levels(head: str, path: list[ast.AST], lead: str) -> list[str] | None:
    """The indentation of every level CPython's tokenizer has open at the placeholder (the
    innermost is `lead`), read from the enclosing nodes: each statement of the path but
    the top-level one starts a line of the block it sits in; a handler (`except`) sits at
    its `try`'s level. The window's `class _:` lines open the same levels, so it starts
    with the file's stack. None when a lone carriage return (a line break to CPython)
    makes the lines uncertain."""
    if "\r" in head.replace("\r\n", ""):
        return None
    lines = head.split("\n")
    levels: list[str] = []
    for node in path[1:]:
        text = lines[node.lineno - 1]  # type: ignore[attr-defined]
        here = text[: len(text) - len(text.lstrip(" \t\f"))]
        if len(here) > len(levels[-1] if levels else ""):  # `elif`: its `if`'s level
            levels.append(here)
    if len(lead) > len(levels[-1] if levels else ""):
        levels.append(lead)
    return levels


def _placeholder_path(tree: ast.Module, line: int, lead: str) -> list[ast.AST] | None:
    """The nodes of `tree` that enclose the placeholder `pass` on `line` at `lead` (as code,
    not as text inside a string), outermost first (the body at `lead` may sit at any
    depth); None when there is no such statement."""
    if not tree.body:
        return None

    def down(node: ast.AST, path: list[ast.AST]) -> list[ast.AST] | None:
        if isinstance(node, ast.Pass) and node.lineno == line and node.col_offset == len(lead):
            return path
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt | ast.match_case | ast.excepthandler):
                found = down(child, [*path, node])
                if found is not None:
                    return found
        return None

    # P is one top-level statement, but the run of heads may hold several
    for top in reversed(tree.body):
        if top.lineno <= line:  # type: ignore[attr-defined]
            return down(top, [])
    return None


def _body_levels(text: str, s0: int) -> list[tuple[str, list[int]]]:
    """The indentations of the bodies that hold the first hole (at the end of `text`), from
    the innermost out, each with the starts of the statement lines at exactly that
    indentation inside it, nearest first; empty when a column-0 line comes first (the hole
    is not in a body). A level is read from the lines, so a line inside brackets or a string
    may suggest one that is none: `_wrapper` asks the tokenizer, and the parses refuse those.
    The hole's own line is no head: a decoder's token healing may hand its text back to the
    hole, and then the filling, not the fixed text, would set the indentation of the
    window's first line."""
    hole_line = text.rfind("\n") + 1
    levels: list[tuple[str, list[int]]] = []
    for p, _ in _line_starts_backwards(text, s0, first_line=s0 == 0):
        lead = _lead(text, p)
        q = p + len(lead)
        if q >= len(text) or not _starts_statement(text, q):
            continue
        if not lead:
            break
        if not levels or len(lead) < len(levels[-1][0]):
            levels.append((lead, []))  # a shallower line: the body around the last one
        if lead == levels[-1][0] and p != hole_line and not _continues(text, q):
            levels[-1][1].append(p)
    return [(lead, heads) for lead, heads in levels if heads]


def _has_shallower_line(text: str, lead: str) -> bool:
    """`text` (between two holes) has a statement line less indented than `lead`."""
    for p, _ in _line_starts_backwards(text, 0, first_line=False):
        here = _lead(text, p)
        q = p + len(here)
        if q < len(text) and _starts_statement(text, q) and len(here) < len(lead):
            return True
    return False


def _indented_tails(text: str, t0: int, lead: str, pending: bool) -> list[int]:
    """Line starts t <= t0 after the last hole, nearest first, whose line starts a statement
    (not a continuation, not maybe a decorated one) at `lead`'s indentation or shallower,
    after a fixed line break that no backslash continues. The scan ends at the first
    shallower line: a window past it would hold a fixed line outside the body (`else:`)."""
    out = []
    # The window may also run to the end of the file.
    ends = itertools.chain(_line_starts_forwards(text, t0), [t0] if t0 == len(text) else [])
    for t in ends:
        here = _lead(text, t)
        q = t + len(here)
        if q == len(text):
            if t == len(text) and _ends_cleanly(text, t):
                out.append(t)
            continue
        if not _starts_statement(text, q) or (len(here) >= len(lead) and here != lead):
            continue
        fits = _ends_cleanly(text, t) and lead.startswith(here) and not _continues(text, q)
        decorated, still = _maybe_decorated(text, t, q, pending and here == lead)
        pending = pending and (still or here != lead)
        if fits and not decorated:
            out.append(t)
        if len(here) < len(lead):
            break
    return out


def _ends_cleanly(text: str, t: int) -> bool:
    """text[t - 1] is a fixed line break that no backslash before it continues."""
    j = t - 2
    if j >= 0 and text[j] == "\r":
        j -= 1
    return t >= 1 and text[t - 1] == "\n" and j >= 0 and text[j] != "\\"


# --- shared -------------------------------------------------------------------------------


def _continues(text: str, q: int) -> bool:
    """The line at q starts with `else`, `elif`, `except` or `finally`, or may once the
    hole at the end of `text` is filled ("els" + "e:")."""
    rest = text[q:]
    if rest.isidentifier():
        return any(word.startswith(rest) for word in _CONTINUATION_WORDS)
    return _CONTINUATION.match(text, q) is not None


def _maybe_decorated(text: str, t: int, q: int, pending: bool) -> tuple[bool, bool]:
    """Whether the statement at q (its line starts at t) may be the one a decorator before it
    applies to, then a window ending at t would end with that decorator; and whether a
    pending decorator still waits after it. A decorator is pending (from before the hole),
    or the line before t is not blank: it may end a decorator that starts in a hole."""
    if not _DECORATABLE.match(text, q):
        return False, pending
    still = pending and text[q] == "@"
    if pending:
        return True, still
    start = text.rfind("\n", 0, t - 1) + 1
    before = text[start : t - 1].strip()
    return start == 0 or (bool(before) and not before.startswith("#")), False


def _decorator_pending(chunks: Sequence[str], lead: str) -> bool:
    """Whether the last statement line at `lead`'s indentation or shallower before the last
    hole is a decorator: then the statement after the window may be the decorated one."""
    for k in range(len(chunks) - 2, -1, -1):
        chunk = chunks[k]
        # A chunk after a hole does not start a line; the first chunk does.
        starts = list(_STATEMENT_LINE.finditer(chunk))
        if k == 0 and (m := _STATEMENT_LINE.match("\n" + chunk, 1)) is not None:
            starts.insert(0, m)
        for m in reversed(starts):
            here = m.group(1)
            if lead.startswith(here):
                q = m.end() - (1 if m.string is not chunk else 0)
                return here == lead and chunk[q] == "@"
    return False


def _line_starts_backwards(
    text: str, stop: int, *, first_line: bool = True
) -> Iterator[tuple[int, int]]:
    """(offset, 1-based line number) of the line starts after `stop` (and `stop` itself when
    it is 0 and `first_line`), last first; the line at len(text) is left out. Line numbers
    count "\n" only: CPython also breaks lines at a lone "\r", which makes skipping lines by
    error position less effective, never unsound (every boundary is checked by a parse)."""
    line = text.count("\n") + 1
    pos = len(text)
    while True:
        nl = text.rfind("\n", stop, pos)
        if nl < 0:
            break
        if nl + 1 < len(text):
            yield nl + 1, line
        line -= 1
        pos = nl
    if stop == 0 and first_line and text:
        yield 0, 1


def _line_starts_forwards(text: str, stop: int) -> Iterator[int]:
    """The line starts t with 1 <= t <= stop and t < len(text), first first."""
    t = text.find("\n", 0, stop) + 1
    while 0 < t <= stop and t < len(text):
        yield t
        t = text.find("\n", t, stop) + 1


def _lead(text: str, pos: int) -> str:
    """The spaces and tabs at `pos` (the indentation when pos starts a line)."""
    return _BLANKS.match(text, pos).group()  # type: ignore[union-attr]


_BLANKS = re.compile(r"[ \t]*")
# A line start (after its line break) whose line starts a statement, with its indentation.
_STATEMENT_LINE = re.compile(r"(?<=\n)([ \t]*)(?=[^\s#\\\ufeff])")


def _starts_statement(text: str, pos: int) -> bool:
    """text[pos] may start a statement: not indentation (spaces, tabs, form feeds), not a
    comment, not a backslash continuation, not a stray byte-order mark."""
    ch = text[pos]
    return not (ch.isspace() or ch in "#\\\ufeff")


def _parse_error_line(source: str, budget: Budget | None = None) -> int | None:
    """None when `ast.parse` accepts `source`, else the line of the error (0 when unknown).
    Cached: later calls for the same document parse the same heads and tails again. A long
    source is parsed as runs of blocks (`_runs_error_line`); `budget` is polled between
    the parses."""
    with _ERROR_LINES_LOCK:
        got = _ERROR_LINES.get(source)
        if got is not None:
            _ERROR_LINES.move_to_end(source)
            return got[0]
    poll(budget)
    if len(source) >= BLOCKS_FROM:
        line = _runs_error_line(_blocks(source), budget)
    else:
        tree = _parse(source)
        line = tree if isinstance(tree, int) else None
    with _ERROR_LINES_LOCK:
        _ERROR_LINES[source] = (line,)
        while len(_ERROR_LINES) > ERROR_LINES_KEPT:
            _ERROR_LINES.popitem(last=False)
    return line


ERROR_LINES_KEPT = 64
_ERROR_LINES: OrderedDict[str, tuple[int | None]] = OrderedDict()
_ERROR_LINES_LOCK = threading.Lock()


def syntax_error(source: str) -> tuple[int, str] | None:
    """None when `ast.parse` accepts `source`, else the line (0 when unknown) and CPython's
    message; blocks an edit left alone are not parsed again (`_runs_error_line`; the
    source itself is not kept, unlike heads and tails, which requests parse again)."""
    if len(source) >= BLOCKS_FROM:
        if _runs_error_line(_blocks(source), None) is None:
            return None
    elif not isinstance(_parse(source), int):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except SyntaxError as exc:
        return exc.lineno or 0, exc.msg
    except (ValueError, RecursionError, MemoryError) as exc:
        return 0, str(exc) or type(exc).__name__
    return None


# Heads and tails of a 10,000-line file cost 10-15 ms of `ast.parse` each, per request, and
# a new request mostly parses the same text again. Cut at line starts where a column-0
# definition begins (not right after a decorator, which belongs to it), a source is a run of
# blocks; if each parses alone, the lemma (A ends with a line break, B starts at column 0
# with a statement) makes their concatenation parse. Which definitions end a block depends
# on their own line only (one in about BLOCK_SPREAD), so an edit moves no other block's
# borders. A border inside a string or brackets makes its blocks fail: the source is then
# parsed whole, and the verdict is `ast.parse`'s either way.
BLOCKS_FROM = 16_384  # characters; shorter sources are parsed whole
BLOCK_SPREAD = 8
_BLOCK_BORDER = re.compile(r"^(?:def|class|async[ \t]+def)[ \t(:]", re.MULTILINE)


def _runs_error_line(blocks: list[str], budget: Budget | None) -> int | None:
    """`_parse_error_line` of the concatenation of `blocks` (cut as `_blocks` cuts), parsed
    as consecutive runs of blocks that parse: from the start of a run, one block, then 2, 4,
    ... until the run parses or holds every block left (then its error is the source's).
    Sound by the lemma (each run ends with a line break and the next starts with a column-0
    `def` or `class`); exact too: where a run parses, its end is outside every bracket and
    string for the whole source as well (the tokenizer reads the same characters from the
    same state), so a `def`/`class` line there starts a new statement, and if the source
    parses, so does the rest from there. Unlike one parse of the whole source, which cannot
    be interrupted (5 s for 100,000 lines on a loaded machine), each run is a poll apart, and
    a run whose blocks fail only as one (a string across a border) is found in a few
    parses."""
    i, lines_before = 0, 0
    while i < len(blocks):
        size = 1
        while True:
            poll(budget)
            rest = i + size >= len(blocks)
            if size == 1 and not rest:  # blocks an edit left alone are cached
                if _block_parses(blocks[i]):
                    break
            else:
                got = _parse("".join(blocks[i:i + size]))
                if not isinstance(got, int):
                    break
                if rest:
                    return lines_before + got if got else 0
            size = min(2 * size, len(blocks) - i)
        lines_before += sum(b.count("\n") for b in blocks[i:i + size])
        i += size
    return None


def _blocks(source: str) -> list[str]:
    """`source` cut before the chosen column-0 definition lines."""
    borders = [0]
    for m in _BLOCK_BORDER.finditer(source, 1):
        at = m.start()
        end = source.find("\n", at)
        line = source[at: end if end >= 0 else len(source)]
        if zlib.crc32(line.encode("utf-8", "surrogatepass")) % BLOCK_SPREAD:
            continue
        above = source.rfind("\n", 0, at - 1) + 1
        if not source.startswith("@", above):
            borders.append(at)
    borders.append(len(source))
    return [source[a:b] for a, b in itertools.pairwise(borders) if b > a]


@functools.lru_cache(maxsize=4096)
def _block_parses(block: str) -> bool:
    return not isinstance(_parse(block), int)


def _parse(source: str) -> ast.Module | int:
    """The tree, or the line of the syntax error (0 when unknown). Heads and tails cut inside
    a string make CPython warn about escapes; those warnings are noise here."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except SyntaxError as exc:
        return exc.lineno or 0
    except (ValueError, RecursionError, MemoryError):
        return 0
