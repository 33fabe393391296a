"""EBNF rules -> plain CFG -> size reductions (paper App. B.2) -> 2NF (C2F+eps).

A plain CFG here is a dict from nonterminal name to a list of productions (tuples of symbol
names); terminal names are kept in a set. Generated nonterminals get readable names derived
from the rule they come from:
  rule.grpN   a parenthesised group with several alternatives
  rule.optN   `[x]` or `x?`
  rule.starN  `x*` (left-recursive: L -> eps | L x)
  rule.plusN  `x+` (left-recursive: L -> x | L x)
  rule.repN   `x ~ m..n`
  rule.lfN    left factoring of `rule`'s productions
  <X Y>       a shared 2-gram
  rule.bN     binarization (shared between productions with the same suffix)
  any(T)      terminal T or a subset terminal that the lexer takes from T (see `rewrite_subsets`)

Size reductions, in order, with useless-symbol removal (non-generating, then unreachable)
between passes: inlining (a nonterminal used once, or with a single production of length <= 1,
when that does not grow the 2NF cost), merging nonterminals with identical productions, left
factoring (when it pays), shared 2-gram elimination, then binarization.

The 2NF cost used to decide is 10 per binary production and 1 per unit or empty production
(the checker's work grows with the cube of the automaton size for binary rules and only the
square for unit rules).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .meta import GrammarFile, Group, Item, Lit, Ref, Regex, Repeat
from .tables import GrammarSize, NormalGrammar, TerminalInfo
from .terminals import TerminalTable

Prod = tuple[str, ...]


@dataclass
class CFG:
    start: str
    prods: dict[str, list[Prod]]
    terminals: set[str]
    _counter: Counter[str] = field(default_factory=Counter)

    def fresh(self, base: str, kind: str) -> str:
        while True:
            self._counter[(base, kind)] += 1  # type: ignore[index]
            name = f"{base}.{kind}{self._counter[(base, kind)]}"  # type: ignore[index]
            if name not in self.prods:
                return name

    def copy(self) -> CFG:
        return CFG(self.start, {a: list(ps) for a, ps in self.prods.items()},
                   set(self.terminals), Counter(self._counter))


def size(cfg: CFG) -> GrammarSize:
    prods = [p for ps in cfg.prods.values() for p in ps]
    used_t = {s for p in prods for s in p if s in cfg.terminals}
    return GrammarSize(len(cfg.prods), len(prods), len(used_t), sum(len(p) for p in prods))


def cost(p: Prod) -> int:
    return 10 * (len(p) - 1) if len(p) >= 2 else 1


# ----------------------------------------------------------------------------- EBNF -> CFG


def from_grammar(g: GrammarFile, table: TerminalTable) -> CFG:
    cfg = CFG("start", {}, set(table.specs))
    for name in g.rules:
        cfg.prods[name] = []
    for name, d in g.rules.items():
        cfg.prods[name] = [_seq(cfg, table, seq, name) for seq in d.alts]
    return cfg


def _seq(cfg: CFG, table: TerminalTable, seq: tuple[Item, ...], owner: str) -> Prod:
    out: list[str] = []
    for it in seq:
        if out and isinstance(it, Repeat) and it.hi is None and it.lo in (0, 1):
            # `α Z*` becomes one left-recursive L -> α | L Z (and `α Z+`: L -> α Z | L Z)
            # rather than α followed by a nullable list: a nullable list can start at every
            # position, so bottom-up search would build it over every sub-span (quadratic
            # in the list's length); L can only start where α does.
            body = _item(cfg, table, it.item, owner)
            nt = cfg.fresh(owner, "list")
            first = tuple(out) + (tuple(body) if it.lo == 1 else ())
            cfg.prods[nt] = [first, (nt, *body)]
            out = [nt]
            continue
        out.extend(_item(cfg, table, it, owner))
    return tuple(out)


def _item(cfg: CFG, table: TerminalTable, it: Item, owner: str) -> list[str]:
    if isinstance(it, (Lit, Regex)):
        return [table.terminal_for(it)]
    if isinstance(it, Ref):
        return [it.name]
    if isinstance(it, Group):
        if not it.optional and len(it.alts) == 1:
            return list(_seq(cfg, table, it.alts[0], owner))
        nt = cfg.fresh(owner, "opt" if it.optional else "grp")
        cfg.prods[nt] = []
        ps = [_seq(cfg, table, s, owner) for s in it.alts]
        cfg.prods[nt] = ([()] if it.optional else []) + ps
        return [nt]
    if isinstance(it, Repeat):
        body = _item(cfg, table, it.item, owner)
        lo, hi = it.lo, it.hi
        if (lo, hi) == (0, 1):
            nt = cfg.fresh(owner, "opt")
            cfg.prods[nt] = [(), tuple(body)]
        elif (lo, hi) == (0, None):
            nt = cfg.fresh(owner, "star")
            cfg.prods[nt] = [(), (nt, *body)]
        elif (lo, hi) == (1, None):
            nt = cfg.fresh(owner, "plus")
            cfg.prods[nt] = [tuple(body), (nt, *body)]
        elif hi is None:
            nt = cfg.fresh(owner, "plus")
            cfg.prods[nt] = [tuple(body), (nt, *body)]
            return body * (lo - 1) + [nt]
        else:
            nt = cfg.fresh(owner, "rep")
            cfg.prods[nt] = [tuple(body * j) for j in range(lo, hi + 1)]
        return [nt]
    raise TypeError(it)  # pragma: no cover


def rewrite_subsets(cfg: CFG, allowed: dict[str, list[str]]) -> CFG:
    """Wherever terminal b stands, allow the terminals allowed[b] too (through any(b))."""
    out = cfg.copy()
    rename = {}
    for b, subs in allowed.items():
        if not subs:
            continue
        nt = f"any({b})"
        rename[b] = nt
    for a, ps in out.prods.items():
        out.prods[a] = [tuple(rename.get(s, s) for s in p) for p in ps]
    for b, nt in rename.items():
        alts: list[Prod] = [(b,)]
        alts.extend((a,) for a in allowed[b])
        out.prods[nt] = alts
    return out


# ----------------------------------------------------------------------------- reductions


def remove_useless(cfg: CFG) -> CFG:
    """Drop non-generating nonterminals (and productions using them), then unreachable ones.
    When the start symbol is non-generating the result has only `start` with no production."""
    prods = cfg.prods
    gen: set[str] = set()
    changed = True
    while changed:
        changed = False
        for a, ps in prods.items():
            if a in gen:
                continue
            if any(all(s in gen or s in cfg.terminals for s in p) for p in ps):
                gen.add(a)
                changed = True
    if cfg.start not in gen:
        return CFG(cfg.start, {cfg.start: []}, cfg.terminals, cfg._counter)
    new = {a: [p for p in ps if all(s in gen or s in cfg.terminals for s in p)]
           for a, ps in prods.items() if a in gen}
    reach = {cfg.start}
    stack = [cfg.start]
    while stack:
        a = stack.pop()
        for p in new[a]:
            for s in p:
                if s in new and s not in reach:
                    reach.add(s)
                    stack.append(s)
    return CFG(cfg.start, {a: ps for a, ps in new.items() if a in reach}, cfg.terminals,
               cfg._counter)


def dedupe(cfg: CFG) -> None:
    """Remove duplicate productions and trivial A -> A, in place."""
    for a, ps in cfg.prods.items():
        seen: set[Prod] = set()
        out = []
        for p in ps:
            if p == (a,) or p in seen:
                continue
            seen.add(p)
            out.append(p)
        cfg.prods[a] = out


def merge_equivalent(cfg: CFG) -> None:
    """Merge nonterminals with the same productions (a self-reference counts as equal)."""
    while True:
        sig: dict[frozenset[Prod], str] = {}
        rename: dict[str, str] = {}
        for a, ps in cfg.prods.items():
            if a == cfg.start:
                continue
            key = frozenset(tuple("\0self" if s == a else s for s in p) for p in ps)
            if key in sig:
                rename[a] = sig[key]
            else:
                sig[key] = a
        if not rename:
            return
        for a in rename:
            del cfg.prods[a]
        for a, ps in cfg.prods.items():
            cfg.prods[a] = [tuple(rename.get(s, s) for s in p) for p in ps]
        dedupe(cfg)


def _count(cfg: CFG) -> tuple[Counter[str], defaultdict[str, set[str]]]:
    count: Counter[str] = Counter()
    users: defaultdict[str, set[str]] = defaultdict(set)
    for a, ps in cfg.prods.items():
        for p in ps:
            for s in p:
                if s in cfg.prods:
                    count[s] += 1
                    users[s].add(a)
    return count, users


def inline(cfg: CFG) -> bool:
    """Inline nonterminals used once, and nonterminals with one production of length <= 1,
    when the 2NF cost does not grow. Returns True when something changed."""
    count, users = _count(cfg)
    changed = False
    for b in list(cfg.prods):
        if b == cfg.start or b not in cfg.prods:
            continue
        gammas = cfg.prods[b]
        if any(b in g for g in gammas):
            continue
        c = count[b]
        alias = len(gammas) == 1 and len(gammas[0]) <= 1
        if c == 0 or not (c == 1 or alias):
            continue
        hosts = [a for a in users[b] if a in cfg.prods and a != b]
        before = sum(cost(g) for g in gammas)
        after = 0
        new_lists: dict[str, list[Prod]] = {}
        for a in hosts:
            lst: list[Prod] = []
            for p in cfg.prods[a]:
                if b not in p:
                    lst.append(p)
                    continue
                before += cost(p)
                for q in _substitute(p, b, gammas):
                    after += cost(q)
                    lst.append(q)
            new_lists[a] = lst
        if not new_lists or after > before:
            continue
        for a, lst in new_lists.items():
            for p in cfg.prods[a]:
                for s in p:
                    if s in cfg.prods:
                        count[s] -= 1
            for p in lst:
                for s in p:
                    if s in cfg.prods:
                        count[s] += 1
                        users[s].add(a)
            cfg.prods[a] = lst
        for g in gammas:
            for s in g:
                if s in cfg.prods:
                    count[s] -= 1
        del cfg.prods[b]
        count[b] = 0
        changed = True
    return changed


def collapse_units(cfg: CFG) -> bool:
    """A -> B as A's only production, with B used nowhere else: B's productions become A's
    (also when B is recursive, which `inline` cannot handle)."""
    count, _users = _count(cfg)
    changed = False
    for a in list(cfg.prods):
        ps = cfg.prods.get(a)
        if not ps or len(ps) != 1 or len(ps[0]) != 1:
            continue
        b = ps[0][0]
        if b not in cfg.prods or b == a or b == cfg.start or count[b] != 1:
            continue
        cfg.prods[a] = [tuple(a if s == b else s for s in p) for p in cfg.prods[b]]
        del cfg.prods[b]
        count[b] = 0
        changed = True
    return changed


def _substitute(p: Prod, b: str, gammas: list[Prod]) -> list[Prod]:
    outs: list[list[str]] = [[]]
    for s in p:
        if s == b:
            outs = [o + list(g) for o in outs for g in gammas]
        else:
            for o in outs:
                o.append(s)
    return [tuple(o) for o in outs]


def left_factor(cfg: CFG) -> bool:
    """Factor shared prefixes of a nonterminal's productions when that lowers the 2NF cost."""
    changed = False
    queue = list(cfg.prods)
    while queue:
        a = queue.pop()
        ps = cfg.prods.get(a)
        if not ps:
            continue
        groups: dict[str, list[Prod]] = {}
        for p in ps:
            if p:
                groups.setdefault(p[0], []).append(p)
        new_ps: list[Prod] = []
        done: set[str] = set()
        did = False
        for p in ps:
            if not p or len(groups[p[0]]) < 2:
                new_ps.append(p)
                continue
            if p[0] in done:
                continue
            done.add(p[0])
            grp = groups[p[0]]
            m = _lcp(grp)
            rests = [q[m:] for q in grp]
            before = sum(cost(q) for q in grp)
            after = cost(grp[0][:m] + ("x",)) + sum(cost(r) for r in rests)
            if after >= before:
                new_ps.extend(grp)
                continue
            nt = cfg.fresh(a, "lf")
            cfg.prods[nt] = rests
            new_ps.append(grp[0][:m] + (nt,))
            queue.append(nt)
            did = True
        if did:
            cfg.prods[a] = new_ps
            changed = True
    return changed


def _lcp(ps: list[Prod]) -> int:
    m = min(len(p) for p in ps)
    for i in range(m):
        if any(p[i] != ps[0][i] for p in ps):
            return i
    return m


def eliminate_2grams(cfg: CFG) -> bool:
    """Replace the most frequent pair `X Y` (in productions of length >= 3) by a new
    nonterminal `<X Y>`, while some pair occurs at least twice."""
    changed = False
    while True:
        counts: Counter[tuple[str, str]] = Counter()
        for ps in cfg.prods.values():
            for p in ps:
                if len(p) < 3:
                    continue
                i = 0
                last: tuple[str, str] | None = None
                last_i = -2
                for i in range(len(p) - 1):
                    pair = (p[i], p[i + 1])
                    if pair == last and last_i == i - 1:
                        continue          # overlapping occurrence (X X X)
                    counts[pair] += 1
                    last, last_i = pair, i
        if not counts:
            return changed
        pair, n = counts.most_common(1)[0]
        if n < 2:
            return changed
        nt = f"<{pair[0]} {pair[1]}>"
        while nt in cfg.prods:
            nt += "'"
        for a, ps in cfg.prods.items():
            new = []
            for p in ps:
                if len(p) >= 3:
                    q: list[str] = []
                    i = 0
                    while i < len(p):
                        if i + 1 < len(p) and (p[i], p[i + 1]) == pair:
                            q.append(nt)
                            i += 2
                        else:
                            q.append(p[i])
                            i += 1
                    p = tuple(q)
                new.append(p)
            cfg.prods[a] = new
        cfg.prods[nt] = [pair]
        changed = True


def binarize(cfg: CFG) -> None:
    """Right-fold productions longer than 2; suffixes are shared between productions."""
    memo: dict[Prod, str] = {}
    for a in list(cfg.prods):
        new = []
        for p in cfg.prods[a]:
            if len(p) <= 2:
                new.append(p)
                continue
            new.append((p[0], _suffix(cfg, memo, p[1:], a)))
        cfg.prods[a] = new


def _suffix(cfg: CFG, memo: dict[Prod, str], suf: Prod, owner: str) -> str:
    nt = memo.get(suf)
    if nt is not None:
        return nt
    nt = cfg.fresh(owner, "b")
    memo[suf] = nt
    cfg.prods[nt] = [suf if len(suf) == 2 else (suf[0], _suffix(cfg, memo, suf[1:], owner))]
    return nt


def normalize(cfg: CFG) -> CFG:
    """All size reductions, then binarization; the result is in 2NF and reduced."""
    cfg = remove_useless(cfg)
    dedupe(cfg)
    for _ in range(20):
        merge_equivalent(cfg)
        changed = inline(cfg)
        changed = collapse_units(cfg) or changed
        cfg = remove_useless(cfg)
        dedupe(cfg)
        if not changed:
            break
    if left_factor(cfg):
        cfg = remove_useless(cfg)
        dedupe(cfg)
        inline(cfg)
        cfg = remove_useless(cfg)
        dedupe(cfg)
    eliminate_2grams(cfg)
    binarize(cfg)
    cfg = remove_useless(cfg)
    dedupe(cfg)
    merge_equivalent(cfg)
    return remove_useless(cfg)


def to_normal_grammar(cfg: CFG, terminals: tuple[TerminalInfo, ...]) -> NormalGrammar:
    tid = {t.name: i for i, t in enumerate(terminals)}
    names = [cfg.start] + [a for a in cfg.prods if a != cfg.start]
    nid = {a: len(terminals) + i for i, a in enumerate(names)}

    def sid(s: str) -> int:
        return tid[s] if s in tid else nid[s]

    binary, unary, nullable = [], [], []
    for a, ps in cfg.prods.items():
        for p in ps:
            if len(p) == 2:
                binary.append((nid[a], sid(p[0]), sid(p[1])))
            elif len(p) == 1:
                unary.append((nid[a], sid(p[0])))
            elif not p:
                nullable.append(nid[a])
            else:  # pragma: no cover
                raise ValueError(f"not in 2NF: {a} -> {p}")
    return NormalGrammar(terminals, tuple(names), nid[cfg.start], tuple(binary),
                         tuple(unary), tuple(nullable))


def naive_2nf_size(cfg: CFG) -> GrammarSize:
    """Size of the 2NF obtained by binarization alone (no size reductions), for comparison."""
    c = remove_useless(cfg.copy())
    binarize(c)
    return size(c)


def pretty(ng: NormalGrammar) -> str:
    """The 2NF grammar as text, one production per line (for debugging)."""
    names = [t.name for t in ng.terminals] + list(ng.nonterminals)
    lines = [f"{names[a]} -> {names[x]} {names[y]}" for a, x, y in ng.binary]
    lines += [f"{names[a]} -> {names[x]}" for a, x in ng.unary]
    lines += [f"{names[a]} -> ε" for a in ng.nullable]
    return "\n".join(sorted(lines))
