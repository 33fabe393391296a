"""The binding of the native core (native/holefill.h): the only module that imports cffi's
compiled `holefill._native`.

    g = NativeGrammar(n_terminals, n_symbols, start, binary, unary, nullable)
    chk = NativeChecker(g)
    res = chk.run(n_states, edges, starts, finals, want_witness=True)
    res.verdict   # CoreVerdict.YES / NO / UNKNOWN / CANCELLED
    res.witness   # [(edge_index, end_state), ...] on YES, else None

Edges are int32 quadruples (from, label, to, weight), label -1 meaning epsilon; weights are
>= 0 on every edge, epsilon edges included, and a path weighs the sum of all of them. Pass them
as a flat `array('i')` to avoid any per-element Python work; a sequence of 4-tuples or a
flat sequence of ints is converted once. C errors become `CoreError`.

cffi releases the GIL while the core runs, so checkers on different threads run in
parallel; one checker must not be used by two threads at once.
"""

from __future__ import annotations

import enum
import itertools
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from holefill._native import ffi, lib
from holefill.errors import CoreError

if TYPE_CHECKING:
    from holefill.grammar.tables import LexerDFA, NormalGrammar

__all__ = ["CoreResult", "CoreVerdict", "NativeCancel", "NativeChecker", "NativeGrammar",
           "NativeMunch",
           "NativeParser", "NativeRight", "live_blocks", "live_bytes", "peak_bytes"]

_ERROR_CAP = 512
_STAT_FIELDS = ("steps", "items", "finalized", "useful_states", "edges", "leaves", "weight")


class CoreVerdict(enum.IntEnum):
    """hf_checker_run's answer (HF_ERROR never escapes: it becomes CoreError)."""

    NO = 0
    YES = 1
    UNKNOWN = 2
    CANCELLED = 3


@dataclass
class CoreResult:
    """One run's outcome. `witness` holds (original edge index, end state) per leaf, left to
    right, when the verdict is YES: each leaf is its edge followed by a lightest epsilon-path
    to its end state, and the next leaf's edge starts exactly there; `stats` the counters of
    native HfStats (`weight` counts epsilon edges too, see hf_checker_witness)."""

    verdict: CoreVerdict
    witness: list[tuple[int, int]] | None = None
    stats: dict[str, int] = field(default_factory=dict)


def live_blocks() -> int:
    """Blocks allocated by the native core and not yet freed (for leak tests)."""
    return int(lib.hf_live_blocks())


def live_bytes() -> int:
    """Bytes held by the native core's blocks now (all objects, all threads)."""
    return int(lib.hf_live_bytes())


def peak_bytes(reset: bool = False) -> int:
    """The most bytes the native core held at once since the last reset (or the start);
    `reset`: start a new measurement (the peak becomes what is held now) after reading."""
    got = int(lib.hf_peak_bytes())
    if reset:
        lib.hf_reset_peak_bytes()
    return got


def _int32_array(values: Iterable[int] | array) -> array:
    """`values` as array('i') (int32), copying only when it is not one already."""
    if isinstance(values, array) and values.typecode == "i" and values.itemsize == 4:
        return values
    try:
        return array("i", values)
    except OverflowError as exc:
        raise CoreError(f"value out of int32 range: {exc}") from None


def _edge_array(edges: Any) -> array:
    """Flat int32 quadruples from a flat array/sequence or a sequence of 4-tuples."""
    if isinstance(edges, array):
        flat = _int32_array(edges)
    else:
        seq = edges if isinstance(edges, Sequence) else list(edges)
        if len(seq) and not isinstance(seq[0], int):
            flat = _int32_array(itertools.chain.from_iterable(seq))
        else:
            flat = _int32_array(seq)
    if len(flat) % 4:
        raise CoreError(f"edges: {len(flat)} ints is not a whole number of quadruples")
    return flat


class NativeGrammar:
    """An immutable native grammar (HfGrammar), shareable by many checkers and threads.

    binary: (A, X, Y) triples for A -> X Y; unary: (A, X) pairs; nullable: A with A -> eps.
    Symbols 0..n_terminals-1 are terminals, the rest nonterminals; start is a nonterminal.
    """

    def __init__(
        self,
        n_terminals: int,
        n_symbols: int,
        start: int,
        binary: Iterable[tuple[int, int, int]],
        unary: Iterable[tuple[int, int]],
        nullable: Iterable[int],
    ) -> None:
        flat_binary = _int32_array(itertools.chain.from_iterable(binary))
        flat_unary = _int32_array(itertools.chain.from_iterable(unary))
        flat_nullable = _int32_array(nullable)
        error = ffi.new("char[]", _ERROR_CAP)
        ptr = lib.hf_grammar_new(
            n_terminals,
            n_symbols,
            start,
            ffi.from_buffer("int32_t[]", flat_binary),
            len(flat_binary) // 3,
            ffi.from_buffer("int32_t[]", flat_unary),
            len(flat_unary) // 2,
            ffi.from_buffer("int32_t[]", flat_nullable),
            len(flat_nullable),
            error,
            _ERROR_CAP,
        )
        if ptr == ffi.NULL:
            raise CoreError(f"bad grammar: {ffi.string(error).decode('utf-8', 'replace')}")
        self._ptr = ffi.gc(ptr, lib.hf_grammar_delete)
        self.n_terminals = n_terminals
        self.n_symbols = n_symbols
        self.start = start

    @classmethod
    def from_normal(cls, ng: NormalGrammar) -> NativeGrammar:
        """The native form of a `holefill.grammar.tables.NormalGrammar`."""
        return cls(ng.n_terminals, ng.n_symbols, ng.start, ng.binary, ng.unary, ng.nullable)

    def close(self) -> None:
        """Frees the native grammar now (checkers using it must be closed first)."""
        if self._ptr is not None:
            ffi.release(self._ptr)
            self._ptr = None


@ffi.def_extern(onerror=lambda exc_type, exc, tb: 1)
def _hf_cancel_trampoline(ctx: Any) -> int:
    """HfCancelFn: calls the Python callable behind `ctx`; an exception cancels the run."""
    state = ffi.from_handle(ctx)
    try:
        return 1 if state[0]() else 0
    except BaseException as exc:  # re-raised by NativeChecker.run after the C call returns
        state[1] = exc
        return 1


class NativeCancel:
    """A Python check handed to C as an HfCancelFn and its context (`fn`, `ctx`), polled by
    the native stages every few thousand steps: `check()` returning True, or raising, stops
    the run; `raise_pending` re-raises what it raised once the C call has returned."""

    def __init__(self, check: Callable[[], bool] | None) -> None:
        self.state: list[Any] = [check, None]
        self._handle = None if check is None else ffi.new_handle(self.state)
        self.fn = ffi.NULL if check is None else lib._hf_cancel_trampoline
        self.ctx = ffi.NULL if self._handle is None else self._handle

    def raise_pending(self) -> None:
        """Raises what the check raised, once: the exception is not kept here (its
        traceback holds the frames of the whole request, engines and charts included, and
        this object sits in those frames: a cycle that kept hundreds of MB of native memory
        until the garbage collector's next full pass)."""
        pending, self.state[1] = self.state[1], None
        if pending is not None:
            raise pending


class NativeChecker:
    """A reusable search handle (HfChecker). Not thread-safe: serialise calls on one
    checker. Keeps its native buffers between runs, so repeated runs are cheap."""

    def __init__(self, grammar: NativeGrammar, *, context_filter: bool = True) -> None:
        """`context_filter=False` turns off the core's context filter (see holefill.h): same
        verdicts and witness weights, more work; for tests and benchmarks that compare."""
        if grammar._ptr is None:
            raise CoreError("grammar is closed")
        ptr = lib.hf_checker_new(grammar._ptr)
        if ptr == ffi.NULL:
            raise CoreError("out of memory creating a checker")
        self.grammar = grammar  # keeps the borrowed HfGrammar alive
        self._ptr = ffi.gc(ptr, lib.hf_checker_delete)
        lib.hf_checker_set_context_filter(self._ptr, 1 if context_filter else 0)
        self._limits = ffi.new("HfLimits *")
        self._stats = ffi.new("HfStats *")

    def close(self) -> None:
        """Frees the native checker now (otherwise done when it is collected)."""
        if self._ptr is not None:
            ffi.release(self._ptr)
            self._ptr = None

    def run(
        self,
        n_states: int,
        edges: Any,
        starts: Iterable[int],
        finals: Iterable[int],
        *,
        max_steps: int = 0,
        max_items: int = 0,
        want_witness: bool = False,
        cancel: Callable[[], bool] | None = None,
    ) -> CoreResult:
        """Is the grammar's language met by the NFA? See hf_checker_run in holefill.h.

        max_steps / max_items: 0 means the native default. `cancel` is polled every few
        thousand steps; returning True (or raising) stops the run (CANCELLED, or the
        exception is re-raised)."""
        if self._ptr is None:
            raise CoreError("checker is closed")
        flat = _edge_array(edges)
        start_arr = _int32_array(starts)
        final_arr = _int32_array(finals)
        self._limits.max_steps = max_steps
        self._limits.max_items = max_items
        poll = NativeCancel(cancel)
        verdict = lib.hf_checker_run(
            self._ptr,
            n_states,
            ffi.from_buffer("int32_t[]", flat),
            len(flat) // 4,
            ffi.from_buffer("int32_t[]", start_arr),
            len(start_arr),
            ffi.from_buffer("int32_t[]", final_arr),
            len(final_arr),
            self._limits,
            1 if want_witness else 0,
            poll.fn,
            poll.ctx,
        )
        poll.raise_pending()
        if verdict == lib.HF_ERROR:
            message = ffi.string(lib.hf_checker_last_error(self._ptr)).decode("utf-8", "replace")
            raise CoreError(message)
        lib.hf_checker_stats(self._ptr, self._stats)
        stats = {name: int(getattr(self._stats, name)) for name in _STAT_FIELDS}
        witness = None
        if verdict == lib.HF_YES:
            n = lib.hf_checker_witness_len(self._ptr)
            ids = array("i", bytes(4 * n))
            ends = array("i", bytes(4 * n))
            lib.hf_checker_witness(
                self._ptr, ffi.from_buffer("int32_t[]", ids), ffi.from_buffer("int32_t[]", ends), n
            )
            witness = list(zip(ids, ends, strict=True))
        return CoreResult(CoreVerdict(verdict), witness, stats)


def _message(ptr: Any, getter: Any) -> str:
    return ffi.string(getter(ptr)).decode("utf-8", "replace")


class NativeRight:
    """A right context (HfRight): every generating triple of an NFA that grows by blocks of
    new states. See hf_right_add in holefill.h."""

    def __init__(self, grammar: NativeGrammar) -> None:
        if grammar._ptr is None:
            raise CoreError("grammar is closed")
        ptr = lib.hf_right_new(grammar._ptr)
        if ptr == ffi.NULL:
            raise CoreError("could not create a right context (too many symbols, or memory)")
        self.grammar = grammar  # keeps the borrowed HfGrammar alive
        self._ptr = ffi.gc(ptr, lib.hf_right_delete)
        self._limits = ffi.new("HfLimits *")

    @property
    def n_states(self) -> int:
        return int(lib.hf_right_n_states(self._ptr))

    @property
    def n_items(self) -> int:
        return int(lib.hf_right_n_items(self._ptr))

    @property
    def bytes(self) -> int:
        """What its buffers hold (hf_right_bytes): the memory a cache of contexts keeps."""
        return int(lib.hf_right_bytes(self._ptr))

    @property
    def complete(self) -> bool:
        return bool(lib.hf_right_complete(self._ptr))

    @property
    def version(self) -> int:
        """Bumped by every growth (a parser's tables over the context are then rebuilt)."""
        return int(lib.hf_right_version(self._ptr))

    def add(self, n_states: int, edges: Any, finals: Iterable[int],
            entries: Iterable[int] = (), *, max_steps: int = 0,
            max_items: int = 0, max_bytes: int = 0) -> CoreVerdict:
        """Grows to n_states states with `edges` (leaving only the new states) and `finals`;
        YES when the closure is complete, UNKNOWN when a limit ran out (`max_bytes`: what
        the context may hold, growth included; 0: no limit). `entries` (first call only):
        where questions enter; turns the context filter on (hf_right_add)."""
        flat = _edge_array(edges)
        final_arr = _int32_array(finals)
        entry_arr = _int32_array(entries)
        self._limits.max_steps = max_steps
        self._limits.max_items = max_items
        self._limits.max_bytes = max_bytes
        verdict = lib.hf_right_add(self._ptr, n_states, ffi.from_buffer("int32_t[]", flat),
                                   len(flat) // 4, ffi.from_buffer("int32_t[]", final_arr),
                                   len(final_arr), ffi.from_buffer("int32_t[]", entry_arr),
                                   len(entry_arr), self._limits)
        if verdict == lib.HF_ERROR:
            raise CoreError(_message(self._ptr, lib.hf_right_last_error))
        return CoreVerdict(verdict)


class NativeParser:
    """An incremental Earley parser (HfParser) over the terminals left of a hole, asking a
    NativeRight whether the input can still be completed. Not thread-safe."""

    def __init__(self, grammar: NativeGrammar) -> None:
        if grammar._ptr is None:
            raise CoreError("grammar is closed")
        ptr = lib.hf_parser_new(grammar._ptr)
        if ptr == ffi.NULL:
            raise CoreError("out of memory creating a parser")
        self.grammar = grammar
        self._ptr = ffi.gc(ptr, lib.hf_parser_delete)
        self._limits = ffi.new("HfLimits *")
        # the contexts this parser holds tables for: kept alive until forgotten, so that no
        # other context can be allocated at an address its tables are keyed by
        self._queried: dict[int, NativeRight] = {}

    def forget(self, right: NativeRight) -> None:
        """Drops the tables derived for `right` and the parser's hold on it."""
        if self._queried.pop(id(right), None) is not None:
            lib.hf_parser_forget(self._ptr, right._ptr)

    def reset(self) -> None:
        if lib.hf_parser_reset(self._ptr) != lib.HF_YES:
            raise CoreError("out of memory resetting a parser")

    @property
    def position(self) -> int:
        return int(lib.hf_parser_position(self._ptr))

    def truncate(self, position: int) -> None:
        lib.hf_parser_truncate(self._ptr, position)

    def accepts(self) -> bool:
        return bool(lib.hf_parser_accepts(self._ptr))

    def push(self, terminals: Iterable[int], *, max_steps: int = 0,
             max_items: int = 0) -> CoreVerdict:
        """Reads terminals: YES while the input stays a viable prefix, NO at the first one
        that is not (the parser stays before it), UNKNOWN when a limit ran out."""
        arr = _int32_array(terminals)
        self._limits.max_steps = max_steps
        self._limits.max_items = max_items
        verdict = lib.hf_parser_push(self._ptr, ffi.from_buffer("int32_t[]", arr), len(arr),
                                     self._limits)
        if verdict == lib.HF_ERROR:
            raise CoreError(_message(self._ptr, lib.hf_parser_last_error))
        return CoreVerdict(verdict)

    def query(self, right: NativeRight, n_junction: int, edges: Any, exits: Any, *,
              max_steps: int = 0, max_items: int = 0) -> CoreVerdict:
        """Can the input, then a word of the junction, then one of `right`, be a sentence?
        See hf_parser_query: edges are (from, label, to, weight) with from < to; exits are
        (from, label, right state) triples."""
        flat = _edge_array(edges)
        ex = _int32_array(exits)
        if len(ex) % 3:
            raise CoreError(f"exits: {len(ex)} ints is not a whole number of triples")
        self._limits.max_steps = max_steps
        self._limits.max_items = max_items
        self._queried[id(right)] = right
        verdict = lib.hf_parser_query(self._ptr, right._ptr, n_junction,
                                      ffi.from_buffer("int32_t[]", flat), len(flat) // 4,
                                      ffi.from_buffer("int32_t[]", ex), len(ex) // 3,
                                      self._limits)
        if verdict == lib.HF_ERROR:
            raise CoreError(_message(self._ptr, lib.hf_parser_last_error))
        return CoreVerdict(verdict)


class NativeMunch:
    """Maximal munch of fixed text in C (hf_munch): one lexer DFA's tables, flattened once.
    holefill.lexing.relex.Relexer reads whole documents with it."""

    def __init__(self, dfa: LexerDFA, error_terms: Iterable[int], n_labels: int) -> None:
        import numpy as np

        n_classes = len(dfa.boundaries) + 1
        trans = np.full((dfa.n_states, n_classes), -1, dtype=np.int32)  # short rows: dead
        for s, row in enumerate(dfa.trans):
            trans[s, :len(row)] = row
        self._trans = trans.reshape(-1)
        self._accept = np.array(dfa.accept, dtype=np.int32)
        self._alive = np.array([1 if a else 0 for a in dfa.alive], dtype=np.uint8)
        errors = np.zeros(max(1, n_labels), dtype=np.uint8)
        errors[[t for t in error_terms if 0 <= t < n_labels]] = 1
        self._errors = errors
        t = self._tables = ffi.new("HfLexTables *")
        t.trans = ffi.from_buffer("int32_t[]", self._trans)
        t.n_states = dfa.n_states
        t.n_classes = n_classes
        t.accept = ffi.from_buffer("int32_t[]", self._accept)
        t.alive = ffi.from_buffer("uint8_t[]", self._alive)
        t.start = dfa.start
        t.error_label = ffi.from_buffer("uint8_t[]", self._errors)
        t.n_labels = n_labels

    def run(self, classes: Any, base: int, text_len: int, start: int, sync_from: int = -1,
            delta: int = 0, old_starts: Any = None) -> tuple[Any, Any, Any, Any, int, int]:
        """Lexemes from `start` (see hf_munch): starts, ends, labels, scans (numpy arrays),
        where to resume, and the index of the old lexeme it fell in step with (-1)."""
        import numpy as np

        room = base + len(classes) - start
        starts, ends, scans = (np.empty(room, dtype=np.int64) for _ in range(3))
        labels = np.empty(room, dtype=np.int32)
        old = (np.zeros(0, dtype=np.int64) if old_starts is None
               else np.ascontiguousarray(old_starts, dtype=np.int64))
        resume, synced = ffi.new("int64_t *"), ffi.new("int64_t *")
        cls = np.ascontiguousarray(classes, dtype=np.int32)
        n = lib.hf_munch(self._tables, ffi.from_buffer("int32_t[]", cls), base, len(cls),
                         text_len, start, sync_from, delta, ffi.from_buffer("int64_t[]", old),
                         len(old), ffi.from_buffer("int64_t[]", starts),
                         ffi.from_buffer("int64_t[]", ends), ffi.from_buffer("int32_t[]", labels),
                         ffi.from_buffer("int64_t[]", scans), resume, synced)
        if n < 0:
            raise CoreError("hf_munch: bad arguments")
        return (starts[:n], ends[:n], labels[:n].astype(np.int64), scans[:n], int(resume[0]),
                int(synced[0]))
