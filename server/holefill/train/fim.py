"""The FIM transformation of Bavarian et al. 2022, "Efficient Training of Language Models to Fill
in the Middle" (arXiv:2207.14255).

With probability ``fim_rate`` a document (here: a context-sized chunk of a file) is cut into
prefix / middle / suffix and rearranged. Where it is cut is drawn from a ``SpanMix``
(``holefill.train.spans``): two uniformly random *character* positions as in the paper, or
whole lines and line ends, the shapes of completion at the cursor:

* PSM: ``<fim_prefix> prefix <fim_suffix> suffix <fim_middle> middle <|endoftext|>``
* SPM (the paper's variant, §3 / App. D): ``<fim_prefix> <fim_suffix> suffix <fim_middle> prefix
  middle <|endoftext|>``

PSM and SPM are chosen 50/50 (``spm_rate``). Otherwise the chunk stays left-to-right,
``text <|endoftext|>``. Each piece is tokenized separately, as in the paper. The loss is taken on
every token (the paper trains on the whole rearranged sequence).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from .spans import SpanMix

CHAR_ONLY = SpanMix()


@dataclass(frozen=True)
class FimIds:
    eot: int
    prefix: int
    middle: int
    suffix: int
    pad: int


def fim_example(
    text: str,
    encode: Callable[[str], list[int]],
    ids: FimIds,
    rng: random.Random,
    *,
    fim_rate: float = 0.7,
    spm_rate: float = 0.5,
    spans: SpanMix = CHAR_ONLY,
) -> tuple[list[int], str]:
    """Token ids of one training example and its kind (``"psm"``, ``"spm"`` or ``"ar"``)."""
    if rng.random() < fim_rate:
        _, (a, b) = spans.choose(text, rng)
        prefix, middle, suffix = text[:a], text[a:b], text[b:]
        p, m, s = encode(prefix), encode(middle), encode(suffix)
        if rng.random() < spm_rate:
            return [ids.prefix, ids.suffix, *s, ids.middle, *p, *m, ids.eot], "spm"
        return [ids.prefix, *p, ids.suffix, *s, ids.middle, *m, ids.eot], "psm"
    return [*encode(text), ids.eot], "ar"
