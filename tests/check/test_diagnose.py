"""`first_unrepairable` names the first place of a text with holes that no filling repairs.

Data: small JSON, Python and C++ texts written here, each with a known first bad character;
a longer JSON text for budgets that run out. Errors after a hole sit on a later line than
the hole, where no string opened in the hole can reach them.
"""

from __future__ import annotations

import threading

import pytest

from holefill import Checker
from holefill.check.diagnose import Place, first_unrepairable

M = "<|hole|>"


def place(language: str, text: str, **kwargs: object) -> Place | None:
    return first_unrepairable(Checker.for_language(language), text.split(M), hole_text=M,
                              **kwargs)  # type: ignore[arg-type]


def test_a_stray_closing_bracket_before_the_hole_is_the_place() -> None:
    p = place("json", "]" + M)
    assert p is not None and (p.line, p.col, p.at_end) == (0, 0, False)


def test_python_syntax_error_before_the_hole_is_named_by_line_and_column() -> None:
    text = "def f(x):\n    y = = 1\n    return " + M + "\n"
    p = place("python", text)
    assert p is not None and (p.line, p.col) == (1, 8) and str(p) == "line 2, column 9"
    assert text[p.offset] == "=" and not p.at_end


def test_the_first_unrepairable_place_can_lie_after_a_hole() -> None:
    """The hole may insert a colon or a bracket, but nothing turns `"b" 1` into JSON."""
    text = '{"a": ' + M + ',\n "b" 1}\n'
    p = place("json", text)
    assert p is not None and (p.line, p.col) == (1, 5)
    assert (p.chunk, p.chunk_offset) == (1, 7) and text[p.offset] == "1"


def test_columns_count_every_hole_marker_before_the_place() -> None:
    text = "[" + M + ", " + M + ",\n 1 2]"
    p = place("json", text)
    assert p is not None and (p.line, p.col, p.chunk) == (1, 3, 2) and text[p.offset] == "2"


def test_a_text_that_ends_too_early_is_placed_at_its_end() -> None:
    text = "[1, " + M + ", 3"
    p = place("json", text)
    assert p is not None and p.at_end and p.offset == len(text) and p.col == len(text)


def test_columns_are_code_points_and_crlf_is_one_line_break() -> None:
    p = place("json", '["\u00fc\U0001f600" 1]' + M)
    assert p is not None and (p.line, p.col) == (0, 6)  # UTF-16 would say 7
    p = place("python", "x = 1\r\ny = = 2\r\n" + M + "\n")
    assert p is not None and (p.line, p.col) == (1, 4)


def test_the_text_of_each_hole_may_differ() -> None:
    chunks = ["[", ", ", ",\n 1 2]"]
    p = first_unrepairable(Checker.for_language("json"), chunks, hole_text=["", "???"])
    assert p is not None and p.offset == len("[, ???,\n 1 ") and p.col == 3
    with pytest.raises(ValueError):
        first_unrepairable(Checker.for_language("json"), chunks, hole_text=["x"])


def test_a_completable_text_has_no_place() -> None:
    assert place("json", '{"a": ' + M + "}") is None
    assert place("python", "def f(x):\n    return " + M + "\n") is None


def test_a_place_found_far_into_a_long_text_is_exact() -> None:
    """Past the first probe (256 characters) the search gallops, then bisects."""
    body = "".join(f'  "k{i}": [{i}, {i + 1}],\n' for i in range(200))
    text = "{\n" + body + '  "bad" "x",\n  "z": ' + M + "\n}\n"
    p = place("json", text)
    assert p is not None and p.line == 201 and text[p.offset:].startswith('"x"')


BUDGET_TEXT = ('{"a": [' + M + "],\n" + "".join(f' "k{i}": [{i}, {{"x": {i}}}],\n'
                                                     for i in range(30)) + ' "b" 1}\n')


def test_unknown_answers_never_report_a_place() -> None:
    """A budget too small for the whole-text check answers UNKNOWN: no place at all."""
    assert place("json", BUDGET_TEXT, max_steps=50) is None


def test_with_any_budget_the_place_is_the_true_one_or_none() -> None:
    """Smaller budgets make some probes UNKNOWN; the search then stops rather than guess."""
    truth = place("json", BUDGET_TEXT)
    assert truth is not None and BUDGET_TEXT[truth.offset] == "1" and truth.line == 31
    seen = set()
    for budget in (30, 100, 300, 1_000, 3_000, 10_000, 30_000, 100_000):
        got = place("json", BUDGET_TEXT, max_steps=budget)
        assert got is None or got == truth, budget
        seen.add(got is None)
    assert seen == {True, False}  # the sweep saw both outcomes


def test_a_cancelled_search_reports_no_place() -> None:
    stop = threading.Event()
    stop.set()
    assert place("json", "]" + M, cancel=stop.is_set) is None
