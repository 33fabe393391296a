"""The constrained decoding loop for one hole (DESIGN §7; diffusion paper Alg. 1).

The model proposes; the checker answers whether the document, with the proposal appended to the
hole's text and the hole still open, can still be completed to a valid program. The first
candidate (in model order) that keeps it completable is taken; end-of-middle is taken only when
closing the hole keeps it completable. Because completability is the loop's invariant, a witness
filling always exists when the model stalls or runs out of tokens.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from holefill.budget import Budget
from holefill.check.checker import DEFAULT_MAX_STEPS, Checker, Verdict
from holefill.check.focus import Focus, focus
from holefill.check.incremental import IncrementalCheck
from holefill.check.structure import PLAIN_STRUCTURE, FillJudge, HoleRule, Structure
from holefill.check.window import Window, find_window
from holefill.errors import HolefillError
from holefill.lexing.anchors import Anchors, Site

if TYPE_CHECKING:
    import torch

    from holefill.decode.backend import Detokenizer, KVSession

ON_STUCK = ("witness", "best-stop", "stop")
MAX_HELD_TOKENS = 3


class Cancelled(HolefillError):
    """The caller asked the fill to stop; raised between two tokens."""


class NotCompletable(HolefillError):
    """The text outside the holes cannot be completed to a valid program by any filling."""


@dataclass(frozen=True)
class DecodeSettings:
    constrained: bool = True
    max_new_tokens: int = 64
    top_k: int = 8  # candidates tried per step before the loop counts as stuck
    temperature: float = 0.0  # 0: greedy
    top_p: float = 1.0
    seed: int | None = 0
    # when the model stops without closing the hole, or no candidate passes: complete with the
    # witness, cut at the best valid stopping point, or stop as is (Con.- of the paper)
    on_stuck: str = "witness"
    heal: bool = True
    # False: one line; the filling ends at the end of its line where closing is allowed there,
    # and a token that would go on to the next line instead is refused (the witness, the last
    # resort, may still break the line)
    multiline: bool = True
    max_check_steps: int = DEFAULT_MAX_STEPS
    hole_placeholder: str = "<TODO>"  # how later holes appear to the model
    max_prompt_tokens: int | None = None
    # stay in the block: a new line indented less than this ends the filling where closing
    # is allowed (None: no limit)
    block_indent: int | None = None
    # each hole keeps to its place (Fill holes): it stays in its own block (block_indent from
    # the hole's line: its indentation, or the hole's column when the hole sits in it), and on
    # its line when fixed text follows it there (multiline off for that hole)
    keep_to_place: bool = False
    # text right after the hole that the filling may supply and then replace (closers an
    # editor auto-inserted, like `)` or `"`); HoleResult.replaced says whether it did
    replaceable: str = ""
    # keep the reading of the text outside the holes (holefill.lexing.anchors); False checks
    # the plain grammar semantics (for comparison in benchmarks)
    anchored: bool = True
    # keep the structure of the user's code too: brackets keep their partners, a line with
    # the user's code after the hole stays one line (holefill.check.structure): each token's
    # judge, the witness and the final check; False (for now the default): the reading only
    structured: bool = True
    # check with the incremental engine (holefill.check.incremental) where it applies;
    # False: the classic check for every token (for comparison in benchmarks)
    incremental: bool = True
    # check each hole against its segment of a Python document only (top-level definitions
    # between holes split it, holefill.check.segments); False: against the whole window
    segmented: bool = True
    # cut points inside blocks (holefill.check.segments: indented cuts) and engines that
    # read an indented window only (holefill.check.incremental); False: the top level only,
    # as before (the baseline of benchmarks/large_classes.py)
    in_blocks: bool = True
    # check each token against the fixed text between the open holes around its hole only
    # (holefill.check.focus: exact for Python, C and C++); False: up to the segment's end
    split_at_holes: bool = True
    # stop at a blank line after a complete statement (where closing is allowed): a
    # multi-line suggestion at a line end ends with the block of code it wrote
    stop_at_blank_line: bool = False
    # stop where the model starts repeating itself (the same line twice in a row, or a short
    # pattern over and over), cut back before the repeat (completed by on_stuck when the
    # hole may not close there: a loop does not end by itself)
    repetition_guard: bool = True
    # when the model's first choice is to end the hole where it may not end yet, the filling
    # ends at the first place within this many more tokens where it may; failing that, the
    # text the model wanted to end with is completed by on_stuck (None: the model writes on
    # up to max_new_tokens, ending only where it asks to)
    stop_grace: int | None = 8
    # stop before a closing bracket that would close a bracket opened before the hole when
    # the text after the hole begins with that same closer (the model re-closing what the
    # user's code already closes), where closing is allowed there
    stop_at_right_closer: bool = True

    def __post_init__(self) -> None:
        if self.on_stuck not in ON_STUCK:
            raise ValueError(f"on_stuck must be one of {', '.join(ON_STUCK)}")
        if self.max_new_tokens < 0 or self.top_k < 1:
            raise ValueError("max_new_tokens must be >= 0 and top_k >= 1")
        if self.stop_grace is not None and self.stop_grace < 0:
            raise ValueError("stop_grace must be >= 0 or None")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError("temperature must be >= 0 and top_p in (0, 1]")


@dataclass
class HoleResult:
    fill: str
    tokens: int = 0
    rejected: int = 0
    verified: bool = True
    # end, line-end, blank-line, repetition, closer, max-tokens, stuck, empty-budget,
    # refused-end (the model asked to end where the hole may not close, and did not end
    # within DecodeSettings.stop_grace tokens)
    ended_by: str = "end"
    completed_by: str = "model"  # model, witness, best-stop, none
    check_ms: list[float] = field(default_factory=list)
    model_s: float = 0.0
    replaced: int = 0  # characters after the hole the filling replaces (see replaceable)
    requests: int = 0  # requests to an inference server (0 in process)
    # steps where a server's candidates may not be the model's own distribution after the
    # generated tokens: a text-only server re-tokenized the accepted text, the generated
    # token was a near tie with another (float differences may break it either way), or an
    # end token was read from an empty token string (see holefill.decode.remote); 0 in
    # process
    inexact: int = 0


# Checks in a row that ran out of budget with the same number of chunks: after this many,
# checks of states with that many chunks answer UNKNOWN at once until a hole closes (or one
# of them gets an answer). Forty one-line holes in one window cost seconds per check and
# answered UNKNOWN token after token; decoding then runs at the model's speed, unverified.
GIVE_UP_AFTER = 2


class VerdictMemo:
    """The classic checks' definite answers (YES / NO) for recent texts, across requests.

    A classic check is a function of the text it reads and the anchors it keeps; only its
    budget and cancel signal can change an answer, and those only to UNKNOWN, which is never
    kept. Typing in one hole leaves the pieces between later holes as they were
    (holefill.check.focus), so the next request finds their answers here instead of lexing
    them again: with three holes in a 10,000-line C++ file that was most of its preparation."""

    def __init__(self, size: int = 64, chars: int = 16_000_000) -> None:
        """At most `size` answers, whose texts hold at most `chars` characters in all (the
        keys keep the texts: answers are exact, never a hash's)."""
        self.size, self.chars = size, chars
        self._answers: OrderedDict[tuple, Verdict] = OrderedDict()
        self._held = 0  # characters of the texts in the keys
        self._lock = threading.Lock()  # the server checks on worker threads

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: tuple) -> Verdict | None:
        with self._lock:
            got = self._answers.get(key)
            if got is not None:
                self._answers.move_to_end(key)
            return got

    def put(self, key: tuple, verdict: Verdict) -> None:
        """Keeps `verdict` for `key` = (checker, texts, anchors) unless it is UNKNOWN."""
        size = sum(map(len, key[1]))
        if verdict is Verdict.UNKNOWN or size > self.chars:
            return
        with self._lock:
            if key not in self._answers:
                self._held += size
            self._answers[key] = verdict
            while len(self._answers) > self.size or self._held > self.chars:
                old, _ = self._answers.popitem(last=False)
                self._held -= sum(map(len, old[1]))


class Constraint:
    """Completability checks on the whole document state, run on its window.

    Every check keeps the reading of the user's fixed text: the anchors are those of the
    document as the request found it (generated text is hole content, so it must not move
    them), passed as sites with each check (`HoleState` keeps them where its text is).

    With `split` (languages where an open hole splits the document, holefill.check.focus), a
    check that says which chunks lie next to the hole being filled (`around`) looks at that
    piece only, between the open holes around it, with a window and an engine of its own
    (`engine_for(piece chunks, window)`); the request's first check, on the whole document,
    answers for the other pieces, which do not change while this hole is filled."""

    def __init__(self, checker: Checker, window: Window, max_steps: int,
                 cancel: Callable[[], bool] | None, anchored: bool = True,
                 engine: IncrementalCheck | None = None, split: bool = False,
                 engine_for: Callable[[list[str], Window], IncrementalCheck | None] | None = None,
                 memo: VerdictMemo | None = None) -> None:
        self.checker, self.window, self.max_steps, self.cancel = checker, window, max_steps, cancel
        self.anchored = anchored
        self.engine = engine  # the incremental engine, for checks of the first open hole
        self.split, self.engine_for = split, engine_for
        self.memo = memo  # classic answers of recent requests (VerdictMemo)
        self.times_ms: list[float] = []
        self.classic = 0  # checks the engine left to the classic check
        self.skipped = 0  # checks answered UNKNOWN at once (GIVE_UP_AFTER)
        self.unknown_reason: str | None = None  # why the last UNKNOWN was one
        self._unknowns: dict[int, int] = {}  # UNKNOWNs in a row, by number of chunks
        self._windows: dict[tuple[int, int, int], Window] = {}  # by (chunks, lo, hi)
        self._engines: dict[int, IncrementalCheck | None] = {}  # pieces from the start

    def sites_of(self, chunks: list[str]) -> list[Site]:
        """The anchor sites of the request's document (before any filling): one per chunk
        after a hole, at its start."""
        if not self.anchored:
            return []
        return list(self.checker.anchors(self.window.apply(chunks)).sites)

    def verdict(self, chunks: list[str], sites: Sequence[Site], incremental: bool = True,
                around: tuple[int, int] | None = None,
                structure: Structure = PLAIN_STRUCTURE) -> Verdict:
        """`incremental`: the hole being filled is the first open one (the engine's case).
        `around`: the chunks lo..hi next to the hole being filled (lo, lo + 1 while it is
        open; lo, lo once it closed in chunk lo), or None to check the whole document.
        `structure`: the rules of the open holes of `chunks` (holefill.check.structure)."""
        n = len(chunks)
        if self._unknowns.get(n, 0) >= GIVE_UP_AFTER:
            self.skipped += 1
            if "in a row" not in (self.unknown_reason or ""):
                self.unknown_reason = (f"{GIVE_UP_AFTER} checks in a row answered unknown, "
                                       f"the last: {self.unknown_reason}")
            return Verdict.UNKNOWN
        t0 = time.perf_counter()
        if around is None and self.split and n >= 3:
            got = self._by_pieces(chunks, sites, structure)
        else:
            got = self._piece_verdict(chunks, sites, incremental, around, structure)
        self.times_ms.append((time.perf_counter() - t0) * 1e3)
        self._unknowns[n] = self._unknowns.get(n, 0) + 1 if got is Verdict.UNKNOWN else 0
        return got

    def _piece_verdict(self, chunks: list[str], sites: Sequence[Site], incremental: bool,
                       around: tuple[int, int] | None,
                       structure: Structure = PLAIN_STRUCTURE) -> Verdict:
        piece = self._piece(chunks, sites, around)
        if piece is None:
            return self._verdict(chunks, sites, self.window, self.engine if incremental else None,
                                 structure)
        window, engine = self._view(len(chunks), piece)
        return self._verdict(piece.chunks, piece.sites, window, engine,
                             structure.piece(piece.lo, piece.hi, len(chunks)))

    def _by_pieces(self, chunks: list[str], sites: Sequence[Site],
                   structure: Structure = PLAIN_STRUCTURE) -> Verdict:
        """The whole text as the conjunction of its pieces (holefill.check.focus): the first
        hole's piece (whose engine its tokens then reuse) and each later chunk between its
        holes; NO as soon as one piece is NO, UNKNOWN if one is and none is NO."""
        got = self._piece_verdict(chunks, sites, True, (0, 1), structure)
        for j in range(2, len(chunks)):
            if got is Verdict.NO:
                break
            one = self._piece_verdict(chunks, sites, False, (j, j), structure)
            got = one if one is not Verdict.YES else got
        if got is Verdict.NO:
            # A piece's window can misread what the whole text allows (a hole inside a
            # directive line, holefill.check.window_brace): ask the whole text, and if it is
            # not NO, check this request without pieces.
            whole = self._verdict(chunks, sites, self.window, self.engine, structure)
            if whole is not Verdict.NO:
                self.split = False
            return whole
        return got

    def _piece(self, chunks: list[str], sites: Sequence[Site],
               around: tuple[int, int] | None) -> Focus | None:
        if around is None or not self.split or len(chunks) < 3:
            return None
        piece = focus(chunks, sites, *around)
        return piece if len(piece.chunks) < len(chunks) else None

    def _view(self, n: int, piece: Focus) -> tuple[Window, IncrementalCheck | None]:
        """The window and engine of a piece (found at its first check, like the request's);
        only a piece that starts with the document's first chunk has an engine."""
        key = (n, piece.lo, piece.hi)
        window = self._windows.get(key)
        if window is None:
            window = self._windows[key] = find_window(self.checker.language, piece.chunks)
        if piece.shift or self.engine_for is None:
            return window, None
        if n not in self._engines:
            for old in [m for m in self._engines if m > n]:  # holes before closed: moved on
                del self._engines[old]
            self._engines[n] = self.engine_for(piece.chunks, window)
        return window, self._engines[n]

    def _verdict(self, chunks: list[str], sites: Sequence[Site], window: Window,
                 engine: IncrementalCheck | None,
                 structure: Structure = PLAIN_STRUCTURE) -> Verdict:
        if engine is not None:
            got = engine.verdict(chunks, sites, Budget(self.max_steps, None, self.cancel),
                                 structure)
            if got is not None and got is not Verdict.UNKNOWN:
                return got
            self.classic += 1
        anchors = window.map_anchors(Anchors(tuple(sites)), chunks)
        text = window.apply(chunks)
        shaped = structure.shifted(len(window.prefix) - window.head)
        key = (self.checker, tuple(text), anchors, shaped)
        got = self.memo.get(key) if self.memo is not None else None
        if got is None:
            res = self.checker.check(text, max_steps=self.max_steps, cancel=self.cancel,
                                     anchors=anchors, structure=shaped)
            got = res.verdict
            if got is Verdict.UNKNOWN:
                self.unknown_reason = res.reason
            if self.memo is not None:
                self.memo.put(key, got)
        return got

    def witness(self, chunks: list[str], sites: Sequence[Site], hole: int,
                structure: Structure = PLAIN_STRUCTURE) -> str | None:
        """A verified shortest filling of hole number ``hole`` of ``chunks``, or None. When
        the window's `class _:` head cannot take the text typed so far (an `else:` after a
        dedent, which the engine allows), the window that starts where the wide engine's left
        starts is tried too (exact at its head, slower: its left is longer). With `split`,
        only the piece around the hole is completed (the rest is completable, see the class
        docstring)."""
        view = self.window, self.engine
        piece = self._piece(chunks, sites, (hole, hole + 1))
        if piece is not None:
            view = self._view(len(chunks), piece)
            structure = structure.piece(piece.lo, piece.hi, len(chunks))
            chunks, sites, hole = piece.chunks, piece.sites, hole - piece.lo + piece.shift
        for window in self._witness_windows(*view):
            t0 = time.perf_counter()
            res = self.checker.check(window.apply(chunks), want_witness=True,
                                     max_steps=self.max_steps, cancel=self.cancel,
                                     anchors=window.map_anchors(Anchors(tuple(sites)), chunks),
                                     structure=structure.shifted(len(window.prefix)
                                                                 - window.head))
            self.times_ms.append((time.perf_counter() - t0) * 1e3)
            if (res.fills is not None and res.stats.get("witness_verified")
                    and self._fits(chunks, hole, res.fills[hole])):
                return res.fills[hole]
        return None

    def _fits(self, chunks: list[str], hole: int, fill: str) -> bool:
        """Whether the text the window verified a witness in is also completable as the whole
        text (the other holes still open): a window's tail, closed by `pass` lines, may take
        a block head that the clauses it cut off refuse (`if` before the user's `finally:`).
        Where no hole is left in a Python text, CPython judges it."""
        filled = [*chunks[:hole], chunks[hole] + fill + chunks[hole + 1], *chunks[hole + 2:]]
        if len(filled) == 1 and self.checker.language == "python":
            from holefill.check.window import syntax_error

            # no hole left: CPython decides (our f-string fields are an approximation)
            return syntax_error(filled[0]) is None
        got = self.checker.check(filled, max_steps=self.max_steps, cancel=self.cancel,
                                 anchored=False).verdict
        return got is not Verdict.NO

    @staticmethod
    def _witness_windows(window: Window, engine: IncrementalCheck | None) -> list[Window]:
        out = [window]
        if engine is not None:
            plain = Window(engine.wide().left_start, window.tail, "", window.suffix)
            if plain != window:
                out.append(plain)
        if Window() not in out:
            out.append(Window())  # the whole text: exact, the slowest
        return out


@dataclass
class HoleState:
    """The document around the hole being filled: the chunks before it (holes left open lie
    between them; the last one ends at this hole, without the healed characters) and the
    chunks after it (the first one follows this hole), with the anchor sites of the user's
    text in each (`left_sites` numbered by chunk of `left`, `after_sites` by chunk of
    `after`)."""

    left: list[str]
    after: list[str]
    left_sites: list[Site] = field(default_factory=list)
    after_sites: list[Site] = field(default_factory=list)
    # the structure of the user's text (holefill.check.structure): the rules of the open
    # holes of `open` (those left of this hole, this hole, those after it); None: none kept
    rules: tuple[HoleRule, ...] | None = None
    healed: str = ""  # the user's characters before the hole that the filling writes again

    @property
    def rule(self) -> HoleRule | None:
        return None if self.rules is None else self.rules[len(self.left) - 1]

    def closed_structure(self) -> Structure:
        """The structure of `closed(text)`: this hole's rule was judged on its text."""
        if self.rules is None:
            return PLAIN_STRUCTURE
        k = len(self.left) - 1
        return Structure(self.rules[:k] + self.rules[k + 1:])

    def open_structure(self) -> Structure:
        """The structure of `open(text)`: this hole's region starts where the text does."""
        if self.rules is None:
            return PLAIN_STRUCTURE
        k = len(self.left) - 1
        return Structure(self.rules, tuple(len(self.left[-1]) if j == k else None
                                           for j in range(len(self.rules))))

    def open(self, text: str) -> list[str]:
        return [*self.left[:-1], self.left[-1] + text, *self.after]

    @property
    def around(self) -> tuple[int, int]:
        """The chunks of `open` next to this hole (holefill.check.focus)."""
        k = len(self.left) - 1
        return k, k + 1

    @property
    def merged(self) -> tuple[int, int]:
        """The chunk of `closed` in which this hole closed."""
        k = len(self.left) - 1
        return k, k

    def open_sites(self) -> list[Site]:
        n = len(self.left)
        return [*self.left_sites, *(s.moved(n + s.chunk, s.base) for s in self.after_sites)]

    def closed(self, text: str, drop: int = 0) -> list[str]:
        """The chunks with this hole closed after ``text``; ``drop`` characters of the text
        after the hole are replaced (closers the editor inserted, which the text supplies)."""
        return [*self.left[:-1], self.left[-1] + text + self.after[0][drop:], *self.after[1:]]

    def closed_sites(self, text: str, drop: int = 0) -> list[Site]:
        """The text after the closed hole keeps its anchors inside the merged chunk (the
        replaced closers count as the site's first characters, now written by the text)."""
        n = len(self.left)
        merged = len(self.left[-1]) + len(text) - drop
        out = list(self.left_sites)
        for s in self.after_sites:
            out.append(s.moved(n - 1, merged + s.base) if s.chunk == 0
                       else s.moved(n - 1 + s.chunk, s.base))
        return out


@dataclass(frozen=True)
class Proposal:
    """One candidate next token, as the loop sees it: the text it adds to the filling and
    whether that text is complete (False: bytes of an unfinished UTF-8 character, held
    until the rest arrives). ``key`` is what its `Proposer` needs to take it (a token id in
    process, a token of a server's answer remotely)."""

    key: object
    text: str = ""
    complete: bool = True
    stop: bool = False  # end-of-middle: taking it closes the hole


class Proposer(Protocol):
    """Where the loop's candidates come from: a model in this process, or an inference
    server. The loop asks for the candidates of the next position in the order to try them
    (an iterator, so a source may fetch more only when the first are refused), then takes
    one; every check stays in the loop, through the same `Constraint`."""

    @property
    def model_s(self) -> float:
        """Time spent computing candidates (the model, or waiting for a server)."""
        ...

    @property
    def requests(self) -> int:
        """Requests sent to an inference server (0 in process)."""
        ...

    def proposals(self) -> Iterable[Proposal]: ...

    def take(self, proposal: Proposal) -> None: ...

    @property
    def held(self) -> int:
        """Taken tokens whose bytes wait for the rest of a character."""
        ...

    def stop_probability(self) -> float | None:
        """How much the model wants to end the middle here (best-stop mode), if known."""
        ...


class LocalProposer:
    """Candidates from a model in this process: the top-k of its next-token distribution
    (special tokens other than the stops masked), in `candidate_order`; taking one runs the
    model one step on the kept KV cache."""

    def __init__(self, session: KVSession, detok: Detokenizer, logp: torch.Tensor,
                 settings: DecodeSettings, generator: torch.Generator | None) -> None:
        self.session, self.detok, self.logp = session, detok, logp
        self.settings, self.generator = settings, generator
        self.stop_ids = session.backend.stop_ids
        self.banned = session.backend.banned_ids
        self.requests = 0
        self._masked = False

    @property
    def model_s(self) -> float:
        return self.session.model_s

    @property
    def held(self) -> int:
        return self.detok.held

    def _logp(self) -> torch.Tensor:
        if not self._masked:
            if self.banned.numel():
                self.logp[self.banned] = -math.inf
            self._masked = True
        return self.logp

    def proposals(self) -> Iterator[Proposal]:
        for token in candidate_order(self._logp(), self.settings, self.generator):
            if token in self.stop_ids:
                yield Proposal(token, stop=True)
            else:
                text, complete = self.detok.peek(token)
                yield Proposal(token, text, complete)

    def take(self, proposal: Proposal) -> None:
        token = int(proposal.key)  # type: ignore[call-overload]
        self.detok.push(token)
        self.logp = self.session.step(token)
        self._masked = False

    def stop_probability(self) -> float | None:
        if self.detok.holding:
            return None
        logp = self._logp()
        return sum(math.exp(float(logp[i])) for i in self.stop_ids if i < logp.shape[0])


def seeded_generator(seed: int | None) -> torch.Generator:
    """A torch generator for sampling: seeded, or from the system's entropy (None)."""
    import torch

    gen = torch.Generator()
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(seed)
    return gen


def candidate_order(logp: torch.Tensor, settings: DecodeSettings,
                    generator: torch.Generator | None) -> list[int]:
    """Token ids in the order to try them: greedy by probability, or a sample without
    replacement from the nucleus (Gumbel top-k) followed by the rest of the top k."""
    import torch

    k = min(settings.top_k, logp.shape[0])
    top = torch.topk(logp, k)
    order = [int(i) for i, v in zip(top.indices, top.values, strict=True) if v > -math.inf]
    if settings.temperature == 0 or not order:
        return order
    scaled = logp / settings.temperature
    probs = torch.softmax(scaled, dim=-1)
    sorted_p, sorted_i = torch.sort(probs, descending=True)
    inside = int(torch.searchsorted(torch.cumsum(sorted_p, 0), settings.top_p).item()) + 1
    nucleus = sorted_i[:max(1, min(inside, k))]
    uniform = torch.rand(nucleus.shape[0], generator=generator).clamp_(1e-12, 1.0)
    keys = scaled[nucleus] - torch.log(-torch.log(uniform))
    sampled = [int(nucleus[j]) for j in torch.argsort(keys, descending=True)]
    taken = set(sampled)
    return sampled + [i for i in order if i not in taken]


class HoleDecoder:
    """Fills one hole: the loop over tokens, then the fallback when the model did not close.

    The candidates come from a `Proposer` (a model in this process, or an inference
    server); the checks, the stops and the fallback are the same for every source."""

    def __init__(self, proposer: Proposer, constraint: Constraint | None, state: HoleState,
                 heal: str, settings: DecodeSettings, cancel: Callable[[], bool] | None,
                 on_token: Callable[[int], None] | None = None) -> None:
        self.proposer, self.constraint = proposer, constraint
        self.state, self.heal, self.settings = state, heal, settings
        self.cancel, self.on_token = cancel, on_token
        self.text = ""  # generated so far, healed characters included
        self.accepted: list[str] = [""]  # the text after each accepted step
        self.best_stops: list[tuple[float, str]] = []
        # the text when the model first asked to end where the hole may not close, and the
        # number of tokens then (DecodeSettings.stop_grace)
        self.refused_end: tuple[str, int] | None = None
        self.result = HoleResult(fill="")
        self.judge: FillJudge | None = None  # the structure rule on this hole's text
        rule = state.rule
        if rule is not None and constraint is not None:
            chk = constraint.checker
            self.judge = FillJudge(chk.lexer.reference, chk.brackets,
                                   state.left[-1] + state.healed, rule)

    def run(self) -> HoleResult:
        res = self.result
        model_s0, requests0 = self.proposer.model_s, self.proposer.requests
        checks0 = len(self.constraint.times_ms) if self.constraint is not None else 0
        ended = "max-tokens" if self.settings.max_new_tokens > 0 else "empty-budget"
        try:
            for _ in range(self.settings.max_new_tokens):
                if self.cancel is not None and self.cancel():
                    raise Cancelled("the fill was cancelled")
                self._note_stop()
                outcome = self._choose(self.proposer.proposals())
                if outcome is None:
                    ended = "stuck"
                    break
                proposal, finished = outcome
                if finished is not None:
                    ended = finished
                    break
                res.tokens += 1
                if self.on_token is not None:
                    self.on_token(res.tokens)
                self.proposer.take(proposal)
                if self.refused_end is not None and self.settings.stop_grace is not None:
                    if self._may_close(self.text):  # where the model wanted to be: done
                        ended = "end"
                        break
                    if self._grace_over():
                        ended = "refused-end"
                        break
        finally:
            res.model_s = self.proposer.model_s - model_s0
            res.requests = self.proposer.requests - requests0
        res.ended_by = "repetition" if ended == REPEATED else ended
        if ended in STOPPED:
            res.fill = self.text[len(self.heal):]
        else:
            res.fill = self._fallback()
        if self.constraint is not None:  # every check of this hole, the fallback's included
            res.check_ms = self.constraint.times_ms[checks0:]
        return res

    # --------------------------------------------------------------------------- one step

    def _choose(self, proposals: Iterable[Proposal]) -> tuple[Proposal, str | None] | None:
        """The first acceptable candidate and how it ends the hole (None: it does not);
        None when stuck."""
        for rank, proposal in enumerate(proposals):
            if proposal.stop:
                if self._may_close(self.text):
                    return proposal, "end"
                if rank == 0 and self.refused_end is None and not self.proposer.held:
                    self.refused_end = (self.text, self.result.tokens)
            else:
                step = self._try_text(proposal)
                if step != "reject":
                    return proposal, (None if step == "continue" else step)
            self.result.rejected += 1
        return None

    def _grace_over(self) -> bool:
        """The model asked to end stop_grace tokens ago and no place since may end the
        filling: its text then is what the fallback completes."""
        assert self.refused_end is not None and self.settings.stop_grace is not None
        text, tokens = self.refused_end
        if self.result.tokens - tokens < self.settings.stop_grace:
            return False
        self.text = text
        return True

    def _try_text(self, proposal: Proposal) -> str:
        """"continue" when the proposal was taken, a stop ("line-end", "blank-line",
        "repetition") when the filling ended at a valid stopping point at or before the
        token, "reject" otherwise. Bytes of an incomplete character are taken unchecked: the
        check happens when the character completes."""
        delta, complete = proposal.text, proposal.complete
        if not complete and self.proposer.held >= MAX_HELD_TOKENS:
            return "reject"  # no UTF-8 character takes this many pieces: invalid bytes
        new = self.text + delta
        if "\ufffd" in delta or not _heal_consistent(new, self.heal):
            # U+FFFD is what invalid UTF-8 decodes to: never code anyone wrote
            return "reject"
        stop = self._stop_before(new, delta)
        if stop is not None:
            self.text = stop
            return "line-end"
        stop = self._right_closer_stop(new, delta)
        if stop is not None:
            self.text = stop
            return "closer"
        if not self.settings.multiline and "\n" in new[len(self.heal):]:
            return "reject"  # one line was asked for, and it cannot end here: another token
        if (complete and self.judge is not None and len(new) >= len(self.heal)
                and not self.judge.may_grow(new[len(self.heal):])):
            return "reject"  # it breaks the user's brackets or line (holefill.check.structure)
        if complete and delta and len(new) > len(self.heal) and not self._may_open(new):
            return "reject"
        self.text = new
        self.accepted.append(new)
        if self._supplies_replaceable(new):
            return "line-end"
        for kind, cut in self._shape_stops(new, delta):
            if self._may_close(cut):
                self.text = cut
                return kind
            if kind == "repetition":  # a loop does not end by itself: complete the text before
                self.text = cut
                return REPEATED
        return "continue"

    def _shape_stops(self, new: str, delta: str) -> list[tuple[str, str]]:
        """Where the filling should end by its shape: at a blank line it just wrote (after a
        complete statement: closing must be allowed there), or before the model repeats
        itself."""
        out = []
        body = new[len(self.heal):]
        if self.settings.stop_at_blank_line and "\n" in delta:
            blank = _BLANK_LINE.search(body)
            if blank is not None and blank.end() > len(body) - len(delta):
                out.append(("blank-line", new[: len(self.heal) + blank.start() + 1]))
        if self.settings.repetition_guard:
            cut = repetition_cut(body)
            if cut is not None:
                out.append(("repetition", new[: len(self.heal) + cut]))
        return out

    def _stop_before(self, new: str, delta: str) -> str | None:
        """A stopping point inside the new text that ends the filling: the end of the line in
        single-line mode, the line break before a line that leaves the block."""
        if not self.settings.multiline and "\n" in delta:
            line = new[: len(self.text) + delta.index("\n")]
            if self._may_close(line):
                return line
        indent = self.settings.block_indent
        if indent is not None and "\n" in new:
            nl = new.rfind("\n")
            body = new[nl + 1:]
            code = body.lstrip(" \t")
            width = len(body) - len(code)
            if code and width < indent and nl + 1 + width >= len(self.text):
                for cut in (new[:nl], new[: nl + 1]):
                    if self._may_close(cut):
                        return cut
        return None

    def _right_closer_stop(self, new: str, delta: str) -> str | None:
        """The text before a closer the token writes that the text after the hole already
        writes (`"count": n}` before the user's `}`), when closing is allowed there."""
        right = self.state.after[0]
        rep = self.settings.replaceable
        if not self.settings.stop_at_right_closer or (rep and right.startswith(rep)):
            return None
        body = new[len(self.heal):]
        at = right_closer_echo(body, max(0, len(body) - len(delta)), right)
        if at is None:
            return None
        cut = body[:at]
        cut = cut.rstrip() if right[: len(right) - len(right.lstrip())].count("\n") else \
            cut.rstrip(" \t")
        cut = self.heal + cut
        return cut if self._may_close(cut) else None

    def _supplies_replaceable(self, text: str) -> bool:
        rep = self.settings.replaceable
        if not rep or not text.endswith(rep) or len(text) - len(rep) < len(self.heal):
            return False
        if self.constraint is not None:
            verdict = self.constraint.verdict(self.state.closed(text, drop=len(rep)),
                                              self.state.closed_sites(text, drop=len(rep)),
                                              len(self.state.left) == 1, self.state.merged,
                                              self.state.closed_structure())
            if not self._answer(verdict):
                return False
        self.result.replaced = len(rep)
        return True

    def _may_open(self, text: str) -> bool:
        if self.constraint is None:
            return True
        return self._answer(self.constraint.verdict(self.state.open(text),
                                                    self.state.open_sites(),
                                                    len(self.state.left) == 1, self.state.around,
                                                    self.state.open_structure()))

    def _may_close(self, text: str) -> bool:
        if len(text) < len(self.heal):
            return False
        if self.constraint is None:
            return True
        if self.judge is not None and not self.judge.may_end(text[len(self.heal):]):
            return False
        return self._answer(self.constraint.verdict(self.state.closed(text),
                                                    self.state.closed_sites(text),
                                                    len(self.state.left) == 1, self.state.merged,
                                                    self.state.closed_structure()))

    def _answer(self, verdict: Verdict) -> bool:
        if verdict is Verdict.UNKNOWN:  # never read as "no": accept, mark the result
            self.result.verified = False
            return True
        return verdict is Verdict.YES

    def _note_stop(self) -> None:
        """In best-stop mode, remember how much the model wanted to stop where it may."""
        if self.settings.on_stuck != "best-stop" or self.constraint is None:
            return
        if self.proposer.held or not self._may_close(self.text):
            return
        p = self.proposer.stop_probability()
        if p is not None:
            self.best_stops.append((p, self.text))

    # --------------------------------------------------------------------------- fallback

    def _fallback(self) -> str:
        """The filling when the model did not close the hole itself."""
        res = self.result
        text = self.text if len(self.text) >= len(self.heal) else self.heal
        if self.constraint is None or self.settings.on_stuck == "stop":
            res.completed_by = "none"
            return text[len(self.heal):]
        if self.settings.on_stuck == "best-stop" and self.best_stops:
            res.completed_by = "best-stop"
            best = max(self.best_stops, key=lambda s: (s[0], len(s[1])))
            return best[1][len(self.heal):]
        # the invariant says a filling exists; the latest state whose witness renders wins
        for start in self._witness_starts(text):
            tail = self.constraint.witness(self.state.open(start), self.state.open_sites(),
                                           len(self.state.left) - 1,
                                           self.state.open_structure())
            if tail is not None:
                res.completed_by = "witness"
                return (start + tail)[len(self.heal):]
        res.completed_by = "none"
        res.verified = False
        return text[len(self.heal):]

    def _witness_starts(self, text: str) -> list[str]:
        starts = [text]
        healed = [t for t in self.accepted if len(t) >= len(self.heal)]
        if len(healed) > 2:
            starts.append(healed[len(healed) // 2])
        starts.append(self.heal)
        return list(dict.fromkeys(starts))


# The ways a filling ends with its text kept as written (others go to the fallback).
STOPPED = ("end", "line-end", "blank-line", "repetition", "closer")
# The model repeats itself where the hole may not close: the text before the repeat goes to
# the fallback (reported as ended by "repetition").
REPEATED = "repeated"

_BLANK_LINE = re.compile(r"\n[ \t]*\n")
# A short pattern written again and again (`, 0, 0, 0, ...` or `((((((((`): 8 times or more
# and 24 characters (tables of zeros in real code stay below it more often than not).
_REPEATED = re.compile(r"(.{1,12}?)\1{7,}$", re.DOTALL)
# A longer piece written four times in a row (`"max": "max", ` again and again).
_REPEATED_LONG = re.compile(r"(.{13,48}?)\1{3,}$", re.DOTALL)
MIN_REPEATED_LINE = 4  # non-blank characters a line needs before its copy counts


def repetition_cut(text: str) -> int | None:
    """Where to cut `text` when its end repeats itself, or None: after the first of two
    equal lines in a row (the model copies the line it just wrote; lines of a closing
    bracket or two do not count), or after the first copy of a short pattern repeated
    eight times or more at the end, or of a longer one (up to 48 characters) four times."""
    lines = text.split("\n")
    if len(lines) >= 3:  # two complete lines before the one being written
        a, b = lines[-3], lines[-2]
        if len(a.strip()) >= MIN_REPEATED_LINE and a == b:
            return len("\n".join(lines[:-2]))
    m = _REPEATED.search(text)
    if m is not None and len(m.group(0)) >= 24 and m.group(1).strip():
        return m.start() + len(m.group(1))
    m = _REPEATED_LONG.search(text[-4 * 48:])
    if m is not None and m.group(1).strip():
        return len(text) - len(m.group(0)) + len(m.group(1))
    return None


_CLOSER_OF = {"(": ")", "[": "]", "{": "}"}
_QUOTES = "\"'`"


def right_closer_echo(body: str, start: int, right: str) -> int | None:
    """Where, at or after `start`, `body` first writes a closer that closes a bracket opened
    before it (none of its own brackets are open) when the text after the hole `right` begins
    (after blanks) with that same closer; None otherwise, or once the body closed an outer
    bracket before `start`. Quoted text on one line is skipped (a rough reading: this only
    chooses where to stop, and the check decides whether stopping there is allowed)."""
    first = right.lstrip()
    if not first or first[0] not in _CLOSER_OF.values():
        return None
    stack: list[str] = []
    quote, escaped = "", False
    for i, ch in enumerate(body):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch in (quote, "\n"):
                quote = ""
        elif ch in _QUOTES:
            quote = ch
        elif ch in _CLOSER_OF:
            stack.append(_CLOSER_OF[ch])
        elif ch in _CLOSER_OF.values():
            if stack and stack[-1] == ch:
                stack.pop()
            elif i >= start and not stack and ch == first[0]:
                return i
            else:
                return None
    return None


def _heal_consistent(text: str, heal: str) -> bool:
    """While the healed characters are not yet reproduced, the text must stay on them."""
    n = min(len(text), len(heal))
    return text[:n] == heal[:n]
