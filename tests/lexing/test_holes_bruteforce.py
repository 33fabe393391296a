"""Lexing with holes agrees with brute force on tiny languages.

For short chunks over a small alphabet we enumerate every filling of every hole up to a
length, lex the filled text with an independent maximal-munch lexer (Python `re`, written
here), and compare with the lexeme NFA built by holefill.lexing:

- completeness: every lexeme sequence some filling produces is accepted by the NFA;
- soundness: every short sequence the NFA accepts is produced by some filling.

These tests check the plain semantics (anchors.PLAIN); test_anchors_bruteforce.py checks the
anchored one (fillings that keep the reading of the fixed text).

Data: tests/data/lexing/tiny.lark (overlapping terminals) and kw.lark (keywords inside names,
a line comment).
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from holefill.grammar import compile_grammar_file
from holefill.lexing.anchors import PLAIN
from holefill.lexing.holes import EPSILON, HoleLexer, LexemeNFA

DATA = Path(__file__).parent.parent / "data" / "lexing"


def reference_lexer(terminals):
    """Maximal munch by brute force: longest match, then priority, literal, declaration."""
    compiled = []
    for i, t in enumerate(terminals):
        if t.example is None and t.literal is None and not t.pattern:
            continue
        rx = re.compile(re.escape(t.literal) if t.literal is not None else t.pattern)
        compiled.append((i, rx, t))

    def lex(text: str) -> tuple[int, ...] | None:
        out = []
        i = 0
        while i < len(text):
            best = None
            for j in range(len(text), i, -1):
                cands = [
                    (t.priority, t.literal is not None, -k, k)
                    for k, rx, t in compiled
                    if rx.fullmatch(text, i, j)
                ]
                if cands:
                    best = (j, max(cands)[3])
                    break
            if best is None:
                return None
            j, k = best
            if not terminals[k].ignored:
                out.append(k)
            i = j
        return tuple(out)

    return lex


def nfa_accepts(nfa: LexemeNFA, seq: tuple[int, ...]) -> bool:
    eps: dict[int, list[int]] = {}
    step: dict[tuple[int, int], list[int]] = {}
    for e in range(nfa.n_edges):
        a, lab, b, _ = nfa.edge(e)
        if lab == EPSILON:
            eps.setdefault(a, []).append(b)
        else:
            step.setdefault((a, lab), []).append(b)

    def close(states: set[int]) -> set[int]:
        stack = list(states)
        while stack:
            x = stack.pop()
            for y in eps.get(x, ()):
                if y not in states:
                    states.add(y)
                    stack.append(y)
        return states

    cur = close(set(nfa.starts))
    for t in seq:
        cur = close({y for x in cur for y in step.get((x, t), ())})
        if not cur:
            return False
    return bool(cur & set(nfa.finals))


def nfa_words(nfa: LexemeNFA, max_len: int) -> set[tuple[int, ...]]:
    """All label sequences of length <= max_len the NFA accepts."""
    eps: dict[int, list[int]] = {}
    step: dict[int, list[tuple[int, int]]] = {}
    for e in range(nfa.n_edges):
        a, lab, b, _ = nfa.edge(e)
        (eps.setdefault(a, []).append(b) if lab == EPSILON
         else step.setdefault(a, []).append((lab, b)))

    def close(states: frozenset[int]) -> frozenset[int]:
        acc = set(states)
        stack = list(states)
        while stack:
            x = stack.pop()
            for y in eps.get(x, ()):
                if y not in acc:
                    acc.add(y)
                    stack.append(y)
        return frozenset(acc)

    finals = set(nfa.finals)
    words = set()
    frontier = {(): close(frozenset(nfa.starts))}
    for _ in range(max_len + 1):
        nxt: dict[tuple[int, ...], frozenset[int]] = {}
        for w, states in frontier.items():
            if states & finals:
                words.add(w)
            if len(w) == max_len:
                continue
            moves: dict[int, set[int]] = {}
            for x in states:
                for lab, y in step.get(x, ()):
                    moves.setdefault(lab, set()).add(y)
            for lab, ys in moves.items():
                nxt[w + (lab,)] = close(frozenset(ys))
        frontier = nxt
    return words


def fillings(alphabet: str, max_len: int):
    for n in range(max_len + 1):
        for tup in itertools.product(alphabet, repeat=n):
            yield "".join(tup)


def produced(lex, chunks: list[str], alphabet: str, max_len: int) -> set[tuple[int, ...]]:
    out = set()
    holes = len(chunks) - 1
    for fill in itertools.product(list(fillings(alphabet, max_len)), repeat=holes):
        text = "".join(c + f for c, f in zip(chunks, list(fill) + [""], strict=True))
        seq = lex(text)
        if seq is not None:
            out.add(seq)
    return out


@pytest.fixture(scope="module")
def tiny():
    cg = compile_grammar_file(DATA / "tiny.lark", "tiny")
    return cg, HoleLexer(cg.lexer, cg.grammar.terminals), reference_lexer(cg.grammar.terminals)


@pytest.fixture(scope="module")
def kw():
    cg = compile_grammar_file(DATA / "kw.lark", "kw")
    return cg, HoleLexer(cg.lexer, cg.grammar.terminals), reference_lexer(cg.grammar.terminals)


chunk = st.text(alphabet="abc ", max_size=4)


@settings(max_examples=int(os.environ.get("HOLEFILL_EXAMPLES", 150)), deadline=None)
@given(st.lists(chunk, min_size=1, max_size=3))
def test_every_lexing_some_filling_produces_is_in_the_nfa(tiny, chunks):
    _, lexer, lex = tiny
    nfa = lexer.build(chunks, PLAIN)
    max_fill = 3 if len(chunks) <= 2 else 2
    for seq in produced(lex, chunks, "abc ", max_fill):
        assert nfa_accepts(nfa, seq), (chunks, seq)


@settings(max_examples=int(os.environ.get("HOLEFILL_EXAMPLES", 80)), deadline=None)
@given(st.lists(chunk, min_size=1, max_size=2))
def test_every_short_nfa_lexing_is_produced_by_some_filling(tiny, chunks):
    _, lexer, lex = tiny
    nfa = lexer.build(chunks, PLAIN)
    brute = produced(lex, chunks, "abc ", 5 if len(chunks) == 2 else 0)
    for seq in nfa_words(nfa, 2):  # two lexemes fit in five characters of filling
        assert seq in brute, (chunks, seq)


kw_chunk = st.text(alphabet="ifx=;# \n", max_size=5)


@settings(max_examples=int(os.environ.get("HOLEFILL_EXAMPLES", 120)), deadline=None)
@given(st.lists(kw_chunk, min_size=1, max_size=3))
def test_keywords_and_comments_lex_like_maximal_munch(kw, chunks):
    _, lexer, lex = kw
    nfa = lexer.build(chunks, PLAIN)
    max_fill = 2
    for seq in produced(lex, chunks, "if=#\n ", max_fill):
        assert nfa_accepts(nfa, seq), (chunks, seq)


def test_a_word_split_by_a_hole_may_be_one_name_or_two_lexemes(kw):
    """`if□x`: the hole may join them into one NAME (`ifax`), separate them (`if x`), or
    hide `x` in a comment (`if#x`)."""
    cg, lexer, _ = kw
    nfa = lexer.build(["if", "x"], PLAIN)
    name = cg.grammar.terminal_id("NAME")
    kw_if = cg.grammar.terminal_id('"if"')
    assert nfa_accepts(nfa, (name,))
    assert nfa_accepts(nfa, (kw_if, name))
    assert nfa_accepts(nfa, (kw_if,))


def test_fixed_text_never_splits_a_word(kw):
    """`ifx` without a hole is one NAME, never the keyword `if` followed by `x`."""
    cg, lexer, _ = kw
    nfa = lexer.build(["ifx"], PLAIN)
    name = cg.grammar.terminal_id("NAME")
    kw_if = cg.grammar.terminal_id('"if"')
    assert nfa_accepts(nfa, (name,))
    assert not nfa_accepts(nfa, (kw_if, name))


def test_a_comment_begun_before_a_hole_can_hide_the_text_after_it(kw):
    """`x□y`... `# c` then a hole: the comment may swallow the hole, or a newline ends it."""
    cg, lexer, _ = kw
    name = cg.grammar.terminal_id("NAME")
    nfa = lexer.build(["a #c", "b"], PLAIN)
    assert nfa_accepts(nfa, (name,))  # the hole keeps the comment going: `a #cXb`
    assert nfa_accepts(nfa, (name, name))  # the hole ends the comment: `a #c\nb`
