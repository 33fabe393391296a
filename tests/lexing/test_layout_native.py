"""The layout product in C (native/hf_layout.c) against the Python rules it transliterates
(PythonLayoutLexer(native=False), the reference): the very same product, array for array --
states, edges in order, kinds, terminals, spans, raw edges, starts, the layouts of states and
strict mode's indentation steps -- for whole files with holes, for sessions grown entry by
entry under a growing raw graph, and when the budget runs out."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_product_session import AFTER, layouts

from holefill import Checker
from holefill.budget import Budget, BudgetExhausted
from holefill.datasets import python_cuts
from holefill.lexing.holes import LexemeNFA, Place
from holefill.lexing.layout_native import NativeSession
from holefill.lexing.python_layout import Layout, PythonLayoutLexer


@pytest.fixture(scope="module")
def lexers() -> tuple[PythonLayoutLexer, PythonLayoutLexer]:
    compiled = Checker.for_language("python").compiled
    return PythonLayoutLexer(compiled, native=False), PythonLayoutLexer(compiled, native=True)


def product_of(nfa: LexemeNFA) -> dict[str, object]:
    return {"n_states": nfa.n_states, "edges": list(nfa.edges), "starts": list(nfa.starts),
            "finals": list(nfa.finals), "kinds": list(nfa.kinds), "terms": list(nfa.terms),
            "spans": list(nfa.spans), "raw_edge": list(nfa.raw_edge),
            "state_info": dict(nfa.state_info)}


def session_of(session: object) -> dict[str, object]:
    prod = session.prod  # type: ignore[attr-defined]
    return {"n_states": prod.n_states, "edges": list(prod.edges), "kinds": list(prod.kinds),
            "terms": list(prod.terms), "spans": list(prod.spans),
            "raw_edge": list(prod.raw_edge), "final": session.final,  # type: ignore[attr-defined]
            "ids": dict(session.ids)}  # type: ignore[attr-defined]


def assert_same_build(lexers, chunks: list[str]) -> None:
    ref, nat = lexers
    want = product_of(ref.build(chunks))
    want_steps = ref._steps
    got = product_of(nat.build(chunks))
    assert nat._steps == want_steps
    for field, value in want.items():
        assert got[field] == value, field


CASES = [
    ["x = 1\n"],
    ["def f(x):\n    ", "\n    return x\n"],
    ["if a:\n  b(", ")\n  c = [1,\n 2]\nelse:\n\tpass\n"],
    ["x = 1 \\\n  + 2\n", "\n# c\n  y\n", ""],
    ["class A:\n    def f(self):\n        ", "\n", "    z = (1 +\n", ")\n"],
    ["def g():\n    return {\n        'a': [", "],\n    }\n"],
    ["if x:  # note\n    y = 1", "\n  \\\n    z\n"],
    ["for i in range(3):\n\tif i:\n\t\t", "\n\telse:\n\t\tbreak\n"],
    ["    ", "x = 1\n"],
    ["try:\n    pass\n", "except E:\n    raise\n"],
]


@pytest.mark.parametrize("chunks", CASES)
def test_native_product_equals_python_product_on_hand_cases(lexers, chunks) -> None:
    assert_same_build(lexers, chunks)


LINES = ["def f(a, b):", "    return a + b", "class C(Base):", "    x = [1,", "         2]",
         "if x:", "\tpass", "else:", "    y = (a", "         + b)", "# comment", "",
         "z = 1 \\", "    + 2", "while True:", "        break", "  s = {'k': f(x)}",
         "    '''doc", "    string'''", "@dec", "async def g():", "    await h()"]


@st.composite
def texts_with_holes(draw) -> list[str]:
    lines = draw(st.lists(st.sampled_from(LINES), min_size=1, max_size=8))
    text = "\n".join(lines) + draw(st.sampled_from(["\n", ""]))
    n = draw(st.integers(1, 3))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), min_size=2 * n, max_size=2 * n)))
    chunks, at = [], 0
    for i in range(0, 2 * n, 2):
        chunks.append(text[at:cuts[i]])
        at = cuts[i + 1]
    chunks.append(text[at:])
    return chunks


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts_with_holes())
def test_native_product_equals_python_product_on_random_cuts(lexers, chunks) -> None:
    assert_same_build(lexers, chunks)


@pytest.mark.parametrize(("kind", "holes"), [("span", 1), ("line", 1), ("boundary", 2),
                                             ("span", 3)])
def test_native_product_equals_python_product_on_standard_library_cuts(lexers, kind,
                                                                       holes) -> None:
    for c in python_cuts(kind, 5, seed=14, holes=holes, max_lines=150):
        assert_same_build(lexers, list(c.chunks))


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "holes"), [("span", 1), ("span", 2), ("span", 3),
                                             ("boundary", 1), ("boundary", 3), ("line", 1),
                                             ("cursor", 1), ("cursor", 2)])
def test_native_product_equals_python_product_on_many_standard_library_cuts(lexers, kind,
                                                                            holes) -> None:
    for c in python_cuts(kind, 50, seed=99, holes=holes, max_lines=400):
        assert_same_build(lexers, list(c.chunks))


def test_sessions_grown_entry_by_entry_stay_equal(lexers) -> None:
    """The entries of test_product_session's shared session, also at places the raw graph
    reaches only later (`refresh`): after every entry both sessions hold the same product."""
    ref, nat = lexers
    chunks = ["", AFTER]
    graphs = [ref.raw.graph(chunks), nat.raw.graph(chunks)]
    sessions: list[object] = [None, None]
    keys = layouts((0, 4, 8))
    unseen = [p for p in (Place(1, i) for i in range(len(AFTER))) if p not in graphs[0].done]
    places = [Place(hole=0)] * len(keys) + [Place(1, 4), unseen[len(unseen) // 2]]
    keys += [Layout(1, (0, 4, 8), 1, -1)] * 2
    for place, key in zip(places, keys, strict=True):
        got = []
        for i, lx in enumerate((ref, nat)):
            rs = graphs[i].state_of(place)
            raw = graphs[i].nfa()
            if sessions[i] is None:
                sessions[i] = lx.product_session(chunks, raw, 4)
            lx.refresh(sessions[i], raw)  # type: ignore[arg-type]
            starts = lx.extend(sessions[i], [(rs, key)])  # type: ignore[arg-type]
            got.append((starts, set(lx._steps), session_of(sessions[i])))
        assert got[0] == got[1]
    assert isinstance(sessions[1], NativeSession)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=6), st.data())
def test_random_sessions_grown_entry_by_entry_stay_equal(lexers, lines, data) -> None:
    """Entries at random places of the text after a hole (the hole itself, or any position,
    also ones the raw graph reaches only later) with random keys: both sessions stay equal
    after every entry."""
    text = "\n".join(lines) + "\n"
    chunks = ["", text]
    ref, nat = lexers
    graphs = [ref.raw.graph(chunks), nat.raw.graph(chunks)]
    sessions: list[object] = [None, None]
    stack = data.draw(st.sampled_from([(0,), (0, 4), (0, 4, 8), (0, 2)]))
    keys = layouts(stack) + [Layout(d, stack, 1, -1) for d in (0, 1, 2)]
    for _ in range(data.draw(st.integers(1, 5))):
        at_hole = data.draw(st.booleans())
        pos = data.draw(st.integers(0, len(text) - 1))
        place = Place(hole=0) if at_hole else Place(1, pos)
        key = data.draw(st.sampled_from(keys if at_hole else keys[-3:]))
        got = []
        for i, lx in enumerate((ref, nat)):
            rs = graphs[i].state_of(place)
            raw = graphs[i].nfa()
            if sessions[i] is None:
                sessions[i] = lx.product_session(chunks, raw, None)
            lx.refresh(sessions[i], raw)  # type: ignore[arg-type]
            starts = lx.extend(sessions[i], [(rs, key)])  # type: ignore[arg-type]
            got.append((starts, set(lx._steps), session_of(sessions[i])))
        assert got[0] == got[1]


@pytest.mark.parametrize("steps", [0, 7, 150, 2000])
def test_budget_runs_out_at_the_same_step(lexers, steps) -> None:
    chunks = ["class A:\n    def f(self, x):\n        ", "\n        return [x,\n", "]\n"]
    outcomes = []
    for lx in lexers:
        raw = lx.raw.build(chunks)
        budget = Budget(steps)
        try:
            lx._product(chunks, raw, 4, budget=budget)
            outcomes.append(("done", budget.spent))
        except BudgetExhausted as exc:
            outcomes.append((str(exc), budget.spent))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] != "done" or steps == 2000


def test_malformed_raw_edges_are_refused_and_the_session_stays_refused() -> None:
    """An edge leaving a state the snapshot does not have is an error (-1) and every later
    call on the session is too (-3), instead of a read out of bounds."""
    from array import array

    from holefill._native import ffi, lib

    def buf(xs: list[int]):
        return ffi.from_buffer("int32_t[]", array("i", xs))

    ptr = ffi.gc(lib.hf_layout_new(buf([0, 1, 2, 3, 4, 5, 6, 0, 8, 1]), 10, buf([0] * 8), 8,
                                   buf([7, 1]), 1, buf([0]), buf([0]), 1),
                 lib.hf_layout_delete)
    assert ptr != ffi.NULL
    one = buf([-1])
    assert lib.hf_layout_raw(ptr, 1, one, buf([1]), one, 1, buf([0, 7, 5, 0]), buf([1]),
                             buf([7]), 0, ffi.NULL) == -1
    key = lib.hf_layout_key(ptr, buf([0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0]), 11)
    starts = ffi.new("int32_t[]", 1)
    assert key == -1
    assert lib.hf_layout_extend(ptr, buf([0, 0]), 1, -1, ffi.NULL, ffi.NULL, starts) == -3
