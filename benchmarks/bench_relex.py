"""The document's own reading (holefill.lexing.relex) against maximal munch of the whole file.

On the scaling bench's 10,000-line Python and C++ files with 20 characters deleted at a random
place: a full maximal munch (the reference lexer's `lex`, what every request paid before), a
`Relexer` reading with nothing to reuse (cold), and the reading after the user typed 7
characters there (typing along: re-read from the previous reading), each with the Python
munch (the reference) and with the C one (hf_munch, what the lexers use). Medians of 5
places, measured side by side; each Relexer reading is checked against the full munch.

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
from holefill.lexing.relex import Relexer, native_reader


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t0) * 1e3


def main() -> None:
    for language in ("python", "cpp"):
        ref = Checker.for_language(language).lexer.reference
        text = scaling_file(language, 10000, BenchConfig())
        rng = random.Random(1)
        full: list[float] = []
        cold: dict[str, list[float]] = {"python": [], "c": []}
        warm: dict[str, list[float]] = {"python": [], "c": []}
        for _ in range(5):
            at = rng.randrange(len(text))
            cut = text[:at] + text[at + 20:]
            typed = text[:at + 7] + text[at + 20:]
            want, ms = timed(lambda r=ref, s=cut: list(r.lex(r.classes(s))))
            full.append(ms)
            for path in ("python", "c"):
                reader = (native_reader(ref.dfa, ref.error_terms, len(ref.names))
                          if path == "c" else None)
                relexer = Relexer(ref.classes, ref.dfa.munch, ref.error_terms, reader)
                got, ms = timed(lambda r=relexer, s=cut: r.read(s))
                cold[path].append(ms)
                assert got.triples() == want
                again, ms = timed(lambda r=relexer, s=typed: r.read(s))
                warm[path].append(ms)
                assert again.triples() == list(ref.lex(ref.classes(typed)))
        m = statistics.median
        print(f"{language:<6} {len(text):>7} chars: full munch {m(full):6.1f} ms")
        for path in ("python", "c"):
            print(f"  {path:<6} munch: Relexer cold {m(cold[path]):6.1f} ms "
                  f"({m(full) / m(cold[path]):4.1f}x as fast as the full munch) | typing along "
                  f"{m(warm[path]):5.2f} ms ({m(full) / m(warm[path]):.0f}x as fast)")

if __name__ == "__main__":
    main()
