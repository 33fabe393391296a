"""C++ and JSON checks against file size: the whole file, its window
(holefill.check.window_brace), and the incremental engine started where the window starts.

Files of about 100, 1,000, 5,000 and 10,000 lines: HumanEval-X C++ programs one after
another (`plain`), or each in its own namespace with the directives at the top (`namespaced`,
every copy under its own name, so no two pieces are the same text), and arrays of the
pretty-printed documents of holefill.datasets.json_documents. In each file a span of 5-60
characters is removed near the middle (cuts whose removed text keeps the reading of the text
around it); the removed text is replayed token by token (the bundled model's tokenizer), as
decoding appends tokens when the first candidate is accepted. Every such state is completable.

Columns (times in ms): `find` is find_window once per request, cold (our grammar's per-piece
cache empty) and warm (a later request on the same file); `whole` and `window` are one
classic check (lexing with holes + native core) of the whole file and of the window, at the
first token of each cut; `engine` is the per-token check of the incremental engine after the
first one, `first` that first check (its left parse and right context); `chars` is the
median length of the windowed text; `fb` counts the checks the engine left to the classic
check. Medians and p90/p99 are over all cuts of a size.

    python benchmarks/bench_window_brace.py [--cuts N] [--sizes 100,1000] [--languages cpp]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from holefill import Checker, Verdict
from holefill.bench.scaling import cpp_file
from holefill.check import window_brace
from holefill.check.incremental import IncrementalCheck
from holefill.check.window import find_window, left_start
from holefill.datasets import Cut, cut, json_documents


def json_file(target_lines: int, seed: int) -> str:
    docs = [d for _, d in json_documents(400, seed=seed) if "\n" in d]
    parts, lines = [], 0
    while lines < target_lines:
        parts.append(docs[len(parts) % len(docs)])
        lines += parts[-1].count("\n") + 1
    return "[\n" + ",\n".join(parts) + "\n]\n"


def token_splitter() -> Callable[[str], list[int]]:
    try:
        import tokenizers

        from holefill.models import default_model_path

        tok = tokenizers.Tokenizer.from_file(str(default_model_path() / "tokenizer.json"))
        return lambda text: sorted({0, *(e for _, e in tok.encode(
            text, add_special_tokens=False).offsets)})
    except Exception:  # no tokenizer: three characters per token
        return lambda text: list(range(0, len(text), 3)) + [len(text)]


def cuts_of(language: str, text: str, n: int, seed: int) -> list[Cut]:
    chk = Checker.for_language(language)
    rng, out = random.Random(seed), []
    while len(out) < n:
        a = rng.randrange(len(text) // 3, 2 * len(text) // 3)
        c = cut(f"{language}@{a}", text, [(a, a + rng.randint(5, 60))])
        if chk.keeps_place(c.chunks, c.middles):
            out.append(c)
    return out


def q(values: list[float], p: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100)[p - 1]


def measure(language: str, text: str, cuts: list[Cut], split: Callable,
            whole_checks: int) -> dict[str, list[float]]:
    chk = Checker.for_language(language)
    out: dict[str, list[float]] = {k: [] for k in ("cold", "warm", "whole", "window",
                                                   "engine", "first", "fallback", "chars")}
    for i, c in enumerate(cuts):
        chunks = list(c.chunks)
        window_brace._accepts.cache_clear()
        window_brace.forget()
        t0 = time.perf_counter()
        find_window(language, chunks)
        out["cold"].append(1e3 * (time.perf_counter() - t0))
        window_brace.forget()
        t0 = time.perf_counter()
        w = find_window(language, chunks)
        out["warm"].append(1e3 * (time.perf_counter() - t0))
        windowed = w.apply(chunks)
        out["chars"].append(sum(map(len, windowed)))
        t0 = time.perf_counter()
        assert chk.check(windowed).verdict is Verdict.YES, c.name
        out["window"].append(1e3 * (time.perf_counter() - t0))
        if i < whole_checks:
            t0 = time.perf_counter()
            chk.check(chunks)
            out["whole"].append(1e3 * (time.perf_counter() - t0))
        engine = IncrementalCheck(chk, left_start(language, chunks[0]), w.tail, w.suffix, None)
        sites = list(chk.anchors(windowed).sites)
        for k, end in enumerate(split(c.middles[0])):
            state = [chunks[0] + c.middles[0][:end], *chunks[1:]]
            t0 = time.perf_counter()
            got = engine.verdict(state, sites)
            ms = 1e3 * (time.perf_counter() - t0)
            assert got is not Verdict.NO, (c.name, end)
            if got is Verdict.YES:
                out["first" if k == 0 else "engine"].append(ms)
            else:  # the classic check answers (the engine's budget, or a case it leaves)
                out["fallback"].append(ms)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuts", type=int, default=8, help="cuts per file")
    ap.add_argument("--sizes", default="100,1000,5000,10000", help="target line counts")
    ap.add_argument("--languages", default="cpp,cpp-namespaced,json")
    ap.add_argument("--whole", type=int, default=3,
                    help="whole-file checks per file (seconds each at 10,000 lines)")
    args = ap.parse_args()
    split = token_splitter()
    print(f"{'file':<15} {'lines':>6} | {'find cold':>9} {'warm':>6} | {'whole':>7} | "
          f"{'window':>6} {'p90':>6} | {'engine':>6} {'p90':>6} {'p99':>6} | {'first':>6} | "
          f"{'chars':>6} {'fb':>3}")
    for kind in args.languages.split(","):
        language = "json" if kind == "json" else "cpp"
        for size in (int(x) for x in args.sizes.split(",")):
            text = json_file(size, seed=1) if language == "json" else \
                cpp_file(size, seed=1, namespaced=kind.endswith("namespaced"))
            got = measure(language, text, cuts_of(language, text, args.cuts, seed=size), split,
                          args.whole)
            med = {k: statistics.median(v) if v else float("nan") for k, v in got.items()}
            print(f"{kind:<15} {text.count(chr(10)):>6} | {med['cold']:9.0f} "
                  f"{med['warm']:6.0f} | {med['whole']:7.0f} | {med['window']:6.1f} "
                  f"{q(got['window'], 90):6.1f} | {med['engine']:6.2f} "
                  f"{q(got['engine'], 90):6.2f} {q(got['engine'], 99):6.2f} | "
                  f"{med['first']:6.1f} | {med['chars']:6.0f} {len(got['fallback']):3d}")
    print("\nTimes in ms (medians unless p90/p99); whole: the classic check of the whole "
          "file, window: of the window; engine: per token after the first check.")


if __name__ == "__main__":
    main()
