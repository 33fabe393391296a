"""Brute-force oracles for the grammar toolchain tests."""

from __future__ import annotations

import bisect
import itertools

from holefill.grammar.tables import LexerDFA, NormalGrammar


def words(alphabet: str, max_len: int):
    for n in range(max_len + 1):
        for t in itertools.product(alphabet, repeat=n):
            yield "".join(t)


def cyk(ng: NormalGrammar, seq: list[int]) -> bool:
    """Membership of a terminal-id sequence in L(ng), for 2NF with unit and empty rules."""
    n = len(seq)
    nt = ng.n_terminals
    by_x: dict[int, list[tuple[int, int]]] = {}
    for a, x, y in ng.binary:
        by_x.setdefault(x, []).append((a, y))
    units: dict[int, list[int]] = {}
    for a, x in ng.unary:
        units.setdefault(x, []).append(a)
    # table[i][j]: symbols deriving seq[i:j]
    table = [[set() for _ in range(n + 1)] for _ in range(n + 1)]

    def close(i: int, j: int) -> None:
        cell = table[i][j]
        changed = True
        while changed:
            changed = False
            for s in list(cell):
                for a in units.get(s, ()):
                    if a not in cell:
                        cell.add(a)
                        changed = True
            for k in range(i, j + 1):
                for x in list(table[i][k] if k != j else cell):
                    for a, y in by_x.get(x, ()):
                        if a not in cell and y in (table[k][j] if k != i else cell):
                            cell.add(a)
                            changed = True

    for i in range(n + 1):
        table[i][i].update(ng.nullable)
        close(i, i)
    for length in range(1, n + 1):
        for i in range(n - length + 1):
            j = i + length
            if length == 1:
                table[i][j].add(seq[i])
            close(i, j)
    assert nt >= 0
    return ng.start in table[0][n]


def lex(lx: LexerDFA, text: str) -> list[int] | None:
    """Maximal munch with the combined DFA; ignored terminals are kept (filter outside).
    None when the text cannot be split into lexemes."""
    out = []
    i = 0
    while i < len(text):
        s = lx.start
        last = None
        j = i
        while j < len(text):
            s = lx.trans[s][bisect.bisect_right(lx.boundaries, ord(text[j]))]
            if s < 0:
                break
            j += 1
            if lx.accept[s] >= 0:
                last = (j, lx.accept[s])
        if last is None:
            return None
        out.append(last[1])
        i = last[0]
    return out
