"""The native raw graph (native/hf_lexer.c) is the Python RawGraph, exactly.

The Python path (`HoleLexer.native = False`) is the reference oracle: for texts with 0-3
holes in the tiny test languages, Python, C++ and C, with the text's own anchors and with
anchors.PLAIN, both build the same states in the same order and the same edges in the same
order with the same labels, weights, kinds, terms and spans; graphs grown later by
`state_of` / `expand` stay equal (snapshots and `grown_since`); a budget runs out at the same
step. A fixed sample of cuts of real files (standard library, the C/C++ corpus) checks the
same on texts of realistic size.

Data: tests/data/lexing/*.lark, tests/data/corpus (C/C++ files), and Python standard-library
modules of the running interpreter.
"""

from __future__ import annotations

import os
import random
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from holefill.budget import Budget, BudgetExhausted
from holefill.datasets import random_holes
from holefill.grammar import compile_grammar_file
from holefill.languages import get_language
from holefill.lexing.anchors import PLAIN
from holefill.lexing.holes import HoleLexer, LexemeNFA, Place

DATA = Path(__file__).parent.parent / "data"
EXAMPLES = int(os.environ.get("HOLEFILL_EXAMPLES", 60))


def hole_lexer(name: str) -> HoleLexer:
    if name in ("tiny", "kw"):
        cg = compile_grammar_file(DATA / "lexing" / f"{name}.lark", name)
        return HoleLexer(cg.lexer, cg.grammar.terminals)
    spec = get_language(name)
    lexer = spec.make_lexer(spec.compile())
    return lexer.holes if hasattr(lexer, "holes") else lexer.layout.raw  # type: ignore[attr-defined]


LEXERS = {name: hole_lexer(name) for name in ("tiny", "kw", "python", "cpp", "c")}

# Pieces the texts are made of: characters and the openers and closers that make lexing with
# holes interesting (strings, comments, triple quotes, directives, keywords inside names).
PIECES = {
    "tiny": list("abc \"'x=;\n") + ["\u00e9", "\ud800", "\U0001f600"],
    "kw": ["if", "iff", "x", " ", "#", "\n", "a", "1"],
    "python": ["x", "1", " ", "\n", "    ", "'", '"', '"""', "'''", "#", "(", ")", "def ", ":",
               "=", "f'", "{", "}", "\\", "b'", ".", "0x", "e", "_", "r'", "\u00e9", "\u2028",
               "\U0001f600"],
    "cpp": ["x", "1", " ", "\n", "/*", "*/", "//", '"', "'", "#define ", "#if ", "\\", "{",
            "}", ";", "<", ">", "::", "R\"(", ")\"", "u8", "int ", "0x", ".", "e"],
    "c": ["x", "1", " ", "\n", "/*", "*/", "//", '"', "'", "#include ", "#if ", "\\", "{",
          "}", ";", "(", ")", "L'", "0x", ".", "e", "->"],
}


def _graphs_equal(a: LexemeNFA, b: LexemeNFA) -> None:
    assert a.n_states == b.n_states
    assert a.starts == b.starts
    assert a.finals == b.finals
    assert a.hole_states == b.hole_states
    assert list(a.edges) == list(b.edges)
    assert a.kinds == b.kinds
    assert a.terms == b.terms
    assert [b.spans[e] for e in range(0, b.n_edges, 7)] == a.spans[::7]  # read one by one
    assert list(a.spans) == list(b.spans)


def _both(lexer: HoleLexer, chunks: list[str], anchors=None, budget_steps=None):
    """(Python graph, native graph) of chunks, the Python one without its hole-run cache."""
    out = []
    for native in (False, True):
        lexer.native = native
        lexer._hole_runs.clear()
        budget = None if budget_steps is None else Budget(steps=budget_steps)
        out.append(lexer.graph(chunks, anchors, budget))
    lexer.native = True
    return out


def _chunks(name: str):
    piece = st.sampled_from(PIECES[name])
    chunk = st.lists(piece, max_size=6).map("".join)
    return st.lists(chunk, min_size=1, max_size=4)


@pytest.mark.parametrize("name", list(LEXERS))
@pytest.mark.parametrize("anchored", [True, False], ids=["anchors", "plain"])
def test_native_graph_equals_python_graph(name: str, anchored: bool) -> None:
    @settings(max_examples=EXAMPLES, deadline=None)
    @given(_chunks(name))
    def check(chunks: list[str]) -> None:
        lexer = LEXERS[name]
        anchors = None if anchored else PLAIN
        py, nat = _both(lexer, chunks, anchors)
        py.expand([Place(0, 0)])
        nat.expand([Place(0, 0)])
        _graphs_equal(py.nfa(), nat.nfa())

    check()


@pytest.mark.parametrize("name", ["python", "cpp", "kw"])
def test_graphs_grown_at_later_places_stay_equal(name: str) -> None:
    """Growing by state_of at places a lexer session asks for (any position of any chunk,
    with or without a kill obligation) adds the same states and edges on both paths."""

    @settings(max_examples=EXAMPLES, deadline=None)
    @given(_chunks(name), st.lists(st.tuples(st.integers(0, 3), st.integers(0, 30),
                                             st.integers(-1, 5)), max_size=5))
    def check(chunks: list[str], asks: list[tuple[int, int, int]]) -> None:
        lexer = LEXERS[name]
        py, nat = _both(lexer, chunks)
        _graphs_equal(py.nfa(), nat.nfa())
        for j, k, kill in asks:
            j = j % len(chunks)
            place = Place(j, min(k, len(chunks[j])), kill=kill)
            had_states, had_edges = py.size()
            assert nat.size() == (had_states, had_edges)
            assert py.state_of(place) == nat.state_of(place)
            assert py.grown_since(had_states, had_edges // 4) == \
                nat.grown_since(had_states, had_edges // 4)
        _graphs_equal(py.nfa(), nat.nfa())

    check()


@pytest.mark.parametrize("name", ["python", "cpp"])
def test_budget_runs_out_at_the_same_step(name: str) -> None:
    """The native path spends per new edge and per step of a set run, as the Python path
    does: a budget runs out on both or neither, with the same steps spent."""

    @settings(max_examples=max(EXAMPLES // 3, 10), deadline=None)
    @given(_chunks(name), st.floats(0, 1.2))
    def check(chunks: list[str], share: float) -> None:
        lexer = LEXERS[name]
        lexer.native, budget = False, Budget(steps=None)
        lexer._hole_runs.clear()
        lexer.graph(chunks, None, budget)
        lexer.native = True
        steps = int(budget.spent * share)
        spent, raised = [], []
        for native in (False, True):
            lexer.native = native
            lexer._hole_runs.clear()
            b = Budget(steps=steps)
            try:
                lexer.graph(chunks, None, b)
                raised.append(None)
            except BudgetExhausted as e:
                raised.append(str(e))
            spent.append(b.spent)
        lexer.native = True
        assert raised[0] == raised[1] and spent[0] == spent[1]

    check()


def _stdlib(name: str) -> str:
    return (Path(sysconfig.get_paths()["stdlib"]) / name).read_text(encoding="utf-8")


REAL_FILES = [
    ("python", "textwrap.py"), ("python", "json/decoder.py"), ("python", "string.py"),
    ("python", "shlex.py"), ("python", "fnmatch.py"), ("python", "argparse.py"),
    ("python", "dataclasses.py"), ("python", "tokenize.py"), ("python", "gettext.py"),
    ("python", "statistics.py"),
    ("cpp", "boost/bad_optional_access.hpp"), ("cpp", "cli11/Timer.hpp"),
    ("cpp", "googletest/gtest_main_unittest.cc"), ("cpp", "googletest/sample1.h"),
    ("cpp", "pybind11/test_python_multiple_inheritance.cpp"),
    ("c", "brotli/compound_dictionary.c"), ("c", "psutil/heap.c"),
    ("c", "zstandard/frameparams.c"), ("cpp", "cli11/Timer.hpp"), ("c", "psutil/heap.c"),
]


@pytest.mark.parametrize("case", range(len(REAL_FILES)))
def test_native_graph_equals_python_graph_on_cuts_of_real_files(case: int) -> None:
    name, path = REAL_FILES[case]
    text = _stdlib(path) if name == "python" else (DATA / "corpus" / path).read_text(
        encoding="utf-8", errors="replace")
    rng = random.Random(case)
    chunks = random_holes(text, 1 + case % 3, rng)
    py, nat = _both(LEXERS[name], chunks)
    _graphs_equal(py.nfa(), nat.nfa())
    for _ in range(3):  # a session's growth: lexemes from places in the first chunk
        place = Place(0, rng.randrange(len(chunks[0]) + 1))
        assert py.state_of(place) == nat.state_of(place)
    _graphs_equal(py.nfa(), nat.nfa())


def test_graphs_built_on_several_threads_share_one_native_lexer() -> None:
    """cffi drops the GIL around the C build, and lexers are shared between threads: graphs
    built at once on four threads (the lexer's closure caches filled concurrently, from a
    fresh C lexer) equal the Python graphs of the same texts."""
    from concurrent.futures import ThreadPoolExecutor

    from holefill.lexing import native_holes

    spec = get_language("cpp")
    lexer = spec.make_lexer(spec.compile()).holes  # type: ignore[attr-defined]
    native_holes._by_dfa.pop(id(lexer.dfa), None)  # a C lexer with empty caches
    rng = random.Random(3)
    texts = [["".join(rng.choice(PIECES["cpp"]) for _ in range(rng.randint(0, 12)))
              for _ in range(rng.randint(2, 4))] for _ in range(40)]
    lexer.native = False
    want = [lexer.build(chunks) for chunks in texts]
    lexer.native = True
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lexer.build, texts))
    for a, b in zip(want, got, strict=True):
        _graphs_equal(a, b)


@pytest.mark.parametrize("place", [Place(3, 0), Place(-1, 0), Place(0, -2),
                                   Place(0, 0, kill=10**6)])
def test_a_place_outside_the_text_is_refused(place: Place) -> None:
    """Growing the native graph from a place that is not in its text raises ValueError and
    leaves the graph as it was (C never indexes past its arrays)."""
    lexer = LEXERS["python"]
    graph = lexer.graph(["x = 1", "\n"])
    before = graph.size()
    with pytest.raises(ValueError):
        graph.expand([place])
    assert graph.size() == before


def test_native_graphs_free_every_block_they_allocate() -> None:
    """A native graph's C memory goes with it: after graphs are built, grown, cut short by a
    budget and dropped, the core's live block count is back where it was (measured on a
    second pass, once the C lexer kept per DFA has cached what these texts need)."""
    import gc

    from holefill._native import lib

    lexer = LEXERS["cpp"]
    lexer.native = True

    def graphs() -> None:
        for chunks in (["int x = ", ";\n"], ["/* a", "b */ int", "y;", "\n"],
                       ["#define A ", "\n"]):
            graph = lexer.graph(chunks)
            graph.state_of(Place(0, 1))
            graph.nfa()
            with pytest.raises(BudgetExhausted):
                lexer.graph(chunks, None, Budget(steps=3))

    graphs()
    gc.collect()
    before = lib.hf_live_blocks()
    graphs()
    gc.collect()
    assert lib.hf_live_blocks() == before
