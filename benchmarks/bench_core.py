"""Times the native core (holefill.check.core) on a synthetic "file with holes".

Grammar: a small statement/expression language in 2NF (blocks `{ ... }`, assignments
`ID = E ;`, E with + and * and parentheses), 10 terminals, 12 nonterminals.
File: a random program of about N lexemes (default 2,000) drawn from that grammar with a
fixed seed; 1-3 spans of it are replaced by holes (a state with a self-loop on every
terminal, weight 1, entered and left by epsilon edges). Fixed lexemes have weight 0.

Usage: python benchmarks/bench_core.py [--lexemes 2000] [--repeat 15] [--seed 7]
                                      [--no-context-filter]
Prints median and p90 wall time in ms for want_witness=False (stop at discovery) and
want_witness=True (minimum-weight witness), plus the core's counters. --no-context-filter
runs the core without its context filter (holefill.h), for comparison.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from array import array

from holefill.check.core import CoreVerdict, NativeChecker, NativeGrammar

NUM, ID, PLUS, STAR, LP, RP, SEMI, LB, RB, EQ = range(10)
NAMES = ["NUM", "ID", "+", "*", "(", ")", ";", "{", "}", "="]
(S, ST, X1, X2, X3, E, X4, T, X5, F, X6, TOP) = range(10, 22)
BINARY = [
    (S, S, ST),  # S -> S St        (S -> eps below)
    (ST, X1, SEMI),  # St -> ID = E ;
    (X1, X2, E),
    (X2, ID, EQ),
    (ST, LB, X3),  # St -> { S }
    (X3, S, RB),
    (E, E, X4),  # E -> E + T | T
    (X4, PLUS, T),
    (T, T, X5),  # T -> T * F | F
    (X5, STAR, F),
    (F, LP, X6),  # F -> ( E ) | NUM | ID
    (X6, E, RP),
]
UNARY = [(E, T), (T, F), (F, NUM), (F, ID), (TOP, S)]
NULLABLE = [S]


def random_program(rng: random.Random, n_lexemes: int) -> list[int]:
    """Statements until about n_lexemes lexemes, with nested blocks and expressions."""
    out: list[int] = []

    def expr(depth: int) -> None:
        for i in range(rng.randint(1, 4)):
            if i:
                out.append(rng.choice((PLUS, STAR)))
            if depth < 3 and rng.random() < 0.2:
                out.append(LP)
                expr(depth + 1)
                out.append(RP)
            else:
                out.append(rng.choice((NUM, ID)))

    def stmt(depth: int) -> None:
        if depth < 3 and rng.random() < 0.15:
            out.append(LB)
            for _ in range(rng.randint(0, 4)):
                stmt(depth + 1)
            out.append(RB)
        else:
            out.extend((ID, EQ))
            expr(0)
            out.append(SEMI)

    while len(out) < n_lexemes:
        stmt(0)
    return out


def holed_nfa(lexemes: list[int], holes: list[tuple[int, int]]) -> tuple[int, array]:
    """Chain NFA of the lexemes with each [a, b) span replaced by a Sigma*-loop hole."""
    edges = array("i")
    state = 0
    pos = 0
    for a, b in sorted(holes) + [(len(lexemes), len(lexemes))]:
        for tok in lexemes[pos:a]:
            edges.extend((state, tok, state + 1, 0))
            state += 1
        if a < len(lexemes):
            hole = state + 1
            edges.extend((state, -1, hole, 0))
            for tok in range(len(NAMES)):
                edges.extend((hole, tok, hole, 1))
            edges.extend((hole, -1, hole + 1, 0))
            state = hole + 1
        pos = b
    return state + 1, edges


def time_runs(chk: NativeChecker, n: int, edges: array, want: bool, repeat: int):
    times = []
    res = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = chk.run(n, edges, [0], [n - 1], want_witness=want)
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    p90 = times[min(len(times) - 1, int(round(0.9 * (len(times) - 1))))]
    return statistics.median(times), p90, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lexemes", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-context-filter", action="store_true")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    lexemes = random_program(rng, args.lexemes)
    grammar = NativeGrammar(len(NAMES), TOP + 1, TOP, BINARY, UNARY, NULLABLE)
    chk = NativeChecker(grammar, context_filter=not args.no_context_filter)
    print(
        f"seed={args.seed} lexemes={len(lexemes)} repeat={args.repeat} "
        f"context_filter={not args.no_context_filter}"
    )
    print(
        f"{'holes':>5} {'mode':>8} {'verdict':>8} {'median_ms':>10} {'p90_ms':>8} "
        f"{'steps':>10} {'items':>9} {'leaves':>7}"
    )
    for n_holes in (0, 1, 2, 3):
        # Holes of 3-20 lexemes at spread-out positions.
        holes = []
        for k in range(n_holes):
            a = (k + 1) * len(lexemes) // (n_holes + 1) + rng.randint(-50, 50)
            holes.append((a, a + rng.randint(3, 20)))
        n, edges = holed_nfa(lexemes, holes)
        for want in (False, True):
            med, p90, res = time_runs(chk, n, edges, want, args.repeat)
            assert res is not None and res.verdict == CoreVerdict.YES, res
            mode = "witness" if want else "decide"
            print(
                f"{n_holes:>5} {mode:>8} {res.verdict.name:>8} {med:>10.2f} {p90:>8.2f} "
                f"{res.stats['steps']:>10} {res.stats['items']:>9} {res.stats['leaves']:>7}"
            )


if __name__ == "__main__":
    main()
