"""The final check of a finished fill (holefill.check.final) and the witnesses the checker
returns: nothing is called verified, and no witness is returned, unless the whole document
passed the exact check; CPython's word counts over our grammar's on the lines a fill wrote."""

from __future__ import annotations

import pytest

from holefill.check.checker import Checker, Verdict
from holefill.check.final import filled, final_check, moved_anchors

PY = Checker.for_language("python")


def test_a_fill_that_turns_fixed_code_into_a_string_is_refused() -> None:
    chunks = ["x = 1\n", "\ny = 2\n", "\n"]
    got = final_check(PY, chunks, {0: "'''", 1: "'''"})
    assert got.verdict is Verdict.NO and "reads" in (got.reason or "")
    assert final_check(PY, chunks, {0: "z = 3", 1: ""}).verified


def test_with_a_hole_left_open_the_fixed_text_keeps_its_reading() -> None:
    """Only the first hole filled: the anchors of the text after it move into the merged
    chunk, so `y = 2` may not become string content whatever the open hole gets."""
    chunks = ["x = 1\n", "\ny = 2\n", "\n"]
    assert final_check(PY, chunks, {0: "'''"}).verdict is Verdict.NO
    assert final_check(PY, chunks, {0: "z = 3"}).verified
    merged, where = filled(chunks, {0: "z = 3"})
    assert merged == ["x = 1\nz = 3\ny = 2\n", "\n"] and where == [0, 0, 1]
    sites = moved_anchors(chunks, {0: "z = 3"}, PY.anchors(chunks)).sites
    assert [(s.chunk, s.base) for s in sites] == [(0, len("x = 1\nz = 3")), (1, 0)]


def test_cpython_refusing_a_line_a_fill_wrote_is_no_whatever_the_grammar_says() -> None:
    """Our grammar checks an f-string field's expression only for its shape (the header of
    grammars/python.lark); CPython refuses a bare lambda there."""
    chunks = ['s = f"{', '}"\n']
    assert PY.check([chunks[0] + "lambda x: x" + chunks[1]]).verdict is Verdict.YES
    got = final_check(PY, chunks, {0: "lambda x: x"})
    assert got.verdict is Verdict.NO and "CPython refuses line 1" in (got.reason or "")


def test_syntax_this_interpreter_cannot_read_outside_the_fill_goes_to_our_check() -> None:
    """A 3.12 `type` statement read by 3.11 is the file's own syntax, not the fill's."""
    got = final_check(PY, ["type X = int\nx = ", "\n"], {0: "1"})
    assert got.verified
    assert final_check(PY, ["type X = int\nx = ", "\n"], {0: ""}).verdict is Verdict.NO


def test_the_files_own_newer_syntax_after_the_fill_is_left_to_our_check() -> None:
    """On 3.11 CPython stops at the `type` line after the filled one; that line fails alone
    too, so it is the file's, and our check decides (YES). A user line that fails only after
    the fill stays CPython's NO (a space-indented line the fill wrote before a tab one)."""
    assert final_check(PY, ["x = ", "\ntype X = int\n"], {0: "1"}).verified
    got = final_check(PY, ["if x:\n", "    d = 0\n\tb = 2\n"], {0: "    a = 1\n"})
    assert got.verdict is Verdict.NO and "line 4" in (got.reason or "")


def test_a_nul_byte_in_a_python_fill_is_refused() -> None:
    assert final_check(PY, ["x = '", "'\n"], {0: "\0"}).verdict is Verdict.NO


@pytest.mark.parametrize(("language", "chunks", "good", "bad"), [
    ("json", ['{"a": ', "}"], "1", ""),
    ("c", ["int x = ", ";\n"], "1", ""),
    ("cpp", ["int f() { return ", "; }\n"], "0", "}"),
])
def test_every_language_gets_the_exact_verdict(language: str, chunks: list[str], good: str,
                                               bad: str) -> None:
    checker = Checker.for_language(language)
    assert final_check(checker, chunks, {0: good}).verified
    assert final_check(checker, chunks, {0: bad}).verdict is Verdict.NO


def test_a_final_check_that_cannot_finish_is_unknown_with_its_reason() -> None:
    checker = Checker.for_language("c")
    got = final_check(checker, ["int x = ", ";\n", "\n"], {0: "1"}, cancel=lambda: True)
    assert got.verdict is Verdict.UNKNOWN and "did not finish" in (got.reason or "")


def test_a_witness_whose_renderings_all_fail_the_whole_check_is_not_returned(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The renderer is the part that can be wrong (its text, not the proof, is what users
    get): when no rendering passes, the answer is UNKNOWN with the reason, not the first
    rendering (a C comment witness was returned that way and printed by `holefill check`)."""
    checker = Checker.for_language("python")
    real = checker.lexer.render_witness

    def broken(chunks, nfa, leaves, attempt):  # every rendering closes a bracket too many
        fills = real(chunks, nfa, leaves, attempt)
        return None if fills is None else [f + ")" for f in fills]

    monkeypatch.setattr(checker.lexer, "render_witness", broken)
    res = checker.check(["x = (", ")\n"], want_witness=True)
    assert res.verdict is Verdict.UNKNOWN and res.fills is None
    assert "rendering" in (res.reason or "")
    monkeypatch.setattr(checker.lexer, "render_witness", real)
    res = checker.check(["x = (", ")\n"], want_witness=True)
    assert res.verdict is Verdict.YES and res.fills is not None

