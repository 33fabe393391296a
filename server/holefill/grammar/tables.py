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
    """

    name: str
    pattern: str
    literal: str | None
    priority: int
    ignored: bool
    example: str | None


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
        """Id of the terminal named `name` (grammar name, or quoted literal like '"if"')."""
        for i, t in enumerate(self.terminals):
            if t.name == name:
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


@dataclass(frozen=True)
class CompiledGrammar:
    """Everything the engine needs for one language."""

    language: str
    source_path: str
    grammar: NormalGrammar
    lexer: LexerDFA
