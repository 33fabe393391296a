"""The Python checker on the standard library: the figures of the Python issue, in one run.

    python benchmarks/python_corpus.py [--files N] [--span N] [--boundary N] [--multi N]

1. Whole files: every .py file of the running interpreter's standard library that `ast.parse`
   accepts, checked as a zero-hole output; prints the count, every file not answered YES (with
   its verdict), and time per file.
2. Completeness: random-span cuts (1-100 characters anywhere), boundary cuts (from inside a
   line to the end of a later line at the same indentation) and 2/3-hole span cuts: the removed
   text is a filling, so every answer must be YES.
3. Witnesses: each cut filled with the checker's witness and judged by `ast.parse`.
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


def cuts(chk: Checker, kind: str, holes: int, n: int) -> None:
    if n <= 0:
        return
    sample = python_cuts(kind, n, seed=0, holes=holes)
    not_yes, wit_fail, times = [], [], []
    for c in sample:
        t0 = time.perf_counter()
        res = chk.check(c.chunks, want_witness=True)
        times.append((time.perf_counter() - t0) * 1e3)
        if res.verdict is not Verdict.YES:
            not_yes.append((c.name, res.verdict.value))
            continue
        try:
            ast.parse(c.filled(res.fills or []))
        except SyntaxError as exc:
            wit_fail.append((c.name, exc.msg))
    ok = len(sample) - len(not_yes)
    print(f"{kind} x{holes}: completable {ok}/{len(sample)}; witness passes ast.parse "
          f"{ok - len(wit_fail)}/{ok} ({100 * (ok - len(wit_fail)) / max(ok, 1):.2f}%); "
          f"median {statistics.median(times):.1f} ms (check + witness)")
    for x in not_yes[:20]:
        print("   not YES:", *x)
    for x in wit_fail[:20]:
        print("   witness rejected:", *x)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=0, help="limit whole files (0 = all)")
    ap.add_argument("--span", type=int, default=2000)
    ap.add_argument("--boundary", type=int, default=2000)
    ap.add_argument("--multi", type=int, default=500, help="per hole count (2 and 3)")
    ap.add_argument("--skip-files", action="store_true")
    args = ap.parse_args()
    chk = Checker.for_language("python")
    if not args.skip_files:
        whole_files(chk, args.files or None)
    cuts(chk, "span", 1, args.span)
    cuts(chk, "boundary", 1, args.boundary)
    cuts(chk, "span", 2, args.multi)
    cuts(chk, "span", 3, args.multi)


if __name__ == "__main__":
    main()
