"""Deterministic test and benchmark data: real code with spans cut out.

The cuts follow the papers' protocols: `random_spans` removes k non-overlapping spans of 5-100
characters (the diffusion paper's MRI protocol); the removed texts are one valid filling.

The data sets ship inside the package (`holefill/data/`, with their SOURCE.md and LICENSE):
HumanEval-X (six languages) and HumanEval-Infilling (four splits). Tests, benchmarks and
`holefill bench` read them from there, so a clone or a wheel is all they need.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from holefill.errors import HolefillError


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


def random_holes(text: str, holes: int, rng: random.Random, longest: int = 40) -> list[str]:
    """The chunks of `text` around `holes` holes of 0-`longest` removed characters each, at
    random places (holes may touch, and the text may begin or end with one)."""
    at = sorted(rng.sample(range(len(text)), holes))
    chunks, prev = [], 0
    for a in at:
        a = max(a, prev)
        chunks.append(text[prev:a])
        prev = min(len(text), a + rng.randint(0, longest))
    chunks.append(text[prev:])
    return chunks


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


# HOLEFILL_DATA names another data folder (same layout), e.g. a newer copy of the sets.
DATA_ENV = "HOLEFILL_DATA"
# The splits of HumanEval-Infilling and their file names (SOURCE.md beside them).
INFILLING_SPLITS = {
    "single-line": "HumanEval-SingleLineInfilling.jsonl.gz",
    "multi-line": "HumanEval-MultiLineInfilling.jsonl.gz",
    "random-span": "HumanEval-RandomSpanInfilling.jsonl.gz",
    "random-span-light": "HumanEval-RandomSpanInfillingLight.jsonl.gz",
}


def data_dir() -> Path:
    """The folder holding `humaneval-x/` and `humaneval-infilling/`: `$HOLEFILL_DATA` when
    set, else the copy shipped inside the package (`holefill/data`, in the wheel too), so a
    clone or an install needs nothing outside itself."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    return Path(str(resources.files("holefill") / "data"))


def _read_jsonl_gz(path: Path) -> list[dict]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError as exc:
        where = f"${DATA_ENV}={os.environ[DATA_ENV]}" if os.environ.get(DATA_ENV) else \
            "the holefill package"
        raise HolefillError(f"data file {path} is missing (data read from {where})") from exc


def humaneval_x(language: str, root: Path | None = None) -> list[dict]:
    """The 164 HumanEval-X tasks of a language ("cpp", "python", "js", "java", "go",
    "rust") as dicts."""
    return _read_jsonl_gz((root or data_dir()) / "humaneval-x" / f"humaneval_{language}.jsonl.gz")


def humaneval_infilling(split: str, root: Path | None = None) -> list[dict]:
    """The tasks of a HumanEval-Infilling split ("single-line", "multi-line", "random-span",
    "random-span-light") as dicts with prompt, suffix, canonical_solution, test."""
    if split not in INFILLING_SPLITS:
        raise ValueError(f"unknown split {split!r}; known: {', '.join(INFILLING_SPLITS)}")
    return _read_jsonl_gz((root or data_dir()) / "humaneval-infilling" / INFILLING_SPLITS[split])


# Tasks whose `declaration + canonical_solution` is not a C++ program (g++ rejects it too).
BROKEN_CPP_TASKS = {"CPP/38": "the solution repeats part of the declaration; one `}` is missing"}
# tree-sitter-cpp rejects these canonical solutions itself (boost::any template syntax), so it
# cannot judge fillings of them (tests/check/test_cpp_oracle.py pins the set down).
TREE_SITTER_REJECTS_CPP = frozenset({"CPP/22", "CPP/137"})


def humaneval_cpp_programs(
    root: Path | None = None, *, include_broken: bool = False
) -> list[tuple[str, str]]:
    """(task_id, declaration + canonical_solution) for the C++ tasks, without the broken ones
    unless asked."""
    return [
        (t["task_id"], t["declaration"] + t["canonical_solution"])
        for t in humaneval_x("cpp", root)
        if include_broken or t["task_id"] not in BROKEN_CPP_TASKS
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


def stdlib_files(max_lines: int | None = None, *, parses: bool = True) -> list[Path]:
    """The .py files of the running interpreter's standard library (not site-packages) that
    `ast.parse` accepts, sorted; optionally only those with at most `max_lines` lines.
    `parses=False`: every file that reads as UTF-8, whether it parses or not (for a judge of
    validity other than `ast.parse`: a test file with a syntax error on purpose stays)."""
    return [p for p, n in _stdlib_files(parses) if max_lines is None or n <= max_lines]


@functools.lru_cache(maxsize=2)
def _stdlib_files(parses: bool) -> tuple[tuple[Path, int], ...]:
    # parsing 1,800 files takes seconds: once per process, whatever the size asked for
    import ast
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
            if parses:
                ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
            continue
        out.append((path, text.count("\n")))
    return tuple(out)


def stdlib_modules_text(lines: int) -> str:
    """A large Python file: whole top-level standard-library modules that `ast.parse`
    accepts, in name order, concatenated until the text has at least `lines` lines (every
    module ends with a line break)."""
    import ast
    import glob

    out, n = [], 0
    for path in sorted(glob.glob(os.path.join(os.path.dirname(ast.__file__), "*.py"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        out.append(text if text.endswith("\n") else text + "\n")
        n += out[-1].count("\n")
        if n >= lines:
            break
    return "".join(out)


def boundary_cut(name: str, text: str, rng: random.Random, max_lines: int = 8) -> Cut | None:
    """The complete-as-you-type shape: from inside a line (after its indentation) to the end
    of a later line at the same indentation (the line break stays)."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.strip()]
    if not starts:
        return None
    for _ in range(20):
        i = rng.choice(starts)
        line = lines[i]
        ind = len(line) - len(line.lstrip())
        same = [j for j in range(i, min(len(lines), i + max_lines))
                if lines[j].strip() and len(lines[j]) - len(lines[j].lstrip()) == ind]
        j = rng.choice(same)
        col = rng.randint(ind, max(ind, len(line) - 1))
        a = sum(len(x) + 1 for x in lines[:i]) + col
        b = sum(len(x) + 1 for x in lines[:j]) + len(lines[j])
        if b > a:
            return cut(name, text, [(a, b)])
    return None


def line_cut(name: str, text: str, rng: random.Random) -> Cut | None:
    """One whole line removed (its text, not its line break)."""
    lines = text.split("\n")
    cands = [i for i, line in enumerate(lines) if line.strip()]
    if not cands:
        return None
    i = rng.choice(cands)
    a = sum(len(x) + 1 for x in lines[:i])
    return cut(name, text, [(a, a + len(lines[i]))])


def cursor_cut(name: str, text: str, rng: random.Random) -> Cut | None:
    """A cursor in the middle of a line of code (nothing removed): after the indentation and
    before the line's last character, as when a user stops typing mid-line."""
    lines = text.split("\n")
    cands = [i for i, line in enumerate(lines)
             if len(line.strip()) > 1 and not line.lstrip().startswith("#")]
    if not cands:
        return None
    i = rng.choice(cands)
    line = lines[i]
    ind = len(line) - len(line.lstrip())
    a = sum(len(x) + 1 for x in lines[:i]) + rng.randint(ind + 1, len(line.rstrip()) - 1)
    return cut(name, text, [(a, a)])


def python_cuts(kind: str, n: int, seed: int, holes: int = 1, max_lines: int = 400) -> list[Cut]:
    """n deterministic cuts of standard-library files with `holes` holes each: kind is "span"
    (1-100 characters anywhere), "boundary", "line" or "cursor" (several of those in one
    file, apart)."""
    files = stdlib_files(max_lines)
    rng = random.Random(f"{kind}:{seed}:{holes}")
    single = {"boundary": boundary_cut, "cursor": cursor_cut}.get(kind, line_cut)
    out: list[Cut] = []
    while len(out) < n:
        path = rng.choice(files)
        text = path.read_text(encoding="utf-8")
        name = f"{path.name}#{kind}{len(out)}"
        c: Cut | None
        if kind == "span":
            spans = random_spans(text, holes, rng, 1, 100)
            c = cut(name, text, spans) if spans else None
        elif holes == 1:
            c = single(name, text, rng)
        else:
            spans = _apart(text, holes, rng, single)
            c = cut(name, text, spans) if spans else None
        if c is not None:
            out.append(c)
    return out


def _apart(text: str, k: int, rng: random.Random,
           single: Callable[[str, str, random.Random], Cut | None],
           ) -> list[tuple[int, int]] | None:
    """k non-touching spans, each one cut of a one-hole shape; None after a few tries."""
    for _ in range(20):
        spans: list[tuple[int, int]] = []
        for _ in range(k):
            c = single("", text, rng)
            if c is None:
                return None
            a = len(c.chunks[0])
            spans.append((a, a + len(c.middles[0])))
        spans.sort()
        if all(spans[i][1] < spans[i + 1][0] for i in range(k - 1)):
            return spans
    return None
