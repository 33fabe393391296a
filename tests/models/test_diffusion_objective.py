"""The masked-diffusion training examples (holefill.train.diffusion) on real code with a
character-level encoding: what is masked, what the loss sees, what stays fixed."""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path

from holefill.train.diffusion import IGNORE, MdmIds, denoise_example, infill_example

IDS = MdmIds(mask=1, pad=2)
TEXT = (Path(sysconfig.get_paths()["stdlib"]) / "colorsys.py").read_text()[:1200]


def encode(text: str) -> list[int]:
    return [10 + ord(ch) for ch in text]


def test_infill_examples_mask_only_hole_slots_and_keep_the_code_around_them() -> None:
    rng = random.Random(0)
    made = 0
    for _ in range(200):
        ex = infill_example(TEXT, encode, IDS, rng, ctx=400)
        if ex is None:
            continue
        made += 1
        assert len(ex.ids) == len(ex.targets) <= 400
        masked = [i for i, t in enumerate(ex.ids) if t == IDS.mask]
        assert masked and masked == [i for i, t in enumerate(ex.targets) if t != IGNORE]
        assert all(ex.targets[i] >= 10 or ex.targets[i] == IDS.pad for i in masked)
        assert len(masked) <= ex.slots and ex.weight >= 1.0
        # unmasked positions, pads removed, read as a contiguous piece of the source text
        # cut at most at 3 places: everything outside the holes is the file's own text
        fixed = "".join(chr(t - 10) for t in ex.ids if t >= 10)
        assert all(piece in TEXT for piece in _pieces(ex.ids))
        assert len(fixed) > 0
    assert made > 50


def _pieces(ids: list[int]) -> list[str]:
    out, cur = [], []
    for t in ids:
        if t >= 10:
            cur.append(chr(t - 10))
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def test_denoise_examples_are_the_text_with_some_tokens_masked() -> None:
    rng = random.Random(1)
    ex = denoise_example(TEXT, encode, IDS, rng, ctx=300)
    assert ex is not None and len(ex.ids) == 300 == ex.slots
    clean = [t if t != IDS.mask else ex.targets[i] for i, t in enumerate(ex.ids)]
    assert "".join(chr(t - 10) for t in clean) in TEXT
    assert any(t == IDS.mask for t in ex.ids)
