"""Time one Python check of the whole file against one of its window (holefill.check.window),
for fill-in-the-middle cuts in files of about 1,000, 3,000 and 5,000 lines.

For each size bucket, standard-library files nearest that size get boundary cuts (the
complete-as-you-type shape); we time `check` (lexing with holes + native core) on the whole
chunks and on the windowed chunks side by side, and `find_window` itself (paid once per
request; the window stays valid while the decoder inserts text into the holes). Verdicts must
agree: a window only over-rejects, and on real code it should not.

    python benchmarks/bench_window.py [--cuts N] [--top-level]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from holefill import Checker
from holefill.check.window import find_window
from holefill.datasets import boundary_cut, stdlib_files


def check_ms(chk: Checker, chunks: list[str]) -> tuple[float, str]:
    res = chk.check(chunks)
    return res.stats["lex_ms"] + res.stats["core_ms"], res.verdict.value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuts", type=int, default=10, help="cuts per size bucket")
    ap.add_argument("--top-level", action="store_true",
                    help="windows of whole top-level statements only (no indented windows)")
    args = ap.parse_args()
    chk = Checker.for_language("python")
    files = [(p, p.read_text(encoding="utf-8")) for p in stdlib_files()]
    rng = random.Random(0)
    print(f"{'lines':>6} {'files':>5} | {'window lines':>12} | {'whole med':>9} "
          f"{'window med':>10} {'ratio':>6} | {'find med':>8} {'max':>6} | verdicts w/win")
    for target in (1000, 3000, 5000):
        near = sorted(files, key=lambda f: abs(f[1].count("\n") - target))[:5]
        whole, win, find, sizes, agree = [], [], [], [], []
        for j in range(args.cuts):
            path, text = near[j % len(near)]
            c = boundary_cut(path.name, text, rng)
            if c is None:
                continue
            t0 = time.perf_counter()
            w = find_window("python", c.chunks, indented=not args.top_level)
            find.append((time.perf_counter() - t0) * 1e3)
            chunks = w.apply(c.chunks)
            sizes.append(sum(x.count("\n") for x in chunks))
            ms_whole, v_whole = check_ms(chk, list(c.chunks))
            ms_win, v_win = check_ms(chk, chunks)
            whole.append(ms_whole)
            win.append(ms_win)
            agree.append(f"{v_whole}/{v_win}")
        lines = statistics.mean(f[1].count("\n") for f in near)
        med_whole, med_win = statistics.median(whole), statistics.median(win)
        print(f"{lines:6.0f} {len(near):>5} | {statistics.median(sizes):12.0f} | "
              f"{med_whole:9.1f} {med_win:10.1f} {med_whole / med_win:5.0f}x | "
              f"{statistics.median(find):8.2f} {max(find):6.1f} | "
              f"{agree.count('yes/yes')}/{len(agree)} yes/yes")
    print("\nAll times in ms; window lines is the median line count of the windowed text.")


if __name__ == "__main__":
    main()
