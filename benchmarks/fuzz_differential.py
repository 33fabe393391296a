"""Differential fuzzing of the checker against CPython's parsers and gcc/g++ (issue 29).

    python benchmarks/fuzz_differential.py [--language python|cpp|c|all] [--cuts N]
        [--seed S] [--time-budget S] [--files N] [--max-lines N] [--workers N] [--out FILE.json]

For each language: a table per class of probe (`mutate:<edit>`: a token-level edit, whole text
checked; `cut:<k>h`: k random holes, the witness judged and the real middle required to pass;
`propose:<k>h`: one hole closed with tokens from elsewhere, whole text checked; `file`: an
original the checker refuses) with the counts of false YES, false NO, invalid witnesses,
UNKNOWN, texts the compiler could not decide (semantic errors) and cuts whose real middle
re-reads the fixed text. `--out` writes the tables and the first three examples of each
failure (whole texts minimized by lines) as JSON. The probes, the corpora and the oracle
policy (Python: CPython 3.12 judges, 3.11/3.13 disagreements listed apart) are described in
holefill.bench.fuzz. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys

from holefill.bench.fuzz import LANGUAGES, iter_examples, run_language, stderr_progress


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
    ap.add_argument("--out", default=None, help="JSON file for the tables and the examples")
    args = ap.parse_args(argv)
    languages = LANGUAGES if args.language == "all" else (args.language,)
    out = {}
    for language in languages:
        max_lines = args.max_lines or (2000 if language == "c" else 300)
        report = run_language(language, args.cuts, args.seed, files=args.files,
                              max_lines=max_lines,
                              time_budget=args.time_budget, workers=args.workers,
                              progress=stderr_progress)
        print(report.table(), flush=True)
        for cls, kind, ex in iter_examples(report):
            if kind != "unknown":
                print(f"  {cls} {kind}: {json.dumps(ex, ensure_ascii=False)[:400]}")
        out[language] = report.as_json()
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
