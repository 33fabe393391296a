"""JSON end to end: real cuts are completable, witnesses satisfy `json.loads`, junk is NO.

Data: pseudo-random JSON documents from holefill.datasets.json_documents (seeded), with 1, 2
and 3 random spans of 5-100 characters removed (the diffusion paper's protocol).
"""

from __future__ import annotations

import json

import pytest

from holefill import Checker, Verdict
from holefill.datasets import json_documents, span_cuts

DOCS = json_documents(40, seed=7)


@pytest.fixture(scope="module")
def checker() -> Checker:
    return Checker.for_language("json")


@pytest.mark.parametrize("anchored", [False, True], ids=["plain", "anchored"])
@pytest.mark.parametrize("holes", [1, 2, 3])
def test_cut_documents_are_completable_and_witnesses_parse(checker, holes, anchored):
    """Every cut is completable (plain); anchored, every cut whose removed text keeps the
    reading of the text around it, with a witness that keeps it too."""
    cuts = list(span_cuts(DOCS, holes, per_text=2, seed=holes))
    assert len(cuts) >= 60
    for c in cuts:
        if anchored and not checker.keeps_place(c.chunks, c.middles):
            continue
        res = checker.check(c.chunks, want_witness=True, anchored=anchored)
        assert res.verdict is Verdict.YES, c
        assert res.fills is not None and len(res.fills) == holes
        json.loads(c.filled(res.fills))  # the oracle, not our grammar
        assert not anchored or checker.keeps_reading(c.chunks, res.fills), (c, res.fills)


def test_whole_documents_are_accepted_without_holes(checker):
    for _, text in DOCS:
        assert checker.completable([text]) is Verdict.YES


@pytest.mark.parametrize(
    "chunks",
    [
        ["]", ""],  # a document cannot start with a closer
        ["", "}{"],  # whatever comes first, the last `{` is never closed
        ['{"a" 1', ""],  # a value right after a key, no colon possible before it
        ["[1,,", ""],  # an empty element cannot be repaired by appending
        ["1", "]"],  # a document that starts with a number cannot end with a closer
    ],
)
def test_unrepairable_text_is_no(checker, chunks):
    assert checker.completable(chunks) is Verdict.NO


@pytest.mark.parametrize(
    "text", ['{"a": tru}', "[01]", '"\\x"', "[1 2]", '{"a":1,}', "", "nul", "1.", "-"]
)
def test_invalid_documents_are_no(checker, text):
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    assert checker.completable([text]) is Verdict.NO


def test_a_hole_inside_a_string_and_a_number_is_completable(checker):
    """Holes may sit inside lexemes: `"ab□cd"` and `12□34` are each one lexeme."""
    for chunks in (['{"ab', 'cd": 1}'], ["[12", "34]"], ['["a', "b", 'c"]']):
        fills = checker.witness(chunks)
        assert fills is not None
        json.loads("".join(c + f for c, f in zip(chunks, fills + [""], strict=True)))


def test_verdict_truthiness_is_only_yes():
    assert bool(Verdict.YES) and not bool(Verdict.NO) and not bool(Verdict.UNKNOWN)
