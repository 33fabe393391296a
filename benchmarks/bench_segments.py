"""Filling several holes with and without segments, side by side in one run.

    python benchmarks/bench_segments.py [--lines 1000] [--holes 3] [--cuts 3] [--tokens 24]

A file of standard-library modules (holefill.bench.scaling.build_file) gets k random spans
removed (cuts whose removed text keeps the reading around it), and the bundled model fills
them twice: with segments (holefill.check.segments: each hole checked against its own part of
the file, the default) and without (one window over all holes). Printed per cut: wall time,
whether CPython parses the result, whether every check was answered, and the check times.
"""

from __future__ import annotations

import argparse
import ast
import random
import time
import warnings

from holefill import Checker
from holefill.bench.scaling import build_file, reading_cuts
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=1000)
    ap.add_argument("--holes", type=int, default=3)
    ap.add_argument("--cuts", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=24, help="max new tokens per hole")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    checker = Checker.for_language("python")
    text = build_file(args.lines, 0)
    comp = Completer(device="cpu", threads=1)
    rng = random.Random(f"segments:{args.lines}:{args.holes}")
    print("| cut | segments | mode | wall s | parses | verified | checks "
          "| check ms median / p90 / total |")
    print("|---|---|---|---|---|---|---|---|")
    for k, c in enumerate(reading_cuts(checker, text, args.holes, args.cuts, rng, "c")):
        parts = len(request_checks(checker, list(c.chunks), DecodeSettings(incremental=False)))
        # the first fill of a cut warms shared caches: alternate which mode goes first
        for segmented in ((True, False) if k % 2 == 0 else (False, True)):
            t0 = time.perf_counter()
            res = comp.fill(list(c.chunks), "python", max_new_tokens=args.tokens,
                            segmented=segmented)
            wall = time.perf_counter() - t0
            st = res.stats
            mode = "segments" if segmented else "one window"
            print(f"| {c.name} | {parts} | {mode} | {wall:.2f} | "
                  f"{parses(res.text(list(c.chunks)))} | {res.verified} | "
                  f"{int(st.get('checks', 0))} | {st.get('check_ms_median', 0):.2f} / "
                  f"{st.get('check_ms_p90', 0):.1f} / {st.get('check_ms_total', 0):.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
