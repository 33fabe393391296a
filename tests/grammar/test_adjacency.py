"""Adjacent terminals (holefill.grammar.adjacency) against enumeration and real code: every
pair of neighbouring terminals in a word of the grammar is in the set (the direction the
segment cuts rely on), and the set of a small grammar is exactly its neighbours.

Data: hypothesis 2NF grammars (tests/core/test_core_properties), their words up to length 5
by CYK; a bracket grammar by hand; the lexemes of standard-library modules (tests/check/
test_window's MEDIUM list) read by our reference lexer, pairs of one line.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from tests.check.test_window import MEDIUM, modules
from tests.core.reference import Grammar, derives, words_upto
from tests.core.test_core_properties import SETTINGS, grammars

from holefill import Checker
from holefill.grammar.adjacency import adjacent_terminals


def neighbours(words: list[tuple[int, ...]]) -> set[tuple[int, int]]:
    return {(w[i], w[i + 1]) for w in words for i in range(len(w) - 1)}


@SETTINGS
@given(grammars())
def test_every_pair_of_neighbours_in_a_word_is_adjacent(g: Grammar):
    words = [w for w in words_upto(g.n_terminals, 5) if derives(g, w)]
    got = adjacent_terminals(g)  # type: ignore[arg-type]
    for a, b in neighbours(words):
        assert got[a, b], (a, b)


def test_the_pairs_of_a_bracket_grammar_are_exactly_its_neighbours():
    # S -> ( T | eps,  T -> S U,  U -> ) S   (balanced brackets); ( = 0, ) = 1
    g = Grammar(2, 5, 2, ((2, 0, 3), (3, 2, 4), (4, 1, 2)), (), (2,))
    words = [w for w in words_upto(2, 6) if derives(g, w)]
    want = np.zeros((2, 2), dtype=bool)
    for a, b in neighbours(words):
        want[a, b] = True
    assert want.all()
    assert (adjacent_terminals(g) == want).all()  # type: ignore[arg-type]


def test_a_grammar_whose_words_have_one_letter_has_no_pairs():
    g = Grammar(2, 3, 2, (), ((2, 0), (2, 1)), ())
    assert not adjacent_terminals(g).any()  # type: ignore[arg-type]


def test_neighbouring_lexemes_of_one_line_of_real_python_are_adjacent():
    checker = Checker.for_language("python")
    ref = checker.lexer.reference
    adjacent = checker.adjacent
    names = ref.names
    seen = 0
    for name, text in modules(tuple(MEDIUM)):
        code = [(a, b, lab) for a, b, lab in ref.reading(text).triples()
                if lab >= 0 and lab not in ref.blank and lab not in ref.comment_like]
        for (_, b1, x), (a2, _, y) in zip(code, code[1:], strict=False):
            if "\n" in text[b1:a2] or text[b1:a2].strip():
                continue
            seen += 1
            assert adjacent[x, y], (name, names[x], names[y], text[b1 - 20:a2 + 20])
    assert seen > 10_000
    # and the set is no mere "everything": two names never stand side by side
    ix = {n: i for i, n in enumerate(names)}
    assert not adjacent[ix["NAME"], ix["NAME"]]
