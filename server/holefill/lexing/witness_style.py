"""What makes a witness read like code a person writes: which lexemes it prefers, and where
its lexemes go without a blank between them.

The witness search finds the filling with the fewest lexemes (holefill.lexing.holes:
WITNESS_UNIT per lexeme); among fillings of as many lexemes, the core picks one arbitrarily,
which gave `total += b""` and `while b"" :` bodies. The preferences below add a fraction of a
lexeme per terminal, so `pass` wins where a statement is needed and `0` where an expression
is. A witness may so hold more lexemes than the shortest one when they read better, at most
7/4 as many (a lexeme weighs 4 to 7); verdicts do not depend on weights, so no state loses
its witness.

The spacing rule is for the renderers: a blank goes between two lexemes of a hole unless a
person would write them together (`f()`, `x: int`, `a[0]`, `a.b`) and the lexer reads them
apart when they touch (checked on the lexer's DFA by the caller).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from holefill.grammar.tables import TerminalInfo

# Python terminals by name, fractions of a lexeme (0 to WITNESS_UNIT - 1); unnamed ones weigh
# DEFAULT_PREFERENCE. The cheapest statement is `pass`, then an expression: `0`, then `None`,
# a name or a string; block openers other than `if`, and keywords that only make sense in
# some places (`await`, `yield`, `async`, `break`, ...), come last; so does `;`, where a line
# break (a lexeme's weight) does the same.
PYTHON_PREFERENCE: Mapping[str, int] = {
    '"pass"': 0, '":"': 0, '"("': 0, '")"': 0, '"["': 0, '"]"': 0, '"{"': 0, '"}"': 0,
    '","': 0, '"="': 0, '"."': 0, '"if"': 0, '"else"': 0, '"def"': 0, '"return"': 0,
    '"in"': 0, '"import"': 0, '"+"': 0,
    "NUMBER": 1, '"None"': 2, "NAME": 2, "STRING": 2, '"True"': 2, '"False"': 2,
    "BYTES": 3, '"while"': 2, '"for"': 2, '"with"': 2, '"try"': 2, '"class"': 1,
    '"async"': 3, '"await"': 3, '"yield"': 3, '"lambda"': 3, '"global"': 3, '"nonlocal"': 3,
    '"del"': 3, '"..."': 3, '"break"': 3, '"continue"': 3, '"match"': 3, '"case"': 3,
    '"assert"': 2, '"raise"': 2, '";"': 3, '"@"': 3, '"~"': 3, '"not"': 2, '"**"': 2,
    '"*"': 2, '"%"': 2, '"^"': 3, '"|"': 2, '"&"': 3, '"<<"': 3, '">>"': 3, '"//"': 2,
}
DEFAULT_PREFERENCE = 1

# A backslash continuation written by a hole costs this many lexemes more: a line break, a
# bracket or a statement of its own reads better wherever one does.
LINE_CONT_SURCHARGE = 8


def preferences(terminals: Sequence[TerminalInfo], table: Mapping[str, int],
                default: int) -> dict[int, int]:
    """The preference of every terminal, by id."""
    return {i: table.get(t.name, default) for i, t in enumerate(terminals)}


# Lexemes a person writes without a blank before them, or after them.
_NO_BLANK_BEFORE = frozenset({")", "]", "}", ":", ",", ".", ";"})
_NO_BLANK_AFTER = frozenset({"(", "[", "{", ".", "~"})
# Before an opening bracket: a call or a subscript, after a name or a closing bracket.
_CALLABLE = frozenset({"NAME", ")", "]", "}"})


def tight(left: str | None, right: str | None) -> bool:
    """Whether a person writes two lexemes together, by their literal text (None for a
    terminal that is no literal; NAME by its name): `f(`, `(0`, `0)`, `a.b`, `x:`."""
    if right in _NO_BLANK_BEFORE or left in _NO_BLANK_AFTER:
        return True
    return right in ("(", "[") and left in _CALLABLE
