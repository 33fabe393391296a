"""Overlap of the training corpus with HumanEval, HumanEval-Infilling and HumanEval-X.

The bundled model is evaluated on HumanEval-Infilling and the HumanEval-X C++ tasks, so it must
never train on their text. Two measures, both over every field of every task (prompt, canonical
solution, declaration, suffix, test) of HumanEval-Infilling (all splits: the 164 problems) and
HumanEval-X (all six languages):

* **13-grams of words** (identifiers and keywords; numbers, punctuation and layout ignored), as
  in the decontamination of GPT-3 (Brown et al. 2020, App. C): a training file that shares any
  13-gram with a task is *contaminated* and is left out of training. An n-gram with fewer than
  ``MIN_DISTINCT`` different words (``a b c d ...``, ``x x x ...``) is a pattern, not text, and
  does not count.
* **exact lines**: code lines of at least ``MIN_LINE`` characters (whitespace collapsed) that
  occur in a task and in a training file. Short generic lines (``return result``) are common
  code, not a leak, so this is reported, not acted on.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

NGRAM = 13
MIN_DISTINCT = 7
MIN_LINE = 30
_WORD = re.compile(r"[^\W\d]\w*")
HUMANEVAL_X_LANGUAGES = ("cpp", "python", "js", "java", "go", "rust")
X_FIELDS = ("prompt", "declaration", "canonical_solution", "test", "example_test")


def reference_texts(root: Path | None = None) -> list[tuple[str, str]]:
    """(task id, text) for every field of every HumanEval-Infilling and HumanEval-X task."""
    from holefill.bench.infilling import SPLITS, infilling_tasks
    from holefill.datasets import humaneval_x

    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for split in SPLITS:
        for t in infilling_tasks(split, root):
            for text in (t.prompt + t.canonical + t.suffix, t.test):
                if text not in seen:  # the splits cut the same 164 programs
                    seen.add(text)
                    out.append((t.problem, text))
    for lang in HUMANEVAL_X_LANGUAGES:
        for task in humaneval_x(lang, root):
            for key in X_FIELDS:
                text = task.get(key) or ""
                if text and text not in seen:
                    seen.add(text)
                    out.append((task["task_id"], text))
    return out


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def ngram_keys(text: str, n: int = NGRAM) -> Iterable[int]:
    ws = words(text)
    for i in range(len(ws) - n + 1):
        gram = tuple(ws[i:i + n])
        if len(set(gram)) >= MIN_DISTINCT:
            yield hash(gram)


def norm_lines(text: str) -> Iterable[str]:
    for line in text.splitlines():
        norm = " ".join(line.split())
        if len(norm) >= MIN_LINE:
            yield norm


@dataclass
class FileOverlap:
    key: str
    ngrams: int = 0  # 13-grams shared with the references
    tasks: set[str] = field(default_factory=set)  # tasks they come from
    lines: list[str] = field(default_factory=list)  # shared long lines


@dataclass
class OverlapReport:
    files: int = 0
    chars: int = 0
    reference_texts: int = 0
    reference_ngrams: int = 0
    reference_lines: int = 0
    hits: list[FileOverlap] = field(default_factory=list)  # files with any 13-gram in common
    line_hits: Counter[str] = field(default_factory=Counter)  # shared line -> training files

    @property
    def contaminated(self) -> set[str]:
        return {h.key for h in self.hits if h.ngrams}

    def summary(self) -> dict[str, object]:
        return {
            "files_scanned": self.files,
            "chars_scanned": self.chars,
            "reference_texts": self.reference_texts,
            "reference_13grams": self.reference_ngrams,
            "reference_lines": self.reference_lines,
            "files_with_13gram": len(self.contaminated),
            "contaminated": sorted(
                (h.key, h.ngrams, sorted(h.tasks)[:5]) for h in self.hits if h.ngrams),
            "files_with_shared_line": len({k for h in self.hits for k in [h.key] if h.lines}),
            "shared_lines": self.line_hits.most_common(20),
        }


class OverlapIndex:
    """The 13-grams and long lines of the reference texts, and the task each comes from."""

    def __init__(self, refs: Sequence[tuple[str, str]]) -> None:
        self.refs = len(refs)
        self.ngrams: dict[int, str] = {}
        self.lines: dict[str, str] = {}
        for task, text in refs:
            for k in ngram_keys(text):
                self.ngrams.setdefault(k, task)
            for line in norm_lines(text):
                self.lines.setdefault(line, task)

    def scan(self, key: str, text: str) -> FileOverlap:
        hit = FileOverlap(key)
        for k in ngram_keys(text):
            task = self.ngrams.get(k)
            if task is not None:
                hit.ngrams += 1
                hit.tasks.add(task)
        hit.lines = [line for line in norm_lines(text) if line in self.lines]
        return hit


def check_corpus(files: Iterable[tuple[str, str]], index: OverlapIndex) -> OverlapReport:
    """Scan (key, text) training files against the index."""
    rep = OverlapReport(reference_texts=index.refs, reference_ngrams=len(index.ngrams),
                        reference_lines=len(index.lines))
    for key, text in files:
        rep.files += 1
        rep.chars += len(text)
        hit = index.scan(key, text)
        if hit.ngrams or hit.lines:
            rep.hits.append(hit)
            for line in set(hit.lines):
                rep.line_hits[line] += 1
    return rep
