"""The public checker: can this text with holes still be completed to a valid program?

Data flows one way: chunks -> lexeme NFA (holefill.lexing) -> native emptiness check
(holefill.check.core) -> verdict, and on request a witness rendered back into text.
"""

from __future__ import annotations

import enum
import functools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from holefill.budget import Budget, BudgetExhausted
from holefill.check.core import CoreVerdict, NativeChecker, NativeGrammar
from holefill.check.merge import MAX_HOLES, merge_adjacent_holes
from holefill.check.structure import (
    PLAIN_STRUCTURE,
    Brackets,
    Structure,
    StructureProduct,
    product_regions,
    structure_of,
    violation,
)
from holefill.grammar.tables import CompiledGrammar
from holefill.lexing.anchors import PLAIN, Anchors, ReferenceLexer, respected
from holefill.lexing.holes import HoleLexer, LexemeNFA
from holefill.lexing.render import Renderer, full_path

log = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 20_000_000
# Whether checks and fills keep the structure of the user's code unless told (see
# holefill.check.structure): off until the engines that check each token (the incremental
# right context, pieces, segments) carry the rule, and the suites are judged under it.
STRUCTURED_DEFAULT = True


class Verdict(enum.Enum):
    """The three answers. Only YES is truthy: UNKNOWN must never be read as NO either."""

    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"

    def __bool__(self) -> bool:
        return self is Verdict.YES


class PartialLexer(Protocol):
    """What a language's lexer provides: the NFA of all lexings, and witness rendering."""

    @property
    def reference(self) -> ReferenceLexer:
        """The maximal-munch reader of fixed text (anchors, witness checks)."""
        ...

    def anchors(self, chunks: Sequence[str]) -> Anchors:
        """The reading of `chunks` (as the user's document) that fillings must keep."""
        ...

    def build(self, chunks: Sequence[str], anchors: Anchors | None = None,
              budget: Budget | None = None) -> LexemeNFA: ...

    def beyond_limits(self, chunks: Sequence[str], budget: Budget | None = None) -> str | None:
        """Why the language's own compiler would refuse every filling although the grammar
        may accept one (nesting too deep, ...), or None; polls `budget` while it reads."""
        ...

    def render_witness(
        self,
        chunks: Sequence[str],
        nfa: LexemeNFA,
        leaves: Sequence[tuple[int, int]],
        attempt: int,
    ) -> list[str] | None:
        """Fillings for attempt 0, 1, ... (each a different way to separate lexemes);
        None when this lexer has no further attempt."""
        ...


class GenericLexer:
    """Maximal-munch lexing with holes for grammars whose terminals are all regexes."""

    def __init__(self, compiled: CompiledGrammar,
                 surcharge: Mapping[int, int] | None = None) -> None:
        """`surcharge`: extra witness weight per terminal (see HoleLexer)."""
        terms = compiled.grammar.terminals
        self.holes = HoleLexer(compiled.lexer, terms, surcharge)
        self.renderer = Renderer(compiled.lexer, terms)

    @property
    def reference(self) -> ReferenceLexer:
        return self.holes.reference

    def anchors(self, chunks: Sequence[str]) -> Anchors:
        return self.holes.anchors(chunks)

    def build(self, chunks: Sequence[str], anchors: Anchors | None = None,
              budget: Budget | None = None) -> LexemeNFA:
        return self.holes.build(chunks, anchors, budget)

    def beyond_limits(self, chunks: Sequence[str], budget: Budget | None = None) -> str | None:
        return None

    SEPARATORS = (" ", "\n")

    def render_witness(
        self,
        chunks: Sequence[str],
        nfa: LexemeNFA,
        leaves: Sequence[tuple[int, int]],
        attempt: int,
    ) -> list[str] | None:
        if attempt >= len(self.SEPARATORS):
            return None
        path = full_path(nfa, leaves)
        return self.renderer.render(chunks, nfa, path, sep=self.SEPARATORS[attempt])


@dataclass
class CheckResult:
    """One check: the verdict, the witness fillings (when asked and YES), and costs."""

    verdict: Verdict
    fills: list[str] | None = None
    stats: dict[str, float] = field(default_factory=dict)
    reason: str | None = None  # why the answer is UNKNOWN (a limit, the deadline, a cancel)


_VERDICTS = {
    CoreVerdict.YES: Verdict.YES,
    CoreVerdict.NO: Verdict.NO,
    CoreVerdict.UNKNOWN: Verdict.UNKNOWN,
    CoreVerdict.CANCELLED: Verdict.UNKNOWN,
}


class Checker:
    """Answers completability questions for one language.

    chunks: list[str], with one hole between each pair of neighbours (so ``[text]`` asks
    whether ``text`` is a valid program, and ``[prefix, suffix]`` is fill-in-the-middle).
    A checker keeps native buffers between calls; calls on one checker are serialised.
    """

    _cache: dict[str, Checker] = {}
    _cache_lock = threading.Lock()

    def __init__(self, compiled: CompiledGrammar, lexer: PartialLexer | None = None) -> None:
        self.compiled = compiled
        self.language = compiled.language
        self.lexer: PartialLexer = lexer or GenericLexer(compiled)
        self._native = NativeChecker(NativeGrammar.from_normal(compiled.grammar))
        self._lock = threading.Lock()
        self._structures: OrderedDict[tuple[str, ...], Structure] = OrderedDict()
        self._lock_structures = threading.Lock()

    @functools.cached_property
    def adjacent(self) -> np.ndarray:
        """[a, b]: terminal b can follow terminal a in a sentence
        (holefill.grammar.adjacency)."""
        from holefill.grammar.adjacency import adjacent_terminals

        return adjacent_terminals(self.compiled.grammar)

    @functools.cached_property
    def brackets(self) -> Brackets:
        """The bracket terminals and the line-break-only terminals (holefill.check.structure)."""
        return Brackets(self.compiled.grammar.terminals, self.compiled.lexer)

    def structure(self, chunks: Sequence[str]) -> Structure:
        """The structure of `chunks`, as the user's document, that fillings keep (see
        holefill.check.structure); like `anchors`, once per request: a request asks for it
        from several places, so the last few are kept (by their texts)."""
        key = tuple(chunks)
        with self._lock_structures:
            got = self._structures.get(key)
            if got is not None:
                self._structures.move_to_end(key)
                return got
        got = structure_of(self.lexer.reference, self.brackets, chunks)
        with self._lock_structures:
            self._structures[key] = got
            while len(self._structures) > 8:
                self._structures.popitem(last=False)
        return got

    def structure_violation(self, chunks: Sequence[str], fills: Sequence[str],
                            structure: Structure | None = None) -> str | None:
        """Why `fills` break the structure of `chunks` (default: theirs as the user's
        document), judged on the filled text; None when they keep it."""
        if structure is None:
            structure = self.structure(chunks)
        return violation(self.lexer.reference, self.brackets, chunks, fills, structure)

    @classmethod
    def for_language(cls, language: str) -> Checker:
        """The shared checker of a language ("json", "cpp", ...); raises LanguageError."""
        from holefill.languages import get_language

        spec = get_language(language)
        with cls._cache_lock:
            chk = cls._cache.get(spec.name)
            if chk is None:
                compiled = spec.compile()
                chk = cls(compiled, spec.make_lexer(compiled))
                cls._cache[spec.name] = chk
            return chk

    def completable(
        self, chunks: Sequence[str], *, max_steps: int = DEFAULT_MAX_STEPS,
        anchored: bool = True,
    ) -> Verdict:
        """YES when some filling of the holes makes a valid program that keeps the reading of
        the text outside the holes (anchored=False: any valid program, the papers' plain
        semantics); NO when none does; UNKNOWN when the work budget ran out first."""
        return self.check(chunks, max_steps=max_steps, anchored=anchored).verdict

    def witness(
        self, chunks: Sequence[str], *, max_steps: int = DEFAULT_MAX_STEPS,
        anchored: bool = True,
    ) -> list[str] | None:
        """A shortest filling per hole (fewest inserted lexemes), or None when there is none
        (or the budget ran out)."""
        return self.check(chunks, want_witness=True, max_steps=max_steps,
                          anchored=anchored).fills

    def anchors(self, chunks: Sequence[str]) -> Anchors:
        """The reading of `chunks`, as the user's document, that fillings keep (see
        holefill.lexing.anchors). Decoding computes it once per request and passes it on,
        since the chunks it checks later hold generated text."""
        return self.lexer.anchors(chunks)

    def keeps_reading(self, chunks: Sequence[str], fills: Sequence[str]) -> bool:
        """Whether filling `chunks` with `fills` keeps the reading of the fixed text (the
        anchors of `chunks` as the user's document): e.g. for a cut of real code, whether the
        removed text itself leaves the text around it as it was."""
        return respected(self.lexer.reference, chunks, fills, self.lexer.anchors(chunks))

    def keeps_place(self, chunks: Sequence[str], fills: Sequence[str]) -> bool:
        """Whether filling `chunks` with `fills` keeps both the reading and the structure of
        the fixed text (what the anchored check holds every filling to): e.g. for a cut of
        real code, whether the removed text itself may come back."""
        return (self.keeps_reading(chunks, fills)
                and self.structure_violation(chunks, fills) is None)

    def check(
        self,
        chunks: Sequence[str],
        *,
        want_witness: bool = False,
        max_steps: int = DEFAULT_MAX_STEPS,
        cancel: Callable[[], bool] | None = None,
        anchored: bool = True,
        anchors: Anchors | None = None,
        deadline: float | None = None,
        structure: Structure | None = None,
        structured: bool = STRUCTURED_DEFAULT,
    ) -> CheckResult:
        """One check. `anchors`: the reading to keep (default: that of `chunks` themselves);
        `anchored=False` checks the plain grammar semantics instead. `structure`: the
        brackets and lines to keep (holefill.check.structure), which `anchored=False` drops;
        when none is given, `structured` (default STRUCTURED_DEFAULT) takes those of
        `chunks` themselves if `anchors` is not given either, else none (the reading only).
        `max_steps` bounds the work of every stage (lexing with holes, layout, core),
        `deadline` (seconds) its wall time, `cancel` stops it: each answers UNKNOWN (never
        NO), with the reason in `reason`. The deadline and the cancel callback cover every
        stage, the reading of the anchors and the scan for CPython's limits included."""
        chunks = list(chunks)
        if not chunks:
            raise ValueError("chunks must hold at least one string")
        if not anchored:
            structure = PLAIN_STRUCTURE
        elif structure is None:  # None below: the structure of `chunks` themselves
            structure = None if structured and anchors is None else PLAIN_STRUCTURE
        return self._check(chunks, Budget(max_steps, deadline, cancel), want_witness,
                           max_steps, PLAIN if not anchored else anchors, structure)

    def _check(self, chunks: list[str], budget: Budget, want_witness: bool, max_steps: int,
               anchors: Anchors | None, structure: Structure | None = PLAIN_STRUCTURE
               ) -> CheckResult:
        t0 = time.perf_counter()
        try:
            budget.poll()
            merged = merge_adjacent_holes(chunks, anchors)
            if merged.holes > MAX_HOLES:
                return CheckResult(Verdict.UNKNOWN, reason=(
                    f"{merged.holes} holes in one check (more than {MAX_HOLES}, after "
                    "merging adjacent ones): fill fewer at a time"))
            if structure is None:
                structure = self.structure(chunks)
            structure = merged.structure(structure)
            chunks = merged.chunks
            if structure.written_breaks(chunks):
                return CheckResult(Verdict.NO, reason="a one-line filling wrote a line break")
            anchors = self.lexer.anchors(chunks) if merged.anchors is None else merged.anchors
            reason = self.lexer.beyond_limits(chunks, budget)
            if reason is not None:
                return CheckResult(Verdict.UNKNOWN, reason=reason)
            nfa = self.lexer.build(chunks, anchors, budget)
            prod = None
            n_states, edges, starts, finals = nfa.n_states, nfa.edges, nfa.starts, nfa.finals
            if not structure.trivial:
                prod = StructureProduct(structure, self.brackets)
                prod.add_states(*product_regions(nfa, structure, [len(c) for c in chunks],
                                                 self.brackets.killable_one_line))
                edges = prod.add_edges(nfa.edges, nfa.terms, nfa.kinds)
                n_states, starts = prod.n, [prod.state(x) for x in nfa.starts]
                finals = prod.finals(nfa.finals)
            t1 = time.perf_counter()
            with self._lock:
                res = self._native.run(
                    n_states,
                    edges,
                    starts,
                    finals,
                    max_steps=budget.steps_left(max_steps),
                    want_witness=want_witness,
                    cancel=budget.stopped,
                )
            if prod is not None and res.witness is not None:
                res.witness = [(int(prod.origin_edge[e]), int(prod.origin_state[t]))
                               for e, t in res.witness]
        except BudgetExhausted as exc:
            return CheckResult(Verdict.UNKNOWN, reason=str(exc))
        t2 = time.perf_counter()
        verdict = _VERDICTS[res.verdict]
        stats = {
            "lex_ms": (t1 - t0) * 1e3,
            "core_ms": (t2 - t1) * 1e3,
            "nfa_states": nfa.n_states,
            "nfa_edges": nfa.n_edges,
            "structure_states": float(n_states),
            "holes_merged": float(len(merged.kept) - merged.holes),
            **{k: float(v) for k, v in res.stats.items()},
        }
        fills = None
        reason = "the work budget ran out in the core" if verdict is Verdict.UNKNOWN else None
        if verdict is Verdict.YES and want_witness and res.witness is not None:
            fills = self._render(chunks, nfa, res.witness, stats, anchors, budget, structure)
            stats["render_ms"] = (time.perf_counter() - t2) * 1e3
            if fills is None:  # YES is proven, but no text we can show proves it
                verdict = Verdict.UNKNOWN
                reason = ("no rendering of the witness passed the whole-program check in "
                          "its budget (if the budget was not the cause: a renderer bug, "
                          "please report the text)")
            else:
                fills = merged.unmerge(fills)
        return CheckResult(verdict, fills, stats, reason)

    def _render(
        self,
        chunks: list[str],
        nfa: LexemeNFA,
        leaves: Sequence[tuple[int, int]],
        stats: dict[str, float],
        anchors: Anchors,
        budget: Budget,
        structure: Structure = PLAIN_STRUCTURE,
    ) -> list[str] | None:
        """Render the witness and re-check the filled text as a whole program; a rendering
        that maximal munch would lex differently, or that the whole check refuses, is
        discarded for the next attempt. None when no attempt passes: a witness is never
        returned unchecked."""
        attempt = 0
        while True:
            try:
                fills = self.lexer.render_witness(chunks, nfa, leaves, attempt)
            except ValueError as exc:
                log.warning("witness rendering failed: %s", exc)
                fills = None
                if attempt > 4:
                    break
                attempt += 1
                continue
            if fills is None:
                break
            for option in _one_line_variants(fills, structure):
                if self._passes(chunks, option, anchors, budget, structure):
                    stats["witness_verified"] = 1.0
                    return option
            attempt += 1
        stats["witness_verified"] = 0.0
        return None

    def _passes(self, chunks: list[str], fills: list[str], anchors: Anchors, budget: Budget,
                structure: Structure) -> bool:
        """Whether a rendered witness keeps the reading and the structure and makes the
        whole text a program (the check of the filled text as one chunk)."""
        text = "".join(c + f for c, f in zip(chunks, fills + [""], strict=True))
        again = budget.sharing_time(DEFAULT_MAX_STEPS)  # within the check's time
        return (respected(self.lexer.reference, chunks, fills, anchors)
                and violation(self.lexer.reference, self.brackets, chunks, fills,
                              structure) is None
                and self._check([text], again, False, DEFAULT_MAX_STEPS,
                                None).verdict is Verdict.YES)


def _one_line_variants(fills: list[str], structure: Structure) -> list[list[str]]:
    """A rendering, and where it breaks a line the rule keeps whole, the same with its line
    breaks written as blanks (the renderer separates lexemes with line breaks in some of its
    attempts; blanks do as well where no lexeme needs a line break, which the re-check
    decides)."""
    out = [fills]
    one = [f.replace("\r", " ").replace("\n", " ")
           if h < len(structure.rules) and structure.rules[h].one_line else f
           for h, f in enumerate(fills)]
    if one != fills:
        out.append(one)
    return out
