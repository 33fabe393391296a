"""Regex -> minimal DFA, derived automata (prefix/suffix/infix), inclusion and examples."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from holefill.grammar.automata import (
    DFA,
    NFA,
    determinize,
    intersects,
    is_subset,
    minimize,
    nfa_to_min_dfa,
    shortest_example,
    terminal_automata,
)
from holefill.grammar.regex import RegexError, parse_regex, to_pattern

from .oracles import words

ALPHABET = "abAB1. \n_"

REGEXES = [
    r"a",
    r"a*?b+",
    r"(ab|a)*c?",
    r"[^a]b{2,3}",
    r"(?i:ab)x*",
    r"\d+(\.\d+)?",
    r".*",
    r"(?s:.)+",
    r"a|b|",
    r"[a-b1]{0,2}_",
    r"\w+",
    r"\W\S\s?",
    r"[^\d\s]",
    r"(a|ab)(ba|b)*",
    r"b??a+?",
    r"(?:A|B|a){2,}",
    r"[.]\.?",
]


def flags_of(pat: str) -> int:
    return re.ASCII


@pytest.mark.parametrize("pat", REGEXES)
@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=ALPHABET, max_size=7))
def test_min_dfa_agrees_with_re_fullmatch(pat: str, text: str) -> None:
    """Minimal DFA of each regex in REGEXES accepts exactly what re.fullmatch (ASCII) does."""
    d = nfa_to_min_dfa(parse_regex(pat))
    assert d.matches(text) == bool(re.fullmatch(pat, text, flags_of(pat)))


@pytest.mark.parametrize("pat", REGEXES)
def test_to_pattern_round_trips(pat: str) -> None:
    """to_pattern(parse_regex(p)) denotes the same language (same minimal DFA size, agree)."""
    node = parse_regex(pat)
    again = parse_regex(to_pattern(node))
    a, b = nfa_to_min_dfa(node), nfa_to_min_dfa(again)
    assert a.n_states == b.n_states
    assert is_subset(a, b) and is_subset(b, a)


def _signature(d: DFA, s: int, reps: list[str], depth: int) -> tuple[bool, ...]:
    out = []
    for w in words("".join(reps), depth):
        t = d.run(w, s)
        out.append(t >= 0 and d.accept[t] >= 0)
    return tuple(out)


@pytest.mark.parametrize("pat", REGEXES)
def test_minimization_is_minimal_and_idempotent(pat: str) -> None:
    """Myhill-Nerode by brute force: every pair of states of the minimal DFA is told apart by a
    word of length < n_states; minimizing again changes nothing; unminimized DFA agrees."""
    d = nfa_to_min_dfa(parse_regex(pat))
    reps = []
    for c in range(d.n_classes):
        lo = 0 if c == 0 else d.boundaries[c - 1]
        reps.append(chr(lo))
    if d.n_states <= 6:
        sigs = {_signature(d, s, reps, d.n_states - 1) for s in range(d.n_states)}
        assert len(sigs) == d.n_states
    assert minimize(d).n_states == d.n_states
    nfa = NFA()
    start = nfa.add(parse_regex(pat), 0)
    raw, labels = determinize(nfa, [start])
    raw.accept = [0 if lab else -1 for lab in labels]
    for w in words("ab1.\n", 4):
        assert raw.matches(w) == d.matches(w)


def _brute(pat: str, alphabet: str, max_len: int, k: int):
    lang = [w for w in words(alphabet, max_len) if re.fullmatch(pat, w, re.ASCII)]
    pre, suf, inf = set(), set(), set()
    for w in lang:
        for i in range(len(w)):
            if i <= k:
                pre.add(w[:i])
        for i in range(1, len(w) + 1):
            if len(w) - i <= k:
                suf.add(w[i:])
        for i in range(1, len(w)):
            for j in range(i, len(w)):
                if j - i <= k:
                    inf.add(w[i:j])
    return pre, suf, inf


@pytest.mark.parametrize("pat", [r"ab*c", r"(ab|ba)+", r"a?b{1,2}", r"abc|b", r"(a|b)*a",
                                 r"c+", r"abba"])
def test_prefix_suffix_infix_automata_agree_with_brute_force(pat: str) -> None:
    """Proper prefixes/suffixes/infixes (App. C.2) of words of L up to length 9, restricted to
    length <= 3, equal what the derived automata accept among words of length <= 3."""
    k = 3
    ta = terminal_automata(nfa_to_min_dfa(parse_regex(pat)))
    pre, suf, inf = _brute(pat, "abc", 9, k)
    for w in words("abc", k):
        assert ta.prefix.matches(w) == (w in pre), ("prefix", w)
        assert ta.suffix.matches(w) == (w in suf), ("suffix", w)
        assert ta.infix.matches(w) == (w in inf), ("infix", w)


def test_fixed_keyword_cannot_span_a_hole() -> None:
    """`whil` is a proper prefix and `hile` a proper suffix of `while`, but `il` is an infix
    and `while` itself is none of the three (all are proper)."""
    ta = terminal_automata(nfa_to_min_dfa(parse_regex("while")))
    assert ta.prefix.matches("whil") and not ta.prefix.matches("while")
    assert ta.suffix.matches("hile") and not ta.suffix.matches("while")
    assert ta.infix.matches("il") and not ta.infix.matches("whil")


def test_inclusion_and_intersection() -> None:
    """is_subset/intersects on keyword vs identifier, small ints vs ints, partial overlaps."""
    d = {p: nfa_to_min_dfa(parse_regex(p)) for p in
         ["if", r"[a-z_][a-z0-9_]*", r"[0-9]", r"[0-9]+", r"[a-f0-9]+", "a|b"]}
    assert is_subset(d["if"], d[r"[a-z_][a-z0-9_]*"])
    assert not is_subset(d[r"[a-z_][a-z0-9_]*"], d["if"])
    assert is_subset(d[r"[0-9]"], d[r"[0-9]+"])
    assert not is_subset(d[r"[a-f0-9]+"], d[r"[0-9]+"])
    assert intersects(d[r"[a-f0-9]+"], d[r"[a-z_][a-z0-9_]*"])
    assert not intersects(d[r"[0-9]+"], d[r"[a-z_][a-z0-9_]*"])
    assert is_subset(d["a|b"], d[r"[a-f0-9]+"])


def test_shortest_example_prefers_readable_characters() -> None:
    """Shortest words: letters before digits before punctuation; None for an empty language."""
    assert shortest_example(nfa_to_min_dfa(parse_regex(r"[^\n]{2}"))) == "aa"
    assert shortest_example(nfa_to_min_dfa(parse_regex(r"x?"))) == ""
    assert shortest_example(nfa_to_min_dfa(parse_regex(r"\d+\.\d"))) == "0.0"
    assert shortest_example(nfa_to_min_dfa(parse_regex(r"[^\x00-\U0010ffff]"))) is None


@pytest.mark.parametrize("pat,what", [
    (r"(a)\1", "backreference"), (r"(?P<x>a)(?P=x)", "backreference"),
    (r"a(?=b)", "lookahead"), (r"(?<!a)b", "lookbehind"), (r"^a", "anchor"),
    (r"a$", "anchor"), (r"\bfoo", "word-boundary"), (r"a*+", "possessive"),
    (r"a{2000}", "counted repetition"), (r"(a", "bad regex"),
])
def test_unsupported_regex_features_are_refused(pat: str, what: str) -> None:
    """Non-regular or unsupported features raise RegexError naming the feature."""
    with pytest.raises(RegexError) as e:
        parse_regex(pat)
    assert what in e.value.message
