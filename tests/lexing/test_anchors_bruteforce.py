"""Anchored lexing with holes agrees with brute force on tiny languages.

The anchored NFA (holefill.lexing.anchors) must hold exactly the lexings of fillings that keep
the reading of the fixed text. We enumerate every filling of every hole up to a length, lex
the filled text with an independent maximal-munch lexer (Python `re`, with error recovery),
decide by the definition of the anchors module (re-implemented here on that lexer) whether
the filling keeps the reading, and compare with the NFA:

- completeness: the lexing of every filling that keeps the reading is accepted;
- soundness: every short sequence the NFA accepts comes from a filling that keeps it.

Data: tests/data/lexing/str.lark (strings, a line comment, names) and kw.lark.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.lexing.test_holes_bruteforce import nfa_accepts, nfa_words

from holefill.grammar import compile_grammar_file
from holefill.lexing.holes import HoleLexer

DATA = Path(__file__).parent.parent / "data" / "lexing"


class RegexLexer:
    """Longest match over the terminals' regexes, then priority, literal, declaration; a
    position where nothing matches is an error character (label -1)."""

    def __init__(self, terminals) -> None:
        self.terminals = terminals
        self.rx = [(i, re.compile(re.escape(t.literal) if t.literal is not None else t.pattern),
                    t) for i, t in enumerate(terminals)
                   if not (t.example is None and t.literal is None and not t.pattern)]
        self.comment_like = {i for i, t in enumerate(terminals)
                             if t.ignored and not (t.example or "x").isspace()}
        self.blank = {i for i, t in enumerate(terminals)
                      if t.example is not None and t.example.isspace() and not t.literal}

    def lex(self, text: str) -> list[tuple[int, int, int]]:
        # The test grammars' regexes are greedy-longest (no alternation where the first
        # alternative is shorter), so re.match finds each terminal's longest match.
        out, i = [], 0
        while i < len(text):
            best = None
            for k, rx, t in self.rx:
                m = rx.match(text, i)
                if m is None or m.end() == i:
                    continue
                cand = (m.end(), t.priority, t.literal is not None, -k)
                if best is None or cand > best:
                    best = cand
            if best is None:
                out.append((i, i + 1, -1))
                i += 1
            else:
                out.append((i, best[0], -best[3]))
                i = best[0]
        return out


def anchors_by_definition(lx: RegexLexer, chunks: list[str]) -> list[dict | None]:
    """Per chunk after a hole: the points (alpha_s, alpha_c), passes and rho."""
    text = "".join(chunks)
    offsets = list(itertools.accumulate(len(c) for c in chunks))[:-1]
    doc = lx.lex(text)
    out: list[dict | None] = [None]
    for j in range(1, len(chunks)):
        chunk = chunks[j]
        if not chunk:
            out.append({"points": (), "passes": True, "rho": None})
            continue
        real = [(a, b, lab) for a, b, lab in lx.lex(chunk) if lab >= 0]
        alpha_s = real[1][0] if len(real) > 1 else None
        rho = next((a for a, _, lab in real if lab not in lx.blank),
                   len(chunk) if real else None)
        o = offsets[j - 1]
        alpha_c, passes, comment = None, False, False
        for a, b, lab in doc:
            if lab >= 0 and a < o < b:
                comment = lab in lx.comment_like
                if b - o <= len(chunk):
                    alpha_c = b - o
                else:
                    passes = True
        if comment and alpha_c is not None:
            rho = alpha_c if rho is None else max(rho, alpha_c)
        elif comment and passes:
            rho = None
        points = tuple(sorted({x for x in (alpha_s, alpha_c) if x is not None}))
        out.append({"points": points, "passes": passes, "rho": rho})
    return out


def keeps_reading(lx: RegexLexer, chunks: list[str], fills: tuple[str, ...],
                  anchors: list[dict | None]) -> bool:
    text, starts = "", []
    for j, chunk in enumerate(chunks):
        starts.append(len(text))
        text += chunk + (fills[j] if j < len(fills) else "")
    lexemes = lx.lex(text)
    bounds = {a for a, _, _ in lexemes} | {b for _, b, _ in lexemes}
    for j in range(1, len(chunks)):
        spec = anchors[j]
        lo, hi = starts[j], starts[j] + len(chunks[j])
        through = any(a < lo and b > hi for a, b, _ in lexemes)
        covers = spec["passes"] and any(a < lo and b >= hi for a, b, _ in lexemes)
        if covers:
            continue  # like the user's lexeme, one lexeme covers the whole chunk
        if through and not spec["passes"]:
            return False
        if not through and spec["points"] and not any(lo + x in bounds
                                                      for x in spec["points"]):
            return False
        if spec["rho"] is not None and any(lab in lx.comment_like and a < lo
                                           and b > lo + spec["rho"] for a, b, lab in lexemes):
            return False
    return True


def kept_lexings(lx: RegexLexer, chunks: list[str], alphabet: str,
                 max_len: int) -> set[tuple[int, ...]]:
    anchors = anchors_by_definition(lx, chunks)
    words = ["".join(t) for n in range(max_len + 1)
             for t in itertools.product(alphabet, repeat=n)]
    out = set()
    for fills in itertools.product(words, repeat=len(chunks) - 1):
        if not keeps_reading(lx, chunks, fills, anchors):
            continue
        text = "".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True))
        lexemes = lx.lex(text)
        if all(lab >= 0 for _, _, lab in lexemes):
            out.add(tuple(lab for _, _, lab in lexemes if not lx.terminals[lab].ignored))
    return out


@pytest.fixture(scope="module")
def strs():
    cg = compile_grammar_file(DATA / "str.lark", "str")
    return cg, HoleLexer(cg.lexer, cg.grammar.terminals), RegexLexer(cg.grammar.terminals)


@pytest.fixture(scope="module")
def kw():
    cg = compile_grammar_file(DATA / "kw.lark", "kw")
    return cg, HoleLexer(cg.lexer, cg.grammar.terminals), RegexLexer(cg.grammar.terminals)


str_chunk = st.text(alphabet='ab"# \n', max_size=5)
EXAMPLES = int(os.environ.get("HOLEFILL_EXAMPLES", 80))


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(str_chunk, min_size=2, max_size=3))
def test_every_filling_that_keeps_the_reading_is_in_the_anchored_nfa(strs, chunks):
    _, lexer, lx = strs
    nfa = lexer.build(chunks)
    for seq in kept_lexings(lx, chunks, 'a"#=; \n', 3 if len(chunks) == 2 else 2):
        assert nfa_accepts(nfa, seq), (chunks, seq)


@settings(max_examples=EXAMPLES // 4, deadline=None)
@given(st.lists(st.text(alphabet='ab"# \n', max_size=4), min_size=2, max_size=2))
def test_every_short_anchored_lexing_comes_from_a_filling_that_keeps_the_reading(strs, chunks):
    _, lexer, lx = strs
    nfa = lexer.build(chunks)
    # Two lexemes after a line break and a comment fit in six characters (a newline stands
    # for blanks); "=" is left out of the fillings to keep the enumeration small, so words
    # with "=" are not checked.
    eq = lx.terminals.index(next(t for t in lx.terminals if t.literal == "="))
    kept = kept_lexings(lx, chunks, 'a"#;\n', 6)
    for seq in nfa_words(nfa, 2):
        if eq not in seq:
            assert seq in kept, (chunks, seq)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.text(alphabet="ifx=;# \n", max_size=5), min_size=2, max_size=3))
def test_keyword_and_comment_lexings_that_keep_the_reading_are_in_the_nfa(kw, chunks):
    _, lexer, lx = kw
    nfa = lexer.build(chunks)
    for seq in kept_lexings(lx, chunks, "if=#\n ", 2):
        assert nfa_accepts(nfa, seq), (chunks, seq)


def test_two_holes_cannot_turn_the_code_between_them_into_a_string(strs):
    """`x = a;` between two holes stays code: a quote in each hole is no lexing."""
    cg, lexer, lx = strs
    chunks = ["", " x = a; ", ""]
    string = cg.grammar.terminal_id("STRING")
    assert nfa_accepts(lexer.build(chunks, __import__("holefill.lexing.anchors",
                                                      fromlist=["PLAIN"]).PLAIN), (string,))
    assert not nfa_accepts(lexer.build(chunks), (string,))


def test_a_comment_from_a_hole_cannot_hide_the_rest_of_the_line(strs):
    """`x = |a;` with `#` in the hole would comment out `a;`."""
    cg, lexer, _ = strs
    name, eq = cg.grammar.terminal_id("NAME"), cg.grammar.terminal_id('"="')
    nfa = lexer.build(["x = ", "a;\n"])
    assert not nfa_accepts(nfa, (name, eq))
    assert nfa_accepts(nfa, (name, eq, name, cg.grammar.terminal_id('";"')))


def test_inside_a_string_the_filling_may_close_and_reopen_it(strs):
    """`x = "hello |big world";`: the text after the cursor was inside the user's string,
    so a filling may end that string and start another (`"hello " ; y = "big world"`)."""
    cg, lexer, _ = strs
    g = cg.grammar
    name, eq, semi, string = (g.terminal_id(t) for t in ("NAME", '"="', '";"', "STRING"))
    nfa = lexer.build(['x = "hello ', 'big world";\n'])
    assert nfa_accepts(nfa, (name, eq, string, semi))
    assert nfa_accepts(nfa, (name, eq, string, semi, name, eq, string, semi))
