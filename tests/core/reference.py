"""Independent pure-Python oracles for the native core (used by tests/core only).

- `reference_min_weight`: naive weighted fixpoint over the explicit Bar-Hillel intersection
  grammar. Unlike the core it keeps epsilon moves inside the item relation (items may start
  or end with epsilon moves, at their lightest epsilon-path weight) instead of composing
  closures onto edges and start offsets, and it relaxes all rules to a fixpoint instead of
  popping lightest-first. Path weights count every edge, epsilon edges included.
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


def eps_dist(nfa: Nfa) -> list[dict[int, int]]:
    """dist[p][q] = lightest weight of an epsilon-only path from p to q, for every q
    epsilon-reachable from p (p itself at 0). Bellman-Ford style relaxation to a fixpoint."""
    dist = [{p: 0} for p in range(nfa.n_states)]
    changed = True
    while changed:
        changed = False
        for fr, label, to, w in nfa.edges:
            if label != -1:
                continue
            for p in range(nfa.n_states):
                d = dist[p].get(fr)
                if d is not None and (to not in dist[p] or d + w < dist[p][to]):
                    dist[p][to] = d + w
                    changed = True
    return dist


def eps_reach(nfa: Nfa) -> list[set[int]]:
    """reach[p] = states reachable from p by epsilon moves only (p included)."""
    return [set(d) for d in eps_dist(nfa)]


def reference_min_weight(g: Grammar, nfa: Nfa) -> int | None:
    """Minimum total edge weight (epsilon edges included) of an accepting path spelling a
    word of L(G), or None when L(G) ∩ L(N) is empty."""
    dist = eps_dist(nfa)
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
            if fr not in dist[p]:
                continue
            for q, d_after in dist[to].items():
                relax((p, label, q), dist[p][fr] + w + d_after)
    for a in g.nullable:
        for p in states:
            for q, d in dist[p].items():
                relax((p, a, q), d)
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
    """Asserts the witness is an accepting path spelling a word of L(G); returns its weight,
    completing the leaves with lightest epsilon-paths as holefill.h says a caller does:
    d(starts, from(e_0)) + sum of (w(e_k) + d(to(e_k), end_k)), or min d(start, final) for
    the empty word."""
    dist = eps_dist(nfa)
    reach = [set(d) for d in dist]
    start_closure = set().union(*(reach[s] for s in nfa.starts))

    def from_starts(state: int) -> int:
        return min(dist[s][state] for s in nfa.starts if state in dist[s])

    if not witness:
        reached = start_closure & set(nfa.finals)
        assert reached, "empty witness but no start reaches a final"
        assert derives(g, ()), "empty witness but S is not nullable"
        return min(from_starts(f) for f in reached)
    word = []
    weight = 0
    prev_end = None
    for k, (edge_id, end) in enumerate(witness):
        fr, label, to, w = nfa.edges[edge_id]
        assert label != -1, f"leaf {k} is an epsilon edge"
        if prev_end is None:
            assert fr in start_closure, f"leaf 0 starts in {fr}, not epsilon-reachable from a start"
            weight += from_starts(fr)
        else:
            assert fr == prev_end, f"leaf {k} starts in {fr} but leaf {k - 1} ended in {prev_end}"
        assert end in reach[to], f"leaf {k} ends in {end}, not epsilon-reachable from {to}"
        word.append(label)
        weight += w + dist[to][end]
        prev_end = end
    assert prev_end in nfa.finals, f"last leaf ends in {prev_end}, not a final state"
    assert derives(g, word), f"witness word {word} is not derived by S"
    return weight
