"""A deterministic, resumable stream of packed FIM training rows.

Example ``k`` is chunk ``perm_e[k mod N]`` (``perm_e`` a seeded permutation for epoch
``e = k // N``) transformed with an RNG seeded by ``(seed, k)``. Two packings:

* ``split``: examples are concatenated and cut into rows of ``ctx`` tokens (an example may straddle
  two rows: then the middle of a PSM example can land in a row without its prefix);
* ``whole``: each row holds whole examples only (an example that does not fit starts the next row;
  one longer than ``ctx`` is truncated); the rest of the row is padding, left out of the loss.

The whole state is ``(next_example, buffer)``, saved in checkpoints, so a resumed run sees exactly
the rows an uninterrupted run would have seen.
"""

from __future__ import annotations

import random
from collections import Counter

from .fim import CHAR_ONLY, FimIds, fim_example
from .spans import SpanMix


class FimStream:
    def __init__(
        self,
        chunks: list[str],
        encode,
        ids: FimIds,
        *,
        ctx: int,
        seed: int,
        fim_rate: float,
        spm_rate: float,
        packing: str = "split",
        spans: SpanMix = CHAR_ONLY,
    ) -> None:
        if packing not in ("split", "whole"):
            raise ValueError(f"unknown packing {packing!r}")
        self.packing = packing
        if not chunks:
            raise ValueError("no training chunks")
        self.chunks = chunks
        self.encode = encode
        self.ids = ids
        self.ctx = ctx
        self.seed = seed
        self.fim_rate = fim_rate
        self.spm_rate = spm_rate
        self.spans = spans
        self.next_example = 0
        self.buffer: list[int] = []
        self.kinds: Counter[str] = Counter()
        self._perm_epoch = -1
        self._perm: list[int] = []

    def _perm_for(self, epoch: int) -> list[int]:
        if epoch != self._perm_epoch:
            perm = list(range(len(self.chunks)))
            random.Random(self.seed * 1_000_003 + epoch).shuffle(perm)
            self._perm, self._perm_epoch = perm, epoch
        return self._perm

    def example(self, k: int) -> list[int]:
        n = len(self.chunks)
        idx = self._perm_for(k // n)[k % n]
        rng = random.Random(self.seed * 1_000_000_007 + k)
        ids, kind = fim_example(
            self.chunks[idx], self.encode, self.ids, rng,
            fim_rate=self.fim_rate, spm_rate=self.spm_rate, spans=self.spans,
        )
        self.kinds[kind] += 1
        return ids

    def rows(self, batch: int) -> list[list[int]]:
        """``batch`` rows of ``ctx`` token ids (``whole`` packing pads with ``ids.pad``)."""
        if self.packing == "whole":
            return [self._whole_row() for _ in range(batch)]
        need = batch * self.ctx
        while len(self.buffer) < need:
            self.buffer.extend(self.example(self.next_example))
            self.next_example += 1
        out = [self.buffer[i * self.ctx : (i + 1) * self.ctx] for i in range(batch)]
        self.buffer = self.buffer[need:]
        return out

    def _whole_row(self) -> list[int]:
        row: list[int] = []
        while True:
            if not self.buffer:
                self.buffer = self.example(self.next_example)[: self.ctx]
                self.next_example += 1
            if len(row) + len(self.buffer) > self.ctx:
                break
            row.extend(self.buffer)
            self.buffer = []
        return row + [self.ids.pad] * (self.ctx - len(row))

    def state(self) -> dict:
        return {"next_example": self.next_example, "buffer": list(self.buffer)}

    def load_state(self, st: dict) -> None:
        self.next_example = int(st["next_example"])
        self.buffer = list(st["buffer"])
