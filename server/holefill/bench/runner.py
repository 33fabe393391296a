"""The decoding run: every sample in every mode with one loaded model, then the oracles.

Timing is measured while the model runs; the oracles (g++ above all) run afterwards, in
parallel, so they never share the CPU with a timed fill.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from holefill.errors import HolefillError

from . import oracles
from .config import BenchConfig
from .datasets import Sample
from .kept import (
    lexed_brackets_kept,
    python_blocks_kept,
    python_brackets_kept,
    python_tokens_kept,
)
from .modes import CHECKED, MODEL_MODES, VANILLA, Mode, checked_fills

REFERENCE = "Ref."  # the removed text put back: checks that the oracles accept the originals


@dataclass
class Record:
    sample: str
    group: str
    language: str
    holes: int
    mode: str
    fills: list[str]
    exact: bool
    tokens: int = 0
    rejected: int = 0
    check_ms: list[float] = field(default_factory=list)  # every completability check
    model_s: float = 0.0
    total_s: float = 0.0
    verified: bool = True
    ended_by: list[str] = field(default_factory=list)
    completed_by: list[str] = field(default_factory=list)
    oracle_calls: int = 0  # Chk.: oracle runs spent cutting the fillings
    error: str = ""  # the fill raised (e.g. our grammar rejected the fixed text)
    valid: dict[str, bool | None] = field(default_factory=dict)
    passed: bool | None = None  # the task's tests pass (HumanEval-X C++, HumanEval-Infilling)
    # Python: a token of the fixed text (but a chunk's first and last) is not in the filled
    # file unchanged (bench.kept, CPython's tokenize); None: not judged (other languages)
    swallowed: bool | None = None
    # a bracket of the fixed text that paired with another one of the fixed text no longer
    # pairs with it (bench.kept: CPython's tokenize for Python, the language's reading for
    # the others); None: not judged
    repaired: bool | None = None
    # Python: a line of the fixed text is in another block (its header changed, bench.kept);
    # None: not judged (brace languages: their blocks are brackets, see `repaired`)
    moved: bool | None = None

    def summary(self) -> dict[str, Any]:
        """The record without the fillings and check times, for results.json."""
        out = dict(vars(self))
        for key in ("fills", "check_ms"):
            out.pop(key)
        out["checks"] = len(self.check_ms)
        out["check_ms_total"] = sum(self.check_ms)
        return out


class CheckProbe:
    """Times every completability check the decoding loop makes.

    The loop keeps its check times inside the fill (FillResult.stats has only their median and
    p90), and a p99 needs them all, so for the run each language's shared checker gets a
    timing wrapper (an instance attribute, removed on exit). Witness searches, and the
    re-checks made inside them, are not counted: they are the fallback, seen in end-to-end time.
    """

    def __init__(self, languages: Iterable[str]) -> None:
        from holefill.check.checker import Checker

        self.checkers = [Checker.for_language(lang) for lang in sorted(set(languages))]
        self.times: list[float] = []
        self._depth = 0

    def __enter__(self) -> CheckProbe:
        for chk in self.checkers:
            vars(chk)["check"] = self._wrap(chk.check)
        return self

    def __exit__(self, *exc: object) -> None:
        for chk in self.checkers:
            vars(chk).pop("check", None)

    def _wrap(self, inner: Callable[..., Any]) -> Callable[..., Any]:
        def check(chunks: Sequence[str], **kwargs: Any) -> Any:
            timed = self._depth == 0 and not kwargs.get("want_witness")
            self._depth += 1
            t0 = time.perf_counter()
            try:
                return inner(chunks, **kwargs)
            finally:
                self._depth -= 1
                if timed:
                    self.times.append((time.perf_counter() - t0) * 1e3)

        return check

    def take(self) -> list[float]:
        out, self.times = self.times, []
        return out


def run_decoding(comp: Any, samples: Sequence[Sample], config: BenchConfig,
                 log: Callable[[str], None] | None = None) -> list[Record]:
    """Fill every sample in every mode, then judge every filled file."""
    records: list[Record] = []
    with CheckProbe(s.language for s in samples) as probe:
        for i, sample in enumerate(samples):
            recs = _sample_records(comp, sample, config, probe)
            records += recs
            if log is not None:
                log(_progress_line(i + 1, len(samples), sample, recs))
    judge_records(records, samples, config)
    return records


def _sample_records(comp: Any, sample: Sample, config: BenchConfig,
                    probe: CheckProbe) -> list[Record]:
    cut = sample.cut
    ref = Record(cut.name, sample.group, sample.language, sample.holes, REFERENCE,
                 list(cut.middles), exact=True)
    out = [ref]
    for mode in MODEL_MODES:
        _cold(comp)
        probe.take()
        out.append(_fill(comp, sample, mode, config, probe))
    van = next(r for r in out if r.mode == VANILLA.name)
    out.append(_checked(sample, van))
    return out


def _cold(comp: Any) -> None:
    """Start the next fill without a reusable KV-cache prefix: the session keeps the prompt it
    shares with the previous fill, and the same sample's second mode would skip its prefill."""
    comp.fill(["\n", ""], "python", constrained=False, max_new_tokens=0)


def _fill(comp: Any, sample: Sample, mode: Mode, config: BenchConfig,
          probe: CheckProbe) -> Record:
    cut = sample.cut
    rec = Record(cut.name, sample.group, sample.language, sample.holes, mode.name,
                 [""] * sample.holes, exact=False)
    t0 = time.perf_counter()
    budget = sample.max_new_tokens or config.max_new_tokens
    try:
        res = comp.fill(list(cut.chunks), sample.language, max_new_tokens=budget,
                        top_k=config.top_k, seed=config.seed, **dict(sample.decode),
                        **mode.options)
    except HolefillError as exc:  # counted as a failure of the mode, shown in the report
        rec.error = f"{type(exc).__name__}: {exc}"[:200]
        rec.total_s = time.perf_counter() - t0
        rec.check_ms = probe.take()
        return rec
    rec.check_ms = probe.take()
    rec.fills = list(res.fills)
    rec.exact = sample.exact(rec.fills)
    rec.tokens, rec.rejected = int(res.stats["tokens"]), int(res.stats["rejected"])
    rec.model_s, rec.total_s = res.stats["model_s"], res.stats["total_s"]
    rec.verified = res.verified
    rec.ended_by = [h.ended_by for h in res.holes]
    rec.completed_by = [h.completed_by for h in res.holes]
    return rec


def _checked(sample: Sample, van: Record) -> Record:
    """Chk. from Van.'s fillings; its time is Van.'s plus the oracle runs that cut them."""
    t0 = time.perf_counter()
    cut = checked_fills(sample.cut, van.fills, oracles.fast_judge(sample.language))
    spent = time.perf_counter() - t0
    return Record(van.sample, van.group, van.language, van.holes, CHECKED.name, cut.fills,
                  exact=sample.exact(cut.fills), tokens=van.tokens,
                  rejected=van.rejected, model_s=van.model_s, total_s=van.total_s + spent,
                  ended_by=van.ended_by, completed_by=van.completed_by,
                  oracle_calls=cut.oracle_calls, error=van.error)


def judge_records(records: list[Record], samples: Sequence[Sample],
                  config: BenchConfig) -> None:
    """Fill in every record's oracle verdicts, then run the tests: g++ and the sandboxed
    Python runs in parallel, for all records at once."""
    by_name = {s.name: s for s in samples}
    for rec in records:
        cut = by_name[rec.sample].cut
        rec.valid = oracles.judge(rec.language, cut.filled(rec.fills))
        if not rec.error:  # a mode that raised filled nothing: not judged
            rec.swallowed = swallowed(rec.language, cut.chunks, cut.middles, rec.fills)
            rec.repaired = repaired(rec.language, cut.chunks, cut.middles, rec.fills)
            if rec.language == "python":
                kept = python_blocks_kept(cut.chunks, cut.middles, rec.fills)
                rec.moved = None if kept is None else not kept
    tested = [r for r in records if r.language == "python" and by_name[r.sample].test]
    if tested:
        programs = {id(r): by_name[r.sample].program(r.fills) for r in tested}
        runs = oracles.python_verdicts(programs.values(), config.run_timeout_s)
        for rec in tested:
            rec.passed = runs[programs[id(rec)]]
    cpp = [r for r in records if r.language == "cpp"]
    if not cpp or not oracles.have_gpp():
        return
    jobs = {id(r): (by_name[r.sample].program(r.fills), by_name[r.sample].test) for r in cpp}
    verdicts = oracles.gpp_verdicts(jobs.values(), config.gpp_timeout_s, config.run_timeout_s)
    for rec in cpp:
        syntax, passed = verdicts[jobs[id(rec)]]
        rec.valid["g++"], rec.passed = syntax, passed


def swallowed(language: str, chunks: Sequence[str], middles: Sequence[str],
              fills: Sequence[str]) -> bool | None:
    """Did the fillings swallow fixed code? Python only: CPython's tokenize reads the original
    file (the removed text put back) and the filled one, and a token of a chunk (but its first
    and last, which may touch a hole) that is not found unchanged in place was swallowed into
    a string or comment, or otherwise re-read. Leniently: an invalid filled file is read as
    far as CPython's tokenizer gets (holefill.bench.kept)."""
    if language != "python":
        return None
    kept = python_tokens_kept(chunks, middles, fills, lenient=True)
    return None if kept is None else not kept


def repaired(language: str, chunks: Sequence[str], middles: Sequence[str],
             fills: Sequence[str]) -> bool | None:
    """Did the fillings re-pair the user's brackets (a bracket of the fixed text that paired
    with another one of the fixed text in the original file closes or opens something else in
    the filled one; judged by CPython's tokenize for Python, by the language's own reading
    for the others; holefill.bench.kept)?"""
    if language != "python":
        return not lexed_brackets_kept(language, chunks, middles, fills)
    kept = python_brackets_kept(chunks, middles, fills)
    return None if kept is None else not kept


def _progress_line(done: int, total: int, sample: Sample, recs: Sequence[Record]) -> str:
    parts = [f"{r.mode} {r.tokens}t {r.total_s:.1f}s" for r in recs
             if r.mode not in (VANILLA.name, REFERENCE)]
    van = next((r for r in recs if r.mode == VANILLA.name), None)
    head = f"[{done}/{total}] {sample.group:<20} {sample.name[:32]:<32}"
    return head + (f" Van. {van.tokens}t {van.total_s:.1f}s | " if van else " ") + " | ".join(parts)


def log_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
