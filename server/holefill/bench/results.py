"""Everything one run measured, and its JSON form (docs/bench/results.json)."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .baselines import MaskRun
from .config import BenchConfig
from .runner import Record
from .scaling import Cell


@dataclass
class BenchResults:
    config: BenchConfig
    environment: dict[str, Any]
    records: list[Record] = field(default_factory=list)
    by_language: list[dict[str, Any]] = field(default_factory=list)
    by_group: list[dict[str, Any]] = field(default_factory=list)
    cells: list[Cell] = field(default_factory=list)
    guidance: dict[str, Any] = field(default_factory=dict)  # version, vocab, error
    guidance_files: list[MaskRun] = field(default_factory=list)
    stages: list[tuple[str, str, float, float]] = field(default_factory=list)  # Stages.rows
    parts: tuple[str, ...] = ()
    wall_s: dict[str, float] = field(default_factory=dict)
    plots: dict[str, str] = field(default_factory=dict)  # what -> file name
    # mode -> group -> {n, gains, losses}: the mode's tests against Van.'s on the same samples
    paired: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = _clean({
            "config": dataclasses.asdict(self.config),
            "environment": self.environment,
            "parts": list(self.parts),
            "wall_s": self.wall_s,
            "by_language": self.by_language,
            "by_group": self.by_group,
            "paired_with_vanilla": self.paired,
            "scaling": [dataclasses.asdict(c) for c in self.cells],
            "llguidance": {**self.guidance,
                           "files": [dataclasses.asdict(r) for r in self.guidance_files]},
            "engine_stages": [dict(zip(("phase", "stage", "ms", "percent"), r, strict=True))
                              for r in self.stages],
            "samples": [r.summary() for r in self.records],
            "plots": self.plots,
        })
        return out

    def write_json(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")


def _clean(value: Any) -> Any:
    """JSON has no NaN: unmeasured numbers become null; times are rounded to 4 decimals."""
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 4)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value
