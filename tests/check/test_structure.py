"""The structure rule (holefill.check.structure): fixed brackets keep their partners, a line
the user's code goes on stays one line; in the check, its witnesses, decoding's judge, and
the final check. Validity is judged by the real readers (json, CPython), never our grammar."""

from __future__ import annotations

import ast
import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from holefill import Checker, Verdict
from holefill.bench.oracles import json_valid
from holefill.check.final import final_check
from holefill.check.structure import MAX_NEST, FillJudge, HoleRule, run_rule

TWO_CPP = """#include <vector>
#include <iostream>

int sum(const std::vector<int>& v) {
    int s = 0;
    for (int x : v) {
        s += <|hole|>;
    }
    return s;
}

int main() {
    std::vector<int> v{1, 2, 3};
    std::cout << <|hole|> << std::endl;
    return 0;
}
"""

LOADS = """def loads(s, *, cls=None, object_hook=None, parse_float=None,
        <|hole|>parse_int=None, parse_constant=None, object_pairs_hook=None, **kw):
    return s
"""


def test_cpp_fill_cannot_close_main_and_open_a_new_function():
    chk = Checker.for_language("cpp")
    chunks = TWO_CPP.split("<|hole|>")
    seen = ["64", '64;; }; a a ( ) { ""']  # the fill the issue reports
    assert chk.structure_violation(chunks, seen) is not None
    assert chk.check(chunks, structured=False).verdict is Verdict.YES
    res = chk.check(chunks, want_witness=True, structured=True)
    assert res.verdict is Verdict.YES and res.fills is not None
    assert chk.structure_violation(chunks, res.fills) is None
    assert all("}" not in f and "\n" not in f for f in res.fills)


def test_python_signature_keeps_its_parameters():
    chk = Checker.for_language("python")
    chunks = LOADS.split("<|hole|>")
    seen = ["):  # type: ignore[attr-defined]\n   if 0 ("]  # the suggestion the issue reports
    assert chk.structure_violation(chunks, seen) is not None
    assert chk.keeps_place(chunks, [""])
    res = chk.check(chunks, want_witness=True, structured=True)
    assert res.verdict is Verdict.YES and res.fills is not None
    assert chk.structure_violation(chunks, res.fills) is None
    ast.parse(chunks[0] + res.fills[0] + chunks[1])
    final = final_check(chk, chunks, {0: seen[0]}, structured=True)
    assert final.verdict is Verdict.NO and final.judge == "structure"


def test_mid_word_cursor_stays_on_its_line():
    chk = Checker.for_language("python")
    chunks = ["def f(res):\n    return re", "s + 1\n"]
    rule = chk.structure(chunks).rules[0]
    assert rule.one_line
    assert chk.structure_violation(chunks, ["\n    "]) is not None
    assert chk.structure_violation(chunks, ["s + re"]) is None
    res = chk.check(chunks, want_witness=True, structured=True)
    assert res.verdict is Verdict.YES and res.fills is not None and "\n" not in res.fills[0]


def test_a_hole_at_a_line_end_may_write_lines():
    chk = Checker.for_language("python")
    chunks = ["def f(x):\n    y = x", "\n    return y\n"]
    assert not chk.structure(chunks).rules[0].one_line
    assert chk.structure_violation(chunks, [" + 1\n    z = y"]) is None


def test_only_a_repairing_fill_is_refused_and_the_plain_semantics_still_allows_it():
    chk = Checker.for_language("json")
    chunks = ["[1", "]]"]  # only `, [2` (re-pairing the user's first `]`) makes it valid
    assert chk.check(chunks, structured=False).verdict is Verdict.YES
    assert chk.check(chunks, structured=True).verdict is Verdict.NO


def test_unpartnered_openers_may_be_closed():
    chk = Checker.for_language("json")
    chunks = ['{"a": [1, ', ""]
    rule = chk.structure(chunks).rules[0]
    assert rule.floor == 2 and rule.ceiling == 0
    res = chk.check(chunks, want_witness=True, structured=True)
    assert res.verdict is Verdict.YES and res.fills is not None
    json.loads(chunks[0] + res.fills[0])


def test_unpartnered_closers_may_be_opened_for():
    chk = Checker.for_language("json")
    chunks = ["", "1, 2]"]
    rule = chk.structure(chunks).rules[0]
    assert (rule.floor, rule.ceiling) == (0, 1)
    res = chk.check(chunks, want_witness=True, structured=True)
    assert res.verdict is Verdict.YES and res.fills is not None
    assert json.loads(res.fills[0] + chunks[1]) == [1, 2]


def test_the_nesting_bound_refuses_past_it():
    rule = HoleRule()
    assert run_rule(rule, [1] * MAX_NEST + [2] * MAX_NEST) == 0
    assert run_rule(rule, [1] * (MAX_NEST + 1)) == -1


# ---- brute force: the check against enumeration, judged by json.loads ----------------------

TOKENS = ["[", "]", "{", "}", "1", ",", '"a"', ":"]
DOCS = [["[1, ", "]"], ["[[1", "], [2]]"], ['{"a": ', "}"], ["[", "", "]"], ["[1", "]]"],
        ["[", "1]"], ['{"a": [', "]}"], ["[1, ", ", 2]"], ["", "]"], ["[{", "}]"]]


def _fills(holes: int, max_tokens: int):
    one = ["".join(p) for n in range(max_tokens + 1) for p in itertools.product(TOKENS, repeat=n)]
    return itertools.product(one, repeat=holes)


@pytest.mark.parametrize("chunks", DOCS, ids=lambda c: "|".join(c))
def test_json_check_agrees_with_enumeration(chunks):
    chk = Checker.for_language("json")
    verdict = chk.check(chunks, structured=True).verdict
    found = None
    for fills in _fills(len(chunks) - 1, 3 if len(chunks) == 2 else 2):
        text = "".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True))
        if json_valid(text) and chk.keeps_place(chunks, list(fills)):
            found = fills
            break
    if found is not None:
        assert verdict is Verdict.YES, found
    if verdict is Verdict.NO:
        assert found is None
    if verdict is Verdict.YES:
        res = chk.check(chunks, want_witness=True, structured=True)
        assert res.fills is not None and chk.keeps_place(chunks, res.fills)
        assert json_valid("".join(c + f for c, f in zip(chunks, [*res.fills, ""], strict=True)))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(TOKENS + [" ", "\n", '"(', ")"]), max_size=8),
       st.sampled_from(DOCS[:2] + DOCS[4:6]))
def test_decoding_judge_agrees_with_the_text_rule(tokens, chunks):
    """FillJudge (decoding's per-token judge) ends a filling exactly where `violation`
    (the final check's judge) accepts it."""
    chk = Checker.for_language("json")
    structure = chk.structure(chunks)
    judge = FillJudge(chk.lexer.reference, chk.brackets, chunks[0], structure.rules[0])
    fill = "".join(tokens)
    rest = [""] * (len(chunks) - 2)
    assert judge.may_end(fill) == (chk.structure_violation(chunks, [fill, *rest]) is None)


def test_fill_with_the_bundled_model_keeps_main_and_its_line():
    """The issue's `holefill fill two.cpp`, through the Completer with the rule on: each
    token's judge refuses the brace that closed `main`, the final check judges the rest."""
    import torch

    from holefill import Completer

    torch.set_num_threads(1)
    chk = Checker.for_language("cpp")
    chunks = TWO_CPP.split("<|hole|>")
    res = Completer().fill(chunks, "cpp", max_new_tokens=24, seed=0, structured=True)
    assert chk.structure_violation(chunks, res.fills) is None, res.fills
    assert not res.refused
