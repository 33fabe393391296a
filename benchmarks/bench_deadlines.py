"""Deadlines and cancellation on a large file and on many holes, in one run.

    python benchmarks/bench_deadlines.py [--lines 100000] [--deadline 5] [--cancel-after 0.5]

Cases (Python): a check of a file of standard-library modules with one hole in the middle;
the same file without holes; 200 adjacent empty holes in brackets, between two statements
and in a function body; 200 holes with a blank between each; and the fill's set-up
(holefill.decode.completer.request_checks: windows, segments, anchors) of the large file,
cancelled from another thread after --cancel-after seconds (the cancel is the LSP's token,
which also fires at its deadline). Printed per case: the verdict, the reason of an UNKNOWN,
the wall time, the deadline (or the cancel time) and the overrun ratio (wall / deadline: at
most about 1 when the deadline is kept), and the process's peak memory so far.

main's behaviour cannot be imported beside this one; run the script with
PYTHONPATH=<main checkout>/server for its figures (the set-up case needs a cancel callback
there too, which main's request_checks takes but does not poll while it sets up).
"""

from __future__ import annotations

import argparse
import resource
import threading
import time
from collections.abc import Callable

from holefill import Checker
from holefill.datasets import stdlib_modules_text


def peak_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def row(name: str, verdict: str, reason: str, wall: float, limit: float) -> None:
    print(f"{name:<34} {verdict:<8} {wall:7.2f} s {limit:6.1f} s {wall / limit:6.2f}x "
          f"{peak_mb():6d} MB  {reason}")


def timed_check(checker: Checker, name: str, chunks: list[str], deadline: float) -> None:
    t0 = time.perf_counter()
    res = checker.check(chunks, deadline=deadline)
    row(name, res.verdict.value, res.reason or "", time.perf_counter() - t0, deadline)


def timed_setup(checker: Checker, chunks: list[str], after: float) -> None:
    from holefill.decode.completer import request_checks
    from holefill.decode.loop import DecodeSettings

    stop = threading.Event()
    timer = threading.Timer(after, stop.set)
    cancel: Callable[[], bool] = stop.is_set
    timer.start()
    t0 = time.perf_counter()
    try:
        request_checks(checker, chunks, DecodeSettings(), cancel)
        outcome, reason = "done", "the cancel was not seen"
    except Exception as exc:  # Cancelled here; whatever main raises there
        outcome, reason = type(exc).__name__, str(exc)
    finally:
        timer.cancel()
    row("fill set-up, cancelled", outcome, reason, time.perf_counter() - t0, after)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--deadline", type=float, default=5.0)
    ap.add_argument("--cancel-after", type=float, default=0.5)
    args = ap.parse_args()
    checker = Checker.for_language("python")
    checker.check(["x = 1\n"])  # compile and load the grammar outside the timings
    text = stdlib_modules_text(args.lines)
    mid = text.index("\n", len(text) // 2) + 1
    large = [text[:mid] + "x = ", "\n" + text[mid:]]
    print(f"{text.count(chr(10))} lines, {len(text)} characters; deadline {args.deadline} s")
    print(f"{'case':<34} {'verdict':<8} {'wall':>9} {'limit':>8} {'ratio':>7} {'peak':>9}")
    timed_check(checker, f"{args.lines // 1000}k lines, one hole", large, args.deadline)
    timed_check(checker, f"{args.lines // 1000}k lines, no hole", [text], args.deadline)
    many = {
        "200 adjacent holes in brackets": ["x = ("] + [""] * 199 + [")\n"],
        "200 adjacent holes, statements": ["x = 1\n"] + [""] * 199 + ["y = 2\n"],
        "200 adjacent holes in a body": ["def f(x):\n    "] + [""] * 199 + ["\n    return x\n"],
        "200 holes, a blank between each": ["x = ("] + [" "] * 199 + [")\n"],
    }
    for name, chunks in many.items():
        timed_check(checker, name, chunks, args.deadline)
    timed_setup(checker, large, args.cancel_after)  # nothing parsed it yet in this run


if __name__ == "__main__":
    main()
