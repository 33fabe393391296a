"""A product session grown by entries (PythonLayoutLexer.extend) against the product built
for each entry alone (`_product`, the reference): from each entry's state, the shared NFA
is the entry's own product up to state numbering (same edges, labels, kinds, terminals and
raw edges, in the same order), also after the raw graph grew under the session (an entry at
a place no lexeme had reached, `refresh`)."""

from __future__ import annotations

from holefill import Checker
from holefill.lexing.holes import LexemeNFA, Place
from holefill.lexing.python_layout import (
    LINE_TOKENS_SOME,
    PENDING_NONE,
    Layout,
    PythonLayoutLexer,
    hole_key,
    open_key,
)


def reachable_shape(nfa: LexemeNFA, start: int) -> list[tuple]:
    """The NFA from `start`, states renumbered by discovery (edges in insertion order)."""
    out: dict[int, list[int]] = {}
    for e in range(nfa.n_edges):
        out.setdefault(nfa.edges[4 * e], []).append(e)
    ids, order, shape = {start: 0}, [start], []
    for s in order:
        for e in out.get(s, ()):
            _, label, t, weight = nfa.edge(e)
            if t not in ids:
                ids[t] = len(order)
                order.append(t)
            shape.append((ids[s], label, ids[t], weight, nfa.kinds[e], nfa.terms[e],
                          nfa.raw_edge[e], t in nfa.finals))
    return shape


def session_nfa(layout: PythonLayoutLexer, session) -> LexemeNFA:
    prod = session.prod
    return LexemeNFA(n_states=prod.n_states, edges=prod.edges, starts=[],
                     finals=[session.final], kinds=prod.kinds, terms=prod.terms,
                     spans=prod.spans, hole_states=[], raw=session.raw,
                     raw_edge=prod.raw_edge, state_info={})


def layouts(stack: tuple[int, ...]) -> list[object]:
    """Entry keys a generation reaches: the hole on a line with tokens (with and without a
    comment before it), at a line start with indentation carried, at deeper levels."""
    lay = Layout(0, stack, LINE_TOKENS_SOME, PENDING_NONE, text_top=True)
    return [hole_key(lay), hole_key(lay._replace(comment=True)), open_key(stack),
            open_key(stack, 4), hole_key(lay._replace(stack=(*stack, stack[-1] + 4))),
            open_key((*stack, stack[-1] + 4), 2), hole_key(lay._replace(depth=1))]


AFTER = ("x = f(a,\n          b)\n        if x:\n            return [x,\n"
         "                    y]  # done\n        return None\n\n\ndef g():\n    pass\n")


def test_each_entry_of_a_shared_session_sees_its_own_product() -> None:
    layout = PythonLayoutLexer(Checker.for_language("python").compiled)
    chunks = ["", AFTER]
    graph = layout.raw.graph(chunks)
    session = None
    entries: list[tuple[int, object]] = []
    keys = layouts((0, 4, 8))
    # entries inside the text after the hole: where a lexeme from the hole ends, and where
    # none does (in the middle of a keyword: the raw graph grows under the session)
    unseen = [p for p in (Place(1, i) for i in range(len(AFTER))) if p not in graph.done]
    places = [Place(hole=0)] * len(keys) + [Place(1, 4), unseen[len(unseen) // 2]]
    keys += [Layout(1, (0, 4, 8), LINE_TOKENS_SOME, PENDING_NONE)] * 2
    grew = 0
    for place, key in zip(places, keys, strict=True):
        before = graph.nfa().n_edges
        rs = graph.state_of(place)
        raw = graph.nfa()
        grew += raw.n_edges > before
        if session is None:
            session = layout.product_session(chunks, raw, 4)
        layout.refresh(session, raw)
        starts = layout.extend(session, [(rs, key)])
        entries.append((rs, key))
        shared = session_nfa(layout, session)
        own = layout._product(chunks, raw, 4, entries=[(rs, key)])
        assert len(starts) == len(own.starts)
        if starts:
            assert reachable_shape(shared, starts[0]) == reachable_shape(own, own.starts[0])
    assert grew >= 1  # an entry expanded the raw graph under the session
    # the entries met: the session holds fewer states than their products together
    total = sum(layout._product(chunks, graph.nfa(), 4, entries=[e]).n_states
                for e in entries)
    assert session.prod.n_states < total
