"""The combined lexer DFA: maximal munch, priorities, alive/killable, examples, subsets."""

from __future__ import annotations

import bisect

import pytest

from holefill.grammar import compile_grammar_text
from holefill.grammar.tables import CompiledGrammar

from .oracles import lex

TOY = r"""
start: item*
item: "if" | NAME | ">>" | ">" | NUMBER | "." | KW_INT
NAME: /[a-z_][a-z0-9_]*/
NUMBER: /[0-9]+(\.[0-9]+)?/
KW_INT.5: "int"
WS: /[ \t\n]+/
%ignore WS
"""


def names(cg: CompiledGrammar, text: str) -> list[str]:
    ids = lex(cg.lexer, text)
    assert ids is not None, text
    return [cg.grammar.terminals[i].name for i in ids if not cg.grammar.terminals[i].ignored]


@pytest.fixture(scope="module")
def toy() -> CompiledGrammar:
    return compile_grammar_text(TOY, "toy.lark", "toy")


@pytest.mark.parametrize("text,expected", [
    ("if", ['"if"']),
    ("iff", ["NAME"]),
    ("if f", ['"if"', "NAME"]),
    (">>", ['">>"']),
    (">>>", ['">>"', '">"']),
    ("> >", ['">"', '">"']),
    ("1.5", ["NUMBER"]),
    ("1.", ["NUMBER", '"."']),
    ("1 .5", ["NUMBER", '"."', "NUMBER"]),
    ("int intx", ["KW_INT", "NAME"]),
])
def test_maximal_munch_and_priority(toy: CompiledGrammar, text: str, expected: list[str]) -> None:
    """Longest match wins; on equal length, priority then literal-over-regex (TOY grammar)."""
    assert names(toy, text) == expected


def test_terminal_examples_are_labelled_by_that_terminal(toy: CompiledGrammar) -> None:
    """TerminalInfo.example is a shortest string the lexer labels with that terminal."""
    for i, t in enumerate(toy.grammar.terminals):
        assert t.example is not None, t.name
        assert lex(toy.lexer, t.example) == [i], t.name
    kw = compile_grammar_text('start: NAME | "a"\nNAME: /[a-z]+/\n', "k.lark")
    ex = kw.grammar.terminals[kw.grammar.terminal_id("NAME")].example
    assert ex is not None and len(ex) == 1 and ex != "a"


def _state(cg: CompiledGrammar, text: str) -> int:
    lx = cg.lexer
    s = lx.start
    for ch in text:
        s = lx.trans[s][bisect.bisect_right(lx.boundaries, ord(ch))]
    return s


def test_alive_and_killable_hand_checked() -> None:
    """Terminals AB: "ab", AS: /a+/, ANY2: /x./s -- alive/killable on hand-computed states."""
    cg = compile_grammar_text('start: AB | AS | ANY2\nAB: "ab"\nAS: /a+/\nANY2: /x./s\n',
                              "ak.lark")
    tid = cg.grammar.terminal_id
    lx = cg.lexer
    s_a = _state(cg, "a")
    assert lx.accept[s_a] == tid("AS")
    assert lx.alive[s_a] == {tid("AB"), tid("AS")}
    assert lx.killable[s_a]                   # "ax": dies right after an accept
    s_ab = _state(cg, "ab")
    assert lx.alive[s_ab] == {tid("AB")} and lx.killable[s_ab]
    s_x = _state(cg, "x")
    assert lx.accept[s_x] == -1 and lx.alive[s_x] == {tid("ANY2")}
    assert not lx.killable[s_x]               # every character completes ANY2
    assert lx.alive[lx.start] == {tid("AB"), tid("AS"), tid("ANY2")}
    assert lx.start not in lx.reachable and s_x in lx.reachable
    assert len(lx.class_of_ascii) == 128
    for c in range(128):
        assert lx.class_of_ascii[c] == bisect.bisect_right(lx.boundaries, c)


def test_lexer_dfa_is_minimal_with_labels(toy: CompiledGrammar) -> None:
    """No two states of the combined DFA have the same label and the same transitions."""
    lx = toy.lexer
    rows = {(lx.accept[s], lx.trans[s]) for s in range(lx.n_states)}
    assert len(rows) == lx.n_states
    assert all(0 <= t < lx.n_states for row in lx.trans for t in row if t != -1)


def test_subset_terminals_rewrite_and_warnings() -> None:
    """A soft literal inside NAME is allowed where NAME stands; a reserved one is not; a
    higher-priority regex subset is allowed; partial regex overlaps are warned about."""
    src = r"""
start: NAME ";" | "if" | "match" | SMALL | HEX
NAME: /[a-z]+/
SMALL.2: /[0-9]/
HEX: /[0-9a-f]+/
%soft "match"
"""
    cg = compile_grammar_text(src, "sub.lark")
    g = cg.grammar
    pairs = {(g.terminals[a].name, g.terminals[b].name) for a, b in cg.subset_allowed}
    assert ('"match"', "NAME") in pairs
    assert ("SMALL", "HEX") in pairs
    assert ('"if"', "NAME") not in pairs
    assert any("NAME" in w and "HEX" in w and "overlap" in w for w in cg.warnings)
    shadow = compile_grammar_text('start: "if" | NAME\nNAME.3: /[a-z]+/\n', "sh.lark")
    assert any('"if"' in w and "never produced" in w for w in shadow.warnings)


def test_named_literal_terminal_is_shared_with_anonymous_uses() -> None:
    """`LPAR.2: "("` and a bare `"("` in a rule are one terminal, keeping LPAR's priority;
    terminal_id finds it by either name; DIGIT used only inside NUMBER is no lexeme."""
    src = 'start: LPAR ")" | "(" NUMBER\nLPAR.2: "("\nNUMBER: DIGIT+\nDIGIT: "0".."9"\n'
    cg = compile_grammar_text(src, "shared.lark")
    g = cg.grammar
    assert g.terminal_id('"("') == g.terminal_id("LPAR")
    assert g.terminals[g.terminal_id("LPAR")].priority == 2
    assert [t.name for t in g.terminals].count("LPAR") == 1
    with pytest.raises(KeyError):
        g.terminal_id("DIGIT")
    assert not cg.warnings


def test_declared_terminals_have_ids_but_no_lexer_words() -> None:
    """%declare'd terminals get ids (the layout lexer emits them) and no example."""
    cg = compile_grammar_text('start: NAME NEWLINE\nNAME: /[a-z]+/\n%declare NEWLINE\n',
                              "decl.lark")
    t = cg.grammar.terminals[cg.grammar.terminal_id("NEWLINE")]
    assert t.example is None and t.pattern == ""
    assert all(cg.grammar.terminal_id("NEWLINE") not in a for a in cg.lexer.alive)
