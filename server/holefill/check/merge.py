"""Adjacent holes are one hole; a check holds at most MAX_HOLES of them.

The chunks ``[a, "", b]`` have two holes with nothing between them. Their fillings ``x``
and ``y`` give the text ``a + x + y + b``; the one hole of ``[a, b]`` gives ``a + z + b``.
Every ``z`` is some ``x + y`` (``x = z``, ``y = ""``) and every ``x + y`` is some ``z``, so
both ask about the same set of texts, and so have the same answer:

- Validity is a property of the filled text alone.
- The anchors (holefill.lexing.anchors) are the same: an empty chunk has no site (no fixed
  text to keep); every other chunk keeps its site, only renumbered, because its own reading
  S is that of its own text and the document's reading D is that of the same text
  ``"".join(chunks)``, with the holes on both sides of the empty chunk at the same offset
  (so the D lexeme spanning them, which gives ``alpha_c`` and ``passes``, is the same). A
  site that a caller placed in an empty chunk (none of ours does) keeps that chunk.
- The witness of the merged hole goes to the first hole of its run, the others get "".

Without the merge, each empty chunk multiplied the lexer's and the layout product's states:
200 adjacent holes took 48 s and 1.6 GB to answer UNKNOWN. tests/check/test_budget.py
compares merged and unmerged answers.

Holes that fixed text keeps apart stay apart; a check of more than MAX_HOLES of them answers
UNKNOWN at once with the reason (their lexing alone outgrows every budget: 100 holes with a
blank between them ran the 20-million-step budget out in 6 s, and no answer came back).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from holefill.check.structure import Structure
from holefill.lexing.anchors import Anchors

MAX_HOLES = 256


@dataclass(frozen=True)
class Merged:
    """`chunks` with the empty chunks between holes taken out; `kept[k]`: the hole of the
    caller's chunks that merged hole k stands for (the first of its run); `anchors`: the
    caller's sites renumbered (None when the caller gave none)."""

    chunks: list[str]
    kept: list[int]
    anchors: Anchors | None
    holes_before: int

    @property
    def holes(self) -> int:
        return len(self.chunks) - 1

    def structure(self, structure: Structure) -> Structure:
        """The caller's structure for the merged holes: a run of adjacent holes is one hole
        for the rule too (the first one's numbers, which its neighbours share: no fixed
        bracket lies between them), one line if any of them is."""
        if structure.trivial or len(self.kept) == self.holes_before:
            return structure
        got = structure.select(self.kept)
        bounds = [*self.kept[1:], self.holes_before]
        rules = tuple(replace(r, one_line=any(structure.rules[h].one_line
                                              for h in range(k, end)))
                      for r, k, end in zip(got.rules, self.kept, bounds, strict=True))
        return replace(got, rules=rules)

    def unmerge(self, fills: Sequence[str]) -> list[str]:
        """Fillings of the caller's holes from those of the merged ones."""
        out = [""] * self.holes_before
        for k, hole in enumerate(self.kept):
            out[hole] = fills[k]
        return out


def merge_adjacent_holes(chunks: Sequence[str], anchors: Anchors | None) -> Merged:
    """The chunks with each run of adjacent holes made one (module docstring)."""
    pinned = {s.chunk for s in anchors.sites} if anchors is not None else set()
    last = len(chunks) - 1
    drop = [0 < j < last and not chunks[j] and j not in pinned for j in range(len(chunks))]
    new_index: list[int] = []
    out: list[str] = []
    for j, chunk in enumerate(chunks):
        new_index.append(len(out) - 1 if drop[j] else len(out))
        if not drop[j]:
            out.append(chunk)
    kept = [h for h in range(last) if not drop[h]]  # hole h lies after chunk h
    moved = None
    if anchors is not None:
        moved = Anchors(tuple(s.moved(new_index[s.chunk], s.base) for s in anchors.sites))
    return Merged(out, kept, moved, last)
