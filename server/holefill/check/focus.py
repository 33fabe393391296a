"""The focus of a check: the fixed text next to the hole being filled, between two open holes.

A request with several holes checks, for every token of one hole, whether the whole document
can still be completed. With three holes in one function, or a first hole that leaves a brace
open in a 10,000-line C++ file, that question spans every later hole and all the text between
them; the incremental engine's right context then ran out of its budget and every token paid
the classic check (0.3-2 s). Most of that text does not matter for the hole being filled:

**Lemma (a hole splits the document).** Let the language's start symbol derive every
concatenation `A "\\n\\n" B` of two sentences A and B (Python's `stmt*`, a C or C++ translation
unit's `_top*`; not JSON's single value). Then a text `X h Y` with an open hole h between
X and Y (X, Y texts with holes) is completable iff `X h` and `h Y` are both completable, where
`X h` ends with the hole and `h Y` starts with it.

- Only if: a filling f of the whole (and of X's and Y's own holes) completes `X h` with
  h := f + Y (filled), and `h Y` with h := X (filled) + f; each lexing is the whole's, so the
  anchor sites (holefill.lexing.anchors), which concern positions inside the fixed chunks,
  hold as in the whole.
- If: let E complete `X h` (X filled, then E) and P complete `h Y` (P, then Y filled). Fill h
  with `E "\\n\\n" P`. The first part is the sentence X E: a valid program ends at a lexeme
  boundary and with every bracket, string, comment and block closed, so two line breaks
  after it start a new logical line at column 0 (two, so that a directive whose last line
  ends in a backslash is ended by the second). From a line start at depth 0 the lexer reads P
  Y as it does at the start of a file (Python: P's first line is at column 0, or P Y would
  not be a program; C/C++: a directive is read at any line start), so the whole reads as the
  two sentences one after the other, which the start symbol derives. Every lexeme of fixed
  text is read as in `X h` or in `h Y`, so the anchor sites hold.

Applied at every open hole, the document is completable iff each piece of fixed text between
two consecutive open holes is completable on its own, with the holes at its ends. While one
hole is filled only the piece around it changes; the others were answered (implicitly) by
the request's first check of the whole document, which the decoder runs before its first
token. So each token's check looks at the hole's own piece: the text from the previous open
hole (or the document's start) to the next open hole (or the document's end). The
incremental engine then sees one hole with only its fixed text after it, and an open hole at
the end, whatever the number of holes, and its right context stops at the next hole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from holefill.lexing.anchors import Site

# Languages whose start symbol derives `A "\n\n" B` for any two sentences A and B.
SPLITTABLE = frozenset({"python", "c", "cpp"})


@dataclass(frozen=True)
class Focus:
    """The piece of a text with holes around chunks lo..hi: `chunks` (an empty chunk before
    when an open hole precedes chunk lo, and after when one follows chunk hi), `sites` renumbered
    by chunk of the piece, and `shift` (1 when the piece starts with a hole) to map a hole's
    number in the text to its number in the piece."""

    chunks: list[str]
    sites: list[Site]
    shift: int
    lo: int
    hi: int


def focus(chunks: Sequence[str], sites: Sequence[Site], lo: int, hi: int) -> Focus:
    """The piece of `chunks` (a hole between each two) made of chunks lo..hi and the open holes
    around them (see the module docstring)."""
    n = len(chunks)
    if not 0 <= lo <= hi < n:
        raise ValueError(f"chunks {lo}..{hi} of a text of {n} chunks")
    shift = 1 if lo > 0 else 0
    piece = [""] * shift + list(chunks[lo:hi + 1]) + ([""] if hi < n - 1 else [])
    kept = [s.moved(s.chunk - lo + shift, s.base) for s in sites if lo <= s.chunk <= hi]
    return Focus(piece, kept, shift, lo, hi)

