"""Differential fuzzing of the checker against CPython's parsers and gcc/g++ (issue 29).

    python benchmarks/fuzz_differential.py [--language python|cpp|c|all] [--cuts N]
        [--seed S] [--time-budget S] [--files N] [--max-lines N] [--workers N] [--jobs J]
        [--out FILE.json]

For each language: a table per class of probe (`mutate:<edit>`: a token-level edit, whole text
checked; `cut:<k>h`: k random holes, the witness judged and the real middle required to pass;
`propose:<k>h`: one hole closed with tokens from elsewhere, whole text checked; `file`: an
original the checker refuses) with the counts of false YES, false NO, invalid witnesses,
UNKNOWN, texts the compiler could not decide (semantic errors) and cuts whose real middle
re-reads the fixed text. `--out` writes the tables and the first three examples of each
failure (whole texts minimized by lines) as JSON. The probes, the corpora and the oracle
policy (Python: CPython 3.12 judges, 3.11/3.13 disagreements listed apart) are described in
holefill.bench.fuzz. Progress goes to stderr. For 20,000 cuts, `--jobs J` runs J processes
(seeds S..S+J-1, the cuts shared) and `--workers` sets the compiler processes of each.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from holefill.bench.fuzz import LANGUAGES, merge, run_language, stderr_progress, table_of


def one_run(language: str, cuts: int, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    max_lines = args.max_lines or (2000 if language == "c" else 300)
    # every run samples its files with the base seed: the runs share one corpus
    return run_language(language, cuts, seed, corpus_seed=args.seed, files=args.files,
                        max_lines=max_lines,
                        time_budget=args.time_budget, workers=args.workers,
                        progress=stderr_progress).as_json()


def run(language: str, args: argparse.Namespace) -> dict[str, Any]:
    """One run, or --jobs runs with seeds seed, seed+1, ... sharing the cuts, merged."""
    if args.jobs <= 1:
        return one_run(language, args.cuts, args.seed, args)
    shares = [args.cuts // args.jobs + (j < args.cuts % args.jobs) for j in range(args.jobs)]
    with ProcessPoolExecutor(args.jobs) as pool:
        parts = list(pool.map(one_run, [language] * args.jobs, shares,
                              [args.seed + j for j in range(args.jobs)], [args] * args.jobs))
    return merge(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--language", default="all", choices=[*LANGUAGES, "all"])
    ap.add_argument("--cuts", type=int, default=500, help="cuts (and mutations) per language")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-budget", type=float, default=None,
                    help="seconds per language; the run stops after the cut that passes it")
    ap.add_argument("--files", type=int, default=None, help="at most this many corpus files")
    ap.add_argument("--max-lines", type=int, default=None,
                    help="only files of at most this many lines (default: 300 for Python "
                         "and C++, 2000 for C: the repository's C sources are long)")
    ap.add_argument("--workers", type=int, default=2, help="compiler processes at once")
    ap.add_argument("--jobs", type=int, default=1,
                    help="processes, each with its own seed (seed, seed+1, ...) and a share "
                         "of the cuts; their reports are merged")
    ap.add_argument("--out", default=None, help="JSON file for the tables and the examples")
    args = ap.parse_args(argv)
    languages = LANGUAGES if args.language == "all" else (args.language,)
    out = {}
    for language in languages:
        report = run(language, args)
        print(table_of(report), flush=True)
        for cls, kinds in sorted(report["examples"].items()):
            for kind, items in kinds.items():
                for ex in items if kind not in ("unknown", "ts_rejects") else ():
                    print(f"  {cls} {kind}: {json.dumps(ex, ensure_ascii=False)[:400]}")
        out[language] = report
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
