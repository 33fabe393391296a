"""Filling several holes with and without segments, side by side in one run.

    python benchmarks/bench_segments.py [--language python|cpp] [--lines 1000,5000]
        [--holes 3] [--cuts 3] [--tokens 24]

A file of standard-library modules (Python; holefill.bench.scaling.build_file) or of
HumanEval-X C++ programs (C++; holefill.bench.scaling.cpp_file) gets k random spans
removed (cuts whose removed text keeps the reading around it), and the bundled model fills
them twice: with segments (holefill.check.segments: each hole checked against its own part of
the file, the default) and without (one window over all holes). Printed per cut: the time to
prepare the request's checks (windows, segments, engines, first check of every part, as a
fill pays it), wall time of the fill, whether the result parses (CPython; tree-sitter for
C/C++), whether every check was answered, and the check times; then the medians per size
and mode.
"""

from __future__ import annotations

import argparse
import ast
import random
import statistics
import time
import warnings

from holefill import Checker
from holefill.bench.oracles import cpp_ts_valid
from holefill.bench.scaling import build_file, cpp_file, reading_cuts
from holefill.decode import Completer
from holefill.decode.completer import request_checks
from holefill.decode.loop import DecodeSettings


def parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except SyntaxError:
        return False
    return True


def parses_as(language: str, text: str) -> bool:
    return parses(text) if language == "python" else cpp_ts_valid(text)


def source(language: str, lines: int) -> str:
    return build_file(lines, 0) if language == "python" else cpp_file(lines, 0)


def prepare_ms(checker: Checker, chunks: list[str], segmented: bool) -> float:
    """Windows, segments, engines and the first check of every part, timed together."""
    t0 = time.perf_counter()
    for seg, constraint in request_checks(checker, chunks, DecodeSettings(segmented=segmented)):
        constraint.verdict(list(seg.chunks), list(seg.sites))
    return (time.perf_counter() - t0) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--language", default="python", choices=("python", "cpp"))
    ap.add_argument("--lines", default="1000", help="file sizes, comma-separated")
    ap.add_argument("--holes", type=int, default=3)
    ap.add_argument("--cuts", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=24, help="max new tokens per hole")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    language = args.language
    checker = Checker.for_language(language)
    comp = Completer(device="cpu", threads=1)
    rows: dict[tuple[int, str], list[tuple[float, float, float]]] = {}
    print("| lines | cut | segments | mode | prep ms | wall s | parses | verified | checks "
          "| check ms median / p90 / total |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for lines in (int(x) for x in args.lines.split(",")):
        text = source(language, lines)
        rng = random.Random(f"segments:{lines}:{args.holes}")
        for k, c in enumerate(reading_cuts(checker, text, args.holes, args.cuts, rng, "c")):
            chunks = list(c.chunks)
            parts = len(request_checks(checker, chunks, DecodeSettings(incremental=False)))
            # the first fill of a cut warms shared caches: alternate which mode goes first
            for segmented in ((True, False) if k % 2 == 0 else (False, True)):
                prep = prepare_ms(checker, chunks, segmented)
                t0 = time.perf_counter()
                res = comp.fill(chunks, language, max_new_tokens=args.tokens,
                                segmented=segmented)
                wall = time.perf_counter() - t0
                st = res.stats
                mode = "segments" if segmented else "one window"
                med = st.get("check_ms_median", 0.0)
                rows.setdefault((lines, mode), []).append((prep, wall, med))
                print(f"| {text.count(chr(10))} | {c.name} | {parts} | {mode} | {prep:.0f} | "
                      f"{wall:.2f} | {parses_as(language, res.text(chunks))} | "
                      f"{res.verified} | {int(st.get('checks', 0))} | {med:.2f} / "
                      f"{st.get('check_ms_p90', 0):.1f} / {st.get('check_ms_total', 0):.0f} |",
                      flush=True)
    print(f"\n{language}, {args.holes} holes, medians over the cuts:\n")
    print("| lines | mode | prep ms | wall s | check ms median |")
    print("|---|---|---|---|---|")
    for (lines, mode), got in rows.items():
        print(f"| {lines} | {mode} | {statistics.median(g[0] for g in got):.0f} | "
              f"{statistics.median(g[1] for g in got):.2f} | "
              f"{statistics.median(g[2] for g in got):.2f} |")


if __name__ == "__main__":
    main()
