"""The document's own reading (holefill.lexing.relex) against maximal munch of the whole file.

On the scaling bench's 10,000-line Python and C++ files with 20 characters deleted at a random
place: a full maximal munch (the reference lexer's `lex`, what every request paid before), a
`Relexer` reading with nothing to reuse (cold), and the reading after the user typed 7
characters there (typing along: re-read from the previous reading). Medians of 5 places,
measured side by side; each Relexer reading is checked against the full munch.

    python benchmarks/bench_relex.py
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from holefill import Checker
from holefill.bench.config import BenchConfig
from holefill.bench.scaling import scaling_file
from holefill.lexing.relex import Relexer


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t0) * 1e3


def main() -> None:
    for language in ("python", "cpp"):
        ref = Checker.for_language(language).lexer.reference
        text = scaling_file(language, 10000, BenchConfig())
        rng = random.Random(1)
        full, cold, warm = [], [], []
        for _ in range(5):
            at = rng.randrange(len(text))
            cut = text[:at] + text[at + 20:]
            typed = text[:at + 7] + text[at + 20:]
            want, ms = timed(lambda r=ref, s=cut: list(r.lex(r.classes(s))))
            full.append(ms)
            relexer = Relexer(ref.classes, ref.dfa.munch, ref.error_terms)
            got, ms = timed(lambda r=relexer, s=cut: r.read(s))
            cold.append(ms)
            assert got.triples() == want
            again, ms = timed(lambda r=relexer, s=typed: r.read(s))
            warm.append(ms)
            assert again.triples() == list(ref.lex(ref.classes(typed)))
        m = statistics.median
        print(f"{language:<6} {len(text):>7} chars: full munch {m(full):6.1f} ms | Relexer cold "
              f"{m(cold):6.1f} ms | typing along {m(warm):5.2f} ms "
              f"({m(full) / m(warm):.0f}x less than the full munch)")


if __name__ == "__main__":
    main()
