"""ReplayBackend: known text replayed through `Completer.fill`, the user's path, token by token.

The real middle of a cut comes back as it was; a text the loop must refuse is recorded as a
refusal (where, and which token), and the hole is then completed by the loop's fallback,
which `ast.parse` accepts.
"""

from __future__ import annotations

import ast

import pytest

pytest.importorskip("transformers")

from holefill.decode.completer import Completer  # noqa: E402
from holefill.decode.replay import END, TOKEN, ReplayBackend  # noqa: E402

CHUNKS = ["def f(x):\n    if x:\n        return 1\n    ", ":\n        return 2\n",
          "\nprint(f(", "))\n"]


@pytest.fixture(scope="module")
def replay() -> tuple[ReplayBackend, Completer]:
    backend = ReplayBackend()
    return backend, Completer(backend=backend)


def fill(replay, middles: list[str]):
    backend, completer = replay
    backend.replay(middles)
    res = completer.fill(CHUNKS, "python", max_new_tokens=24, repetition_guard=False)
    return res, backend.refusals


def test_the_real_middles_come_back_unchanged_and_unrefused(replay):
    res, refusals = fill(replay, ["elif x > 1", "", "1"])
    assert (res.fills, refusals) == (["elif x > 1", "", "1"], [])
    assert all(h.completed_by == "model" for h in res.holes)


def test_a_refused_token_is_recorded_and_the_fallback_completes_the_hole(replay):
    res, refusals = fill(replay, ["else))", "", "1"])
    assert [(r.hole, r.kind, r.at) for r in refusals] == [(0, TOKEN, 4)]
    assert res.holes[0].completed_by == "witness" and res.fills[0].startswith("else")
    ast.parse(res.text(CHUNKS))


def test_an_end_where_the_hole_may_not_close_is_recorded(replay):
    res, refusals = fill(replay, ["else:\n        pass\n    else", "", "1"])
    assert [(r.hole, r.kind) for r in refusals] == [(0, END)]
    ast.parse(res.text(CHUNKS))


CLASS = ["class C:\n    a = 1\n\n    def f(self, x):\n        y = x\n        return ",
         "\n\n    def g(self):\n        return 2\n\n    def h(self, z):\n        if z:\n"
         "            return ", "\n        return 0\n\n\nprint(C().f(1))\n"]


def test_real_middles_in_one_class_come_back_through_its_indented_segments(replay):
    """Two holes in two methods of one class: two segments (a `class _:` wrapper before the
    second), and the real middles come back unchanged and unrefused."""
    from holefill.check.checker import Checker
    from holefill.decode.completer import request_checks
    from holefill.decode.loop import DecodeSettings

    parts = request_checks(Checker.for_language("python"), CLASS, DecodeSettings())
    assert [(list(s.holes), s.prefix) for s, _ in parts] == [([0], ""), ([1], "class _:\n")]
    backend, completer = replay
    backend.replay(["y + 1", "z * 2"])
    res = completer.fill(CLASS, "python", max_new_tokens=24, repetition_guard=False)
    assert (res.fills, backend.refusals, res.verified) == (["y + 1", "z * 2"], [], True)
