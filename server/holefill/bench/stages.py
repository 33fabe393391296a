"""Where the incremental engine's time goes: wall time per stage, by wrapping the functions of
each stage while the profile is open (holefill.check.incremental, the window, the segments,
the anchors, and the classic check the engine falls back to).

Times are exclusive: a stage called inside another (a right context's new entry, built while
the junction is built) counts in the inner stage only, so the stages of a phase add up to at
most the phase's time; the rest is "other" (the Python around them). The caller names the
phase it times (`with stages.phase("prep"): ...`); wrapping costs about a microsecond per call.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

OTHER = "other (Python between the stages)"


def _targets() -> list[tuple[Any, str, str]]:
    """(owner, attribute, label) of every stage timed."""
    from holefill.check import incremental as inc
    from holefill.check import segments, window
    from holefill.check.checker import Checker

    return [
        (window, "find_window", "request: find the window"),
        (segments, "split_segments", "request: split into segments"),
        (Checker, "anchors", "request: anchors of the fixed text"),
        (inc.LeftParse, "set_text", "left: lex + layout + Earley"),
        (inc.RightContext, "__init__", "right: lexer with holes (raw graph)"),
        (inc.RightContext, "_build", "right: product + closure (new entry)"),
        (inc.RightContext, "_grow", "right: product + closure (new entry)"),
        (inc, "build_junction", "junction (without new entries)"),
        (inc.NativeParser, "query", "query (Up tables + exits)"),
        (Checker, "check", "classic check (fallback; window sweep)"),
    ]


class Stages:
    """Exclusive wall time (ms) per (phase, stage) of the calls made inside a phase while
    the context is open."""

    def __init__(self) -> None:
        self.ms: dict[tuple[str, str], float] = defaultdict(float)
        self.phase_ms: dict[str, float] = defaultdict(float)
        self.current = ""
        self._stack: list[float] = []  # time spent in stages called by each open stage
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, name: str, label: str) -> None:
        own = vars(owner).get(name)
        inner = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if not self.current:  # outside every phase: not profiled
                return inner(*args, **kwargs)
            self._stack.append(0.0)
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent = (time.perf_counter() - t0) * 1e3
                nested = self._stack.pop()
                self.ms[self.current, label] += spent - nested
                if self._stack:
                    self._stack[-1] += spent

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, own) if own is not None
                          else delattr(owner, name))

    def __enter__(self) -> Stages:
        for owner, name, label in _targets():
            self.wrap(owner, name, label)
        return self

    def __exit__(self, *exc: object) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Count the stages called inside under `name`, and the block's whole time."""
        outer, self.current = self.current, name
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.phase_ms[name] += (time.perf_counter() - t0) * 1e3
            self.current = outer

    def rows(self) -> list[tuple[str, str, float, float]]:
        """(phase, stage, ms, % of the phase) by phase, largest first, with the phase's
        "other" (its time outside every stage) where the phase was timed."""
        out: list[tuple[str, str, float, float]] = []
        for phase in dict.fromkeys([p for p, _ in self.ms] + list(self.phase_ms)):
            staged = {s: ms for (p, s), ms in self.ms.items() if p == phase}
            total = self.phase_ms.get(phase, sum(staged.values()))
            if phase in self.phase_ms:
                staged[OTHER] = max(0.0, total - sum(staged.values()))
            for stage, ms in sorted(staged.items(), key=lambda kv: -kv[1]):
                out.append((phase, stage, ms, 100 * ms / total if total else 0.0))
        return out

    def lines(self) -> list[str]:
        return [f"  {phase:<6} {stage:<42} {ms:9.1f} ms {pct:5.1f}%"
                for phase, stage, ms, pct in self.rows()]
