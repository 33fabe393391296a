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
`--split` checks each token against the piece of text between the open holes around its hole
(holefill.check.focus, the default) and/or against the whole segment, on the same cuts.
Per-token times are what the decoding loop pays (Constraint.verdict: the engine, or the
classic check where the engine falls back; `fallbacks` counts those). Every answer should be
YES (the removed text completes each state); anything else is counted.
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
        rights: tuple[str, ...] = ("shared",), splits: tuple[str, ...] = ("on",)) -> None:
    checker = Checker.for_language("python")
    split = token_splitter(default_model_path() / "tokenizer.json")
    print("| lines | holes | right | split | segments | prep med | per token med / p90 / "
          "p99 / max | fallbacks | classic med / p90 | ast.parse whole file | answers |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    stages = Stages()
    with stages:
        for size in sizes:
            text = build_file(size, 0)
            lines = text.count("\n")
            for holes, right, on in [(h, r, o) for h in holes_list for r in rights
                                     for o in splits]:
                incremental.SHARED_RIGHT = right == "shared"
                settings = DecodeSettings(split_at_holes=on == "on")
                prep, step, cls, parse, segments = [], [], [], [], []
                fallbacks = 0
                answers: Counter[str] = Counter()
                for c in cuts_of(text, holes, n_cuts, 0, checker):
                    chunks = list(c.chunks)
                    t0 = time.perf_counter()
                    with stages.phase("prep"):
                        parts = request_checks(checker, chunks, settings)
                        # the request's first check: every segment (the other holes' included)
                        for seg, constraint in parts:
                            constraint.verdict(list(seg.chunks), list(seg.sites))
                    prep.append((time.perf_counter() - t0) * 1e3)
                    seg, constraint = parts[0]
                    window, sites = constraint.window, list(seg.sites)
                    before = constraint.classic
                    segments.append(len(parts))
                    middle = c.middles[0]
                    for k, end in enumerate(split(middle)):
                        state = [seg.chunks[0] + middle[:end], *seg.chunks[1:]]
                        t0 = time.perf_counter()
                        with stages.phase("token"):
                            got = constraint.verdict(state, sites, True, (0, 1))
                        step.append((time.perf_counter() - t0) * 1e3)
                        answers[got.value] += 1
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
                    fallbacks += constraint.classic - before
                print(f"| {lines} | {holes} | {right} | {on} | {statistics.mean(segments):.1f} | "
                      f"{statistics.median(prep):.1f} | "
                      f"{statistics.median(step):.3f} / {pct(step, .9):.2f} / "
                      f"{pct(step, .99):.1f} / {max(step):.1f} | {fallbacks} | "
                      + (f"{statistics.median(cls):.1f} / {pct(cls, .9):.1f}" if cls else "-")
                      + f" | {statistics.median(parse):.2f} | {dict(answers)} |", flush=True)
    print("\nwhere the time went (all sizes; prep: the request's first check of every part):")
    print("\n".join(stages.lines()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000, 10000])
    ap.add_argument("--cuts", type=int, default=6)
    ap.add_argument("--holes", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--no-classic", action="store_true", help="skip the classic check")
    ap.add_argument("--right", nargs="+", choices=["shared", "per-entry"], default=["shared"],
                    help="right contexts shared by entries and/or one per entry (reference)")
    ap.add_argument("--split", nargs="+", choices=["on", "off"], default=["on"],
                    help="check the piece between the open holes around the hole (on) and/or "
                         "the whole segment (off)")
    args = ap.parse_args()
    try:
        run(args.sizes, args.cuts, args.holes, not args.no_classic, tuple(args.right),
            tuple(args.split))
    finally:
        incremental.SHARED_RIGHT = True


if __name__ == "__main__":
    main()
