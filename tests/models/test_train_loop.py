"""The training loop's bookkeeping: data phases across --resume, the fixed held-out rows.

Data: a few standard-library files as chunks, encoded with the bundled model's tokenizer.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest

from holefill.models import default_model_path
from holefill.train.loop import _phase_data, fim_ids, raw_encoder, validation_rows

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")


def _opts(**given: object) -> SimpleNamespace:
    base = {"packing": None, "example_chars": None, "span_mix": None, "fim_rate": None}
    return SimpleNamespace(**{**base, **given})


def test_a_fresh_run_takes_the_defaults_and_normalizes_the_span_mix() -> None:
    assert _phase_data(_opts()) == {"packing": "split", "example_chars": 0,
                                    "span_mix": "char=1", "fim_rate": 0.7}
    ph = _phase_data(_opts(span_mix="line=3,char=1", fim_rate=0.9))
    assert ph["span_mix"] == "line=3,char=1" and ph["fim_rate"] == 0.9


def test_a_plain_resume_keeps_the_last_phase_and_a_new_option_changes_only_itself() -> None:
    last = {"packing": "whole", "example_chars": 1200, "span_mix": "char=0.5,line=0.5",
            "fim_rate": 0.9}
    assert _phase_data(_opts(), last) == last
    changed = _phase_data(_opts(span_mix="lines=1"), last)
    assert changed == {**last, "span_mix": "lines=1"}


@pytest.fixture(scope="module")
def encoded() -> tuple:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(default_model_path()), local_files_only=True)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    chunks = [p.read_text(encoding="utf-8")[:1500] for p in sorted(stdlib.glob("*.py"))[:30]]
    return chunks, raw_encoder(default_model_path()), fim_ids(tok)


def test_held_out_rows_are_fixed_and_differ_by_cut_kind(encoded: tuple) -> None:
    chunks, encode, ids = encoded
    args = SimpleNamespace(ctx=256, seed=0, val_rows=6)
    char = validation_rows(chunks, encode, ids, args, "char")
    assert char == validation_rows(chunks, encode, ids, args, "char")
    line = validation_rows(chunks, encode, ids, args, "line")
    assert line != char
    assert all(len(r) == 256 for r in char + line)
    assert sum(r.count(ids.middle) for r in line) > 0  # FIM examples are in the rows


def test_a_cooldown_decays_from_the_current_rate_and_keeps_the_earlier_steps_rates() -> None:
    from holefill.train.loop import lr_at

    args = SimpleNamespace(lr=1e-3, min_lr=1e-4, warmup=10, steps=1000, cycles=[])
    before = [lr_at(s, args) for s in range(0, 400, 7)]
    now = lr_at(400, args)
    args.cycles = [{"start": 400, "end": 500, "lr": now, "warmup": 0, "planned_end": 1000}]
    args.steps = 500
    assert [lr_at(s, args) for s in range(0, 400, 7)] == before
    assert lr_at(400, args) == pytest.approx(now)
    rates = [lr_at(s, args) for s in range(400, 500)]
    assert all(a >= b for a, b in zip(rates, rates[1:], strict=False))
    assert rates[-1] == pytest.approx(1e-4, rel=0.01)
