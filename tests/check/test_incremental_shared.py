"""The shared right context against the per-entry one (holefill.check.incremental).

A right context is what the hole and the text after it accept, from each entry the left
reaches (a place and the layout it enters with). The shared context grows one product and
one closure by entry (hf_right_add on a filtered context, PythonLayoutLexer.extend); the
per-entry one builds each entry's own product and closure over the whole text after the
hole, the path the engine took before, kept as the reference. On replays of real Python and
C++ cuts, every token prefix of the removed text and wrong turns after some of them (a
closing bracket, an odd indentation, a comment, a keyword out of place) must get the same
answer from both, and the shared one must really have shared: several entries of one
context in one native closure.
"""

from __future__ import annotations

import random

import pytest

from holefill import Checker
from holefill.check.incremental import IncrementalCheck
from holefill.check.window import find_window, left_start
from holefill.datasets import Cut, python_cuts, span_cuts
from holefill.lexing.python_layout import indent_unit

# wrong turns typed after a real prefix: each drives the left into entries (layouts, places
# in the text after the hole) the real text does not reach
PYTHON_PROBES = [")", "]:", "\n      x", "  # c", "else", " = (", "\n\n\tpass", "\\\n", "'''"]
CPP_PROBES = [")", "}", "{", "; else", "/* c", "#define X\n", "\"", "::"]


@pytest.fixture(scope="module")
def split(token_ends):
    return token_ends


def engines(language: str, checker: Checker, chunks: list[str]):
    window = find_window(language, chunks)
    start = left_start(language, chunks[0])
    last = chunks[-1]
    tail = [*chunks[1:-1], last[: len(last) - window.tail] + window.suffix]
    unit = indent_unit([chunks[0][start:], *tail]) if language == "python" else None
    pair = [IncrementalCheck(checker, start, window.tail, window.suffix, unit, shared=s)
            for s in (True, False)]
    return pair, window


def compare(language: str, checker: Checker, c: Cut, split, probes: list[str],
            rng: random.Random) -> tuple[list, int]:
    """Both engines on every token prefix and on a wrong turn after every third one: the
    differences, and the most entries one shared native closure served."""
    chunks = list(c.chunks)
    (shared, reference), window = engines(language, checker, chunks)
    sites = list(checker.anchors(window.apply(chunks)).sites)
    middle = c.middles[0]
    diffs = []
    for k, end in enumerate(split(middle)):
        texts = [middle[:end]]
        if k % 3 == 0:
            texts.append(middle[:end] + rng.choice(probes))
        for text in texts:
            state = [chunks[0] + text, *chunks[1:]]
            got, want = shared.verdict(state, sites), reference.verdict(state, sites)
            if got is not want:
                diffs.append((c.name, repr(text[-30:]), got, want))
    most = max((sum(1 for e in right.entries.values() if e is not None)
                for right in shared.rights.values() if len(right.natives()) == 1), default=0)
    return diffs, most


def _check_all(language: str, cuts: list[Cut], split, probes: list[str]) -> None:
    checker = Checker.for_language(language)
    rng = random.Random(5)
    cuts = [c for c in cuts if checker.keeps_place(c.chunks, c.middles)]
    assert cuts
    diffs, most = [], 0
    for c in cuts:
        d, m = compare(language, checker, c, split, probes, rng)
        diffs += d
        most = max(most, m)
    assert diffs == []
    assert most >= 2  # some context took several entries into one closure


@pytest.mark.parametrize(("kind", "holes", "n"), [("span", 1, 6), ("line", 1, 4),
                                                   ("span", 2, 3)])
def test_python_shared_context_answers_like_one_context_per_entry(split, kind, holes, n):
    cuts = python_cuts(kind, n, seed=31, holes=holes, max_lines=120)
    _check_all("python", cuts, split, PYTHON_PROBES)


def test_cpp_shared_context_answers_like_one_context_per_entry(split):
    from holefill.bench.scaling import cpp_file

    rng = random.Random(7)
    texts = [(f"cpp7.{i}", cpp_file(rng.randint(60, 120), rng.randrange(10**6),
                                    namespaced=i % 2 == 1)) for i in range(3)]
    cuts = [c for holes in (1, 2) for c in span_cuts(texts, holes, 1, seed=7)]
    _check_all("cpp", cuts, split, CPP_PROBES)
