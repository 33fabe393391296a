"""The benchmark's samples: real code with holes, deterministic for a seed.

- Python: the running interpreter's standard library in the quotient paper's shapes: random
  spans (1-100 characters), boundary cuts (from inside a line to the end of a later line) and
  whole-line removals, each with 1, 2 and 3 holes.
- C++: HumanEval-X, `declaration + canonical_solution` with 1, 2, 3 random spans of 5-100
  characters removed (the diffusion paper's MRI protocol); the task's `test` checks function.
- JSON: generated documents with 1, 2, 3 random spans removed.
- Python, C++ and JSON cuts are kept only when the removed text leaves the reading and the
  structure of the text around it as they were (`keeping_reading`): the anchored check
  refuses the others by design.
- HumanEval-Infilling (``bench.infilling``): a fixed sample of each split (every task in the full
  preset), the task's tests run on the filled program. A single-line task's filling ends at
  the end of its first line (the task removes one line), in every mode.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from holefill.datasets import (
    TREE_SITTER_REJECTS_CPP,
    Cut,
    humaneval_cpp_programs,
    humaneval_x,
    json_documents,
    python_cuts,
    span_cuts,
    stdlib_files,
)

from .config import BenchConfig
from .infilling import sample_tasks

HOLES = (1, 2, 3)
PYTHON_SHAPES = ("span", "boundary", "line")
# CPP/38 is excluded by holefill.datasets (not a program).
TS_CANNOT_JUDGE = TREE_SITTER_REJECTS_CPP


@dataclass(frozen=True)
class Sample:
    group: str  # "python span 2h", "cpp span 1h", "python single-line", ...
    language: str
    shape: str
    holes: int
    cut: Cut
    # the tests: C++ the HumanEval-X test program (main); Python the task's check and its call
    test: str = field(default="", repr=False)
    max_new_tokens: int | None = None  # per hole; None: the run's
    decode: tuple[tuple[str, Any], ...] = ()  # further Completer.fill keywords
    loose_exact: bool = False  # exact match ignores blanks at line ends and trailing newlines

    @property
    def name(self) -> str:
        return self.cut.name

    def program(self, fills: list[str]) -> str:
        """The filled file followed by its tests (what the functional oracle runs)."""
        filled = self.cut.filled(fills)
        return f"{filled}\n\n{self.test}" if self.language == "python" else filled

    def exact(self, fills: list[str]) -> bool:
        if not self.loose_exact:
            return tuple(fills) == self.cut.middles
        return [_loose(f) for f in fills] == [_loose(m) for m in self.cut.middles]


def _loose(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


def build_samples(config: BenchConfig) -> list[Sample]:
    """Every group of the decoding run's suites, in a fixed order."""
    out: list[Sample] = []
    if "stdlib" in config.suites:
        out += stdlib_samples(config)
    if "cpp" in config.suites:
        out += cpp_samples(config.cpp_per_group, config.seed)
    if "json" in config.suites:
        out += json_samples(config.json_per_group, config.seed)
    if "infilling" in config.suites:
        out += infilling_samples(config)
    return out


def stdlib_samples(config: BenchConfig) -> list[Sample]:
    with warnings.catch_warnings():  # listing the stdlib parses old code that only warns
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        stdlib_files(config.python_max_lines)
    out: list[Sample] = []
    n = config.python_per_group
    for shape in PYTHON_SHAPES:
        for k in HOLES:
            cuts = python_cuts(shape, OVERDRAW * n, seed=config.seed, holes=k,
                               max_lines=config.python_max_lines)
            out += [Sample(f"python {shape} {k}h", "python", shape, k, c)
                    for c in keeping_reading("python", cuts, n)]
    return out


# Cuts drawn per cut kept: some removed texts change the reading or the structure of the
# text around them (random spans of two or three holes mostly break a line mid-line).
OVERDRAW = 12


def keeping_reading(language: str, cuts: Iterable[Cut], n: int) -> list[Cut]:
    """The first n cuts whose removed text leaves the reading and the structure of the text
    around it as they were (a span that ends inside a string makes the string's rest code; a
    span from mid-line to mid-line breaks the user's line): holefill's anchored check
    refuses those by design (holefill.lexing.anchors, holefill.check.structure), since no
    filling may keep the user's code there, so they measure nothing but those rules."""
    from holefill.check.checker import Checker

    checker = Checker.for_language(language)
    return [c for c in cuts if checker.keeps_place(c.chunks, c.middles)][:n]


def infilling_samples(config: BenchConfig) -> list[Sample]:
    """The HumanEval-Infilling sample of every split, with its tests and token budget."""
    budgets = dict(config.infilling_max_new_tokens)
    out: list[Sample] = []
    for split in config.infilling_splits:
        for task in sample_tasks(split, config.infilling_per_split, config.seed):
            cut = Cut(task.task_id, (task.prompt, task.suffix), (task.canonical,))
            test = f"{task.test}\n\ncheck({task.entry_point})\n"
            decode = (("multiline", False),) if split == "single-line" else ()
            # whole-line splits: a line break or blanks at a line end are not a difference;
            # in a random span they may be (indentation before code of the suffix)
            out.append(Sample(f"python {split}", "python", "humaneval", 1, cut, test,
                              budgets.get(split), decode,
                              loose_exact=split in ("single-line", "multi-line")))
    return out


def cpp_samples(n: int, seed: int) -> list[Sample]:
    """n HumanEval-X C++ tasks per hole count, in a seeded order, with their tests."""
    tests = {t["task_id"]: t["test"] for t in humaneval_x("cpp")}
    programs = [p for p in humaneval_cpp_programs() if p[0] not in TS_CANNOT_JUDGE]
    random.Random(f"bench:cpp:{seed}").shuffle(programs)
    out: list[Sample] = []
    for k in HOLES:
        cuts = keeping_reading("cpp", span_cuts(programs[: OVERDRAW * n], k, 1, seed=seed), n)
        out += [Sample(f"cpp span {k}h", "cpp", "span", k, c, tests[c.name.split("#")[0]])
                for c in cuts]
    return out


def json_samples(n: int, seed: int) -> list[Sample]:
    docs = json_documents(OVERDRAW * n, seed=seed)
    out: list[Sample] = []
    for k in HOLES:
        out += [Sample(f"json span {k}h", "json", "span", k, c)
                for c in keeping_reading("json", span_cuts(docs, k, 1, seed=seed), n)]
    return out
