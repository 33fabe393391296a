"""Where the model wants to stop and the hole may not close there: the loop ends soon after,
completing the text the model meant to end with, instead of writing on to max_new_tokens.

The candidates come from a scripted proposer (each step's candidates in the model's order),
so that the model's wishes are known; the checks are the real ones, and `ast.parse` judges
the results.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

from holefill import Checker
from holefill.decode.completer import _hole_state, request_checks
from holefill.decode.loop import DecodeSettings, HoleDecoder, HoleResult, Proposal

END = Proposal(key="end", stop=True)


class ScriptedProposer:
    """The candidates of step i are script[i] (the last step's again once it runs out)."""

    model_s = 0.0
    requests = 0
    held = 0

    def __init__(self, script: Sequence[Sequence[Proposal]]) -> None:
        self.script, self.step = script, 0

    def proposals(self) -> Iterable[Proposal]:
        return iter(self.script[min(self.step, len(self.script) - 1)])

    def take(self, proposal: Proposal) -> None:
        self.step += 1

    def stop_probability(self) -> float | None:
        return None


def text(t: str) -> Proposal:
    return Proposal(key=t, text=t)


def decode(chunks: list[str], script: Sequence[Sequence[Proposal]],
           **settings: object) -> HoleResult:
    checker = Checker.for_language("python")
    options = DecodeSettings(**{"max_new_tokens": 40, **settings})  # type: ignore[arg-type]
    (seg, constraint), = request_checks(checker, chunks, options)
    state = _hole_state(seg, 0, ["" for _ in chunks[1:]], [False for _ in chunks[1:]], 0)
    return HoleDecoder(ScriptedProposer(script), constraint, state, "", options, None).run()


BLOCK = ["if ready:\n", "\ndone = True\n"]  # an empty middle leaves the `if` without a body


def test_a_model_that_asks_to_end_where_it_may_not_ends_at_the_first_place_it_may():
    res = decode(BLOCK, [[END, text("    go(")], [text(")")], [text(" +")], [text(" 1")]])
    assert (res.fill, res.ended_by, res.completed_by, res.tokens) == \
        ("    go()", "end", "model", 2)


def test_after_the_grace_the_text_it_wanted_to_end_with_is_completed():
    res = decode(BLOCK, [[text("    x =")], [END, text(" 1 +")], [text(" 2 +")]],
                 stop_grace=3)
    assert (res.ended_by, res.completed_by, res.tokens) == ("refused-end", "witness", 4)
    assert res.fill.startswith("    x =") and not res.fill.startswith("    x = 1 +")
    ast.parse(BLOCK[0] + res.fill + BLOCK[1])


def test_without_a_grace_the_model_writes_on_to_max_new_tokens():
    res = decode(BLOCK, [[END, text("    x")], [text(" +")], [text(" 1")], [text(" +")]],
                 stop_grace=None, max_new_tokens=12)
    assert (res.ended_by, res.tokens) == ("max-tokens", 12)
    ast.parse(BLOCK[0] + res.fill + BLOCK[1])


def test_a_repeat_where_the_hole_may_not_close_ends_the_filling_before_the_repeat():
    chunks = ["def f():\n", "\n"]
    res = decode(chunks, [[text("    return (1,")], [text(" 1,")]])
    assert (res.ended_by, res.completed_by) == ("repetition", "witness")
    assert res.fill.startswith("    return (1, 1,") and " 1, 1, 1," not in res.fill
    assert res.tokens < 12
    ast.parse(chunks[0] + res.fill + chunks[1])
