"""Deterministic test and benchmark data: real code with spans cut out.

The cuts follow the papers' protocols: `random_spans` removes k non-overlapping spans of 5-100
characters (the diffusion paper's MRI protocol); the removed texts are one valid filling.
"""

from __future__ import annotations

import gzip
import json
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Cut:
    """A text with holes: `chunks` around the removed `middles` (len(middles) == holes)."""

    name: str
    chunks: tuple[str, ...]
    middles: tuple[str, ...]

    @property
    def original(self) -> str:
        return "".join(c + m for c, m in zip(self.chunks, self.middles + ("",), strict=True))

    def filled(self, fills: list[str]) -> str:
        return "".join(c + f for c, f in zip(self.chunks, list(fills) + [""], strict=True))


def random_spans(
    text: str, k: int, rng: random.Random, min_len: int = 5, max_len: int = 100
) -> list[tuple[int, int]] | None:
    """k sorted, non-overlapping, non-touching spans [a, b) with min_len <= b - a <= max_len,
    or None when the text is too short after a few tries."""
    for _ in range(100):
        spans = []
        for _ in range(k):
            n = rng.randint(min_len, max_len)
            if n >= len(text):
                break
            a = rng.randrange(0, len(text) - n + 1)
            spans.append((a, a + n))
        if len(spans) < k:
            continue
        spans.sort()
        if all(spans[i][1] < spans[i + 1][0] for i in range(k - 1)):
            return spans
    return None


def cut(name: str, text: str, spans: list[tuple[int, int]]) -> Cut:
    chunks, middles, pos = [], [], 0
    for a, b in spans:
        chunks.append(text[pos:a])
        middles.append(text[a:b])
        pos = b
    chunks.append(text[pos:])
    return Cut(name, tuple(chunks), tuple(middles))


def span_cuts(
    texts: list[tuple[str, str]], holes: int, per_text: int, seed: int
) -> Iterator[Cut]:
    """`per_text` cuts with `holes` random spans from each (name, text), seeded."""
    rng = random.Random(f"{seed}:{holes}")
    for name, text in texts:
        for j in range(per_text):
            spans = random_spans(text, holes, rng)
            if spans is not None:
                yield cut(f"{name}#{holes}h{j}", text, spans)


def shared_data_dir() -> Path:
    """`$HOLEFILL_DATA`, else the `shared/data` folder beside the repository."""
    env = os.environ.get("HOLEFILL_DATA")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent.parent / "shared" / "data"
        if cand.is_dir():
            return cand
        cand = parent / "shared" / "data"
        if cand.is_dir():
            return cand
    return Path("shared/data")


def humaneval_x(language: str, root: Path | None = None) -> list[dict]:
    """The 164 HumanEval-X tasks of a language ("cpp", "python", ...) as dicts."""
    path = (root or shared_data_dir()) / "humaneval-x" / f"humaneval_{language}.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def humaneval_cpp_programs(root: Path | None = None) -> list[tuple[str, str]]:
    """(task_id, declaration + canonical_solution) for the C++ tasks."""
    return [
        (t["task_id"], t["declaration"] + t["canonical_solution"])
        for t in humaneval_x("cpp", root)
    ]


def json_documents(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """n pseudo-random JSON documents (nested, escapes, all number forms), pretty-printed."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "x", "na\u00efve", "tab\there", 'q"uote',
             "back\\slash", "uni\u2603", "line\nbreak", ""]

    def value(depth: int) -> object:
        r = rng.random()
        if depth > 3 or r < 0.35:
            kind = rng.randrange(6)
            if kind == 0:
                return rng.choice(words)
            if kind == 1:
                return rng.randint(-10**6, 10**6)
            if kind == 2:
                return round(rng.uniform(-1e3, 1e3), rng.randint(0, 6))
            if kind == 3:
                return rng.choice([True, False, None])
            if kind == 4:
                return float(f"{rng.randint(1, 9)}e{rng.randint(-20, 20)}")
            return rng.choice(words) * rng.randint(1, 3)
        if r < 0.65:
            return [value(depth + 1) for _ in range(rng.randint(0, 5))]
        return {rng.choice(words) + str(i): value(depth + 1) for i in range(rng.randint(0, 5))}

    docs = []
    for i in range(n):
        doc = {"id": i, "items": [value(1) for _ in range(rng.randint(2, 5))]}
        indent = rng.choice([None, 2, 4])
        docs.append((f"doc{i}", json.dumps(doc, indent=indent, ensure_ascii=rng.random() < 0.5)))
    return docs
