"""Lexing text with holes into one lexeme-level NFA.

A partial output is a list of fixed chunks with a hole between each pair of neighbours. Every
way to lex it (under maximal munch, for some filling of the holes) is a path through one NFA
whose labels are terminal ids:

- ``P(i, k)``: a lexeme boundary at code point ``k`` of chunk ``i``;
- ``H(h)``: inside hole ``h``, between lexemes; it loops on every producible terminal.

Every lexeme with characters in a hole weighs 1, every lexeme of fixed text 0, so the lightest
witness the core returns generates the fewest lexemes.

A lexeme can start at a boundary or inside a hole, and end at a boundary or inside a hole,
crossing any number of holes and whole chunks on the way. We find all of them by running the
lexer DFA forward from every start, as a *set* of states where a hole lies behind us (the
hole may hold any string, so the set grows to everything reachable). Maximal munch decides
where a lexeme may end inside fixed text: it ends at an accepting position only if, running on,
the DFA dies before the next accept, or reaches the end of the chunk in a state from which the
filling can kill it (``LexerDFA.killable``).

Ignored terminals (whitespace, comments) become epsilon edges. Cost is linear in the text for
runs that start at a boundary (they are deterministic); runs that start in a hole are
set-valued until the set collapses, usually after a few characters.

Anchors (holefill.lexing.anchors) keep the fixed text's reading: an edge whose lexeme would
cover an anchor of a chunk that follows a hole is not added, and runs stop once no further
end could be allowed. A place carries `flag` = 1 between a chunk's two anchors when the path
covered the first one (it must then reach the second as a boundary).
"""

from __future__ import annotations

import bisect
import itertools
import os
import threading
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from holefill.budget import Budget
from holefill.grammar.tables import LexerDFA, TerminalInfo
from holefill.lexing.anchors import Anchors, ReferenceLexer, Site, compute_anchors
from holefill.lexing.native_holes import NativeRawGraph

EPSILON = -1

# Edge kinds, kept per edge for rendering witnesses.
KIND_EPS_LINK = 0  # chunk end -> hole, hole -> chunk start (no text)
KIND_LEXEME = 1  # a lexeme with a start and an end (either may lie in a hole)
KIND_HOLE = 2  # a lexeme wholly inside a hole (the hole's self-loop)


@dataclass(frozen=True)
class Place:
    """Where a lexeme starts or ends: at code point `pos` of chunk `chunk`, or in hole `hole`.

    `kill` is an obligation on the next hole: a lexeme ended here only because the filling
    will stop an earlier DFA run that is still alive at the end of this chunk (in state
    `kill`) before it reaches another accept. A lexeme that starts here and continues into that
    hole must be completable by a string that also stops that run (see `HoleLexer._compatible`).
    """

    chunk: int = -1
    pos: int = -1
    hole: int = -1
    kill: int = -1
    flag: int = 0  # 1: the path covered this chunk's first anchor and owes the second

    @property
    def in_hole(self) -> bool:
        return self.hole >= 0


@dataclass
class LexemeNFA:
    """The NFA handed to the native core, plus what the witness renderer needs per edge."""

    n_states: int
    edges: array  # int32 quadruples (from, label, to, weight); label -1 is epsilon
    starts: list[int]
    finals: list[int]
    kinds: list[int] = field(default_factory=list)
    terms: list[int] = field(default_factory=list)  # the terminal, also for epsilon edges
    spans: list[tuple[Place, Place]] = field(default_factory=list)
    hole_states: list[int] = field(default_factory=list)
    # A layout lexer's NFA is built over a raw one: `raw_edge[e]` is the raw edge that edge e
    # stands for (-1 for layout tokens and hole loops).
    raw: LexemeNFA | None = None
    raw_edge: list[int] = field(default_factory=list)
    # What a layout lexer knew at each of its states (for rendering witnesses).
    state_info: dict[int, object] = field(default_factory=dict)
    # A layout lexer's NFA: the raw state each of its states stands for.
    raw_state: Sequence[int] | None = None

    @property
    def n_edges(self) -> int:
        return len(self.kinds)

    def edge(self, i: int) -> tuple[int, int, int, int]:
        e = self.edges
        return e[4 * i], e[4 * i + 1], e[4 * i + 2], e[4 * i + 3]


class _Builder:
    """Accumulates states and edges, deduplicating both; every new edge is a step of the
    check's budget."""

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget
        self.state_of: dict[tuple[int, int, int, int, int], int] = {}
        self.edges = array("i")
        self.kinds: list[int] = []
        self.terms: list[int] = []
        self.spans: list[tuple[Place, Place]] = []
        self.seen: set[tuple[int, int, int]] = set()

    def state(self, place: Place) -> int:
        key = (place.chunk, place.pos, place.hole, place.kill, place.flag)
        s = self.state_of.get(key)
        if s is None:
            s = self.state_of[key] = len(self.state_of)
        return s

    def add(self, a: Place, label: int, b: Place, weight: int, kind: int, term: int) -> None:
        sa, sb = self.state(a), self.state(b)
        key = (sa, term, sb)
        if key in self.seen:
            return
        if self.budget is not None:
            self.budget.spend()
        self.seen.add(key)
        self.edges.extend((sa, label, sb, weight))
        self.kinds.append(kind)
        self.terms.append(term)
        self.spans.append((a, b))


# Hole runs kept per lexer, and the most text after a hole for which one is kept.
HOLE_RUN_CACHE = 32
HOLE_RUN_CACHE_CHARS = 100_000


class EdgeSink(Protocol):
    """What a lexer run writes its lexemes to (the builder, or a recorder)."""

    def add(self, a: Place, label: int, b: Place, weight: int, kind: int, term: int) -> None:
        ...


class _Recorder:
    """Stands in for the builder during one run and remembers the edges it adds."""

    def __init__(self, b: _Builder) -> None:
        self.b = b
        self.added: list[tuple] = []

    def add(self, *args: object) -> None:
        self.added.append(args)
        self.b.add(*args)  # type: ignore[arg-type]



class Coverage:
    """Which lexemes the anchors of a partial output allow (holefill.lexing.anchors).

    Places are ordered along the text: chunk j position p comes before hole j, which comes
    before chunk j + 1 position 0. A lexeme from `a` to `b` covers position x of chunk j
    when a < (j, x) < b, and a lexing has a boundary at x when no lexeme covers it.
    """

    def __init__(self, lengths: Sequence[int], anchors: Anchors,
                 comment_like: frozenset[int]) -> None:
        self.lengths = list(lengths)
        self.sites = [s for s in anchors.sites if s.chunk < len(self.lengths)]
        self.by_chunk: dict[int, list[Site]] = {}
        for site in self.sites:
            self.by_chunk.setdefault(site.chunk, []).append(site)
        self.anchors = anchors
        self.comment_like = comment_like
        self.active = bool(self.sites)

    def key(self, p: Place) -> tuple[int, int]:
        if p.hole >= 0:
            return (p.hole, 2 * self.lengths[p.hole] + 1)
        return (p.chunk, 2 * p.pos)

    def _sites_between(self, ka: tuple[int, int], kb: tuple[int, int]) -> list[Site]:
        out = []
        for j in range(ka[0], kb[0] + 1):
            for site in self.by_chunk.get(j, ()):
                if ka < (j, 2 * (site.base + site.length)) and kb > (j, 2 * site.base):
                    out.append(site)
        return out

    def flag_of(self, a: Place, b: Place, label: int) -> int | None:
        """The flag of the end place of a lexeme `label` from a to b, or None when the
        anchors forbid that lexeme."""
        if not self.active:
            return 0
        ka, kb = self.key(a), self.key(b)
        flag = 0
        for site in self._sites_between(ka, kb):
            j, base = site.chunk, site.base
            before = ka < (j, 2 * base)
            end = (j, 2 * (base + site.length))
            if before and kb >= end and site.passes:
                continue  # covers the whole site, as the user's lexeme passes through it
            if before and kb > end:
                return None  # through the whole site
            pts = site.points
            covered = [x for x in pts if ka < (j, 2 * (base + x)) < kb]
            if len(covered) == len(pts) and pts:
                return None  # a boundary at neither anchor
            if len(pts) == 2:
                lo, hi = base + pts[0], base + pts[1]
                inside = a.hole < 0 and a.chunk == j and lo < a.pos < hi
                if covered == [pts[1]] and a.flag and inside:
                    return None  # the path covered lo before: it owes a boundary at hi
                if b.hole < 0 and b.chunk == j and lo < b.pos < hi and (
                        covered == [pts[0]] or (a.flag and inside)):
                    flag = 1
            if (before and label in self.comment_like and site.rho is not None
                    and kb > (j, 2 * (base + site.rho))):
                return None  # a comment from a hole would cover the user's code
        return flag

    def limit(self, a: Place) -> tuple[int, int] | None:
        """The last place where a lexeme from `a` may end, or None for no limit."""
        if not self.active:
            return None
        ka = self.key(a)
        for site in self.sites:
            j, base = site.chunk, site.base
            if (j, 2 * (base + site.length)) < ka:
                continue  # a site wholly before `a`
            pts = site.points
            if ka < (j, 2 * base):
                if site.passes:
                    continue
                return (j, 2 * (base + (pts[-1] if pts else site.length)))
            if len(pts) == 1 and a.pos < base + pts[0]:
                return (j, 2 * (base + pts[0]))
            if len(pts) == 2 and (a.pos < base + pts[0] or a.flag):
                return (j, 2 * (base + pts[1]))
        return None


# The witness weight of one lexeme a hole holds: the lightest witness has the fewest lexemes
# (surcharges count in lexemes too), and a `preference` of less than a unit per terminal
# chooses among witnesses of as many lexemes (the core breaks exact ties arbitrarily).
WITNESS_UNIT = 4


class HoleLexer:
    """Builds the lexeme NFA of chunks-with-holes for one grammar's lexer DFA."""

    def __init__(self, dfa: LexerDFA, terminals: Sequence[TerminalInfo],
                 surcharge: Mapping[int, int] | None = None,
                 error_terms: frozenset[int] = frozenset(), native: bool | None = None,
                 preference: Mapping[int, int] | None = None) -> None:
        """`surcharge`: extra witness weight per terminal, in lexemes (WITNESS_UNIT each), for
        a lexeme with characters in a hole (a language whose grammar over-approximates some
        lexeme makes the witness search avoid generating it). `preference`: a fraction of a
        lexeme (0 to WITNESS_UNIT - 1) added per terminal, to choose among equally short
        witnesses the one a person would write (`pass`, `0` rather than `b""`).
        `error_terms`: terminals that stand for a lexing error (no lexeme of the user's text,
        for the anchors' reference readings). `native`: build raw graphs in C
        (holefill.lexing.native_holes; None: unless the environment sets
        HOLEFILL_NATIVE_LEXER=0), else with the Python `RawGraph` (the reference)."""
        self.native = (os.environ.get("HOLEFILL_NATIVE_LEXER", "1") != "0"
                       if native is None else native)
        self.dfa = dfa
        self.terminals = terminals
        self.reference = ReferenceLexer(dfa, terminals, error_terms)
        extra, pref = surcharge or {}, preference or {}
        if any(not 0 <= p < WITNESS_UNIT for p in pref.values()):
            raise ValueError(f"a preference is a fraction of a lexeme: 0 to {WITNESS_UNIT - 1}")
        self.weight = [WITNESS_UNIT * (1 + extra.get(t, 0)) + pref.get(t, 0)
                       for t in range(len(terminals))]
        # A lexeme of fixed text read from the end of a hole pays its surcharge only.
        self.fixed_weight = [WITNESS_UNIT * extra.get(t, 0) for t in range(len(terminals))]
        self.ignored = frozenset(i for i, t in enumerate(terminals) if t.ignored)
        self.hole_terminals = [
            i
            for i, t in enumerate(terminals)
            if not (t.ignored or t.layout) and t.example is not None
        ]
        self._closure_cache: dict[frozenset[int], frozenset[int]] = {}
        self._compat_cache: dict[tuple[int, int], frozenset[int]] = {}
        self._pair_cache: dict[tuple[int, int], frozenset[tuple[int, int]]] = {}
        self._reach: list[frozenset[int] | None] = [None] * dfa.n_states
        # Runs from a hole through the text after it, by that text: decoding checks the same
        # right context at every token (see HOLE_RUN_CACHE).
        self._hole_runs: dict[tuple, tuple[list[tuple], list[Place]]] = {}
        self._hole_runs_lock = threading.Lock()
        self.anywhere = frozenset({dfa.start, *dfa.reachable})

    # -- character classes ------------------------------------------------------------

    def classes(self, text: str) -> list[int]:
        ascii_cls = self.dfa.class_of_ascii
        bounds = self.dfa.boundaries
        out = []
        for ch in text:
            c = ord(ch)
            out.append(ascii_cls[c] if c < 128 and ascii_cls else bisect.bisect_right(bounds, c))
        return out

    # -- reachability through a hole --------------------------------------------------

    def reach(self, s: int) -> frozenset[int]:
        """States reachable from `s` by any string (including `s`)."""
        r = self._reach[s]
        if r is None:
            trans = self.dfa.trans
            seen = {s}
            stack = [s]
            while stack:
                x = stack.pop()
                for y in trans[x]:
                    if y >= 0 and y not in seen:
                        seen.add(y)
                        stack.append(y)
            r = self._reach[s] = frozenset(seen)
        return r

    def closure(self, states: frozenset[int]) -> frozenset[int]:
        r = self._closure_cache.get(states)
        if r is None:
            acc: set[int] = set()
            for s in states:
                acc |= self.reach(s)
            r = frozenset(acc)
            if len(self._closure_cache) < 4096:
                self._closure_cache[states] = r
        return r

    # -- the NFA ----------------------------------------------------------------------

    def anchors(self, chunks: Sequence[str]) -> Anchors:
        """The anchors of `chunks` read as the user's document (holefill.lexing.anchors)."""
        return compute_anchors(self.reference, chunks)

    def build(self, chunks: Sequence[str], anchors: Anchors | None = None,
              budget: Budget | None = None) -> LexemeNFA:
        """The lexeme NFA of `chunks`. `anchors`: the fixed text's reading to keep (None:
        the anchors of `chunks` themselves; anchors.PLAIN: none, the plain semantics).
        `budget`: spent per edge and per step of a run from a hole (BudgetExhausted)."""
        graph = self.graph(chunks, anchors, budget)
        graph.expand([Place(0, 0)])
        return graph.nfa()

    def graph(self, chunks: Sequence[str], anchors: Anchors | None = None,
              budget: Budget | None = None) -> RawGraph | NativeRawGraph:
        """A lexeme NFA that grows on demand: the holes, every lexeme from a hole and from
        the start of every chunk after the first; `RawGraph.expand` adds the lexemes from
        more places (the first chunk's, or places a lexeme begun elsewhere reaches)."""
        if not chunks:
            raise ValueError("a partial output has at least one chunk")
        kind = NativeRawGraph if self.native else RawGraph
        return kind(self, chunks, self.anchors(chunks) if anchors is None else anchors, budget)

    def _hole_run(self, b: _Builder, cls: list[list[int]], chunks: Sequence[str],
                  cov: Coverage, h: int, budget: Budget | None = None) -> list[Place]:
        """The lexemes that begin in hole h and end in the text after it (in any state the
        hole may leave the DFA in, so they run far: a third of a check's lexing). They
        depend only on the chunks after the hole and their anchors, so they are replayed
        from a cache."""
        key = (len(chunks), h, tuple(s for s in cov.sites if s.chunk > h), *chunks[h + 1:])
        got = self._hole_runs.get(key)
        if got is None:
            rec = _Recorder(b)
            ends = self._run(rec, cls, chunks, cov, Place(hole=h), h + 1, 0, self.anywhere,
                             budget)
            got = (rec.added, ends)
            if sum(map(len, chunks[h + 1:])) <= HOLE_RUN_CACHE_CHARS:
                with self._hole_runs_lock:  # lexers are shared between threads
                    if len(self._hole_runs) >= HOLE_RUN_CACHE:
                        del self._hole_runs[next(iter(self._hole_runs))]  # the oldest
                    self._hole_runs[key] = got
            return ends
        for args in got[0]:
            b.add(*args)
        return list(got[1])

    def _compatible(self, kill: int, s: int) -> frozenset[int]:
        """Terminals t such that some string v takes `s` to an accept labelled t while the
        run in state `kill` reads v without reaching an accept (it may die, or end killable)."""
        key = (kill, s)
        got = self._compat_cache.get(key)
        if got is None:
            accept, killable = self.dfa.accept, self.dfa.killable
            got = self._compat_cache[key] = frozenset(
                accept[x] for x, kx in self._pair_closure(s, kill)
                if accept[x] >= 0 and (kx < 0 or killable[kx])
            )
        return got

    def _pair_closure(self, s: int, kill: int) -> frozenset[tuple[int, int]]:
        """Pairs (y, ky) reachable from (s, kill) by one string through a hole, where the
        obliged run (from `kill`) never reaches an accept; ky is -1 once it has died."""
        key = (kill, s)
        got = self._pair_cache.get(key)
        if got is not None:
            return got
        trans, accept = self.dfa.trans, self.dfa.accept
        seen = {(s, kill)}
        stack = [(s, kill)]
        while stack:
            x, kx = stack.pop()
            for c, y in enumerate(trans[x]):
                if y < 0:
                    continue
                ky = trans[kx][c] if kx >= 0 else -1
                if ky >= 0 and accept[ky] >= 0:
                    continue
                if (y, ky) not in seen:
                    seen.add((y, ky))
                    stack.append((y, ky))
        got = self._pair_cache[key] = frozenset(seen)
        return got

    def _run(
        self,
        b: EdgeSink,
        cls: list[list[int]],
        chunks: Sequence[str],
        cov: Coverage,
        origin: Place,
        i: int,
        k: int,
        states: frozenset[int] | None,
        budget: Budget | None = None,
        crossings: dict | None = None,
    ) -> list[Place]:
        """Run the DFA from `origin` (text resumes at chunk i, position k) and add an edge
        for every place where a lexeme begun at `origin` may end. Returns the end places.

        `states` is None for a run from a boundary (the DFA starts in its start state),
        else the set of states the DFA may be in after the hole behind us.

        When `origin` carries a kill obligation, the obliged run (an earlier lexeme's DFA run
        that the next hole must stop) steps along with ours once we cross that hole: a path
        on which it would reach an accept is no lexing at all (that earlier lexeme would have
        been longer).

        `crossings`: a cache of what the run does after it crosses into the next chunk, by
        the DFA (and obliged) states it crosses with: for callers that run from many origins
        in one chunk before the same text (the incremental engine's junction, whose open
        lexeme grows by a token at a time while the text after the hole stays).
        """
        dfa = self.dfa
        trans, accept, alive, killable = dfa.trans, dfa.accept, dfa.alive, dfa.killable
        last = len(chunks) - 1
        ends: list[Place] = []
        parked = origin.kill  # starts stepping once we leave the origin's chunk

        limit = cov.limit(origin)  # no lexeme from `origin` may end after this

        recording: list[tuple[int, Place]] | None = None

        def emit(label: int, end: Place) -> None:
            if recording is not None:
                recording.append((label, end))
            flag = cov.flag_of(origin, end, label)
            if flag is None:
                return  # the lexeme would change the reading of fixed text (anchors)
            if flag:
                end = Place(end.chunk, end.pos, end.hole, end.kill, flag)
            # A lexeme with characters in a hole is generated text: it costs like one the
            # hole holds whole, so the lightest witness prefers clean fillings (and does not
            # hide fixed code in a comment that begins in a hole).
            touches = origin.in_hole or end.in_hole or end.chunk != origin.chunk
            weight = self.weight[label] if touches else 0
            if not touches and origin.pos == 0 and origin.chunk > 0:
                # Fixed text read from the end of a hole: the reading the hole's text chose for
                # it pays the terminal's surcharge (a hole that ends a directive line early
                # turns the rest of it into a macro word).
                weight = self.fixed_weight[label]
            if label in self.ignored:
                b.add(origin, EPSILON, end, weight, KIND_LEXEME, label)
            else:
                b.add(origin, label, end, weight, KIND_LEXEME, label)
            ends.append(end)

        def confirm(pend: list[tuple[int, int, int]], ks: int, at: int) -> None:
            """The run died at position `at` of chunk i: its pending accepts are lexemes.
            An obliged run still alive must not accept in the rest of this chunk."""
            kill = parked if i == origin.chunk else -1
            if ks >= 0:
                row = cls[i]
                for c in row[at:]:
                    ks = trans[ks][c]
                    if ks < 0:
                        break
                    if accept[ks] >= 0:
                        return
                kill = ks if ks >= 0 else kill
            for lab, ci, cp in pend:
                emit(lab, Place(ci, cp, kill=kill))

        if states is None:
            # From a boundary the run is one DFA state until it dies or meets the chunk's end;
            # most lexemes of fixed text end before that (a plain loop, no state sets).
            row = cls[i]
            s, pos, n = dfa.start, k, len(row)
            lab, end = -1, -1
            while pos < n:
                y = trans[s][row[pos]]
                if y < 0 or not alive[y]:
                    break
                s = y
                pos += 1
                if accept[s] >= 0:
                    lab, end = accept[s], pos
            else:
                # alive at the chunk's end: the general run below goes on from here, with
                # the last accept pending (earlier ones died when it came)
                cur = {(s, -1): [(lab, i, end)] if lab >= 0 else []}
                k = n
            if pos < n:
                if lab >= 0:
                    emit(lab, Place(i, end, kill=parked))
                return ends
        else:
            # cur: (state, obliged run's state or -1) -> accepts seen earlier whose munch
            # is still undecided, as (label, chunk, pos). A pending accept dies when its
            # state reaches a later accept, and is confirmed when its state dies. Sets are
            # read in ascending order here and below, as the native port reads them.
            cur = {(s, -1): [] for s in sorted(states)}
        while True:
            row = cls[i]
            n = len(row)
            while k < n and cur:
                if budget is not None:
                    budget.spend(len(cur))
                c = row[k]
                k += 1
                nxt: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
                for (s, ks), pend in cur.items():
                    ky = trans[ks][c] if ks >= 0 else -1
                    if ky >= 0 and accept[ky] >= 0:
                        continue  # the obliged run would have been longer: no lexing
                    y = trans[s][c]
                    if y < 0 or not alive[y]:
                        confirm(pend, ky, k)
                        continue
                    if accept[y] >= 0:
                        if limit is not None and (i, 2 * k) > limit:
                            continue  # a longer lexeme than allowed: its munch kills the rest
                        pend = [(accept[y], i, k)]
                    elif not pend and limit is not None and (i, 2 * k) >= limit:
                        continue  # nothing pending, and any later end lies past the limit
                    old = nxt.get((y, ky))
                    if old is None:
                        nxt[(y, ky)] = list(pend)
                    else:
                        old.extend(p for p in pend if p not in old)
                cur = nxt
            if not cur:
                return ends
            # End of chunk i with live states.
            if i == last:
                for pend in cur.values():
                    for lab, ci, cp in pend:
                        emit(lab, Place(ci, cp))
                return ends
            hole = Place(hole=i)
            labels: set[int] = set()
            obliged = i == origin.chunk and parked >= 0
            for (s, ks), pend in cur.items():
                # The filling may stop this run; then the lexeme ends at the pending accept
                # and the filling carries the obligation to stop it.
                if killable[s]:
                    for lab, ci, cp in pend:
                        emit(lab, Place(ci, cp, kill=s))
                ob = parked if obliged else ks
                labels |= self._compatible(ob, s) if ob >= 0 else alive[s]
            if limit is not None and (i, 2 * n + 1) > limit:
                return ends  # neither the hole nor anything after it may end this lexeme
            if not (origin.chunk == i and origin.pos == k):  # consumed something
                for lab in sorted(labels):
                    emit(lab, hole)
            through: set[tuple[int, int]] = set()
            plain: set[int] = set()
            for s, ks in cur:
                ob = parked if obliged else ks
                if ob >= 0:
                    through |= self._pair_closure(s, ob)
                else:
                    plain.add(s)
            if plain:
                through |= {(y, -1) for y in self.closure(frozenset(plain))}
            cur = {key: [] for key in sorted(through)}
            i += 1
            k = 0
            if crossings is not None and recording is None:
                ckey = (frozenset(cur), i, origin.flag)
                seen = crossings.get(ckey)
                if seen is not None:
                    for lab, end in seen:
                        emit(lab, end)
                    return ends
                recording = crossings[ckey] = []


class RawGraph:
    """The lexeme NFA of one partial output, built as far as asked (see `HoleLexer.graph`).

    States are places; expanding a place runs the lexer from it and adds the edges of every
    lexeme that begins there, then expands the places those lexemes end at. A snapshot
    (`nfa`) numbers states in the order places were first met, so a later snapshot extends
    an earlier one: states and edges only get added, and new edges leave new states.
    """

    def __init__(self, lexer: HoleLexer, chunks: Sequence[str], anchors: Anchors,
                 budget: Budget | None = None) -> None:
        self.lexer = lexer
        self.chunks = list(chunks)
        self.cls = [lexer.classes(c) for c in self.chunks]
        self.cov = Coverage([len(c) for c in self.chunks], anchors, lexer.reference.comment_like)
        self.anchors = anchors
        self.b = _Builder(budget)
        self.done: set[Place] = set()
        last = len(self.chunks) - 1
        self.b.state(Place(0, 0))
        self.hole_states: list[int] = []
        todo = [Place(i, 0) for i in range(1, last + 1)]
        for h in range(last):
            hp = Place(hole=h)
            self.hole_states.append(self.b.state(hp))
            self.b.add(hp, EPSILON, Place(h + 1, 0), 0, KIND_EPS_LINK, EPSILON)
            for t in lexer.hole_terminals:
                self.b.add(hp, t, hp, lexer.weight[t], KIND_HOLE, t)
            todo += lexer._hole_run(self.b, self.cls, self.chunks, self.cov, h, budget)
        self.expand(todo)

    @property
    def budget(self) -> Budget | None:
        return self.b.budget

    @budget.setter
    def budget(self, budget: Budget | None) -> None:
        """The budget later expansions spend (a graph kept across checks takes each
        check's own)."""
        self.b.budget = budget

    def expand(self, places: Sequence[Place]) -> None:
        """Adds the lexemes from `places` and from every place they reach."""
        lexer, chunks, last = self.lexer, self.chunks, len(self.chunks) - 1
        todo = list(places)
        while todo:
            p = todo.pop()
            if p.in_hole or p in self.done:
                continue
            self.done.add(p)
            self.b.state(p)
            if p.pos < len(chunks[p.chunk]):
                todo += lexer._run(self.b, self.cls, chunks, self.cov, p, p.chunk, p.pos, None,
                                   self.b.budget)
            elif p.chunk < last:
                self.b.add(p, EPSILON, Place(hole=p.chunk), 0, KIND_EPS_LINK, EPSILON)

    def state_of(self, place: Place) -> int:
        """The state of a place, expanding it first when it is new."""
        if place not in self.done and not place.in_hole:
            self.expand([place])
        return self.b.state(place)

    def size(self) -> tuple[int, int]:
        """States and edge quadruple entries so far (a graph that grew has more)."""
        return len(self.b.state_of), len(self.b.edges)

    def grown_since(self, had_states: int, had_edges: int) -> tuple[int, array, list[int]]:
        """What `nfa` would add to a snapshot of `had_states` states and `had_edges` edges:
        the number of states, the new edges (quadruples) and the new finals, read off the
        states added since (places are numbered in the order they were met) instead of a
        whole new snapshot, which a growth of a 27,000-state graph paid 7 ms for."""
        b, last = self.b, len(self.chunks) - 1
        n = len(b.state_of)
        end = (last, len(self.chunks[last]), -1)
        new = itertools.islice(reversed(b.state_of.items()), n - had_states)
        finals = sorted(s for key, s in new if key[:3] == end)
        return n, b.edges[4 * had_edges:], finals

    def nfa(self) -> LexemeNFA:
        b, last = self.b, len(self.chunks) - 1
        end = len(self.chunks[last])
        finals = [s for key, s in b.state_of.items() if key[:3] == (last, end, -1)]
        return LexemeNFA(
            n_states=len(b.state_of),
            edges=array("i", b.edges),
            starts=[b.state(Place(0, 0))],
            finals=finals,
            kinds=list(b.kinds),
            terms=list(b.terms),
            spans=list(b.spans),
            hole_states=list(self.hole_states),
        )
