"""Constrained masked-diffusion infilling: every hole at once, in any order (the diffusion
paper's §3.1 and App. D.2).

Each hole starts as a fixed number of masked positions. A step runs the model on the whole
document and unmasks the positions it is most sure of (LLaDA's low-confidence remasking, or
Dream's entropy order), a share of the remaining masks per step. Constrained, every proposal
(position, token) is kept only if the document with all remaining masked runs as holes is
still completable (`holefill.decode.diffusion_canvas` turns the state into that partial
output: a token placed inside a masked run splits it into two holes; the anchor sites of the
request's text go with every check); a refused proposal is dropped from the distribution
and the next most likely proposal is tried.

Holes shrink and grow. A position may be declared empty (the model's padding token: LLaDA and
Dream pad with their end token, ours with `<fim_pad>`), so a hole holds fewer tokens than it
has positions. A hole grows when its last masked position can take none of its candidates:
every one would close the hole where the text cannot end; then more masked positions are
inserted there (up to a limit), the paper's proposed remedy (App. E) for a model that has
too few masks left. When nothing can move and nothing can grow, or after too many
refusals, the witness (a shortest valid filling of every remaining hole) completes the text.
Because completability is kept as an invariant, that witness always exists.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from holefill.check.checker import DEFAULT_MAX_STEPS, Checker, Verdict
from holefill.check.focus import SPLITTABLE
from holefill.decode.diffusion_canvas import EMPTY, MASK, Canvas, Partial, witness_texts
from holefill.decode.loop import (
    Cancelled,
    Constraint,
    HoleResult,
    NotCompletable,
    seeded_generator,
)
from holefill.lexing.anchors import Anchors

if TYPE_CHECKING:
    import torch

    from holefill.decode.diffusion_backend import DiffusionBackend

ORDERS = ("confidence", "entropy")
ON_STUCK = ("witness", "stop")
# DecodeSettings fields that only the autoregressive loop has a use for: accepted (so one
# options dict serves both decoders, as the server and the CLI pass it) and ignored.
AUTOREGRESSIVE_ONLY = frozenset({
    "heal", "multiline", "block_indent", "replaceable", "stop_at_blank_line",
    "hole_placeholder", "max_prompt_tokens", "repetition_guard", "stop_grace", "incremental",
    "top_p", "segmented", "in_blocks", "split_at_holes", "keep_to_place", "stop_at_right_closer",
})


@dataclass(frozen=True)
class DiffusionSettings:
    constrained: bool = True
    hole_tokens: int = 16  # masked positions each hole starts with
    max_hole_tokens: int = 64  # a hole grows up to this many positions
    grow_by: int = 4  # positions added when a hole needs room
    steps: int = 0  # model runs to unmask the initial masks; 0: one token per run
    order: str = "confidence"  # which positions first: "confidence" (LLaDA), "entropy" (Dream)
    top_k: int = 8  # candidates per position per step
    temperature: float = 0.0  # 0: the most likely token first
    max_rejections: int = 100  # refused proposals per hole before the witness completes it
    on_stuck: str = "witness"  # "stop": leave what is left unfilled (the paper's Con.-)
    seed: int | None = 0
    max_check_steps: int = DEFAULT_MAX_STEPS
    anchored: bool = True
    # the final check keeps the structure too (holefill.check.structure); off: the loop's
    # steps do not hold fillings to it yet (a masked run is a hole of its own, the rule is
    # per hole of the request), so its results would be refused
    structured: bool = False

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}")
        if self.on_stuck not in ON_STUCK:
            raise ValueError(f"on_stuck must be one of {', '.join(ON_STUCK)} for diffusion")
        if not 1 <= self.hole_tokens <= self.max_hole_tokens:
            raise ValueError("need 1 <= hole_tokens <= max_hole_tokens")
        if self.steps < 0 or self.top_k < 1 or self.grow_by < 1 or self.max_rejections < 0:
            raise ValueError("steps >= 0, top_k >= 1, grow_by >= 1, max_rejections >= 0")
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0")


def diffusion_settings(constrained: bool, max_new_tokens: int, seed: int | None,
                       options: dict[str, Any]) -> DiffusionSettings:
    """The settings of a `Completer.fill` call: ``max_new_tokens`` bounds each hole;
    autoregressive-only options are ignored, unknown ones are a TypeError."""
    known = {f.name for f in dataclasses.fields(DiffusionSettings)}
    unknown = set(options) - known - AUTOREGRESSIVE_ONLY
    if unknown:
        raise TypeError(f"unknown diffusion option(s): {', '.join(sorted(unknown))}")
    mine = {k: v for k, v in options.items() if k in known}
    limit = max(1, max_new_tokens)
    mine.setdefault("hole_tokens", min(DiffusionSettings.hole_tokens, limit))
    return DiffusionSettings(constrained=constrained, max_hole_tokens=limit, seed=seed, **mine)


@dataclass
class StepLog:
    """What one model run did: positions unmasked, proposals refused, check time."""

    placed: int = 0
    rejected: int = 0
    check_ms: float = 0.0
    grown: int = 0


@dataclass
class DiffusionOutcome:
    fills: list[str]  # one per asked hole
    holes: list[HoleResult]
    verified: bool
    stats: dict[str, float] = field(default_factory=dict)
    # what the model alone wrote before any fallback (masks left dropped): the paper's Con.-
    model_fills: list[str] = field(default_factory=list)
    masks_left: int = 0  # masked positions the model left to the fallback


class DiffusionDecoder:
    """One fill: the request's chunks, the holes to fill (`asked`), the model and checker."""

    def __init__(self, backend: DiffusionBackend, checker: Checker, chunks: list[str],
                 asked: Sequence[int], settings: DiffusionSettings,
                 cancel: Callable[[], bool] | None = None,
                 progress: Callable[[float, str], None] | None = None) -> None:
        from holefill.check.window import find_window

        self.backend, self.checker, self.settings = backend, checker, settings
        self.cancel, self.progress = cancel, progress
        self.asked = list(asked)
        holes = len(chunks) - 1
        window = find_window(checker.language, chunks)
        self.constraint = Constraint(checker, window, settings.max_check_steps, cancel,
                                     settings.anchored, split=checker.language in SPLITTABLE)
        sites = self.constraint.sites_of(chunks) if settings.constrained else []
        frozen = frozenset(set(range(holes)) - set(self.asked))
        start = settings.hole_tokens
        self.canvas = Canvas(list(chunks), [[MASK] * start for _ in range(holes)], sites,
                             backend.decode, frozen)
        self.encoded = [backend.encode(c) for c in chunks]
        self.empty_id = self._empty_token()
        self.generator = seeded_generator(settings.seed)
        self.steps: list[StepLog] = []
        self.verdicts: dict[tuple, Verdict] = {}
        self.hole_rejected = [0] * holes
        self.hole_placed = [0] * holes
        self.hole_checks: list[list[float]] = [[] for _ in range(holes)]
        self.initial = len(self.canvas.masked())
        self.history: list[Canvas] = [self.canvas]  # every state kept, for the fallback
        self.verified = True
        self.completed_by = "model"
        self.ended_by = "done"

    def _empty_token(self) -> int:
        b = self.backend
        pad = b.tokenizer.pad_token_id
        if pad is not None and pad in b.empty_ids:
            return int(pad)
        return min(b.empty_ids) if b.empty_ids else b.mask_id

    # ------------------------------------------------------------------------- the loop

    def run(self) -> DiffusionOutcome:
        t0 = time.perf_counter()
        model_s0 = self.backend.model_s
        if self.settings.constrained:
            self._check_start()
        budget = self.settings.max_rejections * max(1, len(self.asked))
        while self.canvas.masked():
            self._stop_if_cancelled()
            log = self._step()
            self.steps.append(log)
            self._report()
            if self.settings.constrained and log.placed == 0 and log.grown == 0:
                self.ended_by = "stuck"
                break
            if sum(self.hole_rejected) > budget:
                self.ended_by = "max-rejections"
                break
        texts = None
        model_fills = self.canvas.fills()
        left = len(self.canvas.masked())
        if left:
            texts = self._fallback()
        fills = self.canvas.fills(texts)
        model_s = self.backend.model_s - model_s0
        return DiffusionOutcome(
            [fills[h] for h in self.asked],
            [self._hole_result(h, fills[h], model_s) for h in self.asked],
            self.verified, self._stats(time.perf_counter() - t0, model_s),
            [model_fills[h] for h in self.asked], left)

    def _check_start(self) -> None:
        partial = self.canvas.partial()
        assert partial is not None  # nothing decoded yet
        verdict = self._verdict(partial)
        self._stop_if_cancelled()
        if verdict is Verdict.NO:
            raise NotCompletable(
                f"no filling of the {len(self.canvas.runs)} hole(s) makes this valid "
                f"{self.checker.language}: the text outside the holes has a syntax error "
                "(mark that place as a hole too, or fill without the constraint)")

    def _stop_if_cancelled(self) -> None:
        if self.cancel is not None and self.cancel():
            raise Cancelled("the fill was cancelled")

    def _quota(self) -> int:
        """How many positions this step unmasks: the remaining masks spread evenly over the
        remaining steps (one per step when `steps` is 0)."""
        left = len(self.canvas.masked())
        if self.settings.steps == 0:
            return 1
        steps_left = max(1, self.settings.steps - len(self.steps))
        return max(1, math.ceil(left / steps_left))

    def _step(self) -> StepLog:
        log = StepLog()
        logp, where = self._model()
        masked = self.canvas.masked()
        cands = self._candidates(logp[[where[hs] for hs in masked]])
        keys = self._keys(logp[[where[hs] for hs in masked]], cands)
        heap = [(-keys[i][0], i, 0) for i in range(len(masked)) if cands[i]]
        heapq.heapify(heap)
        quota, taken = self._quota(), 0
        exhausted: list[int] = []
        while heap and taken < quota:
            _, i, r = heapq.heappop(heap)
            (hole, slot), (value, _) = masked[i], cands[i][r]
            if self._accept(hole, slot, value, log):
                self.canvas = self.canvas.with_slot(hole, slot, value)
                self.history.append(self.canvas)
                self.hole_placed[hole] += 1
                log.placed += 1
                taken += 1
                continue
            if r + 1 < len(cands[i]):
                heapq.heappush(heap, (-keys[i][r + 1], i, r + 1))
            else:
                exhausted.append(i)
            self._stop_if_cancelled()
        if self.settings.constrained:
            for i in exhausted:
                log.grown += self._grow(*masked[i])
        return log

    def _accept(self, hole: int, slot: int, value: int, log: StepLog) -> bool:
        if not self.settings.constrained:
            return True
        canvas = self.canvas.with_slot(hole, slot, value)
        if value == EMPTY and canvas.segment_of(hole, slot).masked:
            return True  # the hole stays open with the same text around it: same question
        partial = canvas.partial()
        if partial is None:
            ok = False
        else:
            t0 = time.perf_counter()
            ok = self._answer(self._verdict(partial, _chunk_of(partial, hole, slot)))
            ms = (time.perf_counter() - t0) * 1e3
            log.check_ms += ms
            self.hole_checks[hole].append(ms)
        if not ok:
            log.rejected += 1
            self.hole_rejected[hole] += 1
        return ok

    def _verdict(self, partial: Partial, chunk: int | None = None) -> Verdict:
        """`chunk`: the only chunk that changed since the last state answered YES (the one
        the new token went into); with the constraint's `split`, only the piece around it is
        checked (holefill.check.focus: the other pieces did not change)."""
        key = partial.key()
        got = self.verdicts.get(key)
        if got is None:
            around = None if chunk is None else (chunk, chunk)
            got = self.constraint.verdict(partial.chunks, partial.sites, False, around)
            self.verdicts[key] = got
        return got

    def _answer(self, verdict: Verdict) -> bool:
        if verdict is Verdict.UNKNOWN:  # never read as "no": accept, mark the result
            self.verified = False
            return True
        return verdict is Verdict.YES

    def _grow(self, hole: int, slot: int) -> int:
        """More room for the hole around ``slot`` when it is that hole's last mask (every
        candidate was refused because each would close it); the masks added."""
        s = self.settings
        if self.canvas.segment_of(hole, slot).masked != 1:
            return 0
        extra = min(s.grow_by, s.max_hole_tokens - len(self.canvas.runs[hole]))
        room = self.backend.context_length - self._length()
        extra = min(extra, room)
        if extra <= 0:
            return 0
        self.canvas = self.canvas.grown(hole, slot, extra)
        self.history.append(self.canvas)
        return extra

    # ------------------------------------------------------------------------ the model

    def _length(self) -> int:
        fixed = sum(len(e) for e in self.encoded)
        return len(self.backend.lead_ids) + fixed + sum(len(r) for r in self.canvas.runs)

    def _model(self) -> tuple[torch.Tensor, dict[tuple[int, int], int]]:
        """The model's log-probabilities at every position, and where each slot sits."""
        ids, where = self._layout()
        return self.backend.log_probs(ids), where

    def _layout(self) -> tuple[list[int], dict[tuple[int, int], int]]:
        """The model's input: the chunks' tokens (the first cut from its start and the last
        from its end to fit the context) with the slots in place."""
        b = self.backend
        slots = sum(len(r) for r in self.canvas.runs)
        room = b.context_length - len(b.lead_ids) - slots
        pieces = _fit(self.encoded, room)
        ids = list(b.lead_ids) + pieces[0]
        where: dict[tuple[int, int], int] = {}
        for h, run in enumerate(self.canvas.runs):
            for i, v in enumerate(run):
                where[(h, i)] = len(ids)
                ids.append(b.mask_id if v == MASK else self.empty_id if v == EMPTY else v)
            ids += pieces[h + 1]
        return ids, where

    def _candidates(self, rows: torch.Tensor) -> list[list[tuple[int, float]]]:
        """Per masked position, (value, log-probability) in the order to try them: the best
        tokens (or a sample of them without replacement at a temperature) and "empty" (the
        model's padding and end tokens together)."""
        import torch

        b = self.backend
        rows = rows.clone()
        empty = sorted(b.empty_ids)
        p_empty = (torch.logsumexp(rows[:, empty], dim=-1) if empty
                   else torch.full((rows.shape[0],), -math.inf))
        banned = sorted(b.banned_ids | b.empty_ids)
        rows[:, banned] = -math.inf
        k = min(self.settings.top_k, rows.shape[1])
        if self.settings.temperature > 0:
            uniform = torch.rand(rows.shape, generator=self.generator).clamp_(1e-12, 1.0)
            noisy = rows / self.settings.temperature - torch.log(-torch.log(uniform))
            order = torch.topk(noisy, k, dim=-1).indices
        else:
            order = torch.topk(rows, k, dim=-1).indices
        out = []
        for i in range(rows.shape[0]):
            cand = [(int(t), float(rows[i, t])) for t in order[i] if rows[i, t] > -math.inf]
            pe = float(p_empty[i])
            if pe > -math.inf:
                at = sum(1 for _, lp in cand if lp >= pe) if self.settings.temperature == 0 \
                    else min(len(cand), _rank_of(pe, cand))
                cand.insert(at, (EMPTY, pe))
            out.append(cand[: k + 1])
        return out

    def _keys(self, rows: torch.Tensor,
              cands: list[list[tuple[int, float]]]) -> list[list[float]]:
        """Priority of each candidate across positions: its probability (LLaDA's low
        confidence remasking: the surest positions first), or the position's negative
        entropy (Dream), then the candidate's own probability within the position."""
        import torch

        if self.settings.order == "entropy":
            p = torch.softmax(rows, dim=-1)
            neg_h = (p * torch.log(p.clamp_min(1e-30))).sum(-1)
            return [[float(neg_h[i]) + 1e-6 * lp for _, lp in c] for i, c in enumerate(cands)]
        return [[lp for _, lp in c] for c in cands]

    # ---------------------------------------------------------------------- the fallback

    def _fallback(self) -> dict[tuple[int, int], str] | None:
        """Texts for the masked runs left: the witness, or nothing ("stop", the paper's
        Con.-). The witness of the latest state is tried first; when it does not render to
        a verified text (the renderer may fail on what the proof allows), earlier states
        are tried: the state halfway, then the request itself, whose positions the model
        filled are then given back to the witness."""
        if not self.settings.constrained or self.settings.on_stuck == "stop":
            self.completed_by = "none"
            if self.settings.constrained:
                self.verified = False
            return None
        tries = [self.history[-1], self.history[len(self.history) // 2], self.history[0]]
        for n, state in enumerate(tries):
            if any(state is earlier for earlier in tries[:n]):
                continue
            partial = state.partial()
            fills = None if partial is None else self._witness(partial)
            if partial is not None and fills is not None:
                self.canvas = state
                self.completed_by = "witness"
                return witness_texts(partial, fills)
        self.completed_by = "none"
        self.verified = False
        return None

    def _witness(self, partial: Partial) -> list[str] | None:
        c = self.constraint
        window = c.window
        t0 = time.perf_counter()
        res = self.checker.check(window.apply(partial.chunks), want_witness=True,
                                 max_steps=c.max_steps, cancel=self.cancel,
                                 anchors=window.map_anchors(Anchors(tuple(partial.sites)),
                                                            partial.chunks))
        c.times_ms.append((time.perf_counter() - t0) * 1e3)
        if res.fills is not None and res.stats.get("witness_verified"):
            return res.fills
        return None

    # ----------------------------------------------------------------------- reporting

    def _report(self) -> None:
        if self.progress is None:
            return
        left = len(self.canvas.masked())
        done = max(0, self.initial - left)
        frac = done / max(1, done + left)
        self.progress(min(1.0, frac), f"diffusion step {len(self.steps)}: {left} masked "
                      f"position(s) left")

    def _hole_result(self, hole: int, fill: str, model_s: float) -> HoleResult:
        witness = self.completed_by == "witness" and any(
            v == MASK for v in self.canvas.runs[hole])
        completed = "witness" if witness else (
            "none" if self.completed_by == "none" and any(
                v == MASK for v in self.canvas.runs[hole]) else "model")
        return HoleResult(
            fill=fill, tokens=self.hole_placed[hole], rejected=self.hole_rejected[hole],
            verified=self.verified, ended_by=self.ended_by, completed_by=completed,
            check_ms=list(self.hole_checks[hole]),
            model_s=model_s / max(1, len(self.asked)))

    def _stats(self, total_s: float, model_s: float) -> dict[str, float]:
        tokens = sum(self.hole_placed)
        checks = self.constraint.times_ms
        per_step = [s.check_ms for s in self.steps]
        stats = {
            "holes": float(len(self.asked)),
            "tokens": float(tokens),
            "rejected": float(sum(self.hole_rejected)),
            "checks": float(len(checks)),
            "steps": float(len(self.steps)),
            "grown": float(sum(s.grown for s in self.steps)),
            "model_s": model_s,
            "model_ms_per_token": 1e3 * model_s / tokens if tokens else 0.0,
            "total_s": total_s,
            "witness_holes": float(sum(
                any(v == MASK for v in self.canvas.runs[h]) for h in self.asked)
                if self.completed_by == "witness" else 0),
        }
        if checks:
            qs = statistics.quantiles(checks, n=10) if len(checks) > 1 else [checks[0]] * 9
            stats.update(check_ms_median=statistics.median(checks), check_ms_p90=qs[8],
                         check_ms_total=sum(checks),
                         check_ms_per_token=sum(checks) / max(1, tokens),
                         check_ms_per_step_median=statistics.median(per_step) if per_step
                         else 0.0)
        return stats


def diffuse(backend: DiffusionBackend, chunks: Sequence[str], language: str, *,
            constrained: bool = True, max_new_tokens: int = 64, seed: int | None = 0,
            cancel: Callable[[], bool] | None = None,
            progress: Callable[[float, str], None] | None = None,
            only: Sequence[int] | None = None,
            options: dict[str, Any] | None = None) -> DiffusionOutcome:
    """`Completer.fill` for a diffusion model: every asked hole (all when ``only`` is None;
    the others stay open in every check) at once."""
    settings = diffusion_settings(constrained, max_new_tokens, seed, dict(options or {}))
    checker = Checker.for_language(language)  # LanguageError before any model work
    n = len(chunks) - 1
    asked = sorted(set(range(n) if only is None else only))
    if any(not 0 <= i < n for i in asked):
        raise ValueError(f"hole indices must lie in 0..{n - 1}")
    out = DiffusionDecoder(backend, checker, list(chunks), asked, settings, cancel,
                           progress).run()
    if progress is not None:
        progress(1.0, "done")
    return out


def _rank_of(value: float, cand: list[tuple[int, float]]) -> int:
    return sum(1 for _, lp in cand if lp >= value)


def _fit(encoded: list[list[int]], room: int) -> list[list[int]]:
    """The chunks' tokens cut to ``room`` in all: the first from its start and the last from
    its end (the far context goes first), then the middle ones from their middles."""
    out = [list(e) for e in encoded]
    over = sum(len(e) for e in out) - max(0, room)
    if over <= 0:
        return out
    if len(out) == 1:
        return [out[0][over:]] if over < len(out[0]) else [[]]
    first, last = out[0], out[-1]
    while over > 0 and (first or last):
        if len(first) >= len(last):
            first = first[1:]
        else:
            last = last[:-1]
        over -= 1
    out[0], out[-1] = first, last
    for j in range(1, len(out) - 1):
        if over <= 0:
            break
        cut = min(over, len(out[j]))
        keep = len(out[j]) - cut
        out[j] = out[j][: keep // 2] + out[j][len(out[j]) - (keep - keep // 2):] \
            if keep else []
        over -= cut
    return out


def _chunk_of(partial: Partial, hole: int, slot: int) -> int:
    """The chunk of `partial` that holds slot `slot` of hole `hole` (a slot that holds text or
    was declared empty): the number of the partial's holes before it."""
    return sum(1 for segs in partial.holes if (segs[0].hole, segs[0].start) < (hole, slot))
