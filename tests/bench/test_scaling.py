"""The scaling run's engine cells (holefill.bench.scaling): a tiny configuration (files of about
100 lines, one cut per cell, two replayed tokens) for Python and C++ with 1 and 3 holes, its
stage profile (holefill.bench.stages), and the report and plot written from it. Behaviour
only: the timings are the report's, never asserted here."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from holefill.bench import plots, report
from holefill.bench.baselines import Guidance
from holefill.bench.config import QUICK
from holefill.bench.oracles import cpp_ts_valid
from holefill.bench.results import BenchResults
from holefill.bench.scaling import Cell, cpp_file, run_scaling, token_splitter
from holefill.bench.stages import OTHER, Stages
from holefill.models import default_model_path

PNG = b"\x89PNG\r\n\x1a\n"
CONFIG = dataclasses.replace(QUICK, sizes=(100,), cuts_per_cell=1, steps_per_cut=2,
                             cell_budget_s=0.5, scaling_holes=(1, 3))


@pytest.fixture(scope="module")
def scaling_run() -> tuple[list[Cell], Stages]:
    split = token_splitter(default_model_path() / "tokenizer.json")
    with Stages() as stages:
        cells = run_scaling(CONFIG, split, Guidance(error="not measured here"), None, stages)
    return cells, stages


def test_engine_cells_answer_yes_for_python_and_cpp_with_one_and_three_holes(
        scaling_run: tuple[list[Cell], Stages]) -> None:
    cells, _ = scaling_run
    engine = {(c.language, c.holes): c for c in cells if c.variant == "engine"}
    assert set(engine) == {("python", 1), ("python", 3), ("cpp", 1), ("cpp", 3)}
    for c in engine.values():
        assert c.times_ms and set(c.verdicts) == {"yes"}, (c.language, c.holes, c.verdicts)
        assert len(c.prep_ms) == 1 and not c.note  # one request, its first checks all yes
    # the baselines beside them: the classic window, and the re-parse of each language
    variants = {(c.language, c.variant, c.holes) for c in cells}
    assert {("python", "window", 1), ("python", "window", 3), ("python", "ast.parse", 0),
            ("cpp", "window", 1), ("cpp", "window", 3), ("cpp", "tree-sitter", 0)} <= variants
    assert ("cpp", "ast.parse", 0) not in variants
    for c in cells:
        assert c.verdicts.get("no", 0) == 0, c


def test_the_stage_profile_has_both_phases_of_both_languages_and_is_restored(
        scaling_run: tuple[list[Cell], Stages]) -> None:
    from holefill.check import incremental, window

    _, stages = scaling_run
    rows = stages.rows()
    assert {p for p, *_ in rows} == {"python prep", "python token", "cpp prep", "cpp token"}
    for phase in {p for p, *_ in rows}:
        mine = [r for r in rows if r[0] == phase]
        assert any(stage == OTHER for _, stage, _, _ in mine)
        assert sum(pct for *_, pct in mine) == pytest.approx(100.0, abs=0.5)
    # outside the context nothing stays wrapped
    assert incremental.build_junction.__module__ == "holefill.check.incremental"
    assert window.find_window.__name__ == "find_window"


def test_report_and_plot_show_the_engine_cells(scaling_run: tuple[list[Cell], Stages],
                                               tmp_path: Path) -> None:
    cells, stages = scaling_run
    res = BenchResults(CONFIG, {"command": "holefill bench --parts scaling"},
                       cells=cells, guidance={"error": "not measured here"},
                       stages=stages.rows(), parts=("scaling",))
    res.plots = plots.write_plots(tmp_path, res.cells, [])
    for name in res.plots.values():
        assert (tmp_path / name).read_bytes().startswith(PNG)
    text = report.render(res)
    for heading in ("## Scaling", "## Baselines side by side", "## Where the engine's time goes"):
        assert heading in text
    rows = [line for line in text.splitlines() if line.startswith("| cpp |")]
    assert any("| engine |" in line for line in rows)
    res.write_json(tmp_path / "results.json")
    assert "engine_stages" in (tmp_path / "results.json").read_text(encoding="utf-8")


def test_cpp_files_have_about_the_asked_size_and_tree_sitter_accepts_them() -> None:
    text = cpp_file(300, seed=0)
    assert 300 <= text.count("\n") < 400
    assert cpp_ts_valid(text)
    assert cpp_ts_valid(cpp_file(300, seed=0, namespaced=True))
