"""Turn a witness (a path of lexeme edges through the hole NFA) back into text per hole.

The native core returns the leaves of the shortest derivation: terminal edges of the NFA,
each with the state it ends in. Between two leaves lies a run of epsilon edges (ignored
lexemes, chunk/hole links); we recover it by a breadth-first search over epsilon edges.

Each edge on the path says where its lexeme starts and ends. A lexeme wholly in fixed text
needs nothing. A lexeme that starts, ends or passes through holes needs text in those holes:
we find the shortest strings that drive the lexer DFA through the fixed pieces to an accepting
state with the right label (a lexeme that a hole lies inside, like a comment through it, takes
exactly its string there, with no separator). Lexemes wholly inside a hole are rendered by
their example text.
Neighbouring pieces in a hole are separated by `sep` so that maximal munch cannot glue them.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from collections.abc import Iterable, Sequence

from holefill.grammar.tables import LexerDFA, TerminalInfo
from holefill.lexing.holes import EPSILON, KIND_HOLE, KIND_LEXEME, LexemeNFA, Place


def class_representatives(dfa: LexerDFA) -> list[str]:
    """One character per character class: printable ASCII where the class has one, else the
    first printable character of the class, else its first code point."""
    bounds = dfa.boundaries
    n = len(bounds) + 1
    reps: list[str | None] = [None] * n
    for c in list(range(0x21, 0x7F)) + [0x20, 0x0A, 0x09]:
        k = bisect.bisect_right(bounds, c)
        if reps[k] is None:
            reps[k] = chr(c)
    for k in range(n):
        if reps[k] is None:
            lo = bounds[k - 1] if k > 0 else 0
            hi = bounds[k] if k < len(bounds) else 0x110000
            pick = next((chr(c) for c in range(lo, min(hi, lo + 512)) if chr(c).isprintable()),
                        chr(lo))
            reps[k] = pick
    return [r or " " for r in reps]


def _niceness(ch: str) -> int:
    """Order in which witness text prefers characters: letters and digits, punctuation, a
    space, other printable text, and control characters last."""
    if ch.isascii() and ch.isalnum():
        return 0
    if ch.isascii() and ch.isprintable() and ch != " ":
        return 1
    if ch == " ":
        return 2
    if ch.isprintable():
        return 3
    return 4


def full_path(nfa: LexemeNFA, leaves: Sequence[tuple[int, int]]) -> list[int]:
    """All edges of the accepting path, epsilon edges included, in order. Between two leaves
    we take the lightest run of epsilon edges, as the core did when it composed them."""
    eps_out: dict[int, list[tuple[int, int, int]]] = {}
    for e in range(nfa.n_edges):
        a, lab, b, w = nfa.edge(e)
        if lab == EPSILON:
            eps_out.setdefault(a, []).append((e, b, w))

    def eps_path(sources: Iterable[int], targets: set[int]) -> list[int]:
        prev: dict[int, tuple[int, int] | None] = {}
        dist: dict[int, int] = {}
        heap = []
        for s in sources:
            dist[s] = 0
            prev[s] = None
            heap.append((0, s))
        heapq.heapify(heap)
        while heap:
            d, x = heapq.heappop(heap)
            if d > dist[x]:
                continue
            if x in targets:
                path = []
                while prev[x] is not None:
                    e, x = prev[x]  # type: ignore[misc]
                    path.append(e)
                return path[::-1]
            for e, y, w in eps_out.get(x, ()):
                if y not in dist or d + w < dist[y]:
                    dist[y] = d + w
                    prev[y] = (e, x)
                    heapq.heappush(heap, (d + w, y))
        raise ValueError("witness does not chain through epsilon edges")

    path: list[int] = []
    cur: Iterable[int] = nfa.starts
    for e, end in leaves:
        a, _, b, _ = nfa.edge(e)
        path += eps_path(cur, {a})
        path.append(e)
        path += eps_path([b], {end})
        cur = [end]
    path += eps_path(cur, set(nfa.finals))
    return path


class Renderer:
    """Renders witness paths into hole fillings for one lexer DFA."""

    def __init__(self, dfa: LexerDFA, terminals: Sequence[TerminalInfo]) -> None:
        self.dfa = dfa
        self.terminals = terminals
        self.reps = class_representatives(dfa)
        # Breadth-first search tries classes in this order, so witnesses read like text.
        self.class_order = sorted(range(len(self.reps)), key=lambda k: _niceness(self.reps[k]))
        self._bfs_cache: dict[int, tuple[dict[int, tuple[int, int] | None],
                                         dict[int, int]]] = {}
        # Whether `]` and `]` stay two lexemes when written together (see `_join`).
        end = self._run(dfa.start, "]")
        self.brackets_apart = end < 0 or dfa.trans[end][self._cls("]")] < 0

    def _cls(self, ch: str) -> int:
        c = ord(ch)
        if c < 128 and self.dfa.class_of_ascii:
            return self.dfa.class_of_ascii[c]
        return bisect.bisect_right(self.dfa.boundaries, c)

    def _run(self, s: int, text: str) -> int:
        trans = self.dfa.trans
        for ch in text:
            if s < 0:
                return -1
            s = trans[s][self._cls(ch)]
        return s

    def _run_all(self, sources: list[int], text: str) -> dict[int, int]:
        """`_run` from every source at once: end state -> the first source (in order) that
        ends there. Runs that meet go on as one (after a hole hundreds of states may start a
        long fixed text; they merge within a few characters)."""
        trans = self.dfa.trans
        rank: dict[int, int] = {}
        for s in sources:
            rank.setdefault(s, len(rank))
        live = {s: s for s in rank if s >= 0}
        for ch in text:
            c = self._cls(ch)
            nxt: dict[int, int] = {}
            for x, origin in live.items():
                y = trans[x][c]
                if y >= 0 and (y not in nxt or rank[origin] < rank[nxt[y]]):
                    nxt[y] = origin
            live = nxt
            if not live:
                break
        # in the order of their sources, as one run after another would find them
        return dict(sorted(live.items(), key=lambda item: rank[item[1]]))

    def _bfs(self, src: int) -> tuple[dict[int, tuple[int, int] | None], dict[int, int]]:
        """Shortest strings from `src` to every reachable state: parent pointers and
        lengths (spelled only for the states a rendering uses: spelling every reachable
        state of a large DFA made one lexeme's rendering cost tens of ms)."""
        got = self._bfs_cache.get(src)
        if got is not None:
            return got
        prev: dict[int, tuple[int, int] | None] = {src: None}
        dist = {src: 0}
        queue = deque([src])
        trans = self.dfa.trans
        order = self.class_order
        while queue:
            x = queue.popleft()
            row = trans[x]
            for c in order:
                y = row[c]
                if y >= 0 and y not in prev:
                    prev[y] = (x, c)
                    dist[y] = dist[x] + 1
                    queue.append(y)
        self._bfs_cache[src] = (prev, dist)
        return prev, dist

    def _spell(self, prev: dict[int, tuple[int, int] | None], dst: int) -> str:
        out = []
        while prev[dst] is not None:
            x, c = prev[dst]  # type: ignore[misc]
            out.append(self.reps[c])
            dst = x
        return "".join(reversed(out))

    def lexeme_fill(
        self, items: list[tuple[str, object]], term: int
    ) -> tuple[list[str], int] | None:
        """Strings for the holes among `items` so that the concatenation is one lexeme `term`.

        items: ("text", str) for fixed text, ("hole", h) for a hole. Returns one string per hole
        item, in order, and the DFA state the lexeme ends in; or None when impossible.
        """
        accept = self.dfa.accept
        # layers[j]: state -> (previous state, length of the hole's string) after
        # items[:j+1]; a hole's strings are spelled from the BFS of their source at the end
        layers: list[dict[int, tuple[int, int]]] = []
        cur: dict[int, tuple[int, int]] = {self.dfa.start: (-1, 0)}
        for kind, val in items:
            nxt: dict[int, tuple[int, int]] = {}
            if kind == "text":
                nxt = {y: (s, 0) for y, s in self._run_all(list(cur), val).items()}  # type: ignore[arg-type]
            else:
                # Prefer the shortest string overall: visit sources in order of their own cost.
                for s in cur:
                    for y, n in self._bfs(s)[1].items():
                        old = nxt.get(y)
                        if old is None or n < old[1]:
                            nxt[y] = (s, n)
            layers.append(nxt)
            cur = nxt
            if not cur:
                return None
        finals = [s for s in cur if accept[s] == term]
        if not finals:
            return None
        s = min(finals, key=lambda x: cur[x][1])
        end = s
        fills: list[str] = []
        for j in range(len(items) - 1, -1, -1):
            prev_s = layers[j][s][0]
            if items[j][0] == "hole":
                fills.append(self._spell(self._bfs(prev_s)[0], s))
            s = prev_s
        return fills[::-1], end

    def end_state(self, text: str) -> int:
        """The DFA state after lexing `text` as one lexeme from the start."""
        return self._run(self.dfa.start, text)

    def reads_apart(self, left: str, right: str) -> bool:
        """Whether maximal munch ends the lexeme `left` before `right` when they touch: the
        DFA, having read `left` whole, cannot go on with the first character of `right`."""
        s = self.end_state(left)
        return bool(right) and s >= 0 and self.dfa.trans[s][self._cls(right[0])] < 0

    def killer(self, state: int, sep: str) -> str:
        """A separator that ends a lexeme in `state` (so that maximal munch stops there):
        `sep` when it does, else a line break (a line comment), else `sep` anyway. One that
        ends a lexeme which could run on is a `_Stop` that knows the blanks that end it too."""
        if state < 0:
            return sep
        row = self.dfa.trans[state]
        for cand in (sep, "\n"):
            if row[self._cls(cand)] < 0:
                if all(y < 0 for y in row):
                    return cand
                return _Stop(cand, "".join(b for b in " \t\n" if row[self._cls(b)] < 0))
        return sep

    def render(
        self, chunks: Sequence[str], nfa: LexemeNFA, path: Sequence[int], sep: str = " "
    ) -> list[str]:
        """The filling of every hole along `path` (edge ids from `full_path`)."""
        n_holes = len(chunks) - 1
        # Per hole: (text, attached to what precedes the hole, attached to what follows it,
        # the separator that must follow it).
        pieces: list[list[tuple[str, bool, bool, str]]] = [[] for _ in range(n_holes)]
        lead = [sep] * n_holes  # the separator after the fixed lexeme that ends chunk h
        for e in path:
            kind = nfa.kinds[e]
            term = nfa.terms[e]
            a, b = nfa.spans[e]
            if kind == KIND_HOLE:
                pieces[a.hole].append((self.terminals[term].example or "", False, False, sep))
                continue
            if kind != KIND_LEXEME:
                continue
            if not a.in_hole and not b.in_hole and a.chunk == b.chunk:
                if b.pos == len(chunks[b.chunk]) and b.chunk < n_holes:
                    text = chunks[a.chunk][a.pos : b.pos]
                    lead[b.chunk] = self.killer(self.end_state(text), sep)
                continue
            items = lexeme_items(chunks, a, b)
            holes = [v for k, v in items if k == "hole"]
            got = self.lexeme_fill(items, term)
            if got is None:
                raise ValueError(f"cannot render lexeme {self.terminals[term].name}")
            fills, end = got
            # A lexeme that ends in a hole, or at the end of a chunk that a hole follows,
            # needs what comes next to stop it (`//x` before an empty hole: a line break).
            before_hole = not b.in_hole and b.pos == len(chunks[b.chunk]) and b.chunk < n_holes
            after = self.killer(end, sep) if b.in_hole or before_hole else sep
            # Whitespace that merely touches a hole adds nothing; an ignored lexeme that a
            # hole lies inside (`/* c *` hole `/`) needs that hole's text exactly, even "":
            # a separator there would split the comment into code.
            inside = len(holes) - a.in_hole - b.in_hole > 0
            if (self.terminals[term].ignored and not any(fills) and not inside
                    and not _needed(after, sep)):
                continue
            last = len(holes) - 1
            for idx, (h, text) in enumerate(zip(holes, fills, strict=True)):
                left = idx > 0 or not a.in_hole
                right = idx < last or not b.in_hole
                pieces[int(h)].append((text, left, right, after))  # type: ignore[call-overload]
            if before_hole:
                lead[b.chunk] = after
        return [
            str(_join(ps, sep, lead[h], chunks[h], chunks[h + 1], self.brackets_apart))
            for h, ps in enumerate(pieces)
        ]


class _Stop(str):
    """A separator that stops a lexeme which could run on into the hole (the line break
    after `//x`), with the blank characters that would stop it as well: it is needed even
    where it equals `sep`, unless the fixed text goes on with one of those blanks."""

    blanks: str

    def __new__(cls, text: str, blanks: str) -> _Stop:
        self = super().__new__(cls, text)
        self.blanks = blanks
        return self


def _needed(separator: str, sep: str, nxt: str = "") -> bool:
    """Whether `separator` must be written before the text `nxt` ("" when the next piece
    is not fixed text, or the text ends)."""
    if isinstance(separator, _Stop):
        return not nxt or nxt[0] not in separator.blanks
    return separator != sep


def _join(
    ps: list[tuple[str, bool, bool, str]],
    sep: str,
    lead: str,
    before: str,
    after: str,
    brackets_apart: bool = False,
) -> str:
    """Join the pieces of one hole, between the fixed texts `before` and `after`.
    Separators keep free-standing lexemes apart (none is needed next to whitespace the
    fixed text already has, unless the lexeme before needs something else to end, like a
    line comment a line break). With `brackets_apart`, none stands between two `]` either:
    an attribute closes with `]]` (tree-sitter-cpp refuses `[[a] ]`), and `]]` is no lexeme."""

    def tight(left: str, right: str) -> bool:
        return brackets_apart and left.endswith("]") and right.startswith("]")

    blank_before = not before or before[-1].isspace()
    blank_after = not after or after[0].isspace()
    if not ps:
        if _needed(lead, sep, after):
            return lead
        return "" if blank_before or blank_after or tight(before, after) else sep
    out = []
    prev_sep = lead
    prev = before
    for j, (text, left, _, stop) in enumerate(ps):
        if j == 0:
            needed = _needed(prev_sep, sep) or not (blank_before or tight(before, text))
        else:
            needed = _needed(prev_sep, sep) or not tight(prev, text)
        if (j > 0 or not left) and needed:
            out.append(prev_sep)
        out.append(text)
        prev_sep = stop
        prev = text
    if not ps[-1][2] and (_needed(prev_sep, sep, after) or not (blank_after or tight(prev, after))):
        out.append(prev_sep)
    return "".join(out)


def lexeme_items(chunks: Sequence[str], a: Place, b: Place) -> list[tuple[str, object]]:
    """The fixed texts and holes a lexeme from `a` to `b` runs through, in order."""
    items: list[tuple[str, object]] = []
    if a.in_hole:
        items.append(("hole", a.hole))
        i, k = a.hole + 1, 0
    else:
        i, k = a.chunk, a.pos
    while True:
        if not b.in_hole and b.chunk == i:
            items.append(("text", chunks[i][k : b.pos]))
            return items
        items.append(("text", chunks[i][k:]))
        items.append(("hole", i))
        if b.in_hole and b.hole == i:
            return items
        i, k = i + 1, 0
