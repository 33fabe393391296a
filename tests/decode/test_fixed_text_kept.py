"""Constrained fills keep the user's code: CPython's tokenizer finds every token of the fixed
text (but the first and last of each chunk) unchanged, in place, in 100% of fills.

Data: standard-library files with 1-3 deleted spans (random and boundary cuts) and 1-2
mid-line cursors, filled by the tiny random-weight model (tests/conftest.py) and by the
bundled model. The judge is CPython's `tokenize` (holefill.bench.kept), never our lexer. The
issue this pins down: fills that stayed valid by turning fixed code into a string or a
comment (6 of 14 held-out fills did).
"""

from __future__ import annotations

import pytest

from holefill import Checker
from holefill.bench.kept import python_tokens_kept
from holefill.bench.oracles import python_valid
from holefill.datasets import python_cuts

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from holefill.decode import Completer, NotCompletable  # noqa: E402


def sample() -> list:
    cuts = [*python_cuts("cursor", 8, seed=31, max_lines=200),
            *python_cuts("cursor", 3, seed=32, holes=2, max_lines=200),
            *python_cuts("span", 6, seed=33, max_lines=200),
            *python_cuts("boundary", 4, seed=34, max_lines=200),
            *python_cuts("span", 3, seed=35, holes=2, max_lines=200),
            *python_cuts("span", 2, seed=36, holes=3, max_lines=200)]
    checker = Checker.for_language("python")
    # cuts whose removed text itself changed the reading around it (it opened a string the
    # text after closes) have no filling that keeps it: they are refused, not judged here
    return [c for c in cuts if checker.keeps_place(c.chunks, c.middles)]


def _fill_all(completer: Completer, **options) -> list[str]:
    swallowed, refused, n = [], 0, 0
    for c in sample():
        try:
            res = completer.fill(c.chunks, "python", **options)
        except NotCompletable:
            refused += 1
            continue
        n += 1
        assert python_valid(c.filled(res.fills)), (c.name, res.fills)
        if not python_tokens_kept(c.chunks, c.middles, res.fills):
            swallowed.append((c.name, res.fills))
    print(f"\n{n} fills, {refused} refused, {len(swallowed)} changed fixed tokens")
    assert refused == 0  # the removed text is a filling that keeps the reading
    return swallowed


def test_random_model_fills_never_change_the_users_tokens(tiny_model_dir) -> None:
    completer = Completer(model=tiny_model_dir, device="cpu", threads=1)
    assert _fill_all(completer, max_new_tokens=12, top_k=4) == []


def test_bundled_model_fills_never_change_the_users_tokens() -> None:
    completer = Completer(device="cpu", threads=1)
    assert _fill_all(completer, max_new_tokens=12, top_k=4) == []
