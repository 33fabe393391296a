"""The decoding modes compared side by side.

- Van. : the model unconstrained.
- Con.-: constrained, no witness completion: when the model stalls or runs out of tokens the
  filling stays as it is (`on_stuck="stop"`), so the output may be incomplete.
- Con. : constrained, completed by the checker's witness when the model did not close a hole.
  The text outside the holes keeps its reading (holefill.lexing.anchors): no filling may turn
  the user's code into string or comment content.
- Con.p: Con. with the plain grammar semantics of the papers (`anchored=False`): any filling
  after which the file parses, including one that swallows fixed code into a string.
- Con.l: Con. with the lexical rule only (`structured=False`): the reading of the fixed text
  is kept, its structure (bracket partners, lines the user's code goes on) is not
  (holefill.check.structure).
- Chk. : "checked unconstrained": Van.'s output, each filling then cut back to its longest
  prefix after which an oracle accepts the file (else the empty filling). What a plain
  completion engine with a post-hoc syntax check would show.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from holefill.datasets import Cut


@dataclass(frozen=True)
class Mode:
    name: str
    options: dict[str, Any] = field(default_factory=dict)  # Completer.fill keywords
    derived: bool = False  # computed from Van.'s output, no model call of its own


VANILLA = Mode("Van.", {"constrained": False})
CON_MINUS = Mode("Con.-", {"constrained": True, "on_stuck": "stop"})
CON = Mode("Con.", {"constrained": True, "on_stuck": "witness"})
CON_PLAIN = Mode("Con.p", {"constrained": True, "on_stuck": "witness", "anchored": False})
CON_LEXICAL = Mode("Con.l", {"constrained": True, "on_stuck": "witness", "structured": False})
CHECKED = Mode("Chk.", derived=True)
MODES = (VANILLA, CON_MINUS, CON, CON_PLAIN, CON_LEXICAL, CHECKED)
MODEL_MODES = tuple(m for m in MODES if not m.derived)


@dataclass
class CheckedCut:
    fills: list[str]
    oracle_calls: int


def checked_fills(cut: Cut, free: Sequence[str], valid: Callable[[str], bool]) -> CheckedCut:
    """Chk.: the free fillings cut back so that the file is valid.

    One hole: the longest prefix p of the filling with prefix + p + suffix valid, else "".
    Several holes have no single "longest prefix"; we search a bounded family: one filling
    cut to its longest valid prefix while the others stay free, or while the others are empty
    (then each other filling is lengthened back as far as the file stays valid). When nothing
    is found, every filling is empty (which may still be invalid).
    """
    calls = 0

    def ok(fills: list[str]) -> bool:
        nonlocal calls
        calls += 1
        return valid(cut.filled(fills))

    free = list(free)
    if ok(free):
        return CheckedCut(free, calls)
    starts = [free] if len(free) == 1 else [free, [""] * len(free)]
    for start in starts:
        for i, text in enumerate(free):
            for n in range(len(text), -1, -1):
                trial = [*start[:i], text[:n], *start[i + 1:]]
                if trial != free and ok(trial):
                    return CheckedCut(_lengthen(free, trial, i, ok), calls)
    return CheckedCut([""] * len(free), calls)


def _lengthen(free: list[str], cur: list[str], done: int,
              ok: Callable[[list[str]], bool]) -> list[str]:
    """The file is valid with `cur`; give the other fillings back as much of their free text
    as keeps it valid, left to right."""
    for i, text in enumerate(free):
        if i == done:
            continue
        for n in range(len(text), len(cur[i]), -1):
            trial = [*cur[:i], text[:n], *cur[i + 1:]]
            if ok(trial):
                cur = trial
                break
    return cur
