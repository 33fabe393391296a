"""The raw graph of holefill.lexing.holes, built by the native core (native/hf_lexer.c).

`NativeRawGraph` has `RawGraph`'s API and gives the very same graph (states numbered in the
same order, the same edges in the same order with the same kinds, terms, weights and spans):
the C code is a port of `HoleLexer._run`, `Coverage` and `RawGraph.expand`. Python still
computes the anchors and the character classes, and reads the arrays back: an NFA snapshot
copies them, and its spans are `Place` pairs made when read (`PlaceSpans`).

The Python `RawGraph` stays the reference (`HoleLexer(..., native=False)`, or the
environment variable HOLEFILL_NATIVE_LEXER=0); tests/lexing/test_native_lexer.py holds the
two equal.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, cast, overload

import numpy as np

from holefill._native import ffi, lib
from holefill.budget import Budget, BudgetExhausted, blocks, native_poll, stopped_native
from holefill.lexing.anchors import Anchors
from holefill.lexing.relex import class_tables, text_classes

if TYPE_CHECKING:
    from holefill.lexing.holes import HoleLexer, LexemeNFA, Place

NO_BUDGET = 2**63 - 1


class NativeLexer:
    """The lexer DFA and per-terminal tables of one HoleLexer, in C (shared by its graphs;
    the C side guards its caches, so graphs may be built on several threads)."""

    def __init__(self, lexer: HoleLexer) -> None:
        dfa = lexer.dfa
        n_states, n_terms = dfa.n_states, len(lexer.terminals)
        n_classes = len(dfa.boundaries) + 1
        trans = np.full((n_states, n_classes), -1, dtype=np.int32)
        for s, row in enumerate(dfa.trans):
            trans[s, :len(row)] = row
        alive = np.zeros((n_states, max(n_terms, 1)), dtype=np.uint8)
        for s, terms in enumerate(dfa.alive):
            alive[s, list(terms)] = 1
        ignored = np.array([t in lexer.ignored for t in range(n_terms)], dtype=np.uint8)
        comment = np.array([t in lexer.reference.comment_like for t in range(n_terms)],
                           dtype=np.uint8)
        arrays: list[np.ndarray] = [
            trans, np.array(dfa.accept, dtype=np.int32),
            np.array(dfa.killable, dtype=np.uint8), alive,
            np.array(lexer.weight + lexer.fixed_weight, dtype=np.int32), ignored, comment,
            np.array(lexer.hole_terminals, dtype=np.int32),
            np.array(sorted(lexer.anywhere), dtype=np.int32),
        ]
        ptrs = [ffi.from_buffer(_ctype(a), a) for a in arrays]
        ptr = lib.hf_lexer_new(n_states, n_classes, n_terms, dfa.start, *ptrs[:7],
                               ptrs[7], len(arrays[7]), ptrs[8], len(arrays[8]))
        if ptr == ffi.NULL:
            raise MemoryError("hf_lexer_new")
        self.ptr = ffi.gc(ptr, lib.hf_lexer_delete)
        self.boundaries, self.ascii = class_tables(dfa.boundaries)

    def classes(self, chunk: str) -> np.ndarray:
        """HoleLexer.classes of a chunk as an int32 array."""
        return text_classes(self.boundaries, self.ascii, chunk)


def _ctype(a: np.ndarray) -> str:
    return "uint8_t[]" if a.dtype == np.uint8 else "int32_t[]"


_lock = threading.Lock()
# NativeLexers by DFA (held here, so that its id stays its own) and by the HoleLexer's
# per-terminal tables: a checker made per request builds its HoleLexer again, not its C one.
_by_dfa: dict[int, tuple[object, dict[tuple, NativeLexer]]] = {}


def native_lexer(lexer: HoleLexer) -> NativeLexer:
    """The NativeLexer of `lexer`, made on first use (shared by lexers of the same DFA and
    tables)."""
    got = lexer.__dict__.get("_native_lexer")
    if got is None:
        key = (tuple(lexer.weight), tuple(lexer.fixed_weight), lexer.ignored,
               lexer.reference.comment_like, tuple(lexer.hole_terminals), lexer.anywhere,
               len(lexer.terminals))
        with _lock:
            _, made = _by_dfa.setdefault(id(lexer.dfa), (lexer.dfa, {}))
            got = made.get(key)
            if got is None:
                got = made[key] = NativeLexer(lexer)
            lexer.__dict__["_native_lexer"] = got
    return got


def _place_key(p: Place) -> tuple[int, int, int, int, int]:
    return (p.chunk, p.pos, p.hole, p.kill, p.flag)


class PlaceSpans(Sequence):
    """`LexemeNFA.spans` of a native graph's snapshot: (Place, Place) per edge, the places
    of the edge's two states. A reader of a few spans (the witness renderer) has them made
    one by one; a reader of many (python_layout reads them all) gets, after READ_ONE of
    them, the whole list, which also replaces the snapshot's `spans` attribute so that
    later reads are plain list reads."""

    READ_ONE = 64
    __slots__ = ("_graph", "_n", "_reads", "_list", "owner")

    def __init__(self, graph: NativeRawGraph, n: int) -> None:
        self._graph = graph
        self._n = n
        self._reads = 0
        self._list: list[tuple[Place, Place]] | None = None
        self.owner: LexemeNFA | None = None

    def __len__(self) -> int:
        return self._n

    def materialized(self) -> list[tuple[Place, Place]]:
        if self._list is None:
            self._list = self._graph._span_list(self._n)
            if self.owner is not None:
                self.owner.spans = self._list
        return self._list

    @overload
    def __getitem__(self, e: int) -> tuple[Place, Place]: ...

    @overload
    def __getitem__(self, e: slice) -> list[tuple[Place, Place]]: ...

    def __getitem__(self, e: int | slice) -> tuple[Place, Place] | list[tuple[Place, Place]]:
        if self._list is not None or isinstance(e, slice):
            return self.materialized()[e]
        self._reads += 1
        if self._reads > self.READ_ONE:
            return self.materialized()[e]
        if e < 0:
            e += self._n
        if not 0 <= e < self._n:
            raise IndexError(e)
        return self._graph._span(e)

    def __iter__(self) -> Iterator[tuple[Place, Place]]:
        return iter(self.materialized())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and self.materialized() == list(other)

    __hash__ = None  # type: ignore[assignment]


def state_places(nfa: LexemeNFA) -> np.ndarray | None:
    """(chunk, pos) per state of a native graph's snapshot as an (n_states, 2) array, read
    from C without making a Place per state (a 100,000-line file has a million); None when
    `nfa` is not such a snapshot or its spans were already read as a list."""
    spans = nfa.spans
    if not isinstance(spans, PlaceSpans) or nfa.n_states == 0:
        return None
    keys = np.frombuffer(ffi.buffer(lib.hf_raw_places(spans._graph._g), 20 * nfa.n_states),
                         dtype=np.int32).reshape(-1, 5)
    return keys[:, :2].copy()


def _ints(ptr: object, n: int) -> array:
    out = array("i")
    if n:
        out.frombytes(ffi.buffer(ptr, 4 * n))
    return out


class NativeRawGraph:
    """`holefill.lexing.holes.RawGraph`, built in C (see the module docstring)."""

    def __init__(self, lexer: HoleLexer, chunks: Sequence[str], anchors: Anchors,
                 budget: Budget | None = None) -> None:
        self.lexer = lexer
        self.chunks = list(chunks)
        self.anchors = anchors
        self.budget = budget
        self._native = native_lexer(lexer)
        self._classes = classes = [self._native.classes(c) for c in self.chunks]
        self._cls: list[list[int]] | None = None
        self._places: list[Place | None] = []  # per state, see _place
        self._spans: list[tuple[Place, Place]] = []  # per edge, see _span_list
        lengths = np.array([len(c) for c in self.chunks], dtype=np.int32)
        flat = np.concatenate(classes) if classes else np.zeros(0, np.int32)
        sites = np.array([v for s in anchors.sites for v in (
            s.chunk, s.base, s.length, _opt(s.alpha_s), _opt(s.alpha_c), int(s.passes),
            _opt(s.rho))], dtype=np.int32)
        g = lib.hf_raw_new(self._native.ptr, len(self.chunks),
                           ffi.from_buffer("int32_t[]", lengths),
                           ffi.from_buffer("int32_t[]", flat), len(anchors.sites),
                           ffi.from_buffer("int32_t[]", sites))
        if g == ffi.NULL:
            raise MemoryError("hf_raw_new")
        self._g = ffi.gc(g, lib.hf_raw_delete)
        self._call(lib.hf_raw_start)
        self.hole_states = list(_ints(lib.hf_raw_hole_states(self._g), lib.hf_raw_n_holes(self._g)))

    @property
    def cls(self) -> list[list[int]]:
        """The character classes per chunk (HoleLexer.classes), for the Python runs of the
        incremental junction."""
        if self._cls is None:
            self._cls = [c.tolist() for c in self._classes]
        return self._cls

    @property
    def cov(self) -> object:
        from holefill.lexing.holes import Coverage

        return Coverage([len(c) for c in self.chunks], self.anchors,
                        self.lexer.reference.comment_like)

    def _call(self, fn: object, *args: object) -> None:
        """Runs a C build step under the budget: spends what C spent, which raises
        BudgetExhausted as the Python path would when the budget ran out."""
        budget = self.budget
        left = NO_BUDGET if budget is None or budget.left is None else max(budget.left, -1)
        spent = ffi.new("int64_t *")
        poll = native_poll(budget)
        rc = fn(self._g, *args, left, poll.fn, poll.ctx, spent)  # type: ignore[operator]
        if rc == lib.HF_LEX_CANCELLED:  # the deadline passed or the caller cancelled
            raise stopped_native(budget, poll, spent[0])
        if budget is not None and spent[0]:
            budget.spend(spent[0])
        if rc == lib.HF_LEX_BUDGET:
            raise BudgetExhausted(f"the work budget ran out after {spent[0]} steps")
        if rc == lib.HF_LEX_NOMEM:
            raise MemoryError("the native lexer ran out of memory")
        if rc == lib.HF_LEX_BAD_PLACE:
            raise ValueError("a place outside the text of this graph")

    def expand(self, places: Sequence[Place]) -> None:
        """Adds the lexemes from `places` and from every place they reach."""
        keys = np.array([_place_key(p) for p in places], dtype=np.int32).reshape(-1)
        self._call(lib.hf_raw_expand, ffi.from_buffer("int32_t[]", keys), len(places))

    def state_of(self, place: Place) -> int:
        """The state of a place, expanding it first when it is new."""
        key = ffi.new("int32_t[5]", _place_key(place))
        s = lib.hf_raw_find(self._g, key)
        if not place.in_hole and (s < 0 or not lib.hf_raw_is_done(self._g, s)):
            self.expand([place])
        s = lib.hf_raw_state(self._g, key)
        if s < 0:
            raise MemoryError("the native lexer ran out of memory")
        return s

    @property
    def done(self) -> _Expanded:
        """The places expanded so far (RawGraph.done), for `in` tests."""
        return _Expanded(self)

    def size(self) -> tuple[int, int]:
        """States and edge quadruple entries so far (RawGraph.size)."""
        return lib.hf_raw_n_states(self._g), 4 * lib.hf_raw_n_edges(self._g)

    def _finals(self, since: int) -> list[int]:
        n = lib.hf_raw_finals(self._g, since, ffi.NULL)
        out = ffi.new("int32_t[]", max(n, 1))
        lib.hf_raw_finals(self._g, since, out)
        return list(out[0:n])

    def grown_since(self, had_states: int, had_edges: int) -> tuple[int, array, list[int]]:
        """RawGraph.grown_since: the states now, the edges and finals added since."""
        g = self._g
        n_edges = lib.hf_raw_n_edges(g)
        edges = _ints(lib.hf_raw_edges(g) + 4 * had_edges, 4 * (n_edges - had_edges))
        return lib.hf_raw_n_states(g), edges, self._finals(had_states)

    def _place(self, s: int) -> Place:
        """The place of state s (one Place object per state, made when first asked)."""
        places = self._places
        if s >= len(places):
            places.extend([None] * (lib.hf_raw_n_states(self._g) - len(places)))
        got = places[s]
        if got is None:
            from holefill.lexing.holes import Place

            k = lib.hf_raw_places(self._g) + 5 * s
            got = places[s] = Place(k[0], k[1], k[2], k[3], k[4])
        return got

    def _span(self, e: int) -> tuple[Place, Place]:
        q = lib.hf_raw_edges(self._g) + 4 * e
        return self._place(q[0]), self._place(q[2])

    def _span_list(self, n: int) -> list[tuple[Place, Place]]:
        """The spans of the first n edges (made once per graph, extended as it grows)."""
        spans = self._spans
        if len(spans) < n:
            from holefill.lexing.holes import Place

            n_states = lib.hf_raw_n_states(self._g)
            places = self._places
            places.extend([None] * (n_states - len(places)))
            keys = _ints(lib.hf_raw_places(self._g), 5 * n_states)
            for block in blocks(n_states, self.budget):  # a million states: seconds
                for s in block:
                    if places[s] is None:
                        places[s] = Place(*keys[5 * s:5 * s + 5])
            had = len(spans)
            q = _ints(lib.hf_raw_edges(self._g) + 4 * had, 4 * (n - had))
            made = cast("list[Place]", places)  # every state's place is made now
            for block in blocks(n - had, self.budget):
                lo, hi = 4 * block.start, 4 * block.stop
                spans.extend(zip(map(made.__getitem__, q[lo:hi:4]),
                                 map(made.__getitem__, q[lo + 2:hi:4]), strict=True))
        return spans[:n]

    def nfa(self) -> LexemeNFA:
        from holefill.lexing.holes import LexemeNFA

        g = self._g
        n = lib.hf_raw_n_edges(g)
        start = lib.hf_raw_find(g, ffi.new("int32_t[5]", (0, 0, -1, -1, 0)))
        nfa = LexemeNFA(
            n_states=lib.hf_raw_n_states(g),
            edges=_ints(lib.hf_raw_edges(g), 4 * n),
            starts=[start],
            finals=self._finals(0),
            kinds=_ints(lib.hf_raw_kinds(g), n).tolist(),
            terms=_ints(lib.hf_raw_terms(g), n).tolist(),
            spans=PlaceSpans(self, n),  # type: ignore[arg-type]
            hole_states=list(self.hole_states),
        )
        nfa.spans.owner = nfa  # type: ignore[attr-defined]
        return nfa


class _Expanded:
    """`place in graph.done` on a native graph."""

    def __init__(self, graph: NativeRawGraph) -> None:
        self.graph = graph

    def __contains__(self, place: object) -> bool:
        key = ffi.new("int32_t[5]", _place_key(place))  # type: ignore[arg-type]
        s = lib.hf_raw_find(self.graph._g, key)
        return s >= 0 and bool(lib.hf_raw_is_done(self.graph._g, s))


def _opt(x: int | None) -> int:
    return -1 if x is None else x

