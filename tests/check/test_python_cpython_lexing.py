"""Python read as CPython's tokenizer reads it (issue 29, part 3), at the level of holes:
line breaks that are a lone `\\r`, NUL characters, identifier characters. Each case is judged
by CPython's `compile()` of the text with its real filling, never by our grammar; a YES must
come with a witness that CPython compiles."""

from __future__ import annotations

import warnings

import pytest

from holefill import Checker, Verdict
from holefill.lexing.python_layout import SPACE, indent_unit


@pytest.fixture(scope="module")
def checker() -> Checker:
    return Checker.for_language("python")


def compiles(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, "<f>", "exec")
        except (SyntaxError, ValueError):
            return False
    return True


def assert_yes_with_compiling_witness(checker: Checker, chunks: list[str]) -> None:
    res = checker.check(chunks, want_witness=True)
    assert res.verdict is Verdict.YES, chunks
    fills = res.fills or []
    text = "".join(c + (fills[i] if i < len(fills) else "") for i, c in enumerate(chunks))
    assert compiles(text), repr(text)


# Cuts of CR-only files: (text before the hole, its real filling, text after). The strict
# mode's unit came from the widths after "\n" only, so a CR-only chunk after the hole showed
# one width (its first line's) and the unit refused the file's other levels.
CR_CUTS = [
    ("def f():\r", "    x = 1\r    \r ", "   y = 2\r"),
    ("def f():\r   ", " if x:\r     ", "   y = 2\r    return x\r"),
    ("def f():\r ", "   x = 1\r    \r ", "   y = 2\r"),
]


@pytest.mark.parametrize(("before", "fill", "after"), CR_CUTS)
@pytest.mark.parametrize("nl", ["\r", "\n", "\r\n"])
def test_a_cut_of_a_file_with_any_line_break_is_completable(checker, before, fill, after, nl):
    before, fill, after = (s.replace("\r", nl) for s in (before, fill, after))
    assert compiles(before + fill + after)
    assert_yes_with_compiling_witness(checker, [before, after])


def test_the_indentation_unit_reads_lines_after_a_lone_cr():
    assert indent_unit(["def f():\r", "   x = 1\r    y = 2\r"]) is None
    assert indent_unit(["def f():\r    x = 1\r        y = 2\r"]) == 4 * SPACE


# ---------------------------------------------------------------------------- NUL


@pytest.mark.parametrize("chunks", [
    ["x = 1\x00", "\n"],
    ["x = '", "\x00'\n"],
    ["x = '\x00", "'\n"],
    ["# ", "\x00\n"],
    ["x = '''", "\x00"],
    ["x = 1\n", "\ny = '\x00'\n"],
])
def test_a_nul_anywhere_in_the_fixed_text_is_no(checker, chunks):
    assert checker.completable(chunks) is Verdict.NO


@pytest.mark.parametrize("chunks", [["x = '", "'\n"], ["x = b'", "'\n"], ["# ", "\n"],
                                    ["x = r'\\", "'\n"], ["x = '''", ""], ["f(", ""]])
def test_no_witness_holds_a_nul(checker, chunks):
    res = checker.check(chunks, want_witness=True)
    assert res.verdict is Verdict.YES
    assert all("\x00" not in f for f in res.fills or [])


# ---------------------------------------------------------------------------- names


@pytest.mark.parametrize(("chunks", "fill"), [
    (["def f\u2014", "():\n    pass\n"], "x"),
    (["\u00b7", " = 1\n"], "a"),
    (["x = a\u309b", "\n"], "b"),
])
def test_a_name_with_a_character_cpython_refuses_is_no(checker, chunks, fill):
    assert not compiles(fill.join(chunks))
    assert checker.completable(chunks) is Verdict.NO


@pytest.mark.parametrize("chunks", [["def f\u00b7", "():\n    pass\n"], ["\u2118", " = 1\n"],
                                    ["x\u0300 = ", "\n"], ["\ufb01", " = 2\n"]])
def test_a_name_with_xid_characters_is_yes(checker, chunks):
    assert_yes_with_compiling_witness(checker, chunks)
