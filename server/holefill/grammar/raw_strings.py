r"""The regular expression of C++ raw string literals for a finite set of delimiters.

`R"d( ... )d"` ends at the first `)d"`; since the delimiter must match, the set of raw strings
over all delimiters is not a language a small regex (or the lexer's DFA) can hold, so a grammar
lists the delimiters it accepts and this module writes the exact expression for each: the body
is any text without `)d"`. A delimiter never contains `)`, so after a mismatch the search for
`)d"` restarts at the mismatching character if it is `)` and after it otherwise (the KMP failure
function is trivial), which gives, with p_i the first i characters of `d"` and n_i the next one:

    R"d(  ( [^)]  |  Y* X )*  Y*  )d"
    X = \) (p_0 [^n_0 )] | p_1 [^n_1 )] | ... )     a `)` run that fails on a non-`)`
    Y = \) (p_0 | p_1 | ... | p_len(d))              a `)` run that fails on the next `)`

`cpp.lark`'s STRING holds `raw_string_regex(CPP_RAW_DELIMITERS)`; a test checks that the two
stay the same and that the expression agrees with a direct matcher.
"""

from __future__ import annotations

import re

# The delimiters C++ code uses most; others are refused (listed in cpp.lark's header). Each one
# costs the lexer with holes a few automaton states that a run started in a hole carries to the
# end of the text, so the list is short.
CPP_RAW_DELIMITERS: tuple[str, ...] = ("", "x", "delim", "json", "EOF", "---")

_DELIM_CHARS = re.compile(r'[^ ()\\\t\v\f\n"]{0,16}')


def _cls(chars: str) -> str:
    """A negated class excluding `chars` and NUL."""
    return "[^\\x00" + "".join(re.escape(c) if c in "]\\^-" else c for c in chars) + "]"


def _lit(text: str) -> str:
    return "".join(re.escape(c) if not c.isalnum() and c != "_" else c for c in text)


def raw_body_regex(delim: str) -> str:
    """`R"delim( body )delim"` for one delimiter (no encoding prefix)."""
    if not _DELIM_CHARS.fullmatch(delim):
        raise ValueError(f"not a raw string delimiter: {delim!r}")
    tail = delim + '"'
    xs = "|".join(_lit(tail[:i]) + _cls(tail[i] + ")") for i in range(len(tail)))
    ys = "|".join(_lit(delim[:i]) for i in range(1, len(delim) + 1))
    y = f"\\)({ys})?" if ys else "\\)"
    body = f"([^\\x00)]|({y})*\\)({xs}))*"
    return f'R"{_lit(delim)}\\({body}({y})*\\){_lit(tail)}'


def raw_string_regex(delims: tuple[str, ...] = CPP_RAW_DELIMITERS) -> str:
    """The alternation of `raw_body_regex` over `delims`."""
    return "|".join(raw_body_regex(d) for d in delims)


def is_raw_string(text: str, delims: tuple[str, ...] = CPP_RAW_DELIMITERS) -> bool:
    """A direct matcher (the reference for tests): `text` is one raw string literal."""
    m = re.fullmatch(r'R"([^ ()\\\t\v\f\n"]{0,16})\((.*)\)\1"', text, re.S)
    if m is None or m.group(1) not in delims or "\x00" in text:
        return False
    return f"){m.group(1)}\"" not in m.group(2)
