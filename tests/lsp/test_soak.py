"""A short soak (holefill.lsp.soak): a seeded editing session of 15 s against the real server
with the tiny random model, every invariant of the fuzzer checked. The long run is
`python benchmarks/soak_lsp.py --minutes 10`.

Memory: the engine's checker warms up over its first few dozen fills (about +250 MB,
measured in-process with `Completer.fill` alone, flat after that), which is all of a 15 s run;
so this run only guards against a runaway (growth that stays, see memory_growth_mb), and the
long run reports whether the server's memory stays flat once warm."""

from __future__ import annotations

import pytest
from lsp_testing import scaled, server_env

from holefill.lsp.soak import SoakConfig, soak
from holefill.lsp.soak_report import format_report, memory_growth_mb


@pytest.mark.asyncio
@pytest.mark.parametrize("seed", [1])
async def test_a_short_editing_session_keeps_every_invariant(tiny_model_dir, seed):
    report = await soak(SoakConfig(seed=seed, seconds=15, model=str(tiny_model_dir),
                                   drain_s=scaled(60), env=server_env()))
    print(format_report(report))
    assert report.ok, "\n".join(report.violations[:10])
    assert sum(report.sent.values()) >= 20
    assert sum(report.answered.values()) == sum(report.sent.values())
    assert report.bad_inputs > 0 and report.edits > 0
    assert memory_growth_mb(report) < 512


def test_memory_growth_ignores_one_late_sample_at_a_transient_peak_but_not_growth():
    from holefill.lsp.soak_report import Report

    mb = 1024
    peak_at_end = Report(seed=0, seconds=1, rss_kb=[(0, 400 * mb), (1, 500 * mb),
                                                    (2, 450 * mb), (3, 1200 * mb)])
    assert memory_growth_mb(peak_at_end) == 50
    growing = Report(seed=0, seconds=1, rss_kb=[(0, 400 * mb), (1, 900 * mb),
                                                (2, 1000 * mb), (3, 1100 * mb)])
    assert memory_growth_mb(growing) == 500
