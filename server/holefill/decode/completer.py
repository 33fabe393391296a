"""The public decoding API: ``Completer(model=...).fill(chunks, language=...)``.

Holes are filled left to right, each as a FIM prompt whose suffix shows the later holes as
placeholders; every check covers all remaining holes of the hole's segment (the part of the
document whose validity does not depend on the others, holefill.check.segments), so each
accepted token keeps the whole document completable.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import statistics
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from holefill.budget import Budget, BudgetExhausted
from holefill.check.checker import DEFAULT_MAX_STEPS, Verdict
from holefill.check.final import FINAL_DEADLINE_S
from holefill.check.focus import SPLITTABLE
from holefill.check.incremental import IncrementalCheck
from holefill.check.segments import Segment
from holefill.check.structure import PLAIN_STRUCTURE, Structure
from holefill.check.window import Window
from holefill.decode.backend import Detokenizer, LoadProgress, ModelBackend, ModelSpec
from holefill.decode.http import HttpOptions
from holefill.decode.loop import (
    STOPPED,
    Cancelled,
    Constraint,
    DecodeSettings,
    HoleDecoder,
    HoleResult,
    HoleState,
    LocalProposer,
    NotCompletable,
    VerdictMemo,
    seeded_generator,
)
from holefill.decode.prompt import build_prompt, shown
from holefill.decode.remote import RemoteBackend, RemoteProposer, RemoteSpec, is_remote
from holefill.decode.replay import ReplayBackend, ReplayProposer
from holefill.decode.templates import FimTemplate
from holefill.lexing.anchors import Site

log = logging.getLogger(__name__)

# Incremental engines kept per completer (one per recent place in a document).
ENGINE_CACHE = 4
# What the cached engines' right contexts may hold between requests (EngineCache.trim): the
# LSP soak's server swung between 0.4 and 1.7 GB with four engines of up to eight contexts
# each (a context of many holes took up to 300 MB).
ENGINE_CACHE_BYTES = 192 << 20

# progress(fraction done, message) while holes are filled
FillProgress = Callable[[float, str], None]
CancelSignal = threading.Event | Callable[[], bool] | None
# "auto": a masked-diffusion model folder gets the diffusion loop, anything else the
# autoregressive one; "diffusion" with no model takes the bundled diffusion model
DECODERS = ("auto", "autoregressive", "diffusion")


@dataclass
class FillResult:
    fills: list[str]  # one per hole, in document order
    # the exact check of the whole filled document said YES (holefill.check.final), after
    # every check of the fill was answered (no UNKNOWN) and every fallback was verified
    verified: bool
    stats: dict[str, float] = field(default_factory=dict)
    holes: list[HoleResult] = field(default_factory=list)
    reason: str | None = None  # why it is not verified
    refused: bool = False  # the exact check said NO: the fills make the document invalid

    def text(self, chunks: Sequence[str]) -> str:
        """The document with every hole filled."""
        return "".join(c + f for c, f in zip(chunks, [*self.fills, ""], strict=True))


class Completer:
    """A loaded model that fills holes, constrained by a language's grammar.

    ``model``: a local folder, a Hugging Face id present in the local cache, None for the
    bundled default, or the URL of an OpenAI-compatible completions server
    (``http://127.0.0.1:8080/v1``, ``#name`` or ``remote_model`` for one of several served
    models; see holefill.decode.remote). ``device``: "auto" (CUDA, then MPS, then CPU),
    "cpu", "cuda:1", ...
    ``dtype``: "auto" (bf16/fp16 on GPU, fp32 on CPU) or a name. ``template``: a family name or
    a custom template string with ``{prefix}`` and ``{suffix}``, when detection is not wanted.
    One fill runs at a time per completer (the KV cache is shared between fills).
    ``decoder``: "autoregressive" (FIM, left to right), "diffusion" (a masked-diffusion model
    fills every hole at once, `holefill.decode.diffusion`) or "auto" (from the model).
    ``load_cancel``: polled by a remote model's set-up requests (a cancelled load closes a
    request to a server that does not answer); a local load stops through ``progress``.
    ``backend``: a backend built beforehand that proposes tokens itself instead of a model
    (a `holefill.decode.replay.ReplayBackend`, replaying known text through this very loop);
    ``model`` and the loading options are then ignored.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        device: str = "auto",
        dtype: str = "auto",
        *,
        trust_remote_code: bool = False,
        threads: int | None = None,
        template: FimTemplate | str | None = None,
        fim_format: str | None = None,
        progress: LoadProgress | None = None,
        decoder: str = "auto",
        remote_model: str | None = None,
        context_length: int | None = None,
        timeout_s: float | None = None,
        load_cancel: Callable[[], bool] | None = None,
        backend: ReplayBackend | None = None,
    ) -> None:
        name = None if model is None else os.fspath(model)
        self.backend: Any
        self._session = None
        if backend is not None:
            self.decoder = "autoregressive"
            self.backend = backend
        elif is_remote(name):
            assert name is not None
            if resolve_decoder(decoder, None) == "diffusion":
                raise ValueError("the diffusion decoder runs a local model; a completions "
                                 "server proposes left to right (decoder: autoregressive)")
            self.decoder = "autoregressive"
            http = HttpOptions() if timeout_s is None else HttpOptions(timeout_s=timeout_s)
            self.backend = RemoteBackend(RemoteSpec(
                name, model=remote_model, template=template, fim_format=fim_format,
                context_length=context_length, http=http), progress, load_cancel)
        else:
            spec = ModelSpec(model=name, device=device, dtype=dtype,
                             trust_remote_code=trust_remote_code, threads=threads,
                             template=template, fim_format=fim_format)
            self.decoder = resolve_decoder(decoder, spec.model)
            if self.decoder == "diffusion":
                from holefill.decode.diffusion_backend import DiffusionBackend

                self.backend = DiffusionBackend(spec, progress)
            else:
                self.backend = ModelBackend(spec, progress)
                self._session = self.backend.session()
        self._lock = threading.Lock()
        # engines of recent requests: typing along in one place reuses the parse of the text
        # before the cursor and the closure of the text after it
        self._engines = EngineCache()

    @property
    def name(self) -> str:
        return self.backend.name

    def fill(
        self,
        chunks: Sequence[str],
        language: str,
        *,
        constrained: bool = True,
        max_new_tokens: int = 64,
        seed: int | None = 0,
        cancel: CancelSignal = None,
        progress: FillProgress | None = None,
        only: Sequence[int] | None = None,
        **options: Any,
    ) -> FillResult:
        """Fill every hole of ``chunks`` (a hole between each pair of neighbours), or only the
        holes numbered in ``only`` (then ``fills`` holds theirs, in order; the other holes stay
        open, and every check still covers them).

        ``options`` are the other ``DecodeSettings`` fields: top_k, temperature, top_p,
        on_stuck ("witness", "best-stop", "stop"), heal, multiline, max_check_steps,
        hole_placeholder, max_prompt_tokens, block_indent, replaceable; and
        final_deadline_s, the seconds the exact check of the filled document may take
        (holefill.check.final; past them the result is unverified). Raises LanguageError
        for an unknown language, NotCompletable when no filling can make the text valid,
        Cancelled when ``cancel`` fired.
        """
        chunks = list(chunks)
        if len(chunks) < 2:
            raise ValueError("chunks must hold at least two strings (one hole)")
        deadline = options.pop("final_deadline_s", FINAL_DEADLINE_S)
        if self.decoder == "diffusion":  # options: the fields of DiffusionSettings
            from holefill.decode.diffusion import diffuse

            with self._lock:
                out = diffuse(self.backend, chunks, language, constrained=constrained,
                              max_new_tokens=max_new_tokens, seed=seed,
                              cancel=_as_callable(cancel), progress=progress, only=only,
                              options=options)
            res = FillResult(out.fills, out.verified, out.stats, out.holes)
            return finish(res, chunks, language, only, constrained=constrained,
                          anchored=options.get("anchored", True), deadline=deadline,
                          cancel=_as_callable(cancel),
                          structured=options.get("structured", False))
        settings = DecodeSettings(constrained=constrained, max_new_tokens=max_new_tokens,
                                  seed=seed, **options)
        with self._lock:
            try:
                fill = _Fill(self, chunks, language, settings, _as_callable(cancel), progress)
                res = fill.run(only)
            finally:
                self._engines.trim()
        return finish(res, chunks, language, only, constrained=constrained,
                      anchored=settings.anchored, max_steps=settings.max_check_steps,
                      deadline=deadline, cancel=_as_callable(cancel),
                      structured=settings.structured)

    def complete(self, prefix: str, suffix: str, language: str, **kwargs: Any) -> FillResult:
        """Fill-in-the-middle at one cursor: ``fill([prefix, suffix], ...)``."""
        return self.fill([prefix, suffix], language, **kwargs)


def finish(res: FillResult, chunks: Sequence[str], language: str,
           only: Sequence[int] | None, *, constrained: bool = True, anchored: bool = True,
           max_steps: int | None = None, deadline: float | None = None,
           cancel: Callable[[], bool] | None = None, structured: bool = True) -> FillResult:
    """`res` with its verdict from the exact check of the whole filled document
    (holefill.check.final): no fill is called verified on the word of the fast paths that
    checked its tokens. Characters a filling replaced after its hole (closers the editor
    inserted, `HoleResult.replaced`) are left out of the document it is checked in."""
    from holefill.check.checker import Checker
    from holefill.check.final import final_check

    todo = sorted(set(range(len(chunks) - 1) if only is None else only))
    chunks = list(chunks)
    for i, hole in zip(todo, res.holes, strict=False):
        chunks[i + 1] = chunks[i + 1][getattr(hole, "replaced", 0):]
    t0 = time.perf_counter()
    final = final_check(Checker.for_language(language), chunks,
                        dict(zip(todo, res.fills, strict=True)), anchored=anchored,
                        max_steps=max_steps, deadline=deadline, cancel=cancel,
                        structured=structured)
    res.stats["final_ms"] = (time.perf_counter() - t0) * 1e3
    if cancel is not None and cancel():
        raise Cancelled("the fill was cancelled")
    if final.verified:  # a check that answered UNKNOWN on the way is decided now
        res.verified, res.reason = True, None
        return res
    if final.verdict is Verdict.NO and constrained and res.verified:
        log.error("a fill every check accepted is refused (%s): %s; please report the "
                  "document", final.reason,
                  "a fast path disagrees with the exact check" if final.judge in (
                      "check", "reading") else "the grammar accepts what the language refuses")
    res.verified, res.refused = False, final.verdict is Verdict.NO
    res.reason = final.reason if res.reason is None or res.refused else res.reason
    return res


def resolve_decoder(decoder: str, model: str | None) -> str:
    """"autoregressive" or "diffusion" for a `decoder` setting and a model."""
    if decoder not in DECODERS:
        raise ValueError(f"decoder must be one of {', '.join(DECODERS)}, not {decoder!r}")
    if decoder != "auto":
        return decoder
    from holefill.decode.diffusion_backend import is_diffusion_model

    return "diffusion" if is_diffusion_model(model) else "autoregressive"


def make_engine(checker: Any, chunks: Sequence[str], window: Any,
                max_steps: int = DEFAULT_MAX_STEPS, narrow: bool = True) -> IncrementalCheck:
    """The incremental engine for a request: the left from a clean start of the language,
    the right cut where the classic window cuts it (see holefill.check.incremental). An
    indented Python window's left starts where the window does, after its `class _:`
    lines, with the engine from the top-level statement kept for the one case that view
    over-rejects (IncrementalCheck's docstring). C, C++ and JSON engines read the window's
    left as the window does. `narrow` False: from the top-level statement always."""
    from holefill.check.window import left_start
    from holefill.lexing.python_layout import indent_unit

    if checker.language != "python":
        # C, C++, JSON: the window's stand-ins before the first hole (holefill.check.
        # window_brace) are the left's start: the window's own reading, which the classic
        # check falls back to anyway; a hole deep in a 4,000-line class reads 200 lines
        if narrow and len(chunks[0]) >= window.head and (window.prefix or window.head):
            return IncrementalCheck(checker, window.head, window.tail, window.suffix, None,
                                    max_steps, prefix=window.prefix)
        start = left_start(checker.language, chunks[0])
        return IncrementalCheck(checker, start, window.tail, window.suffix, None, max_steps)
    last = chunks[-1]
    tail = [*chunks[1:-1], last[: len(last) - window.tail] + window.suffix]

    def engine(start: int, prefix: str = "", **view: Any) -> IncrementalCheck:
        unit = indent_unit([prefix + chunks[0][start:], *tail])
        return IncrementalCheck(checker, start, window.tail, window.suffix, unit, max_steps,
                                prefix=prefix, **view)

    if not narrow or not window.prefix or len(chunks[0]) < window.head:
        return engine(left_start(checker.language, chunks[0]))
    rest = chunks[0][window.head:]
    return engine(window.head, window.prefix, body=rest[: len(rest) - len(rest.lstrip(" \t"))],
                  wide=lambda: engine(left_start(checker.language, chunks[0])))


class EngineCache:
    """The incremental engines of recent requests: typing along in one place reuses the parse
    of the text before the cursor and the closure of the text after it."""

    def __init__(self, size: int = ENGINE_CACHE, max_bytes: int = ENGINE_CACHE_BYTES) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self._engines: OrderedDict[tuple, IncrementalCheck] = OrderedDict()
        self.verdicts = VerdictMemo()  # classic answers for the pieces typing leaves alone

    def __len__(self) -> int:
        return len(self._engines)

    def values(self) -> list[IncrementalCheck]:
        return list(self._engines.values())

    def clear(self) -> None:
        self._engines.clear()
        self.verdicts = VerdictMemo()

    def native_bytes(self) -> int:
        return sum(e.native_bytes() for e in self._engines.values())

    def trim(self) -> None:
        """Keeps the engines' native memory within `max_bytes` (after a request): the
        oldest engines go first; the newest one only sheds its older right contexts."""
        while len(self._engines) > 1 and self.native_bytes() > self.max_bytes:
            self._engines.popitem(last=False)
        if self._engines and self.native_bytes() > self.max_bytes:
            next(reversed(self._engines.values())).trim(self.max_bytes)

    def engine_for(self, checker: Any, chunks: Sequence[str], window: Any,
                   max_steps: int, narrow: bool = True) -> IncrementalCheck:
        """A recent engine when the text after the hole (as the window cuts it) and the text
        before the left's start are the same (its left parse re-reads only what changed),
        else a new one (`make_engine`)."""
        engine = make_engine(checker, chunks, window, max_steps, narrow)
        last = chunks[-1]
        key = (checker.language, window.tail, window.suffix, engine.terms.unit, max_steps,
               hash(chunks[0][: engine.left_start]), engine.left_start, engine.prefix,
               tuple(chunks[1:-1]), last[: len(last) - window.tail])
        got = self._engines.get(key)
        if got is None:
            got = self._engines[key] = engine
            while len(self._engines) > self.size:
                self._engines.popitem(last=False)
        else:
            self._engines.move_to_end(key)
        return got


def request_checks(checker: Any, chunks: Sequence[str], settings: DecodeSettings,
                   cancel: Callable[[], bool] | None = None,
                   engine_for: Callable[..., IncrementalCheck] = make_engine,
                   memo: VerdictMemo | None = None) -> list[tuple[Segment, Constraint]]:
    """The checks of one request: a constraint per segment of the document (one for the
    whole document when it has no cut, or with ``settings.segmented`` off), each with its own
    window and, with ``settings.incremental``, its own engine (``engine_for(checker, chunks,
    window, max_steps)``); `memo` keeps classic answers across requests. `cancel` (the LSP's
    token also fires at its deadline) is polled between and inside the stages (windows,
    segments, anchors: seconds for a 100,000-line file): Cancelled when it fires."""
    budget = Budget(cancel=cancel)
    try:
        return _request_checks(checker, list(chunks), settings, cancel, engine_for, memo,
                               budget)
    except BudgetExhausted as exc:
        raise Cancelled(f"the fill was cancelled while its checks were set up ({exc})") from None


def _request_checks(checker: Any, chunks: list[str], settings: DecodeSettings,
                    cancel: Callable[[], bool] | None,
                    engine_for: Callable[..., IncrementalCheck], memo: VerdictMemo | None,
                    budget: Budget) -> list[tuple[Segment, Constraint]]:
    from holefill.check.segments import split_segments
    from holefill.check.window import find_window

    def constraint(part: Sequence[str], window: Window) -> Constraint:
        budget.poll()
        return segment_constraint(checker, part, window, settings, cancel, engine_for, memo)

    def window_of(part: Sequence[str]) -> Window:
        return find_window(language, part, budget=budget)

    def keeps_rules(segments: list[Segment]) -> list[Segment]:
        # Each hole's structure rule (holefill.check.structure) is a condition on its own
        # filling, with numbers read from the text around it. Python: a segment's text may
        # give a hole smaller numbers than the document (the user's unpartnered brackets in
        # other segments); a filling could pair with those only across a cut, which no
        # valid filling does (a cut's line starts a statement: depth 0 in every valid
        # filling), so the segment asks the same of valid fillings. Larger numbers come
        # from a pair of the user's brackets across a cut, whose halves the segment sees
        # unpartnered: then the request is one segment. C and C++ cuts are not at depth 0
        # in every valid filling (a later hole may close a brace an earlier one left
        # open): any hole that may pair with the user's brackets makes one segment.
        if len(segments) < 2 or not (settings.anchored and settings.structured):
            return segments
        rules = checker.structure(chunks).rules
        if language != "python":
            return [] if any(r.floor or r.ceiling for r in rules) else segments
        for seg in segments:
            for mine, doc in zip(checker.structure(list(seg.chunks)).rules,
                                 rules[seg.holes.start:seg.holes.stop], strict=True):
                if (mine.floor > doc.floor or mine.ceiling > doc.ceiling
                        or (mine.one_line, mine.free) != (doc.one_line, doc.free)):
                    return []
        return segments

    language = checker.language
    segments: list[Segment] = []
    segmented = settings.segmented
    if language in ("c", "cpp") and segmented and settings.anchored:
        # cut before any window: one window over far-apart holes is the slow part
        segments = keeps_rules(split_segments(language, checker.lexer.reference, chunks,
                                              list(checker.anchors(chunks).sites),
                                              budget=budget))
        if len(segments) > 1:
            return [(seg, constraint(seg.chunks, window_of(seg.chunks))) for seg in segments]
    window = window_of(chunks)
    budget.poll()
    sites = list(checker.anchors(window.apply(chunks)).sites) if settings.anchored else []
    if language == "python" and segmented:
        segments = keeps_rules(split_segments(language, checker.lexer.reference, chunks,
                                              sites, checker.adjacent, budget,
                                              settings.in_blocks))
    if len(segments) < 2:
        return [(Segment(0, tuple(chunks), tuple(sites)), constraint(chunks, window))]
    return [(seg, constraint(seg.chunks, window_of(seg.chunks))) for seg in segments]


def segment_constraint(checker: Any, part: Sequence[str], window: Window,
                       settings: DecodeSettings, cancel: Callable[[], bool] | None,
                       engine_for: Callable[..., IncrementalCheck] = make_engine,
                       memo: VerdictMemo | None = None) -> Constraint:
    """The constraint of one segment: its window and, with ``settings.incremental``, its
    engine."""
    def engine_of(chunks: Sequence[str], window: Window) -> IncrementalCheck | None:
        return (engine_for(checker, chunks, window, settings.max_check_steps,
                           settings.in_blocks) if settings.incremental else None)

    split = settings.split_at_holes and checker.language in SPLITTABLE
    return Constraint(checker, window, settings.max_check_steps, cancel, settings.anchored,
                      engine_of(part, window), split, engine_of, memo)


def _as_callable(cancel: CancelSignal) -> Callable[[], bool] | None:
    if cancel is None:
        return None
    if isinstance(cancel, threading.Event):
        return cancel.is_set
    return cancel


class _Fill:
    """One ``Completer.fill`` call: holes left to right, then the statistics.

    The checks of a hole look at its segment of the document only (holefill.check.segments:
    fixed top-level definitions between holes split a Python text into parts whose validity
    is independent); the prompt shows the whole document."""

    def __init__(self, completer: Completer, chunks: list[str], language: str,
                 settings: DecodeSettings, cancel: Callable[[], bool] | None,
                 progress: FillProgress | None) -> None:
        from holefill.check.checker import Checker

        self.completer, self.chunks, self.settings = completer, chunks, settings
        self.cancel, self.progress = cancel, progress
        self.checker = Checker.for_language(language)  # LanguageError before any model work
        self.parts: list[tuple[Segment, Constraint]] = []
        if settings.constrained:
            self.parts = request_checks(self.checker, chunks, settings, cancel,
                                        completer._engines.engine_for,
                                        completer._engines.verdicts)
        self.generator = (None if isinstance(completer.backend, RemoteBackend)
                          else seeded_generator(settings.seed))

    def _part_of(self, hole: int) -> tuple[Segment, Constraint] | None:
        return next((p for p in self.parts if hole in p[0].holes), None)

    def run(self, only: Sequence[int] | None) -> FillResult:
        t0 = time.perf_counter()
        verified = self._check_start()
        n = len(self.chunks) - 1
        todo = sorted(set(range(n) if only is None else only))
        if any(not 0 <= i < n for i in todo):
            raise ValueError(f"hole indices must lie in 0..{n - 1}")
        fills, done, results = [""] * n, [False] * n, []
        for step, i in enumerate(todo):
            self._report(step / len(todo), f"filling hole {step + 1} of {len(todo)}")
            res = self._fill_hole(i, fills, done, step, len(todo))
            results.append(res)
            fills[i], done[i] = res.fill, True
        self._report(1.0, "done")
        reason = None
        if not (verified and all(r.verified for r in results)):
            verified = False
            unknown = next((c.unknown_reason for _, c in self.parts if c.unknown_reason),
                           None)
            reason = ("a fallback found no verified text" if any(
                r.completed_by == "none" and r.ended_by not in STOPPED for r in results)
                else f"a check answered unknown: {unknown or 'its work budget ran out'}")
        return FillResult([fills[i] for i in todo], verified,
                          self._stats(results, time.perf_counter() - t0), results, reason)

    def _check_start(self) -> bool:
        """Every segment completable (one NO: the document is not); YES only when all are."""
        verdicts = []
        for k, (seg, constraint) in enumerate(self.parts):
            verdicts.append(constraint.verdict(list(seg.chunks), list(seg.sites),
                                               structure=self._structure(seg)).value)
            if verdicts[-1] == "no" and constraint.window != Window():
                verdicts[-1] = self._unwindowed(k).value
            if verdicts[-1] == "no" and any(s.prefix for s, _ in self.parts):
                # an indented cut's wrapper may refuse a line of the user's after a later
                # hole (holefill.check.segments): the request goes on in one segment
                log.warning("a segment of the %s text was refused; checking it whole",
                            self.checker.language)
                self.parts = request_checks(
                    self.checker, self.chunks,
                    dataclasses.replace(self.settings, segmented=False), self.cancel,
                    self.completer._engines.engine_for, self.completer._engines.verdicts)
                return self._check_start()
            if self.cancel is not None and self.cancel():
                raise Cancelled("the fill was cancelled")
            if verdicts[-1] == "no":
                kept = ("" if not self.settings.structured else
                        ", or every filling that would make it valid re-pairs your brackets "
                        "or breaks a line your code goes on (structured=False allows that)")
                raise NotCompletable(
                    f"no filling of the {len(self.chunks) - 1} hole(s) makes this valid "
                    f"{self.checker.language}: the text outside the holes has a syntax error"
                    f"{kept} (mark that place as a hole too, or fill without the constraint)")
        return all(v == "yes" for v in verdicts)

    def _structure(self, seg: Segment) -> Structure:
        """The structure of a segment's holes that fills keep (none without the option)."""
        if not (self.settings.anchored and self.settings.structured):
            return PLAIN_STRUCTURE
        return self.checker.structure(list(seg.chunks))

    def _unwindowed(self, k: int) -> Verdict:
        """Part k's verdict without its window, which then replaces the part's constraint
        when it is not NO: a window bounds the text a check reads and must never refuse what
        the whole text allows (a hole inside a directive line can mislead the brace window's
        reading of the text after it)."""
        seg, _ = self.parts[k]
        whole = segment_constraint(self.checker, seg.chunks, Window(), self.settings,
                                   self.cancel, self.completer._engines.engine_for,
                                   self.completer._engines.verdicts)
        sites = (list(self.checker.anchors(list(seg.chunks)).sites)
                 if self.settings.anchored else [])
        verdict = whole.verdict(list(seg.chunks), sites, structure=self._structure(seg))
        if verdict is not Verdict.NO:
            log.warning("the check's window refused text that the whole %s text allows; "
                        "checking without the window", self.checker.language)
            self.parts[k] = (dataclasses.replace(seg, sites=tuple(sites)), whole)
        return verdict

    def _fill_hole(self, hole: int, fills: list[str], done: list[bool], index: int,
                   count: int) -> HoleResult:
        backend = self.completer.backend
        # the prompt keeps at least half the context (up to 256 tokens); generation the rest
        room = backend.context_length
        new_tokens = min(self.settings.max_new_tokens, room - min(256, room // 2))
        settings = dataclasses.replace(self.settings, max_new_tokens=new_tokens)
        budget = room - new_tokens - 1
        if settings.max_prompt_tokens is not None:
            budget = min(budget, settings.max_prompt_tokens)
        left, _ = _left_of(self.chunks, (), hole, fills, done)
        if settings.keep_to_place:
            rest = self.chunks[hole + 1].split("\n", 1)[0]
            settings = dataclasses.replace(settings, block_indent=block_of(left[-1]),
                                           multiline=settings.multiline and not rest.strip())
        before = shown(left, settings.hole_placeholder)
        suffix = shown(self.chunks[hole + 1:], settings.hole_placeholder)
        part = self._part_of(hole)
        seg, constraint = part if part is not None else (
            Segment(0, tuple(self.chunks), ()), None)

        def on_token(done: int) -> None:
            frac = (index + done / max(1, settings.max_new_tokens)) / count
            self._report(frac, f"hole {index + 1} of {count}: {done} tokens")

        proposer: LocalProposer | RemoteProposer | ReplayProposer
        if isinstance(backend, ReplayBackend):
            prompt = build_prompt(backend, before, suffix, budget=budget,  # type: ignore[arg-type]
                                  heal=settings.heal)
            heal, prompt_requests = prompt.heal, 0
            proposer = backend.proposer(hole, heal, prompt.ids)
        elif isinstance(backend, RemoteBackend):
            requests0 = backend.requests
            remote = backend.prompt(before, suffix, budget=budget, heal=settings.heal,
                                    cancel=self.cancel)
            heal, prompt_requests = remote.heal, backend.requests - requests0
            proposer = backend.proposer(remote, settings, self.cancel)
        else:
            prompt = build_prompt(backend, before, suffix, budget=budget, heal=settings.heal)
            heal, prompt_requests = prompt.heal, 0
            session = self.completer._session
            assert session is not None
            logp = session.prefill(prompt.ids)
            detok = Detokenizer(backend, prompt.ids)
            proposer = LocalProposer(session, detok, logp, settings, self.generator)
        structure = (self._structure(seg)
                     if constraint is not None and self.settings.anchored
                     and self.settings.structured else None)
        state = _hole_state(seg, hole - seg.first, fills[seg.first:], done[seg.first:],
                            len(heal), structure)
        decoder = HoleDecoder(proposer, constraint, state, heal, settings, self.cancel,
                              on_token)
        res = decoder.run()
        res.requests += prompt_requests
        if isinstance(proposer, RemoteProposer):
            res.inexact = proposer.inexact + (res.ended_by == "end" and proposer.stop_guessed)
        return res

    def _report(self, frac: float, message: str) -> None:
        if self.progress is not None:
            self.progress(min(1.0, frac), message)

    def _stats(self, results: list[HoleResult], total_s: float) -> dict[str, float]:
        tokens = sum(r.tokens for r in results)
        model_s = sum(r.model_s for r in results)
        checks = [t for _, constraint in self.parts for t in constraint.times_ms]
        stats = {
            "holes": float(len(results)),
            "tokens": float(tokens),
            "rejected": float(sum(r.rejected for r in results)),
            "checks": float(len(checks)),
            "model_s": model_s,
            "model_ms_per_token": 1e3 * model_s / tokens if tokens else 0.0,
            "total_s": total_s,
            "witness_holes": float(sum(r.completed_by == "witness" for r in results)),
            "requests": float(sum(r.requests for r in results)),
            "inexact": float(sum(r.inexact for r in results)),
            # checks answered UNKNOWN at once after the budget ran out twice in a row
            "checks_skipped": float(sum(c.skipped for _, c in self.parts)),
        }
        if checks:
            qs = statistics.quantiles(checks, n=10) if len(checks) > 1 else [checks[0]] * 9
            stats.update(check_ms_median=statistics.median(checks), check_ms_p90=qs[8],
                         check_ms_total=sum(checks),
                         check_ms_per_token=sum(checks) / max(1, tokens))
        return stats


def block_of(before: str) -> int | None:
    """The indentation of the block a hole at the end of ``before`` is in: its line's, or the
    hole's column when the hole sits in the line's indentation; None at column 0."""
    line = before[before.rfind("\n") + 1:]
    indent = min(len(line) - len(line.lstrip(" \t")), len(line))
    return indent or None


def _left_of(chunks: Sequence[str], sites: Sequence[Site], hole: int, fills: list[str],
             done: list[bool]) -> tuple[list[str], list[Site]]:
    """The chunks up to ``hole``, with the holes filled so far merged in (the holes not asked
    for stay open between them), and the anchor sites of the user's text there."""
    out = [chunks[0]]
    left_sites = []
    by_chunk = {s.chunk: s for s in sites}
    for j in range(hole):
        if done[j]:
            out[-1] += fills[j]
            base = len(out[-1])
            out[-1] += chunks[j + 1]
        else:
            out.append(chunks[j + 1])
            base = 0
        if j + 1 in by_chunk:
            left_sites.append(by_chunk[j + 1].moved(len(out) - 1, base))
    return out, left_sites


def _hole_state(seg: Segment, hole: int, fills: list[str], done: list[bool],
                heal: int, structure: Structure | None = None) -> HoleState:
    """The text that the checks of hole number ``hole`` of segment ``seg`` look at, without
    the ``heal`` characters before the hole that the prompt hands back to the model."""
    left, left_sites = _left_of(seg.chunks, seg.sites, hole, fills, done)
    after_sites = [s.moved(s.chunk - hole - 1, s.base) for s in seg.sites if s.chunk > hole]
    last = left[-1][: len(left[-1]) - heal]
    rules = None
    if structure is not None:
        open_holes = [j for j in range(hole) if not done[j]] + list(
            range(hole, len(seg.chunks) - 1))
        rules = structure.select(open_holes).rules
    return HoleState([*left[:-1], last], list(seg.chunks[hole + 1:]), left_sites, after_sites,
                     rules, left[-1][len(last):])

