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
- whether the line the hole ended on holds tokens is unknown, so the first line break may
  or may not end a logical line (NEWLINE or nothing).

Each (raw state, layout state) pair becomes one state of the output NFA; fixed text is
deterministic, so the product stays close to the raw NFA in size.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from holefill.grammar.tables import CompiledGrammar
from holefill.lexing.holes import (
    EPSILON,
    KIND_EPS_LINK,
    KIND_HOLE,
    KIND_LEXEME,
    HoleLexer,
    LexemeNFA,
    Place,
)

LINE_TOKENS_NONE, LINE_TOKENS_SOME, LINE_TOKENS_UNKNOWN = 0, 1, 2
PENDING_NONE = -1  # not at the start of a line (or the line's width is the hole's business)


@dataclass(frozen=True)
class Layout:
    """What the tokenizer knows at a lexeme boundary.

    depth:   >= 0 the bracket depth; -(k+1) means inside brackets opened before this chunk's
             context began (unknown how many), with k more opened since.
    stack:   known indentation widths, innermost last.
    base:    True when unknown levels lie below `stack` (context after a hole).
    line:    whether the current logical line holds tokens (LINE_TOKENS_*).
    pending: width of a line start whose first token has not come yet, or PENDING_NONE.
    """

    depth: int
    stack: tuple[int, ...]
    base: bool
    line: int
    pending: int


def indent_width(ws: str) -> int:
    """Width of leading whitespace with tabs to the next multiple of 8 (CPython's rule)."""
    col = 0
    for ch in ws:
        if ch == "\t":
            col = (col // 8 + 1) * 8
        elif ch == "\f":
            col = 0
        else:
            col += 1
    return col


_LINE_START = re.compile(r"(?:^|\n)([ \t\f]*)(?=[^ \t\f\r\n#\\])")


def indent_unit(chunks: Sequence[str]) -> int | None:
    """The file's indentation unit when every line of fixed text is indented by a multiple of
    one unit of spaces (strict mode), else None. Lines inside brackets are not layout, so we
    only trust the widths that occur; a mixed or odd file turns strict mode off."""
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
    return unit


@dataclass
class _Product:
    """The output NFA under construction."""

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

    def add(self, a: int, label: int, b: int, weight: int, kind: int, term: int,
            span: tuple[Place, Place], raw: int) -> None:
        key = (a, label, b, raw)
        if key in self.seen:
            return
        self.seen.add(key)
        self.edges.extend((a, label, b, weight))
        self.kinds.append(kind)
        self.terms.append(term)
        self.spans.append(span)
        self.raw_edge.append(raw)


_NO_SPAN = (Place(), Place())


class PythonLayoutLexer:
    """Builds the grammar-level NFA of Python text with holes."""

    def __init__(self, compiled: CompiledGrammar) -> None:
        g = compiled.grammar
        self.terminals = g.terminals
        self.raw = HoleLexer(compiled.lexer, g.terminals)
        self.nl = g.terminal_id("NL")
        self.newline = g.terminal_id("NEWLINE")
        self.indent = g.terminal_id("INDENT")
        self.dedent = g.terminal_id("DEDENT")
        self.openers = {g.terminal_id(f'"{c}"') for c in "([{"}
        self.closers = {g.terminal_id(f'"{c}"') for c in ")]}"}
        self.hole_terminals = [*self.raw.hole_terminals, self.newline, self.indent, self.dedent]

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
        if not st:  # after a hole: compare with the unknown width of the hole's last line
            new = (w,)
            base = w > 0
            if unit is not None and w % unit:
                return []
            alts: list[tuple[list, Layout]] = [
                ([], replace(lay, stack=new, base=base)),
                ([(self.dedent, "+")], replace(lay, stack=new, base=base)),
            ]
            if w > 0:
                alts.append(([self.indent], replace(lay, stack=new, base=base)))
            return alts
        top = st[-1]
        if w > top:
            if unit is not None and w != top + unit:
                return []
            return [([self.indent], replace(lay, stack=st + (w,)))]
        if w == top:
            return [([], lay)]
        out: list = []
        k = len(st)
        while k and st[k - 1] > w:
            out.append(self.dedent)
            k -= 1
        if k:
            if st[k - 1] != w:
                return []  # dedent to a width that was never opened
            return [(out, replace(lay, stack=st[:k]))]
        if not lay.base:
            return []
        if unit is not None:
            if w % unit:
                return []
            out += [self.dedent] * ((st[0] - w) // unit - 1)
            return [(out, replace(lay, stack=(w,), base=w > 0))]
        return [(out + [(self.dedent, "*")], replace(lay, stack=(w,), base=w > 0))]

    def _token(self, lay: Layout, term: int, unit: int | None) -> list[tuple[list, Layout]]:
        """A real token: indentation first if it starts a line, then brackets."""
        alts: list[tuple[list, Layout]] = [([], lay)]
        if lay.pending != PENDING_NONE and lay.depth == 0:
            alts = self._at_width(lay, lay.pending, unit)
        out = []
        for toks, l2 in alts:
            l2 = replace(l2, pending=PENDING_NONE, line=LINE_TOKENS_SOME)
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
            return [([], lay)]
        return [(toks, replace(l2, line=LINE_TOKENS_NONE, pending=width))
                for toks, l2 in self._line_end(lay)]

    def _eof(self, lay: Layout, unit: int | None) -> list[list]:
        if lay.depth != 0:
            return []
        out = []
        for toks, l2 in self._line_end(lay):
            toks = list(toks)
            st = l2.stack
            if not st:
                toks.append((self.dedent, "*"))
            else:
                toks += [self.dedent] * sum(1 for w in st if w > 0)
                if l2.base and st[0] > 0:
                    if unit is not None:
                        toks += [self.dedent] * (st[0] // unit - 1)
                    else:
                        toks.append((self.dedent, "*"))
            out.append(toks)
        return out

    # -- the product -------------------------------------------------------------------

    def build(self, chunks: Sequence[str]) -> LexemeNFA:
        raw = self.raw.build(chunks)
        unit = indent_unit(chunks)
        prod = _Product()
        ids: dict[tuple[int, Layout | None], int] = {}
        todo: list[tuple[int, Layout | None]] = []

        def state(rs: int, lay: Layout | None) -> int:
            key = (rs, lay)
            s = ids.get(key)
            if s is None:
                s = ids[key] = prod.new_state()
                todo.append(key)
            return s

        out_edges: dict[int, list[int]] = {}
        for e in range(raw.n_edges):
            out_edges.setdefault(raw.edges[4 * e], []).append(e)
        hole_raw = set(raw.hole_states)
        final_raw = set(raw.finals)
        final = prod.new_state()

        def emit(src: int, toks: list, dst: int, first: tuple[int, int, int] | None) -> None:
            """Edges src -> ... -> dst labelled `toks`; `first` = (term, weight, raw edge) of
            the lexeme the layout tokens were emitted for, placed last."""
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
                label = EPSILON if term == EPSILON else term
                prod.add(cur, label, dst, weight, raw.kinds[e], raw.terms[e], raw.spans[e], e)
            elif not seq:
                prod.add(src, EPSILON, dst, 0, KIND_EPS_LINK, EPSILON, _NO_SPAN, -1)

        start_text = chunks[0]
        lead = re.match(r"[ \t\f]*", start_text)
        file_start = Layout(0, (0,), False, LINE_TOKENS_NONE,
                            indent_width(lead.group(0)) if lead else 0)
        starts = [state(raw.starts[0], file_start)]
        after_hole = [Layout(0, (), True, LINE_TOKENS_UNKNOWN, PENDING_NONE),
                      Layout(-1, (), True, LINE_TOKENS_UNKNOWN, PENDING_NONE)]
        after_hole_nl = [replace(lay, line=LINE_TOKENS_NONE) for lay in after_hole]

        while todo:
            rs, lay = todo.pop()
            src = ids[(rs, lay)]
            if lay is None:  # a hole
                for t in self.hole_terminals:
                    prod.add(src, t, src, 1, KIND_HOLE, t, (Place(hole=_hole_of(raw, rs)),) * 2, -1)
            elif rs in final_raw:
                for toks in self._eof(lay, unit):
                    emit(src, toks, final, None)
            for e in out_edges.get(rs, ()):
                _, label, rt, weight = raw.edge(e)
                a, b = raw.spans[e]
                term = raw.terms[e]
                to_hole = rt in hole_raw
                if lay is None:  # leaving a hole: the context is unknown from here
                    if term == self.nl:
                        for l0 in after_hole_nl:
                            emit(src, [], state(rt, None if to_hole else l0), (EPSILON, 0, e))
                        continue
                    for l0 in after_hole:
                        if label == EPSILON or to_hole:
                            emit(src, [], state(rt, None if to_hole else l0), (label, weight, e))
                            continue
                        for toks, l2 in self._token(l0, term, unit):
                            emit(src, toks[:-1], state(rt, l2), (label, weight, e))
                    continue
                if raw.kinds[e] == KIND_EPS_LINK:
                    emit(src, [], state(rt, None), (EPSILON, 0, e))
                elif label == EPSILON:  # whitespace, comments, line continuations
                    emit(src, [], state(rt, None if to_hole else lay), (EPSILON, 0, e))
                elif term == self.nl:
                    if lay.depth != 0:  # inside brackets a line break is only whitespace
                        emit(src, [], state(rt, None if to_hole else lay), (EPSILON, 0, e))
                        continue
                    if to_hole or b.chunk != a.chunk:
                        # The next line's indentation lies (partly) in a hole: its layout is
                        # the hole's business, as after any hole.
                        nxt_lay = None if to_hole else Layout(0, (), True, LINE_TOKENS_NONE,
                                                              PENDING_NONE)
                        for toks, _ in self._line_end(lay):
                            emit(src, toks, state(rt, nxt_lay), (EPSILON, 0, e))
                        continue
                    text = chunks[a.chunk][a.pos:b.pos]
                    width = indent_width(text.lstrip("\r\n"))
                    for toks, l2 in self._newline(lay, width):
                        emit(src, toks, state(rt, l2), (EPSILON, 0, e))
                else:
                    for toks, l2 in self._token(lay, term, unit):
                        tgt = state(rt, None) if to_hole else state(rt, l2)
                        emit(src, toks[:-1], tgt, (label, weight, e))

        return LexemeNFA(
            n_states=prod.n_states,
            edges=prod.edges,
            starts=starts,
            finals=[final],
            kinds=prod.kinds,
            terms=prod.terms,
            spans=prod.spans,
            hole_states=[],
            raw=raw,
            raw_edge=prod.raw_edge,
        )


def _hole_of(raw: LexemeNFA, rs: int) -> int:
    return raw.hole_states.index(rs)
