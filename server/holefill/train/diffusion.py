"""The masked-diffusion objective (MDLM / LLaDA: Sahoo et al. 2024, Nie et al. 2025) in the
shape holefill decodes with it: holes of masked positions inside fixed code.

Two kinds of examples, both one row each:

* **infill** (``infill_rate``): a chunk of code is cut at 1-3 pairs of random *character*
  positions (as a user's holes fall anywhere, mid-word included), each piece tokenized on its
  own (as decoding encodes the text around a hole), and every removed middle becomes a run of
  slots: its tokens followed by a random number of ``<fim_pad>`` slots that stand for "no text
  here" (decoding starts each hole with a fixed number of masks; pads are how the model says
  the hole is shorter). With a noise level t ~ U(t_min, 1) each slot is masked with
  probability t (at least one); the loss is taken on the masked slots only, weighted 1/t. The
  text around the holes is never masked: it is what the model conditions on.
* **denoise**: a run of tokens of the chunk, each masked with probability t, the same loss:
  the plain LLaDA pre-training objective, for the language itself.

Every example is trimmed to ``ctx`` tokens by dropping text from the far ends of the first
and last pieces (decoding trims its context the same way). Rows of a batch are padded with
``<fim_pad>`` and a keep-mask that no position attends to.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

IGNORE = -100


@dataclass(frozen=True)
class MdmIds:
    mask: int
    pad: int  # also the "empty slot" token


@dataclass
class Example:
    ids: list[int]  # the noised input
    targets: list[int]  # the clean token at masked positions, IGNORE elsewhere
    weight: float  # 1 / t
    slots: int  # positions the noise could have masked (the loss is normalised by these)


def _spans(n: int, k: int, rng: random.Random, max_len: int) -> list[tuple[int, int]] | None:
    """k sorted, non-overlapping character spans of length 0..max_len in a text of n
    characters (a zero-length span is a hole that should stay empty)."""
    for _ in range(20):
        out = []
        for _ in range(k):
            length = rng.randint(0, max_len) if rng.random() > 0.05 else 0
            a = rng.randint(0, max(0, n - length))
            out.append((a, a + length))
        out.sort()
        if all(out[i][1] < out[i + 1][0] for i in range(k - 1)):
            return out
    return None


def _noise(slots: list[int], rng: random.Random, t_min: float) -> tuple[float, list[bool]]:
    t = rng.uniform(t_min, 1.0)
    masked = [rng.random() < t for _ in slots]
    if slots and not any(masked):
        masked[rng.randrange(len(slots))] = True
    return t, masked


def infill_example(text: str, encode: Callable[[str], list[int]], ids: MdmIds,
                   rng: random.Random, *, ctx: int, max_holes: int = 3,
                   max_span_chars: int = 120, max_extra: int = 16,
                   t_min: float = 0.02) -> Example | None:
    k = rng.randint(1, max_holes)
    spans = _spans(len(text), k, rng, max_span_chars)
    if spans is None:
        return None
    pieces, middles, pos = [], [], 0
    for a, b in spans:
        pieces.append(text[pos:a])
        middles.append(text[a:b])
        pos = b
    pieces.append(text[pos:])
    fixed = [encode(p) for p in pieces]
    runs = [encode(m) + [ids.pad] * rng.randint(0, max_extra) for m in middles]
    runs = [r if r else [ids.pad] for r in runs]
    n_slots = sum(len(r) for r in runs)
    if n_slots >= ctx:
        return None
    room = ctx - n_slots - sum(len(f) for f in fixed[1:-1])
    if room < 0:
        return None
    first, last = fixed[0], fixed[-1]
    while len(first) + len(last) > room:  # trim the far ends, the longer side first
        if len(first) >= len(last):
            first = first[1:]
        else:
            last = last[:-1]
    fixed = [first, *fixed[1:-1], last]
    flat = [s for r in runs for s in r]
    t, masked = _noise(flat, rng, t_min)
    seq, targets, i = list(fixed[0]), [IGNORE] * len(fixed[0]), 0
    for run, after in zip(runs, fixed[1:], strict=True):
        for tok in run:
            seq.append(ids.mask if masked[i] else tok)
            targets.append(tok if masked[i] else IGNORE)
            i += 1
        seq += after
        targets += [IGNORE] * len(after)
    return Example(seq, targets, 1.0 / t, len(flat))


def denoise_example(text: str, encode: Callable[[str], list[int]], ids: MdmIds,
                    rng: random.Random, *, ctx: int, t_min: float = 0.02) -> Example | None:
    toks = encode(text)
    if not toks:
        return None
    if len(toks) > ctx:
        a = rng.randrange(len(toks) - ctx + 1)
        toks = toks[a:a + ctx]
    t, masked = _noise(toks, rng, t_min)
    seq = [ids.mask if m else tok for tok, m in zip(toks, masked, strict=True)]
    targets = [tok if m else IGNORE for tok, m in zip(toks, masked, strict=True)]
    return Example(seq, targets, 1.0 / t, len(toks))


class MdmStream:
    """A deterministic, resumable stream of examples: example k uses chunk perm_e[k mod N]
    and an RNG seeded by (seed, k), so a resumed run sees what an uninterrupted one would."""

    def __init__(self, chunks: list[str], encode: Callable[[str], list[int]], ids: MdmIds, *,
                 ctx: int, seed: int, infill_rate: float = 0.75) -> None:
        if not chunks:
            raise ValueError("no training chunks")
        self.chunks, self.encode, self.ids = chunks, encode, ids
        self.ctx, self.seed, self.infill_rate = ctx, seed, infill_rate
        self.next_example = 0
        self._perm_epoch = -1
        self._perm: list[int] = []

    def _chunk(self, k: int) -> str:
        n = len(self.chunks)
        epoch = k // n
        if epoch != self._perm_epoch:
            self._perm = list(range(n))
            random.Random(self.seed * 1_000_003 + epoch).shuffle(self._perm)
            self._perm_epoch = epoch
        return self.chunks[self._perm[k % n]]

    def example(self) -> Example:
        while True:
            k = self.next_example
            self.next_example += 1
            rng = random.Random(self.seed * 1_000_000_007 + k)
            text = self._chunk(k)
            ex = (infill_example(text, self.encode, self.ids, rng, ctx=self.ctx)
                  if rng.random() < self.infill_rate
                  else denoise_example(text, self.encode, self.ids, rng, ctx=self.ctx))
            if ex is not None and ex.slots:
                return ex

    def batch(self, size: int) -> list[Example]:
        return [self.example() for _ in range(size)]

    def state(self) -> dict:
        return {"next_example": self.next_example}

    def load_state(self, st: dict) -> None:
        self.next_example = int(st["next_example"])


def collate(batch: list[Example], pad: int) -> tuple:
    """Tensors (ids, targets, keep, weights, slots) of a padded batch."""
    import torch

    width = max(len(e.ids) for e in batch)
    ids = torch.full((len(batch), width), pad, dtype=torch.long)
    targets = torch.full((len(batch), width), IGNORE, dtype=torch.long)
    keep = torch.zeros((len(batch), width), dtype=torch.bool)
    for i, e in enumerate(batch):
        n = len(e.ids)
        ids[i, :n] = torch.tensor(e.ids)
        targets[i, :n] = torch.tensor(e.targets)
        keep[i, :n] = True
    weights = torch.tensor([e.weight for e in batch])
    slots = sum(e.slots for e in batch)
    return ids, targets, keep, weights, slots


def mdm_loss(model, ids, targets, keep, weights, slots: int):
    """Sum over masked positions of cross-entropy / t, divided by the maskable positions:
    the MDLM bound per token. Logits are computed only where there is a target."""
    import torch.nn.functional as F

    h = model.features(ids, keep)
    where = targets != IGNORE
    logits = model.project(h[where])
    ce = F.cross_entropy(logits.float(), targets[where], reduction="none")
    w = weights[:, None].expand_as(targets)[where]
    return (ce * w).sum() / max(1, slots), ce.detach(), logits.detach().argmax(-1) == \
        targets[where]
