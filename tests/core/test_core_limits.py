"""Budget, cancellation, bad input and memory accounting of the native core."""

from __future__ import annotations

import gc
import time
from array import array

import pytest

from holefill.check.core import (
    CoreVerdict,
    NativeChecker,
    NativeGrammar,
    NativeParser,
    NativeRight,
    live_blocks,
    live_bytes,
    peak_bytes,
)
from holefill.errors import CoreError

# Terminals a=0, b=1, END=2; nonterminals S=3, X=4.
#   S -> X END     X -> X X | a | b
# END never occurs in the NFAs below, so the answer is NO, but only after charting every
# span of the text with the (highly ambiguous) X: cubic work.
A, B, END, S, X = 0, 1, 2, 3, 4


def ambiguous_grammar() -> NativeGrammar:
    return NativeGrammar(3, 5, S, [(S, X, END), (X, X, X)], [(X, A), (X, B)], [])


def dense_nfa(n: int) -> tuple[int, array, list[int], list[int]]:
    """A chain of n states over a/b where every 10th state is a Sigma*-loop hole."""
    edges = array("i")
    for s in range(n - 1):
        edges.extend((s, s % 2, s + 1, 1))
        if s % 10 == 0:
            edges.extend((s, A, s, 1, s, B, s, 1))
    return n, edges, [0], [n - 1]


def test_small_step_budget_answers_unknown_quickly_never_no() -> None:
    """Data: S -> X END, X -> X X | a | b against a 400-state a/b chain with loops (a NO
    instance that needs millions of steps); max_steps=20,000 answers UNKNOWN in well under a
    second, in both modes, and the steps counter stops at the budget."""
    chk = NativeChecker(ambiguous_grammar())
    n, edges, starts, finals = dense_nfa(400)
    for want in (False, True):
        t0 = time.perf_counter()
        res = chk.run(n, edges, starts, finals, max_steps=20_000, want_witness=want)
        assert time.perf_counter() - t0 < 1.0
        assert res.verdict == CoreVerdict.UNKNOWN
        assert res.witness is None
        assert res.stats["steps"] == 20_001


def test_small_item_budget_answers_unknown() -> None:
    """Data: the same NO instance; max_items=500 answers UNKNOWN with at most 500 items."""
    chk = NativeChecker(ambiguous_grammar())
    res = chk.run(*dense_nfa(400), max_items=500)
    assert res.verdict == CoreVerdict.UNKNOWN
    assert res.stats["items"] <= 500


def test_finished_search_on_small_instance_answers_no() -> None:
    """Data: the same grammar on a 30-state chain: with the default budget the search ends
    and answers NO (END never appears)."""
    res = NativeChecker(ambiguous_grammar()).run(*dense_nfa(30))
    assert res.verdict == CoreVerdict.NO


def test_cancel_callback_returning_true_gives_cancelled() -> None:
    """Data: the 400-state NO instance; a cancel callback that says yes at once gives
    CANCELLED, one that says yes on its 3rd poll too (after a few thousand steps), and a
    callback that raises re-raises its exception after the run."""
    chk = NativeChecker(ambiguous_grammar())
    inst = dense_nfa(400)
    assert chk.run(*inst, cancel=lambda: True).verdict == CoreVerdict.CANCELLED
    polls = []

    def third_time() -> bool:
        polls.append(1)
        return len(polls) >= 3

    res = chk.run(*inst, cancel=third_time)
    assert res.verdict == CoreVerdict.CANCELLED
    assert len(polls) == 3
    assert 4096 <= res.stats["steps"] <= 3 * 4096

    def boom() -> bool:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        chk.run(*inst, cancel=boom)
    # A callback that never cancels does not change the answer.
    assert chk.run(*dense_nfa(30), cancel=lambda: False).verdict == CoreVerdict.NO


@pytest.mark.parametrize(
    ("edges", "starts", "finals", "message"),
    [
        ([(0, 3, 1, 0)], [0], [1], "edges[1] (edge 0, label) = 3"),
        ([(0, 0, 1, 0), (0, -2, 1, 0)], [0], [1], "edges[5] (edge 1, label) = -2"),
        ([(0, 0, 7, 0)], [0], [1], "edges[2] (edge 0, to) = 7 is not a state"),
        ([(-1, 0, 1, 0)], [0], [1], "edges[0] (edge 0, from) = -1 is not a state"),
        ([(0, 0, 1, -1)], [0], [1], "edges[3] (edge 0, weight) = -1 is negative"),
        ([(0, -1, 1, -3)], [0], [1], "edges[3] (edge 0, weight) = -3 is negative"),
        ([(0, 0, 1, 0)], [0, 2], [1], "starts[1] = 2 is not a state"),
        ([(0, 0, 1, 0)], [0], [5], "finals[0] = 5 is not a state"),
    ],
)
def test_bad_nfa_raises_core_error_naming_index_and_handle_stays_usable(
    edges: list[tuple[int, int, int, int]], starts: list[int], finals: list[int], message: str
) -> None:
    """Data: a 2-state NFA with one malformed value per case (label, state, negative weight
    on a terminal or an epsilon edge, start, final); the CoreError names the array index,
    and the same checker then answers a valid run (S -> a on 0 -a-> 1) with YES."""
    g = NativeGrammar(2, 3, 2, [], [(2, 0)], [])
    chk = NativeChecker(g)
    with pytest.raises(CoreError) as info:
        chk.run(2, edges, starts, finals)
    assert message in str(info.value)
    res = chk.run(2, [(0, 0, 1, 0)], [0], [1], want_witness=True)
    assert res.verdict == CoreVerdict.YES
    assert res.witness == [(0, 1)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((2, 4, 1, [], [], []), "start = 1 is not a nonterminal"),
        ((2, 4, 2, [(2, 0, 9)], [], []), "binary[2] = 9 is out of range"),
        ((2, 4, 2, [(0, 2, 2)], [], []), "binary[0] = 0 is out of range [2, 4)"),
        ((2, 4, 2, [], [(3, -1)], []), "unary[1] = -1 is out of range"),
        ((2, 4, 2, [], [], [1]), "nullable[0] = 1 is not a nonterminal"),
        ((3, 3, 2, [], [], []), "n_terminals < n_symbols"),
    ],
)
def test_bad_grammar_raises_core_error_naming_index(args: tuple, message: str) -> None:
    """Data: tiny grammars with one out-of-range symbol each."""
    with pytest.raises(CoreError) as info:
        NativeGrammar(*args)
    assert message in str(info.value)


def test_edges_accepted_as_flat_array_flat_list_or_tuples() -> None:
    """Data: S -> a b on 0 -a-> 1 -b-> 2 given three ways; a ragged flat list is an error."""
    chk = NativeChecker(NativeGrammar(2, 3, 2, [(2, 0, 1)], [], []))
    for edges in (
        array("i", [0, 0, 1, 0, 1, 1, 2, 0]),
        [0, 0, 1, 0, 1, 1, 2, 0],
        [(0, 0, 1, 0), (1, 1, 2, 0)],
    ):
        res = chk.run(3, edges, [0], [2], want_witness=True)
        assert res.witness == [(0, 1), (1, 2)]
    with pytest.raises(CoreError, match="quadruples"):
        chk.run(3, [0, 0, 1], [0], [2])


def test_live_blocks_return_to_baseline_after_deleting_everything() -> None:
    """Data: grammars and checkers created, run (YES, NO, UNKNOWN, error) and closed; the
    native live-block counter returns to its starting value."""
    gc.collect()
    before = live_blocks()
    g = ambiguous_grammar()
    chk = NativeChecker(g)
    chk.run(*dense_nfa(40), want_witness=True)
    chk.run(*dense_nfa(400), max_steps=5000)
    with pytest.raises(CoreError):
        chk.run(1, [(0, 9, 0, 0)], [0], [0])
    assert live_blocks() > before
    chk.close()
    g.close()
    del chk, g
    gc.collect()
    assert live_blocks() == before


def test_from_normal_accepts_a_normal_grammar_table() -> None:
    """Data: a NormalGrammar for S -> "(" S ")" | eps (via S -> "(" X, X -> S ")"), checked
    against the NFA of "( <hole> )" where the hole loops on both terminals with weight 1:
    the minimum-weight witness is "( )" (the hole filled with nothing)."""
    from holefill.grammar.tables import NormalGrammar, TerminalInfo

    terminals = tuple(
        TerminalInfo(name, name, name.strip('"'), 0, False, name.strip('"'))
        for name in ('"("', '")"')
    )
    ng = NormalGrammar(terminals, ("s", "x"), 2, ((2, 0, 3), (3, 2, 1)), (), (2,))
    chk = NativeChecker(NativeGrammar.from_normal(ng))
    edges = [(0, 0, 1, 0), (1, -1, 2, 0), (2, 0, 2, 1), (2, 1, 2, 1), (2, -1, 3, 0), (3, 1, 4, 0)]
    res = chk.run(5, edges, [0], [4], want_witness=True)
    assert res.verdict == CoreVerdict.YES
    assert res.witness == [(0, 3), (5, 4)]
    assert res.stats["weight"] == 0


def test_weighted_epsilon_edges_are_valid_input() -> None:
    """Data: S -> a on 0 -eps/2-> 1 -a/1-> 2 -eps/4-> 3: a positive epsilon weight is no
    longer an error; the witness is the a-edge ending (after its epsilon run) in 3, with
    total weight 2 + 1 + 4 = 7."""
    chk = NativeChecker(NativeGrammar(2, 3, 2, [], [(2, 0)], []))
    res = chk.run(4, [(0, -1, 1, 2), (1, 0, 2, 1), (2, -1, 3, 4)], [0], [3], want_witness=True)
    assert res.verdict == CoreVerdict.YES
    assert res.witness == [(1, 3)]
    assert res.stats["weight"] == 7


def _closed_right(limit: int) -> tuple[object, CoreVerdict, int]:
    """A right context over the 400-state NO instance (every span of X), built with
    max_bytes=limit; with the most bytes the core held above its start during the add."""
    right = NativeRight(ambiguous_grammar())
    n, edges, _, finals = dense_nfa(400)
    before = live_bytes()
    peak_bytes(reset=True)
    verdict = right.add(n, edges, finals, max_bytes=limit)
    return right, verdict, peak_bytes() - before


def test_a_right_context_that_reaches_its_memory_bound_answers_unknown_and_holds_no_more():
    """Data: the ambiguous grammar's closure over dense_nfa(400) (about 80,000 triples,
    7 MB). Unbounded it completes; with max_bytes a quarter of that it stops: UNKNOWN,
    incomplete, and neither what it keeps nor what it held at its peak passes the bound."""
    full, verdict, _ = _closed_right(0)
    assert verdict == CoreVerdict.YES and full.complete
    limit = full.bytes // 4
    bounded, verdict, peak = _closed_right(limit)
    assert verdict == CoreVerdict.UNKNOWN
    assert not bounded.complete
    assert bounded.bytes <= limit
    assert peak <= limit


def test_a_question_into_a_context_that_ran_out_of_memory_answers_unknown_never_no():
    """Data: S -> X END with no END in the NFA: the complete context answers NO to "can the
    empty input be completed through it"; the one stopped by its memory bound UNKNOWN."""
    grammar = ambiguous_grammar()
    full, _, _ = _closed_right(0)
    bounded, _, _ = _closed_right(full.bytes // 4)
    exits = [0, -1, 0]  # from the junction's only state, by nothing, into R's state 0
    parser = NativeParser(grammar)
    assert parser.query(full, 1, [], exits) == CoreVerdict.NO
    assert parser.query(bounded, 1, [], exits) == CoreVerdict.UNKNOWN


def test_live_bytes_count_what_a_context_holds_and_return_to_baseline():
    """Data: one complete right context. The core's live bytes grow by at least what the
    context reports holding, and fall back to where they were once it is deleted."""
    gc.collect()
    before = live_bytes()
    right, _, _ = _closed_right(0)
    assert live_bytes() - before >= right.bytes > 0
    del right
    gc.collect()
    assert live_bytes() == before
