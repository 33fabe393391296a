"""HumanEval-Infilling (Bavarian et al. 2022, "Efficient Training of Language Models to Fill in
the Middle"; openai/human-eval-infilling, MIT license): the 164 HumanEval problems with a part of
the canonical solution removed.

Splits: single-line (1,033 tasks: one whole line), multi-line (5,815: a run of whole lines),
random-span (1,640: any characters), random-span-light (164: one random span per problem).
A task passes when ``prompt + filling + suffix``, followed by the task's ``test`` and
``check(entry_point)``, runs without an error.

The files are read through ``holefill.datasets.humaneval_infilling`` (the data ship inside the
package, ``holefill/data/humaneval-infilling/``; ``$HOLEFILL_DATA`` overrides).
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from pathlib import Path

from holefill.datasets import INFILLING_SPLITS, humaneval_infilling

SPLITS: dict[str, str] = INFILLING_SPLITS


@dataclass(frozen=True)
class InfillingTask:
    task_id: str  # "SingleLineInfilling/HumanEval/0/L5"
    split: str
    prompt: str
    suffix: str
    canonical: str  # the removed text
    test: str  # defines check(candidate)
    entry_point: str

    @property
    def problem(self) -> str:
        """The HumanEval problem it comes from: "HumanEval/0"."""
        parts = self.task_id.split("/")
        return "/".join(parts[1:3])


def infilling_tasks(split: str, root: Path | None = None) -> list[InfillingTask]:
    """Every task of a split, in file order."""
    if split not in SPLITS:
        raise ValueError(f"unknown HumanEval-Infilling split {split!r}; use {', '.join(SPLITS)}")
    return list(_read(split, root))


@functools.lru_cache(maxsize=8)
def _read(split: str, root: Path | None) -> tuple[InfillingTask, ...]:
    rows = humaneval_infilling(split, root)
    return tuple(InfillingTask(r["task_id"], split, r["prompt"], r["suffix"],
                               r["canonical_solution"], r["test"], r["entry_point"])
                 for r in rows)


def sample_tasks(split: str, n: int | None, seed: int,
                 root: Path | None = None) -> list[InfillingTask]:
    """A fixed, seeded sample of n tasks of a split (every task when n is None or too big),
    in file order so that runs with a larger n only add tasks."""
    tasks = infilling_tasks(split, root)
    if n is None or n >= len(tasks):
        return tasks
    order = list(range(len(tasks)))
    random.Random(f"humaneval-infilling:{split}:{seed}").shuffle(order)
    return [tasks[i] for i in sorted(order[:n])]
