"""Real text through the real decoding loop: does a user's request ever refuse the code that was
there? (issue 29)

    python benchmarks/replay_loop.py [--corpus DIR] [--language python|cpp|c] [--cuts N]
                                     [--seed S] [--files N] [--out FILE.json]

Each cut removes 1-3 spans of a real file; half of the cuts put one hole at a clause line
(Python: `else`, `elif`, `except`, `case`, `finally`; C/C++: `else`, `case`, `default`,
`catch`): the cursor before the keyword, the keyword's line from its indentation or from
column 0 (to the line's end or into it), with 0-2 random holes elsewhere. `Completer.fill`
then runs on the cut with a `ReplayBackend` (holefill.decode.replay): the bundled model's
tokenizer and template, proposing the real middle of each hole token by token, then its end.
Nothing is bypassed: segments, windows, the incremental engine, the stops and the fallback are
those of a user's request (only the model's early-stop policies that cut a filling short where
it may end, the repetition guard, the right-closer stop and the blank-line stop, are off, so
that the whole real middle is offered).

Every refusal of the real text is reported with its cut: a token or the end of a middle the
loop refused, or the whole request refused (NotCompletable). Cuts whose real middle re-reads
the fixed text around it (`Checker.keeps_reading` is False: then the real text is not a
filling that keeps the document's reading, and refusing it is right) are counted apart.

Default corpora: the standard library of the running interpreter for Python (the fuzzer's
seeded sample), HumanEval-X's C++ solutions for cpp, the repository's C sources for c.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from holefill import Checker
from holefill.bench.fuzz import corpus, excerpt
from holefill.datasets import cut, random_spans
from holefill.decode.completer import Completer
from holefill.decode.loop import NotCompletable
from holefill.decode.replay import ReplayBackend

CLAUSES = {"python": r"(?:else|elif|except|case|finally)\b",
           "cpp": r"(?:else|case|default|catch)\b", "c": r"(?:else|case|default)\b"}
EXTENSIONS = {"python": (".py",), "cpp": (".cpp", ".cc", ".hpp", ".h"), "c": (".c", ".h")}
# the loop's stops that end a model's filling early where it may end; off here so that the
# whole real middle is offered (see the docstring)
SETTINGS: dict[str, Any] = {"repetition_guard": False, "stop_at_right_closer": False,
                            "stop_at_blank_line": False}


def load(language: str, directory: str | None, seed: int, files: int | None,
         ) -> list[tuple[str, str]]:
    if directory is None:
        return corpus(language, seed, files, 300)
    root = Path(directory)
    paths = sorted(p for p in root.rglob("*") if p.suffix in EXTENSIONS[language])
    out = []
    for p in paths[:files]:
        try:
            out.append((str(p.relative_to(root)), p.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
    return out


def clause_span(language: str, text: str, rng: random.Random) -> tuple[int, int] | None:
    """A hole at a clause line: before its keyword (nothing removed), or its line from the
    indentation or from column 0 up to the line's end or into it."""
    pattern = re.compile(rf"^([ \t]*){CLAUSES[language]}", re.MULTILINE)
    hits = list(pattern.finditer(text))
    if not hits:
        return None
    m = rng.choice(hits)
    line_end = text.find("\n", m.start())
    line_end = len(text) if line_end < 0 else line_end
    start = m.end(1) if rng.random() < 0.6 else m.start()
    shape = rng.randrange(3)
    if shape == 0:
        return (m.end(1), m.end(1))
    if shape == 1:
        return (start, line_end)
    return (start, rng.randint(start + 1, max(start + 1, line_end)))


def make_cut(language: str, name: str, text: str, rng: random.Random,
             ) -> tuple[str, Any] | None:
    """(kind, cut): "clause" (one hole at a clause line, 0-2 others) or "random" (1-3)."""
    if rng.random() < 0.5:
        first = clause_span(language, text, rng)
        if first is not None:
            spans = [first]
            for _ in range(rng.randint(0, 2)):
                more = random_spans(text, 1, rng, 1, 60)
                if more and all(more[0][1] < a or more[0][0] > b for a, b in spans):
                    spans.append(more[0])
            return "clause", cut(name, text, sorted(spans))
    spans_ = random_spans(text, rng.randint(1, 3), rng, 1, 80)
    return ("random", cut(name, text, spans_)) if spans_ else None


def replay_one(completer: Completer, backend: ReplayBackend, language: str,
               c: Any) -> dict[str, Any] | None:
    """The refusals of one cut (None when the loop took the whole real text)."""
    backend.replay(c.middles)
    longest = max(len(backend.encode(m)) for m in c.middles)
    try:
        res = completer.fill(list(c.chunks), language, max_new_tokens=longest + 8, **SETTINGS)
    except NotCompletable as exc:
        return {"refused": "request", "message": str(exc)[:200]}
    if not backend.refusals:
        return None
    return {"refused": "text", "fills": res.fills,
            "refusals": [vars(r) for r in backend.refusals]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=None, help="a folder of files (default: see above)")
    ap.add_argument("--language", default="python", choices=sorted(CLAUSES))
    ap.add_argument("--cuts", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--files", type=int, default=None)
    ap.add_argument("--out", default=None, help="JSON file with every refusal")
    args = ap.parse_args(argv)
    language = args.language
    texts = load(language, args.corpus, args.seed, args.files)
    checker = Checker.for_language(language)
    texts = [(n, t) for n, t in texts if checker.completable([t]).value == "yes"]
    backend = ReplayBackend()
    completer = Completer(backend=backend)
    rng = random.Random(f"replay:{language}:{args.seed}")
    counts: Counter[str] = Counter()
    found: list[dict[str, Any]] = []
    t0 = last = time.perf_counter()
    while counts["cuts"] < args.cuts:
        name, text = rng.choice(texts)
        made = make_cut(language, name, text, rng)
        if made is None:
            continue
        kind, c = made
        keeps = checker.keeps_place(c.chunks, c.middles)
        group = f"{kind}{'' if keeps else ' (re-reads)'}"
        counts["cuts"] += 1
        counts[group] += 1
        out = replay_one(completer, backend, language, c)
        if out is not None:
            counts[f"{group}: refused {out['refused']}"] += 1
            found.append({"file": name, "kind": kind, "keeps_reading": keeps,
                          "spans": _spans(c),
                          "middles": list(c.middles),
                          "excerpt": excerpt(text, _spans(c)), **out})
        if time.perf_counter() - last > 10:
            last = time.perf_counter()
            print(f"{language}: {counts['cuts']}/{args.cuts} cuts, {last - t0:.0f} s, "
                  f"{len(found)} refused", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - t0
    print(f"{language}: {counts['cuts']} cuts over {len(texts)} files in {seconds:.0f} s")
    for key in sorted(counts):
        if key != "cuts":
            print(f"  {key:<40}{counts[key]:>6}")
    for f in found:
        if f["keeps_reading"]:
            print(json.dumps(f, ensure_ascii=False)[:600])
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"language": language, "seed": args.seed, "counts": dict(counts),
                       "seconds": round(seconds, 1), "refusals": found}, fh, indent=1,
                      ensure_ascii=False)
    return 0


def _spans(c: Any) -> list[tuple[int, int]]:
    out, pos = [], 0
    for chunk, middle in zip(c.chunks, c.middles, strict=False):
        pos += len(chunk)
        out.append((pos, pos + len(middle)))
        pos += len(middle)
    return out


if __name__ == "__main__":
    sys.exit(main())
