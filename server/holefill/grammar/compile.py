"""Grammar file -> CompiledGrammar (2NF grammar + lexer DFA), with caches and stats."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import pickle
import time
from pathlib import Path

from .automata import DFA, TerminalAutomata, nfa_to_min_dfa, terminal_automata
from .cfg import (
    from_grammar,
    naive_2nf_size,
    normalize,
    rewrite_subsets,
    size,
    to_normal_grammar,
)
from .meta import parse_grammar
from .regex import parse_regex
from .tables import CompiledGrammar, TerminalInfo
from .terminals import TerminalTable, build_lexer, terminal_infos

log = logging.getLogger(__name__)

TOOLCHAIN_VERSION = "1"
CACHE_THRESHOLD_S = 0.3      # compile times above this are worth a pickle on disk

_memo: dict[tuple[str, str, str], CompiledGrammar] = {}


def compile_grammar_text(source: str, path: str = "<grammar>",
                         language: str = "") -> CompiledGrammar:
    """Compile grammar text; raises GrammarError (with path:line:col and a caret)."""
    g = parse_grammar(source, path)
    table = TerminalTable(g)
    terms = table.ordered()
    build = build_lexer(g, terms)
    infos = terminal_infos(terms, build.examples)
    warnings = list(table.warnings)
    rank = {i: t.rank_key() for i, t in enumerate(terms)}
    soft = {table.lit_terminal(lit) for lit in g.soft}
    cfg = from_grammar(g, table)
    used = {s for ps in cfg.prods.values() for p in ps for s in p if s in cfg.terminals}
    allowed: dict[str, list[str]] = {}
    allowed_pairs: list[tuple[int, int]] = []
    for a, b in sorted(build.subsets):
        ta, tb = terms[a], terms[b]
        if rank[a] >= rank[b]:
            continue                          # b wins ties: a is shadowed (warned below)
        if ta.ignored and not tb.ignored and tb.name in used:
            warnings.append(f"ignored terminal {ta.name} takes words of {tb.name} "
                            f"(e.g. {infos[a].example!r}): they are dropped, never {tb.name}")
            continue
        if ta.ignored or tb.ignored or tb.name not in used:
            continue
        if ta.is_literal and ta.name not in soft:
            continue                          # a reserved word
        allowed.setdefault(tb.name, []).append(ta.name)
        allowed_pairs.append((a, b))
    for a, b in sorted(build.never.items()):
        if terms[a].ignored or terms[a].declared:
            continue
        by = f": its words are lexed as {terms[b].name}" if b >= 0 else ""
        warnings.append(f"terminal {terms[a].name} is never produced by the lexer{by}")
    for (a, b), w in sorted(build.overlaps.items()):
        ta, tb = terms[a], terms[b]
        if ta.literal is not None or tb.literal is not None:
            continue
        win = ta if rank[a] < rank[b] else tb
        warnings.append(f"terminals {ta.name} and {tb.name} overlap (e.g. {w!r}, lexed as "
                        f"{win.name})")
    cfg = rewrite_subsets(cfg, allowed)
    before = size(cfg)
    naive = naive_2nf_size(cfg)
    cfg = normalize(cfg)
    after = size(cfg)
    ng = to_normal_grammar(cfg, infos)
    return CompiledGrammar(language, path, ng, build.lexer, before, after, tuple(warnings),
                           tuple(allowed_pairs), naive)


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "holefill"


def compile_grammar_file(path: str | os.PathLike[str], language: str = "",
                         disk_cache: bool = True) -> CompiledGrammar:
    """Compile a grammar file (memoized per process by content; a pickle cache keyed by the
    file's sha256 and the toolchain version is used when compiling is slow)."""
    p = str(path)
    data = Path(p).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    key = (p, language, digest)
    hit = _memo.get(key)
    if hit is not None:
        return hit
    cache_file = _cache_dir() / f"{digest}-v{TOOLCHAIN_VERSION}.pickle"
    if disk_cache and cache_file.exists():
        try:
            with open(cache_file, "rb") as f:
                cg = pickle.load(f)
            if isinstance(cg, CompiledGrammar):
                cg = dataclasses.replace(cg, language=language, source_path=p)
                _memo[key] = cg
                return cg
        except Exception as e:  # a stale or broken cache is only a missed shortcut
            log.warning("ignoring grammar cache %s: %s", cache_file, e)
    t0 = time.perf_counter()
    cg = compile_grammar_text(data.decode("utf-8"), p, language)
    elapsed = time.perf_counter() - t0
    log.debug("compiled %s in %.3f s", p, elapsed)
    if disk_cache and elapsed > CACHE_THRESHOLD_S:
        try:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache_file.with_suffix(f".tmp{os.getpid()}")
            with open(tmp, "wb") as f:
                pickle.dump(cg, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, cache_file)
        except OSError as e:
            log.warning("cannot write grammar cache %s: %s", cache_file, e)
    _memo[key] = cg
    return cg


def automata_for(info: TerminalInfo) -> TerminalAutomata | None:
    """Full, proper-prefix, proper-suffix and infix DFAs of one terminal's own language
    (rebuilt from `info.pattern`); None for %declare'd terminals."""
    if not info.pattern:
        return None
    return terminal_automata(nfa_to_min_dfa(parse_regex(info.pattern)))


def lexer_automata(compiled: CompiledGrammar, terminal: int) -> TerminalAutomata | None:
    """Like `automata_for`, but for the words the combined lexer labels `terminal` (keywords
    taken out of NAME, ties resolved): the language a lexeme of that kind really has.
    None when no word is labelled `terminal`."""
    lx = compiled.lexer
    if not any(terminal in a for a in lx.alive):
        return None
    dfa = DFA(list(lx.boundaries), [list(r) for r in lx.trans],
              [0 if a == terminal else -1 for a in lx.accept])
    return terminal_automata(dfa)


def format_stats(compiled: CompiledGrammar) -> str:
    """Human-readable sizes and warnings, for `holefill grammar LANG`."""
    ng = compiled.grammar
    lx = compiled.lexer
    n_prod = len(ng.binary) + len(ng.unary) + len(ng.nullable)
    lines = [
        f"grammar {compiled.language or '?'} ({compiled.source_path})",
        f"  normalized (2NF): {len(ng.nonterminals)} nonterminals, {n_prod} productions "
        f"({len(ng.binary)} binary, {len(ng.unary)} unary, {len(ng.nullable)} empty), "
        f"{ng.n_terminals} terminals "
        f"({sum(t.ignored for t in ng.terminals)} ignored)",
        f"  lexer DFA: {lx.n_states} states, {len(lx.boundaries) + 1} character classes",
    ]
    for label, s in (("before normalization", compiled.size_before),
                     ("2NF by binarization alone", compiled.size_naive_2nf),
                     ("after normalization", compiled.size_after)):
        if s is not None:
            lines.append(f"  {label}: {s.nonterminals} nonterminals, {s.productions} "
                         f"productions, {s.terminals} terminals used, RHS length "
                         f"{s.rhs_length}")
    if compiled.subset_allowed:
        pairs = ", ".join(f"{ng.terminals[a].name} where {ng.terminals[b].name}"
                          for a, b in compiled.subset_allowed)
        lines.append(f"  subset terminals allowed: {pairs}")
    if compiled.warnings:
        lines.append(f"  warnings ({len(compiled.warnings)}):")
        lines.extend(f"    {w}" for w in compiled.warnings)
    return "\n".join(lines)
