"""Every stage of a check obeys its budget, deadline and cancellation, and CPython's limits.

Repros from the server's fuzz-and-soak: the step budget bounded only the native core, so
100 adjacent holes took 41 s and 2.3 GB whatever `max_steps` said; the checker said YES
(verified) to programs CPython refuses (more than 200 nested brackets, a 10^4-term
expression). Each now answers UNKNOWN with a reason, never NO and never a false YES.
"""

from __future__ import annotations

import ast
import threading
import time

import pytest

from holefill import Checker, Verdict
from holefill.budget import Budget, BudgetExhausted
from holefill.datasets import stdlib_modules_text


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


# --- deadlines and cancellation on large files, bounded work per hole (issue 29, part 6) ---

def large_python_file(lines: int, tag: str = "") -> str:
    """Whole standard-library modules that parse, concatenated to at least `lines` lines;
    `tag` ends every column-0 `def`/`class` line with a comment, so that no cached parse of
    an earlier test's text answers for this one."""
    import re

    text = stdlib_modules_text(lines)
    if tag:
        text = re.sub(r"(?m)^((?:async def|def|class) [^\n]*:)$", rf"\1  # {tag}", text)
    return text


@pytest.fixture(scope="module")
def large_cut() -> list[str]:
    """A 100,000-line file with a hole in the middle (an expression statement to finish)."""
    text = large_python_file(100_000)
    mid = text.index("\n", len(text) // 2) + 1
    return [text[:mid] + "x = ", "\n" + text[mid:]]


def test_a_deadline_on_a_100k_line_file_is_kept_by_every_stage(checker, large_cut):
    """The limits scan, the anchors, the closers ahead and the raw graph's spans ran outside
    the deadline: deadline=5 answered after 6.5-33 s, deadline=1 after several seconds."""
    t0 = time.monotonic()
    res = checker.check(large_cut, deadline=1.0)
    elapsed = time.monotonic() - t0
    assert res.verdict is Verdict.UNKNOWN and "time" in (res.reason or "")
    assert elapsed < 3.0, f"deadline 1 s, answered after {elapsed:.1f} s"


def test_a_cancel_from_another_thread_stops_a_check_of_a_100k_line_file(checker, large_cut):
    stop = threading.Event()
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    t0 = time.monotonic()
    try:
        res = checker.check(large_cut, cancel=stop.is_set)
    finally:
        timer.cancel()
    elapsed = time.monotonic() - t0
    assert res.verdict is Verdict.UNKNOWN and "cancelled" in (res.reason or "")
    assert elapsed < 1.8, f"cancelled at 0.3 s, stopped after {elapsed:.1f} s"


ADJACENT = {
    "in brackets": ["x = ("] + [""] * 199 + [")\n"],
    "between statements": ["x = 1\n"] + [""] * 199 + ["y = 2\n"],
    "in a body": ["def f(x):\n    "] + [""] * 199 + ["\n    return x\n"],
}


@pytest.mark.parametrize("chunks", ADJACENT.values(), ids=ADJACENT.keys())
def test_200_adjacent_holes_answer_at_once_as_one_hole(checker, chunks):
    """Two holes with nothing between them are one hole (holefill.check.merge): 200 of them
    took 48 s and 1.6 GB to answer UNKNOWN, or the whole deadline."""
    t0 = time.monotonic()
    res = checker.check(chunks, want_witness=True, deadline=5.0)
    assert time.monotonic() - t0 < 2.0
    assert res.verdict is Verdict.YES and res.fills is not None
    assert len(res.fills) == len(chunks) - 1
    ast.parse("".join(c + f for c, f in zip(chunks, [*res.fills, ""], strict=True)))


@pytest.mark.parametrize("chunks", [
    ["x = (", "", "1 +", "", "", ")\n"],
    ["def f(x):\n    '''doc", "", "'''\n    return ", "", "\n"],
    ["s = 'ab", "", "cd'\nt = 1 # c", "", "\n"],
    ["if x:\n    y = 1\n", "", "    z = 2\n"],
    ["x = 1 +", "", "", "\ny = )\n"],
    ["x = [1,", "", "2", "", "]\n"],
])
def test_merging_adjacent_holes_keeps_every_answer(checker, chunks):
    """The merged check answers as the check of the same text with each run of adjacent
    holes written as one hole (its witness in the run's first hole), also with the
    caller's anchors, which are renumbered."""
    from holefill.check.merge import merge_adjacent_holes

    merged = merge_adjacent_holes(chunks, None).chunks
    assert len(merged) < len(chunks)
    one = checker.check(merged, want_witness=True)
    many = checker.check(chunks, want_witness=True)
    given = checker.check(chunks, anchors=checker.anchors(chunks))
    assert many.verdict is one.verdict is given.verdict
    if one.verdict is Verdict.YES:
        assert many.fills is not None and one.fills is not None
        text = "".join(c + f for c, f in zip(chunks, [*many.fills, ""], strict=True))
        assert text == "".join(c + f for c, f in zip(merged, [*one.fills, ""], strict=True))
        ast.parse(text)


def test_holes_past_the_cap_answer_unknown_with_the_reason(checker):
    from holefill.check.merge import MAX_HOLES

    chunks = ["x = ("] + [" "] * MAX_HOLES + [")\n"]
    t0 = time.monotonic()
    res = checker.check(chunks)
    assert time.monotonic() - t0 < 1.0
    assert res.verdict is Verdict.UNKNOWN and "holes" in (res.reason or "")


def test_the_limits_scan_finds_the_first_limit_a_large_chunk_passes(checker):
    """The array scan of holefill.lexing.python_layout.python_limits on a text long enough
    to take it: brackets deeper than 200 after a long, ordinary file."""
    ordinary = large_python_file(2_000)
    assert checker.lexer.beyond_limits([ordinary, "\n"]) is None
    deep = ordinary + "x = " + "(" * 201 + "1" + ")" * 201 + "\n"
    assert "nested brackets" in (checker.lexer.beyond_limits([deep, "\n"]) or "")


def test_a_fill_of_a_100k_line_file_is_cancelled_while_its_checks_are_set_up(checker):
    """request_checks (windows, segments, anchors) polls the fill's cancel signal: the
    window search alone parsed for 8-20 s, 4.7 s of it in one `ast.parse`."""
    import uuid

    from holefill.decode.completer import request_checks
    from holefill.decode.loop import Cancelled, DecodeSettings

    text = large_python_file(100_000, tag=uuid.uuid4().hex)  # no cached parse helps
    mid = text.index("\n", len(text) // 2) + 1
    stop = threading.Event()
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(Cancelled):
            request_checks(checker, [text[:mid] + "x = ", "\n" + text[mid:]],
                           DecodeSettings(), stop.is_set)
    finally:
        timer.cancel()
    elapsed = time.monotonic() - t0
    assert elapsed < 1.8, f"cancelled at 0.3 s, stopped after {elapsed:.1f} s"
