"""The structure rule in the incremental engine (its right context's product, its left's
counter, its junction) against the exact whole-document check, on real code.

Replays of cuts of the standard library (Python) and of HumanEval-X solutions (C++): every
token prefix of the real middle, and the same prefixes followed by a few characters of junk
that break brackets or lines, are checked by the engine with the cut's structure; where it
answers, the classic check of the whole document with the same structure must agree. Where
the real middle keeps the structure, none of its prefixes may be NO.
"""

from __future__ import annotations

import random

import pytest

from holefill import Checker, Verdict
from holefill.check.structure import Structure
from holefill.check.window import find_window
from holefill.datasets import humaneval_cpp_programs, python_cuts, span_cuts
from holefill.decode.completer import make_engine
from holefill.lexing.anchors import Anchors

JUNK = [")", "}", "]", "(", "\n", ") + (", "]}"]


def _states(middle: str, split) -> list[str]:
    ends = split(middle)
    out = [middle[:e] for e in ends[:: max(1, len(ends) // 6)]]
    rng = random.Random(middle)
    out += [p + rng.choice(JUNK) for p in out[1::2]]
    return out


def _replay(checker: Checker, c, split) -> tuple[int, list]:
    chunks = list(c.chunks)
    window = find_window(checker.language, chunks)
    engine = make_engine(checker, chunks, window, 5_000_000)
    sites = list(checker.anchors(window.apply(chunks)).sites)
    rules = checker.structure(chunks).rules
    keeps = checker.keeps_place(c.chunks, c.middles)
    answered, problems = 0, []
    for text in _states(c.middles[0], split):
        state = [chunks[0] + text, *chunks[1:]]
        structure = Structure(rules, (len(chunks[0]),))
        got = engine.verdict(state, sites, None, structure)
        if got is None or got is Verdict.UNKNOWN:
            continue
        answered += 1
        want = checker.check(state, anchors=Anchors(tuple(sites)), structure=structure).verdict
        if want is not Verdict.UNKNOWN and want is not got:
            problems.append((c.name, text, got, "whole", want))
        if keeps and c.middles[0].startswith(text) and got is Verdict.NO:
            problems.append((c.name, text, "real middle refused"))
    return answered, problems


def _run(checker: Checker, cuts, split) -> None:
    answered, problems = 0, []
    for c in cuts:
        a, p = _replay(checker, c, split)
        answered += a
        problems += p
    assert answered > 0
    assert problems == []


def test_python_engine_agrees_with_the_whole_check_under_the_rule(token_ends):
    checker = Checker.for_language("python")
    cuts = [c for c in python_cuts("span", 14, seed=77, holes=1, max_lines=120)
            if checker.keeps_reading(c.chunks, c.middles)]
    cuts += [c for c in python_cuts("boundary", 6, seed=78, holes=1, max_lines=120)
             if checker.keeps_reading(c.chunks, c.middles)]
    _run(checker, cuts, token_ends)


def test_cpp_engine_agrees_with_the_whole_check_under_the_rule(token_ends):
    checker = Checker.for_language("cpp")
    programs = list(humaneval_cpp_programs())
    random.Random(5).shuffle(programs)
    cuts = [c for c in span_cuts(programs[:14], 1, 1, seed=79)
            if checker.keeps_reading(c.chunks, c.middles)]
    _run(checker, cuts, token_ends)


@pytest.mark.slow
@pytest.mark.parametrize("language", ["python", "cpp"])
def test_many_cuts_agree_under_the_rule(token_ends, language):
    checker = Checker.for_language(language)
    if language == "python":
        cuts = python_cuts("span", 150, seed=80, holes=1)
    else:
        programs = list(humaneval_cpp_programs())
        cuts = list(span_cuts(programs, 1, 1, seed=81))
    _run(checker, [c for c in cuts if checker.keeps_reading(c.chunks, c.middles)], token_ends)
