"""Finite automata over character classes: regex AST -> NFA -> DFA -> minimal DFA.

A character class partition is a sorted list of boundaries: code point c is in class
`bisect_right(boundaries, c)`, so classes are intervals and there are len(boundaries)+1 of
them. DFAs are partial: a missing transition is -1 (dead). Accepting states carry a label
(an int, e.g. a terminal id); -1 means not accepting.

Per terminal (paper App. C.2) we build four automata from the minimal DFA of its language L:
  full     L
  prefix   proper prefixes   {w | exists v != "" with wv in L}
  suffix   proper suffixes   {w | exists u != "" with uw in L}
  infix    proper infixes    {w | exists u != "", v != "" with uwv in L}
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from .regex import MAX_CODE_POINT, Node

# ----------------------------------------------------------------------------- NFA

@dataclass
class NFA:
    """Thompson NFA. edges[q] = [(intervals, target)], eps[q] = [target], accept[q] = label."""

    edges: list[list[tuple[tuple[tuple[int, int], ...], int]]] = field(default_factory=list)
    eps: list[list[int]] = field(default_factory=list)
    accept: dict[int, int] = field(default_factory=dict)

    def new_state(self) -> int:
        self.edges.append([])
        self.eps.append([])
        return len(self.edges) - 1

    def add(self, node: Node, label: int) -> int:
        """Add a fragment for `node` whose end accepts `label`; return its start state."""
        s = self.new_state()
        e = self.new_state()
        self._build(node, s, e)
        self.accept[e] = label
        return s

    def _build(self, node: Node, s: int, e: int) -> None:
        kind = node[0]
        if kind == "chars":
            if node[1]:
                self.edges[s].append((node[1], e))
        elif kind == "seq":
            cur = s
            items = node[1]
            if not items:
                self.eps[s].append(e)
                return
            for i, n in enumerate(items):
                nxt = e if i == len(items) - 1 else self.new_state()
                self._build(n, cur, nxt)
                cur = nxt
        elif kind == "alt":
            for n in node[1]:
                a = self.new_state()
                self.eps[s].append(a)
                self._build(n, a, e)
        elif kind == "rep":
            sub, lo, hi = node[1], node[2], node[3]
            cur = s
            for _ in range(lo):
                nxt = self.new_state()
                self._build(sub, cur, nxt)
                cur = nxt
            if hi is None:
                # cur -> loop -> cur ; cur -eps-> e
                a = self.new_state()
                b = self.new_state()
                self.eps[cur].append(a)
                self._build(sub, a, b)
                self.eps[b].append(a)
                self.eps[b].append(e)
                self.eps[cur].append(e)
            else:
                for _ in range(hi - lo):
                    nxt = self.new_state()
                    self.eps[cur].append(e)
                    self._build(sub, cur, nxt)
                    cur = nxt
                self.eps[cur].append(e)
        else:  # pragma: no cover
            raise ValueError(kind)


def boundaries_of(interval_sets: Iterable[tuple[tuple[int, int], ...]]) -> list[int]:
    bs: set[int] = set()
    for iv in interval_sets:
        for lo, hi in iv:
            if lo > 0:
                bs.add(lo)
            if hi < MAX_CODE_POINT:
                bs.add(hi + 1)
    return sorted(bs)


def class_range(boundaries: list[int], lo: int, hi: int) -> tuple[int, int]:
    return bisect.bisect_right(boundaries, lo), bisect.bisect_right(boundaries, hi)


def class_interval(boundaries: tuple[int, ...] | list[int], cls: int) -> tuple[int, int]:
    """The code points [lo, hi] of class `cls`."""
    lo = 0 if cls == 0 else boundaries[cls - 1]
    hi = MAX_CODE_POINT if cls == len(boundaries) else boundaries[cls] - 1
    return lo, hi


# ----------------------------------------------------------------------------- DFA

@dataclass
class DFA:
    """A partial DFA over character classes. start is always 0."""

    boundaries: list[int]
    trans: list[list[int]]
    accept: list[int]

    @property
    def n_states(self) -> int:
        return len(self.trans)

    @property
    def n_classes(self) -> int:
        return len(self.boundaries) + 1

    def class_of(self, c: int) -> int:
        return bisect.bisect_right(self.boundaries, c)

    def run(self, text: str, state: int = 0) -> int:
        """State after reading `text` from `state`, or -1."""
        for ch in text:
            if state < 0:
                return -1
            state = self.trans[state][bisect.bisect_right(self.boundaries, ord(ch))]
        return state

    def label(self, text: str) -> int:
        s = self.run(text)
        return self.accept[s] if s >= 0 else -1

    def matches(self, text: str) -> bool:
        return self.label(text) >= 0


def determinize(nfa: NFA, starts: list[int]) -> tuple[DFA, list[frozenset[int]]]:
    """Subset construction. Returns the DFA (accept left -1) and, per DFA state, the set of
    NFA accept labels it contains."""
    boundaries = boundaries_of(iv for es in nfa.edges for iv, _ in es)
    spans: list[list[tuple[int, int, int, int]]] = []  # (first class, last class, target, edge)
    n_edges = 0
    for es in nfa.edges:
        m = []
        for iv, t in es:
            for lo, hi in iv:
                a, b = class_range(boundaries, lo, hi)
                m.append((a, b, t, n_edges))
            n_edges += 1
        spans.append(m)
    # The subset construction runs over groups of classes that every NFA edge treats alike
    # (a Unicode class such as XID_Start brings thousands of intervals that no other edge
    # tells apart), then each row is spread back over the classes.
    group, n_groups = _class_groups(spans, len(boundaries) + 1)
    moves: list[list[tuple[int, int]]] = []
    for m in spans:
        seen_moves: set[tuple[int, int]] = set()
        for a, b, t, _ in m:
            seen_moves.update((group[c], t) for c in range(a, b + 1))
        moves.append(sorted(seen_moves))
    closure_memo: dict[int, frozenset[int]] = {}

    def closure(q: int) -> frozenset[int]:
        r = closure_memo.get(q)
        if r is None:
            seen = {q}
            stack = [q]
            while stack:
                x = stack.pop()
                for y in nfa.eps[x]:
                    if y not in seen:
                        seen.add(y)
                        stack.append(y)
            r = frozenset(seen)
            closure_memo[q] = r
        return r

    start_set: frozenset[int] = frozenset().union(*(closure(q) for q in starts))
    index = {start_set: 0}
    sets = [start_set]
    trans: list[list[int]] = []
    i = 0
    while i < len(sets):
        cur = sets[i]
        i += 1
        buckets: dict[int, set[int]] = {}
        for q in cur:
            for c, t in moves[q]:
                bk = buckets.get(c)
                if bk is None:
                    buckets[c] = {t}
                else:
                    bk.add(t)
        row = [-1] * n_groups
        cache: dict[frozenset[int], int] = {}
        for c, targets in buckets.items():
            key0 = frozenset(targets)
            j = cache.get(key0)
            if j is None:
                nxt = frozenset().union(*(closure(t) for t in targets))
                j = index.get(nxt)
                if j is None:
                    j = len(sets)
                    index[nxt] = j
                    sets.append(nxt)
                cache[key0] = j
            row[c] = j
        trans.append([row[g] for g in group])
    labels = [frozenset(nfa.accept[q] for q in s if q in nfa.accept) for s in sets]
    return DFA(boundaries, trans, [-1] * len(sets)), labels


def _class_groups(spans: list[list[tuple[int, int, int, int]]], n_classes: int
                  ) -> tuple[list[int], int]:
    """Group id per class: classes lie in one group when exactly the same NFA edges hold
    them (an NFA edge is one interval set: spans a..b sharing an edge id). Found by
    sweeping the span ends; a class's key is the set of edges open at it, rebuilt only where
    it changes (the spans of one edge are disjoint, so an edge is never open twice)."""
    opens: list[list[int]] = [[] for _ in range(n_classes + 1)]
    closes: list[list[int]] = [[] for _ in range(n_classes + 1)]
    for m in spans:
        for a, b, _, edge in m:
            opens[a].append(edge)
            closes[b + 1].append(edge)
    active: set[int] = set()
    key: tuple[int, ...] = ()
    ids: dict[tuple[int, ...], int] = {}
    group = [0] * n_classes
    for c in range(n_classes):
        if opens[c] or closes[c]:
            active.difference_update(closes[c])
            active.update(opens[c])
            key = tuple(sorted(active))
        group[c] = ids.setdefault(key, len(ids))
    return group, len(ids)


def subset_from_dfa(dfa: DFA, starts: Iterable[int], accepting: set[int]) -> DFA:
    """Determinize `dfa` read as an NFA with several start states; a set accepts (label 0)
    when it meets `accepting`."""
    start_set = frozenset(starts)
    index = {start_set: 0}
    sets = [start_set]
    trans: list[list[int]] = []
    nc = dfa.n_classes
    i = 0
    while i < len(sets):
        cur = sets[i]
        i += 1
        row = [-1] * nc
        for c in range(nc):
            nxt = frozenset(t for q in cur if (t := dfa.trans[q][c]) >= 0)
            if not nxt:
                continue
            j = index.get(nxt)
            if j is None:
                j = len(sets)
                index[nxt] = j
                sets.append(nxt)
            row[c] = j
        trans.append(row)
    accept = [0 if s & accepting else -1 for s in sets]
    return DFA(list(dfa.boundaries), trans, accept)


def minimize(dfa: DFA) -> DFA:
    """Trim (keep states reachable from 0 and co-reachable; 0 is always kept), merge
    equivalent states (Moore refinement; different labels never merge), renumber in BFS
    order from 0, and merge adjacent classes with identical columns.

    The states are merged over the distinct columns only (classes with the same column in
    every state behave alike; a Unicode class brings thousands of them), then spread back."""
    nc = dfa.n_classes
    cols: dict[tuple[int, ...], int] = {}
    group = [cols.setdefault(col, len(cols)) for col in zip(*dfa.trans, strict=True)]
    first: dict[int, int] = {}
    for c, g in enumerate(group):
        first.setdefault(g, c)  # groups are numbered in the order they first occur
    reps = list(first.values())
    trans, accept = _merge_states([[row[c] for c in reps] for row in dfa.trans], dfa.accept)
    full = [[row[g] for g in group] for row in trans] if group else [[] for _ in trans]
    return compact_classes(DFA(list(dfa.boundaries), full, accept), nc)


def _merge_states(dfa_trans: list[list[int]], dfa_accept: list[int]
                  ) -> tuple[list[list[int]], list[int]]:
    """`minimize` over rows of (distinct) columns: the new rows and labels."""
    n = len(dfa_trans)
    # forward reachability
    reach = [False] * n
    reach[0] = True
    stack = [0]
    while stack:
        s = stack.pop()
        for t in dfa_trans[s]:
            if t >= 0 and not reach[t]:
                reach[t] = True
                stack.append(t)
    # co-reachability
    rev: list[list[int]] = [[] for _ in range(n)]
    for s in range(n):
        if reach[s]:
            for t in set(dfa_trans[s]):
                if t >= 0:
                    rev[t].append(s)
    co = [False] * n
    stack = [s for s in range(n) if reach[s] and dfa_accept[s] >= 0]
    for s in stack:
        co[s] = True
    while stack:
        s = stack.pop()
        for p in rev[s]:
            if not co[p]:
                co[p] = True
                stack.append(p)
    live = [s for s in range(n) if reach[s] and co[s]]
    if not co[0]:
        live = [0] + [s for s in live if s != 0]
    keep = set(live)
    trans = {s: [t if t in keep else -1 for t in dfa_trans[s]] for s in live}
    # Moore refinement
    block = {s: dfa_accept[s] for s in live}
    n_blocks = len(set(block.values()))
    while True:
        sig: dict[tuple[int, ...], int] = {}
        newb = {}
        for s in live:
            key = (block[s], *(block[t] if t >= 0 else -2 for t in trans[s]))
            b = sig.get(key)
            if b is None:
                b = len(sig)
                sig[key] = b
            newb[s] = b
        block = newb
        if len(sig) == n_blocks:
            break
        n_blocks = len(sig)
    # renumber blocks BFS from the start block
    rep: dict[int, int] = {}
    for s in live:
        rep.setdefault(block[s], s)
    order = {block[0]: 0}
    queue = deque([block[0]])
    new_trans: list[list[int]] = []
    new_accept: list[int] = []
    while queue:
        b = queue.popleft()
        s = rep[b]
        row = []
        for t in trans[s]:
            if t < 0:
                row.append(-1)
                continue
            tb = block[t]
            if tb not in order:
                order[tb] = len(order)
                queue.append(tb)
            row.append(order[tb])
        new_trans.append(row)
        new_accept.append(dfa_accept[s])
    return new_trans, new_accept


def compact_classes(dfa: DFA, nc: int | None = None) -> DFA:
    """Merge adjacent classes whose columns are identical in every state."""
    nc = dfa.n_classes if nc is None else nc
    if not dfa.trans:
        return dfa
    keep_cls = [0]
    new_bounds: list[int] = []
    for c in range(1, nc):
        if any(row[c] != row[keep_cls[-1]] for row in dfa.trans):
            keep_cls.append(c)
            new_bounds.append(dfa.boundaries[c - 1])
    if len(keep_cls) == nc:
        return dfa
    trans = [[row[c] for c in keep_cls] for row in dfa.trans]
    return DFA(new_bounds, trans, list(dfa.accept))


def nfa_to_min_dfa(node: Node) -> DFA:
    nfa = NFA()
    s = nfa.add(node, 0)
    d, labels = determinize(nfa, [s])
    d.accept = [0 if lab else -1 for lab in labels]
    return minimize(d)


# ----------------------------------------------------------------------------- derived automata

def _reachable_nonempty(dfa: DFA) -> set[int]:
    seen: set[int] = set()
    stack = [t for t in dfa.trans[0] if t >= 0]
    for t in stack:
        seen.add(t)
    while stack:
        s = stack.pop()
        for t in dfa.trans[s]:
            if t >= 0 and t not in seen:
                seen.add(t)
                stack.append(t)
    return seen


def _has_successor(dfa: DFA) -> set[int]:
    """States of a trimmed DFA from which a non-empty word reaches acceptance."""
    return {s for s in range(dfa.n_states) if any(t >= 0 for t in dfa.trans[s])}


def prefix_dfa(full: DFA) -> DFA:
    """Proper prefixes of L(full); `full` must be minimal (hence trimmed)."""
    ext = _has_successor(full)
    return minimize(DFA(list(full.boundaries), [list(r) for r in full.trans],
                        [0 if s in ext else -1 for s in range(full.n_states)]))


def suffix_dfa(full: DFA) -> DFA:
    """Proper suffixes of L(full); `full` must be minimal."""
    acc = {s for s in range(full.n_states) if full.accept[s] >= 0}
    return minimize(subset_from_dfa(full, _reachable_nonempty(full), acc))


def infix_dfa(full: DFA) -> DFA:
    """Proper infixes of L(full); `full` must be minimal."""
    return minimize(subset_from_dfa(full, _reachable_nonempty(full), _has_successor(full)))


@dataclass(frozen=True)
class TerminalAutomata:
    """The four automata of one terminal (see the module docstring)."""

    full: DFA
    prefix: DFA
    suffix: DFA
    infix: DFA


def terminal_automata(full: DFA) -> TerminalAutomata:
    full = minimize(full)
    return TerminalAutomata(full, prefix_dfa(full), suffix_dfa(full), infix_dfa(full))


# ----------------------------------------------------------------------------- products

def _product_classes(a: DFA, b: DFA) -> list[tuple[int, int]]:
    bounds = sorted(set(a.boundaries) | set(b.boundaries))
    reps = [0] + bounds
    return [(a.class_of(r), b.class_of(r)) for r in reps]


def is_subset(a: DFA, b: DFA) -> bool:
    """L(a) <= L(b) (accepting = label >= 0)."""
    pairs = _product_classes(a, b)
    seen = {(0, 0)}
    stack = [(0, 0)]
    while stack:
        p, q = stack.pop()
        if a.accept[p] >= 0 and (q < 0 or b.accept[q] < 0):
            return False
        for ca, cb in pairs:
            p2 = a.trans[p][ca]
            if p2 < 0:
                continue
            q2 = b.trans[q][cb] if q >= 0 else -1
            if (p2, q2) not in seen:
                seen.add((p2, q2))
                stack.append((p2, q2))
    return True


def intersects(a: DFA, b: DFA) -> bool:
    pairs = _product_classes(a, b)
    seen = {(0, 0)}
    stack = [(0, 0)]
    while stack:
        p, q = stack.pop()
        if a.accept[p] >= 0 and b.accept[q] >= 0:
            return True
        for ca, cb in pairs:
            p2, q2 = a.trans[p][ca], b.trans[q][cb]
            if p2 >= 0 and q2 >= 0 and (p2, q2) not in seen:
                seen.add((p2, q2))
                stack.append((p2, q2))
    return False


# ----------------------------------------------------------------------------- examples

def _nice_char(lo: int, hi: int) -> tuple[int, int]:
    """(preference rank, code point) of the most readable character in [lo, hi]."""
    for rank, (a, b) in enumerate(((0x61, 0x7A), (0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F),
                                   (0x21, 0x7E), (0x20, 0x20), (0x0A, 0x0A), (0x09, 0x09))):
        if lo <= b and hi >= a:
            return rank, max(lo, a)
    return 99, lo


def class_examples(dfa: DFA | tuple[int, ...] | list[int]) -> list[tuple[int, int]]:
    """Per class, (preference rank, representative code point)."""
    bounds = dfa.boundaries if isinstance(dfa, DFA) else dfa
    return [_nice_char(*class_interval(bounds, c)) for c in range(len(bounds) + 1)]


def shortest_examples(boundaries: list[int] | tuple[int, ...], trans: list[list[int]] |
                      tuple[tuple[int, ...], ...], accept: list[int] | tuple[int, ...],
                      nonempty: bool = True) -> dict[int, str]:
    """For each label, a shortest word (non-empty when `nonempty`) reaching a state with that
    label, preferring readable characters."""
    reps = class_examples(boundaries)
    order = sorted(range(len(reps)), key=lambda c: reps[c])
    out: dict[int, str] = {}
    if not nonempty and accept[0] >= 0:
        out[accept[0]] = ""
    seen = {0}
    queue: deque[tuple[int, str]] = deque([(0, "")])
    while queue:
        s, w = queue.popleft()
        for c in order:
            t = trans[s][c]
            if t < 0:
                continue
            w2 = w + chr(reps[c][1])
            if accept[t] >= 0 and accept[t] not in out:
                out[accept[t]] = w2
            if t not in seen:
                seen.add(t)
                queue.append((t, w2))
    return out


def shortest_example(dfa: DFA) -> str | None:
    """A shortest word of L(dfa) (possibly empty), or None when the language is empty."""
    if dfa.accept[0] >= 0:
        return ""
    ex = shortest_examples(dfa.boundaries, dfa.trans, dfa.accept)
    return min(ex.values(), key=len) if ex else None
