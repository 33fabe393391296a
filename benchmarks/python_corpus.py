"""The Python checker on the standard library: the figures of the Python issue, in one run.

    python benchmarks/python_corpus.py [--files N] [--span N] [--boundary N] [--multi N]

1. Whole files: every .py file of the running interpreter's standard library that `ast.parse`
   accepts, checked as a zero-hole output; prints the count, every file not answered YES (with
   its verdict), and time per file.
2. Completeness: random-span cuts (1-100 characters anywhere), boundary cuts (from inside a
   line to the end of a later line at the same indentation) and 2/3-hole span cuts: the removed
   text is a filling, so every answer must be YES (plain semantics); with anchors, every cut
   whose removed text keeps the reading of the text around it must be YES.
3. Witnesses: each cut filled with the checker's witness and judged by `ast.parse`.
4. The incremental engine on the same cuts (must be YES).
"""

from __future__ import annotations

import argparse
import ast
import statistics
import time

from holefill import Checker, Verdict
from holefill.datasets import python_cuts, stdlib_files


def whole_files(chk: Checker, limit: int | None) -> None:
    files = stdlib_files()
    if limit:
        files = files[:limit]
    bad, times = [], []
    for path in files:
        text = path.read_text(encoding="utf-8")
        t0 = time.perf_counter()
        v = chk.completable([text])
        times.append((time.perf_counter() - t0) * 1e3)
        if v is not Verdict.YES:
            bad.append((str(path), v.value, text.count("\n")))
    print(f"whole files: {len(files) - len(bad)}/{len(files)} accepted; "
          f"median {statistics.median(times):.1f} ms, max {max(times):.0f} ms")
    for b in bad:
        print("   not YES:", *b)


def cuts(chk: Checker, kind: str, holes: int, n: int, engine: bool) -> None:
    """Plain semantics (any valid program): every cut completable. Anchored (the default:
    fillings keep the reading of the text outside the holes): every cut whose removed text
    keeps that reading; the others are counted. Engine: the incremental engine's answer at
    the first hole, with the real text before it, for the cuts that keep the reading."""
    if n <= 0:
        return
    sample = python_cuts(kind, n, seed=0, holes=holes)
    for anchored in (False, True):
        not_yes, wit_fail, times, skipped = [], [], [], 0
        for c in sample:
            if anchored and not chk.keeps_place(c.chunks, c.middles):
                skipped += 1
                continue
            t0 = time.perf_counter()
            res = chk.check(c.chunks, want_witness=True, anchored=anchored)
            times.append((time.perf_counter() - t0) * 1e3)
            if res.verdict is not Verdict.YES:
                not_yes.append((c.name, res.verdict.value))
                continue
            try:
                ast.parse(c.filled(res.fills or []))
            except SyntaxError as exc:
                wit_fail.append((c.name, exc.msg))
        total = len(sample) - skipped
        ok = total - len(not_yes)
        mode = "anchored" if anchored else "plain"
        extra = (f" ({skipped} cuts whose removed text changes the reading around it left "
                 "out)" if anchored else "")
        print(f"{kind} x{holes} {mode}: completable {ok}/{total}{extra}; witness passes "
              f"ast.parse {ok - len(wit_fail)}/{ok} "
              f"({100 * (ok - len(wit_fail)) / max(ok, 1):.2f}%); "
              f"median {statistics.median(times):.1f} ms (check + witness)")
        for x in not_yes[:20]:
            print("   not YES:", *x)
        for x in wit_fail[:20]:
            print("   witness rejected:", *x)
    if engine:
        engine_answers(chk, [c for c in sample if chk.keeps_place(c.chunks, c.middles)],
                       f"{kind} x{holes}")


def engine_answers(chk: Checker, sample: list, label: str) -> None:
    """The incremental engine on each cut (its first check of a request: the hole still
    empty), which must be YES; and after the whole first removed text, which must be YES."""
    from holefill.check.window import find_window
    from holefill.decode.completer import make_engine

    counts: dict[str, int] = {}
    for c in sample:
        chunks = list(c.chunks)
        window = find_window("python", chunks)
        eng = make_engine(chk, chunks, window)
        sites = list(chk.anchors(window.apply(chunks)).sites)
        for state in (chunks, [chunks[0] + c.middles[0], *chunks[1:]]):
            got = eng.verdict(state, sites)
            key = "classic" if got is None else got.value
            counts[key] = counts.get(key, 0) + 1
            if got is Verdict.NO:
                print("   engine NO:", c.name)
    print(f"{label} engine: {counts}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=0, help="limit whole files (0 = all)")
    ap.add_argument("--span", type=int, default=2000)
    ap.add_argument("--boundary", type=int, default=2000)
    ap.add_argument("--multi", type=int, default=500, help="per hole count (2 and 3)")
    ap.add_argument("--skip-files", action="store_true")
    ap.add_argument("--no-engine", action="store_true", help="skip the incremental engine")
    args = ap.parse_args()
    chk = Checker.for_language("python")
    if not args.skip_files:
        whole_files(chk, args.files or None)
    engine = not args.no_engine
    cuts(chk, "span", 1, args.span, engine)
    cuts(chk, "boundary", 1, args.boundary, engine)
    cuts(chk, "span", 2, args.multi, engine)
    cuts(chk, "span", 3, args.multi, engine)


if __name__ == "__main__":
    main()
