"""Guards: an ending that makes a check see the lexemes a longer text would have run on.

A check that looks at a part of a text (a window's head up to its tail, a segment of a
document) lexes that part by maximal munch up to the part's end. A lexeme that a hole's
filling opened and never closed is then read as something else: `/*2` at the end of a
filling becomes `/`, `*`, `2` when no `*/` follows in the part, yet in the whole text the
comment runs on to the next `*/` after the part, swallowing fixed code (and breaking the
reading that the anchors keep). Such a *hidden run* is a run of the lexer DFA that is still
alive at the end of the part and goes on over the text that follows it.

A guard is a short text appended to the part that turns every hidden run into a lexeme that
the part's check sees: a block comment holding, for every DFA state such a run may be in at
the end of the part, a shortest text on which that state accepts (`*/` for a block comment,
`)"` for a raw string, ...). Then:

- with no hidden run, the part's last lexeme ends where the part does (the whitespace that
  the following text kills, `follow`), and the guard is one ignored lexeme after it: the
  part with the guard is valid exactly when the part is;
- with a hidden run, maximal munch from the run's start now reaches an accepting state inside
  the guard, so the part's check reads one lexeme from inside the filling through all the
  fixed text after it: the anchors of that text (holefill.lexing.anchors) refuse it, as the
  whole text's check does.

The states are over-approximated (`states_after` starts from every state a bounded distance
before the end), which may add terminators to a guard, or give no guard (None), never miss a
run.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterable

from holefill.lexing.anchors import ReferenceLexer

# How far back from the end of a part its text is read for the states of hidden runs: the
# states after the last LOOKBACK characters, from every state, hold those after the whole.
LOOKBACK = 256
# How much of the text after a part is read to rule out runs that die on it before accepting
# (a run still alive after it is guarded: runs that die, like `}` + newline + `#endif`, die
# within a few characters; comments and raw strings never do).
FOLLOW_LIMIT = 256
# The guards' frame: a block comment (C, C++); a grammar without one gets no guard.
OPEN, CLOSE = "/*", "*/"


def states_after(ref: ReferenceLexer, text: str) -> frozenset[int]:
    """The DFA states in which a run that began anywhere before `text` (in any state) may be
    after reading its last LOOKBACK characters without dying: a superset of those after all
    of it."""
    dfa = ref.dfa
    trans, alive = dfa.trans, dfa.alive
    states = {s for s in range(len(trans)) if alive[s]}
    for c in ref.classes(text[-LOOKBACK:]):
        states = {t for s in states if (t := trans[s][c]) >= 0 and alive[t]}
        if not states:
            break
    return frozenset(states)


def guard(ref: ReferenceLexer, text: str, follow: str) -> str | None:
    """The guard for a part ending with `text` that the whole text continues with `follow`
    ("" for none, then no run goes on; else as much of what follows as is known, at least
    one character): "" when no hidden run can go on, else a block comment on which each
    state of `states_after` that may run on into `follow` accepts; None when none could be
    built."""
    if not follow:
        return ""
    follow_classes = ref.classes(follow[:FOLLOW_LIMIT])
    live = [s for s in states_after(ref, text) if _runs_on(ref, s, follow_classes)]
    if not live:
        return ""
    body = ""
    for s in sorted(live):
        if not _accepts_on(ref, s, OPEN + body + CLOSE):
            tail = _shortest_accepted(ref, s)
            if tail is None or CLOSE in tail or "\n" in tail:
                return None
            body += tail
    out = OPEN + body + CLOSE
    if not _one_ignored(ref, out) or not all(_accepts_on(ref, s, out) for s in live):
        return None
    return out


def _runs_on(ref: ReferenceLexer, state: int, classes: Iterable[int]) -> bool:
    """A run in `state` reads the first character of `classes` and, on the rest, accepts
    somewhere or is still alive at its end. A run that dies on the following text before it
    accepts is no hidden run: the whole text's lexeme from its start ends where the part's
    does (whatever the guard does to it in the part, it can only refuse more)."""
    return _run(ref, state, classes) is not False


def _accepts_on(ref: ReferenceLexer, state: int, text: str) -> bool:
    """A run in `state` reaches an accepting state somewhere on `text`."""
    return _run(ref, state, ref.classes(text)) is True


def _run(ref: ReferenceLexer, state: int, classes: Iterable[int]) -> bool | None:
    """True when a run in `state` reaches an accepting state on `classes`, False when it
    dies before, None when it is still alive at their end."""
    dfa = ref.dfa
    s = state
    for c in classes:
        s = dfa.trans[s][c]
        if s < 0 or not dfa.alive[s]:
            return False
        if dfa.accept[s] >= 0:
            return True
    return None


@functools.lru_cache(maxsize=1024)
def _shortest_accepted(ref: ReferenceLexer, state: int) -> str | None:
    """A shortest printable ASCII text on which a run in `state` accepts."""
    dfa = ref.dfa
    chars = [chr(i) for i in range(0x20, 0x7F)]
    classes = dict(zip(chars, ref.classes("".join(chars)), strict=True))
    seen, todo = {state: ""}, deque([state])
    while todo:
        s = todo.popleft()
        for ch in _distinct(chars, classes):
            t = dfa.trans[s][classes[ch]]
            if t < 0 or not dfa.alive[t] or t in seen:
                continue
            seen[t] = seen[s] + ch
            if dfa.accept[t] >= 0:
                return seen[t]
            todo.append(t)
    return None


def _distinct(chars: Iterable[str], classes: dict[str, int]) -> list[str]:
    """One character per class (the first)."""
    out, got = [], set()
    for ch in chars:
        if classes[ch] not in got:
            got.add(classes[ch])
            out.append(ch)
    return out


def _one_ignored(ref: ReferenceLexer, text: str) -> bool:
    """Maximal munch reads `text` from a lexeme boundary as one comment-like lexeme."""
    lexemes = list(ref.lex(ref.classes(text)))
    return (len(lexemes) == 1 and lexemes[0][1] == len(text)
            and lexemes[0][2] in ref.comment_like)
