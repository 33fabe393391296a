"""The text outside the holes keeps its reading (holefill.lexing.anchors), on real code.

Repros of the fills that stayed valid by swallowing the user's code: the standard library's
textwrap.py with two lines removed (the plain-semantics witness turns 225 lines into one
bytes literal), the CLI's example, a mid-line cursor whose plain witness comments out the
rest of the line; and the places where the user's own reading must stay open (inside a
string, a comment or a docstring being written). CPython's tokenizer and `ast.parse` judge.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from holefill import Checker, Verdict
from holefill.bench.kept import python_tokens_kept
from holefill.languages import DEFAULT_HOLE_MARKER, split_holes
from holefill.lexing.anchors import closed

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def checker() -> Checker:
    return Checker.for_language("python")


def defs(text: str) -> list[str]:
    return [n.name for n in ast.walk(ast.parse(text))
            if isinstance(n, ast.FunctionDef | ast.ClassDef)]


def lines_removed(text: str, numbers: set[int]) -> tuple[list[str], list[str]]:
    """Chunks around the code of the given lines (their indentation and line break stay)."""
    chunks, middles, cur = [], [], ""
    for i, line in enumerate(text.splitlines(keepends=True), 1):
        if i in numbers:
            lead = line[: len(line) - len(line.lstrip())]
            chunks.append(cur + lead)
            middles.append(line[len(lead):].rstrip("\n"))
            cur = "\n"
        else:
            cur += line
    chunks.append(cur)
    return chunks, middles


def test_textwrap_with_two_lines_removed_keeps_every_function(checker):
    """The repro of the issue: the plain witness makes `B'''` ... `'''` of the code between
    the holes; the anchored one keeps wrap, fill, shorten, dedent and indent."""
    text = Path(textwrap.__file__).read_text(encoding="utf-8")
    lines = text.splitlines()
    numbers = {lines.index(next(x for x in lines if "len(self.placeholder.lstrip())" in x)) + 1,
               lines.index(next(x for x in lines if "yield (prefix + line" in x)) + 1}
    chunks, middles = lines_removed(text, numbers)
    plain = checker.witness(chunks, anchored=False)
    assert plain is not None and not python_tokens_kept(chunks, middles, plain)
    fills = checker.witness(chunks)
    assert fills is not None
    filled = "".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True))
    assert set(defs(text)) <= set(defs(filled))
    assert python_tokens_kept(chunks, middles, fills)


def test_the_cli_example_keeps_its_return_statement(checker):
    chunks = split_holes((EXAMPLES / "holes.py").read_text(encoding="utf-8"),
                         DEFAULT_HOLE_MARKER)
    fills = checker.witness(chunks)
    assert fills is not None
    filled = "".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True))
    assert "return total / len(xs)" in [ln.strip() for ln in filled.splitlines()]
    assert python_tokens_kept(chunks, ["", ""], fills)


def test_a_mid_line_cursor_cannot_comment_out_the_rest_of_the_line(checker):
    chunks = ["s = textwrap.shorten(text, ", "width=width, max_lines=1, **kwargs)\n"]
    nfa_yes = checker.completable(chunks)
    assert nfa_yes is Verdict.YES
    fills = checker.witness(chunks)
    assert fills is not None and "#" not in fills[0]
    assert python_tokens_kept(chunks, [""], fills)


@pytest.mark.parametrize(("chunks", "fill"), [
    # inside a string: the filling may close it and open another
    (['x = "hello ', 'big world" + y\n'], '", "'),
    # inside a comment
    (["x = 1  # note ", "more words\ny = 2\n"], "and "),
    # inside a docstring spanning lines
    (['def f():\n    """Doc ', 'more.\n\n    Details.\n    """\n    return 1\n'], "with "),
    # writing a docstring that is not closed yet, with more docstrings below
    (['def f():\n    """Compute ', '\n    return 1\n\n\ndef g():\n    """G."""\n'],
     'things."""'),
])
def test_fillings_that_keep_the_users_reading_are_allowed(checker, chunks, fill):
    filled = "".join(c + f for c, f in zip(chunks, [fill, ""], strict=True))
    ast.parse(filled)
    assert checker.keeps_reading(chunks, [fill])
    anchors = checker.anchors(chunks)
    prefix, suffix = chunks
    assert checker.check([prefix + fill, suffix], anchors=anchors).verdict is Verdict.YES
    kept = closed(anchors, chunks, [fill])
    assert checker.check([filled], anchors=kept).verdict is Verdict.YES


@pytest.mark.parametrize(("chunks", "fills"), [
    (["x = foo(", "a, b)\ny = 2\n"], ["1)  #"]),
    (["", "\nprint(1)\n", "\n"], ["'''", "'''"]),
    (["def f():\n    ", "\n    return 1\n\n\ndef g():\n    ", "\n"], ['"""', '"""']),
])
def test_fillings_that_swallow_fixed_code_are_refused(checker, chunks, fills):
    """Closing the holes with such a filling is NO (as decoding checks it: the fixed text
    after each closed hole keeps its anchors in the merged text), while the plain semantics
    says YES."""
    filled = "".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True))
    ast.parse(filled)  # valid, and destructive
    assert not checker.keeps_reading(chunks, fills)
    assert not python_tokens_kept(chunks, [""] * len(fills), fills)
    kept = closed(checker.anchors(chunks), chunks, fills)
    assert checker.check([filled], anchors=kept).verdict is Verdict.NO
    assert checker.check([filled], anchored=False).verdict is Verdict.YES
