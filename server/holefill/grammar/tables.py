"""The compiled form of a grammar: what the lexer and the native core consume.

This module is the contract between `holefill.grammar` (which builds these tables from a
grammar file) and the layers below it (`holefill.lexing`, `holefill.check`). It holds plain
data only; nothing here imports the native core.

Symbol numbering, shared by every table:
  0 .. n_terminals-1                  terminals (lexeme kinds), in `terminals` order
  n_terminals .. n_symbols-1          nonterminals, in `nonterminals` order

Offsets and characters are Unicode code points throughout the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TerminalInfo:
    """One lexeme kind.

    name:     grammar name (`NUMBER`) or, for anonymous literals, the quoted text (`"while"`).
    pattern:  the regex it was compiled from (for messages and debugging).
    literal:  the exact text when the terminal is a string literal, else None.
    priority: higher wins when two terminals match the same longest text.
    ignored:  True for `%ignore`d terminals (whitespace, comments): the lexer drops them.
    example:  a shortest string that the combined lexer DFA labels with this terminal
              (used to render witnesses); None for terminals no string can produce.
    layout:   True for `%layout` terminals: lexemes the language's layout lexer consumes
              (Python's raw newlines); no rule uses them and the generic lexer never emits them.
    """

    name: str
    pattern: str
    literal: str | None
    priority: int
    ignored: bool
    example: str | None
    layout: bool = False


@dataclass(frozen=True)
class NormalGrammar:
    """A CFG in C2F+eps ("2NF"): every production is A -> X Y, A -> X, or A -> eps.

    X and Y may be terminals or nonterminals. The grammar is reduced (every nonterminal is
    generating and reachable from `start`) unless the language is empty.
    """

    terminals: tuple[TerminalInfo, ...]
    nonterminals: tuple[str, ...]
    start: int                                   # a nonterminal id (>= n_terminals)
    binary: tuple[tuple[int, int, int], ...]     # (A, X, Y)   A -> X Y
    unary: tuple[tuple[int, int], ...]           # (A, X)      A -> X
    nullable: tuple[int, ...]                    # A           A -> eps

    @property
    def n_terminals(self) -> int:
        return len(self.terminals)

    @property
    def n_symbols(self) -> int:
        return len(self.terminals) + len(self.nonterminals)

    def terminal_id(self, name: str) -> int:
        """Id of the terminal named `name` (grammar name, or quoted literal like '"if"').

        A quoted literal also finds a named terminal defined as exactly that literal
        (`LPAR: "("` is found by '"("')."""
        for i, t in enumerate(self.terminals):
            if t.name == name:
                return i
        for i, t in enumerate(self.terminals):
            if t.literal is not None and literal_name(t.literal) == name:
                return i
        raise KeyError(name)


@dataclass(frozen=True)
class LexerDFA:
    """The minimal DFA of all terminals together, over character classes.

    Lexing is maximal munch on this automaton: from a lexeme start, run until the DFA dies;
    the lexeme is the longest prefix that ended in an accepting state, labelled `accept[s]`
    (ties between terminals are already resolved by priority, then literal-before-regex,
    then declaration order).

    boundaries: sorted code points; character c belongs to class
                `bisect.bisect_right(boundaries, c)`; so there are len(boundaries)+1 classes.
    trans:      trans[s][cls] -> next state, or -1 (dead).
    start:      the start state (always 0).
    accept:     accept[s] -> terminal id, or -1 when s is not accepting.
    alive:      alive[s] -> the terminals t such that some accepting state labelled t is
                reachable from s (s itself included). Empty means s can never finish a lexeme.
    killable:   killable[s] -> True when some non-empty string leads from s to the dead state
                without passing through an accepting state on the way (s itself excluded).
                Means: text appended after s can end the lexeme at the last accept seen before s.
    reachable:  the states reachable from `start` by a non-empty string, sorted.
    """

    boundaries: tuple[int, ...]
    trans: tuple[tuple[int, ...], ...]
    accept: tuple[int, ...]
    alive: tuple[frozenset[int], ...]
    killable: tuple[bool, ...]
    reachable: tuple[int, ...]
    start: int = 0
    class_of_ascii: tuple[int, ...] = field(default=())  # class of code points 0..127, cached

    @property
    def n_states(self) -> int:
        return len(self.trans)

    def munch(self, cls: Sequence[int], i: int, n: int) -> tuple[int, int, int]:
        """The longest lexeme of `cls[i:n]` from i: (end, terminal) of the last accepting
        state met, (-1, -1) when none, and where the run stopped (n: still alive there)."""
        trans, accept, alive = self.trans, self.accept, self.alive
        s, j, end, lab = self.start, i, -1, -1
        while j < n:
            s = trans[s][cls[j]]
            if s < 0 or not alive[s]:
                break
            j += 1
            if accept[s] >= 0:
                end, lab = j, accept[s]
        return end, lab, j


@dataclass(frozen=True)
class GrammarSize:
    """Size of a CFG: nonterminals, productions, distinct terminals used in productions, and
    the total length of all right-hand sides."""

    nonterminals: int
    productions: int
    terminals: int
    rhs_length: int


@dataclass(frozen=True)
class CompiledGrammar:
    """Everything the engine needs for one language.

    size_before: the plain CFG right after EBNF expansion and the subset-terminal rewrite.
    size_after:  `grammar` (the 2NF output).
    warnings:    messages for `holefill grammar LANG` (overlapping terminals, shadowed or
                 unused terminals).
    subset_allowed: (a, b) terminal ids: the grammar was rewritten so that terminal a is
                 accepted wherever b stands (a's words are all b's words and a wins ties).
    size_naive_2nf: the 2NF that binarization alone would give (to show what the size
                 reductions saved).
    """

    language: str
    source_path: str
    grammar: NormalGrammar
    lexer: LexerDFA
    size_before: GrammarSize | None = None
    size_after: GrammarSize | None = None
    warnings: tuple[str, ...] = ()
    subset_allowed: tuple[tuple[int, int], ...] = ()
    size_naive_2nf: GrammarSize | None = None


def literal_name(text: str) -> str:
    """The name of the anonymous terminal for string literal `text`: the text in double
    quotes, with backslash, double quote and control characters escaped ('"if"', '"\\n"')."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
