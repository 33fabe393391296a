"""Property tests: the native core against pure-Python oracles (tests/core/reference.py).

Data: hypothesis-generated 2NF grammars (1-3 terminals, 1-4 nonterminals, random binary,
unary and empty rules) and NFAs: either 1-5 random states with epsilon edges, self-loops and
several (or no) starts/finals, or "text with holes" chains with Sigma*-loop states; weights
0..2 on every edge, epsilon edges included, sometimes scaled by 40,000 to exercise the heap
overflow of the bucket queue.
Hypothesis prints the failing example and a `@reproduce_failure` blob; runs are derandomized
(fixed seed) so a failure reproduces with the same command.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holefill.check.core import CoreVerdict, NativeChecker, NativeGrammar

from .reference import (
    Grammar,
    Nfa,
    accepts,
    check_witness,
    derives,
    reference_min_weight,
    words_upto,
)

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def grammars(draw: st.DrawFn) -> Grammar:
    n_t = draw(st.integers(1, 3))
    n_v = n_t + draw(st.integers(1, 4))
    sym = st.integers(0, n_v - 1)
    nt = st.integers(n_t, n_v - 1)
    term = st.integers(0, n_t - 1)
    binary = tuple(draw(st.lists(st.tuples(nt, sym, sym), max_size=8)))
    # Mostly-productive grammars: terminal rules A -> t make most nonterminals generating.
    unary = tuple(draw(st.lists(st.tuples(nt, term), max_size=3))) + tuple(
        draw(st.lists(st.tuples(nt, sym), max_size=3))
    )
    nullable = tuple(draw(st.lists(nt, max_size=2)))
    return Grammar(n_t, n_v, draw(nt), binary, unary, nullable)


@st.composite
def nfas(draw: st.DrawFn, n_terminals: int, scale: int) -> Nfa:
    n = draw(st.integers(1, 5))
    state = st.integers(0, n - 1)
    edges = []
    # Half the NFAs have epsilon edges (label -1), half are epsilon-free.
    lo = -1 if draw(st.booleans()) else 0
    labels = st.integers(lo, n_terminals - 1)
    for fr, label, to, w in draw(
        st.lists(
            st.tuples(state, labels, state, st.integers(0, 2)),
            max_size=14,
        )
    ):
        edges.append((fr, label, to, w * scale))
    few = st.integers(0, 2) if draw(st.integers(0, 9)) == 0 else st.integers(1, 2)
    starts = tuple(draw(st.lists(state, min_size=1, max_size=2)))[: draw(few)]
    finals = tuple(draw(st.lists(state, min_size=1, max_size=2)))[: draw(few)]
    return Nfa(n, tuple(edges), starts, finals)


@st.composite
def hole_nfas(draw: st.DrawFn, n_terminals: int, scale: int) -> Nfa:
    """'Text with holes': a chain of fixed terminals where some positions are holes (a state
    with a self-loop on every terminal, entered by a weighted epsilon edge and left by a
    fixed terminal or, at the end, by a weighted epsilon edge to the final state)."""
    pieces = draw(st.lists(st.one_of(st.integers(0, n_terminals - 1), st.none()), max_size=6))
    edges: list[tuple[int, int, int, int]] = []
    cur = 0
    n = 1
    for piece in pieces:
        nxt = n
        n += 1
        if piece is None:
            for t in range(n_terminals):
                edges.append((nxt, t, nxt, draw(st.integers(0, 2)) * scale))
            edges.append((cur, -1, nxt, draw(st.integers(0, 2)) * scale))
        else:
            edges.append((cur, piece, nxt, draw(st.integers(0, 2)) * scale))
        cur = nxt
    if pieces and pieces[-1] is None and draw(st.booleans()):
        edges.append((cur, -1, n, draw(st.integers(0, 2)) * scale))
        cur = n
        n += 1
    return Nfa(n, tuple(edges), (0,), (cur,))


@st.composite
def instances(draw: st.DrawFn) -> tuple[Grammar, Nfa]:
    g = draw(grammars())
    scale = draw(st.sampled_from([1, 1, 1, 40_000]))
    shape = draw(st.sampled_from([nfas, hole_nfas]))
    return g, draw(shape(g.n_terminals, scale))


def _native(g: Grammar) -> NativeChecker:
    return NativeChecker(
        NativeGrammar(g.n_terminals, g.n_symbols, g.start, g.binary, g.unary, g.nullable)
    )


@SETTINGS
@given(instances())
def test_verdict_and_min_weight_witness_match_reference(inst: tuple[Grammar, Nfa]) -> None:
    """Both modes agree with the naive weighted fixpoint; want_witness=True returns a witness
    that is an accepting path spelling a word of L(G) with the reference's minimum weight
    (epsilon weights counted, the leaves completed by lightest epsilon-paths);
    want_witness=False returns a valid (possibly heavier) witness. Both report the weight of
    the returned witness in stats."""
    g, nfa = inst
    chk = _native(g)
    expected = reference_min_weight(g, nfa)
    for want in (True, False):
        res = chk.run(nfa.n_states, nfa.edges, nfa.starts, nfa.finals, want_witness=want)
        if expected is None:
            assert res.verdict == CoreVerdict.NO, res
            assert res.witness is None
            continue
        assert res.verdict == CoreVerdict.YES, res
        assert res.witness is not None
        weight = check_witness(g, nfa, res.witness)
        assert weight == res.stats["weight"]
        assert res.stats["leaves"] == len(res.witness)
        if want:
            assert weight == expected
        else:
            assert weight >= expected


@SETTINGS
@given(instances())
def test_verdict_matches_brute_force_on_short_words(inst: tuple[Grammar, Nfa]) -> None:
    """Whenever brute force finds a word of length <= 5 accepted by the NFA and derived by
    S, the core says YES; whenever the core says NO, no such short word exists."""
    g, nfa = inst
    max_len = 5  # at most 3**5 = 243 words of the longest length
    short = next(
        (w for w in words_upto(g.n_terminals, max_len) if accepts(nfa, w) and derives(g, w)),
        None,
    )
    res = _native(g).run(nfa.n_states, nfa.edges, nfa.starts, nfa.finals)
    if short is not None:
        assert res.verdict == CoreVerdict.YES, (short, res)
    if res.verdict == CoreVerdict.NO:
        assert short is None


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(instances(), min_size=2, max_size=5))
def test_reused_checker_answers_like_a_fresh_one(batch: list[tuple[Grammar, Nfa]]) -> None:
    """One checker per grammar, run over several NFAs in sequence (buffers cleared, not
    freed, between runs), answers exactly like a fresh checker for each run."""
    g = batch[0][0]
    reused = _native(g)
    for _, nfa in batch:
        nfa = Nfa(
            nfa.n_states,
            tuple(e for e in nfa.edges if e[1] < g.n_terminals),
            nfa.starts,
            nfa.finals,
        )
        a = reused.run(nfa.n_states, nfa.edges, nfa.starts, nfa.finals, want_witness=True)
        b = _native(g).run(nfa.n_states, nfa.edges, nfa.starts, nfa.finals, want_witness=True)
        assert a.verdict == b.verdict
        assert a.witness == b.witness
        assert a.stats == b.stats


# Terminals a=0, b=1; nonterminal S=2.
_A, _B, _S = 0, 1, 2


def test_start_offsets_pick_the_lightest_total_not_the_lightest_item() -> None:
    """Data: S -> a; start 0 reaches 1 by an epsilon edge of weight 5 and 2 by one of weight
    0; 1 -a/0-> 3 and 2 -a/3-> 3, final 3. The item (1, S, 3) is lighter (0 < 3) but its
    total is 5; the witness takes the path through 2 with total 3, in min mode, and the
    fast mode reports the weight of the witness it returns."""
    chk = NativeChecker(NativeGrammar(2, 3, _S, [], [(_S, _A)], []))
    edges = [(0, -1, 1, 5), (0, -1, 2, 0), (1, _A, 3, 0), (2, _A, 3, 3)]
    res = chk.run(4, edges, [0], [3], want_witness=True)
    assert res.verdict == CoreVerdict.YES
    assert res.witness == [(3, 3)]
    assert res.stats["weight"] == 3
    fast = chk.run(4, edges, [0], [3])
    assert fast.verdict == CoreVerdict.YES and fast.witness is not None
    assert fast.stats["weight"] == {2: 5, 3: 3}[fast.witness[0][0]]


def test_empty_word_costs_its_lightest_epsilon_path() -> None:
    """Data: S -> eps | a; start 0, finals 2 and 3; 0 -eps/4-> 2, 0 -eps/1-> 1 -eps/1-> 3,
    and 0 -a/0-> 2. The empty word costs 2 (through 1 to 3) and "a" costs 0: min mode
    returns "a"; with the a-edge weighing 9 it returns the empty witness with weight 2,
    and the fast mode reports 2 for an empty witness too."""
    chk = NativeChecker(NativeGrammar(2, 3, _S, [], [(_S, _A)], [_S]))
    eps = [(0, -1, 2, 4), (0, -1, 1, 1), (1, -1, 3, 1)]
    res = chk.run(4, [*eps, (0, _A, 2, 0)], [0], [2, 3], want_witness=True)
    assert res.witness == [(3, 2)] and res.stats["weight"] == 0
    res = chk.run(4, [*eps, (0, _A, 2, 9)], [0], [2, 3], want_witness=True)
    assert res.witness == [] and res.stats["weight"] == 2
    fast = chk.run(4, eps, [0], [2, 3])
    assert fast.witness == [] and fast.stats["weight"] == 2


def test_weighted_comment_epsilon_keeps_fixed_code_out_of_free_comments() -> None:
    """Data: the text "a <hole> d c" for S -> a c | a d d d c (terminals a, c, d). The
    lexer's picture: 0 -a-> 1, the hole 1 loops on a/c/d at weight 1, 1 -d-> 2 -c-> 3; a
    comment opened in the hole swallows the fixed "d" (epsilon edge 1 -> 2). Honest fill:
    generate "d d" (weight 2). With a free comment the lightest witness is "a c" with "d"
    hidden in the comment (weight 0); once the comment costs 3 like generated text, the
    honest fill wins. The verdict is YES either way."""
    a, c, d, s_, t, dd, e = range(7)
    chk = NativeChecker(
        NativeGrammar(3, 7, s_, [(s_, a, c), (s_, a, t), (t, dd, c), (dd, d, e), (e, d, d)], [], [])
    )
    fixed = [(0, a, 1, 0), (1, a, 1, 1), (1, c, 1, 1), (1, d, 1, 1), (1, d, 2, 0), (2, c, 3, 0)]
    comment = 6  # edge index of the comment's epsilon edge
    free = chk.run(4, [*fixed, (1, -1, 2, 0)], [0], [3], want_witness=True)
    assert free.witness == [(0, 2), (5, 3)] and free.stats["weight"] == 0
    paid = chk.run(4, [*fixed, (1, -1, 2, 3)], [0], [3], want_witness=True)
    assert paid.witness == [(0, 1), (3, 1), (3, 1), (4, 2), (5, 3)]
    assert paid.stats["weight"] == 2
    assert comment not in {edge for edge, _ in paid.witness}
