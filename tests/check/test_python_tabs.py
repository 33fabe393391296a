"""Tabs mixed with spaces in indentation, as CPython's tokenizer reads them: every width is
compared twice, with tabs to the next multiple of 8 and with tabs as 1 column, and where the
two disagree CPython raises TabError. Whole texts and holes are judged by `ast.parse`, never
by our grammar."""

from __future__ import annotations

import ast
import itertools

import pytest

from holefill import Checker, Verdict
from holefill.lexing.python_layout import (
    SPACE,
    blank_spec,
    indent_width,
    line_at,
    pack,
    reaches,
    spec_join,
)


def compiles(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:  # TabError and IndentationError included
        return False
    return True


@pytest.fixture(scope="module")
def checker() -> Checker:
    return Checker.for_language("python")


TAB = pack(8, 1)


def test_a_width_counts_tabs_to_8_and_as_1():
    assert indent_width("\t") == TAB
    assert indent_width("    \t") == pack(8, 5)
    assert indent_width("\t ") == pack(9, 2)
    assert indent_width(" " * 8) == 8 * SPACE == pack(8, 8)
    assert indent_width("\t\f\t") == TAB  # a form feed resets both counts


def test_an_indent_is_deeper_in_both_counts():
    assert line_at((0, TAB), pack(9, 2), None) == [(("I",), (0, TAB, pack(9, 2)))]
    assert line_at((0, TAB), 8 * SPACE, None) == []  # deeper with tabs as 1 only
    assert line_at((0, 4 * SPACE), pack(8, 1), None) == []  # deeper with tabs to 8 only


def test_a_dedent_lands_on_a_level_equal_in_both_counts():
    stack = (0, TAB, pack(16, 2))
    assert line_at(stack, TAB, None) == [(("D",), (0, TAB))]
    assert line_at(stack, 8 * SPACE, None) == []


def test_reach_specs_are_exact_where_they_claim_to_be():
    """`reaches` against every line a hole's blanks (up to 6) can write between fixed
    blanks before and after it: equal where the spec is exact, a superset elsewhere."""
    holes = [""] + ["".join(p) for n in range(1, 7) for p in itertools.product(" \t", repeat=n)]
    for after in ["", "  ", "\t", "\t\t", " \t", "\t ", "       \t"]:
        for before in ["", " ", "\t", "  \t"]:
            code = spec_join(indent_width(before), blank_spec(after))
            lines = {indent_width(before + x + after) for x in holes}
            exact = code >> 23 != 0
            for col, alt in itertools.product(range(40), range(9)):
                if alt > len(before) + len(after) + 6:
                    continue
                got = reaches(code, pack(col, alt))
                assert got == (pack(col, alt) in lines) if exact else got or (
                    pack(col, alt) not in lines), (before, after, col, alt)


def blocks(blanks: list[str]):
    """`if x:` and two lines under it, each indented by one of `blanks`, the first of them
    a statement or a block head."""
    for first, second in itertools.product(blanks, repeat=2):
        for head in ("a", "if y:"):
            yield f"if x:\n{first}{head}\n{second}b\n"


def test_whole_texts_with_mixed_indentation_agree_with_cpython(checker):
    blanks = [""] + ["".join(p) for n in (1, 2) for p in itertools.product(" \t\f", repeat=n)]
    wrong = [text for text in blocks(blanks)
             if (checker.check([text]).verdict is Verdict.YES) != compiles(text)]
    assert wrong == []


# Fillings tried for the truth of a hole: blanks, line breaks, a block head.
BLANKS = [""] + ["".join(p) for n in (1, 2) for p in itertools.product(" \t", repeat=n)]
FILLS = [a + b for a in ("", "\n") for b in [*BLANKS, "\t\t", "    ", "        "]]
FILLS += [a + "if z:\n" + b for a in ("", "\n", "\t", "\n\t")
          for b in ("", "\t", "\t\t", "    ", "\t ")]
HEADS = ["if x:\n\ta\n", "if x:\n\tif y:\n\t\ta\n", "if x:\n    a\n", "if x:\n  \ta\n"]


@pytest.mark.parametrize("head", HEADS)
def test_a_hole_in_the_indentation_after_a_block_agrees_with_cpython(checker, head):
    """The hole lies in the blanks of the line after `head` (fixed blanks on both sides of
    it): YES exactly when one of FILLS or the witness makes CPython accept, and the witness
    always does."""
    wrong = []
    for before, after in itertools.product(BLANKS, repeat=2):
        for tail in ("b\n", "b\nc\n", "b\n\tc\n"):
            pre, post = head + before, after + tail
            res = checker.check([pre, post], want_witness=True)
            witness_ok = res.fills is not None and compiles(pre + res.fills[0] + post)
            truth = witness_ok or any(compiles(pre + f + post) for f in FILLS)
            if (res.verdict is Verdict.YES) != truth or (truth and not witness_ok):
                wrong.append((pre, post, res.verdict.value, res.fills))
    assert wrong == []


@pytest.mark.parametrize("chunks", [
    ["if x:\n\ta\n", "b\n"],
    ["if x:\n\ta\n ", "b\n"],
    ["if x:\n\tif y:\n\t\ta\n", " \tb\n"],
    ["class A:\n\tdef f(self):\n\t\t", "\n\treturn 1\n"],
    ["class A:\n\tdef f(self):\n\t\treturn 1\n", "\n"],
])
def test_a_witness_in_a_tab_indented_block_is_accepted_by_cpython(checker, chunks):
    res = checker.check(chunks, want_witness=True)
    assert res.verdict is Verdict.YES and res.fills is not None
    assert compiles(chunks[0] + res.fills[0] + chunks[1]), res.fills


@pytest.mark.parametrize("chunks", [
    ["x = 1", "\nif x:\n\ta\n        b\n"],
    ["if x:\n\ta\n        b\n", ""],
    ["if x:\n\ta\n\t\\\n  b\n", ""],
])
def test_a_tab_error_no_filling_reaches_is_a_no(checker, chunks):
    assert checker.check(chunks).verdict is Verdict.NO
