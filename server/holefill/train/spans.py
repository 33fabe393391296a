"""Where a FIM training example is cut: the span that becomes the middle.

Bavarian et al. 2022 cut at two uniformly random *characters*. Completion at the cursor, and the
HumanEval-Infilling benchmarks of the same paper, cut elsewhere too: *single-line* removes one
whole line, *multi-line* a run of whole lines (indentation and line break belong to the middle),
*random-span* any characters. A model trained only on character cuts seldom learns where a
line or a block ends, so it runs on past the hole. ``SpanMix`` draws the cut kind per example:

* ``char``: two uniform random character positions (the paper's transformation);
* ``line``: one whole non-blank line, from its first column through its line break;
* ``lines``: 2-8 consecutive whole lines, starting at a non-blank line;
* ``line-end``: from a random column inside a non-blank line (after its indentation) to the end
  of that line (the line break stays in the suffix): the usual inline completion at the cursor.

A text without a usable line falls back to ``char``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

Span = tuple[int, int]
KINDS = ("char", "line", "lines", "line-end")


def char_span(text: str, rng: random.Random) -> Span:
    a, b = sorted((rng.randint(0, len(text)), rng.randint(0, len(text))))
    return a, b


def _line_starts(text: str) -> list[int]:
    """The offset of every line start (the last line may lack a line break)."""
    starts = [0]
    pos = text.find("\n")
    while pos >= 0 and pos + 1 < len(text):
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def _line_end(text: str, start: int) -> int:
    """The offset just after the line break of the line at ``start`` (or the text's end)."""
    nl = text.find("\n", start)
    return len(text) if nl < 0 else nl + 1


def _code_lines(text: str, starts: list[int]) -> list[int]:
    """Indices (into ``starts``) of the lines holding more than blanks."""
    return [i for i, s in enumerate(starts) if text[s:_line_end(text, s)].strip()]


def line_span(text: str, rng: random.Random) -> Span | None:
    starts = _line_starts(text)
    code = _code_lines(text, starts)
    if not code:
        return None
    s = starts[rng.choice(code)]
    return s, _line_end(text, s)


def lines_span(text: str, rng: random.Random, most: int = 8) -> Span | None:
    starts = _line_starts(text)
    code = _code_lines(text, starts)
    if len(starts) < 3 or not code:
        return None
    first = rng.choice(code)
    count = rng.randint(2, most)
    last = min(len(starts) - 1, first + count - 1)
    return starts[first], _line_end(text, starts[last])


def line_end_span(text: str, rng: random.Random) -> Span | None:
    starts = _line_starts(text)
    code = _code_lines(text, starts)
    if not code:
        return None
    s = starts[rng.choice(code)]
    end = _line_end(text, s)
    body = text[s:end].rstrip("\n")
    indent = len(body) - len(body.lstrip())
    a = s + rng.randint(indent, max(indent, len(body) - 1))
    return a, s + len(body)


_CHOOSERS: dict[str, Callable[[str, random.Random], Span | None]] = {
    "char": char_span, "line": line_span, "lines": lines_span, "line-end": line_end_span,
}


@dataclass(frozen=True)
class SpanMix:
    """Weights of the cut kinds; ``SpanMix.parse("char=0.4,line=0.3,lines=0.3")``."""

    weights: tuple[tuple[str, float], ...] = (("char", 1.0),)

    @staticmethod
    def parse(spec: str) -> SpanMix:
        out = []
        for part in spec.split(","):
            if not part.strip():
                continue
            kind, _, weight = part.partition("=")
            kind = kind.strip()
            if kind not in KINDS:
                raise ValueError(f"unknown span kind {kind!r}; use {', '.join(KINDS)}")
            out.append((kind, float(weight) if weight else 1.0))
        if not out or sum(w for _, w in out) <= 0:
            raise ValueError(f"span mix {spec!r} has no positive weight")
        return SpanMix(tuple(out))

    def __str__(self) -> str:
        return ",".join(f"{k}={w:g}" for k, w in self.weights)

    def choose(self, text: str, rng: random.Random) -> tuple[str, Span]:
        """The cut kind drawn for this example and its span [a, b)."""
        kinds = [k for k, _ in self.weights]
        # one kind draws nothing here, so a char-only mix replays the paper's stream exactly
        kind = kinds[0] if len(kinds) == 1 else rng.choices(
            kinds, weights=[w for _, w in self.weights])[0]
        span = _CHOOSERS[kind](text, rng)
        if span is None:
            return "char", char_span(text, rng)
        return kind, span
