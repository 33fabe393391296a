"""A differential sweep of the decoding loop on C++: real middles are never refused (issue 29).

Cuts of 2-3 holes in HumanEval-X's C++ solutions (holefill.bench.fuzz.corpus) are replayed
through `Completer.fill` with a `ReplayBackend` (holefill.decode.replay): the user's path,
segments, windows and the incremental engine included, proposing each hole's real middle token
by token. Where the real middles keep the reading of the fixed text (`Checker.keeps_reading`),
the document they make is the user's own file, which the exact check accepts, so every fast
path must take every token and every end: a refusal is a fast path that disagrees with the
exact check. Cuts whose middles re-read the fixed text are left out (anchored semantics
refuses them by design, holefill.lexing.anchors).

Half of the cuts lie in a file's first lines (its `#include` and `using` lines, where a
directive read as one lexeme spans holes), and a hole starts at a line's end now and then
(where a user types a new line). The cuts that found issue 29 are replayed first. The slow
variant sweeps more cuts (`pytest -m slow`).
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("transformers")

from holefill import Checker  # noqa: E402
from holefill.bench.fuzz import corpus  # noqa: E402
from holefill.datasets import Cut, cut, random_spans  # noqa: E402
from holefill.decode.completer import Completer  # noqa: E402
from holefill.decode.loop import NotCompletable  # noqa: E402
from holefill.decode.replay import ReplayBackend  # noqa: E402

# the early stops that end a filling where it may end are off, so the whole middle is offered
# (as in benchmarks/replay_loop.py)
SETTINGS = {"repetition_guard": False, "stop_at_right_closer": False,
            "stop_at_blank_line": False}
HEAD = 200  # characters of a file's first lines, where its directives are
# issue 29: the engine refused the first token of the last hole after a directive that the
# earlier holes' texts had closed (benchmarks/replay_loop.py --language cpp --cuts 600 --seed 1)
FOUND = [("CPP/157", [(64, 72), (73, 81), (94, 143)]),
         ("CPP/41", [(5, 12), (29, 66), (75, 79)]),
         ("CPP/41", [(3, 28), (34, 92), (106, 124)]),
         ("CPP/97", [(17, 32), (69, 90), (94, 143)])]


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    return dict(corpus("cpp", 1, None, 300))


@pytest.fixture(scope="module")
def replay() -> tuple[ReplayBackend, Completer, Checker]:
    backend = ReplayBackend()
    return backend, Completer(backend=backend), Checker.for_language("cpp")


def spans_of(text: str, rng: random.Random) -> list[tuple[int, int]] | None:
    """2-3 spans, in the first lines or anywhere; some moved to start at a line's end."""
    k = rng.randint(2, 3)
    head = rng.random() < 0.5
    spans = random_spans(text[:HEAD] if head else text, k, rng, 1, 40 if head else 60)
    if spans is None:
        return None
    out: list[tuple[int, int]] = []
    for a, b in spans:
        floor = out[-1][1] + 1 if out else 0
        line_end = text.rfind("\n", floor, a + 1)
        if rng.random() < 0.4 and line_end > floor:
            a = line_end
        out.append((a, b))
    return out


def sweep_cuts(texts: dict[str, str], n: int, seed: int) -> list[Cut]:
    rng = random.Random(f"replay-sweep:cpp:{seed}")
    names = sorted(texts)
    out: list[Cut] = []
    while len(out) < n:
        name = rng.choice(names)
        spans = spans_of(texts[name], rng)
        if spans is not None:
            out.append(cut(name, texts[name], spans))
    return out


def refusals(replay, c: Cut, structured: bool = True) -> list[object]:
    """What the loop refused of the real middles of `c` (nothing, when they keep the reading
    (and with `structured` the structure) and every fast path agrees with the exact
    check)."""
    backend, completer, _ = replay
    backend.replay(c.middles)
    longest = max(len(backend.encode(m)) for m in c.middles)
    try:
        completer.fill(list(c.chunks), "cpp", max_new_tokens=longest + 8, **SETTINGS,
                       structured=structured)
    except NotCompletable as exc:
        return [f"request refused: {exc}"[:200]]
    return list(backend.refusals)


def sweep(replay, cuts: list[Cut], structured: bool = True) -> tuple[int, list[tuple]]:
    """(cuts that keep the reading (and the structure), their refusals with the cut)."""
    checker = replay[2]
    kept, bad = 0, []
    for c in cuts:
        keeps = (checker.keeps_place(c.chunks, c.middles) if structured
                 else checker.keeps_reading(c.chunks, c.middles))
        if not keeps:
            continue
        kept += 1
        got = refusals(replay, c, structured)
        if got:
            bad.append((c.name, c.chunks, c.middles, got))
    return kept, bad


def test_the_cuts_of_issue_29_replay_without_a_refusal(texts, replay):
    """(Under the lexical rule: their real middles break lines the user's code goes on.)"""
    cuts = [cut(name, texts[name], spans) for name, spans in FOUND]
    kept, bad = sweep(replay, cuts, structured=False)
    assert (kept, bad) == (len(FOUND), [])


def test_real_middles_of_a_sample_of_cpp_cuts_are_never_refused(texts, replay):
    kept, bad = sweep(replay, sweep_cuts(texts, 26, seed=4), structured=False)
    assert kept >= 13 and bad == []


def test_real_middles_that_keep_the_structure_are_never_refused(texts, replay):
    """Issue 30: with the structure rule (the default), the loop refuses no token of a real
    middle that keeps the reading and the structure of the text around it."""
    kept, bad = sweep(replay, sweep_cuts(texts, 400, seed=5))
    assert kept >= 8 and bad == []


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_real_middles_of_many_cpp_cuts_are_never_refused(texts, replay, seed):
    kept, bad = sweep(replay, sweep_cuts(texts, 200, seed))
    assert kept >= 100 and bad == []
