"""Checks in the files people have: one large class, several holes in it (issue 36).

For named real files whose bulk is one class, seeded cuts of 1 and 3 holes (8-30 characters
each, inside the class, kept when the removed text keeps the reading around it) are replayed
token by token as the decoder checks them (holefill.decode.completer.request_checks, the
model's tokenizer splitting the removed text), side by side in one run:

- `blocks`: the default, with cut points inside blocks and engines that read the window only
  (holefill.check.segments: indented cuts; holefill.check.incremental);
- `top`: the same checks with cuts at the top level only and engines that read from the
  top-level statement (`DecodeSettings(in_blocks=False)`): the baseline, as before issue 36.

Per file, holes and variant it prints the preparation of the first request on the file
(`first`: nothing parsed before), of a request at a new place in it (`new place`: other
requests parsed the rest), of the request after the user typed the replayed text (`warm`),
and the per-token check time (median, p99, max), with the verdicts (every state is
completable lexically; a "no" the exact whole check gives too is counted as "(exact)": the
structure rule refuses a replayed state that breaks a line the user's text goes on, by
design; any other "no" is a false NO). Module caches are emptied between variants. With
`--e2e N`, N one-hole fills per file with the bundled model, constrained and unconstrained
(greedy, 24 new tokens): the median end-to-end times and their ratio.

Files: Python from the running interpreter's standard library (`test/test_descr.py` was used
while building this; `_pydecimal.py`, `test/test_buffer.py` and `test/test_patma.py` were
not looked at: held out), skipped when absent; C++: the bundled HumanEval-X solutions as the
member functions of one 3,700-line struct (real code, one class).

    python benchmarks/large_classes.py [--cuts 6] [--steps 12] [--e2e 3] [--only python]
"""

from __future__ import annotations

import argparse
import ast
import random
import statistics
import sysconfig
import time
from collections import Counter
from pathlib import Path

import torch

from holefill import Checker
from holefill.bench.scaling import token_splitter
from holefill.datasets import Cut, cut, random_spans

PYTHON_FILES = ["test/test_descr.py", "_pydecimal.py", "test/test_buffer.py",
                "test/test_patma.py"]
TOKENIZER = Path(__file__).resolve().parents[1] / "server/holefill/models/default/tokenizer.json"


def cpp_class() -> str:
    """The bundled HumanEval-X C++ solutions as the members of one struct, twice over."""
    from holefill.datasets import TREE_SITTER_REJECTS_CPP, humaneval_cpp_programs

    heads: dict[str, None] = {}
    bodies = []
    for name, text in humaneval_cpp_programs():
        if name in TREE_SITTER_REJECTS_CPP:
            continue
        keep = []
        for line in text.splitlines(keepends=True):
            if line.lstrip().startswith(("#", "using namespace")):
                heads.setdefault(line.rstrip("\n") + "\n", None)
            else:
                keep.append(line)
        bodies.append("".join(keep).rstrip("\n") + "\n")
    body = "".join(bodies)
    return "".join(heads) + "struct Solutions {\n" + body + body + "};\n"


def files(only: str | None) -> list[tuple[str, str, str]]:
    """(language, name, text) of every file measured."""
    out = []
    root = Path(sysconfig.get_paths()["stdlib"])
    if only in (None, "python"):
        for name in PYTHON_FILES:
            path = root / name
            if path.is_file():
                out.append(("python", name, path.read_text(encoding="utf-8")))
    if only in (None, "cpp"):
        out.append(("cpp", "HumanEval-X as one struct", cpp_class()))
    return out


def class_span(language: str, text: str) -> tuple[int, int]:
    """The largest top-level class (Python) or the struct (C++), as character offsets."""
    if language == "cpp":
        return text.index("struct Solutions {"), len(text)
    tree = ast.parse(text)
    lines = [0]
    for line in text.splitlines(keepends=True):
        lines.append(lines[-1] + len(line))
    node = max((n for n in tree.body if isinstance(n, ast.ClassDef)),
               key=lambda n: (n.end_lineno or 0) - n.lineno)
    return lines[node.lineno - 1], lines[node.end_lineno or node.lineno]


def class_cuts(checker: Checker, text: str, holes: int, n: int, seed: int) -> list[Cut]:
    lo, hi = class_span(checker.language, text)
    rng = random.Random(f"large-classes:{seed}:{holes}:{len(text)}")
    out: list[Cut] = []
    for _ in range(200 * n):
        if len(out) == n:
            break
        spans = random_spans(text[lo:hi], holes, rng, 8, 30)
        if spans is None:
            continue
        c = cut(f"c{len(out)}", text, [(a + lo, b + lo) for a, b in spans])
        if checker.keeps_place(c.chunks, c.middles):
            out.append(c)
    return out


def clear_caches() -> None:
    """Module caches of parses, windows and readings: each variant starts cold."""
    from holefill.check import window, window_brace

    window.forget()
    window_brace.forget()
    window_brace._accepts.cache_clear()  # the grammar's answers on pieces: cold too


def measure(checker: Checker, cuts: list[Cut], in_blocks: bool, steps: int) -> dict:
    from holefill.check.structure import Structure
    from holefill.decode.completer import EngineCache, request_checks
    from holefill.decode.loop import DecodeSettings

    settings = DecodeSettings(in_blocks=in_blocks)
    split = token_splitter(TOKENIZER)
    prep: list[float] = []
    warm: list[float] = []
    tokens: list[float] = []
    verdicts: Counter[str] = Counter()

    def structure(chunks: list[str]) -> Structure:
        return checker.structure(list(chunks))

    def prepare(chunks: list[str], cache: EngineCache) -> list:
        parts = request_checks(checker, chunks, settings, engine_for=cache.engine_for,
                               memo=cache.verdicts)
        for seg, constraint in parts:
            got = constraint.verdict(list(seg.chunks), list(seg.sites),
                                     structure=structure(list(seg.chunks)))
            if got.value == "no" and checker.check(list(seg.chunks)).verdict.value == "no":
                # the exact whole check agrees: the structure rule refuses the state (a
                # replayed cut that broke a line the text after it goes on), by design
                verdicts["first check no (exact)"] += 1
            else:
                verdicts["first check " + got.value] += 1
        return parts

    for c in cuts:
        cache = EngineCache()
        t0 = time.perf_counter()
        parts = prepare(list(c.chunks), cache)
        prep.append((time.perf_counter() - t0) * 1e3)
        seg, constraint = next(p for p in parts if 0 in p[0].holes)
        rules = structure(list(seg.chunks))
        shaped = rules.with_starts([len(seg.chunks[0])]) if rules.rules else rules
        typed = ""
        for end in split(c.middles[0])[:steps]:
            state = [seg.chunks[0] + c.middles[0][:end], *seg.chunks[1:]]
            t0 = time.perf_counter()
            got = constraint.verdict(state, list(seg.sites), True, (0, 1), shaped)
            tokens.append((time.perf_counter() - t0) * 1e3)
            exact = got.value == "no" and checker.check(
                state, structure=shaped).verdict.value == "no"
            verdicts[got.value + (" (exact)" if exact else "")] += 1
            typed = c.middles[0][:end]
        t0 = time.perf_counter()
        prepare([c.chunks[0] + typed, *c.chunks[1:]], cache)
        warm.append((time.perf_counter() - t0) * 1e3)
    tokens.sort()
    return {"first": prep[0], "new place": statistics.median(prep[1:] or prep),
            "warm": statistics.median(warm), "token median": statistics.median(tokens),
            "token p99": tokens[min(len(tokens) - 1, int(0.99 * len(tokens)))],
            "token max": tokens[-1], "verdicts": dict(verdicts), "tokens": len(tokens)}


def e2e(language: str, text: str, n: int) -> tuple[float, float]:
    """Median seconds of a constrained and an unconstrained one-hole fill (bundled model)."""
    from holefill.decode.completer import Completer

    checker = Checker.for_language(language)
    completer = Completer(model=None, device="cpu", threads=1)
    con: list[float] = []
    unc: list[float] = []
    for c in class_cuts(checker, text, 1, n, seed=7):
        for constrained, out in ((False, unc), (True, con)):
            t0 = time.perf_counter()
            completer.fill(list(c.chunks), language, constrained=constrained,
                           max_new_tokens=24)
            out.append(time.perf_counter() - t0)
    return statistics.median(con), statistics.median(unc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cuts", type=int, default=6)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--e2e", type=int, default=0)
    ap.add_argument("--only", choices=["python", "cpp"])
    args = ap.parse_args()
    torch.set_num_threads(1)
    head = (f"{'file':<28} {'lines':>6} {'holes':>5} {'variant':<7} {'first':>8} "
            f"{'new place':>9} {'warm':>7} {'tok med':>8} {'tok p99':>8} {'tok max':>8}  "
            "verdicts")
    print(head)
    for language, name, text in files(args.only):
        checker = Checker.for_language(language)
        for holes in (1, 3):
            cuts = class_cuts(checker, text, holes, args.cuts, seed=1)
            rows = {}
            for variant, in_blocks in (("top", False), ("blocks", True)):
                clear_caches()
                rows[variant] = row = measure(checker, cuts, in_blocks, args.steps)
                print(f"{name[:28]:<28} {text.count(chr(10)):>6} {holes:>5} {variant:<7} "
                      f"{row['first']:>6.0f}ms {row['new place']:>7.0f}ms "
                      f"{row['warm']:>5.0f}ms {row['token median']:>6.2f}ms "
                      f"{row['token p99']:>6.1f}ms {row['token max']:>6.0f}ms  "
                      f"{row['verdicts']}", flush=True)
            top, blocks = rows["top"], rows["blocks"]
            print(f"{'':<28} {'':>6} {'':>5} {'ratio':<7} "
                  + " ".join(f"{top[k] / max(blocks[k], 1e-6):>7.1f}x" for k in
                             ("first", "new place", "warm", "token median", "token p99")))
        if args.e2e:
            con, unc = e2e(language, text, args.e2e)
            print(f"{name[:28]:<28} end to end, bundled model: constrained {con:.2f} s, "
                  f"unconstrained {unc:.2f} s ({con / unc:.2f}x)", flush=True)


if __name__ == "__main__":
    main()
