"""Lexing the known text left of a hole, one appended piece at a time.

While a hole is filled from left to right, the text before it only grows (and shrinks back
when a refused candidate is undone). Its lexemes are settled by maximal munch exactly as the
lexer with holes settles fixed text (holefill.lexing.holes): a run from a lexeme boundary
ends at its last accept once the DFA dies; only the last run, still alive at the end of the
text, is open (the hole may continue it). `LeftLexer` keeps the settled lexemes and re-lexes
only from the first one that a change could touch: a lexeme is kept while the character
that settled it (where its run died) is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from holefill.grammar.tables import LexerDFA


@dataclass(frozen=True)
class Lexeme:
    """A settled lexeme of the left text: [start, end), its terminal, and `decided`, the
    position of the character whose arrival settled it (the run died there)."""

    start: int
    end: int
    term: int
    decided: int


class LeftLexer:
    """Settled lexemes of a text that grows at its end (see the module docstring)."""

    def __init__(self, dfa: LexerDFA, classes: Callable[[str], list[int]]) -> None:
        self.dfa = dfa
        self.classes = classes
        self.text = ""
        self.cls: list[int] = []
        self.lexemes: list[Lexeme] = []
        self.error: int | None = None  # position of a character no lexeme can take

    @property
    def open_start(self) -> int:
        """Where the open run begins: the end of the last settled lexeme."""
        return self.lexemes[-1].end if self.lexemes else 0

    def set_text(self, text: str) -> int:
        """Makes `text` the left text; returns how many lexemes stayed from before (the
        ones after them are new)."""
        n = min(len(text), len(self.text))
        common = 0
        if text[:n] == self.text[:n]:
            common = n
        else:
            while common < n and text[common] == self.text[common]:
                common += 1
        while self.lexemes and self.lexemes[-1].decided >= common:
            self.lexemes.pop()
        kept = len(self.lexemes)
        self.text = text
        self.cls = self.cls[:common] + self.classes(text[common:])
        self.error = None
        self._lex()
        return kept

    def _lex(self) -> None:
        cls, n = self.cls, len(self.cls)
        i = self.open_start
        while i < n:
            end, lab, j = self.dfa.munch(cls, i, n)
            if j == n:
                return  # alive at the end of the text: the open run
            if end < 0:
                self.error = i  # the run died before any lexeme ended
                return
            self.lexemes.append(Lexeme(i, end, lab, j))
            i = end

    def finish(self) -> list[Lexeme] | None:
        """The lexemes of the open run if the text ended here (maximal munch at the end of
        the file), or None when it cannot end (no lexeme, or an error)."""
        if self.error is not None:
            return None
        cls, n = self.cls, len(self.cls)
        out = []
        i = self.open_start
        while i < n:
            end, lab, _ = self.dfa.munch(cls, i, n)
            if end < 0:
                return None
            out.append(Lexeme(i, end, lab, n))
            i = end
        return out
