"""What one `holefill bench` run measures: sample counts, sizes and budgets, all seeded.

Two presets: `quick` (the bundled model on a laptop CPU in minutes) and `full` (any local model,
meant for a GPU). Every number that changes a result lives here, so the report can print it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

# HumanEval-Infilling splits (bench.infilling.SPLITS; kept here so the config imports nothing)
INFILLING_SPLITS = ("single-line", "multi-line", "random-span", "random-span-light")
# File sizes (lines) of the scaling curve: the range our performance work is judged on.
SCALING_SIZES = (100, 1000, 5000, 10000)


@dataclass(frozen=True)
class BenchConfig:
    quick: bool = True
    seed: int = 0
    suites: tuple[str, ...] = ("stdlib", "cpp", "json", "infilling")
    # decoding run: samples per group (python groups are shape x holes)
    python_per_group: int = 3
    cpp_per_group: int = 8
    json_per_group: int = 3
    python_max_lines: int = 200  # standard-library files up to this size
    max_new_tokens: int = 32  # per hole
    top_k: int = 8
    # scaling run: per (file size, holes) cell
    sizes: tuple[int, ...] = SCALING_SIZES
    scaling_languages: tuple[str, ...] = ("python", "cpp")
    scaling_holes: tuple[int, ...] = (1, 3)
    cuts_per_cell: int = 2
    steps_per_cut: int = 6  # simulated tokens checked per cut
    cell_budget_s: float = 4.0  # stop a cell once it has taken this long (>= 1 check)
    # baselines
    llguidance_files: int = 3
    gpp_timeout_s: float = 60.0
    run_timeout_s: float = 10.0  # per functional test run (HumanEval-X, HumanEval-Infilling)
    # HumanEval-Infilling: tasks per split (None: every task), token budget per split
    infilling_splits: tuple[str, ...] = INFILLING_SPLITS
    infilling_per_split: int | None = 24
    infilling_max_new_tokens: tuple[tuple[str, int], ...] = (
        ("single-line", 48), ("multi-line", 128), ("random-span", 128),
        ("random-span-light", 128))

    def limited(self, limit: int | None) -> BenchConfig:
        """At most `limit` samples per group, cuts per cell and llguidance files (for tests)."""
        if limit is None:
            return self
        return dataclasses.replace(
            self,
            python_per_group=min(self.python_per_group, limit),
            cpp_per_group=min(self.cpp_per_group, limit),
            json_per_group=min(self.json_per_group, limit),
            cuts_per_cell=min(self.cuts_per_cell, limit),
            steps_per_cut=min(self.steps_per_cut, 2 * limit),
            llguidance_files=min(self.llguidance_files, limit),
            infilling_per_split=limit if self.infilling_per_split is None
            else min(self.infilling_per_split, limit),
        )


QUICK = BenchConfig()

# Hours, not minutes: Python checks with 2-3 holes take 0.1-2 s each on CPU (the checker runs
# on the CPU whatever the model's device), and every HumanEval-X task is compiled and run.
FULL = BenchConfig(
    quick=False,
    python_per_group=20,
    cpp_per_group=161,  # every HumanEval-X C++ task tree-sitter can judge
    json_per_group=40,
    python_max_lines=400,
    max_new_tokens=64,
    cuts_per_cell=5,
    steps_per_cut=16,
    cell_budget_s=30.0,
    llguidance_files=10,
    infilling_per_split=None,  # all 8,652 tasks
    infilling_max_new_tokens=(("single-line", 64), ("multi-line", 256), ("random-span", 256),
                              ("random-span-light", 256)),
)
