"""The data sets ship with holefill and read as their SOURCE.md notes say.

Data: server/holefill/data/humaneval-x (164 tasks in each of six languages) and
server/holefill/data/humaneval-infilling (four splits), read through holefill.datasets.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import holefill
from holefill.datasets import DATA_ENV, data_dir, humaneval_infilling, humaneval_x
from holefill.errors import HolefillError


def test_data_is_found_inside_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_ENV, raising=False)
    package = Path(holefill.__file__).resolve().parent
    assert data_dir().resolve() == package / "data"


@pytest.mark.parametrize("language", ["cpp", "python", "js", "java", "go", "rust"])
def test_humaneval_x_has_164_tasks_per_language(language: str) -> None:
    tasks = humaneval_x(language)
    assert len(tasks) == 164
    assert {"task_id", "prompt", "declaration", "canonical_solution", "test"} <= set(tasks[0])


@pytest.mark.parametrize(("split", "count"), [("single-line", 1033), ("multi-line", 5815),
                                              ("random-span", 1640),
                                              ("random-span-light", 164)])
def test_humaneval_infilling_splits_have_their_documented_sizes(split: str, count: int) -> None:
    tasks = humaneval_infilling(split)
    assert len(tasks) == count
    assert {"prompt", "suffix", "canonical_solution", "test", "entry_point"} <= set(tasks[0])


def test_unknown_infilling_split_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="single-line"):
        humaneval_infilling("no-such-split")


def test_holefill_data_overrides_the_shipped_copy(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "humaneval-x").mkdir()
    with gzip.open(tmp_path / "humaneval-x" / "humaneval_cpp.jsonl.gz", "wt") as fh:
        fh.write(json.dumps({"task_id": "CPP/0"}) + "\n")
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    assert humaneval_x("cpp") == [{"task_id": "CPP/0"}]


def test_a_missing_data_file_is_a_clear_error(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    with pytest.raises(HolefillError, match=f"humaneval_cpp.jsonl.gz is missing .*{DATA_ENV}"):
        humaneval_x("cpp")
