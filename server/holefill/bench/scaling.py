"""Per-token check time against file size and number of holes: the curve our performance work
is judged by.

Python files of 100 to 10,000 lines are standard-library modules concatenated in a seeded
order (the last one cut after a top-level statement, so every file parses); C++ files are
HumanEval-X programs one after another (`cpp_file`). In each, k random spans
(5-100 characters) are removed, and generation of the first hole is replayed token by token
(the removed text, split by the model's tokenizer): one check per token, as when the model's
first candidate is accepted. Every such state is completable (the removed text completes it),
so every answer should be "yes".

Variants: `engine` is the default decoding path: the request's checks as decoding builds them
(holefill.decode.completer.request_checks: windows, segments, an incremental engine per part),
the first check of every part once per request (`prep_ms`: what a request pays before its
first token), then one check of the first hole's part per token. The classic checks, once
per token from nothing: `whole` checks the whole file; `window` checks only the window around
the holes (holefill.check.window), computed once per request as the decoding loop does;
`prefix` (Python) is left-to-right generation without a suffix (the file cut at the hole),
windowed: the setting of the llguidance baseline. The naive baselines re-parse the whole file
per token (Python: `ast.parse` and tree-sitter; C++: tree-sitter), and llguidance computes a
prefix-only mask (Python only: its grammar is derived from ours, holefill.bench.baselines).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import random
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from holefill.datasets import (
    TREE_SITTER_REJECTS_CPP,
    Cut,
    cut,
    humaneval_cpp_programs,
    random_spans,
    stdlib_files,
)

from .baselines import Guidance, mask_times, parse_times, timed_ms
from .config import BenchConfig
from .stages import Stages

CHECK_VARIANTS = ("whole", "window", "prefix")
ENGINE = "engine"  # the decoding loop's checks, with the structure rule (the default)
ENGINE_LEXICAL = "engine-l"  # the same with the lexical rule only (structured=False)
Splitter = Callable[[str], list[int]]


@dataclass
class Cell:
    variant: str  # engine, whole, window, prefix, ast.parse, tree-sitter, llguidance
    target: int  # the size asked for (lines)
    lines: int  # the size built
    holes: int  # 0: does not depend on holes
    times_ms: list[float] = field(default_factory=list)
    verdicts: dict[str, int] = field(default_factory=dict)
    window_ms: list[float] = field(default_factory=list)  # find_window, once per request
    checked_chars: list[int] = field(default_factory=list)  # what each check looked at
    budget_hit: bool = False
    note: str = ""
    language: str = "python"
    prep_ms: list[float] = field(default_factory=list)  # engine: the request's first checks
    # engine: the same preparation for the request after the user typed the replayed text at
    # the hole (typing along: the engines of the first request are reused)
    warm_ms: list[float] = field(default_factory=list)
    fallbacks: int = 0  # engine: per-token checks the engine left to the classic check


def build_file(target_lines: int, seed: int, max_file_lines: int = 400) -> str:
    """At most `target_lines` (and, given enough files, at least 90% of it) lines of
    standard-library code that `ast.parse` accepts: whole files in a seeded order; a file
    that does not fit is cut after a top-level statement, or skipped when too little of it
    fits."""
    files = list(stdlib_files(max_file_lines))
    random.Random(f"scaling-files:{seed}").shuffle(files)
    parts: list[str] = []
    have = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        if not text.endswith("\n"):
            text += "\n"
        n = text.count("\n")
        if have + n > target_lines:
            head = _head_statements(text, target_lines - have)
            if have + head.count("\n") >= 0.9 * target_lines:
                parts.append(head)
                break
            continue
        parts.append(text)
        have += n
    return "".join(parts)


def _head_statements(text: str, max_lines: int) -> str:
    """The longest run of whole top-level statements from the start within max_lines."""
    with warnings.catch_warnings():  # old code's invalid escapes only warn
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        ends = [s.end_lineno or 0 for s in ast.parse(text).body]
    fit = max((e for e in ends if e <= max_lines), default=0)
    return "".join(text.splitlines(keepends=True)[:fit])


def cpp_file(target_lines: int, seed: int, namespaced: bool = False) -> str:
    """HumanEval-X C++ programs (those tree-sitter accepts) in a seeded order, repeated as
    needed, until the file has at least `target_lines` lines. `namespaced`: each program in
    its own namespace, the preprocessor lines gathered at the top."""
    programs = [t for name, t in humaneval_cpp_programs() if name not in TREE_SITTER_REJECTS_CPP]
    rng = random.Random(seed)
    heads: dict[str, None] = {}
    parts: list[str] = []
    lines = 0
    while lines < target_lines:
        text = rng.choice(programs)
        text = text if text.endswith("\n") else text + "\n"
        if namespaced:
            kept = text.splitlines(keepends=True)
            heads.update(dict.fromkeys(x for x in kept if x.lstrip().startswith("#")))
            code = "".join(x for x in kept if not x.lstrip().startswith("#"))
            text = f"namespace t{len(parts)} {{\n{code}}}\n"
        parts.append(text)
        lines += text.count("\n")
    return "".join(heads) + "".join(parts)


def scaling_file(language: str, target_lines: int, config: BenchConfig) -> str:
    if language == "cpp":
        return cpp_file(target_lines, config.seed)
    return build_file(target_lines, config.seed, config.python_max_lines)


def variants(language: str, holes: int) -> tuple[str, ...]:
    """The check variants measured for a language and hole count (C++ has no `prefix` cell:
    its baseline there, llguidance, runs on Python only; its whole-file check, linear in the
    file, is measured for one hole)."""
    classic: tuple[str, ...]
    if language == "python":
        classic = CHECK_VARIANTS if holes == 1 else CHECK_VARIANTS[:2]
    else:
        classic = CHECK_VARIANTS[:2] if holes == 1 else CHECK_VARIANTS[1:2]
    return (ENGINE, ENGINE_LEXICAL, *classic)


def token_splitter(tokenizer_json: Path | None) -> Splitter:
    """Character offsets after each token of a text (the model's tokenizer; 4-character steps
    when it cannot be loaded)."""
    try:
        from tokenizers import Tokenizer

        tok: Any = Tokenizer.from_file(str(tokenizer_json)) if tokenizer_json else None
    except Exception:  # no tokenizers package or an unreadable file: fall back, said in notes
        tok = None
    if tok is None:
        return lambda text: list(range(4, len(text), 4)) + [len(text)]

    def split(text: str) -> list[int]:
        ends = {e for _, e in tok.encode(text, add_special_tokens=False).offsets}
        return sorted(e for e in ends if 0 < e <= len(text)) or [len(text)]

    return split


def run_scaling(config: BenchConfig, splitter: Splitter, guidance: Guidance,
                log: Callable[[str], None] | None = None,
                stages: Stages | None = None) -> list[Cell]:
    """Every cell of every language, size and hole count; `stages` (open) gets the stage
    profile of the engine cells, by phase "<language> prep" and "<language> token"."""
    from holefill.check.checker import Checker

    cells: list[Cell] = []
    for language in config.scaling_languages:
        checker = Checker.for_language(language)
        for target in config.sizes:
            text = scaling_file(language, target, config)
            lines = text.count("\n")
            cells += _parse_cells(language, text, target, lines, config.steps_per_cut)
            for k in config.scaling_holes:
                cuts = _cuts(text, k, target, config, checker)
                for variant in variants(language, k):
                    cell = Cell(variant, target, lines, k, language=language)
                    if variant in (ENGINE, ENGINE_LEXICAL):
                        _measure_engine(checker, cell, cuts, splitter, config,
                                        stages if variant == ENGINE else None,
                                        structured=variant == ENGINE)
                    else:
                        _measure(checker, cell, cuts, splitter, config)
                    cells.append(cell)
                    if log is not None:
                        log(_line(cell))
                if k == 1 and guidance.ok and language == "python":
                    cells.append(_guidance_cell(guidance, cuts, target, lines, config))
    return cells


def _cuts(text: str, holes: int, target: int, config: BenchConfig, checker: Any) -> list[Cut]:
    tag = "" if checker.language == "python" else f"{checker.language}:"
    rng = random.Random(f"scaling:{tag}{config.seed}:{target}:{holes}")
    return reading_cuts(checker, text, holes, config.cuts_per_cell, rng,
                        f"scaling{target}#{holes}h")


def reading_cuts(checker: Any, text: str, holes: int, n: int, rng: random.Random,
                 prefix: str, span: tuple[int, int] = (5, 100)) -> list[Cut]:
    """Up to n seeded cuts of `holes` random spans (of `span` characters) whose removed text
    keeps the reading of the text around it (a span that opens a string the text after
    closes is no state decoding can reach with anchors, holefill.lexing.anchors)."""
    out: list[Cut] = []
    for _ in range(200 * n):
        if len(out) == n:
            break
        spans = random_spans(text, holes, rng, *span)
        if spans is None:
            continue
        c = cut(f"{prefix}{len(out)}", text, spans)
        if checker.keeps_place(c.chunks, c.middles):
            out.append(c)
    return out


def _parse_cells(language: str, text: str, target: int, lines: int,
                 repeat: int) -> list[Cell]:
    return [Cell(name, target, lines, 0, times, checked_chars=[len(text)] * len(times),
                 language=language)
            for name, times in parse_times(text, repeat, language).items()]


def _measure(checker: Any, cell: Cell, cuts: Sequence[Cut], splitter: Splitter,
             config: BenchConfig) -> None:
    """Check the states of the replayed generation until done or the cell's budget is spent."""
    from holefill.check.window import Window, find_window

    verdicts: Counter[str] = Counter()
    start = time.perf_counter()
    for c in cuts:
        chunks = [c.chunks[0], ""] if cell.variant == "prefix" else list(c.chunks)
        t0 = time.perf_counter()
        window = Window() if cell.variant == "whole" else find_window(cell.language, chunks)
        cell.window_ms.append((time.perf_counter() - t0) * 1e3)
        # as decoding does: the reading to keep is the document's before any text is typed
        anchors = checker.anchors(window.apply(chunks))
        middle = c.middles[0]
        for end in splitter(middle)[: config.steps_per_cut]:
            state = window.apply([chunks[0] + middle[:end], *chunks[1:]])
            res, ms = timed_ms(functools.partial(checker.check, anchors=anchors), state)
            cell.times_ms.append(ms)
            cell.checked_chars.append(sum(map(len, state)))
            verdicts[res.verdict.value] += 1
            if time.perf_counter() - start > config.cell_budget_s:
                cell.budget_hit = True
                cell.verdicts = dict(verdicts)
                return
    cell.verdicts = dict(verdicts)


def _measure_engine(checker: Any, cell: Cell, cuts: Sequence[Cut], splitter: Splitter,
                    config: BenchConfig, stages: Stages | None,
                    structured: bool = True) -> None:
    """The decoding loop's checks (holefill.decode.completer.request_checks with the default
    settings): per cut, the request's preparation (windows, segments, engines, and the first
    check of every part, as Completer.fill starts) timed once, then one check of the first
    hole's part per replayed token; then the request after the user typed the replayed text,
    with the engines of the first (`warm_ms`: typing along). A new cache per cut."""
    from holefill.check.structure import PLAIN_STRUCTURE, Structure
    from holefill.decode.completer import EngineCache, request_checks
    from holefill.decode.loop import DecodeSettings

    settings = DecodeSettings(structured=structured)
    verdicts: Counter[str] = Counter()
    prep_verdicts: Counter[str] = Counter()
    start = time.perf_counter()

    def structure(chunks: Sequence[str]) -> Structure:  # as Completer.fill keeps it
        return checker.structure(list(chunks)) if structured else PLAIN_STRUCTURE

    def prepare(chunks: list[str], cache: EngineCache) -> list[Any]:
        parts = request_checks(checker, chunks, settings, engine_for=cache.engine_for,
                               memo=cache.verdicts)
        for seg, constraint in parts:
            got = constraint.verdict(list(seg.chunks), list(seg.sites),
                                     structure=structure(seg.chunks))
            prep_verdicts[got.value] += 1
        return parts

    for c in cuts:
        cache = EngineCache()
        with _phase(stages, f"{cell.language} prep"):
            parts, ms = timed_ms(prepare, list(c.chunks), cache)
        cell.prep_ms.append(ms)
        seg, constraint = next(p for p in parts if 0 in p[0].holes)
        sites = list(seg.sites)
        rules = structure(seg.chunks)
        # the first hole's region starts where the replayed text does (HoleState)
        shaped = rules.with_starts([len(seg.chunks[0])]) if rules.rules else rules
        before = constraint.classic
        middle, typed = c.middles[0], ""
        for end in splitter(middle)[: config.steps_per_cut]:
            state = [seg.chunks[0] + middle[:end], *seg.chunks[1:]]
            with _phase(stages, f"{cell.language} token"):
                got, ms = timed_ms(constraint.verdict, state, sites, True, (0, 1), shaped)
            cell.times_ms.append(ms)
            verdicts[got.value] += 1
            typed = middle[:end]
            if time.perf_counter() - start > config.cell_budget_s:
                cell.budget_hit = True
                break
        cell.fallbacks += constraint.classic - before
        if typed:
            with _phase(stages, f"{cell.language} prep"):
                _, ms = timed_ms(prepare, [c.chunks[0] + typed, *c.chunks[1:]], cache)
            cell.warm_ms.append(ms)
        if cell.budget_hit:
            break
    cell.verdicts = dict(verdicts)
    if set(prep_verdicts) - {"yes"}:
        cell.note = "first checks of the requests: " + ", ".join(
            f"{k} {v}" for k, v in sorted(prep_verdicts.items()))


def _phase(stages: Stages | None, name: str) -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext() if stages is None else stages.phase(name)


def _guidance_cell(g: Guidance, cuts: Sequence[Cut], target: int, lines: int,
                   config: BenchConfig) -> Cell:
    cell = Cell("llguidance", target, lines, 1)
    for c in cuts:
        run = mask_times(g, c.chunks[0], c.middles[0], config.steps_per_cut)
        cell.times_ms += run.mask_ms
        cell.window_ms.append(run.prefix_ms)  # here: consuming the prefix, once per request
        if run.error:
            cell.note = run.error
    return cell


def _line(cell: Cell) -> str:
    from .metrics import median

    prep = f", prep {median(cell.prep_ms):.1f} ms" if cell.prep_ms else ""
    prep += f", warm prep {median(cell.warm_ms):.1f} ms" if cell.warm_ms else ""
    return (f"scaling {cell.language:<6} {cell.variant:<7} {cell.lines:>6} lines {cell.holes}h: "
            f"{median(cell.times_ms):9.3f} ms/check over {len(cell.times_ms)} {cell.verdicts}"
            f"{prep}")
