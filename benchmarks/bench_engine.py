"""Per-token check time of the incremental engine against file size and hole count.

    python benchmarks/bench_engine.py [--sizes 100 1000 5000 10000] [--cuts 6] [--holes 1 3]
        [--right shared per-entry]

Files of 100 to 10,000 lines are standard-library modules concatenated in a seeded order
(holefill.bench.scaling.build_file). In each, k random spans whose removed text keeps the
reading around it are cut out, and generation of the first hole is replayed token by token
(the removed text split by the bundled model's tokenizer), as decoding appends tokens, with the
checks a request makes (holefill.decode.completer.request_checks: the first hole's segment,
holefill.check.segments; every segment's first check counts as preparation). Side by side,
in one run: the engine (holefill.check.incremental; its first check of a request, which
prepares the request, is reported apart), the classic windowed check per token, and the
naive baseline of re-parsing the whole file with `ast.parse` per token. The stage profile
says where the engine's time goes. `--right` runs the engine with the right context shared by
entries (the default) and/or one context per entry (the reference), each on the same cuts.
Every answer should be YES (the removed text completes
each state); anything else is counted.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import random
import statistics
import time
import warnings
from collections import Counter

from holefill import Checker
from holefill.bench.metrics import percentile as pct
from holefill.bench.scaling import build_file, reading_cuts, token_splitter
from holefill.bench.stages import Stages
from holefill.check import incremental
from holefill.decode.completer import request_checks
from holefill.decode.loop import DecodeSettings
from holefill.lexing.anchors import Anchors
from holefill.models import default_model_path


def cuts_of(text: str, holes: int, n: int, seed: int, checker: Checker) -> list:
    rng = random.Random(f"engine:{seed}:{holes}:{len(text)}")
    return reading_cuts(checker, text, holes, n, rng, "c")


def run(sizes: list[int], n_cuts: int, holes_list: list[int], classic: bool,
        rights: tuple[str, ...] = ("shared",)) -> None:
    checker = Checker.for_language("python")
    split = token_splitter(default_model_path() / "tokenizer.json")
    settings = DecodeSettings()
    print("| lines | holes | right | segments | engine prep med | engine per token med / p90 / "
          "p99 / max | classic med / p90 | ast.parse whole file | answers |")
    print("|---|---|---|---|---|---|---|---|---|")
    stages = Stages()
    with stages:
        for size in sizes:
            text = build_file(size, 0)
            lines = text.count("\n")
            for holes, right in [(h, r) for h in holes_list for r in rights]:
                incremental.SHARED_RIGHT = right == "shared"
                prep, step, cls, parse, segments = [], [], [], [], []
                answers: Counter[str] = Counter()
                for c in cuts_of(text, holes, n_cuts, 0, checker):
                    chunks = list(c.chunks)
                    t0 = time.perf_counter()
                    with stages.phase("prep"):
                        parts = request_checks(checker, chunks, settings)
                        # the request's first check: every segment (the other holes' included)
                        for seg, constraint in parts[1:]:
                            constraint.verdict(list(seg.chunks), list(seg.sites))
                    seg, constraint = parts[0]
                    engine, window, sites = constraint.engine, constraint.window, seg.sites
                    setup = (time.perf_counter() - t0) * 1e3
                    segments.append(len(parts))
                    middle = c.middles[0]
                    for k, end in enumerate(split(middle)):
                        state = [seg.chunks[0] + middle[:end], *seg.chunks[1:]]
                        t0 = time.perf_counter()
                        with stages.phase("prep" if k == 0 else "token"):
                            got = engine.verdict(state, sites)
                        ms = (time.perf_counter() - t0) * 1e3
                        (prep if k == 0 else step).append(ms + (setup if k == 0 else 0))
                        answers[got.value if got is not None else "fallback"] += 1
                        if classic and k % 2 == 0:
                            t0 = time.perf_counter()
                            checker.check(window.apply(state),
                                          anchors=window.map_anchors(Anchors(tuple(sites)),
                                                                     state))
                            cls.append((time.perf_counter() - t0) * 1e3)
                        if k % 4 == 0:
                            # the naive baseline: re-parse the file as it would be now
                            filled = "".join(x + m for x, m in zip(
                                [chunks[0] + middle[:end], *chunks[1:]],
                                ["", *c.middles[1:], ""], strict=True))
                            t0 = time.perf_counter()
                            with warnings.catch_warnings(), \
                                    contextlib.suppress(SyntaxError):
                                warnings.simplefilter("ignore")
                                ast.parse(filled)
                            parse.append((time.perf_counter() - t0) * 1e3)
                print(f"| {lines} | {holes} | {right} | {statistics.mean(segments):.1f} | "
                      f"{statistics.median(prep):.1f} | "
                      f"{statistics.median(step):.3f} / {pct(step, .9):.2f} / "
                      f"{pct(step, .99):.1f} / {max(step):.1f} | "
                      + (f"{statistics.median(cls):.1f} / {pct(cls, .9):.1f}" if cls else "-")
                      + f" | {statistics.median(parse):.2f} | {dict(answers)} |", flush=True)
    print("\nwhere the engine's time went (all sizes; prep: the first check of a request):")
    print("\n".join(stages.lines()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000, 10000])
    ap.add_argument("--cuts", type=int, default=6)
    ap.add_argument("--holes", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--no-classic", action="store_true", help="skip the classic check")
    ap.add_argument("--right", nargs="+", choices=["shared", "per-entry"], default=["shared"],
                    help="right contexts shared by entries and/or one per entry (reference)")
    args = ap.parse_args()
    try:
        run(args.sizes, args.cuts, args.holes, not args.no_classic, tuple(args.right))
    finally:
        incremental.SHARED_RIGHT = True


if __name__ == "__main__":
    main()
