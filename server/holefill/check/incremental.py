"""Checks in constant time per token: the engine for filling a hole from left to right.

While a hole is filled, the text left of it only grows by a few characters per token and
everything right of it is fixed. The classic check (holefill.check.checker) lexes the whole
window and searches CFG ∩ NFA from scratch for every token; this engine splits the question
where the text changes and keeps both sides:

- **left** (`LeftParse`): the known text from a clean start (the start of the top-level
  statement that holds the hole, so the parse state is exactly the file's) is lexed by maximal
  munch as it grows (holefill.lexing.left), turned into grammar terminals by the language's
  layout rules on known text (Python: NEWLINE, INDENT, DEDENT, the same `fixed_moves` the
  lexer with holes uses), and read by an incremental Earley parser in C (HfParser). Only the
  last lexeme stays open: the hole may still continue it.
- **right** (`RightContext`): the hole and the fixed text after it (later holes included, up
  to the window's tail) as the lexeme NFA of the lexer with holes, from the states where the
  left can enter it (the hole, with the layout it is entered with; or a place inside the text
  after it that a lexeme begun left of the hole reaches). Its generating triples are computed
  once in C (HfRight) and extended when a new entry appears.
- **junction**: per check, the few lexings of the open lexeme and the hole's entry, a small
  acyclic NFA from the parser's position into the right context.

The question "is the document still completable?" is then one call, hf_parser_query, whose
cost depends on the new terminals and the grammar, not on the file (see native/hf_parser.c
for why it is exact). A check the engine cannot answer cheaply (open holes left of the hole,
fixed text after an earlier hole whose reading is still open, a budget that ran out) returns
None, and the caller uses the classic check.

Soundness and exactness: the left is lexed and laid out by the same rules as the classic
lexer with holes applies to fixed text before the first hole, the junction by the same runs
from the open lexeme's start, and the right by the same graph and product; the native parts
are tested against the classic checker (tests/core/test_parser_properties.py) and the whole
against the classic check on real files (tests/check/test_incremental.py). The one
difference is the window's head: the classic window wraps the statements around the hole in
`class _:` lines, which gives an `else:` or `elif` after a dedent nothing to attach to; here
the left starts at the top-level statement's start, so every clause the file allows is
allowed. The window's tail (the fixed text after the hole, cut at a statement boundary and
closed by `pass` lines at the file's levels) is the classic one, with its soundness argument
(holefill.check.window).
"""

from __future__ import annotations

import logging
import re
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from holefill.budget import Budget, BudgetExhausted
from holefill.check.checker import Checker, Verdict
from holefill.check.core import CoreVerdict, NativeParser, NativeRight
from holefill.check.structure import (
    BLOCKED,
    NONE,
    PLAIN_STRUCTURE,
    Brackets,
    Structure,
    StructureProduct,
    exit_allowed,
    lift_regions,
    product_regions,
    raw_keys,
    raw_place_keys,
    regions_of,
    run_rule,
)
from holefill.check.window import _CONTINUATION, _CONTINUATION_WORDS
from holefill.lexing.anchors import Anchors, Site
from holefill.lexing.holes import (
    EPSILON,
    KIND_EPS_LINK,
    Coverage,
    HoleLexer,
    Place,
    RawGraph,
)
from holefill.lexing.left import LeftLexer, Lexeme
from holefill.lexing.native_holes import NativeRawGraph

if TYPE_CHECKING:
    from holefill.lexing.layout_native import NativeSession
    from holefill.lexing.python_layout import ProductSession

log = logging.getLogger(__name__)

# Entries of a right context share one product and closure (RightContext); False: one
# context per entry, the reference path.
SHARED_RIGHT = True

# Work limits of the native parts (see holefill.h): past them a check falls back.
RIGHT_MAX_ITEMS = 1_500_000
RIGHT_MAX_STEPS = 30_000_000
PARSER_MAX_STEPS = 5_000_000
# What one right context may hold (hf_right_bytes, growth included). Several holes close
# together make the closure explode (each hole reads as any text): in the LSP soak a
# 400-character file with 6 to 16 holes took 180-300 MB per context before its item limit
# stopped it, only to fall back; a useful context measured 92 MB at most (3 holes in a
# 2,000-line Python file; one hole: 11 MB). Past it the check falls back, as for the others.
RIGHT_MAX_BYTES = 128 << 20
# What an engine keeps of the right contexts it is not using now (older holes' and texts'):
# a fill of 12 holes kept up to 8 contexts of up to RIGHT_MAX_BYTES each.
KEPT_RIGHTS_BYTES = 64 << 20

# The last line's texts that may still become a clause continuing an enclosing compound
# statement (IncrementalCheck._leaves_body; the words: holefill.check.window).
_CONTINUE_PREFIXES = frozenset(w[:i] for w in _CONTINUATION_WORDS for i in range(len(w) + 1))
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

_VERDICT = {CoreVerdict.YES: Verdict.YES, CoreVerdict.NO: Verdict.NO,
            CoreVerdict.UNKNOWN: Verdict.UNKNOWN, CoreVerdict.CANCELLED: Verdict.UNKNOWN}


@dataclass(frozen=True)
class Limits:
    parser_steps: int = PARSER_MAX_STEPS
    right_steps: int = RIGHT_MAX_STEPS


class Fallback(Exception):
    """The engine cannot answer this check cheaply; the classic check must."""


class Terminals:
    """Lexemes of known text to grammar terminals: the language's layout rules (Python) or
    the lexeme itself (languages without layout)."""

    def __init__(self, checker: Checker, unit: int | None) -> None:
        from holefill.lexing.python_layout import PythonLayoutLexer, PythonLexer

        lexer = checker.lexer
        self.python = isinstance(lexer, PythonLexer)
        if isinstance(lexer, PythonLexer):
            self.layout: PythonLayoutLexer | None = PythonLayoutLexer(
                checker.compiled, readable=lexer.readable)
            self.layout.reset_memo()
            self.raw: HoleLexer = self.layout.raw
        else:
            self.layout = None
            self.raw = checker.lexer.holes  # type: ignore[attr-defined]
        self.unit = unit
        self.steps: set[int] = set()  # indentation steps between lines of known text

    def start(self, text: str) -> object:
        return self.layout.file_start(text) if self.layout is not None else None

    def moves(self, lay: object, label: int, term: int, eps_link: bool, a: Place, b: Place,
              chunks: Sequence[str], to_hole: bool) -> list[tuple[list[int], object]]:
        """The terminal sequences and layouts after a lexeme begun in known text."""
        if self.layout is None:
            return [([] if label < 0 or eps_link else [label], None)]
        out = []
        self.layout._steps = self.steps
        for toks, key, own in self.layout.fixed_moves(lay, label, term, eps_link, a, b, chunks,  # type: ignore[arg-type]
                                                      self.unit, to_hole):
            if any(isinstance(t, tuple) for t in toks):
                raise Fallback("a layout move with an unknown number of DEDENTs")
            out.append(([*toks, label] if own and label >= 0 else list(toks), key))
        return out

    def eof(self, lay: object) -> list[int] | None:
        if self.layout is None:
            return []
        got = self.layout.eof_moves(lay)  # type: ignore[arg-type]
        if not got:
            return None
        if len(got) > 1 or any(isinstance(t, tuple) for t in got[0]):
            raise Fallback("an ambiguous end of file on known text")
        return list(got[0])

    def label(self, term: int) -> int:
        return EPSILON if term in self.raw.ignored else term

    def steps_fit(self) -> bool:
        """Whether strict mode (one indentation unit) still holds for the known text."""
        return self.unit is None or all(s == self.unit for s in self.steps)


@dataclass
class LeftSite:
    """An anchor site in the left text (fixed text after a hole that was closed), in
    positions of the left text, and whether it was checked against the settled lexemes."""

    site: Site
    checked: bool = False


class LeftParse:
    """The parse of the known text left of the hole (see the module docstring)."""

    def __init__(self, terms: Terminals, grammar: object, limits: Limits) -> None:
        self.terms = terms
        self.limits = limits
        self.lexer = LeftLexer(terms.raw.dfa, terms.raw.classes)
        self.parser = NativeParser(grammar)  # type: ignore[arg-type]
        self.start_layout: object = None
        self.after: list[tuple[int, object]] = []  # per settled lexeme: (position, layout)
        self.dead_at: int | None = None  # the first lexeme the rules or the grammar refused
        self.sites: list[LeftSite] = []

    @property
    def text(self) -> str:
        return self.lexer.text

    def set_sites(self, sites: Sequence[Site]) -> None:
        """Anchor sites of fixed text inside the left text (chunk 0 positions)."""
        want = [s for s in sites]
        if [x.site for x in self.sites] != want:
            self.sites = [LeftSite(s) for s in want]

    def set_text(self, text: str) -> None:
        kept = self.lexer.set_text(text)
        if self.dead_at is None:
            # a check that fell back (the parser's budget, an ambiguous layout) settled
            # lexemes it did not push: push them now, or the parse would skip them
            kept = min(kept, len(self.after))
        if kept == 0 or self.start_layout is None:
            self.start_layout = self.terms.start(text)
        del self.after[kept:]
        if self.dead_at is not None and self.dead_at >= kept:
            self.dead_at = None
        for s in self.sites:
            if s.checked and s.site.base + s.site.length > self.lexer.open_start:
                s.checked = False
        pos, lay = self.after[-1] if self.after else (0, self.start_layout)
        self.parser.truncate(pos)
        if self.dead_at is not None:
            return
        lexemes = self.lexer.lexemes
        for k in range(kept, len(lexemes)):
            lx = lexemes[k]
            moves = self.terms.moves(lay, self.terms.label(lx.term), lx.term, False,
                                     Place(0, lx.start), Place(0, lx.end), [text], False)
            if not moves:
                self.dead_at = k
                return
            if len(moves) > 1:
                raise Fallback("an ambiguous layout on known text")
            toks, lay = moves[0]
            verdict = self.parser.push(toks, max_steps=self.limits.parser_steps)
            if verdict is CoreVerdict.NO:
                self.dead_at = k
                return
            if verdict is not CoreVerdict.YES:
                raise Fallback("the parser's budget ran out")
            self.after.append((self.parser.position, lay))

    @property
    def alive(self) -> bool:
        return self.dead_at is None and self.lexer.error is None

    @property
    def open_layout(self) -> object:
        return self.after[-1][1] if self.after else self.start_layout

    def sites_hold(self) -> bool:
        """Checks the anchor sites whose reading the settled lexemes decide; raises Fallback
        while one is still open (its anchors lie in the open lexeme)."""
        open_start = self.lexer.open_start
        for s in self.sites:
            if s.checked:
                continue
            site = s.site
            decisive = max([site.base, *(site.base + x for x in site.points)])
            if decisive >= open_start:
                raise Fallback("fixed text after a closed hole is still being read")
            if not _site_holds(site, self.lexer.lexemes, self.terms.raw.reference.comment_like):
                return False
            s.checked = True
        return True

    def finish(self) -> bool | None:
        """Whether the left text, ended here, is a whole program (the parser is restored);
        None when the rules on known text cannot tell."""
        if not self.alive:
            return False
        tail = self.lexer.finish()
        if tail is None:
            return False
        lexemes = [*self.lexer.lexemes, *tail]
        if not _sites_hold_all([s.site for s in self.sites], lexemes,
                               self.terms.raw.reference.comment_like):
            return False
        mark = self.parser.position
        lay = self.open_layout
        text = self.text
        try:
            for lx in tail:
                moves = self.terms.moves(lay, self.terms.label(lx.term), lx.term, False,
                                         Place(0, lx.start), Place(0, lx.end), [text], False)
                if len(moves) != 1:
                    return False if not moves else None
                toks, lay = moves[0]
                steps = self.limits.parser_steps
                if self.parser.push(toks, max_steps=steps) is not CoreVerdict.YES:
                    return False
            end = self.terms.eof(lay)
            if end is None or self.parser.push(end, max_steps=self.limits.parser_steps) \
                    is not CoreVerdict.YES:
                return False
            return self.parser.accepts()
        finally:
            self.parser.truncate(mark)


def _site_holds(site: Site, lexemes: Sequence[Lexeme], comment_like: frozenset[int]) -> bool:
    """The anchors of one site against settled lexemes (holefill.lexing.anchors.respected)."""
    return _sites_hold_all([site], lexemes, comment_like)


def _sites_hold_all(sites: Sequence[Site], lexemes: Sequence[Lexeme],
                    comment_like: frozenset[int]) -> bool:
    """The rule of holefill.lexing.anchors as the lexer with holes enforces it
    (holes.Coverage.flag_of) and `anchors.respected` checks it: a lexeme begun before a
    `passes` site that reaches at least its end stands for the user's lexeme that passed
    through it, and owes the site nothing more (no boundary at its points, no `rho` limit).
    Such a lexeme may end exactly at the site's end: the site is the text between two holes
    that were closed, and the second one's filling may end the user's lexeme there
    (`#include<|h|>h<|h|>ude<stdlib.h><|h|>`, the last hole filled from a line break)."""
    if not sites:
        return True
    bounds = {lx.start for lx in lexemes} | {lx.end for lx in lexemes}
    for site in sites:
        lo, hi = site.base, site.base + site.length
        if site.passes and any(lx.start < lo and lx.end >= hi for lx in lexemes):
            continue
        through = any(lx.start < lo and lx.end > hi for lx in lexemes)
        if through and not site.passes:
            return False
        if not through and site.points and not any(lo + x in bounds for x in site.points):
            return False
        if site.rho is not None and any(lx.term in comment_like and lx.start < lo
                                        and lx.end > lo + site.rho for lx in lexemes):
            return False
    return True


class RightContext:
    """What the hole and the fixed text after it accept (see the module docstring).

    `after`: the chunks after the hole (the last one windowed), `sites`: their anchor sites
    numbered by chunk of `after`. Entries (the raw place where the left enters and the
    layout it enters with) share one native context: the product of the lexer with holes
    (Python) or the raw graph (other languages), its closure filtered for questions that
    enter at the entries so far. A new entry grows both: the product by the states its
    layouts reach before they meet states of earlier entries, the closure by the triples of
    the new states and those the filter now lets through (hf_right_add), so its cost is that
    of what is new, not of the whole text after the hole. `shared=False` builds one context
    per entry instead (each its own product and closure over the whole text: the reference
    the shared one is tested against).
    """

    def __init__(self, terms: Terminals, grammar: object, after: Sequence[str],
                 sites: Sequence[Site], limits: Limits, budget: Budget | None = None,
                 shared: bool = True, structure: Structure = PLAIN_STRUCTURE,
                 brackets: Brackets | None = None) -> None:
        """`structure`: the rules of the holes of ``["", *after]`` (hole 0 the one being
        filled); its product (holefill.check.structure) is grown with the context, and an
        entry carries the counter the left text leaves hole 0's automaton in."""
        self.terms = terms
        self.structure = structure
        self.brackets = brackets
        self.sp: StructureProduct | None = None
        self.limits = limits
        self.grammar = grammar
        self.after = list(after)
        self.chunks = ["", *self.after]
        self.anchors = Anchors(tuple(s.moved(s.chunk + 1, s.base) for s in sites))
        self.graph: RawGraph | NativeRawGraph = terms.raw.graph(self.chunks, self.anchors, budget)
        self.entries: dict[tuple[int, object, int], tuple[NativeRight, int] | None] = {}
        # what runs from the open lexeme do once they cross the hole, by the states they
        # cross with (holefill.lexing.holes.HoleLexer._run)
        self.crossings: dict = {}
        self.shared = shared
        self._native: NativeRight | None = None  # the shared context, once an entry is built
        self._session: ProductSession | NativeSession | None = None
        self._sent = (0, 0)  # states and edges of the NFA the shared context holds
        self._raw_size = (0, 0)  # the raw graph's states and edges the product has read
        self._failed: set[tuple] = set()  # entries whose closure ran out
        # shared contexts given up (a growth that failed halfway): the parser must forget them
        self.retired: list[NativeRight] = []
        self._reset_structure()

    def _reset_structure(self) -> None:
        if not self.structure.trivial:
            assert self.brackets is not None
            self.sp = StructureProduct(self.structure, self.brackets)
        # product edges and finals not yet sent (an entry that led nowhere brought them)
        self._pending: tuple[list, list[int]] = ([], [])

    def entry(self, place: Place, key: object, q: int = 0) -> tuple[NativeRight, int] | None:
        """The native context and state where the left enters at raw `place` with layout
        `key` and hole 0's structure counter `q` (None: that entry leads nowhere); Fallback
        when a closure's budget ran out."""
        raw_state = self.graph.state_of(place)
        k = (raw_state, key, q if self.sp is not None else 0)
        if k not in self.entries:
            if k in self._failed:
                raise Fallback("the right context's closure ran out of its budget")
            try:
                self.entries[k] = (self._grow(raw_state, key, q) if self.shared
                                   else self._build(raw_state, key, q))
            except Fallback:
                self._failed.add(k)
                raise
        return self.entries[k]

    def natives(self) -> list[NativeRight]:
        """Every native context the entries use."""
        got = {id(e[0]): e[0] for e in self.entries.values() if e is not None}
        return list(got.values())

    def native_bytes(self) -> int:
        """What its native contexts hold, the retired ones (still held) included."""
        return sum(n.bytes for n in {id(n): n for n in [*self.natives(), *self.retired]}
                   .values())

    def _grow(self, raw_state: int, key: object, q: int) -> tuple[NativeRight, int] | None:
        """The shared context grown by one entry (see the class docstring)."""
        try:
            got = self._grown(raw_state, key)
            if got is not None and self.sp is not None:
                got = self._structured(*got, q)
        except BaseException:
            self._retire()  # the product stopped halfway
            raise
        if got is None:
            return None
        n_states, edges, finals, start = got
        if start < 0:  # the counter may not leave hole 0 there: keep what it brought
            self._pending[0].append(edges)
            self._pending[1].extend(finals)
            return None
        self._add(n_states, edges, finals, [start])
        return self._native, start  # type: ignore[return-value]

    def _structured(self, n_states: int, edges: object, finals: list[int], start: int,
                    q: int) -> tuple[int, object, list[int], int]:
        """The growth `_grown` returned, through the structure product: its new states
        numbered, its edges and finals mapped, the entry state of counter q (-1: none)."""
        sp = self.sp
        assert sp is not None
        new = n_states - sp.n_in_states
        if new > 0:
            region, flags = self._regions(n_states)
            sp.add_states(region[-new:], flags[-new:])
        terms = kinds = None
        if self.terms.layout is not None and self._session is not None:
            prod = self._session.prod
            m = len(edges) // 4  # type: ignore[arg-type]
            got = len(prod.terms)
            terms = np.asarray(prod.terms[got - m:] if m else [], dtype=np.int64)
            kinds = np.asarray(prod.kinds[got - m:] if m else [], dtype=np.int64)
        mapped = sp.add_edges(edges, terms, kinds)  # type: ignore[arg-type]
        return sp.n, mapped, sp.finals(finals), self._entry_state(start, q)

    def _entry_state(self, s: int, q: int) -> int:
        """The product state of context state s entered with hole 0's counter q: inside
        hole 0 that counter; past it (a lexeme through the hole) only if q may leave."""
        sp = self.sp
        assert sp is not None
        if sp.edge_of_chunk[s] == BLOCKED:
            return -1
        region = int(sp.region[s])
        if region == 0:
            return sp.state(s, q)
        if not exit_allowed(self.structure.rules[0], q):
            return -1
        return sp.state(s, 0)

    def _regions(self, n_states: int) -> tuple[np.ndarray, np.ndarray]:
        """Regions and chunk-edge flags of the context's first n_states states."""
        lengths = [len(c) for c in self.chunks]
        n_raw = self._graph_size()[0]
        graph = self.graph
        keys = (raw_place_keys(graph, n_raw) if isinstance(graph, NativeRawGraph)
                else raw_keys(graph.nfa()))
        raw = regions_of(keys, self.structure, lengths,
                         None if self.brackets is None else self.brackets.killable_one_line)
        if self.terms.layout is None:
            return raw
        session = self._session
        assert session is not None
        prod = session.prod
        if hasattr(session, "ptr"):
            from holefill._native import ffi, lib

            raw_state = np.frombuffer(ffi.buffer(lib.hf_layout_state_raw(session.ptr),  # type: ignore[attr-defined]
                                                 4 * n_states), dtype=np.int32).astype(np.int64)
        else:
            raw_state = np.full(n_states, -1, dtype=np.int64)
            for (r, _), p in session.ids.items():  # type: ignore[union-attr]
                raw_state[p] = r
        return lift_regions(raw, raw_state, prod.edges, prod.raw_edge)

    def _grown(self, raw_state: int, key: object) -> tuple[int, object, list[int], int] | None:
        """What the shared context takes for a new entry: its states, the new edges, the new
        finals and the entry's state (None: the entry leads nowhere). The raw graph may have
        grown since the last entry (`entry` expands a new place): its new states and edges
        join the product's reading, or, without layout, the context itself."""
        layout = self.terms.layout
        had_states, had_edges = self._sent
        if layout is None:
            n_states, edges, finals = self.graph.grown_since(had_states, had_edges)
            self._sent = (n_states, had_edges + len(edges) // 4)
            return n_states, edges, finals, raw_state
        if self._session is None:
            self._session = layout.product_session(self.chunks, self.graph.nfa(),
                                                   self.terms.unit)
        elif self._raw_size != self._graph_size():
            layout.refresh(self._session, self.graph.nfa())
        self._raw_size = self._graph_size()
        starts = layout.extend(self._session, [(raw_state, key)], self.graph.budget)
        self.terms.steps |= layout._steps
        if not starts:
            return None
        prod = self._session.prod
        self._sent = (prod.n_states, len(prod.edges) // 4)
        finals = [self._session.final] if had_states == 0 else []
        return prod.n_states, prod.edges[4 * had_edges:], finals, starts[0]

    def _graph_size(self) -> tuple[int, int]:
        return self.graph.size()

    def _add(self, n_states: int, edges: object, finals: list[int], entries: list[int]) -> None:
        """Grows the shared closure; a closure that runs out retires the context (its
        triples are incomplete for every entry) and marks the entry as failed."""
        if self._pending[0] or self._pending[1]:
            from array import array

            held = array("i")
            for part in [*self._pending[0], edges]:
                held.extend(part)  # type: ignore[arg-type]
            edges, finals = held, [*self._pending[1], *finals]
            self._pending = ([], [])
        if self._native is None:
            self._native = NativeRight(self.grammar)  # type: ignore[arg-type]
        try:
            verdict = self._native.add(n_states, edges, finals, entries,
                                       max_steps=self.limits.right_steps,
                                       max_items=RIGHT_MAX_ITEMS, max_bytes=RIGHT_MAX_BYTES)
        except BaseException:
            self._retire()
            raise
        if verdict is not CoreVerdict.YES:
            self._retire()
            raise Fallback("the right context's closure ran out of its budget")

    def _retire(self) -> None:
        """Gives up the shared context after a growth that failed halfway (its product or
        its closure is incomplete): the entries built so far are built again when asked."""
        if self._native is not None:
            self.retired.append(self._native)
        self._native, self._session, self._sent, self._raw_size = None, None, (0, 0), (0, 0)
        self.entries.clear()
        self._reset_structure()

    def _build(self, raw_state: int, key: object, q: int) -> tuple[NativeRight, int] | None:
        """The native context of one entry: the product from it (Python) or the raw graph
        (other languages), its closure filtered for questions that enter there."""
        layout = self.terms.layout
        if layout is None:
            nfa = self.graph.nfa()
            start = raw_state
        else:
            nfa = layout._product(self.chunks, self.graph.nfa(), self.terms.unit,
                                  entries=[(raw_state, key)], budget=self.graph.budget)
            self.terms.steps |= layout._steps
            if not nfa.starts:
                return None
            start = nfa.starts[0]
        n_states, edges, finals = nfa.n_states, nfa.edges, nfa.finals
        if not self.structure.trivial:
            assert self.brackets is not None
            sp = self.sp = StructureProduct(self.structure, self.brackets)
            sp.add_states(*product_regions(nfa, self.structure, [len(c) for c in self.chunks],
                                           self.brackets.killable_one_line))
            edges = sp.add_edges(nfa.edges, nfa.terms, nfa.kinds)
            n_states, finals = sp.n, sp.finals(nfa.finals)
            start = self._entry_state(start, q)
            if start < 0:
                return None
        right = NativeRight(self.grammar)  # type: ignore[arg-type]
        verdict = right.add(n_states, edges, finals, [start],
                            max_steps=self.limits.right_steps, max_items=RIGHT_MAX_ITEMS,
                            max_bytes=RIGHT_MAX_BYTES)
        if verdict is not CoreVerdict.YES:
            raise Fallback("the right context's closure ran out of its budget")
        return right, start


@dataclass
class Junction:
    """The small acyclic NFA from the parser's position into the right context: its exits
    grouped by native context, as triples (from, label, state)."""

    n_states: int = 1
    edges: list[int] = field(default_factory=list)  # quadruples, from < to
    exits: dict[int, tuple[NativeRight, list[int]]] = field(default_factory=dict)


class _Collector:
    """Stands in for the raw builder: records the lexemes of runs from the open lexeme."""

    def __init__(self) -> None:
        self.added: list[tuple] = []

    def add(self, a: Place, label: int, b: Place, weight: int, kind: int, term: int) -> None:
        self.added.append((a, label, b, kind, term))


def build_junction(left: LeftParse, right: RightContext,
                   budget: Budget | None = None, q0: int = 0,
                   region: int | None = None) -> Junction:
    """The lexings of the open lexeme (the text after the last settled lexeme) into the hole
    and the text after it, laid out from the layout it begins with. With a structure (the
    right context's), `q0` is hole 0's counter after the settled lexemes and `region` where
    its filling begins in the left text: the open lexeme's brackets from there on count."""
    raw = right.terms.raw
    text = left.text[left.lexer.open_start:]
    chunks = [text, *right.after]
    cls = [raw.classes(text), *right.graph.cls[1:]]
    cov = Coverage([len(text), *(len(c) for c in right.after)], right.anchors,
                   raw.reference.comment_like)
    by_origin: dict[Place, list[tuple]] = {}
    todo, seen = [Place(0, 0)], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        out = by_origin[p] = []
        if p.pos < len(text):
            col = _Collector()
            raw._run(col, cls, chunks, cov, p, 0, p.pos, None, budget, right.crossings)
            out.extend(col.added)
            todo += [b for _, _, b, _, _ in col.added if b.hole < 0 and b.chunk == 0]
        else:
            out.append((p, EPSILON, Place(hole=0), KIND_EPS_LINK, EPSILON))
    junction = Junction()
    order: list[tuple[Place, object, int]] = []  # J states by discovery, renumbered below
    ids: dict[tuple[Place, object, int], int] = {}
    j_edges: list[tuple[int, int, int]] = []  # (from, label, to) in discovery ids
    exits: list[tuple[int, int, NativeRight, int]] = []
    next_id = [0]

    def new_state() -> int:
        next_id[0] += 1
        return next_id[0] - 1

    rule = None if right.sp is None else right.structure.rules[0]
    bcls = right.brackets.cls if right.brackets is not None else None
    from_pos = (region if region is not None else len(left.text)) - left.lexer.open_start

    def counted(q: int, a: Place, label: int) -> int:
        """The counter after lexeme `label` from `a` (its character is the filling's when
        it lies in the region)."""
        if (rule is None or label < 0 or bcls is None or bcls[label] == NONE
                or a.pos < from_pos):
            return q
        return run_rule(rule, [int(bcls[label])], q)

    def owes_break(b: Place) -> bool:
        """A lexeme ended where only a line break in the one-line hole stops the run that
        goes on (holefill.check.structure.regions_of)."""
        return (rule is not None and rule.one_line and b.kill >= 0
                and right.brackets is not None
                and not right.brackets.killable_one_line[b.kill])

    def ends_on_break(b: Place, label: int, term: int) -> bool:
        """A lexeme that only a line break ends (a directive, a line comment) ending inside
        the one-line hole (holefill.check.structure.Brackets.line_bound)."""
        if rule is None or not rule.one_line or b.hole < 0 or right.brackets is None:
            return False
        bound = right.brackets.line_bound
        return bool(bound[label] or bound[term])

    def j_state(place: Place, lay: object, q: int = 0) -> tuple[int, bool]:
        key = (place, lay, q)
        got = ids.get(key)
        if got is None:
            got = ids[key] = new_state()
            order.append(key)
            return got, True
        return got, False

    start, _ = j_state(Place(0, 0), left.open_layout, q0)
    queue = [(Place(0, 0), left.open_layout, q0, start)]
    while queue:
        p, lay, q, src = queue.pop()
        for a, label, b, kind, term in by_origin.get(p, ()):
            to_hole = b.hole >= 0
            q2 = counted(q, a, label)
            if q2 < 0 or owes_break(b) or ends_on_break(b, label, term):
                continue
            for toks, key in right.terms.moves(lay, label, term, kind == KIND_EPS_LINK, a, b,
                                               chunks, to_hole):
                if not to_hole and b.chunk == 0:
                    dst, fresh = j_state(b, key, q2)
                    if fresh:
                        queue.append((b, key, q2, dst))
                    _chain(src, toks, dst, j_edges, new_state)
                    continue
                target = right.entry(b, key, q2)
                if target is None:
                    continue
                cur = _chain(src, toks[:-1], None, j_edges, new_state)
                exits.append((cur, toks[-1] if toks else EPSILON, *target))
    n = next_id[0]
    # number the states so that edges go forward (the junction is acyclic: every edge
    # moves to a later text position or along a fresh chain of layout tokens)
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for a, _, b in j_edges:
        succ[a].append(b)
        indeg[b] += 1
    rank, ready = [0] * n, [v for v in range(n) if indeg[v] == 0]
    count = 0
    while ready:
        v = ready.pop()
        rank[v] = count
        count += 1
        for w in succ[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    if count != n or rank[start] != 0:
        raise Fallback("the junction is not acyclic")
    junction.n_states = n
    for a, lab, b in j_edges:
        junction.edges += [rank[a], lab, rank[b], 0]
    for a, lab, native, r in exits:
        junction.exits.setdefault(id(native), (native, []))[1].extend((rank[a], lab, r))
    return junction


def _chain(src: int, toks: Sequence[int], dst: int | None, edges: list[tuple[int, int, int]],
           new_state) -> int:
    """Edges src -toks...-> dst through fresh states; returns the last state (dst, or the
    state after the tokens when dst is None)."""
    cur = src
    for i, t in enumerate(toks):
        last = i == len(toks) - 1
        nxt = dst if (last and dst is not None) else new_state()
        edges.append((cur, t, nxt))
        cur = nxt
    if dst is not None and not toks:
        edges.append((src, EPSILON, dst))
        return dst
    return cur


class IncrementalCheck:
    """Completability checks of one fill request as its holes are filled left to right.

    `left_start`: where the left text begins in the first chunk (a clean start of the
    language: the top-level statement's start), `prefix` what stands before it; `tail` /
    `suffix`: the window's cut of the last chunk and its stand-in (holefill.check.window).
    Checks take the request's current chunks and anchor sites (as the decoder keeps them,
    decode.loop.HoleState) and return a Verdict, or None when the classic check must answer.

    Python, indented windows (a hole in a method of a 4,000-line class): the left starts
    where the window does, after the window's `class _:` lines (`prefix`), so that neither
    preparation nor typing reads the class. That view is exact but for one case, the one
    the window over-rejects (holefill.check.window): a filling that leaves the window's
    body (`body`, its indentation) by a line that continues an enclosing statement (`else`,
    `elif`, `except`, `finally`), which `class _:` cannot take. A NO with such a line in
    the filling, written or possibly being written (a shallower last line that is blank or
    begins such a word), is asked again of `wide()`: the engine whose left starts at the
    top-level statement, built at that first need (DESIGN.md §3: exact at heads).
    """

    def __init__(self, checker: Checker, left_start: int, tail: int, suffix: str,
                 unit: int | None, max_steps: int = PARSER_MAX_STEPS,
                 shared: bool | None = None, prefix: str = "", body: str = "",
                 wide: Callable[[], IncrementalCheck] | None = None) -> None:
        """`max_steps`: the work budget per check of the native parts (each stops at its
        own default if that is lower); past it a check falls back. `shared`: one right
        context grown by entry or one per entry (RightContext); None: SHARED_RIGHT.
        `prefix`, `body`, `wide`: an indented window's view (see the class docstring)."""
        self.shared = SHARED_RIGHT if shared is None else shared
        self.checker = checker
        self.limits = Limits(min(max_steps, PARSER_MAX_STEPS), min(max_steps, RIGHT_MAX_STEPS))
        self.left_start, self.tail, self.suffix = left_start, tail, suffix
        self.prefix, self.body = prefix, body
        self._make_wide = wide
        self._wide: IncrementalCheck | None = None
        self.widened = 0  # NO answers asked again of the wide engine
        self.terms = Terminals(checker, unit)
        self.grammar = checker._native.grammar
        self.left = LeftParse(self.terms, self.grammar, self.limits)
        self.rights: dict[tuple, RightContext] = {}
        self.disabled: str | None = None
        self.budget: Budget | None = None  # the running check's
        # the version of each context a question was answered in (see _query)
        self._answered: weakref.WeakKeyDictionary[NativeRight, int] = \
            weakref.WeakKeyDictionary()

    def verdict(self, chunks: Sequence[str], sites: Sequence[Site],
                budget: Budget | None = None,
                structure: Structure = PLAIN_STRUCTURE) -> Verdict | None:
        """YES / NO; UNKNOWN when `budget` (spent by every stage, with its deadline and
        cancel callback) ran out; None when the classic check must answer. `structure`: the
        rules of the open holes of `chunks` (holefill.check.structure), hole 0's region
        starting where its filling began."""
        if self.disabled is not None:
            return None
        self.budget = budget
        try:
            got = self._verdict(list(chunks), sites, structure)
            if got is Verdict.NO and self._leaves_body(chunks):
                self.widened += 1
                return self.wide().verdict(chunks, sites, budget, structure)
            return got
        except Fallback as exc:
            log.debug("incremental check falls back: %s", exc)
            return None
        except BudgetExhausted as exc:
            log.debug("incremental check stopped: %s", exc)
            for right in self.rights.values():
                right.crossings.clear()  # a run stopped halfway may have left a partial one
            return Verdict.UNKNOWN
        finally:
            self.budget = None
            for right in self.rights.values():
                self._forget_retired(right)

    def wide(self) -> IncrementalCheck:
        """The engine whose left starts at the top-level statement (self without a prefix)."""
        if self._make_wide is None:
            return self
        if self._wide is None:
            self._wide = self._make_wide()
        return self._wide

    def _leaves_body(self, chunks: Sequence[str]) -> bool:
        """Whether a line of the left text after its first (as far as the window reads it),
        shallower than the window's body, continues an enclosing statement, or, while the
        hole is open, may still become one (class docstring)."""
        if not self.prefix or self._make_wide is None:
            return False
        first = chunks[0]
        open_hole = len(chunks) > 1
        if not open_hole:  # every hole closed: the window's tail is not read
            first = first[: len(first) - self.tail]
        lines = _LINE_BREAK.split(first[self.left_start:])
        for k, line in enumerate(lines[1:], 1):
            rest = line.lstrip(" \t\f")
            if not line.startswith(self.body) and (
                    _CONTINUATION.match(rest)
                    or (open_hole and k == len(lines) - 1 and rest in _CONTINUE_PREFIXES)):
                return True
        return False

    def _verdict(self, chunks: list[str], sites: Sequence[Site],
                 structure: Structure = PLAIN_STRUCTURE) -> Verdict:
        last = chunks[-1]
        if self.tail > len(last):
            raise Fallback("the window's tail no longer fits")
        chunks[-1] = last[: len(last) - self.tail] + self.suffix
        shift = len(self.prefix) - self.left_start
        left_text = self.prefix + chunks[0][self.left_start:]
        self.left.set_sites([s.moved(0, s.base + shift) for s in sites
                             if s.chunk == 0 and s.base >= self.left_start])
        self.left.set_text(left_text)
        if len(chunks) == 1:  # every hole closed: the text ends here
            done = self.left.finish()
            if done is None:
                raise Fallback("the end of the text is ambiguous")
            return Verdict.YES if done else Verdict.NO
        if not self.left.alive or not self.left.sites_hold():
            return Verdict.NO
        q0, region = 0, None
        if not structure.trivial:
            start = structure.start(0)
            region = max(0, (len(chunks[0]) if start is None else start) - self.left_start)
            region += len(self.prefix)
            q0 = self._left_counter(structure.rules[0], left_text, region)
            if q0 < 0:
                return Verdict.NO
        after = [s.moved(s.chunk - 1, s.base) for s in sites if s.chunk >= 1]
        right = self._right(chunks[1:], after, structure)
        if not self.terms.steps_fit():
            self._strict_mode_off()
            right = self._right(chunks[1:], after, structure)
        right.graph.budget = self.budget
        junction = build_junction(self.left, right, self.budget, q0, region)
        if not self.terms.steps_fit():
            # entering the right context met an indentation step other than the unit (the
            # open lexeme's layout): read without strict mode, as the classic check does
            self._strict_mode_off()
            right = self._right(chunks[1:], after, structure)
            right.graph.budget = self.budget
            junction = build_junction(self.left, right, self.budget, q0, region)
        answer = Verdict.NO
        for native, exits in junction.exits.values():
            got = self._query(native, junction, exits)
            if got is Verdict.YES:
                return got
            if got is Verdict.UNKNOWN:
                answer = got
        return answer

    def _query(self, native: NativeRight, junction: Junction, exits: object) -> Verdict:
        """One question into a native right context. The first one into a context (and the
        first after it grew) also builds the parser's tables over it, linear in the text
        after the hole (the request's preparation, or the growth's, not a token's cost), so
        until a question into that version has been answered it may take the right
        context's step limit instead of the parser's."""
        warm = self._answered.get(native) == native.version
        steps = self.limits.parser_steps if warm else self.limits.right_steps
        got = _VERDICT[self.left.parser.query(native, junction.n_states, junction.edges, exits,
                                              max_steps=steps)]
        if got is not Verdict.UNKNOWN:
            self._answered[native] = native.version
        return got

    def _left_counter(self, rule: object, text: str, region: int) -> int:
        """Hole 0's structure counter after the settled lexemes of the left text that begin
        in its region (the open lexeme's are the junction's); -1 when they break the rule."""
        from holefill.check.structure import HoleRule

        assert isinstance(rule, HoleRule)
        if rule.one_line and ("\n" in text[region:] or "\r" in text[region:]):
            return -1
        cls = self.checker.brackets.cls
        found = []
        for lx in reversed(self.left.lexer.lexemes):
            if lx.start < region:
                break
            if cls[lx.term] != NONE:
                found.append(int(cls[lx.term]))
        return run_rule(rule, found[::-1])

    def _right(self, after: list[str], sites: list[Site],
               structure: Structure = PLAIN_STRUCTURE) -> RightContext:
        rules = Structure(structure.rules) if not structure.trivial else PLAIN_STRUCTURE
        key = (tuple(after), tuple(sites), self.terms.unit, rules.rules)
        got = self.rights.get(key)
        if got is None:
            if len(self.rights) >= 8:
                self._drop(self.rights.pop(next(iter(self.rights))))
            self.trim(KEPT_RIGHTS_BYTES)
            got = self.rights[key] = RightContext(self.terms, self.grammar, after, sites,
                                                  self.limits, self.budget, self.shared,
                                                  rules, self.checker.brackets)
        return got

    def native_bytes(self) -> int:
        """What its right contexts hold (the parser's tables are small beside them)."""
        return sum(r.native_bytes() for r in self.rights.values())

    def trim(self, limit: int) -> None:
        """Drops the oldest right contexts until those kept hold at most `limit` bytes; the
        ones dropped are built again when asked."""
        while self.rights and self.native_bytes() > limit:
            self._drop(self.rights.pop(next(iter(self.rights))))

    def _strict_mode_off(self) -> None:
        """The known text indents by other steps than the unit: as the classic check does,
        read the text after the hole without strict mode (new right contexts)."""
        self.terms.unit = None
        self.terms.steps.clear()
        if self.terms.layout is not None:
            self.terms.layout.reset_memo()
        for right in self.rights.values():
            self._drop(right)
        self.rights.clear()

    def _drop(self, right: RightContext) -> None:
        """The parser forgets an evicted right context, so its native parts can be freed."""
        for native in right.natives():
            self.left.parser.forget(native)
        self._forget_retired(right)

    def _forget_retired(self, right: RightContext) -> None:
        while right.retired:
            self.left.parser.forget(right.retired.pop())
