"""Which terminals can stand side by side in a sentence of a grammar.

A pair (a, b) is *adjacent* when some word of the language has a right before b. Any
reading of fixed text that puts two lexemes next to each other with nothing the language's
layout could insert between them (two lexemes of one Python line, say) and whose pair is
not adjacent cannot belong to a valid program: holefill.check.segments uses this to rule
out readings of a chunk no filling can keep (the rest of a docstring read as code).

For a grammar in 2NF (holefill.grammar.tables.NormalGrammar): in a derivation of a word,
two neighbouring leaves a, b have a lowest common ancestor, a production A -> X Y with a the
last leaf of X's part and b the first of Y's. So the adjacent pairs are the union, over the
binary productions, of LAST(X) x FIRST(Y), where FIRST and LAST are the terminals that can
begin and end a nonempty word of a symbol (nullable symbols let them through). When every
symbol is reachable and generating (a reduced grammar) every such pair occurs; either way
the set holds every pair that occurs, which is all its use needs.
"""

from __future__ import annotations

import numpy as np

from holefill.grammar.tables import NormalGrammar


def adjacent_terminals(grammar: NormalGrammar) -> np.ndarray:
    """A boolean matrix, [a, b] true when terminal b can follow terminal a directly."""
    n_t, n = grammar.n_terminals, grammar.n_symbols
    nullable = _nullable(grammar)
    first = [1 << x if x < n_t else 0 for x in range(n)]
    last = list(first)
    changed = True
    while changed:
        changed = False
        for a, x in grammar.unary:
            changed |= _widen(first, a, first[x]) | _widen(last, a, last[x])
        for a, x, y in grammar.binary:
            changed |= _widen(first, a, first[x] | (first[y] if nullable[x] else 0))
            changed |= _widen(last, a, last[y] | (last[x] if nullable[y] else 0))
    out = np.zeros((n_t, n_t), dtype=bool)
    follows = [0] * n_t
    for _, x, y in grammar.binary:
        if first[y]:
            for t in _members(last[x]):
                follows[t] |= first[y]
    for t, bits in enumerate(follows):
        out[t, list(_members(bits))] = True
    return out


def _nullable(grammar: NormalGrammar) -> list[bool]:
    out = [False] * grammar.n_symbols
    for a in grammar.nullable:
        out[a] = True
    changed = True
    while changed:
        changed = False
        for a, x in grammar.unary:
            if out[x] and not out[a]:
                out[a] = changed = True
        for a, x, y in grammar.binary:
            if out[x] and out[y] and not out[a]:
                out[a] = changed = True
    return out


def _widen(sets: list[int], at: int, bits: int) -> bool:
    if bits & ~sets[at]:
        sets[at] |= bits
        return True
    return False


def _members(bits: int) -> list[int]:
    out, t = [], 0
    while bits:
        if bits & 1:
            out.append(t)
        bits >>= 1
        t += 1
    return out
