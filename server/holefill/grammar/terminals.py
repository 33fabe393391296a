"""Terminals of a grammar file: their regexes, the combined lexer DFA, and subset relations.

Which terminals are lexemes: every named terminal used in a rule or `%ignore`d, every string or
regex literal written in a rule (anonymous terminals), and the `%declare`d ones (no regex; the
layout lexer emits them). A named terminal used only inside other terminals (`DIGIT` in
`NUMBER`) is not a lexeme, as in Lark.

Tie-break order among terminals matching the same longest text (`rank_key`, smaller wins):
higher priority, then string literal over regex, then declaration order (the order of first
appearance in the file).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from ..errors import GrammarError
from . import regex as rx
from .automata import DFA, NFA, determinize, minimize, shortest_examples
from .meta import (
    Definition,
    GrammarFile,
    Group,
    Item,
    Lit,
    Pos,
    Range,
    Ref,
    Regex,
    Repeat,
    walk_items,
)
from .tables import LexerDFA, TerminalInfo, literal_name


@dataclass
class TermSpec:
    name: str
    node: rx.Node | None          # None for %declare'd terminals
    pattern: str
    literal: str | None           # exact text of a case-sensitive string literal
    is_literal: bool              # any string literal (also "..."i): wins ties over regexes
    priority: int
    order: int                    # source offset of the definition or first use
    pos: Pos
    ignored: bool = False
    declared: bool = False
    layout: bool = False          # kept for the language's layout lexer, unused by rules

    def rank_key(self) -> tuple[int, int, int]:
        return (-self.priority, 0 if self.is_literal else 1, self.order)


def regex_name(pattern: str, flags: str) -> str:
    """Name of an anonymous regex terminal: its source form `/pattern/flags`."""
    return f"/{pattern}/{flags}"


def _flag_wrap(pattern: str, flags: str) -> str:
    return f"(?{flags}:{pattern})" if flags else pattern


class TerminalTable:
    """Collects the terminals of a grammar file and maps rule items to terminal names."""

    def __init__(self, g: GrammarFile) -> None:
        self.g = g
        self.specs: dict[str, TermSpec] = {}
        self._nodes: dict[str, rx.Node] = {}
        self.warnings: list[str] = []
        # named terminals whose whole definition is one literal / one regex share with
        # anonymous uses of the same literal / regex
        self._lit_alias: dict[tuple[str, bool], str] = {}
        self._re_alias: dict[tuple[str, str], str] = {}
        for d in g.terminals.values():
            if len(d.alts) == 1 and len(d.alts[0]) == 1:
                it = d.alts[0][0]
                if isinstance(it, Lit):
                    self._lit_alias.setdefault((it.text, it.icase), d.name)
                elif isinstance(it, Regex):
                    self._re_alias.setdefault((it.pattern, it.flags), d.name)
        used_named: set[str] = set()
        for d in g.rules.values():
            for it in walk_items(d.alts):
                if isinstance(it, Ref) and it.name in g.terminals:
                    used_named.add(it.name)
                elif isinstance(it, Lit) and (it.text, it.icase) in self._lit_alias:
                    used_named.add(self._lit_alias[(it.text, it.icase)])
                elif isinstance(it, Regex) and (it.pattern, it.flags) in self._re_alias:
                    used_named.add(self._re_alias[(it.pattern, it.flags)])
        for it in g.ignore + g.layout:
            if isinstance(it, Ref):
                used_named.add(it.name)
        for name in g.terminals:
            if name not in used_named and not any(
                    isinstance(it, Ref) and it.name == name
                    for d in g.terminals.values() for it in walk_items(d.alts)):
                self.warnings.append(f"terminal {name} (line {g.terminals[name].pos.line}) "
                                     "is never used")
        for name in sorted(used_named, key=lambda n: g.terminals[n].pos.offset):
            self._add_named(g.terminals[name])
        for name, pos in g.declare.items():
            self.specs[name] = TermSpec(name, None, "", None, False, 0, pos.offset, pos,
                                        declared=True)
        for d in g.rules.values():
            for it in walk_items(d.alts):
                if isinstance(it, (Lit, Regex)):
                    self.terminal_for(it)
        for it in g.ignore:
            name = self.terminal_for(it)
            self.specs[name].ignored = True
        for it in g.layout:
            self.specs[self.terminal_for(it)].layout = True
        for lit in g.soft:
            if self.lit_terminal(lit) not in self.specs:
                raise g.error(lit.pos, f"%soft literal {literal_name(lit.text)} is not used in "
                                       "any rule")

    # -- naming
    def lit_terminal(self, it: Lit) -> str:
        alias = self._lit_alias.get((it.text, it.icase))
        if alias is not None:
            return alias
        return literal_name(it.text) + ("i" if it.icase else "")

    def terminal_for(self, it: Item) -> str:
        """The terminal name for a rule item Ref (terminal), Lit or Regex; creates anonymous
        terminals on first use."""
        if isinstance(it, Ref):
            return it.name
        if isinstance(it, Lit):
            name = self.lit_terminal(it)
            if name not in self.specs:
                node = rx.literal(it.text, it.icase)
                pat = _flag_wrap(re.escape(it.text), "i" if it.icase else "")
                self.specs[name] = TermSpec(name, node, pat, None if it.icase else it.text,
                                            True, 0, it.pos.offset, it.pos)
            return name
        if isinstance(it, Regex):
            name = self._re_alias.get((it.pattern, it.flags)) or regex_name(it.pattern, it.flags)
            if name not in self.specs:
                node = rx.parse_regex(it.pattern, it.flags)
                self.specs[name] = TermSpec(name, node, _flag_wrap(it.pattern, it.flags), None,
                                            False, 0, it.pos.offset, it.pos)
            return name
        raise TypeError(it)  # pragma: no cover

    def _add_named(self, d: Definition) -> None:
        node = self.node_of(d.name)
        if len(d.alts) == 1 and len(d.alts[0]) == 1 and isinstance(d.alts[0][0], Lit):
            lit = d.alts[0][0]
            literal = None if lit.icase else lit.text
            is_lit = True
            pattern = _flag_wrap(re.escape(lit.text), "i" if lit.icase else "")
        elif len(d.alts) == 1 and len(d.alts[0]) == 1 and isinstance(d.alts[0][0], Regex):
            r = d.alts[0][0]
            literal, is_lit, pattern = None, False, _flag_wrap(r.pattern, r.flags)
        else:
            literal, is_lit, pattern = None, False, rx.to_pattern(node)
        self.specs[d.name] = TermSpec(d.name, node, pattern, literal, is_lit, d.priority,
                                      d.pos.offset, d.pos)

    def node_of(self, name: str) -> rx.Node:
        node = self._nodes.get(name)
        if node is None:
            node = _alts_node(self.g.terminals[name].alts, self.node_of)
            self._nodes[name] = node
        return node

    def ordered(self) -> list[TermSpec]:
        return sorted(self.specs.values(), key=lambda s: (s.order, s.name))


def _alts_node(alts, node_of) -> rx.Node:
    return rx.alt([rx.seq([_item_node(it, node_of) for it in seq]) if seq else rx.EMPTY
                   for seq in alts])


def _item_node(it: Item, node_of) -> rx.Node:
    if isinstance(it, Lit):
        return rx.literal(it.text, it.icase)
    if isinstance(it, Regex):
        return rx.parse_regex(it.pattern, it.flags)
    if isinstance(it, Range):
        return rx.chars([(ord(it.lo), ord(it.hi))])
    if isinstance(it, Ref):
        return node_of(it.name)
    if isinstance(it, Group):
        n = _alts_node(it.alts, node_of)
        return rx.rep(n, 0, 1) if it.optional else n
    if isinstance(it, Repeat):
        return rx.rep(_item_node(it.item, node_of), it.lo, it.hi)
    raise TypeError(it)  # pragma: no cover


# ----------------------------------------------------------------------------- lexer


@dataclass
class LexerBuild:
    lexer: LexerDFA
    examples: dict[int, str]
    subsets: set[tuple[int, int]]            # (a, b): every word of a is a word of b, a != b
    overlaps: dict[tuple[int, int], str]     # (a, b), a < b: some common word (an example)
    never: dict[int, int] = field(default_factory=dict)   # a -> b that takes all of a's words


def build_lexer(g: GrammarFile, terms: list[TermSpec]) -> LexerBuild:
    """The combined minimal lexer DFA over `terms` (ids = list indices; declared ones are
    skipped) and the subset/overlap relations between terminals."""
    nfa = NFA()
    starts = []
    for tid, t in enumerate(terms):
        if t.node is None:
            continue
        starts.append(nfa.add(t.node, tid))
    dfa, label_sets = determinize(nfa, starts)
    if label_sets[0]:
        tid = min(label_sets[0], key=lambda i: terms[i].rank_key())
        raise g.error(terms[tid].pos, f"terminal {terms[tid].name} matches the empty string")
    rank = {tid: t.rank_key() for tid, t in enumerate(terms)}
    accept = [min(ls, key=rank.__getitem__) if ls else -1 for ls in label_sets]
    # relations, from the (unminimized) subset construction: each state is the set of NFA
    # states reached by some word, so labels in one state share that word.
    with_label: dict[int, frozenset[int] | None] = {}
    for ls in label_sets:
        for a in ls:
            cur = with_label.get(a)
            with_label[a] = ls if cur is None else cur & ls
    subsets = {(a, b) for a, common in with_label.items() if common for b in common if b != a}
    words = _bfs_words(dfa)
    overlaps: dict[tuple[int, int], str] = {}
    for s, ls in enumerate(label_sets):
        if len(ls) > 1:
            for a in ls:
                for b in ls:
                    if a < b and (a, b) not in subsets and (b, a) not in subsets:
                        w = words[s]
                        if (a, b) not in overlaps or len(w) < len(overlaps[(a, b)]):
                            overlaps[(a, b)] = w
    dfa.accept = accept
    m = minimize(dfa)
    examples = shortest_examples(m.boundaries, m.trans, m.accept)
    never: dict[int, int] = {}
    for tid, t in enumerate(terms):
        if t.node is not None and tid not in examples:
            winners = [b for (a, b) in subsets if a == tid and rank[b] < rank[tid]]
            never[tid] = min(winners, key=rank.__getitem__) if winners else -1
    return LexerBuild(to_lexer_dfa(m), examples, subsets, overlaps, never)


def _bfs_words(dfa: DFA) -> list[str]:
    from .automata import class_examples
    reps = class_examples(dfa)
    order = sorted(range(dfa.n_classes), key=lambda c: reps[c])
    words = [""] * dfa.n_states
    seen = [False] * dfa.n_states
    seen[0] = True
    q = deque([0])
    while q:
        s = q.popleft()
        for c in order:
            t = dfa.trans[s][c]
            if t >= 0 and not seen[t]:
                seen[t] = True
                words[t] = words[s] + chr(reps[c][1])
                q.append(t)
    return words


def to_lexer_dfa(m: DFA) -> LexerDFA:
    n = m.n_states
    trans = m.trans
    # alive: labels reachable (incl. self), by fixpoint
    alive: list[set[int]] = [({m.accept[s]} if m.accept[s] >= 0 else set()) for s in range(n)]
    succ = [sorted({t for t in row if t >= 0}) for row in trans]
    changed = True
    while changed:
        changed = False
        for s in range(n - 1, -1, -1):
            a = alive[s]
            before = len(a)
            for t in succ[s]:
                a |= alive[t]
            if len(a) != before:
                changed = True
    # killable: a non-empty path to dead through non-accepting states only (s excluded)
    k_na = [False] * n      # for non-accepting q: q can reach dead through non-accepting states
    changed = True
    while changed:
        changed = False
        for q in range(n):
            if k_na[q] or m.accept[q] >= 0:
                continue
            if any(t < 0 or (m.accept[t] < 0 and k_na[t]) for t in trans[q]):
                k_na[q] = True
                changed = True
    killable = [any(t < 0 or (m.accept[t] < 0 and k_na[t]) for t in trans[s]) for s in range(n)]
    reach: set[int] = set()
    stack = [t for t in trans[0] if t >= 0]
    reach.update(stack)
    while stack:
        s = stack.pop()
        for t in succ[s]:
            if t not in reach:
                reach.add(t)
                stack.append(t)
    bounds = tuple(m.boundaries)
    import bisect
    return LexerDFA(
        boundaries=bounds,
        trans=tuple(tuple(r) for r in trans),
        accept=tuple(m.accept),
        alive=tuple(frozenset(a) for a in alive),
        killable=tuple(killable),
        reachable=tuple(sorted(reach)),
        start=0,
        class_of_ascii=tuple(bisect.bisect_right(bounds, c) for c in range(128)),
    )


def terminal_infos(terms: list[TermSpec], examples: dict[int, str]) -> tuple[TerminalInfo, ...]:
    return tuple(TerminalInfo(t.name, t.pattern, t.literal, t.priority, t.ignored,
                              examples.get(i), t.layout) for i, t in enumerate(terms))


def check_error(g: GrammarFile, pos: Pos, msg: str) -> GrammarError:
    return g.error(pos, msg)
