"""Every stage of a check obeys its budget, deadline and cancellation, and CPython's limits.

Repros from the server's fuzz-and-soak: the step budget bounded only the native core, so
100 adjacent holes took 41 s and 2.3 GB whatever `max_steps` said; the checker said YES
(verified) to programs CPython refuses (more than 200 nested brackets, a 10^4-term
expression). Each now answers UNKNOWN with a reason, never NO and never a false YES.
"""

from __future__ import annotations

import ast

import pytest

from holefill import Checker, Verdict
from holefill.budget import Budget, BudgetExhausted


@pytest.fixture(scope="module")
def checker() -> Checker:
    return Checker.for_language("python")


def test_many_adjacent_holes_stop_at_the_step_budget(checker):
    res = checker.check(["x = "] + [""] * 100 + ["\n"], max_steps=1000)
    assert res.verdict is Verdict.UNKNOWN
    assert "budget" in (res.reason or "")


def test_a_deadline_that_passed_answers_unknown(checker):
    res = checker.check(["def f(x):\n    return ", "\n"], deadline=0.0)
    assert res.verdict is Verdict.UNKNOWN and "time" in (res.reason or "")


def test_cancellation_reaches_the_lexer_with_holes(checker):
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 1  # let the check start, then stop it

    res = checker.check(["x = "] + [""] * 40 + ["\n"], cancel=cancel)
    assert res.verdict is Verdict.UNKNOWN and "cancelled" in (res.reason or "")


@pytest.mark.parametrize(("chunks", "why"), [
    (["x = " + "(" * 250, ")" * 250 + "\n"], "nested brackets"),
    (["x = " + "+".join(["1"] * 10_000) + "\n"], "operators"),
    (["".join("    " * i + "if x:\n" for i in range(120)) + "    " * 120, "\n"],
     "indentation levels"),
])
def test_past_cpythons_limits_the_answer_is_unknown_with_the_reason(checker, chunks, why):
    text = "".join(c + "pass" for c in chunks[:-1]) + chunks[-1]
    with pytest.raises((SyntaxError, RecursionError, MemoryError)):
        ast.parse(text)  # CPython refuses, whatever the grammar says
    res = checker.check(chunks, want_witness=True)
    assert res.verdict is Verdict.UNKNOWN and why in (res.reason or "")
    assert res.fills is None


def test_ordinary_code_is_not_held_to_the_limits(checker):
    deep = "x = " + "(" * 150 + "1" + ")" * 150 + "\n" + "y = " + "+".join(["1"] * 500)
    assert checker.check([deep, "\n"]).verdict is Verdict.YES


def test_a_budget_counts_steps_and_polls_cancel():
    b = Budget(steps=10)
    b.spend(10)
    with pytest.raises(BudgetExhausted):
        b.spend()
    stop = Budget(cancel=lambda: True)
    with pytest.raises(BudgetExhausted, match="cancelled"):
        stop.spend(10_000)


def cancelled_on_the_third_poll() -> Budget:
    polls: list[int] = []

    def cancel() -> bool:
        polls.append(1)
        return len(polls) > 2

    return Budget(cancel=cancel)


@pytest.mark.parametrize("native", [True, False], ids=["c", "python"])
def test_a_cancel_stops_the_lexer_and_the_layout_product_within_a_few_thousand_steps(native):
    """The C lexer and layout product poll the cancel callback while they build (a build
    of 40 adjacent holes is 1.7 million steps; without polls it ran to the end, and the
    server's memory with it)."""
    from holefill.lexing.python_layout import PythonLayoutLexer

    lexer = PythonLayoutLexer(Checker.for_language("python").compiled, native=native)
    lexer.raw.native = native
    budget = cancelled_on_the_third_poll()
    with pytest.raises(BudgetExhausted, match="cancelled"):
        lexer.build(["x = "] + [""] * 40 + ["\n"], budget=budget)
    assert budget.spent < 100_000


@pytest.mark.parametrize("native", [True, False], ids=["c", "python"])
def test_a_cancel_stops_the_layout_product_alone_within_a_few_thousand_steps(native):
    """The same with the raw graph built beforehand: the product's own polls stop it."""
    from holefill.lexing.python_layout import PythonLayoutLexer, indent_unit

    lexer = PythonLayoutLexer(Checker.for_language("python").compiled, native=native)
    chunks = ["x = "] + [""] * 40 + ["\n"]
    raw = lexer.raw.build(chunks)
    budget = cancelled_on_the_third_poll()
    with pytest.raises(BudgetExhausted, match="cancelled"):
        lexer._product(chunks, raw, indent_unit(chunks), budget=budget)
    assert budget.spent < 100_000


def test_a_cancel_raised_inside_a_native_stage_is_raised_once_and_not_kept():
    """What the cancel callback raised comes back once, after the C call, and the poll
    keeps no reference to it: its traceback holds the request's frames (engines and their
    native memory), which stayed alive until a full garbage collection."""
    from holefill.check.core import NativeCancel, lib

    class Stop(Exception):
        pass

    def check() -> bool:
        raise Stop("stop")

    poll = NativeCancel(check)
    assert lib._hf_cancel_trampoline(poll.ctx) == 1  # what a native stage's poll calls
    with pytest.raises(Stop):
        poll.raise_pending()
    assert poll.state[1] is None
    poll.raise_pending()  # nothing left to raise
