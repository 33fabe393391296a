"""The figures of a soak run (`holefill.lsp.soak`) and their Markdown form."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field


@dataclass
class Report:
    seed: int
    seconds: float
    steps: int = 0
    sent: Counter[str] = field(default_factory=Counter)
    answered: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)  # "method code"
    latency_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    cancel_ms: list[float] = field(default_factory=list)  # client: cancel -> answer
    slow_cancels: list[tuple[float, str]] = field(default_factory=list)  # the 3 slowest
    stop_ms: list[float] = field(default_factory=list)  # server: cancel -> job returned
    rss_kb: list[tuple[float, int]] = field(default_factory=list)
    oracle: Counter[str] = field(default_factory=Counter)
    bad_inputs: int = 0
    edits: int = 0
    exit_code: int | None = None
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def violation(self, step: int, what: str) -> None:
        self.violations.append(f"seed {self.seed} step {step}: {what}")


def percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def format_report(r: Report) -> str:
    lines = [f"seed {r.seed}, {r.seconds:.0f} s, {r.steps} steps, {r.edits} edits, "
             f"{r.bad_inputs} malformed inputs, exit status {r.exit_code}", "",
             "| request | sent | answered | p50 ms | p90 ms | p99 ms |",
             "|---|---|---|---|---|---|"]
    for method in sorted(r.sent):
        lat = r.latency_ms.get(method, [])
        lines.append(f"| {method} | {r.sent[method]} | {r.answered[method]} | "
                     f"{percentile(lat, 0.5):.0f} | {percentile(lat, 0.9):.0f} | "
                     f"{percentile(lat, 0.99):.0f} |")
    total_sent, total_answered = sum(r.sent.values()), sum(r.answered.values())
    lines += [f"| all | {total_sent} | {total_answered} | | | |", "",
              "errors by method and code: " + (", ".join(
                  f"{k}: {v}" for k, v in sorted(r.errors.items())) or "none")]
    if r.cancel_ms:
        lines.append(f"cancellation, client (cancel sent -> answer): n={len(r.cancel_ms)}, "
                     f"p50 {percentile(r.cancel_ms, 0.5):.0f} ms, "
                     f"p90 {percentile(r.cancel_ms, 0.9):.0f} ms, "
                     f"max {max(r.cancel_ms):.0f} ms; slowest: " + "; ".join(
                         f"{ms:.0f} ms {what}" for ms, what in r.slow_cancels))
    if r.stop_ms:
        lines.append(f"cancellation, server (cancel -> model job returned): n={len(r.stop_ms)}, "
                     f"p50 {percentile(r.stop_ms, 0.5):.0f} ms, "
                     f"p90 {percentile(r.stop_ms, 0.9):.0f} ms, "
                     f"max {max(r.stop_ms):.0f} ms")
    if r.rss_kb:
        rss = [kb / 1024 for _, kb in r.rss_kb]
        lines.append(f"server RSS: start {rss[0]:.0f} MB, peak {max(rss):.0f} MB, "
                     f"end {rss[-1]:.0f} MB (median {statistics.median(rss):.0f} MB, "
                     f"{len(rss)} samples)")
    lines.append("oracle on verified Fill holes of every hole: " + (", ".join(
        f"{k} {v}" for k, v in sorted(r.oracle.items())) or "none checked"))
    lines.append(f"violations: {len(r.violations)}")
    lines += [f"  - {v}" for v in r.violations[:20]]
    return "\n".join(lines)


def memory_growth_mb(r: Report) -> float:
    """Start to end RSS growth: the least of the last three samples minus the first. One
    request in flight holds hundreds of MB for a moment (a check's core search), and one
    late sample at such a moment is no growth; growth that stays shows in all three."""
    if len(r.rss_kb) < 2:
        return 0.0
    end = min(kb for _, kb in r.rss_kb[-3:])
    return (end - r.rss_kb[0][1]) / 1024
