"""The hole lexer's raw graph: the Python RawGraph against the native one (native/hf_lexer.c).

On the scaling bench's 1,000- and 10,000-line Python and C++ files cut by 1 and 3 holes of
0-40 characters at random places, the time of `HoleLexer.build` (the raw graph of every lexeme
from the start, as a cold request prepares it), anchors computed beforehand (both paths share
them), the Python path with its hole-run cache emptied before each build. Medians of 5 cuts,
both paths on the same cuts in the same run, each native graph checked equal to the Python
one.

    python benchmarks/bench_rawlex.py
"""

from __future__ import annotations

import random
import statistics
import time

from holefill import Checker
from holefill.bench.config import BenchConfig
from holefill.bench.scaling import scaling_file
from holefill.datasets import random_holes
from holefill.lexing.holes import HoleLexer


def raw_lexer(language: str) -> HoleLexer:
    lexer = Checker.for_language(language).lexer
    return lexer.holes if hasattr(lexer, "holes") else lexer.layout.raw  # type: ignore[attr-defined]


def build_ms(lexer: HoleLexer, chunks: list[str], anchors: object, native: bool):
    lexer.native = native
    lexer._hole_runs.clear()
    t0 = time.perf_counter()
    nfa = lexer.build(chunks, anchors)  # type: ignore[arg-type]
    return nfa, (time.perf_counter() - t0) * 1e3


def main() -> None:
    cfg = BenchConfig()
    print(f"{'file':<14} {'holes':>5} {'edges':>7} {'Python ms':>10} {'native ms':>10} "
          f"{'ratio':>6}")
    for language in ("python", "cpp"):
        lexer = raw_lexer(language)
        for lines in (1000, 10000):
            text = scaling_file(language, lines, cfg)
            for holes in (1, 3):
                rng = random.Random(lines + holes)
                py, nat, edges = [], [], []
                for _ in range(5):
                    chunks = random_holes(text, holes, rng)
                    anchors = lexer.anchors(chunks)
                    a, ms_py = build_ms(lexer, chunks, anchors, native=False)
                    b, ms_nat = build_ms(lexer, chunks, anchors, native=True)
                    assert list(a.edges) == list(b.edges) and a.finals == b.finals
                    py.append(ms_py)
                    nat.append(ms_nat)
                    edges.append(a.n_edges)
                m = statistics.median
                print(f"{language + ' ' + str(lines):<14} {holes:>5} {int(m(edges)):>7} "
                      f"{m(py):>10.1f} {m(nat):>10.2f} {m(py) / m(nat):>5.0f}x")
        lexer.native = True


if __name__ == "__main__":
    main()
