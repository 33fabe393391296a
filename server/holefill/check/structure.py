"""Structure: a filling keeps the user's brackets paired and the user's lines whole.

The anchors (holefill.lexing.anchors) keep the *reading* of every fixed token. This module
keeps the *structure* the fixed tokens form, as part of the check (the lexeme NFA is
multiplied by a small counter automaton per hole), so the core, the witness and decoding all
obey it, like the anchors.

The document's reading
----------------------
D is maximal munch of the user's document with every hole empty (the anchors' D). Its
bracket lexemes (``( ) [ ] { }`` and the digraphs ``<: :> <% %>``) are paired by a stack: a
closer pairs with the opener on top of the stack when their kinds agree; otherwise (another
kind on top, or an empty stack) the closer has no partner and the stack stays as it is: in
`if (c == x <h> ... } else` the `}` is the one the user typed for the `{` still to come, not
the loop's. (Pairing a closer with the nearest opener of its kind instead, as some editors
recover, reads that `}` as the loop's and refuses the `) {` the hole needs.) Openers left on
the stack have no partner either. Those are the *fixed pairs* and
the *unpartnered* brackets of the document (a file the user is editing often has a few).

For a hole h, two numbers follow from D (both capped at MAX_OUTER):

- ``floor`` F(h): the unpartnered openers on top of the stack at h, down to the first paired
  one (a paired opener on the stack means h lies inside a fixed pair, which the filling may
  not close). These are the openers a filling may close.
- ``ceiling`` G(h): the unpartnered closers after h that a bracket opened at h would meet at
  its own level, before the closer of the fixed pair around h, or an unpartnered opener at
  that level, or the end. These are the closers a filling's openers may pair with.

And ``one_line``: the hole lies mid-line: fixed text that is not blank precedes it on its line,
and fixed code (a lexeme that is neither blank nor a comment) follows it there. (A hole at
a line's start or in its indentation may insert lines before the user's line.)

The rule
--------
A filling of hole h, read as its bracket lexemes (the brackets of the text the filling
writes, in the filled document's maximal-munch reading), with depth d (openers minus
closers so far) and m the least depth so far (m <= 0):

1. it never closes more than F(h) brackets it did not open itself: ``m >= -F(h)``;
2. it leaves at most G(h) brackets open: at its end ``d - m <= G(h)``;
3. it nests at most G(h) + MAX_NEST brackets above its lowest point: ``d - m <= G + MAX_NEST``
   at every bracket (the bound that makes the rule a finite automaton: past it a filling
   is refused; real middles nest far less, see tests/check/test_structure.py);
4. if ``one_line``, it writes no line break.

Adjacent holes (nothing fixed between them) are one hole for the rule too
(holefill.check.merge).

Why the fixed pairs keep pairing. Let (o, c) be a fixed pair and h a hole between them. The
stack at h holds o, which is paired, so F(h) = 0: by (1) no filling between o and c closes
anything it did not open, and every bracket a filling there leaves open is closed by a closer
after it inside (o, c) (G counts only the unpartnered closers before c); by (2) there are
enough. So every closer between o and c pops a bracket opened after o, and c pops o. Fixed
text between o and c is balanced (it was in D), so no fixed pair inside is broken either:
a fixed pair can only be broken by a filling that closes a bracket it did not open inside the
pair, or leaves one open past the pair's closer, and (1) and (2) forbid both. Blocks of
brace languages are pairs of braces, so a fixed line keeps its innermost fixed braces: the
C++ ``main`` cannot lose its body to a new function, a Python signature keeps its parameters.

What the rule does not see: in a document whose unpartnered brackets include an opener
before a closer of another kind (``( ... ]``), holes between them may each use the other's
budget (an opener in one hole closed in a later one, both counted against the unpartnered
pair). Fixed pairs still keep their partners (the argument above needs only paired brackets).

Exactness: the counter automaton reads exactly the bracket lexemes the NFA's paths put in
the hole's region, so the product accepts a path iff the path's filling obeys (1)-(3), and the
check says YES iff some valid filling whose lexing the anchors allow obeys the rule; (4)
removes, in the region, the edges of lexemes that start there and cannot be written without a
line break (Python's NL, a preprocessor line): any other lexeme can be written on one line,
so the check stays exact, and `violation` (which judges the text of a filling) accepts
every witness the renderer writes on one line (a rendered witness is checked by `violation`
before it is returned). Two corners are not exact, both towards YES (never a wrong NO, and
a witness that breaks the rule is not returned, so the answer then is UNKNOWN): a Python hole
in a line's indentation (a DEDENT there may need the hole's own line break), and a line
break inside a blank lexeme of the hole, which the product does not see (a C directive's
end, handled by its kill obligation: `regions_of`).

While a hole is being filled (decoding), the text generated so far is fixed text at the end
of the chunk before the hole; the hole's *region* then starts where that text begins
(`Structure.starts`), and the counter runs over the generated text's lexemes too (a line
break the generated text holds is refused at once, `Structure.written_breaks`: the product
cannot see one inside a blank lexeme).

Where each engine applies it:

- the classic check (holefill.check.checker): the product of the whole lexeme NFA;
- the incremental engine (holefill.check.incremental): the left text's settled lexemes in
  the region give hole 0's counter, the junction carries it through the open lexeme, and the
  right context is grown through `StructureProduct` as it grows by entries, an entry being
  (place, layout, counter); tests/check/test_structure_engines.py compares it with the
  classic check on real code, on prefixes of real middles and on junk after them;
- pieces (holefill.check.focus): a piece keeps the rules of the holes inside it; the open
  holes at its ends are `FREE` (they stand for the rest of the text). The split lemma is
  exact for one hole's own rule; the other holes' rules were judged by the request's first
  check, and the final check judges every filling again;
- decoding (holefill.decode.loop): `FillJudge` refuses a token after which the hole's text
  breaks the rule, and a hole may close only where its counter may leave;
- the final check (holefill.check.final): `violation` on the filled text.
"""

from __future__ import annotations

import bisect
import functools
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from holefill.grammar.tables import LexerDFA, TerminalInfo
from holefill.lexing.anchors import ERROR, ReferenceLexer
from holefill.lexing.holes import KIND_HOLE, LexemeNFA
from holefill.lexing.native_holes import NativeRawGraph, PlaceSpans
from holefill.lexing.relex import Reading

MAX_OUTER = 6  # unpartnered brackets a filling may close or open (F and G are capped here)
MAX_NEST = 8  # brackets a filling may nest above its lowest point, beyond G

OPENERS = {'"("': "(", '"["': "[", '"{"': "{", '"<%"': "{", '"<:"': "["}
CLOSERS = {'")"': "(", '"]"': "[", '"}"': "{", '"%>"': "{", '":>"': "["}
NONE, OPEN, CLOSE = 0, 1, 2
BLOCKED = 3  # a state flag: no edge may enter or leave it (see regions_of)
IN_HOLE = 4  # a state flag: a place inside a hole


@dataclass(frozen=True)
class HoleRule:
    """The structure a hole's filling must keep (module docstring)."""

    floor: int = 0
    ceiling: int = 0
    one_line: bool = False
    free: bool = False  # no rule: the hole stands for text the rule does not judge here

    @property
    def width(self) -> int:
        return self.ceiling + MAX_NEST + 1

    @property
    def n_states(self) -> int:
        return 1 if self.free else (self.floor + 1) * self.width


FREE = HoleRule(free=True)  # a piece's end holes (holefill.check.focus) stand for the rest


@dataclass(frozen=True)
class Structure:
    """One rule per hole of the chunks it goes with; `starts[h]`: where hole h's region
    begins in chunk h (None: at the chunk's end, nothing generated yet)."""

    rules: tuple[HoleRule, ...]
    starts: tuple[int | None, ...] = field(default=())

    def start(self, h: int) -> int | None:
        return self.starts[h] if h < len(self.starts) else None

    def with_starts(self, starts: Sequence[int | None]) -> Structure:
        return replace(self, starts=tuple(starts))

    def select(self, holes: Sequence[int]) -> Structure:
        """The rules of holes `holes` (in order), e.g. the ones still open."""
        return Structure(tuple(self.rules[h] for h in holes),
                         tuple(self.start(h) for h in holes))

    def shifted(self, shift: int) -> Structure:
        """Starts in chunk 0 moved by `shift` (a window cut or wrapped the first chunk)."""
        if not self.starts or self.starts[0] is None:
            return self
        return replace(self, starts=(self.starts[0] + shift, *self.starts[1:]))

    def piece(self, lo: int, hi: int, n_chunks: int) -> Structure:
        """The structure of the piece of chunks lo..hi (holefill.check.focus): the holes
        between them keep their rules, the open holes at its ends are free (they stand for
        the rest of the text, whose holes the request's first check judged)."""
        if not self.rules:
            return self
        inner = self.select(range(lo, hi))
        before = (FREE,) if lo > 0 else ()
        after = (FREE,) if hi < n_chunks - 1 else ()
        return Structure((*before, *inner.rules, *after),
                         ((None,) * len(before)) + inner.starts + ((None,) * len(after)))

    @property
    def trivial(self) -> bool:
        return all(r.free for r in self.rules)

    def written_breaks(self, chunks: Sequence[str]) -> bool:
        """Whether the text a one-line hole's filling has written so far (its region's part
        in the chunk before it) holds a line break: rule (4) on known text, which the
        product cannot see inside a blank lexeme."""
        for h, start in enumerate(self.starts):
            if start is not None and h < len(self.rules) and self.rules[h].one_line:
                done = chunks[h][start:]
                if "\n" in done or "\r" in done:
                    return True
        return False


PLAIN_STRUCTURE = Structure(())  # no structure rule (the papers' plain semantics, lexical-only)


class Brackets:
    """Bracket classes and kinds per terminal label of one language."""

    def __init__(self, terminals: Sequence[TerminalInfo], dfa: LexerDFA) -> None:
        n = len(terminals)
        self.cls = np.zeros(n + 1, dtype=np.int8)  # index -1 (epsilon) is NONE
        self.kind: dict[int, str] = {}
        for i, t in enumerate(terminals):
            if t.name in OPENERS:
                self.cls[i], self.kind[i] = OPEN, OPENERS[t.name]
            elif t.name in CLOSERS:
                self.cls[i], self.kind[i] = CLOSE, CLOSERS[t.name]
        breaks = _line_break_classes(dfa)
        lexed, one_line = _lexed(dfa, set()), _lexed(dfa, breaks)
        # (NUL stops a directive's run too, but no lexeme starts with it: not a way out)
        self.killable_one_line = _killable(dfa, breaks | _line_break_classes(dfa, "\0"))
        self.needs_newline = frozenset(t for t in lexed - one_line if t < n)
        # terminals whose lexemes only a line break ends (a directive line): one that ends
        # inside a one-line hole would need the hole to break the line
        ends: dict[int, bool] = {}
        for state, label in enumerate(dfa.accept):
            if 0 <= label < n:
                ends[label] = ends.get(label, False) or bool(self.killable_one_line[state])
        self.line_bound = np.zeros(n + 1, dtype=bool)
        self.line_bound[[label for label, free in ends.items() if not free]] = True
        self.nl_mask = np.zeros(n + 1, dtype=bool)
        for term in self.needs_newline:
            self.nl_mask[term] = True
        # the layout's end of a logical line (Python's NEWLINE, no lexeme): inside a hole it
        # stands for a line break the hole writes. (INDENT and DEDENT there may follow the
        # user's line break before the hole, and are kept: a path whose DEDENT needs the
        # hole's own line break then survives, and its witness fails `violation`, giving
        # UNKNOWN rather than a wrong answer; a hole in a line's indentation is the case.)
        self.layout_mask = np.zeros(n + 1, dtype=bool)
        self.layout_mask[[t for t in range(n)
                          if t not in lexed and terminals[t].name == "NEWLINE"]] = True


def _line_break_classes(dfa: LexerDFA, chars: str = "\n\r") -> set[int]:
    return {bisect.bisect_right(dfa.boundaries, ord(c)) for c in chars}


def _killable(dfa: LexerDFA, avoid: set[int]) -> np.ndarray:
    """Per DFA state (and one more entry, for -1: no obligation): whether a non-empty string
    over the classes but `avoid` leads from it to the dead state without passing through an
    accepting state (LexerDFA.killable, restricted): the lexer with holes ends a lexeme in a
    hole only where the hole's text can stop the run that goes on (Place.kill)."""
    n = len(dfa.trans)
    ok = np.zeros(n + 1, dtype=bool)
    ok[n] = True
    changed = True
    while changed:
        changed = False
        for s in range(n):
            if ok[s]:
                continue
            for c, t in enumerate(dfa.trans[s]):
                if c in avoid:
                    continue
                if t < 0 or (dfa.accept[t] < 0 and ok[t]):
                    ok[s] = changed = True
                    break
    return ok


def _lexed(dfa: LexerDFA, avoid: set[int]) -> set[int]:
    """The terminals maximal munch yields from strings over every class but `avoid`."""
    seen, todo, got = {dfa.start}, [dfa.start], set()
    while todo:
        s = todo.pop()
        if dfa.accept[s] >= 0:
            got.add(dfa.accept[s])
        for c, t in enumerate(dfa.trans[s]):
            if t >= 0 and c not in avoid and t not in seen:
                seen.add(t)
                todo.append(t)
    return got


def structure_of(ref: ReferenceLexer, brackets: Brackets, chunks: Sequence[str]) -> Structure:
    """The rules of the holes of `chunks` (the user's document, module docstring)."""
    if len(chunks) < 2:
        return Structure(())
    text = "".join(chunks)
    reading = ref.reading(text)
    pos, is_open, kinds = _bracket_lexemes(brackets, reading)
    partner = _pair(is_open, kinds)
    offsets, at = [], 0
    for c in chunks[:-1]:
        at += len(c)
        offsets.append(at)
    rules = []
    stack: list[int] = []
    i = 0
    for at in offsets:
        while i < len(pos) and pos[i] < at:
            if is_open[i]:
                stack.append(i)
            elif partner[i] >= 0:
                stack.pop()
            i += 1
        floor = 0  # the unpartnered openers on top of the stack, down to a paired one
        while floor < min(len(stack), MAX_OUTER) and partner[stack[-1 - floor]] < 0:
            floor += 1
        ceiling = _ceiling(bisect.bisect_left(pos, at), is_open, partner)
        rules.append(HoleRule(floor, ceiling, _one_line(ref, reading, at, text)))
    return Structure(tuple(rules))


def bracket_partners(ref: ReferenceLexer, brackets: Brackets, text: str) -> dict[int, int]:
    """Bracket lexeme start -> its partner's start, both ways, in the reading of `text`
    (the stack rule of the module docstring)."""
    pos, is_open, kinds = _bracket_lexemes(brackets, ref.reading(text))
    partner = _pair(is_open, kinds)
    return {pos[i]: pos[j] for i, j in enumerate(partner) if j >= 0}


def _bracket_lexemes(brackets: Brackets, reading: Reading
                     ) -> tuple[list[int], list[bool], list[str]]:
    """Start, opener or not, and kind of each bracket lexeme of a reading."""
    labels = reading.labels
    safe = np.where(labels >= 0, labels, len(brackets.cls) - 1)  # ERROR reads NONE
    idx = np.nonzero(brackets.cls[safe])[0]
    kinds = [brackets.kind[int(labels[k])] for k in idx.tolist()]
    return reading.starts[idx].tolist(), (brackets.cls[safe[idx]] == OPEN).tolist(), kinds


def _pair(is_open: Sequence[bool], kinds: Sequence[str]) -> list[int]:
    """The partner of each bracket (-1: none), by the stack rule of the module docstring."""
    partner = [-1] * len(is_open)
    stack: list[int] = []
    for i, (o, k) in enumerate(zip(is_open, kinds, strict=True)):
        if o:
            stack.append(i)
        elif stack and kinds[stack[-1]] == k:
            j = stack.pop()
            partner[i], partner[j] = j, i
    return partner


def _ceiling(i: int, is_open: Sequence[bool], partner: Sequence[int]) -> int:
    """G of a hole whose first bracket after it is number i."""
    count = 0
    while i < len(is_open) and count < MAX_OUTER:
        if is_open[i]:
            if partner[i] < 0:
                break  # an unpartnered opener: closers past it are out of reach
            i = partner[i] + 1
            continue
        if partner[i] >= 0:
            break  # the closer of the fixed pair around the hole
        count += 1
        i += 1
    return count


def _one_line(ref: ReferenceLexer, reading: object, at: int, text: str) -> bool:
    """Whether the hole lies mid-line: text that is not blank precedes it on its line, and
    a lexeme that is neither blank nor comment-like follows it there (the rest of the D
    lexeme the hole lies in counts: ``re|s``). A hole at a line's start or in its
    indentation may write lines before the user's line: that is how code is inserted."""
    starts = [text.rfind("\n", 0, at), text.rfind("\r", 0, at)]
    if not text[max(starts) + 1:at].strip(" \t\f"):
        return False
    ends = [e for e in (text.find("\n", at), text.find("\r", at)) if e >= 0]
    end = min(ends, default=len(text))  # a line ends at any line break (\r alone too)
    r = reading
    k = int(np.searchsorted(r.starts, at))  # type: ignore[attr-defined]
    if k > 0 and int(r.ends[k - 1]) > at:  # type: ignore[attr-defined]
        k -= 1  # the D lexeme the hole lies in: its rest is the user's (``re|s``)
    while k < len(r.starts) and int(r.starts[k]) < end:  # type: ignore[attr-defined]
        lab = int(r.labels[k])  # type: ignore[attr-defined]
        if lab == ERROR or (lab not in ref.blank and lab not in ref.comment_like):
            return True
        k += 1
    return False


# ---- the counter automaton ---------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def _tables(rule: HoleRule) -> tuple[np.ndarray, np.ndarray]:
    """(step[cls, q] -> q' or -1, exit_ok[q]) of a rule's automaton; q = -m * width + (d - m),
    0 the start."""
    w, n = rule.width, rule.n_states
    step = np.full((3, n), -1, dtype=np.int32)
    exit_ok = np.zeros(n, dtype=bool)
    if rule.free:
        step[:, 0] = 0
        exit_ok[0] = True
        return step, exit_ok
    for neg_m in range(rule.floor + 1):
        for b in range(w):
            q = neg_m * w + b
            step[NONE, q] = q
            exit_ok[q] = b <= rule.ceiling
            if b + 1 < w:
                step[OPEN, q] = q + 1
            if b > 0:
                step[CLOSE, q] = q - 1
            elif neg_m + 1 <= rule.floor:
                step[CLOSE, q] = (neg_m + 1) * w
    return step, exit_ok


def run_rule(rule: HoleRule, classes: Sequence[int], q: int = 0) -> int:
    """The automaton's state after bracket classes `classes` from state q (-1: refused)."""
    step, _ = _tables(rule)
    for c in classes:
        if q < 0:
            return q
        q = int(step[c, q])
    return q


def exit_allowed(rule: HoleRule, q: int) -> bool:
    return q >= 0 and bool(_tables(rule)[1][q])


# ---- judging a filled text ---------------------------------------------------------------

def violation(ref: ReferenceLexer, brackets: Brackets, chunks: Sequence[str],
              fills: Sequence[str], structure: Structure) -> str | None:
    """Why filling `chunks` with `fills` breaks `structure` (None: it keeps it). Judges the
    text: the brackets of each hole's region in the filled text's maximal-munch reading."""
    if structure.trivial:
        return None
    parts, regions, at = [], [], 0
    for h, chunk in enumerate(chunks):
        parts.append(chunk)
        at += len(chunk)
        if h < len(fills):
            start = structure.start(h)
            lo = at - len(chunk) + start if start is not None else at
            parts.append(fills[h])
            at += len(fills[h])
            regions.append((lo, at))
    text = "".join(parts)
    reading = ref.reading(text)
    for h, (lo, hi) in enumerate(regions):
        rule = structure.rules[h]
        if rule.one_line and ("\n" in text[lo:hi] or "\r" in text[lo:hi]):
            return f"the filling of hole {h} breaks a line that the user's code goes on"
        k = int(np.searchsorted(reading.starts, lo))
        classes = []
        while k < len(reading.starts) and int(reading.starts[k]) < hi:
            lab = int(reading.labels[k])
            if lab >= 0 and brackets.cls[lab] != NONE:
                classes.append(int(brackets.cls[lab]))
            k += 1
        q = run_rule(rule, classes)
        if q < 0:
            return (f"the filling of hole {h} closes a bracket of the user's that has a "
                    "partner, or nests too deep")
        if not exit_allowed(rule, q):
            return f"the filling of hole {h} leaves brackets open that nothing of the user's closes"
    return None


# ---- the product with the lexeme NFA -----------------------------------------------------

class StructureProduct:
    """The product of a lexeme NFA with one counter automaton per hole region, built as the
    NFA grows (the incremental engine's right context grows by entries).

    `add_states(regions)` numbers new NFA states (`regions`: the hole whose region holds
    each, -1 for fixed text outside every region): fixed states get one product state,
    region states one per counter state. `add_edges` maps new NFA edges. `origin_state[p]`
    and `origin_edge[e]` map product states and edges back (witness rendering)."""

    def __init__(self, structure: Structure, brackets: Brackets) -> None:
        self.structure = structure
        self.brackets = brackets
        self.tables = [_tables(r) for r in structure.rules]
        self.size = np.array([r.n_states for r in structure.rules] + [1], dtype=np.int64)
        self.first = np.zeros(0, dtype=np.int64)  # product id of (state, q=0)
        self.region = np.zeros(0, dtype=np.int64)
        self.n = 0  # product states so far
        self.origin_state = np.zeros(0, dtype=np.int64)
        self.origin_edge = np.zeros(0, dtype=np.int64)
        self.edge_of_chunk = np.zeros(0, dtype=np.int8)
        self.n_in_edges = 0

    @property
    def n_in_states(self) -> int:
        return len(self.region)

    def add_states(self, regions: np.ndarray | Sequence[int],
                   edge_of_chunk: np.ndarray | None = None) -> None:
        """`edge_of_chunk[s]`: 1 when state s lies at the end of a chunk (a lexeme from it
        into a hole has no fixed character), 2 at the start of one (a lexeme from a hole to
        it has none), 0 otherwise (see `regions_of`)."""
        regions = np.asarray(regions, dtype=np.int64)
        edges_of = (np.zeros(len(regions), dtype=np.int8) if edge_of_chunk is None
                    else np.asarray(edge_of_chunk, dtype=np.int8))
        self.edge_of_chunk = np.concatenate((self.edge_of_chunk, edges_of))
        if len(regions) == 0:
            return
        sizes = self.size[regions]  # region -1 reads the last entry (1)
        first = self.n + np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        base = len(self.region)
        self.first = np.concatenate((self.first, first))
        self.region = np.concatenate((self.region, regions))
        self.origin_state = np.concatenate(
            (self.origin_state, np.repeat(np.arange(base, base + len(regions)), sizes)))
        self.n += int(sizes.sum())

    def state(self, s: int, q: int = 0) -> int:
        """The product state of NFA state s with counter q (fixed states ignore q)."""
        return int(self.first[s]) + (q if self.region[s] >= 0 else 0)

    def copies(self, s: int, exiting: bool = False) -> list[int]:
        """Every product state of s (`exiting`: only those whose counter may leave)."""
        h = int(self.region[s])
        if h < 0:
            return [int(self.first[s])]
        _, ok = self.tables[h]
        qs = np.nonzero(ok)[0] if exiting else np.arange(len(ok))
        return (int(self.first[s]) + qs).tolist()

    def finals(self, finals: Sequence[int]) -> list[int]:
        return [p for s in finals for p in self.copies(s, exiting=True)]

    def add_edges(self, edges: array | np.ndarray,
                  terms: np.ndarray | Sequence[int] | None = None,
                  kinds: np.ndarray | Sequence[int] | None = None) -> array:
        """The product edges (flat int32 quadruples) of new NFA edges `edges`; `terms` and
        `kinds`: the terminal of each (epsilon edges carry one: Python's NL) and its kind
        (holefill.lexing.holes), for the one-line rule: in a one-line region an edge leaves
        no lexeme that needs a line break, and no layout token of the hole's own lines."""
        e = np.asarray(edges, dtype=np.int32).reshape(-1, 4).astype(np.int64)
        m = len(e)
        ids = np.arange(self.n_in_edges, self.n_in_edges + m, dtype=np.int64)
        self.n_in_edges += m
        if m == 0:
            return array("i")
        src, lab, dst, w = e[:, 0], e[:, 1], e[:, 2], e[:, 3]
        term = lab if terms is None else np.asarray(terms, dtype=np.int64)
        open_ = (self.edge_of_chunk[src] != BLOCKED) & (self.edge_of_chunk[dst] != BLOCKED)
        if not open_.all():
            src, lab, dst, w, ids = (x[open_] for x in (src, lab, dst, w, ids))
            term = term[open_]
            if kinds is not None:
                kinds = np.asarray(kinds)[open_]
        ra, rb = self.region[src], self.region[dst]
        cls = self.brackets.cls[lab].astype(np.int64)  # label -1 reads the last entry (NONE)
        nl = self.brackets.nl_mask[lab] | self.brackets.nl_mask[term]
        bound = self.brackets.line_bound
        nl |= (bound[lab] | bound[term]) & (self.edge_of_chunk[dst] == IN_HOLE)
        if kinds is not None:
            own = np.asarray(kinds, dtype=np.int64) == KIND_HOLE
            nl |= own & (self.brackets.layout_mask[lab] | self.brackets.layout_mask[term])
        # A bracket is the filling's when its character lies in the region: a lexeme that
        # enters the region counts only when it starts at a chunk's end, one that leaves it
        # only when it ends at a chunk's start (else its character is the user's: the `)`
        # right after the hole is read on an edge from the hole with no character in it).
        enter_cls = np.where(self.edge_of_chunk[src] == 1, cls, NONE)
        leave_cls = np.where((self.edge_of_chunk[dst] == 2) | (rb >= 0), cls, NONE)
        keep = (ra < 0) & (rb < 0)
        out = [(self.first[src[keep]], lab[keep], self.first[dst[keep]], w[keep], ids[keep])]
        for h, rule in enumerate(self.structure.rules):
            step, ok = self.tables[h]
            # entering the region from fixed text (from another region: see leaving); in a
            # one-line region not with a lexeme that needs a line break: mid-line, with no
            # line break before the hole on its line, that break would be the hole's
            sel = (ra < 0) & (rb == h)
            if rule.one_line:  # (into the hole itself: the text the filling wrote is known)
                sel &= ~(nl & (self.edge_of_chunk[dst] == IN_HOLE))
            if sel.any():
                q1 = step[enter_cls[sel], 0].astype(np.int64)
                fine = q1 >= 0
                s_, l_, d_, w_, i_ = (x[sel][fine] for x in (src, lab, dst, w, ids))
                out.append((self.first[s_], l_, self.first[d_] + q1[fine], w_, i_))
            sel = ra == h
            if rule.one_line:
                sel &= ~nl
            if sel.any():
                out.extend(self._from_region(h, rule, step, ok, sel, src, lab, dst, w, ids,
                                             np.where(rb == h, cls, leave_cls), rb))
        cat = [np.concatenate([o[i] for o in out]) for i in range(5)]
        self.origin_edge = np.concatenate((self.origin_edge, cat[4]))
        out_edges = array("i")
        out_edges.frombytes(np.stack(cat[:4], axis=1).astype(np.int32).tobytes())
        return out_edges

    def _from_region(self, h: int, rule: HoleRule, step: np.ndarray, ok: np.ndarray,
                     sel: np.ndarray, *cols: np.ndarray) -> list[tuple]:
        """Edges from region h's states, inside the region and leaving it."""
        src, lab, dst, w, ids, cls, rb = (x[sel] for x in cols)
        nq = rule.n_states
        qs = np.tile(np.arange(nq, dtype=np.int64), len(src))
        a, lb, b, wt, ei, c, to = (np.repeat(x, nq) for x in (src, lab, dst, w, ids, cls, rb))
        q2 = step[c, qs].astype(np.int64)
        alive = q2 >= 0
        inside = alive & (to == h)
        out = [(self.first[a[inside]] + qs[inside], lb[inside],
                self.first[b[inside]] + q2[inside], wt[inside], ei[inside])]
        # into fixed text, or through it straight into the next region, entered at its start
        leaving = alive & (to != h) & ok[np.where(alive, q2, 0)]
        out.append((self.first[a[leaving]] + qs[leaving], lb[leaving],
                    self.first[b[leaving]], wt[leaving], ei[leaving]))
        return out


def raw_keys(nfa: LexemeNFA) -> np.ndarray:
    """(chunk, pos, hole, kill) per state of a raw lexeme NFA (native or built in Python)."""
    spans = nfa.spans
    if isinstance(spans, PlaceSpans):
        return raw_place_keys(spans._graph, nfa.n_states)
    keys = np.full((nfa.n_states, 4), -1, dtype=np.int64)
    e = np.asarray(nfa.edges, dtype=np.int64).reshape(-1, 4)
    for i, (a, b) in enumerate(spans):
        keys[e[i, 0]] = (a.chunk, a.pos, a.hole, a.kill)
        keys[e[i, 2]] = (b.chunk, b.pos, b.hole, b.kill)
    return keys


def raw_place_keys(graph: NativeRawGraph, n_states: int) -> np.ndarray:
    """(chunk, pos, hole, kill) of the first n_states states of a native raw graph."""
    from holefill._native import ffi, lib

    if n_states == 0:
        return np.zeros((0, 4), dtype=np.int64)
    flat = np.frombuffer(ffi.buffer(lib.hf_raw_places(graph._g), 20 * n_states),
                         dtype=np.int32).reshape(-1, 5)
    return flat[:, :4].astype(np.int64)


def regions_of(keys: np.ndarray, structure: Structure, chunk_lengths: Sequence[int],
               killable: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The region (hole index, -1 outside every region) of states with place `keys`: a
    hole's own states, and the fixed text of chunk h from `structure.starts[h]` on; and
    `StructureProduct.add_states`'s chunk-edge flags, BLOCKED for a state of a one-line hole
    that owes a kill no text without a line break pays (`killable`: Brackets'; a directive
    begun before the hole ends there only at a line break)."""
    fixed = keys[:, 2] < 0
    region = np.where(fixed, -1, keys[:, 2])
    for h, start in enumerate(structure.starts):
        if start is not None and start < chunk_lengths[h]:
            region[(keys[:, 0] == h) & (keys[:, 1] >= start) & fixed] = h
    lengths = np.append(np.asarray(chunk_lengths, dtype=np.int64), -1)
    flags = np.zeros(len(keys), dtype=np.int8)
    flags[fixed & (keys[:, 1] == lengths[keys[:, 0]])] = 1
    flags[fixed & (keys[:, 1] == 0) & (keys[:, 0] > 0)] = 2
    flags[~fixed] = IN_HOLE
    if killable is not None:
        one_line = np.array([r.one_line for r in structure.rules] + [False], dtype=bool)
        # the obligation sits on the place at a chunk's end (on the next hole, the same
        # number) or in a hole
        owes = keys[:, 3] >= 0
        hole = np.where(owes, np.where(fixed, keys[:, 0], keys[:, 2]), -1)
        hole = np.where(hole < len(structure.rules), hole, -1)
        kill = np.where(owes, keys[:, 3], len(killable) - 1)
        flags[owes & one_line[hole] & ~killable[kill]] = BLOCKED
    return region, flags


def product_regions(nfa: LexemeNFA, structure: Structure, chunk_lengths: Sequence[int],
                    killable: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`regions_of` for the states of a (raw or layout) lexeme NFA."""
    if nfa.raw is None:
        return regions_of(raw_keys(nfa), structure, chunk_lengths, killable)
    raw = regions_of(raw_keys(nfa.raw), structure, chunk_lengths, killable)
    raw_state = np.asarray(nfa.raw_state if nfa.raw_state is not None else [], dtype=np.int64)
    return lift_regions(raw, raw_state, nfa.edges, nfa.raw_edge)


def lift_regions(raw: tuple[np.ndarray, np.ndarray], raw_state: np.ndarray, edges: object,
                 raw_edge: object) -> tuple[np.ndarray, np.ndarray]:
    """Regions and flags of a layout product's states from their raw states'; a state that
    stands for no raw state (between two layout tokens) takes its predecessor's region along
    layout edges (and no flag: a layout token has no character)."""
    raw_region, raw_flags = np.append(raw[0], -1), np.append(raw[1], 0)  # -1 reads these
    idx = np.where(raw_state >= 0, raw_state, -1)
    region, flags = raw_region[idx], raw_flags[idx]
    unknown = raw_state < 0
    if unknown.any():
        e = np.asarray(edges, dtype=np.int64).reshape(-1, 4)
        layout = np.asarray(raw_edge, dtype=np.int64) < 0
        src, dst = e[layout, 0], e[layout, 2]
        for _ in range(8):
            fix = unknown[dst] & ~unknown[src]
            if not fix.any():
                break
            region[dst[fix]] = region[src[fix]]
            unknown[dst[fix]] = False
    return region, flags


class FillJudge:
    """Rules (1)-(4) on one hole's filling as decoding grows it, judged on the text: the
    filling's bracket lexemes in the reading of `before` + filling (`before`: the user's text
    up to the hole). Brackets after an error character (a string still open at the end of
    the text so far) are not judged yet: they may be string content once it closes."""

    CONTEXT = 2000  # characters of `before` kept (back to a lexeme boundary)

    def __init__(self, ref: ReferenceLexer, brackets: Brackets, before: str,
                 rule: HoleRule) -> None:
        self.ref, self.brackets, self.rule = ref, brackets, rule
        # Maximal munch from a lexeme boundary of `before`'s reading reads the rest of it
        # (and the filling after it) as the whole does: each token re-reads a short text.
        cut = 0
        if len(before) > self.CONTEXT:
            reading = ref.part_reading(before)
            k = int(np.searchsorted(reading.starts, len(before) - self.CONTEXT, side="right"))
            cut = int(reading.starts[k - 1]) if k > 0 else 0
        self.before = before[cut:]

    def state(self, fill: str, complete: bool) -> int:
        """The rule's automaton state after `fill` (-1: broken; `complete`: the filling ends
        here, so every bracket counts)."""
        if self.rule.one_line and ("\n" in fill or "\r" in fill):
            return -1
        n = len(self.before)
        reading = self.ref.reading(self.before + fill)
        k = int(np.searchsorted(reading.starts, n))
        classes = []
        while k < len(reading.starts):
            lab = int(reading.labels[k])
            if lab == ERROR and not complete:
                break
            if lab >= 0 and self.brackets.cls[lab] != NONE:
                classes.append(int(self.brackets.cls[lab]))
            k += 1
        return run_rule(self.rule, classes)

    def may_grow(self, fill: str) -> bool:
        return self.state(fill, complete=False) >= 0

    def may_end(self, fill: str) -> bool:
        return exit_allowed(self.rule, self.state(fill, complete=True))
