"""Time the Python layout product (PythonLayoutLexer._product) in Python and in C, side by
side on the same real cuts, on the same raw NFAs (the raw lexing is not timed).

Prints, per cut kind, the product's median size and the median build time of both paths,
and the ratio; the products are checked equal on the way (edges and states).

    python benchmarks/bench_layout.py [--cuts N] [--repeat R]
"""

from __future__ import annotations

import argparse
import statistics
import time

from holefill import Checker
from holefill.datasets import python_cuts
from holefill.lexing.python_layout import PythonLayoutLexer, indent_unit

KINDS = [("span", 1), ("line", 1), ("cursor", 1), ("span", 2), ("boundary", 3)]


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuts", type=int, default=20, help="cuts per kind")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many builds")
    args = ap.parse_args()
    compiled = Checker.for_language("python").compiled
    ref = PythonLayoutLexer(compiled, native=False)
    nat = PythonLayoutLexer(compiled, native=True)
    print(f"{'cuts':12} {'n':>3} {'edges':>8} {'python ms':>10} {'C ms':>8} {'ratio':>6}")
    all_py, all_c = [], []
    for kind, holes in KINDS:
        py_t, c_t, sizes = [], [], []
        for cut in python_cuts(kind, args.cuts, seed=7, holes=holes, max_lines=400):
            chunks = list(cut.chunks)
            raw = ref.raw.build(chunks)
            unit = indent_unit(chunks)
            a = ref._product(chunks, raw, unit)
            b = nat._product(chunks, raw, unit)
            assert list(a.edges) == list(b.edges) and a.n_states == b.n_states, cut.name
            sizes.append(a.n_edges)
            py_t.append(best_of(lambda: ref._product(chunks, raw, unit), args.repeat))  # noqa: B023
            c_t.append(best_of(lambda: nat._product(chunks, raw, unit), args.repeat))  # noqa: B023
        all_py += py_t
        all_c += c_t
        mp, mc = statistics.median(py_t), statistics.median(c_t)
        print(f"{kind + 'x' + str(holes):12} {len(py_t):3} {statistics.median(sizes):8.0f} "
              f"{mp * 1e3:10.2f} {mc * 1e3:8.2f} {mp / mc:6.1f}")
    print(f"{'all':12} {len(all_py):3} {'':8} {statistics.median(all_py) * 1e3:10.2f} "
          f"{statistics.median(all_c) * 1e3:8.2f} "
          f"{statistics.median(all_py) / statistics.median(all_c):6.1f}  "
          f"(total {sum(all_py):.2f} s vs {sum(all_c):.2f} s)")


if __name__ == "__main__":
    main()
