"""What the structure rule (holefill.check.structure) costs and refuses, side by side.

For seeded cuts of real code (the running interpreter's standard library for Python; the
bundled HumanEval-X C++ solutions for C++), one run prints:

- the share of cuts whose real middle itself changes the structure (re-pairs a bracket of
  the text around it, or breaks a line the user's code goes on): refused by design;
- the median and p90 time of the classic whole check, with the rule and lexical-only
  (`structured=False`), and their ratio, measured on the same cuts in the same run;
- verdict changes between the two (YES with the rule where lexical-only is YES, by cut).

    python benchmarks/structure_cost.py [--n 60] [--seed 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from holefill import Checker
from holefill.datasets import python_cuts


def _cpp_cuts(n: int, seed: int) -> list:
    import random

    from holefill.datasets import humaneval_cpp_programs, span_cuts

    programs = list(humaneval_cpp_programs())
    random.Random(f"structure:{seed}").shuffle(programs)
    return list(span_cuts(programs[:n], 1, 1, seed=seed))


def _repairs(chk: Checker, c: object) -> bool:
    """Whether the real middle re-pairs a bracket (the line rule left out)."""
    import dataclasses

    from holefill.check.structure import violation

    st = chk.structure(c.chunks)  # type: ignore[attr-defined]
    st = dataclasses.replace(st, rules=tuple(dataclasses.replace(r, one_line=False)
                                             for r in st.rules))
    return violation(chk.lexer.reference, chk.brackets, c.chunks,  # type: ignore[attr-defined]
                     c.middles, st) is not None  # type: ignore[attr-defined]


def _time(chk: Checker, chunks: list[str], structured: bool) -> tuple[float, str]:
    t0 = time.perf_counter()
    verdict = chk.check(chunks, structured=structured).verdict
    return (time.perf_counter() - t0) * 1e3, verdict.value


def run(language: str, cuts: list, out: list[str]) -> None:
    chk = Checker.for_language(language)
    changed = sum(chk.keeps_reading(c.chunks, c.middles)
                  and chk.structure_violation(c.chunks, c.middles) is not None for c in cuts)
    reading = sum(chk.keeps_reading(c.chunks, c.middles) for c in cuts)
    paired = sum(chk.keeps_reading(c.chunks, c.middles) and _repairs(chk, c) for c in cuts)
    with_rule, without, differ = [], [], 0
    for c in cuts:
        _time(chk, c.chunks, True)  # warm both (grammar, readings)
        t1, v1 = _time(chk, c.chunks, True)
        t0, v0 = _time(chk, c.chunks, False)
        with_rule.append(t1)
        without.append(t0)
        differ += v1 != v0
    q = statistics.quantiles
    out.append(f"| {language} | {len(cuts)} | {changed}/{reading} "
               f"({100 * changed / max(1, reading):.1f}%), brackets alone {paired} "
               f"({100 * paired / max(1, reading):.1f}%) | "
               f"{statistics.median(without):.2f} / {q(without, n=10)[8]:.2f} | "
               f"{statistics.median(with_rule):.2f} / {q(with_rule, n=10)[8]:.2f} | "
               f"{statistics.median(with_rule) / statistics.median(without):.2f}x | {differ} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = ["| language | cuts | middles that change the structure (of those keeping the "
           "reading) | lexical-only ms median / p90 | with the rule ms median / p90 | ratio "
           "| verdicts that differ |", "|---|---|---|---|---|---|---|"]
    run("python", python_cuts("span", args.n, seed=args.seed, holes=1, max_lines=150), out)
    try:
        cpp = _cpp_cuts(args.n, args.seed)
    except Exception as exc:  # noqa: BLE001 - the table says why a row is missing
        out.append(f"| cpp | - | ({exc}) | | | | |")
    else:
        run("cpp", cpp, out)
    print("\n".join(out))


if __name__ == "__main__":
    main()
