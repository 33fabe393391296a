"""Python witnesses read like code a person writes (holefill.lexing.witness_style), and are
as many and as valid as the plain ones."""

from __future__ import annotations

import ast
import warnings

import pytest

from holefill import Checker
from holefill.datasets import humaneval_infilling, python_cuts
from holefill.languages import get_language
from holefill.lexing.python_layout import PythonLexer


@pytest.fixture(scope="module")
def readable() -> Checker:
    return Checker.for_language("python")


@pytest.fixture(scope="module")
def plain() -> Checker:
    compiled = get_language("python").compile()
    return Checker(compiled, PythonLexer(compiled, readable=False))


def witness(chk: Checker, before: str, after: str) -> str:
    fills = chk.witness([before, after])
    assert fills is not None
    return fills[0]


def test_an_expression_hole_gets_zero_not_bytes(readable: Checker) -> None:
    assert witness(readable, "def f(t):\n    total = 0\n    total += ",
                   "\n    return total\n") == "0"
    assert witness(readable, "x = ", "") == "0"


def test_a_body_that_needs_a_statement_gets_pass(readable: Checker) -> None:
    # the plain witness was a lone backslash continuation
    assert witness(readable, "def f(x):\n    if x:\n", "\n    return 1\n") == "        pass"
    assert witness(readable, "def f(x):\n    if x", "\n    return 1\n") == ": pass"
    assert witness(readable, "def g", "") == "(): pass"


def test_closing_brackets_and_colons_touch_what_they_close(readable: Checker) -> None:
    assert witness(readable, "for x in range(3", "\n    print(x)\n") == "):"
    assert witness(readable, "print(max(1, 2", "\n") == "))"
    assert witness(readable, 'x = ["abc', "\n") == '"]'


def test_a_condition_is_closed_rather_than_continued_with_a_backslash(
        readable: Checker) -> None:
    fill = witness(readable, "def f(s):\n    while not g(s", "\n        s += 1\n")
    assert fill == "):"


def test_a_block_opens_with_if_not_while(readable: Checker, plain: Checker) -> None:
    # the hole starts the body of `if idx != idx2:`; the text after it is one level deeper
    row = next(r for r in humaneval_infilling("multi-line")
               if r["task_id"] == "MultiLineInfilling/HumanEval/20/L6_L10")
    assert witness(plain, row["prompt"], row["suffix"]) == '                while b"" :\n'
    assert witness(readable, row["prompt"], row["suffix"]) == "                if 0:\n"


def test_a_deeper_line_after_the_hole_gets_a_block_not_a_backslash(
        readable: Checker, plain: Checker) -> None:
    before, after = "def f(x):\n    y = 1\n    ", "\n            return 1\n"
    assert witness(plain, before, after) == "\\"
    assert witness(readable, before, after) == "if 0:"


def test_a_blank_stays_where_the_lexer_needs_it(readable: Checker) -> None:
    # `0.` would be a float: an attribute of a number keeps its blank
    fill = witness(readable, "x = 0", "real\n")
    ast.parse("x = 0" + fill + "real\n")
    assert witness(readable, "y = 1 if x else", "\n") == " 0"


def _parses(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(text)
        except SyntaxError:
            return False
    return True


def _corpus_states() -> list[tuple[str, str]]:
    """Every 4th prefix of the middles of a few real cuts (as the decoder's early ends)."""
    out = []
    rows = humaneval_infilling("multi-line")[::700] + humaneval_infilling("random-span")[::900]
    for row in rows:
        mid = row["canonical_solution"]
        out += [(row["prompt"] + mid[:k], row["suffix"]) for k in range(0, len(mid) + 1, 4)]
    for cut in python_cuts("span", 6, seed=3):
        mid = cut.middles[0]
        out += [(cut.chunks[0] + mid[:k], cut.chunks[1]) for k in range(0, len(mid) + 1, 4)]
    return out


def test_readable_witnesses_are_as_many_as_plain_ones_and_all_parse(
        readable: Checker, plain: Checker) -> None:
    states = _corpus_states()
    assert len(states) > 100
    got = 0
    for before, after in states:
        old = plain.witness([before, after])
        new = readable.witness([before, after])
        assert (new is None) == (old is None), (before[-40:], after[:40])
        if new is not None:
            got += 1
            assert _parses(before + new[0] + after), (before[-40:], new, after[:40])
    assert got > 100
