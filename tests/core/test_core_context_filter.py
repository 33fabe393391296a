"""The core's context filter (holefill.h: PREC/FOLL of symbols against IN/OUT of states).

Data: the hypothesis grammars and NFAs of test_core_properties (optionally with every symbol
shifted up by 63 or 64 unused terminals, so that the filter's bitsets span two or three
words), hand-made grammars where only a nullable sibling or a unary chain gives a symbol its
context, and a synthetic bracketed left-recursive list `[e, e, ..., e]` with 400 and 800
elements. Property runs are derandomized; hypothesis prints the failing example.
"""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from holefill.check.core import CoreVerdict, NativeChecker, NativeGrammar

from .reference import Grammar, Nfa, reference_min_weight
from .test_core_properties import SETTINGS, instances


def _shifted(g: Grammar, nfa: Nfa, pad: int) -> tuple[Grammar, Nfa]:
    """The same instance with `pad` unused terminals in front: symbol x becomes x + pad."""
    if pad == 0:
        return g, nfa
    return (
        Grammar(
            g.n_terminals + pad,
            g.n_symbols + pad,
            g.start + pad,
            tuple((a + pad, x + pad, y + pad) for a, x, y in g.binary),
            tuple((a + pad, x + pad) for a, x in g.unary),
            tuple(a + pad for a in g.nullable),
        ),
        Nfa(
            nfa.n_states,
            tuple((f, t if t < 0 else t + pad, to, w) for f, t, to, w in nfa.edges),
            nfa.starts,
            nfa.finals,
        ),
    )


def _checker(g: Grammar, context_filter: bool) -> NativeChecker:
    grammar = NativeGrammar(g.n_terminals, g.n_symbols, g.start, g.binary, g.unary, g.nullable)
    return NativeChecker(grammar, context_filter=context_filter)


@SETTINGS
@given(instances(), st.sampled_from([0, 0, 63, 64]))
def test_filter_keeps_verdicts_and_lightest_weights(inst: tuple[Grammar, Nfa], pad: int) -> None:
    """With and without the filter, both modes give the reference's verdict, and the
    minimum-weight mode the reference's weight; a search that ran to the end (NO) never
    builds more items with the filter than without (its items are a subset)."""
    g, nfa = inst
    expected = reference_min_weight(g, nfa)
    g, nfa = _shifted(g, nfa, pad)
    on, off = _checker(g, True), _checker(g, False)
    for want in (True, False):
        a = on.run(nfa.n_states, nfa.edges, nfa.starts, nfa.finals, want_witness=want)
        b = off.run(nfa.n_states, nfa.edges, nfa.starts, nfa.finals, want_witness=want)
        verdict = CoreVerdict.NO if expected is None else CoreVerdict.YES
        assert a.verdict == b.verdict == verdict, (a, b)
        if expected is None:
            assert a.stats["items"] <= b.stats["items"]
        elif want:
            assert a.stats["weight"] == b.stats["weight"] == expected


@st.composite
def derived_words(draw: st.DrawFn) -> tuple[Grammar, Nfa]:
    """A random grammar with up to 5 terminals and frequent empty rules, and a chain NFA of
    a word derived from its start symbol (when a bounded random derivation finds one; else a
    random word), sometimes with one lexeme changed. Chains make IN/OUT small, so the filter
    prunes often and a missing context shows up as a wrong NO."""
    n_t = draw(st.integers(2, 5))
    n_v = n_t + draw(st.integers(2, 6))
    sym, nt = st.integers(0, n_v - 1), st.integers(n_t, n_v - 1)
    binary = tuple(draw(st.lists(st.tuples(nt, sym, sym), max_size=10)))
    unary = tuple(draw(st.lists(st.tuples(nt, st.integers(0, n_t - 1)), max_size=4)))
    unary += tuple(draw(st.lists(st.tuples(nt, sym), max_size=3)))
    nullable = tuple(draw(st.lists(nt, max_size=3)))
    g = Grammar(n_t, n_v, draw(nt), binary, unary, nullable)
    rules: dict[int, list[tuple[int, ...]]] = {}
    for a, x, y in binary:
        rules.setdefault(a, []).append((x, y))
    for a, x in unary:
        rules.setdefault(a, []).append((x,))
    for a in nullable:
        rules.setdefault(a, []).append(())
    rng = draw(st.randoms(use_true_random=False))
    word: list[int] = []
    todo, budget = [g.start], 40
    while todo and budget > 0:
        x = todo.pop()
        budget -= 1
        if x < n_t:
            word.append(x)
        elif rules.get(x):
            todo.extend(reversed(rng.choice(rules[x])))
        else:
            budget = 0
    if todo or len(word) > 8:
        word = [rng.randrange(n_t) for _ in range(rng.randrange(5))]
    if word and rng.random() < 0.2:
        word[rng.randrange(len(word))] = rng.randrange(n_t)
    edges = tuple((i, t, i + 1, rng.randrange(3)) for i, t in enumerate(word))
    return g, Nfa(len(word) + 1, edges, (0,), (len(word),))


@settings(SETTINGS, max_examples=400)
@given(st.one_of(instances(), derived_words()), st.sampled_from([0, 0, 64]))
def test_filter_keeps_verdicts_on_derived_words(inst: tuple[Grammar, Nfa], pad: int) -> None:
    """On chains of derived words (and the usual random instances), the filtered search in
    minimum-weight mode gives the reference's verdict and weight."""
    g, nfa = inst
    expected = reference_min_weight(g, nfa)
    g, nfa = _shifted(g, nfa, pad)
    res = _checker(g, True).run(nfa.n_states, nfa.edges, nfa.starts, nfa.finals, want_witness=True)
    if expected is None:
        assert res.verdict == CoreVerdict.NO, res
    else:
        assert res.verdict == CoreVerdict.YES, res
        assert res.stats["weight"] == expected


# Terminals x=0, y=1, z=2; nonterminals from 3.
_X, _Y, _Z = 0, 1, 2


def test_nullable_left_sibling_passes_the_start_context_on() -> None:
    """Data: S -> A B, A -> eps | x, B -> y, on the words "y" and "x y". B is preceded by
    the beginning of input only through the empty A: both words are accepted, and "z y"
    (z never precedes B) is rejected."""
    s, a, b = 3, 4, 5
    chk = NativeChecker(NativeGrammar(3, 6, s, [(s, a, b)], [(a, _X), (b, _Y)], [a]))
    for word, verdict in (([_Y], True), ([_X, _Y], True), ([_Z, _Y], False)):
        edges = [(i, t, i + 1, 0) for i, t in enumerate(word)]
        res = chk.run(len(word) + 1, edges, [0], [len(word)])
        assert (res.verdict == CoreVerdict.YES) == verdict, (word, res)


def test_nullable_right_sibling_and_unary_chain_pass_the_end_context_on() -> None:
    """Data: S -> U C, U -> A (unary), A -> x, C -> eps | y, on "x" and "x y": A is followed
    by the end of input only through the unary U and the empty C."""
    s, u, a, c = 3, 4, 5, 6
    chk = NativeChecker(NativeGrammar(3, 7, s, [(s, u, c)], [(u, a), (a, _X), (c, _Y)], [c]))
    for word in ([_X], [_X, _Y]):
        edges = [(i, t, i + 1, 0) for i, t in enumerate(word)]
        res = chk.run(len(word) + 1, edges, [0], [len(word)], want_witness=True)
        assert res.verdict == CoreVerdict.YES, (word, res)
        assert len(res.witness or []) == len(word)


@pytest.mark.parametrize(
    ("binary", "unary", "nullable"),
    [
        # S -> Y W, W -> N Z, N -> eps: FOLL(Y) ∋ z needs FIRST(W) ⊇ FIRST(Z).
        ([(3, 4, 5), (5, 6, 7)], [(4, _X), (7, _Z)], [6]),
        # S -> W Y, W -> Z N, N -> eps: PREC(Y) ∋ z needs LAST(W) ⊇ LAST(Z).
        ([(3, 5, 4), (5, 7, 6)], [(4, _X), (7, _Z)], [6]),
    ],
    ids=["first-through-nullable", "last-through-nullable"],
)
def test_first_and_last_skip_nullable_symbols(
    binary: list[tuple[int, int, int]], unary: list[tuple[int, int]], nullable: list[int]
) -> None:
    """Data: S (3) derives "x z" or "z x" only through an empty N (6) next to Z (7) inside W
    (5); Y (4) -> x. The word is accepted, so Y's context must see through N."""
    chk = NativeChecker(NativeGrammar(3, 8, 3, binary, unary, nullable))
    word = [_X, _Z] if binary[0][1] == 4 else [_Z, _X]
    res = chk.run(3, [(0, word[0], 1, 0), (1, word[1], 2, 0)], [0], [2])
    assert res.verdict == CoreVerdict.YES, res


# The bracketed list: terminals "[" "]" "," e; S -> "[" R, R -> L "]", L -> L C | E,
# C -> "," E, E -> e | S (nested lists).
_LB, _RB, _COMMA, _E = range(4)
_S, _R, _L, _C, _EL = range(4, 9)
_LIST_BINARY = [(_S, _LB, _R), (_R, _L, _RB), (_L, _L, _C), (_C, _COMMA, _EL)]
_LIST_UNARY = [(_L, _EL), (_EL, _E), (_EL, _S)]


def _list_items(n: int, context_filter: bool) -> int:
    """Items of a YES run on "[e, e, ..., e]" with n elements (minimum-weight mode, which
    finishes the search up to the goal's weight)."""
    word = [_LB] + [t for i in range(n) for t in ((_COMMA, _E) if i else (_E,))] + [_RB]
    edges = array("i")
    for i, t in enumerate(word):
        edges.extend((i, t, i + 1, 0))
    g = NativeGrammar(4, 9, _S, _LIST_BINARY, _LIST_UNARY, [])
    res = NativeChecker(g, context_filter=context_filter).run(
        len(word) + 1, edges, [0], [len(word)], want_witness=True
    )
    assert res.verdict == CoreVerdict.YES
    return res.stats["items"]


def test_filter_makes_a_left_recursive_list_linear() -> None:
    """Data: "[e, ..., e]" with 400 and 800 elements. Unfiltered, L spans every pair of
    element boundaries (items grow about 4x); filtered, L only starts after "[" (items grow
    less than 2.5x)."""
    on = _list_items(400, True), _list_items(800, True)
    off = _list_items(400, False), _list_items(800, False)
    assert on[1] < 2.5 * on[0], on
    assert off[1] > 3.5 * off[0], off
    assert on[1] * 20 < off[1], (on, off)
