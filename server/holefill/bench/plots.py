"""The report's figures (matplotlib, PNG, no display needed)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .metrics import median
from .scaling import Cell

PLOT_FILES = {
    "scaling_file_size": "scaling_file_size.png",
    "scaling_holes": "scaling_holes.png",
    "validity": "validity.png",
    "time_per_token": "time_per_token.png",
    "pass_at_1": "pass_at_1.png",
}
PRIMARY_ORACLE = {"python": "ast.parse", "cpp": "tree-sitter", "json": "json.loads"}
BAR_MODES = ("Van.", "Con.-", "Con.", "Con.p", "Chk.")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a server or in CI
    import matplotlib.pyplot as plt

    return plt


def write_plots(out: Path, cells: Sequence[Cell], by_language: Sequence[dict[str, Any]],
                by_group: Sequence[dict[str, Any]] = ()) -> dict[str, str]:
    """Write the figures that have data; returns what -> file name."""
    written: dict[str, str] = {}
    if cells:
        _scaling_file_size(out / PLOT_FILES["scaling_file_size"], cells)
        _scaling_holes(out / PLOT_FILES["scaling_holes"], cells)
        written["scaling_file_size"] = PLOT_FILES["scaling_file_size"]
        written["scaling_holes"] = PLOT_FILES["scaling_holes"]
    if by_language:
        _validity(out / PLOT_FILES["validity"], by_language)
        _time_per_token(out / PLOT_FILES["time_per_token"], by_language)
        written["validity"] = PLOT_FILES["validity"]
        written["time_per_token"] = PLOT_FILES["time_per_token"]
    tested = functional_rows(by_group)
    if tested:
        _pass_at_1(out / PLOT_FILES["pass_at_1"], tested)
        written["pass_at_1"] = PLOT_FILES["pass_at_1"]
    return written


def functional_rows(by_group: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The group rows whose tests ran (HumanEval-Infilling splits, HumanEval-X C++ spans)."""
    groups = [r["key"] for r in by_group if r["mode"] == "Van." and _has(r.get("pass"))]
    return [r for r in by_group if r["key"] in groups]


def _has(x: Any) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def _pass_at_1(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    plt = _pyplot()
    groups = list(dict.fromkeys(r["key"] for r in rows))
    values: dict[str, list[float]] = {m: [] for m in BAR_MODES}
    for g in groups:
        for mode in BAR_MODES:
            row = next((r for r in rows if r["key"] == g and r["mode"] == mode), None)
            values[mode].append(row["pass"] if row and _has(row["pass"]) else math.nan)
    fig, ax = plt.subplots(figsize=(max(8.0, 1.3 * len(groups)), 4.5))
    _bars(ax, [g.replace(" ", "\n", 1) for g in groups], values, "tasks whose tests pass (%)")
    top = max([v for vs in values.values() for v in vs if not math.isnan(v)] + [10.0])
    ax.set_ylim(0, min(110.0, top * 1.25 + 2))
    ax.set_title("pass@1 (greedy) per split and mode")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _series(cells: Sequence[Cell], variant: str, holes: int,
            language: str = "python") -> tuple[list[int], list[float]]:
    pts = sorted((c.lines, median(c.times_ms)) for c in cells
                 if c.variant == variant and c.holes == holes and c.language == language
                 and c.times_ms)
    return [p[0] for p in pts], [p[1] for p in pts]


# per language: (variant, holes, label, color, style); holes 0: does not depend on holes
SCALING_LINES = {
    "python": [("engine", 1, "holefill engine, 1 hole", "C0", "-"),
               ("engine", 3, "holefill engine, 3 holes", "C0", "--"),
               ("window", 1, "classic windowed check, 1 hole", "C1", "-"),
               ("window", 3, "classic windowed check, 3 holes", "C1", "--"),
               ("whole", 1, "classic whole-file check, 1 hole", "C2", "-"),
               ("prefix", 1, "classic prefix only (no suffix)", "C6", "-"),
               ("ast.parse", 0, "re-parse: ast.parse", "C3", ":"),
               ("tree-sitter", 0, "re-parse: tree-sitter (full)", "C4", ":"),
               ("llguidance", 1, "llguidance mask (prefix only)", "C5", "-.")],
    "cpp": [("engine", 1, "holefill engine, 1 hole", "C0", "-"),
            ("engine", 3, "holefill engine, 3 holes", "C0", "--"),
            ("window", 1, "classic windowed check, 1 hole", "C1", "-"),
            ("window", 3, "classic windowed check, 3 holes", "C1", "--"),
            ("whole", 1, "classic whole-file check, 1 hole", "C2", "-"),
            ("tree-sitter", 0, "re-parse: tree-sitter (full)", "C4", ":")],
}


def _scaling_file_size(path: Path, cells: Sequence[Cell]) -> None:
    plt = _pyplot()
    langs = [lang for lang in SCALING_LINES if any(c.language == lang for c in cells)]
    fig, axes = plt.subplots(1, len(langs), figsize=(6.5 * len(langs), 4.8), sharey=True,
                             squeeze=False)
    for ax, lang in zip(axes[0], langs, strict=True):
        for variant, holes, label, color, style in SCALING_LINES[lang]:
            xs, ys = _series(cells, variant, holes, lang)
            if xs:
                ax.plot(xs, ys, style, marker="o", color=color, label=label)
        ax.set_title(f"{lang}: per-token check vs baselines")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("file size (lines)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("ms per token (median)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _scaling_holes(path: Path, cells: Sequence[Cell]) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    keys = sorted({(c.language, c.lines) for c in cells}, key=lambda k: (k[0] != "python", k))
    for i, (lang, lines) in enumerate(keys):
        for variant, style in (("engine", "-"), ("window", "--")):
            pts = sorted((c.holes, median(c.times_ms)) for c in cells
                         if c.language == lang and c.lines == lines and c.variant == variant
                         and c.holes and c.times_ms)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o",
                        color=f"C{i % 10}", label=f"{lang} {lines} lines, {variant}")
    ax.set_xticks(sorted({c.holes for c in cells if c.holes}))
    ax.set_yscale("log")
    ax.set_xlabel("holes")
    ax.set_ylabel("ms per token (median)")
    ax.set_title("per-token check vs holes: engine (solid), classic window (dashed)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _bars(ax: Any, groups: list[str], values: dict[str, list[float]], ylabel: str) -> None:
    width = 0.8 / max(1, len(values))
    for i, (mode, ys) in enumerate(values.items()):
        xs = [j + (i - (len(values) - 1) / 2) * width for j in range(len(groups))]
        bars = ax.bar(xs, [0 if math.isnan(y) else y for y in ys], width, label=mode)
        ax.bar_label(bars, labels=["-" if math.isnan(y) else f"{y:.0f}" for y in ys],
                     fontsize=7)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)


def _validity(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    plt = _pyplot()
    groups: list[str] = []
    values: dict[str, list[float]] = {m: [] for m in BAR_MODES}
    cols = [(lang, PRIMARY_ORACLE[lang]) for lang in dict.fromkeys(r["key"] for r in rows)]
    if any(r["key"] == "cpp" for r in rows):
        cols.append(("cpp", "g++"))
    for lang, oracle in cols:
        groups.append(f"{lang}\n({oracle})")
        for mode in BAR_MODES:
            row = next((r for r in rows if r["key"] == lang and r["mode"] == mode), None)
            values[mode].append(row.get(f"valid {oracle}", math.nan) if row else math.nan)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    _bars(ax, groups, values, "syntactically valid files (%)")
    ax.set_ylim(0, 110)
    ax.set_title("validity by an independent oracle, per mode")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _time_per_token(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    plt = _pyplot()
    modes = ("Van.", "Con.-", "Con.")
    langs = list(dict.fromkeys(r["key"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / len(modes)
    for i, mode in enumerate(modes):
        picked = [next((r for r in rows if r["key"] == lang and r["mode"] == mode), {})
                  for lang in langs]
        model = [_num(r.get("model_ms_per_token")) for r in picked]
        check = [_num(r.get("check_ms_per_token")) for r in picked]
        xs = [j + (i - 1) * width for j in range(len(langs))]
        ax.bar(xs, model, width, color=f"C{i}", label=f"{mode} model")
        ax.bar(xs, check, width, bottom=model, color=f"C{i}", alpha=0.45, hatch="//",
               label=f"{mode} checks")
    ax.set_xticks(range(len(langs)))
    ax.set_xticklabels(langs)
    ax.set_ylabel("ms per generated token (median)")
    ax.set_title("time per token: model (solid) + checks (hatched)")
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _num(x: Any) -> float:
    return 0.0 if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)
