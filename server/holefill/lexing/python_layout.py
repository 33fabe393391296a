"""Python's layout with holes: NEWLINE, INDENT, DEDENT and brackets over the raw lexeme NFA.

The raw lexer (holefill.lexing.holes) lexes with holes as for any language, with one extra
`%layout` terminal NL: a line break plus the next line's indentation. This module runs the
CPython tokenizer's layout rules along every path of that raw NFA and emits the grammar's
NEWLINE / INDENT / DEDENT, producing the NFA over grammar terminals that the core checks.

Fixed text before the first hole has a known context: bracket depth 0, indentation stack [0].
After a hole the context is unknown (paper: fim-left-right-quotient-python, sections V-VI):

- the bracket depth at the hole is zero or positive; in the positive branch the text stays
  inside brackets until a closer brings the depth to zero, and at every closer that reaches a
  new minimum both "now zero" and "still inside" are possible;
- the indentation stack is unknown below what the text itself shows: the first line break
  in the text compares the next line's width with the unknown width of the line the hole
  ended on (INDENT, nothing, or one or more DEDENTs); a later dedent below every level seen
  emits one known DEDENT per level seen and then any number more;
- when the whole file indents by one unit (strict mode), levels are exact multiples of the
  unit, so after the first line every count is exact;
- a width is a pair, as CPython's tokenizer compares indentation twice (Parser/tokenizer.c,
  col and altcol): with tabs to the next multiple of 8 and with tabs as 1 column. Both
  orders must agree or CPython raises TabError: an INDENT is deeper in both, a line at a
  level equals it in both, and a DEDENT lands on a level equal in both (see `pack`);
  a free zone's levels lie deeper than the level below in both counts; a line whose blanks
  a hole writes in part is a *reach spec* (`reaches`): exact when the fixed blanks after
  the hole are spaces, or spaces and tabs with none before it, else a least width (an
  over-approximation: the check may say YES where no blanks fit, and the witness fails);
- whether the line the hole ended on holds tokens is unknown, so the first line break may
  or may not end a logical line (NEWLINE or nothing).

Each (raw state, layout state) pair becomes one state of the output NFA; fixed text is
deterministic, so the product stays close to the raw NFA in size.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, cast

import numpy as np

from holefill.budget import SCAN_BLOCK, Budget, blocks, poll
from holefill.grammar.tables import CompiledGrammar
from holefill.lexing.anchors import Anchors, ReferenceLexer
from holefill.lexing.holes import (
    EPSILON,
    KIND_EPS_LINK,
    KIND_HOLE,
    KIND_LEXEME,
    WITNESS_UNIT,
    HoleLexer,
    LexemeNFA,
    Place,
)
from holefill.lexing.layout_native import NativeSession, StateInfo
from holefill.lexing.native_holes import state_places
from holefill.lexing.relex import Reading
from holefill.lexing.render import Renderer, full_path, lexeme_items
from holefill.lexing.witness_style import (
    DEFAULT_PREFERENCE,
    LINE_CONT_SURCHARGE,
    PYTHON_PREFERENCE,
    preferences,
    tight,
)

LINE_TOKENS_NONE, LINE_TOKENS_SOME, LINE_TOKENS_UNKNOWN = 0, 1, 2
# Products are built in C (holefill.lexing.layout_native) unless a lexer is made with
# native=False; the rules below stay the reference.
NATIVE_PRODUCT = True
PENDING_NONE = -1  # not at the start of a line (or the line's width is the hole's business)
PENDING_FREE = -3  # at a line start whose width a hole chose (the hole lies in the indentation)


# Indentation stacks are tuples, innermost last, of known widths (>= 0) and *free zones*:
# FREE0 / FREE1 stand for zero-or-more / one-or-more levels whose widths lie strictly between
# the known widths around them (or above the last one). A hole creates them: the levels the
# hole's text opens have widths we may still choose. The bottom is always the known level 0.
# A one-or-more zone may carry a least width for its top level (`zone(True, least)`): a hole
# that ends at a line start before a token `least` columns in leaves its last level there.
FREE0, FREE1 = -1, -2
Stack = tuple[int, ...]
# Layout moves: "I" INDENT, "D" DEDENT, "D*" any number of DEDENTs, "D+" at least one.
Moves = tuple[str, ...]


# A width is the pair (col, alt) of Parser/tokenizer.c packed in one int, col * ALT_SPAN + alt:
# col counts tabs to the next multiple of 8, alt counts them as 1 (ALTTABSIZE); a form feed
# resets both. Packed widths are equal exactly when both counts are, ordered by col first,
# and appending k spaces adds k * SPACE. Indentation of ALT_SPAN characters or more is beyond
# our limits (PythonLexer.beyond_limits), so alt never spills into col.
ALT_SPAN = 1024
SPACE = ALT_SPAN + 1
MAX_WIDTH = 8 * ALT_SPAN * ALT_SPAN  # every packed width lies below (2 ** 23)


def pack(col: int, alt: int) -> int:
    return col * ALT_SPAN + alt


def col_of(w: int) -> int:
    return w // ALT_SPAN


def alt_of(w: int) -> int:
    return w % ALT_SPAN


def deeper(w: int, v: int) -> bool:
    """Whether width w lies deeper than v in both counts (what an INDENT needs)."""
    return w // ALT_SPAN > v // ALT_SPAN and w % ALT_SPAN > v % ALT_SPAN


def at_least(w: int, v: int) -> bool:
    """Whether width w is at least v in both counts (v a lower bound)."""
    return w >= 0 and w // ALT_SPAN >= v // ALT_SPAN and w % ALT_SPAN >= v % ALT_SPAN


def widest(w: int, v: int) -> int:
    """The least width at least w and v in both counts."""
    return pack(max(w // ALT_SPAN, v // ALT_SPAN), max(w % ALT_SPAN, v % ALT_SPAN))


def join_least(before: int, after: int) -> int:
    """A lower bound of the width of a line whose blanks are some of width `before`, any
    blanks, and some of width `after` (no form feed): alt adds up; col is at least the col
    of `after` and at least col of `before` plus one per character after (exact for
    spaces)."""
    cb, ab, ca, aa = before // ALT_SPAN, before % ALT_SPAN, after // ALT_SPAN, after % ALT_SPAN
    return pack(max(cb + aa, ca), ab + aa)


def reachable(p: int, u: int) -> bool:
    """Whether some blanks (no form feed) take a line start of width p to width u."""
    return _blanks_between(p, u) is not None


def _blanks_between(p: int, u: int) -> str | None:
    """Blanks that take width p to width u: spaces when they do; else `i` spaces, `k` tabs
    with `g` spaces absorbed between them (under 8 per gap) and `j` spaces, where the i
    spaces and k tabs pass the tab stops up to 8 * (q + k)."""
    cp, ap, cu, au = p // ALT_SPAN, p % ALT_SPAN, u // ALT_SPAN, u % ALT_SPAN
    n = au - ap
    if n < 0 or cu < cp + n or (n and cu > (cp // 8 + n) * 8):
        return None
    if cu == cp + n:
        return " " * n
    for k in range(1, n + 1):
        for q in range(cp // 8, (cp + n - k) // 8 + 1):
            j = cu - 8 * (q + k)
            if j < 0:
                break
            lo = max(0, 8 * q - cp, n - k - j - 7 * (k - 1))
            hi = min(8 * q + 7 - cp, n - k - j)
            if lo <= hi:
                g = n - k - j - lo
                gaps = [min(7, g - 7 * t) for t in range((g + 6) // 7)]
                return " " * lo + "\t" + "".join(" " * x + "\t" for x in gaps) + \
                    "\t" * (k - 1 - len(gaps)) + " " * j
    return None


# The width of a line that a hole's blanks help to write is a *reach spec*, one int: the
# least width it can have (bits below EXACT_SHIFT), and when that is known exactly, a code
# above (5 bits, and a flag at TAB_FLAG):
# - k + 1, when the blanks after the hole's are k spaces (k < 31): the line is the fixed
#   blanks before the hole (the least width less k spaces), the hole's, and k spaces;
# - s + 1 with TAB_FLAG, when nothing comes before the hole's blanks and those after it
#   are s spaces (s < 31) and then a tab and more: the least width is theirs.
# Then `reaches` is exact; other blanks (a form feed, both sides) keep only the least
# width. 0: no bound. Codes stay below 2 ** 29, so a zone (`zone`) fits an int32.
EXACT_SHIFT = 23
TAB_FLAG = 1 << 28
_LEAST_MASK = (1 << EXACT_SHIFT) - 1


def blank_spec(ws: str) -> int:
    """The reach spec of a line whose blanks are a hole's and then the fixed `ws`."""
    w = indent_width(ws)
    spaces = len(ws) - len(ws.lstrip(" "))
    if not ws or "\f" in ws or spaces >= 31:
        return w
    if spaces == len(ws):
        return w + ((spaces + 1) << EXACT_SHIFT)
    return w + ((spaces + 1) << EXACT_SHIFT) + TAB_FLAG


def spec_least(code: int) -> int:
    """The least width of a reach spec."""
    return code & _LEAST_MASK


def spec_join(p: int, code: int) -> int:
    """The reach spec of fixed blanks of width p, then a hole's, then what `code` (a spec
    with nothing before the hole's blanks) says."""
    least = code & _LEAST_MASK
    if code & TAB_FLAG:
        return code if p == 0 else join_least(p, least)
    k = ((code >> EXACT_SHIFT) & 31) - 1
    if code == 0:
        k = 0
    if k >= 0 and least == k * SPACE:
        return 0 if p == 0 and k == 0 else p + k * SPACE + ((k + 1) << EXACT_SHIFT)
    return join_least(p, least)


def spec_both(a: int, b: int) -> int:
    """A spec that a width meeting both specs meets (exact when one is no bound)."""
    if a == 0 or a == b:
        return b
    if b == 0:
        return a
    return widest(a & _LEAST_MASK, b & _LEAST_MASK)


def reaches(code: int, t: int) -> bool:
    """Whether a line of the reach spec `code` can have width t (t < 0: a free zone, no)."""
    if t < 0:
        return False
    least = code & _LEAST_MASK
    v = ((code >> EXACT_SHIFT) & 31) - 1
    if v < 0:
        return at_least(t, least)
    if code & TAB_FLAG:  # the hole's blanks y, then v spaces and a tab: col passes 8 * m
        a = alt_of(t) - alt_of(least)
        m8 = col_of(t) - col_of(least) + (v // 8 + 1) * 8
        if a < 0 or m8 % 8 or m8 < 8:
            return False
        return any(reachable(0, pack(c, a))
                   for c in range(max(a, m8 - 8 - v), m8 - v) if c >= 0)
    ks = v * SPACE
    return at_least(t, ks) and reachable(least - ks, t - ks)


def fixed_by_backslash(w: int) -> int:
    """CPython's width of a line start whose first backslash came after w: both counts are
    the col of w (`altcol = cont_line_col`)."""
    return pack(w // ALT_SPAN, w // ALT_SPAN)


def narrowest(w: int, v: int) -> int:
    """The widest width at most w and v in both counts."""
    return pack(min(w // ALT_SPAN, v // ALT_SPAN), min(w % ALT_SPAN, v % ALT_SPAN))


def extend_width(w: int, ws: str) -> int:
    """The width of a line start of width w followed by the blanks ws."""
    col, alt = w // ALT_SPAN, w % ALT_SPAN
    for ch in ws:
        if ch == "\t":
            col, alt = (col // 8 + 1) * 8, alt + 1
        elif ch == "\f":
            col = alt = 0
        else:
            col, alt = col + 1, alt + 1
    return col * ALT_SPAN + alt


def blanks_to(have: int, want: int, suffix: str = "") -> str | None:
    """Blanks that take a line start of width `have`, followed by the blanks `suffix`, to
    width `want`, or None."""
    if suffix.strip(" ") == "":
        ks = len(suffix) * SPACE
        return _blanks_between(have, want - ks) if at_least(want, ks) else None
    if "\f" in suffix:
        return "" if extend_width(have, suffix) == want else None
    need = alt_of(want) - alt_of(have) - len(suffix)
    for i in range(8):
        for k in range(int(i > 0), col_of(want) // 8 + 2):
            lead = " " * (i if k else 0) + "\t" * k
            j = need - len(lead)
            if j < 0:
                break
            if extend_width(have, lead + " " * j + suffix) == want:
                return lead + " " * j
    return None


def zone(at_least_one: bool, least: int = 0) -> int:
    """The stack entry of a free zone (FREE0 = zone(False), FREE1 = zone(True))."""
    return -(1 + int(at_least_one) + 2 * least)


def zone_min(z: int) -> int:
    """How many levels the zone holds at least (0 or 1)."""
    return (-z - 1) % 2


def zone_least(z: int) -> int:
    """The least width of the zone's top level (0: no bound beyond the level below)."""
    return (-z - 1) // 2


def _free_all(m: int) -> str:
    return "D+" if zone_min(m) else "D*"


def _buried(z: int) -> int:
    """A zone with a known level above it forgets its least width: the bound is only read
    while the zone is on top, and one copy of the rest of the file per bound slowed checks."""
    return zone(bool(zone_min(z)))


def top_at_least(st: Stack, w: int) -> Stack:
    """The stack after a hole whose last line, of reach spec `w`, is the top level: a top
    zone learns the bound."""
    top = st[-1]
    if top >= 0 or len(st) < 2:
        return st
    below = st[-2]
    if zone_min(top) == 0 and reaches(w, below):
        return st  # the line may lie at the known level below
    return st[:-1] + (zone(True, spec_both(w, zone_least(top))),)


def line_at(st: Stack, w: int, unit: int | None) -> list[tuple[Moves, Stack]]:
    """The first token of a logical line of width w against stack st: the alternatives of
    INDENT / DEDENT moves and the new stack. In strict mode (unit) free zones lie only at the
    top and every level is a multiple of the unit, so counts are exact once w pins them."""
    top = st[-1]
    if top >= 0:
        if w == top:
            return [((), st)]
        if deeper(w, top):
            return [(("I",), st + (w,))]
        if w > top:
            return []  # deeper by one count only: TabError
        return _pop(st[:-1], w, ("D",), unit, top)
    m, a = top, st[-2]
    if w == a:
        return [((_free_all(m),), st[:-1])]
    if w < a:
        return _pop(st[:-2], w, (_free_all(m), "D"), unit, a)
    if not deeper(w, a):
        return []  # the zone's levels, and a deeper line, lie deeper than a in both counts
    least = zone_least(m)  # the reach spec of the zone's top level
    alts: list[tuple[Moves, Stack]] = []
    if unit is not None:
        if (w - a) % unit:
            return []
        levels = tuple(range(a + unit, w + 1, unit))
        if reaches(least, w):
            alts.append(((), st[:-1] + levels))
        alts.append((("D+",), st[:-1] + levels))
        if (w - unit > a or not zone_min(m)) and reaches(least, w - unit):
            alts.append((("I",), st[:-1] + levels))
        return alts
    if reaches(least, w):
        alts.append(((), st[:-1] + (FREE0, w)))  # the hole's last line was at width w
    # ... below w: at a, or (at least one level) deeper than a in both counts
    if deeper(w, widest(a + SPACE * zone_min(m), spec_least(least))):
        alts.append((("I",), st[:-1] + (_buried(m), w)))
    alts.append((("D+",), st[:-1] + (FREE0, w)))  # ... above w, and a level at w was open
    return alts


def _pop(st: Stack, w: int, moves: Moves, unit: int | None,
         upper: int) -> list[tuple[Moves, Stack]]:
    """Dedenting to width w: pop until a level equals w (no INDENT may follow). `upper` is
    the last known level popped (w lies below it)."""
    while st:
        top = st[-1]
        if top >= 0:
            if w == top:
                return [(moves, st)]
            if w > top:
                return []  # a dedent to a width that was never opened (or TabError)
            st, moves, upper = st[:-1], moves + ("D",), top
            continue
        m, a = top, st[-2]
        if w > a:
            if unit is None and deeper(w, a) and deeper(upper, w):
                return [(moves + ("D*",), st[:-1] + (FREE0, w))]
            return []  # strict zones lie only at the top, and a dedent never lands in one
        moves += (_free_all(m),)
        st = st[:-1]
    return []


def close_all(st: Stack) -> Moves:
    """The DEDENTs at end of file."""
    moves: list[str] = []
    for x in reversed(st):
        if x > 0:
            moves.append("D")
        elif x < 0:
            moves.append(_free_all(x))
    return tuple(moves)


# An open hole (one that may emit NEWLINE / INDENT / DEDENT) is tracked as (entry stack, cut,
# free): the hole's DEDENTs have closed the entry levels above index `cut`, and `free` tells
# whether levels the hole opened itself are still open (their widths are ours to choose).
# Tracking this makes the stack after the hole follow from the hole's own layout tokens, so a
# witness cannot pretend the hole closed or opened blocks without saying so.
OpenHole = tuple[Stack, int, bool]


def free_width_moves(st: Stack, least: int = 0) -> list[tuple[Moves, Stack]]:
    """The first token of a line whose width a hole chose (of reach spec `least`): any
    consistent INDENT / DEDENTs."""
    out: list[tuple[Moves, Stack]] = []
    top = st[-1]
    if top < 0:
        out.append(((), top_at_least(st, least)))  # the line is the zone's top level
    elif reaches(least, top):
        out.append(((), st))
    deeper = zone(True, least)
    out.append((("I",), (st[:-1] + (deeper,)) if top < 0 else st + (deeper,)))
    moves: Moves = ()
    while len(st) > 1:
        x = st[-1]
        moves += ("D",) if x >= 0 else (_free_all(x),)
        st = st[:-1]
        if reaches(least, st[-1]):
            out.append((moves, st))
    return out


def open_hole_moves(h: OpenHole) -> list[tuple[str, OpenHole]]:
    """The INDENT ("I") and DEDENT ("D") moves an open hole can make, with the new state.

    A state's moves and exit (open_hole_exit) read only `entry[:cut + 1]`, so a DEDENT that
    closes entry level `cut` drops it from the state: holes entered with stacks that differ
    only in levels the hole has closed (a left that opened one more block) then share their
    states, and a right context grown by such an entry adds only the states above the
    common levels (holefill.check.incremental.RightContext)."""
    entry, cut, free = h
    out: list[tuple[str, OpenHole]] = [("I", (entry, cut, True))]
    if free:
        out.append(("D", (entry, cut, True)))  # more levels of its own stay open
        out.append(("D", (entry, cut, False)))  # that was the last of them
    elif entry[cut] < 0:  # inside a free zone of the entry stack
        out.append(("D", (entry, cut, False)))
        out.append(("D", (entry[:cut], cut - 1, False)))
    elif cut > 0:
        out.append(("D", (entry[:cut], cut - 1, False)))
    return out


def open_hole_exit(h: OpenHole) -> Stack:
    """The stack after the hole."""
    entry, cut, free = h
    st = entry[: cut + 1]
    if st[-1] < 0:
        st = st[:-1] + (FREE0,)
    if free:
        st = (st[:-1] + (FREE1,)) if st[-1] < 0 else st + (FREE1,)
    return st


def open_key(stack: Stack, carried: int = 0) -> tuple:
    """The product's layout key of an open hole entered at a line start with `stack`, after
    `carried` columns of indentation in the text before it."""
    return ("open", (stack, len(stack) - 1, False), True, carried)


def hole_key(entry: Layout) -> object:
    """The product's layout key of a hole entered with layout `entry`. Until the hole emits
    a NEWLINE the logical line goes on and the indentation stack stays as it is (H-same);
    after one, or when the hole begins at a line start, the hole may close and open levels
    (H-open, which remembers the stack it was entered with)."""
    if entry.pending != PENDING_NONE:
        return open_key(entry.stack, max(entry.pending, 0))
    line = LINE_TOKENS_SOME if entry.line == LINE_TOKENS_SOME else LINE_TOKENS_UNKNOWN
    return replace(entry, depth=0, line=line, cont=False)


class Layout(NamedTuple):
    """What the tokenizer knows at a lexeme boundary.

    depth:   >= 0 the bracket depth; -(k+1) means inside brackets opened before this chunk's
             context began (unknown how many), with k more opened since.
    stack:   the indentation stack (known widths and free zones, see `line_at`).
    line:    whether the current logical line holds tokens (LINE_TOKENS_*).
    pending: width of a line start whose first token has not come yet, or PENDING_NONE.
    cont:    a backslash continuation came after the last token (CPython rejects EOF here).
    """

    depth: int
    stack: Stack
    line: int
    pending: int
    cont: bool = False
    comment: bool = False  # the last lexeme was a comment: only a line break may follow
    fixed: bool = False  # a backslash at a line start fixed the pending width
    least: int = 0  # with PENDING_FREE: the least width the line can have
    text_top: bool = False  # the stack's top is the width of a line of fixed text


replace = Layout._replace  # layouts are immutable; this makes a changed copy


def indent_width(ws: str) -> int:
    """The packed width (`pack`) of leading whitespace: col with tabs to the next multiple
    of 8 and alt with tabs as 1; a form feed resets both (CPython's rules)."""
    col = alt = 0
    for ch in ws:
        if ch == "\t":
            col = (col // 8 + 1) * 8
            alt += 1
        elif ch == "\f":
            col = alt = 0
        else:
            col += 1
            alt += 1
    return col * ALT_SPAN + alt


_LEAD = re.compile(r"([ \t\f]*)[^ \t\f\r\n#\\]")
_BLANK_FIRST = re.compile(r"[ \t\f]*(?:[\r\n#]|$)")  # a first line without tokens
_LINE_START = re.compile(r"(?:^|[\r\n])([ \t\f]*)(?=[^ \t\f\r\n#\\])")  # \r alone ends lines too


def indent_unit(chunks: Sequence[str]) -> int | None:
    """The file's indentation unit, as the packed width of that many spaces, when every line
    of fixed text is indented by a multiple of one unit of spaces (strict mode), else None.
    Lines inside brackets are not layout, so we only trust the widths that occur; a mixed or
    odd file turns strict mode off."""
    widths = set()
    for chunk in chunks:
        for m in _LINE_START.finditer(chunk):
            ws = m.group(1)
            if "\t" in ws or "\f" in ws:
                return None
            if ws:
                widths.add(len(ws))
    if not widths:
        return None
    unit = min(widths)
    if unit not in (2, 3, 4, 8) or any(w % unit for w in widths):
        return None
    return unit * SPACE


@dataclass
class _Product:
    """The output NFA under construction; every edge is a step of the check's budget."""

    budget: Budget | None = None
    n_states: int = 0
    edges: array = field(default_factory=lambda: array("i"))
    kinds: list[int] = field(default_factory=list)
    terms: list[int] = field(default_factory=list)
    spans: list[tuple[Place, Place]] = field(default_factory=list)
    raw_edge: list[int] = field(default_factory=list)  # the raw edge an edge comes from, or -1
    seen: set[tuple[int, int, int, int]] = field(default_factory=set)

    def new_state(self) -> int:
        self.n_states += 1
        return self.n_states - 1

    def add_tokens(self, a: int, b: int, loops: _TokenLoops, place: tuple[Place, Place]) -> None:
        """Edges a -> b for every token of `loops`, as KIND_HOLE edges of the hole `place`."""
        key = (a, -2, b, id(loops))
        if key in self.seen:
            return
        self.seen.add(key)
        n = loops.n
        if self.budget is not None:
            self.budget.spend(n)
        block = array("i", loops.edges)
        block[0::4] = array("i", [a]) * n
        block[2::4] = array("i", [b]) * n
        self.edges.extend(block)
        self.kinds.extend([KIND_HOLE] * n)
        self.terms.extend(loops.terms)
        self.spans.extend([place] * n)
        self.raw_edge.extend([-1] * n)

    def add(self, a: int, label: int, b: int, weight: int, kind: int, term: int,
            span: tuple[Place, Place], raw: int) -> None:
        if b == DEAD:
            return
        key = (a, label, b, raw)
        if key in self.seen:
            return
        if self.budget is not None:
            self.budget.spend()
        self.seen.add(key)
        self.edges.extend((a, label, b, weight))
        self.kinds.append(kind)
        self.terms.append(term)
        self.spans.append(span)
        self.raw_edge.append(raw)


@dataclass
class ProductSession:
    """A product under construction that grows by entries (PythonLayoutLexer.extend): the
    text, its raw NFA and what the product reads of them, and the states made so far."""

    chunks: list[str]
    raw: LexemeNFA
    unit: int | None
    prod: _Product
    closers_ahead: dict[int, int]
    out_edges: dict[int, list[int]]
    hole_raw: set[int]
    final_raw: set[int]
    final: int
    lead: list[int]
    blank_first: list[bool]
    ids: dict[tuple[int, object], int] = field(default_factory=dict)


_NO_SPAN = (Place(), Place())
DEAD = -1  # a product state that cannot reach the end (no edge is added towards it)


class _TokenLoops:
    """One edge per token a hole may hold, laid out once so that a hole state gets all of
    them in a few array operations (two thirds of a Python NFA's edges are these)."""

    def __init__(self, terms_weights: list[tuple[int, int]]) -> None:
        self.terms = [t for t, _ in terms_weights]
        self.edges = array("i", [x for t, w in terms_weights for x in (0, t, 0, w)])
        self.n = len(terms_weights)


class PythonLayoutLexer:
    """Builds the grammar-level NFA of Python text with holes.

    `native` (the default, NATIVE_PRODUCT) builds products in C (native/hf_layout.c, the
    same states and edges); False runs the rules here, the reference the tests compare
    against."""

    def __init__(self, compiled: CompiledGrammar, native: bool | None = None,
                 readable: bool = True) -> None:
        """`readable`: witnesses prefer the lexemes a person writes (witness_style); False
        leaves the choice among equally short ones to the core (for comparisons)."""
        self.native = NATIVE_PRODUCT if native is None else native
        g = compiled.grammar
        self.terminals = g.terminals
        surcharge = {g.terminal_id("FSTRING"): FSTRING_WEIGHT,
                     g.terminal_id('"type"'): TYPE_ALIAS_WEIGHT}
        if readable:
            surcharge[g.terminal_id("LINE_CONT")] = LINE_CONT_SURCHARGE
        self.raw = HoleLexer(compiled.lexer, g.terminals, surcharge,
                             error_terms=frozenset({g.terminal_id("UNCLOSED_TRIPLE")}),
                             preference=preferences(g.terminals, PYTHON_PREFERENCE,
                                                    DEFAULT_PREFERENCE) if readable else None)
        self.nl = g.terminal_id("NL")
        self.newline = g.terminal_id("NEWLINE")
        self.indent = g.terminal_id("INDENT")
        self.dedent = g.terminal_id("DEDENT")
        self.line_cont = g.terminal_id("LINE_CONT")
        self.ws = g.terminal_id("WS")
        self.comment = g.terminal_id("COMMENT")
        self.openers = {g.terminal_id(f'"{c}"') for c in "([{"}
        self.closers = {g.terminal_id(f'"{c}"') for c in ")]}"}
        self.hole_terminals = [*self.raw.hole_terminals, self.newline, self.indent, self.dedent]
        # The tokens a hole may hold on one line, weighed as the raw lexer weighs them.
        layout_terms = {self.newline, self.indent, self.dedent}
        self._same_line = _TokenLoops([(t, self.raw.weight[t]) for t in self.raw.hole_terminals
                                       if t not in layout_terms])
        # per product (or per `reset_memo`): indentation steps between lines of fixed text,
        # strict mode's evidence; the answers of `_token` (layouts repeat; the unit is fixed)
        self._steps: set[int] = set()
        self._token_memo: dict[tuple[Layout, int], list[tuple[list, Layout]]] = {}

    # -- layout steps, each returning (emitted tokens, new layout) alternatives ------------
    # An emitted item is a terminal id, or (DEDENT, "*") / (DEDENT, "+") for a loop.

    def _line_end(self, lay: Layout) -> list[tuple[list, Layout]]:
        """A line break at bracket depth 0: maybe a NEWLINE."""
        if lay.line == LINE_TOKENS_SOME:
            return [([self.newline], lay)]
        if lay.line == LINE_TOKENS_UNKNOWN:
            return [([self.newline], lay), ([], lay)]
        return [([], lay)]

    def _at_width(self, lay: Layout, w: int, unit: int | None) -> list[tuple[list, Layout]]:
        """The first token of a line of width w: INDENT / DEDENTs against the stack."""
        st = lay.stack
        if lay.text_top and w > st[-1]:
            # An indentation step between two lines of fixed text: strict mode's evidence
            # (steps against stacks that a hole guessed say nothing about the file).
            self._steps.add(w - st[-1])
        return [(self._moves(moves), replace(lay, stack=new, text_top=True)) for moves, new in
                line_at(st, w, unit)]

    def _moves(self, moves: Moves) -> list:
        out: list = []
        for mv in moves:
            if mv == "I":
                out.append(self.indent)
            elif mv == "D":
                out.append(self.dedent)
            else:
                out.append((self.dedent, mv[1]))
        return out

    def _token(self, lay: Layout, term: int, unit: int | None) -> list[tuple[list, Layout]]:
        """A real token: indentation first if it starts a line, then brackets."""
        key = (lay, term)
        got = self._token_memo.get(key)
        if got is None:
            got = self._token_memo[key] = self._token_alts(lay, term, unit)
        return got

    def _token_alts(self, lay: Layout, term: int, unit: int | None) -> list[tuple[list, Layout]]:
        alts: list[tuple[list, Layout]] = [([], lay)]
        if lay.pending == PENDING_FREE and lay.depth == 0:
            alts = [(self._moves(mv), replace(lay, stack=st, least=0, text_top=False))
                    for mv, st in free_width_moves(lay.stack, lay.least)]
        elif lay.pending != PENDING_NONE and lay.depth == 0:
            alts = self._at_width(lay, lay.pending, unit)
        out = []
        for toks, l2 in alts:
            l2 = replace(l2, pending=PENDING_NONE, line=LINE_TOKENS_SOME, cont=False,
                         comment=False, fixed=False)
            d = l2.depth
            if term in self.openers:
                out.append((toks + [term], replace(l2, depth=d + 1 if d >= 0 else d - 1)))
            elif term in self.closers:
                if d > 0:
                    out.append((toks + [term], replace(l2, depth=d - 1)))
                elif d == -1:
                    out.append((toks + [term], replace(l2, depth=0)))
                    out.append((toks + [term], replace(l2, depth=-1)))
                elif d < -1:
                    out.append((toks + [term], replace(l2, depth=d + 1)))
            else:
                out.append((toks + [term], l2))
        return out

    def _newline(self, lay: Layout, width: int) -> list[tuple[list, Layout]]:
        if lay.depth != 0:
            return [([], replace(lay, cont=False, comment=False))]
        return [(toks, replace(l2, line=LINE_TOKENS_NONE, pending=width, cont=False,
                               comment=False, fixed=False))
                for toks, l2 in self._line_end(lay)]

    def _eof(self, lay: Layout) -> list[list]:
        if lay.depth != 0 or lay.cont:
            return []
        return [toks + self._moves(close_all(l2.stack)) for toks, l2 in self._line_end(lay)]

    def _nl_from_hole(self, emit, state, src, rt, tag, exits, chunks, b, first) -> None:
        """A line break lexeme that begins in a hole and ends in fixed text."""
        tail = chunks[b.chunk][: b.pos]
        width = _nl_break_width(tail)
        for l0 in exits:
            if l0.depth != 0:  # inside brackets: only whitespace
                emit(src, [], state(rt, l0), _guessing_brackets(first))
                continue
            if not isinstance(tag, Layout):  # H-open: the hole ended its own line
                pend = PENDING_FREE if width is None else width
                least = blank_spec(tail) if width is None else 0
                emit(src, [], state(rt, replace(l0, line=LINE_TOKENS_NONE, pending=pend,
                                                least=least)), first)
            elif width is not None:  # H-same: the text's line break ends the hole's line
                for toks, l2 in self._line_end(l0):
                    emit(src, toks, state(rt, replace(l2, line=LINE_TOKENS_NONE,
                                                      pending=width)), first)

    # -- the product -------------------------------------------------------------------

    def build(self, chunks: Sequence[str], anchors: Anchors | None = None,
              budget: Budget | None = None) -> LexemeNFA:
        raw = self.raw.build(chunks, anchors, budget)
        unit = indent_unit(chunks)
        nfa = self._product(chunks, raw, unit, budget=budget)
        if unit is not None and any(step != unit for step in self._steps):
            # The fixed text indents by other steps than the unit the scan guessed (a
            # docstring with indented lines fooled it): strict mode does not hold.
            nfa = self._product(chunks, raw, None, budget=budget)
        return nfa

    def fixed_moves(self, lay: Layout, label: int, term: int, eps_link: bool, a: Place,
                    b: Place, chunks: Sequence[str], unit: int | None,
                    to_hole: bool) -> list[tuple[list, object, bool]]:
        """The product moves of a lexeme `term` (NFA label `label`) from place a to place b
        that begins in fixed text with layout `lay` (`eps_link`: the chunk-to-hole link, no
        lexeme): (layout tokens, the layout key of the target state, whether the lexeme's
        own label follows the tokens). A target in a hole gets the key of a hole entered with
        that layout (`hole_key`, `open_key`). On known text (no hole before) there is exactly
        one move, or none when the text is not Python (an inconsistent dedent)."""
        ends_line = lay.depth == 0 and (lay.comment if eps_link else term == self.comment)
        if to_hole and ends_line:
            # After a comment only a line break may come: the hole begins with one.
            return [(toks, open_key(lay.stack), True) for toks, _ in self._line_end(lay)]
        if eps_link:
            return [([], hole_key(lay), False)]
        if label == EPSILON:  # whitespace, comments, line continuations
            nxt = lay
            if term == self.line_cont:
                # CPython: the width before the first backslash of a line start fixes its
                # indentation, unless that width is 0; then the columns of the continuation
                # lines count on.
                # The fixed width counts tabs to 8 in both counts (altcol = cont_line_col).
                fix = not lay.fixed and lay.pending > 0
                nxt = replace(lay, cont=True, fixed=lay.fixed or fix,
                              pending=fixed_by_backslash(lay.pending) if fix else lay.pending)
            elif term == self.comment:
                nxt = replace(lay, comment=True)
            elif (term == self.ws and lay.cont and lay.pending >= 0 and not lay.fixed
                  and not to_hole and a.chunk == b.chunk):
                blank = chunks[a.chunk][a.pos:b.pos]
                nxt = replace(lay, pending=lay.pending + indent_width(blank))
            return [([], hole_key(nxt) if to_hole else nxt, False)]
        if term == self.nl:
            if lay.depth != 0:  # inside brackets a line break is only whitespace
                nxt = replace(lay, comment=False) if lay.comment else lay  # it ends one
                return [([], hole_key(nxt) if to_hole else nxt, False)]
            if to_hole or b.chunk != a.chunk:
                # The next line's indentation lies (partly) in a hole: that line's layout is
                # the hole's business.
                out: list[tuple[list, object, bool]] = []
                for toks, _ in self._line_end(lay):
                    if to_hole:
                        carried = _nl_break_width(chunks[a.chunk][a.pos:]) or 0
                        out.append((toks, open_key(lay.stack, carried), False))
                        continue
                    # Only whitespace lies in the hole: no layout tokens there, but the hole
                    # chose the next line's width (at least what the texts on both sides hold).
                    least = spec_join(_nl_break_width(chunks[a.chunk][a.pos:]) or 0,
                                      blank_spec(chunks[b.chunk][:b.pos]))
                    out.append((toks, Layout(0, lay.stack, LINE_TOKENS_NONE, PENDING_FREE,
                                             least=least), False))
                return out
            text = chunks[a.chunk][a.pos:b.pos]
            width = indent_width(text.lstrip("\r\n"))
            return [(toks, l2, False) for toks, l2 in self._newline(lay, width)]
        return [(toks[:-1], hole_key(l2) if to_hole else l2, True)
                for toks, l2 in self._token(lay, term, unit)]

    def file_start(self, text: str) -> Layout:
        """The layout at the start of a file that begins with `text`."""
        first_ws = re.match(r"[ \t\f]*", text)
        return Layout(0, (0,), LINE_TOKENS_NONE,
                      indent_width(first_ws.group(0)) if first_ws else 0, text_top=True)

    def eof_moves(self, lay: Layout) -> list[list]:
        """The layout tokens at the end of the file after layout `lay`."""
        return self._eof(lay)

    def reset_memo(self) -> None:
        """Starts new bookkeeping for `fixed_moves` outside a product: the `_token` memo
        (valid for one unit) and the indentation steps seen (strict mode's evidence)."""
        self._steps = set()
        self._token_memo = {}  # see _product

    def _closers_ahead(self, raw: LexemeNFA, last: int,
                       budget: Budget | None = None) -> dict[int, int]:
        """Per raw state in the text after the last hole: the most brackets any lexing of the
        rest of the file can close that it did not open itself (its largest excess of closers
        over openers on a prefix). A state holding more open than that cannot reach the end.
        One pass over the edges of that text (a million for a 100,000-line file): the places
        are read as arrays where the graph is native, and `budget` is polled between blocks."""
        n = raw.n_edges
        quads = np.frombuffer(raw.edges, dtype=np.int32, count=4 * n).reshape(-1, 4)
        places = state_places(raw)
        if places is not None:
            inside = (places[quads[:, 0], 0] == last) & (places[quads[:, 2], 0] == last)
            edges = np.flatnonzero(inside)
            pos = places[quads[edges, 0], 1]
        else:
            spans = raw.spans
            found: list[int] = []
            for block in blocks(n, budget):
                found.extend(e for e in block
                             if spans[e][0].chunk == last and spans[e][1].chunk == last)
            edges = np.array(found, dtype=np.int64)
            pos = np.array([spans[e][0].pos for e in found], dtype=np.int64)
        order = edges[np.argsort(-pos, kind="stable")]  # lexemes end after they begin
        srcs, dsts = quads[order, 0].tolist(), quads[order, 2].tolist()
        terms = raw.terms
        step_of = {t: 1 for t in self.closers} | {t: -1 for t in self.openers}
        ahead: dict[int, int] = {}
        for block in blocks(len(srcs), budget):
            for i in block:
                src, dst = srcs[i], dsts[i]
                step = step_of.get(terms[int(order[i])], 0)
                ahead[src] = max(ahead.get(src, 0), step + ahead.get(dst, 0))
        for f in raw.finals:
            ahead.setdefault(f, 0)
        return ahead

    def _product(self, chunks: Sequence[str], raw: LexemeNFA, unit: int | None,
                 entries: Sequence[tuple[int, object]] | None = None,
                 budget: Budget | None = None) -> LexemeNFA:
        """The product of `raw` with the layout rules, from the file's start, or from
        `entries` (raw state, layout key) when given (the text after a hole, from the hole
        or from a place a lexeme begun before it reaches)."""
        session = self.product_session(chunks, raw, unit, budget)
        starts = self.extend(session, entries)
        prod = session.prod
        if isinstance(session, NativeSession):
            state_info: Mapping[int, object] = StateInfo(session)
            raw_state: Sequence[int] = cast(StateInfo, state_info).raw
        else:
            state_info = {s: key[1] for key, s in session.ids.items()
                          if key[0] not in session.hole_raw}
            by_state = [-1] * prod.n_states
            for key, s in session.ids.items():
                by_state[s] = key[0]
            raw_state = by_state
        return LexemeNFA(
            n_states=prod.n_states,
            edges=prod.edges,
            starts=starts,
            finals=[session.final],
            # the native product's are arrays and on-demand sequences: read-only alike
            kinds=cast(list, prod.kinds),
            terms=cast(list, prod.terms),
            spans=cast(list, prod.spans),
            hole_states=[],
            raw=raw,
            raw_edge=cast(list, prod.raw_edge),
            state_info=cast(dict, state_info),
            raw_state=raw_state,
        )

    def product_session(self, chunks: Sequence[str], raw: LexemeNFA, unit: int | None,
                        budget: Budget | None = None) -> ProductSession | NativeSession:
        """An empty product of `raw` with the layout rules, which `extend` grows from entry
        after entry: states (raw state, layout) reached from an earlier entry are shared, so
        a new entry adds only the states its layouts lead to before they meet old ones."""
        # The blanks of the first line of each chunk when it begins with whitespace and a
        # token (a line the hole may have begun), as a reach spec: a hole that ends at a
        # line start writes that line's blanks before them.
        lead = [blank_spec(m.group(1)) if (m := _LEAD.match(c)) else 0 for c in chunks]
        blank_first = [_BLANK_FIRST.match(c) is not None for c in chunks]
        if self.native:
            return NativeSession(self, chunks, raw, unit, budget, lead, blank_first)
        out_edges: dict[int, list[int]] = {}
        for block in blocks(raw.n_edges, budget):
            for e in block:
                out_edges.setdefault(raw.edges[4 * e], []).append(e)
        prod = _Product(budget)
        return ProductSession(
            chunks=list(chunks), raw=raw, unit=unit, prod=prod,
            closers_ahead=self._closers_ahead(raw, len(chunks) - 1, budget),
            out_edges=out_edges, hole_raw=set(raw.hole_states), final_raw=set(raw.finals),
            final=prod.new_state(), lead=lead, blank_first=blank_first)

    def refresh(self, session: ProductSession | NativeSession, raw: LexemeNFA) -> None:
        """Takes a later snapshot of the session's raw graph (holefill.lexing.holes.RawGraph:
        states and edges only get added, new edges leave new states), so that entries at its
        new places find their lexemes. What the product read of the old states stays true:
        their edges, and so the brackets the text after them can close, are the same."""
        old = session.raw
        if raw.n_states == old.n_states and raw.n_edges == old.n_edges:
            return
        if isinstance(session, NativeSession):
            session.read_raw(raw)
            return
        for e in range(old.n_edges, raw.n_edges):
            session.out_edges.setdefault(raw.edges[4 * e], []).append(e)
        session.raw = raw
        session.closers_ahead = self._closers_ahead(raw, len(session.chunks) - 1,
                                                      session.prod.budget)
        session.final_raw = set(raw.finals)

    def extend(self, session: ProductSession | NativeSession,
               entries: Sequence[tuple[int, object]] | None,
               budget: Budget | None = None) -> list[int]:
        """Grows the product from `entries` (raw state, layout key), or from the file's start
        (None); returns their product states (those that can reach the end). Every edge it
        adds leaves a state it added. `_steps` holds the indentation steps of this call's
        fixed text. An exception (the budget) leaves the session unusable."""
        if isinstance(session, NativeSession):
            if budget is not None:
                session.prod.budget = budget
            if entries is None:
                entries = [(session.raw.starts[0], self.file_start(session.chunks[0]))]
            return session.extend(entries, session.prod.budget)
        self._steps = set()
        # One product's answers of `_token` (layouts repeat along fixed text; unit is fixed).
        self._token_memo = {}
        chunks, raw, unit, prod = session.chunks, session.raw, session.unit, session.prod
        if budget is not None:
            prod.budget = budget
        ids, closers_ahead = session.ids, session.closers_ahead
        todo: list[tuple[int, object]] = []

        def state(rs: int, lay: object) -> int:
            """The product state (rs, lay); DEAD when the text after the last hole cannot
            close the brackets `lay` holds open (a wrong bracket guess would otherwise run
            on to the end of the file: most states of a check were such)."""
            key = (rs, lay)
            s = ids.get(key)
            if s is None:
                if (isinstance(lay, Layout) and lay.depth
                        and closers_ahead.get(rs, abs(lay.depth)) < abs(lay.depth)):
                    return DEAD
                s = ids[key] = prod.new_state()
                todo.append(key)
            return s

        out_edges, hole_raw, final_raw = session.out_edges, session.hole_raw, session.final_raw
        final = session.final

        def emit(src: int, toks: list, dst: int, first: tuple[int, int, int] | None) -> None:
            """Edges src -> ... -> dst labelled `toks`; `first` = (term, weight, raw edge) of
            the lexeme the layout tokens were emitted for, placed last."""
            if dst == DEAD:
                return
            if not toks and first is not None:  # most edges: one lexeme, no layout tokens
                term, weight, e = first
                prod.add(src, term, dst, weight, raw.kinds[e], raw.terms[e], raw.spans[e], e)
                return
            seq = list(toks)
            cur = src
            for j, t in enumerate(seq):
                last = j == len(seq) - 1 and first is None
                nxt = dst if last else prod.new_state()
                if isinstance(t, tuple):  # DEDENT loop: "*" zero or more, "+" one or more
                    mid = prod.new_state()
                    if t[1] == "+":
                        prod.add(cur, self.dedent, mid, 0, KIND_LEXEME, self.dedent, _NO_SPAN, -1)
                    else:
                        prod.add(cur, EPSILON, mid, 0, KIND_EPS_LINK, EPSILON, _NO_SPAN, -1)
                    prod.add(mid, self.dedent, mid, 0, KIND_LEXEME, self.dedent, _NO_SPAN, -1)
                    prod.add(mid, EPSILON, nxt, 0, KIND_EPS_LINK, EPSILON, _NO_SPAN, -1)
                else:
                    prod.add(cur, t, nxt, 0, KIND_LEXEME, t, _NO_SPAN, -1)
                cur = nxt
            if first is not None:
                term, weight, e = first
                prod.add(cur, term, dst, weight, raw.kinds[e], raw.terms[e], raw.spans[e], e)
            elif not seq:
                prod.add(src, EPSILON, dst, 0, KIND_EPS_LINK, EPSILON, _NO_SPAN, -1)

        if entries is None:
            starts = [state(raw.starts[0], self.file_start(chunks[0]))]
        else:
            starts = [s for s in (state(rs, key) for rs, key in entries) if s != DEAD]

        def open_hole(rt: int, stack: Stack, carried: int = 0) -> int:
            """An open hole entered at the start of a line, after `carried` columns of
            indentation in the text before it."""
            return state(rt, open_key(stack, carried))

        lead, blank_first = session.lead, session.blank_first
        while todo:
            rs, lay = todo.pop()
            src = ids[(rs, lay)]
            in_hole = rs in hole_raw
            if in_hole:
                place = (Place(hole=_hole_of(raw, rs)),) * 2
                if not isinstance(lay, Layout):  # H-open: ("open", OpenHole, bol, carried)
                    tag = cast(tuple, lay)
                    oh: OpenHole = tag[1]
                    bol = tag[2]  # at the start of a line: INDENT / DEDENT may come, no NEWLINE
                    carried = tag[3]  # columns of this line's indentation before the hole
                    after = open_hole_exit(oh)
                    # The hole's line is at least `carried` deep: its level must be, too.
                    own = spec_join(carried, 0)  # the hole's line: `carried`, then its blanks
                    deep_enough = after[-1] < 0 or reaches(own, after[-1])
                    if bol:
                        if deep_enough:
                            mid = state(rs, ("open", oh, False, 0))
                            prod.add_tokens(src, mid, self._same_line, place)
                        for mv, nxt_oh in open_hole_moves(oh):
                            t = self.indent if mv == "I" else self.dedent
                            prod.add(src, t, state(rs, ("open", nxt_oh, True, carried)),
                                     LAYOUT_TOKEN_WEIGHT, KIND_HOLE, t, place, -1)
                        if carried:
                            # A line of blanks so far may end here: a blank line, no token
                            # (CPython skips it), and the hole's next line starts at column
                            # 0. Rendered as a line break (the edge's term), read as ε.
                            prod.add(src, EPSILON, state(rs, ("open", oh, True, 0)),
                                     LAYOUT_TOKEN_WEIGHT, KIND_HOLE, self.newline, place, -1)
                    else:
                        prod.add_tokens(src, src, self._same_line, place)
                        prod.add(src, self.newline, state(rs, ("open", oh, True, 0)),
                                 LAYOUT_TOKEN_WEIGHT, KIND_HOLE, self.newline, place, -1)
                    if bol:
                        # No bracket is open at a line start, and a token the text begins on
                        # this line must sit at the level the hole left: at least `carried`
                        # deep (a lexeme begun in the hole), or `need` (text after blanks).
                        # Comments and blank lines are no tokens.
                        exits_blank = [Layout(0, after, LINE_TOKENS_NONE, PENDING_NONE)]
                        text_after = _hole_of(raw, rs) + 1
                        need = spec_join(carried, lead[text_after])
                        exits = [Layout(0, top_at_least(after, own), LINE_TOKENS_NONE,
                                        PENDING_NONE)] if deep_enough else []
                        if blank_first[text_after]:
                            exits_text = exits_blank
                        elif after[-1] < 0 or reaches(need, after[-1]):
                            exits_text = [Layout(0, top_at_least(after, need),
                                                 LINE_TOKENS_NONE, PENDING_NONE)]
                        else:
                            exits_text = []
                    else:
                        exits = exits_text = exits_blank = [
                            Layout(d, after, LINE_TOKENS_SOME, PENDING_NONE) for d in (0, -1)]
                    entry_stack = after
                else:
                    assert isinstance(lay, Layout)
                    prod.add_tokens(src, src, self._same_line, place)
                    prod.add(src, self.newline, open_hole(rs, lay.stack), LAYOUT_TOKEN_WEIGHT,
                             KIND_HOLE, self.newline, place, -1)
                    exits = exits_text = exits_blank = [lay, replace(lay, depth=-1)]
                    entry_stack = lay.stack
            elif rs in final_raw:
                assert isinstance(lay, Layout)
                for toks in self._eof(lay):
                    emit(src, toks, final, None)
            for e in out_edges.get(rs, ()):
                _, label, rt, weight = raw.edge(e)
                a, b = raw.spans[e]
                term = raw.terms[e]
                to_hole = rt in hole_raw
                if in_hole:  # leaving a hole (or a lexeme spanning a whole chunk)
                    if to_hole:  # a lexeme that runs on into a later hole
                        edge = (label, weight, e)
                        bol_here = not isinstance(lay, Layout) and cast(tuple, lay)[2]
                        if term == self.nl:
                            if not bol_here:  # a line break ends the hole's line ...
                                line_ends = (self._line_end(lay) if isinstance(lay, Layout)
                                             else [([self.newline], None)])
                                for toks, _ in line_ends:
                                    emit(src, toks, open_hole(rt, entry_stack), edge)
                                emit(src, [], state(rt, lay), edge)  # ... or its brackets' run
                            else:
                                emit(src, [], open_hole(rt, entry_stack), edge)
                        elif bol_here and term != self.comment:
                            # A token at the start of the hole's line: the same rule as for
                            # the hole's own tokens there.
                            if deep_enough:
                                emit(src, [], state(rt, ("open", oh, False, 0)), edge)
                        else:
                            emit(src, [], state(rt, lay), edge)
                        continue
                    if term == self.nl:
                        self._nl_from_hole(emit, state, src, rt, lay, exits_blank, chunks, b,
                                           (EPSILON, weight, e))
                        continue
                    if term == self.comment:
                        leaving = exits_blank
                    elif label == EPSILON and term != self.line_cont:
                        leaving = exits_text
                    else:
                        leaving = exits
                    for l0 in leaving:
                        cost = weight + (BRACKET_GUESS_WEIGHT if l0.depth < 0 else 0)
                        if label == EPSILON:
                            if (term == self.line_cont and not isinstance(lay, Layout)
                                    and cast(tuple, lay)[2]):
                                # The hole's last line holds only this backslash: its
                                # indentation runs on into the text after (CPython's rule).
                                tail = chunks[b.chunk][b.pos:]
                                ws = len(tail) - len(tail.lstrip(" \t\f"))
                                free = replace(l0, line=LINE_TOKENS_NONE, pending=PENDING_FREE,
                                               cont=True, least=SPACE if ws else 0)
                                emit(src, [], state(rt, free), (label, cost, e))
                                continue
                            emit(src, [], state(rt, replace(l0, cont=term == self.line_cont)),
                                 (label, cost, e))
                            continue
                        for toks, l2 in self._token(l0, term, unit):
                            emit(src, toks[:-1], state(rt, l2), (label, cost, e))
                    continue
                assert isinstance(lay, Layout)
                eps_link = raw.kinds[e] == KIND_EPS_LINK
                for toks, key, own in self.fixed_moves(lay, label, term, eps_link, a, b,
                                                       chunks, unit, to_hole):
                    emit(src, toks, state(rt, key), (label if own else EPSILON, weight, e))

        return starts


def _nl_break_width(tail: str) -> int | None:
    """Width of the next line when `tail` (the part of a line break lexeme in fixed text)
    holds the break itself; None when the break lies in the hole (width unknown)."""
    cut = max(tail.rfind("\n"), tail.rfind("\r"))
    return None if cut < 0 else indent_width(tail[cut + 1:])


# Leaving a hole inside brackets the hole opened costs this much more in the witness search.
# The guess is checked by the grammar only through the brackets it matches, not through the
# line breaks it silenced, so a cheap guess made witnesses whose hole opened no bracket at all
# (`import a` + NEWLINE, then an indented `def` read as bracketed text); pricing it like a few
# lexemes makes the lightest witness prefer the plain reading when one exists.
BRACKET_GUESS_WEIGHT = 8 * WITNESS_UNIT

# A NEWLINE, INDENT or DEDENT a hole holds (or a blank line) weighs as one lexeme.
LAYOUT_TOKEN_WEIGHT = WITNESS_UNIT


# An f-string with characters in a hole weighs this much more: the grammar reads replacement
# fields as opaque text (the 3.11 approximation), so a witness that makes the text after a
# hole part of an f-string field (`F"{` + `lt-in method builtins.max}"`) passes our re-check
# and fails CPython's. With the surcharge a plain string wins wherever one does.
FSTRING_WEIGHT = 2  # lexemes, as every surcharge

# The soft keyword `type` written by a hole weighs this much more: a type alias statement
# (`type X = ...`) is Python 3.12, and a witness should parse on the 3.11 the tools run on
# too; with the surcharge an ordinary statement wins wherever one does.
TYPE_ALIAS_WEIGHT = 4


def _guessing_brackets(edge: tuple) -> tuple:
    label, weight, e = edge
    return (label, weight + BRACKET_GUESS_WEIGHT, e)


def _hole_of(raw: LexemeNFA, rs: int) -> int:
    return raw.hole_states.index(rs)


class ZoneFate(NamedTuple):
    """What later text says of the levels a hole left open (see `_zone_fates`)."""

    kind: str  # "top" | "below" | "at" | "" (nothing pins them)
    width: int
    least: int


def _after_layout_token(lay: Layout, label: int, lx: PythonLayoutLexer) -> Layout:
    """The layout after an INDENT / DEDENT that the text's next token emitted (the states
    between such tokens carry no layout of their own)."""
    if label == lx.indent:
        return replace(lay, stack=lay.stack + (lay.pending if lay.pending >= 0 else FREE1,))
    if label == lx.dedent and len(lay.stack) > 1:
        return replace(lay, stack=lay.stack[:-1])
    return lay


def _last_line(text: str) -> str:
    """The text after the last line break (`\\n`, `\\r\\n` or a lone `\\r`)."""
    return text[max(text.rfind("\n"), text.rfind("\r")) + 1:]


def _leading_blanks(text: str) -> str:
    """The spaces, tabs and form feeds `text` begins with."""
    return text[: len(text) - len(text.lstrip(" \t\f"))]


def _spread(base: int, top: int, n: int) -> list[int]:
    """n increasing widths above base, the last one at top (top - base >= n in both counts);
    each count spread on its own."""
    cb, ab, ct, at = col_of(base), alt_of(base), col_of(top), alt_of(top)
    return [pack(cb + (i + 1) * (ct - cb) // n, ab + (i + 1) * (at - ab) // n)
            for i in range(n)]


def _deeper_from(have: int, below: int, suffix: str) -> int:
    """The first width, of a line start of width `have`, some spaces and `suffix`, that is
    deeper than `below` in both counts."""
    w = extend_width(have, suffix)
    while not deeper(w, below):
        have += SPACE
        w = extend_width(have, suffix)
    return w


def _room(base: int, top: int) -> int:
    """How many levels fit between base and top, counting both counts."""
    return min(col_of(top) - col_of(base), alt_of(top) - alt_of(base))


class PythonLexer:
    """The PartialLexer of Python: layout-aware NFA building and witness rendering."""

    def __init__(self, compiled: CompiledGrammar, readable: bool = True) -> None:
        """`readable`: witnesses that read like code (PythonLayoutLexer, _PythonRender);
        False gives the plain ones (the witness benchmark's comparison)."""
        self.readable = readable
        self.layout = PythonLayoutLexer(compiled, readable=readable)
        self.renderer = Renderer(compiled.lexer, compiled.grammar.terminals)
        self.terminals = compiled.grammar.terminals

    def anchors(self, chunks: Sequence[str]) -> Anchors:
        return self.layout.raw.anchors(chunks)

    @property
    def reference(self) -> ReferenceLexer:
        return self.layout.raw.reference

    def build(self, chunks: Sequence[str], anchors: Anchors | None = None,
              budget: Budget | None = None) -> LexemeNFA:
        return self.layout.build(chunks, anchors, budget)

    def beyond_limits(self, chunks: Sequence[str], budget: Budget | None = None) -> str | None:
        """CPython refuses what our grammar accepts past its limits: more than 200 nested
        brackets (tokenizer), more than 100 indentation levels, and expressions nested
        deeper than its recursion limit (a chain of about 3,000 binary operators fails
        `ast.parse` with RecursionError; 1,000 pass). Fillings only add text, so fixed text
        past a limit is refused whatever the holes hold: the check answers UNKNOWN with the
        reason rather than a YES that CPython would not share. Cheap scans first; the
        reference lexer only when one could be over. `budget`: polled (a large file's scan
        takes a while). A line start of ALT_SPAN blanks or more is past our own limit (a
        packed width holds fewer, see `pack`)."""
        if any(_TOO_WIDE.search(c) for c in chunks):
            return f"indentation of {ALT_SPAN} blanks or more (holefill's limit)"
        fast = [c for c in chunks if _MAYBE_DEEP.search(c) or len(c) > 2 * MAX_OPERATORS]
        if not fast:
            return None
        return python_limits(self.layout.raw.reference, fast, self.layout, budget)

    def render_witness(
        self,
        chunks: Sequence[str],
        nfa: LexemeNFA,
        leaves: Sequence[tuple[int, int]],
        attempt: int,
    ) -> list[str] | None:
        own = indent_unit(chunks) or (TAB_UNIT if _TAB_LINE.search("".join(chunks)) else None)
        units = [own or 4 * SPACE, 4 * SPACE, 2 * SPACE, 8 * SPACE]
        # Readable spacing first, with every indentation unit; then blanks between all
        # lexemes of a hole, as a fallback that never reads two lexemes as one.
        tights = [True, False] if self.readable else [False]
        if attempt >= len(units) * len(tights):
            return None
        path = full_path(nfa, leaves)
        tight = tights[attempt // len(units)]
        return _PythonRender(self, chunks, nfa, path, units[attempt % len(units)],
                             tight).fills()


class _PythonRender:
    """Writes one witness path as text: lexemes touching holes are completed character by
    character; NEWLINE / INDENT / DEDENT in a hole become line breaks and indentation."""

    def __init__(self, lexer: PythonLexer, chunks: Sequence[str], nfa: LexemeNFA,
                 path: Sequence[int], unit: int, tight: bool = False) -> None:
        """`unit`: the width a new level adds (k spaces: k * SPACE; TAB_UNIT: one tab on
        levels at tab stops)."""
        self.lx = lexer
        self.chunks = chunks
        self.nfa = nfa
        self.path = path
        self.unit = unit
        self.tight = tight  # no blank between lexemes a person writes together
        # per hole: the lexeme of fixed text it follows and the one it precedes, (term, text)
        self.fixed_before: list[tuple[int, str] | None] = [None] * (len(chunks) - 1)
        self.fixed_after: list[tuple[int, str] | None] = [None] * (len(chunks) - 1)

    def fills(self) -> list[str]:
        lay = self.lx.layout
        n_holes = len(self.chunks) - 1
        # per hole: ("text", s, left, right) | ("tok", term); and the layout before the hole
        pieces: list[list[tuple]] = [[] for _ in range(n_holes)]
        before: list[Layout | None] = [None] * n_holes
        # A hole entered by a lexeme begun in an earlier hole goes on from where that one
        # stopped: same indentation levels, mid-line.
        goes_on_from: list[int | None] = [None] * n_holes
        raw = self.nfa.raw
        assert raw is not None
        after = self._line_widths_after_holes(n_holes)
        known: Layout | None = None  # the layout at the latest state of the path that has one
        for e in self.path:
            kind = self.nfa.kinds[e]
            a, b = self.nfa.spans[e]
            if kind == KIND_HOLE:
                pieces[a.hole].append(("tok", self.nfa.terms[e]))
                continue
            info = self.nfa.state_info.get(self.nfa.edges[4 * e])
            if isinstance(info, Layout):
                known = info
            if known is not None and self.nfa.raw_edge[e] < 0:
                known = _after_layout_token(known, self.nfa.edges[4 * e + 1], lay)
            if b.in_hole and not (a.in_hole and a.hole == b.hole):
                before[b.hole] = known
                if a.in_hole:
                    goes_on_from[b.hole] = a.hole
            r = self.nfa.raw_edge[e]
            if r < 0 or kind != KIND_LEXEME:
                continue
            items = lexeme_items(self.chunks, a, b)
            holes = [v for k, v in items if k == "hole"]
            term = raw.terms[r]
            if not holes:
                self._note_fixed(a, b, term)
                continue
            got = self.lx.renderer.lexeme_fill(items, term)
            if got is None:
                raise ValueError(f"cannot render lexeme {self.lx.terminals[term].name}")
            parts = got[0]
            if self.lx.terminals[term].ignored and not any(parts):
                continue
            last = len(holes) - 1
            for idx, (h, text) in enumerate(zip(holes, parts, strict=True)):
                left = idx > 0 or not a.in_hole
                right = idx < last or not b.in_hole
                kind_of = ("nl" if term == lay.nl else "comment" if term == lay.comment
                           else "cont" if term == lay.line_cont else "")
                # the whole lexeme, when it ends in this hole (the spacing after it reads it)
                whole = None
                if not right and len(holes) == 1:
                    whole = text if a.in_hole else self.chunks[a.chunk][a.pos:] + text
                pieces[int(h)].append(("text", text, left, right, kind_of, (term, whole)))  # type: ignore[call-overload]
        fates = self._zone_fates(n_holes)
        for h in reversed(range(n_holes)):  # a hole run on into leaves its levels to the next
            g = goes_on_from[h]
            if g is not None and fates[g] is None and not any(
                    p[0] == "tok" and p[1] in (lay.indent, lay.dedent) for p in pieces[h]):
                fates[g] = fates[h]
        fills: list[str] = []
        levels_after: list[list[int]] = []
        for h in range(n_holes):
            src = goes_on_from[h]
            text, levels = self._hole(h, pieces[h], before[h], after[h],
                                      None if src is None else levels_after[src], fates[h])
            fills.append(text)
            levels_after.append(levels)
        return fills

    def _note_fixed(self, a: Place, b: Place, term: int) -> None:
        """Remember a lexeme of fixed text that ends a chunk a hole follows, or begins one a
        hole precedes (the spacing next to the hole reads them)."""
        if a.in_hole or b.in_hole or a.chunk != b.chunk:
            return
        text = self.chunks[a.chunk][a.pos:b.pos]
        if b.pos == len(self.chunks[b.chunk]) and b.chunk < len(self.fixed_before):
            self.fixed_before[b.chunk] = (term, text)
        if a.pos == 0 and a.chunk > 0:
            self.fixed_after[a.chunk - 1] = (term, text)

    def _together(self, left: tuple[int, str] | None, term: int, text: str) -> bool:
        """Whether the lexeme `text` (a `term`) goes right after `left` with no blank: a
        person writes them so (witness_style.tight) and the lexer reads them apart."""
        if not self.tight or left is None or not text:
            return False
        terms = self.lx.terminals
        if not tight(terms[left[0]].literal or terms[left[0]].name,
                     terms[term].literal or terms[term].name):
            return False
        return self.lx.renderer.reads_apart(left[1], text)

    def _line_widths_after_holes(self, n_holes: int) -> list[int | None]:
        """Per hole, the indentation of the first logical line that gets a token after it.

        A hole whose last line is only a backslash fixes the indentation of the line it
        continues into (CPython's rule): the rendering must write that width before it."""
        out: list[int | None] = [None] * n_holes
        layouts = [self.nfa.state_info.get(self.nfa.edges[4 * e + 2]) for e in self.path]
        for i, e in enumerate(self.path):
            a, b = self.nfa.spans[e]
            if not (a.in_hole and not b.in_hole):
                continue
            for j in range(i, len(layouts)):
                info = layouts[j]
                if isinstance(info, Layout) and info.line != LINE_TOKENS_NONE and info.stack:
                    pinned = self._zone_top(j, info.stack)
                    out[a.hole] = (self._width_of(info.stack, layouts[j:]) if pinned is None
                                   else pinned)
                    break
        return out

    def _pad_to(self, width: int, before: str, chunk: int) -> str:
        """Spaces that bring the line the text `before` ends in (its indentation so far) and
        the indentation chunk `chunk` begins with to `width` columns."""
        lead = _leading_blanks(self.chunks[chunk])
        have = indent_width(_last_line(before))
        pad = blanks_to(have, width, lead)
        if pad is None:  # the blanks before rule the width out (a tab): on a line of its own
            pad = blanks_to(0, width, lead)
            return "" if pad is None else "\n" + pad
        return pad

    def _pinned_indents(self, ps: list[tuple], levels: list[int],
                        fate: ZoneFate | None) -> dict[int, int]:
        """Widths for the hole's INDENTs (numbered in order) whose levels stay open at its
        end; the others take the default step."""
        lay = self.lx.layout
        own: list[int] = []
        base = list(levels)
        n_indents = 0
        for p in ps:
            if p[0] != "tok":
                continue
            if p[1] == lay.indent:
                own.append(n_indents)
                n_indents += 1
            elif p[1] == lay.dedent:
                if own:
                    own.pop()
                elif len(base) > 1:
                    base.pop()
        if not own or fate is None:
            return {}
        return dict(zip(own, self._pin_levels(len(own), base[-1], fate), strict=True))

    def _zone_fates(self, n_holes: int) -> list[ZoneFate | None]:
        """Per hole that leaves levels of its own open (a free zone on top of the stack), what
        the text after says of them: the first later line that compares its width w with the
        zone ("top": the hole's last level is w; "below": all of them are below w; "at": w
        is one of them and a deeper one is the last), with the least width of the last level."""
        out: list[ZoneFate | None] = [None] * n_holes
        nfa, lay = self.nfa, self.lx.layout
        for i, e in enumerate(self.path):
            a, b = nfa.spans[e]
            if not a.in_hole or b.in_hole:
                continue
            exit_lay = nfa.state_info.get(nfa.edges[4 * e + 2])
            if not isinstance(exit_lay, Layout) or exit_lay.stack[-1] >= 0:
                continue
            zone_st = exit_lay.stack
            moves: set[int] = set()
            for e2 in self.path[i + 1:]:
                a2, b2 = nfa.spans[e2]
                if a2.in_hole or b2.in_hole:
                    break
                label = nfa.edges[4 * e2 + 1]
                if nfa.raw_edge[e2] < 0 and label in (lay.indent, lay.dedent):
                    moves.add(label)
                info = nfa.state_info.get(nfa.edges[4 * e2 + 2])
                if not isinstance(info, Layout) or info.stack == zone_st:
                    continue
                st = info.stack
                if len(st) >= len(zone_st) and st[:len(zone_st) - 1] == zone_st[:-1]:
                    kind = ("at" if lay.dedent in moves else "below" if lay.indent in moves
                            else "top")
                    out[a.hole] = ZoneFate(kind, st[-1], spec_least(zone_least(zone_st[-1])))
                break
            if out[a.hole] is None:
                out[a.hole] = ZoneFate("", 0, spec_least(zone_least(zone_st[-1])))
        return out

    def _pin_levels(self, n: int, base: int, fate: ZoneFate | None) -> list[int]:
        """Widths for the n levels a hole leaves open above `base`, agreeing with `fate`."""
        unit = self.unit
        top = base + n * unit
        if fate is not None:
            top = widest(top, fate.least)
            if fate.kind == "top":
                top = fate.width
            elif fate.kind == "below":
                top = widest(fate.least, narrowest(top, fate.width - SPACE))
            elif fate.kind == "at" and n >= 2 and _room(base, fate.width) >= n - 1:
                inner = _spread(base, fate.width, n - 1)
                return inner + [widest(fate.width + unit, fate.least)]
        if _room(base, top) < n:
            return [base + unit * (i + 1) for i in range(n)]
        return _spread(base, top, n)

    def _zone_top(self, i: int, stack: tuple[int, ...]) -> int | None:
        """The width a later line of fixed text gives the zone on top of `stack` (the
        layout after path edge i): the next line that reads the zone with no INDENT or
        DEDENT sits at its top level (python_layout.line_at's first alternative)."""
        nfa, lay = self.nfa, self.lx.layout
        if stack[-1] >= 0:
            return None
        for e in self.path[i + 1:]:
            label = nfa.edges[4 * e + 1]
            if nfa.raw_edge[e] < 0 and label in (lay.indent, lay.dedent):
                return None
            a, b = nfa.spans[e]
            if a.in_hole or b.in_hole:
                return None
            info = nfa.state_info.get(nfa.edges[4 * e + 2])
            if not isinstance(info, Layout) or info.stack == stack:
                continue
            st = info.stack
            if st[:-2] == stack[:-1] and len(st) == len(stack) + 1 and st[-2] == FREE0:
                return st[-1]
            return None
        return None

    def _width_of(self, stack: tuple[int, ...], later: Sequence[object]) -> int:
        """The width of the line whose indentation stack is ``stack``; a free zone on top (an
        unknown level above the one below it) becomes a width inside that zone."""
        if stack[-1] >= 0:
            return stack[-1]
        below = max([w for w in stack if w >= 0], default=0)
        above = [lay.stack[len(stack)] for lay in later if isinstance(lay, Layout)
                 and lay.stack[:len(stack)] == stack and len(lay.stack) > len(stack)
                 and lay.stack[len(stack)] >= 0]
        limit = min(above, default=below + 2 * self.unit)
        return below + self.unit if deeper(limit, below + self.unit) else below + SPACE

    def _hole(self, h: int, ps: list[tuple], lay: Layout | None, width_after: int | None,
              goes_on: list[int] | None, fate: ZoneFate | None) -> tuple[str, list[int]]:
        """Hole h's text and the indentation levels open at its end. `goes_on`: the levels
        of the earlier hole whose lexeme runs on into this one; `fate`: what the text after
        says of the levels the hole leaves open."""
        lay_lx = self.lx.layout
        prev = self.chunks[h]
        last_line = _last_line(prev)
        ws = _leading_blanks(last_line)
        at_start = last_line.strip() == "" and len(last_line) < len(prev)
        col = indent_width(ws) if at_start else 0
        levels = [w for w in lay.stack if w >= 0] if lay is not None else [indent_width(ws)]
        out: list[str] = []
        glued = True  # no separator needed before the next piece
        if prev and not prev[-1].isspace():
            glued = False
        if goes_on is not None:
            levels, at_start, col, glued = list(goes_on), False, 0, True
        elif lay is not None and lay.comment:  # the chunk ends in a comment: break the line
            out.append("\n")
            at_start, col, glued = True, 0, True
        pinned = self._pinned_indents(ps, levels, fate)
        n_indents = 0
        # the whole lexeme the text so far ends in, (term, text), when known
        last: tuple[int, str] | None = None if goes_on is not None else self.fixed_before[h]

        fresh = False  # the hole opened the top level on this line: its width may move

        def put(text: str, left: bool, term: int, whole: str | None) -> None:
            nonlocal at_start, col, glued, last, fresh
            if at_start:
                want = levels[-1]
                if fresh and want != col and not reachable(col, want):
                    # the blanks before the hole already rule that width out (a tab)
                    levels[-1] = want = _deeper_from(col, levels[-2], "")
                fresh = False
                pad = blanks_to(col, want) if want != col else None
                if pad is not None:
                    out.append(pad)
                    col = want
                at_start = False
            elif not left and not glued and not self._together(last, term, text):
                out.append(" ")
            out.append(text)
            glued = False
            last = None if whole is None else (term, whole)

        for p in ps:
            if p[0] == "tok":
                t = p[1]
                if t == lay_lx.newline:
                    out.append("\n")
                    at_start, col, glued, fresh = True, 0, True, False
                elif t == lay_lx.indent:
                    levels.append(pinned.get(n_indents, levels[-1] + self.unit))
                    n_indents += 1
                    fresh = True
                elif t == lay_lx.dedent:
                    if len(levels) > 1:
                        levels.pop()
                else:
                    example = self.lx.terminals[t].example or ""
                    put(example, False, t, example)
            else:
                _, text, left, right, kind_of, (term, whole) = p
                if kind_of == "cont" and at_start and width_after is not None:
                    out.append((blanks_to(col, width_after) or "") + text)
                    at_start, glued = False, True
                    continue
                if kind_of == "comment" and not right:
                    put(text, left, term, None)
                    out.append("\n")
                    at_start, col, glued = True, 0, True
                    continue
                if kind_of == "nl":
                    out.append(text)
                    if right:
                        if width_after is not None and p is ps[-1]:
                            out.append(self._pad_to(width_after, prev + "".join(out), h + 1))
                            at_start, glued = False, True  # the line's width is settled
                        continue
                    at_start, col, glued = True, indent_width(_last_line(text)), True
                    continue
                put(text, left, term, whole)
                glued = right
        nxt = self.chunks[h + 1]
        after = self.fixed_after[h]
        if at_start and nxt and nxt[0] not in "\r\n":
            lead = _leading_blanks(nxt)
            pad = blanks_to(col, levels[-1], lead)
            if pad is None and fresh:
                levels[-1] = _deeper_from(col, levels[-2], lead)
                pad = blanks_to(col, levels[-1], lead)
            if pad is None and (pad := blanks_to(0, levels[-1], lead)) is not None:
                pad = "\n" + pad  # the blanks so far rule the width out: a blank line first
            out.append(pad or "")
        elif (not glued and nxt and not nxt[0].isspace()
              and not (after is not None and self._together(last, after[0], after[1]))):
            out.append(" ")
        return "".join(out), levels


# CPython's limits (Parser/tokenizer.h MAXLEVEL, MAXINDENT; the AST's recursion).
MAX_BRACKETS = 200
MAX_INDENT_LEVELS = 100
MAX_OPERATORS = 1000  # per logical line: chains of binary operators nest the AST this deep
TAB_UNIT = pack(8, 1)  # a witness's new level in a file indented with tabs: one more tab
_TAB_LINE = re.compile(r"(?:^|[\r\n])[ ]*\t", re.MULTILINE)
_TOO_WIDE = re.compile(rf"^[ \t\f]{{{ALT_SPAN}}}", re.MULTILINE)
_MAYBE_DEEP = re.compile(r"[(\[{]{40}|^[ \t]{100}", re.MULTILINE)
_WIDE_LINE = re.compile(rf"[\r\n\f][ \t]{{{MAX_INDENT_LEVELS // 8 + 1}}}")
_OPERATORS = frozenset(["+", "-", "*", "/", "%", "@", "**", "<<", ">>", "&", "|", "^", "//",
                        "."])


def python_limits(ref: ReferenceLexer, chunks: Sequence[str], layout: PythonLayoutLexer,
                  budget: Budget | None = None) -> str | None:
    """The first CPython limit the fixed text of `chunks` passes (each chunk read on its
    own), or None. A chunk's lexemes come from the native reading (`ReferenceLexer.
    part_reading`, the same maximal munch as `lex`) and are scanned as arrays: a
    100,000-line file took 3.5 s lexeme by lexeme in Python."""
    for chunk in chunks:
        poll(budget)
        reading = ref.part_reading(chunk)
        first = _first_limit(chunk, reading, layout, budget)
        if first is not None:
            return first[1]
    return None


def _first_limit(chunk: str, reading: Reading, layout: PythonLayoutLexer,
                 budget: Budget | None) -> tuple[int, str] | None:
    """(lexeme index, message) of the first limit passed in one chunk's reading, or None.
    The same walk as reading lexeme by lexeme: the bracket depth goes up at an opener and
    down at a closer but never below 0 (a walk reflected at 0 is the running sum minus the
    lowest running minimum so far, clipped at 0); a line break outside brackets ends a
    logical line (the operator count starts again) and sets the indentation."""
    labels = reading.labels
    is_open = np.isin(labels, list(layout.openers))
    steps = is_open.astype(np.int64) - np.isin(labels, list(layout.closers))
    run = np.cumsum(steps)
    depth = run - np.minimum(np.minimum.accumulate(run), 0)
    found: list[tuple[int, str]] = []
    deep = np.flatnonzero(is_open & (depth > MAX_BRACKETS))
    if len(deep):
        found.append((int(deep[0]), f"more than {MAX_BRACKETS} nested brackets "
                      "(CPython's limit)"))
    line_ends = np.flatnonzero((labels == layout.nl) & (depth == 0))
    is_op = np.isin(labels, list(_operator_labels(layout)))
    ops = np.cumsum(is_op)
    resets = np.zeros(len(labels), dtype=np.int64)
    resets[line_ends] = ops[line_ends]
    over = np.flatnonzero(is_op & (ops - np.maximum.accumulate(resets) > MAX_OPERATORS))
    if len(over):
        found.append((int(over[0]), f"an expression of more than {MAX_OPERATORS} operators on "
                      "one line: CPython's parser runs out of recursion"))
    levels = _too_many_levels(chunk, reading, line_ends, budget)
    if levels is not None:
        found.append((levels, f"more than {MAX_INDENT_LEVELS} indentation levels "
                      "(CPython's limit)"))
    return min(found) if found else None


def _too_many_levels(chunk: str, reading: Reading, line_ends: np.ndarray,
                     budget: Budget | None) -> int | None:
    """The index of the first line break (outside brackets) whose next line opens more
    than MAX_INDENT_LEVELS levels, or None. That many levels need a line wider than
    MAX_INDENT_LEVELS columns; a blank adds at most 8 (a tab) and a form feed starts again
    from 0, so such a line has MAX_INDENT_LEVELS // 8 + 1 blanks after a line break or a
    form feed."""
    if not _WIDE_LINE.search(chunk):
        return None
    starts, ends = reading.starts[line_ends].tolist(), reading.ends[line_ends].tolist()
    widths = [0]
    for i, (a, b) in enumerate(zip(starts, ends, strict=True)):
        if i % SCAN_BLOCK == 0:
            poll(budget)
        w = indent_width(chunk[a:b].lstrip("\r\n"))
        while w < widths[-1]:
            widths.pop()
        if w > widths[-1]:
            widths.append(w)
            if len(widths) - 1 > MAX_INDENT_LEVELS:
                return int(line_ends[i])
    return None


def _operator_labels(layout: PythonLayoutLexer) -> frozenset[int]:
    return frozenset(t for t, info in enumerate(layout.terminals)
                     if (info.literal or "") in _OPERATORS)
