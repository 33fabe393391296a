"""Independent pure-Python oracles for the native core (used by tests/core only).

- `reference_min_weight`: naive weighted fixpoint over the explicit Bar-Hillel intersection
  grammar. Unlike the core it keeps epsilon moves inside the item relation (items may start
  or end with epsilon moves) instead of composing closures onto edges, and it relaxes all
  rules to a fixpoint instead of popping lightest-first.
- `derives`: a tiny CYK-like recogniser for 2NF grammars (with unary and empty rules).
- `accepts` / `words_upto`: NFA simulation and brute-force enumeration of short words.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

Edge = tuple[int, int, int, int]  # (from, label, to, weight), label -1 = epsilon


@dataclass(frozen=True)
class Grammar:
    n_terminals: int
    n_symbols: int
    start: int
    binary: tuple[tuple[int, int, int], ...]
    unary: tuple[tuple[int, int], ...]
    nullable: tuple[int, ...]


@dataclass(frozen=True)
class Nfa:
    n_states: int
    edges: tuple[Edge, ...]
    starts: tuple[int, ...]
    finals: tuple[int, ...]


def eps_reach(nfa: Nfa) -> list[set[int]]:
    """reach[p] = states reachable from p by epsilon moves only (p included)."""
    reach = [{p} for p in range(nfa.n_states)]
    changed = True
    while changed:
        changed = False
        for fr, label, to, _ in nfa.edges:
            if label != -1:
                continue
            for p in range(nfa.n_states):
                if fr in reach[p] and to not in reach[p]:
                    reach[p].add(to)
                    changed = True
    return reach


def reference_min_weight(g: Grammar, nfa: Nfa) -> int | None:
    """Minimum total edge weight of a word in L(G) ∩ L(N), or None when it is empty."""
    reach = eps_reach(nfa)
    states = range(nfa.n_states)
    best: dict[tuple[int, int, int], int] = {}

    def relax(key: tuple[int, int, int], w: int) -> bool:
        if key not in best or w < best[key]:
            best[key] = w
            return True
        return False

    # Terminal items: p eps* p' -t-> q' eps* q.
    for fr, label, to, w in nfa.edges:
        if label == -1:
            continue
        for p in states:
            if fr not in reach[p]:
                continue
            for q in reach[to]:
                relax((p, label, q), w)
    for a in g.nullable:
        for p in states:
            for q in reach[p]:
                relax((p, a, q), 0)
    changed = True
    while changed:
        changed = False
        for (p, x, q), w in list(best.items()):
            for a, child in g.unary:
                if child == x:
                    changed |= relax((p, a, q), w)
        snapshot = list(best.items())
        for (p, x, r), w1 in snapshot:
            for a, bx, cy in g.binary:
                if bx != x:
                    continue
                for q in states:
                    w2 = best.get((r, cy, q))
                    if w2 is not None:
                        changed |= relax((p, a, q), w1 + w2)
    found = [
        best[(s, g.start, f)] for s in nfa.starts for f in nfa.finals if (s, g.start, f) in best
    ]
    return min(found) if found else None


def derives(g: Grammar, word: Sequence[int]) -> bool:
    """Whether S derives `word` (CYK over spans with an inner fixpoint for unary/empty)."""
    n = len(word)
    chart: dict[tuple[int, int], set[int]] = {}
    for length in range(n + 1):
        for i in range(n - length + 1):
            j = i + length
            cell: set[int] = set()
            if length == 0:
                cell.update(g.nullable)
            elif length == 1:
                cell.add(word[i])
            chart[(i, j)] = cell
            changed = True
            while changed:
                changed = False
                for a, x in g.unary:
                    if x in cell and a not in cell:
                        cell.add(a)
                        changed = True
                for a, x, y in g.binary:
                    if a in cell:
                        continue
                    for k in range(i, j + 1):
                        if x in chart[(i, k)] and y in chart[(k, j)]:
                            cell.add(a)
                            changed = True
                            break
    return g.start in chart[(0, n)]


def accepts(nfa: Nfa, word: Sequence[int]) -> bool:
    reach = eps_reach(nfa)
    current = set().union(*(reach[s] for s in nfa.starts)) if nfa.starts else set()
    for t in word:
        nxt: set[int] = set()
        for fr, label, to, _ in nfa.edges:
            if label == t and fr in current:
                nxt |= reach[to]
        current = nxt
    return bool(current & set(nfa.finals))


def words_upto(n_terminals: int, max_len: int) -> Iterator[tuple[int, ...]]:
    for length in range(max_len + 1):
        yield from itertools.product(range(n_terminals), repeat=length)


def check_witness(g: Grammar, nfa: Nfa, witness: list[tuple[int, int]]) -> int:
    """Asserts the witness is an accepting path spelling a word of L(G); returns its weight."""
    reach = eps_reach(nfa)
    start_closure = set().union(*(reach[s] for s in nfa.starts))
    if not witness:
        assert start_closure & set(nfa.finals), "empty witness but no start reaches a final"
        assert derives(g, ()), "empty witness but S is not nullable"
        return 0
    word = []
    weight = 0
    prev_end = None
    for k, (edge_id, end) in enumerate(witness):
        fr, label, to, w = nfa.edges[edge_id]
        assert label != -1, f"leaf {k} is an epsilon edge"
        if prev_end is None:
            assert fr in start_closure, f"leaf 0 starts in {fr}, not epsilon-reachable from a start"
        else:
            assert fr == prev_end, f"leaf {k} starts in {fr} but leaf {k - 1} ended in {prev_end}"
        assert end in reach[to], f"leaf {k} ends in {end}, not epsilon-reachable from {to}"
        word.append(label)
        weight += w
        prev_end = end
    assert prev_end in nfa.finals, f"last leaf ends in {prev_end}, not a final state"
    assert derives(g, word), f"witness word {word} is not derived by S"
    return weight
