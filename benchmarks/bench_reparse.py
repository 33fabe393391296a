"""C++ request preparation, cold and warm, with tree-sitter trees re-used across edits
(holefill.check.reparse) and with every parse fresh (`fresh_parses()`), side by side in one
run.

    python benchmarks/bench_reparse.py [--lines 1000,5000,10000] [--holes 1,3] [--cuts 4]
        [--tokens 6]

Files of HumanEval-X C++ programs (holefill.bench.scaling.scaling_file) with the cuts of
the scaling benchmark (`holefill bench`'s first cuts of each cell, then more of the same
seed). Per cut and mode, every window, tree and grammar cache emptied: `cold` is the first
request's preparation (segments, windows, engines and the first check of every part, as
holefill.bench.scaling times it), `warm` the next request with the same engine cache after
the user typed the first `--tokens` tokens of the middle into hole 1 (the bundled model's
tokenizer; 4 characters a token without it). The first cut runs once unmeasured first
(loading). `windows` is the part of the warm request before its first checks (segments, windows,
engines: holefill.decode.completer.request_checks), `parse` is the time the warm request spent in
tree-sitter. The two modes alternate which goes first. Medians over the cuts, and the
ratio fresh / re-used.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable
from typing import Any

from holefill.bench.config import BenchConfig
from holefill.bench.scaling import _cuts, scaling_file, token_splitter
from holefill.check import reparse, segments_brace, window_brace
from holefill.check.checker import Checker
from holefill.decode.completer import EngineCache, request_checks
from holefill.decode.loop import DecodeSettings

MODES = ("fresh", "reuse")


def forget() -> None:
    """Every cache of trees, windows and grammar checks the brace languages keep."""
    window_brace.forget()
    for f in (window_brace._accepts, segments_brace._begins_program, segments_brace._classes):
        f.cache_clear()
    reparse.forget()


class ParseClock:
    """The time spent in holefill.check.reparse.parse while installed."""

    def __init__(self) -> None:
        self.ms = 0.0
        self._parse = reparse.parse

    def __enter__(self) -> ParseClock:
        def timed(language: str, data: bytes) -> Any:
            t0 = time.perf_counter()
            try:
                return self._parse(language, data)
            finally:
                self.ms += 1e3 * (time.perf_counter() - t0)

        reparse.parse = timed  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        reparse.parse = self._parse  # type: ignore[assignment]


def prepare_ms(checker: Checker, chunks: list[str], cache: EngineCache) -> tuple[float, float]:
    """(the whole preparation, its segments, windows and engines without the first checks)"""
    t0 = time.perf_counter()
    parts = request_checks(checker, chunks, DecodeSettings(), engine_for=cache.engine_for,
                           memo=cache.verdicts)
    t1 = time.perf_counter()
    for seg, constraint in parts:
        constraint.verdict(list(seg.chunks), list(seg.sites))
    return 1e3 * (time.perf_counter() - t0), 1e3 * (t1 - t0)


def one_cut(checker: Checker, chunks: list[str], typed: str, mode: str) -> tuple[float, ...]:
    """(cold ms, warm ms, warm parse ms, warm windows ms) of one cut in one mode."""
    forget()
    cache = EngineCache()
    with reparse.fresh_parses() if mode == "fresh" else contextlib.nullcontext():
        cold, _ = prepare_ms(checker, chunks, cache)
        with ParseClock() as clock:
            warm, windows = prepare_ms(checker, [chunks[0] + typed, *chunks[1:]], cache)
    return cold, warm, clock.ms, windows


def splitter() -> Callable[[str], list[int]]:
    from holefill.models import default_model_path

    return token_splitter(default_model_path() / "tokenizer.json")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", default="1000,5000,10000")
    ap.add_argument("--holes", default="1,3")
    ap.add_argument("--cuts", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=6, help="tokens typed into hole 1")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    checker = Checker.for_language("cpp")
    split = splitter()
    config = BenchConfig(cuts_per_cell=args.cuts)
    print("| lines | holes | cuts | cold fresh | cold reuse | ratio | warm fresh | warm reuse "
          "| ratio | warm max fresh / reuse | windows fresh / reuse | parse fresh / reuse |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for lines in (int(x) for x in args.lines.split(",")):
        text = scaling_file("cpp", lines, config)
        for holes in (int(x) for x in args.holes.split(",")):
            got: dict[str, list[tuple[float, ...]]] = {m: [] for m in MODES}
            cuts = _cuts(text, holes, lines, config, checker)
            for k, c in enumerate(cuts):
                middle = c.middles[0]
                ends = split(middle)
                typed = middle[:ends[min(args.tokens, len(ends)) - 1]]
                if k == 0:  # loads, first allocations: not measured
                    one_cut(checker, list(c.chunks), typed, "fresh")
                for mode in MODES if k % 2 == 0 else MODES[::-1]:
                    got[mode].append(one_cut(checker, list(c.chunks), typed, mode))
            med = {m: [statistics.median(r[i] for r in got[m]) for i in range(4)]
                   for m in MODES}
            worst = {m: max(r[1] for r in got[m]) for m in MODES}
            f, r = med["fresh"], med["reuse"]
            print(f"| {text.count(chr(10))} | {holes} | {len(got['fresh'])} | {f[0]:.0f} | "
                  f"{r[0]:.0f} | {f[0] / r[0]:.2f} | {f[1]:.1f} | {r[1]:.1f} | "
                  f"{f[1] / r[1]:.2f} | {worst['fresh']:.0f} / {worst['reuse']:.0f} | "
                  f"{f[3]:.1f} / {r[3]:.1f} | {f[2]:.1f} / {r[2]:.1f} |", flush=True)
    print("\nTimes in ms, medians over the cuts (warm max: the slowest cut's warm request); "
          "ratio: fresh / reuse.")


if __name__ == "__main__":
    main()
