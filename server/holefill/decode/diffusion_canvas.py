"""The document while a diffusion model fills it: the user's chunks, and per hole a run of
slots, each still masked, holding a token, or declared empty.

Two views of the same state:

- **the model's input**: the chunks' tokens with every run's slots in place (a masked slot
  is the mask token, an empty one the model's padding token), cut to the context;
- **the checker's partial output** (the paper's §3.1 reduction): every maximal run of masked
  slots is a hole, everything else is text, so a run whose middle was unmasked splits into
  two holes (`x □ t □ y`), and a run without masks is closed. Empty slots are no text, so
  they join the masked slots around them into one hole. The anchor sites of the user's
  chunks (computed once on the request's own text) move with them: a chunk after a hole whose
  first slots hold text lies after that text in its merged chunk.

Token text is decoded per run of neighbouring token slots, as the tokenizer decodes them
together; a run that decodes to U+FFFD (bytes of an unfinished character) has no text yet,
and the partial output of such a state is None (the loop refuses that proposal).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from holefill.lexing.anchors import Site

MASK = -1  # a slot the model has not decided yet
EMPTY = -2  # a slot the model declared empty (its padding / end token): no text


@dataclass(frozen=True)
class Segment:
    """One hole of the partial output: a maximal run of masked (and empty) slots, in hole
    `hole` from slot `start` to `end` (exclusive); `masked` of them are masks."""

    hole: int
    start: int
    end: int
    masked: int


@dataclass
class Partial:
    """The checker's view: chunks with one hole between neighbours, the anchor sites, and
    which slots each hole stands for (segments[i] is the hole after chunks[i]; a hole may
    cover several segments when only empty slots or an empty chunk lie between them)."""

    chunks: list[str]
    sites: list[Site]
    holes: list[list[Segment]] = field(default_factory=list)

    def key(self) -> tuple:
        return (tuple(self.chunks), tuple((s.chunk, s.base) for s in self.sites))


@dataclass
class Canvas:
    chunks: list[str]  # the user's text around the holes
    runs: list[list[int]]  # per hole: token ids, MASK or EMPTY
    sites: list[Site]  # anchor sites of `chunks` (one per chunk after a hole, base 0)
    decode: Callable[[Sequence[int]], str]
    frozen: frozenset[int] = frozenset()  # holes left open: their masks are never decided

    def masked(self, asked_only: bool = True) -> list[tuple[int, int]]:
        """(hole, slot) of every masked slot (of the holes being filled)."""
        return [(h, i) for h, run in enumerate(self.runs)
                if not (asked_only and h in self.frozen)
                for i, v in enumerate(run) if v == MASK]

    def with_slot(self, hole: int, slot: int, value: int) -> Canvas:
        runs = list(self.runs)
        runs[hole] = [*runs[hole][:slot], value, *runs[hole][slot + 1:]]
        return Canvas(self.chunks, runs, self.sites, self.decode, self.frozen)

    def grown(self, hole: int, slot: int, extra: int) -> Canvas:
        """`extra` more masks right after `slot` of `hole` (the hole needs more room)."""
        runs = list(self.runs)
        runs[hole] = [*runs[hole][: slot + 1], *[MASK] * extra, *runs[hole][slot + 1:]]
        return Canvas(self.chunks, runs, self.sites, self.decode, self.frozen)

    def segment_of(self, hole: int, slot: int) -> Segment:
        """The masked run around a masked slot (empty slots join it)."""
        run = self.runs[hole]
        a = slot
        while a > 0 and run[a - 1] in (MASK, EMPTY):
            a -= 1
        b = slot + 1
        while b < len(run) and run[b] in (MASK, EMPTY):
            b += 1
        return Segment(hole, a, b, sum(v == MASK for v in run[a:b]))

    # ----------------------------------------------------------------- the checker's view

    def partial(self, texts: dict[tuple[int, int], str] | None = None) -> Partial | None:
        """The partial output; ``texts`` (segment start -> text) puts text in place of the
        segments it names (the witness). None when some token run has no text yet."""
        by_chunk = {s.chunk: s for s in self.sites}
        chunks: list[str] = []
        sites: list[Site] = []
        holes: list[list[Segment]] = []
        cur = self.chunks[0]
        open_hole: list[Segment] | None = None  # the hole that ends where `cur` begins
        for h, run in enumerate(self.runs):
            for piece in pieces(h, run):
                if isinstance(piece, Segment):
                    given = None if texts is None else texts.get((h, piece.start))
                    if given is not None:
                        text = given
                    elif open_hole is not None and cur == "":
                        open_hole.append(piece)  # nothing between: the same hole
                        continue
                    else:
                        chunks.append(cur)
                        open_hole = [piece]
                        holes.append(open_hole)
                        cur = ""
                        continue
                else:
                    text = self.decode(piece) if piece else ""
                    if "\ufffd" in text:
                        return None
                if text:
                    cur += text
                    open_hole = None
            site = by_chunk.get(h + 1)
            if site is not None:
                sites.append(site.moved(len(chunks), len(cur)))
            if self.chunks[h + 1]:
                cur += self.chunks[h + 1]
                open_hole = None
        chunks.append(cur)
        return Partial(chunks, sites, holes)

    # --------------------------------------------------------------------- the fillings

    def fills(self, texts: dict[tuple[int, int], str] | None = None) -> list[str]:
        """The text of every hole's run (masks left dropped, or replaced by ``texts``)."""
        out = []
        for h, run in enumerate(self.runs):
            parts = []
            for piece in pieces(h, run):
                if isinstance(piece, Segment):
                    if texts is not None:
                        parts.append(texts.get((h, piece.start), ""))
                elif piece:
                    parts.append(self.decode(piece))
            out.append("".join(parts))
        return out


def pieces(hole: int, run: Sequence[int]) -> list[Segment | list[int]]:
    """A run cut into segments (maximal runs of masked and empty slots that hold a mask) and
    the token ids between them (empty slots there are no text)."""
    out: list[Segment | list[int]] = []
    ids: list[int] = []
    i = 0
    while i < len(run):
        if run[i] in (MASK, EMPTY):
            j = i
            while j < len(run) and run[j] in (MASK, EMPTY):
                j += 1
            masked = sum(v == MASK for v in run[i:j])
            if masked:
                if ids:
                    out.append(ids)
                    ids = []
                out.append(Segment(hole, i, j, masked))
            i = j
        else:
            ids.append(run[i])
            i += 1
    if ids:
        out.append(ids)
    return out


def witness_texts(partial: Partial, fills: Sequence[str]) -> dict[tuple[int, int], str]:
    """Witness fillings of the partial output's holes as texts of their first segments."""
    out = {}
    for segs, text in zip(partial.holes, fills, strict=True):
        first = segs[0]
        out[(first.hole, first.start)] = text
        for seg in segs[1:]:
            out[(seg.hole, seg.start)] = ""
    return out
