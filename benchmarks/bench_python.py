"""Time one Python check for fill-in-the-middle cuts in files of about 100, 1,000 and 5,000
lines, so that growth with file size is visible.

For each size bucket, standard-library files nearest that size get boundary cuts (the
complete-as-you-type shape). Per cut, side by side in one run:

- whole: `check` of the whole file with its hole (lexing with holes + native core);
- window: `find_window` once, then `check` of the window (what a suggestion request pays
  for its first check; holefill.check.window);
- step: the checks decoding makes while the hole's text grows (the removed text typed in
  4-character steps into the same window; right-context lexing is cached between them);
- ast.parse: CPython parsing the whole original file (the cost of re-parsing per
  keystroke; it answers the easier question "is this file valid now?").

    python benchmarks/bench_python.py [--cuts N]
"""

from __future__ import annotations

import argparse
import ast
import random
import statistics
import time

from holefill import Checker, Verdict
from holefill.check.window import find_window
from holefill.datasets import boundary_cut, stdlib_files


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1e3


def bucket(chk: Checker, near: list, cuts: int, rng: random.Random) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {k: [] for k in
                                   ("whole", "lex", "core", "find", "window", "step", "parse")}
    out["wrong"] = []
    for j in range(cuts):
        path, text = near[j % len(near)]
        c = boundary_cut(path.name, text, rng)
        if c is None:
            continue
        res = chk.check(c.chunks)
        out["whole"].append(res.stats["lex_ms"] + res.stats["core_ms"])
        out["lex"].append(res.stats["lex_ms"])
        out["core"].append(res.stats["core_ms"])
        t0 = time.perf_counter()
        win = find_window("python", c.chunks)
        out["find"].append(ms(t0))
        t0 = time.perf_counter()
        wres = chk.check(win.apply(c.chunks))
        out["window"].append(ms(t0))
        mid = c.middles[0]
        for k in range(4, min(len(mid), 40), 4):
            t0 = time.perf_counter()
            sres = chk.check(win.apply([c.chunks[0] + mid[:k], c.chunks[1]]))
            out["step"].append(ms(t0))
            out["wrong"] += [1.0] if sres.verdict is not Verdict.YES else []
        out["wrong"] += [1.0 for v in (res.verdict, wres.verdict) if v is not Verdict.YES]
        t0 = time.perf_counter()
        ast.parse(text)
        out["parse"].append(ms(t0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuts", type=int, default=30, help="cuts per size bucket")
    args = ap.parse_args()
    chk = Checker.for_language("python")
    files = [(p, p.read_text(encoding="utf-8")) for p in stdlib_files()]
    rng = random.Random(0)
    print(f"{'lines':>6} | {'whole med':>9} {'p90':>6} {'(lex':>6} {'core)':>6} | "
          f"{'find win':>8} {'window med':>10} {'p90':>6} | {'step med':>8} {'p90':>6} | "
          f"{'ast.parse':>9} | {'whole/win':>9} | not YES")
    for target in (100, 1000, 5000):
        near = sorted(files, key=lambda f: abs(f[1].count("\n") - target))[:5]
        r = bucket(chk, near, args.cuts, rng)
        lines = statistics.mean(f[1].count("\n") for f in near)
        med = {k: statistics.median(v) for k, v in r.items() if v}
        print(f"{lines:6.0f} | {med['whole']:9.1f} {pct(r['whole'], .9):6.1f} "
              f"{med['lex']:6.1f} {med['core']:6.1f} | {med['find']:8.1f} "
              f"{med['window']:10.1f} {pct(r['window'], .9):6.1f} | {med['step']:8.1f} "
              f"{pct(r['step'], .9):6.1f} | {med['parse']:9.2f} | "
              f"{med['whole'] / med['window']:8.1f}x | {len(r['wrong'])}")
    print("\nAll times in ms (median, p90). whole: the file with its hole; window: the run of "
          "statements\naround the hole that decides completability (found once per request); "
          "step: the\nchecks while the hole's text grows. The window's cost follows the "
          "statements around\nthe hole, not the file.")


if __name__ == "__main__":
    main()
