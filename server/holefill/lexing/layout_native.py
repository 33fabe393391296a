"""The Python layout product in C (native/hf_layout.c): a session that grows as
`PythonLayoutLexer.extend` grows a `ProductSession`, with the same states and edges.

The layout rules run in C; the text stays here. When the session reads a raw edge it hands
C the few numbers the rules read of the text around it (`_edge_fields`), and layout keys
(a `Layout`, or an open hole's tuple) cross the boundary as int records (`encode_key`,
`decode_key`). The product's arrays are copied out after each growth; spans and layouts are
built on demand, because most of them are never read.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from holefill._native import ffi, lib
from holefill.budget import SCAN_BLOCK, Budget, native_poll, poll, stopped_native
from holefill.lexing.holes import LexemeNFA, Place
from holefill.lexing.native_holes import state_places

if TYPE_CHECKING:
    from holefill.lexing.python_layout import PythonLayoutLexer

_NO_SPAN = (Place(), Place())
KEY_FIELDS = lib.HF_LAYOUT_KEY_FIELDS


def encode_key(key: object) -> list[int]:
    """The C record of a layout key: a Layout, or ("open", (stack, cut, free), bol, carried)."""
    from holefill.lexing.python_layout import Layout

    if isinstance(key, Layout):
        return [0, key.depth, 0, key.line, key.pending, int(key.cont), int(key.comment),
                int(key.fixed), key.least, int(key.text_top), *key.stack]
    tag, (stack, cut, free), bol, carried = cast(tuple, key)
    assert tag == "open"
    return [1, 0, cut, int(free), int(bol), carried, 0, 0, 0, 0, *stack]


def decode_key(fields: Sequence[int]) -> object:
    """The Python layout key of a C record (encode_key's inverse)."""
    from holefill.lexing.python_layout import Layout

    stack = tuple(fields[KEY_FIELDS:])
    if fields[0] == 0:
        return Layout(fields[1], stack, fields[3], fields[4], bool(fields[5]), bool(fields[6]),
                      bool(fields[7]), fields[8], bool(fields[9]))
    return ("open", (stack, fields[2], bool(fields[3])), bool(fields[4]), fields[5])


class NativeProduct:
    """The product's arrays as `_Product` has them (edges, kinds, terms, raw_edge; spans on
    demand), copied from the C session after each growth."""

    def __init__(self, session: NativeSession, budget: Budget | None) -> None:
        self.session = session
        self.budget = budget
        self.n_states = 1
        self.edges = array("i")
        self.kinds = array("i")
        self.terms = array("i")
        self.raw_edge = array("i")
        self.holes = array("i")
        self.spans = _Spans(self)

    def sync(self, ptr: object) -> None:
        old, n = len(self.kinds), lib.hf_layout_n_edges(ptr)
        self.n_states = lib.hf_layout_n_states(ptr)
        if n == old:
            return
        self.edges.frombytes(ffi.buffer(lib.hf_layout_edges(ptr) + 4 * old, 16 * (n - old)))
        for arr, getter in ((self.kinds, lib.hf_layout_kinds), (self.terms, lib.hf_layout_terms),
                            (self.raw_edge, lib.hf_layout_raw_edges),
                            (self.holes, lib.hf_layout_holes)):
            arr.frombytes(ffi.buffer(getter(ptr) + old, 4 * (n - old)))


class _Spans(Sequence):
    """Per product edge: its raw edge's span, its hole's, or none (`_Product.spans`)."""

    def __init__(self, prod: NativeProduct) -> None:
        self.prod = prod

    def __len__(self) -> int:
        return len(self.prod.kinds)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        r = self.prod.raw_edge[i]
        if r >= 0:
            return self.prod.session.raw.spans[r]
        h = self.prod.holes[i]
        return (Place(hole=h),) * 2 if h >= 0 else _NO_SPAN


class StateInfo(Mapping):
    """{product state: layout key} for states whose raw state is not a hole's (`_product`'s
    state_info), decoded when read."""

    def __init__(self, session: NativeSession) -> None:
        self.session = session
        self.n = session.prod.n_states
        ptr = session.ptr
        self.raw = array("i")
        self.raw.frombytes(ffi.buffer(lib.hf_layout_state_raw(ptr), 4 * self.n))
        self.key = array("i")
        self.key.frombytes(ffi.buffer(lib.hf_layout_state_key(ptr), 4 * self.n))

    def _has(self, s: object) -> bool:
        return (isinstance(s, int) and 0 <= s < self.n and self.key[s] >= 0
                and self.raw[s] not in self.session.hole_raw)

    def __getitem__(self, s: object) -> object:
        if not self._has(s):
            raise KeyError(s)
        return self.session.key_object(self.key[cast(int, s)])

    def __iter__(self) -> Iterator[int]:
        return (s for s in range(self.n) if self._has(s))

    def __len__(self) -> int:
        return sum(1 for _ in self)


class NativeSession:
    """A `ProductSession` whose states and edges live in C (same fields where read)."""

    def __init__(self, layout: PythonLayoutLexer, chunks: Sequence[str], raw: LexemeNFA,
                 unit: int | None, budget: Budget | None, lead: list[int],
                 blank_first: list[bool]) -> None:
        self.layout = layout
        self.chunks = list(chunks)
        self.unit = unit
        self.raw = raw
        self._keys: dict[int, object] = {}
        terminals = len(layout.terminals)
        bracket = array("i", [0]) * terminals
        for t in layout.openers:
            bracket[t] = 1
        for t in layout.closers:
            bracket[t] = -1
        from holefill.lexing.python_layout import BRACKET_GUESS_WEIGHT, LAYOUT_TOKEN_WEIGHT

        config = array("i", [layout.nl, layout.newline, layout.indent, layout.dedent,
                             layout.line_cont, layout.ws, layout.comment, unit or 0,
                             BRACKET_GUESS_WEIGHT, LAYOUT_TOKEN_WEIGHT])
        loops = layout._same_line
        same_line = array("i", [x for t, w in zip(loops.terms, loops.edges[3::4], strict=True)
                                for x in (t, w)])
        ptr = lib.hf_layout_new(_buf(config), len(config), _buf(bracket), terminals,
                                _buf(same_line), loops.n, _buf(array("i", lead)),
                                _buf(array("i", map(int, blank_first))), len(self.chunks))
        if ptr == ffi.NULL:
            raise MemoryError("hf_layout_new failed")
        self.ptr = ffi.gc(ptr, lib.hf_layout_delete)
        self.prod = NativeProduct(self, budget)
        self.final = lib.hf_layout_final(self.ptr)
        self._n_raw_edges = 0
        self.hole_raw: set[int] = set()
        self.read_raw(raw)

    def read_raw(self, raw: LexemeNFA) -> None:
        """Hands C the raw graph's states and the edges it has not seen."""
        self.raw = raw
        self.hole_raw = set(raw.hole_states)
        n = raw.n_states
        hole, final, ahead = (array("i", [-1]) * n, array("i", [0]) * n,
                              array("i", [-1]) * n)
        for h, s in enumerate(raw.hole_states):
            hole[s] = h
        for s in raw.finals:
            final[s] = 1
        budget = self.prod.budget
        for s, k in self.layout._closers_ahead(raw, len(self.chunks) - 1, budget).items():
            ahead[s] = k
        first = self._n_raw_edges
        quads = raw.edges[4 * first:4 * raw.n_edges]
        kinds, terms = array("i", raw.kinds[first:]), array("i", raw.terms[first:])
        facts = _text_facts(self.layout, self.chunks, raw, first, budget)
        if lib.hf_layout_raw(self.ptr, n, _buf(hole), _buf(final), _buf(ahead),
                             raw.n_edges - first, _buf(quads), _buf(kinds), _buf(terms),
                             len(facts) // lib.HF_LAYOUT_FACT_FIELDS, _buf(facts)) != 0:
            raise MemoryError("hf_layout_raw failed")
        self._n_raw_edges = raw.n_edges

    def key_id(self, key: object) -> int:
        rec = array("i", encode_key(key))
        got = lib.hf_layout_key(self.ptr, _buf(rec), len(rec))
        if got < 0:
            raise MemoryError("hf_layout_key failed")
        return int(got)

    def key_object(self, key: int) -> object:
        got = self._keys.get(key)
        if got is None:
            n = lib.hf_layout_key_fields(self.ptr, key, ffi.NULL, 0)
            out = ffi.new("int32_t[]", n)
            lib.hf_layout_key_fields(self.ptr, key, out, n)
            got = self._keys[key] = decode_key(list(out))
        return got

    def extend(self, entries: Sequence[tuple[int, object]], budget: Budget | None) -> list[int]:
        """Grows the product from `entries`; returns their states and sets the layout's
        `_steps`. Raises what the budget raises when it runs out."""
        flat = array("i", [x for rs, key in entries for x in (rs, self.key_id(key))])
        starts = ffi.new("int32_t[]", max(1, len(entries)))
        left = -1 if budget is None or budget.left is None else max(budget.left, 0)
        poll = native_poll(budget)
        got = lib.hf_layout_extend(self.ptr, _buf(flat), len(entries), left, poll.fn,
                                   poll.ctx, starts)
        spent = lib.hf_layout_spent(self.ptr)
        if got == -4:  # the deadline passed or the caller cancelled
            raise stopped_native(budget, poll, spent)
        if got == -1:
            assert budget is not None
            budget.spend(spent)  # raises BudgetExhausted, as the Python path would
            raise AssertionError("the native layout product overran the budget")
        if got < 0:
            raise MemoryError(f"hf_layout_extend failed ({got})")
        self.prod.sync(self.ptr)
        steps = ffi.new("int32_t[]", 64)
        n = lib.hf_layout_steps(self.ptr, steps, 64)
        if n > 64:
            steps = ffi.new("int32_t[]", n)
            lib.hf_layout_steps(self.ptr, steps, n)
        self.layout._steps = set(steps[0:n])
        if budget is not None and spent:
            budget.spend(spent)
        return list(starts[0:got])

    @property
    def ids(self) -> dict[tuple[int, object], int]:
        """{(raw state, layout key): product state}, as `ProductSession.ids`."""
        info = StateInfo(self)
        return {(info.raw[s], self.key_object(info.key[s])): s for s in range(info.n)
                if info.key[s] >= 0}


def _buf(arr: array) -> object:
    return ffi.from_buffer("int32_t[]", arr) if len(arr) else ffi.NULL


def _text_facts(layout: PythonLayoutLexer, chunks: Sequence[str], raw: LexemeNFA,
                first: int, budget: Budget | None = None) -> array:
    """HF_LAYOUT_FACT_FIELDS ints per raw edge from `first` on that is a line break, a blank
    or a line continuation: what the layout rules read of the text around it (see
    native/holefill.h). `budget` is polled between blocks of edges."""
    from holefill.lexing.python_layout import _nl_break_width, blank_spec, indent_width

    nl, ws, cont = layout.nl, layout.ws, layout.line_cont
    out = array("i")
    terms = np.asarray(raw.terms[first:], dtype=np.int32)
    wanted = np.flatnonzero((terms == ws) | (terms == nl) | (terms == cont)) + first
    quads = np.frombuffer(raw.edges, dtype=np.int32, count=4 * raw.n_edges).reshape(-1, 4)
    places = state_places(raw)
    if places is None:
        spans = [raw.spans[e] for e in wanted.tolist()]
        ends = [(a.chunk, a.pos, b.chunk, b.pos) for a, b in spans]
    else:  # without a Place per state (a million of them in a large file)
        ends = np.hstack([places[quads[wanted, 0]], places[quads[wanted, 2]]]).tolist()
    for i, (e, (a_chunk, a_pos, b_chunk, b_pos)) in enumerate(zip(wanted.tolist(), ends,
                                                                   strict=True)):
        if i % SCAN_BLOCK == 0:
            poll(budget)
        term = raw.terms[e]
        same = a_chunk == b_chunk
        ws_blank = nl_same = carried = least_b = break_b = cont_ws = 0
        if term == ws:
            if not same or a_chunk < 0:
                continue
            ws_blank = indent_width(chunks[a_chunk][a_pos:b_pos])
        elif term == nl:
            if same and a_chunk >= 0:
                nl_same = indent_width(chunks[a_chunk][a_pos:b_pos].lstrip("\r\n"))
            elif not same:
                if a_chunk >= 0:
                    carried = _nl_break_width(chunks[a_chunk][a_pos:]) or 0
                if b_chunk >= 0:
                    tail = chunks[b_chunk][:b_pos]
                    least_b = blank_spec(tail)
                    w = _nl_break_width(tail)
                    break_b = -1 if w is None else w
        elif b_chunk >= 0:
            cont_ws = int(chunks[b_chunk][b_pos:b_pos + 1] in (" ", "\t", "\f"))
        out.extend((e, same, ws_blank, nl_same, carried, least_b, break_b, cont_ws))
    return out
