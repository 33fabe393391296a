"""Property tests: the incremental parser with a right context agrees with the checker.

hf_parser_query answers "can the input read so far, then a word of a junction J, then one of
a right context R, be a sentence?" The same question is one emptiness check of the NFA
"chain of the input, then J, then R", which the checker (itself tested against brute force
in test_core_properties.py) answers. Data: hypothesis-generated 2NF grammars (the same
strategy as the checker's property tests), inputs of up to 4 terminals, junctions of 1-4
states with ε edges, right contexts of 1-5 states with ε edges, and several exits. Also:
growing R by blocks (with the context filter too, entries coming with later blocks or
falling on old states), and rolling the parser back, give the same answers.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holefill.check.core import (
    CoreVerdict,
    NativeChecker,
    NativeGrammar,
    NativeParser,
    NativeRight,
)

from .reference import Grammar
from .test_core_properties import grammars

SETTINGS = settings(max_examples=400, deadline=None, derandomize=True, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def problems(draw: st.DrawFn):
    g: Grammar = draw(grammars())
    term = st.integers(0, g.n_terminals - 1)
    label = st.integers(-1, g.n_terminals - 1)
    word = draw(st.lists(term, max_size=4))
    n_j = draw(st.integers(1, 4))
    j_edges = [(a, lab, b, 0) for a, lab, b in draw(st.lists(
        st.tuples(st.integers(0, n_j - 1), label, st.integers(0, n_j - 1)), max_size=6))
        if a < b]
    n_r = draw(st.integers(1, 5))
    # R in two blocks: edges of the first block stay in it, the second may go anywhere
    split = draw(st.integers(1, n_r))
    r_edges = []
    for a, lab, b in draw(st.lists(st.tuples(st.integers(0, n_r - 1), label,
                                             st.integers(0, n_r - 1)), max_size=10)):
        if a < split and b >= split:
            continue
        r_edges.append((a, lab, b, 0))
    finals = draw(st.lists(st.integers(0, n_r - 1), max_size=2))
    exits = draw(st.lists(st.tuples(st.integers(0, n_j - 1), label, st.integers(0, n_r - 1)),
                          min_size=1, max_size=3))
    return g, word, n_j, j_edges, n_r, split, r_edges, finals, exits


def native(g: Grammar) -> NativeGrammar:
    return NativeGrammar(g.n_terminals, g.n_symbols, g.start, g.binary, g.unary, g.nullable)


def checker_verdict(ng, word, n_j, j_edges, n_r, r_edges, finals, exits) -> CoreVerdict:
    m = len(word)
    j0, r0 = m, m + n_j
    edges = [(i, t, i + 1, 0) for i, t in enumerate(word)]
    edges += [(j0 + a, lab, j0 + b, 0) for a, lab, b, _ in j_edges]
    edges += [(j0 + a, lab, r0 + r, 0) for a, lab, r in exits]
    edges += [(r0 + a, lab, r0 + b, 0) for a, lab, b, _ in r_edges]
    res = NativeChecker(ng).run(r0 + n_r, edges, [0], [r0 + f for f in finals])
    return res.verdict


def right_context(ng, n_r, split, r_edges, finals, blocks: bool,
                  entries: tuple[int, ...] = (), later: tuple[int, ...] = ()) -> NativeRight:
    """R in one call or two blocks; `entries` turn the filter on (first call), `later`
    entries come with the second block (or alone, after R in one call)."""
    right = NativeRight(ng)
    if entries and blocks:
        first = [e for e in r_edges if e[0] < split]
        assert right.add(split, first, [f for f in finals if f < split],
                         entries) is CoreVerdict.YES
        rest = [e for e in r_edges if e[0] >= split]
        assert right.add(n_r, rest, [f for f in finals if f >= split],
                         later) is CoreVerdict.YES
    elif entries:  # one call, with the context filter on
        assert right.add(n_r, r_edges, finals, entries) is CoreVerdict.YES
        if later:
            assert right.add(n_r, [], [], later) is CoreVerdict.YES
    elif blocks:
        first = [e for e in r_edges if e[0] < split]
        assert right.add(split, first, [f for f in finals if f < split]) is CoreVerdict.YES
        rest = [e for e in r_edges if e[0] >= split]
        assert right.add(n_r, rest, [f for f in finals if f >= split]) is CoreVerdict.YES
    else:
        assert right.add(n_r, r_edges, finals) is CoreVerdict.YES
    return right


def flat_exits(exits) -> list[int]:
    return [x for e in exits for x in e]


@SETTINGS
@given(problems(), st.sampled_from(["one call", "blocks", "filtered"]))
def test_query_agrees_with_the_checker_on_the_whole_nfa(problem, build):
    """R built in one call, in two blocks, or in one call with the context filter for the
    states the exits enter."""
    g, word, n_j, j_edges, n_r, split, r_edges, finals, exits = problem
    ng = native(g)
    want = checker_verdict(ng, word, n_j, j_edges, n_r, r_edges, finals, exits)
    parser = NativeParser(ng)
    if parser.push(word) is CoreVerdict.NO:
        assert want is CoreVerdict.NO
        return
    entries = tuple(sorted({r for _, _, r in exits})) if build == "filtered" else ()
    right = right_context(ng, n_r, split, r_edges, finals, build == "blocks", entries)
    got = parser.query(right, n_j, j_edges, flat_exits(exits))
    assert got is want
    assert parser.position == len(word)  # the question leaves the parser where it was


@SETTINGS
@given(problems(), st.sampled_from(["blocks", "entries later"]), st.data())
def test_filtered_context_that_grows_answers_like_the_checker(problem, build, data):
    """A filtered R that grows (a right context shared by the entries a hole's generation
    reaches one after another): the first call enters at state 0 and at some exit targets,
    the second brings the other targets, on old states or new ones; the answers are the
    checker's, and a question asked between the calls stays answered right after them."""
    g, word, n_j, j_edges, n_r, split, r_edges, finals, exits = problem
    ng = native(g)
    want = checker_verdict(ng, word, n_j, j_edges, n_r, r_edges, finals, exits)
    parser = NativeParser(ng)
    if parser.push(word) is CoreVerdict.NO:
        assert want is CoreVerdict.NO
        return
    targets = sorted({r for _, _, r in exits})
    limit = split if build == "blocks" else n_r
    early = data.draw(st.sets(st.sampled_from(targets)), label="early entries")
    first = tuple(sorted({0, *(r for r in early if r < limit)}))
    later = tuple(r for r in targets if r not in first)
    right = right_context(ng, n_r, split, r_edges, finals, build == "blocks", first, later)
    assert parser.query(right, n_j, j_edges, flat_exits(exits)) is want


@SETTINGS
@given(problems(), st.integers(0, 4))
def test_a_parser_asks_again_after_the_filtered_context_grew(problem, late):
    """Tables the parser derived before a filtered R took a new entry are not reused."""
    g, word, n_j, j_edges, n_r, split, r_edges, finals, exits = problem
    ng = native(g)
    parser = NativeParser(ng)
    if parser.push(word) is CoreVerdict.NO:
        return
    late %= n_r
    right = NativeRight(ng)
    assert right.add(n_r, r_edges, finals, [0]) is CoreVerdict.YES
    at_zero = [(a, lab, 0) for a, lab, _ in exits]
    parser.query(right, n_j, j_edges, flat_exits(at_zero))
    assert right.add(n_r, [], [], [late]) is CoreVerdict.YES
    moved = [(a, lab, late) for a, lab, _ in exits]
    want = checker_verdict(ng, word, n_j, j_edges, n_r, r_edges, finals, moved)
    assert parser.query(right, n_j, j_edges, flat_exits(moved)) is want


@settings(SETTINGS, max_examples=3000)  # fewer examples let single-rule mutants through
@given(problems(), st.sampled_from(["blocks", "filtered"]))
def test_tables_derived_before_the_context_grew_are_brought_up_to_date(problem, build):
    """The parser keeps its Up rows across a growth of R and adds what the growth brings
    (hf_parser__refresh): a question into the first block, then the same and the original
    questions after the second block (new states, triples, finals, and with the filter new
    entries on old states), answer as the checker does on the whole R."""
    g, word, n_j, j_edges, n_r, split, r_edges, finals, exits = problem
    ng = native(g)
    parser = NativeParser(ng)
    if parser.push(word) is CoreVerdict.NO:
        return
    inside = [(a, lab, r % split) for a, lab, r in exits]
    right = NativeRight(ng)
    entries = sorted({0, *(r for _, _, r in inside)}) if build == "filtered" else []
    first = [e for e in r_edges if e[0] < split]
    assert right.add(split, first, [f for f in finals if f < split],
                     entries) is CoreVerdict.YES
    before = [e for e in first if e[2] < split]
    assert parser.query(right, n_j, j_edges, flat_exits(inside)) is checker_verdict(
        ng, word, n_j, j_edges, split, before, [f for f in finals if f < split], inside)
    later = sorted({r for _, _, r in exits} - set(entries)) if build == "filtered" else []
    rest = [e for e in r_edges if e[0] >= split]
    assert right.add(n_r, rest, [f for f in finals if f >= split], later) is CoreVerdict.YES
    for asked in (inside, exits):
        want = checker_verdict(ng, word, n_j, j_edges, n_r, r_edges, finals, asked)
        assert parser.query(right, n_j, j_edges, flat_exits(asked)) is want


@SETTINGS
@given(problems(), st.lists(st.integers(0, 2), max_size=3))
def test_rolling_back_gives_the_answers_of_a_fresh_parser(problem, extra):
    g, word, n_j, j_edges, n_r, split, r_edges, finals, exits = problem
    ng = native(g)
    right = right_context(ng, n_r, split, r_edges, finals, blocks=False)
    fresh = NativeParser(ng)
    if fresh.push(word) is CoreVerdict.NO:
        return
    want = fresh.query(right, n_j, j_edges, flat_exits(exits))
    parser = NativeParser(ng)
    parser.push(word)
    parser.query(right, n_j, j_edges, flat_exits(exits))  # tables computed, then extended
    more = [t % g.n_terminals for t in extra]
    parser.push(more)
    parser.query(right, n_j, j_edges, flat_exits(exits))
    parser.truncate(len(word))
    assert parser.position == len(word)
    assert parser.query(right, n_j, j_edges, flat_exits(exits)) is want


@SETTINGS
@given(grammars(), st.lists(st.integers(0, 2), max_size=5))
def test_accepts_agrees_with_the_checker_on_a_chain(g, word):
    word = [t % g.n_terminals for t in word]
    ng = native(g)
    edges = [(i, t, i + 1, 0) for i, t in enumerate(word)]
    want = NativeChecker(ng).run(len(word) + 1, edges, [0], [len(word)]).verdict
    parser = NativeParser(ng)
    if parser.push(word) is CoreVerdict.NO:
        assert want is CoreVerdict.NO
        return
    assert parser.accepts() is (want is CoreVerdict.YES)


@SETTINGS
@given(st.lists(problems(), min_size=2, max_size=4), st.booleans())
def test_one_parser_answers_each_new_right_context_like_a_fresh_parser(seq, forget):
    """Right contexts made and dropped one after another (an engine's cache evicting them)
    while one parser lives: each is answered as a fresh parser answers it. Before the parser
    kept and forgot the contexts it queried, a new one allocated where a dropped one had been
    (same address, same version) was answered from the dropped one's tables."""
    g = seq[0][0]
    ng = native(g)
    parser = NativeParser(ng)
    for problem in seq:
        _, _, n_j, j_edges, n_r, split, r_edges, finals, exits = problem
        if max(max((a, b) for a, _, b, _ in r_edges or [(0, 0, 0, 0)])) >= n_r:
            continue
        r_edges = [(a, lab % g.n_terminals if lab >= 0 else -1, b, w)
                   for a, lab, b, w in r_edges]
        exits = [(a, lab % g.n_terminals if lab >= 0 else -1, r) for a, lab, r in exits]
        j_edges = [(a, lab % g.n_terminals if lab >= 0 else -1, b, w)
                   for a, lab, b, w in j_edges]
        right = right_context(ng, n_r, split, r_edges, finals, blocks=False)
        want = NativeParser(ng).query(right, n_j, j_edges, flat_exits(exits))
        assert parser.query(right, n_j, j_edges, flat_exits(exits)) is want
        if forget:
            parser.forget(right)
        del right


def test_an_exit_into_a_state_that_reaches_a_final_by_epsilon_ends_the_sentence() -> None:
    """R: state 1 -ε-> final 0. The input `a` then an exit into state 1 with nothing more is
    the sentence `a` (S -> a); the right context marks state 1 final for the parser. Built
    in one call, in blocks, and filtered with entries coming later."""
    ng = NativeGrammar(1, 2, 1, [], [(1, 0)], [])
    builds = [
        lambda r: [r.add(2, [(1, -1, 0, 0)], [0])],
        lambda r: [r.add(1, [], [0]), r.add(2, [(1, -1, 0, 0)], [])],
        lambda r: [r.add(1, [], [0], [0]), r.add(2, [(1, -1, 0, 0)], [], [1])],
    ]
    for build in builds:
        right = NativeRight(ng)
        assert all(v is CoreVerdict.YES for v in build(right))
        assert NativeParser(ng).query(right, 1, [], [0, 0, 1]) is CoreVerdict.YES


def test_an_old_state_that_becomes_an_entry_gets_the_triples_the_filter_dropped() -> None:
    """S -> a B, B -> b; R: 0 -c-> 1 -b-> 2 (final), entered at 0 first. Only `c` comes
    before state 1, and B never follows `c`, so the filter drops (1, B, 2). When state 1
    becomes an entry (the left may end with `a`), the growth must derive it again: `a`,
    then R from state 1, is the sentence `a b`."""
    a, b, c, s, big_b = 0, 1, 2, 3, 4
    ng = NativeGrammar(3, 5, s, [(s, a, big_b)], [(big_b, b)], [])
    right = NativeRight(ng)
    assert right.add(3, [(0, c, 1, 0), (1, b, 2, 0)], [2], [0]) is CoreVerdict.YES
    before = right.n_items
    assert right.add(3, [], [], [1]) is CoreVerdict.YES
    assert right.n_items > before
    parser = NativeParser(ng)
    assert parser.push([a]) is CoreVerdict.YES
    assert parser.query(right, 1, [], [0, -1, 1]) is CoreVerdict.YES
    assert parser.query(right, 1, [], [0, -1, 0]) is CoreVerdict.NO  # `a c b` is not one


def test_a_new_triple_into_an_old_row_reaches_the_tables_derived_before_the_growth() -> None:
    """S -> A C, A -> a, C -> c; R: 0 -c-> 1 (final). Asked first (exit `a` into state 0),
    the parser derives Up(0, A) = {0}. R then grows by state 2 -c-> 1: the new triple
    (2, C, 1) ends in the old row Up(0, S) = {1}, so state 2 joins Up(0, A), and `a` into
    state 2 is the sentence `a c` (hf_parser__refresh: pre_δ over the new triples of the
    parent's whole row; a refresh that skips them answers NO)."""
    a, c, s, big_a, big_c = 0, 1, 2, 3, 4
    ng = NativeGrammar(2, 5, s, [(s, big_a, big_c)], [(big_a, a), (big_c, c)], [])
    right = NativeRight(ng)
    assert right.add(2, [(0, c, 1, 0)], [1]) is CoreVerdict.YES
    parser = NativeParser(ng)
    assert parser.query(right, 1, [], [0, a, 0]) is CoreVerdict.YES
    assert right.add(3, [(2, c, 1, 0)], []) is CoreVerdict.YES
    assert parser.query(right, 1, [], [0, a, 2]) is CoreVerdict.YES
    assert parser.query(right, 1, [], [0, a, 1]) is CoreVerdict.NO  # `a` alone is not one
    assert NativeParser(ng).query(right, 1, [], [0, a, 2]) is CoreVerdict.YES
