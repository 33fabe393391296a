"""From per-sample records to the numbers of the report: one row per group (or language) and
mode. Ratios compare a mode with Van. on the same samples of the same run."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from .modes import MODES, VANILLA
from .oracles import ORACLES
from .runner import REFERENCE, Record

ROW_MODES = (REFERENCE, *(m.name for m in MODES))


def percentile(xs: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) with linear interpolation; nan for no data."""
    if not xs:
        return math.nan
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else math.nan


def share(flags: Sequence[bool | None]) -> float:
    """Percent True among the judged (None: not judged)."""
    judged = [f for f in flags if f is not None]
    return 100.0 * sum(judged) / len(judged) if judged else math.nan


def count(flags: Sequence[bool | None]) -> int | None:
    """How many True among the judged; None when none was judged."""
    judged = [f for f in flags if f is not None]
    return sum(judged) if judged else None


def rows(records: Sequence[Record], key: Callable[[Record], str]) -> list[dict[str, Any]]:
    """One row per (key, mode), in first-seen key order and report mode order."""
    keys = list(dict.fromkeys(key(r) for r in records))
    out = []
    for k in keys:
        mine = [r for r in records if key(r) == k]
        van = {r.sample: r for r in mine if r.mode == VANILLA.name}
        for mode in ROW_MODES:
            recs = [r for r in mine if r.mode == mode]
            if recs:
                out.append({"key": k, "mode": mode, **row(recs, [van[r.sample] for r in recs
                                                                 if r.sample in van])})
    return out


def row(recs: Sequence[Record], van: Sequence[Record]) -> dict[str, Any]:
    language = recs[0].language
    checks = [t for r in recs for t in r.check_ms]
    generating = [r for r in recs if r.tokens]
    out: dict[str, Any] = {
        "language": language,
        "n": len(recs),
        "errors": sum(bool(r.error) for r in recs),
        **{f"valid {o}": share([r.valid.get(o) for r in recs]) for o in ORACLES[language]},
        # the loop's own promise: a result it marks verified is valid (DESIGN §2)
        **{f"valid {o} if verified": share([r.valid.get(o) for r in recs if r.verified])
           for o in ORACLES[language]},
        "exact": share([r.exact for r in recs]),
        "pass": share([r.passed for r in recs]),
        # fills that swallowed fixed code (Python: CPython's tokenize; None: not judged)
        "swallowed": count([r.swallowed for r in recs]),
        "repaired": count([r.repaired for r in recs]),
        "moved": count([r.moved for r in recs]),
        "tokens": statistics.mean(r.tokens for r in recs),
        "rejected": statistics.mean(r.rejected for r in recs),
        "witness": share([bool(r.completed_by) and "witness" in r.completed_by for r in recs]),
        "unverified": share([not r.verified for r in recs]),
        "check_ms_per_token": median([sum(r.check_ms) / r.tokens for r in generating
                                      if r.check_ms]),
        "check_ms_p50": percentile(checks, 0.5),
        "check_ms_p90": percentile(checks, 0.9),
        "check_ms_p99": percentile(checks, 0.99),
        "checks": len(checks),
        "model_ms_per_token": median([1e3 * r.model_s / r.tokens for r in generating]),
        "e2e_s_median": median([r.total_s for r in recs]),
        "e2e_s_total": sum(r.total_s for r in recs),
        **overhead(recs, van),
    }
    return out


def overhead(recs: Sequence[Record], van: Sequence[Record]) -> dict[str, float]:
    """Constrained / unconstrained, on the same samples: end-to-end time of all samples, and
    time per generated token (model + checks, against Van.'s model time)."""
    if not van or recs[0].mode == REFERENCE:
        return {"overhead_e2e": math.nan, "overhead_per_token": math.nan}
    van_s = sum(r.total_s for r in van)
    van_tok = sum(r.tokens for r in van)
    tok = sum(r.tokens for r in recs)
    spent = sum(r.model_s for r in recs) + sum(sum(r.check_ms) for r in recs) / 1e3
    mine = spent / tok if tok else math.nan
    base = sum(r.model_s for r in van) / van_tok if van_tok else math.nan
    return {
        "overhead_e2e": sum(r.total_s for r in recs) / van_s if van_s else math.nan,
        "overhead_per_token": mine / base if base else math.nan,
    }


def paired(records: Sequence[Record], key: Callable[[Record], str], mode: str,
           base: str = VANILLA.name) -> dict[str, dict[str, int]]:
    """Per key: on how many samples ``mode`` passes the tests where ``base`` fails (gains), and
    the reverse (losses), counting only samples whose tests ran in both modes."""
    out: dict[str, dict[str, int]] = {}
    runs = {(key(r), r.sample, r.mode): r.passed for r in records if r.passed is not None}
    for (k, sample, m), passed in runs.items():
        if m != mode or (k, sample, base) not in runs:
            continue
        other = runs[k, sample, base]
        row = out.setdefault(k, {"n": 0, "gains": 0, "losses": 0})
        row["n"] += 1
        row["gains"] += passed and not other
        row["losses"] += other and not passed
    return out
