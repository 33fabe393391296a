"""Time one Python check for fill-in-the-middle cuts in files of about 100, 1,000 and 5,000
lines, so that growth with file size is visible.

For each size bucket, standard-library files nearest that size get boundary cuts (the
complete-as-you-type shape); we time `completable` (lexing with holes + native core, split)
and, side by side, a full `ast.parse` of the original file (what re-parsing the whole file
costs per keystroke; it answers the easier question "is this file valid now?").

    python benchmarks/bench_python.py [--cuts N]
"""

from __future__ import annotations

import argparse
import ast
import random
import statistics
import time

from holefill import Checker
from holefill.datasets import boundary_cut, stdlib_files


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuts", type=int, default=30, help="cuts per size bucket")
    args = ap.parse_args()
    chk = Checker.for_language("python")
    files = [(p, p.read_text(encoding="utf-8")) for p in stdlib_files()]
    rng = random.Random(0)
    print(f"{'lines':>6} {'files':>5} | {'check med':>9} {'p90':>8} | {'lex med':>8} "
          f"{'core med':>8} | {'ast.parse med':>13} | verdicts")
    for target in (100, 1000, 5000):
        near = sorted(files, key=lambda f: abs(f[1].count("\n") - target))[:5]
        total, lex, core, parse, verdicts = [], [], [], [], []
        for j in range(args.cuts):
            path, text = near[j % len(near)]
            c = boundary_cut(path.name, text, rng)
            if c is None:
                continue
            res = chk.check(c.chunks)
            total.append(res.stats["lex_ms"] + res.stats["core_ms"])
            lex.append(res.stats["lex_ms"])
            core.append(res.stats["core_ms"])
            verdicts.append(res.verdict.value)
            t0 = time.perf_counter()
            ast.parse(text)
            parse.append((time.perf_counter() - t0) * 1e3)
        lines = statistics.mean(f[1].count("\n") for f in near)
        print(f"{lines:6.0f} {len(near):>5} | {statistics.median(total):9.1f} "
              f"{pct(total, .9):8.1f} | {statistics.median(lex):8.1f} "
              f"{statistics.median(core):8.1f} | {statistics.median(parse):13.2f} | "
              f"{verdicts.count('yes')}/{len(verdicts)} yes")
    print("\nAll times in ms. The check covers the whole file: its cost grows with the text")
    print("around the hole (lexing is pure Python; the core is linear after context filtering).")


if __name__ == "__main__":
    main()
