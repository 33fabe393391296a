"""compile_grammar_file: memo, disk cache, stats text, per-terminal automata."""

from __future__ import annotations

from pathlib import Path

import pytest

from holefill.grammar import (
    automata_for,
    compile_grammar_file,
    compile_grammar_text,
    format_stats,
    lexer_automata,
)
from holefill.grammar import compile as compile_mod

ARITH = Path(__file__).resolve().parents[1] / "data" / "grammar" / "arith.lark"


def test_compile_is_memoized_and_disk_cached(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Same file twice -> same object; with the threshold at 0 a pickle lands in
    $XDG_CACHE_HOME/holefill and a fresh process memo loads an equal grammar from it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(compile_mod, "CACHE_THRESHOLD_S", 0.0)
    monkeypatch.setattr(compile_mod, "_memo", {})
    a = compile_grammar_file(ARITH, "arith")
    assert compile_grammar_file(ARITH, "arith") is a
    files = list((tmp_path / "holefill").glob("*.pickle"))
    assert len(files) == 1
    monkeypatch.setattr(compile_mod, "_memo", {})
    b = compile_grammar_file(ARITH, "arith")
    assert b is not a and b == a


def test_format_stats_lists_sizes_and_warnings() -> None:
    """The stats text names the 2NF size, the lexer size, before/after sizes and warnings."""
    cg = compile_grammar_text('start: A | B\nA: /[a-c]+/\nB: /[b-d]+/\n', "w.lark", "w")
    text = format_stats(cg)
    for fragment in ("normalized (2NF)", "lexer DFA", "before normalization",
                     "after normalization", "overlap"):
        assert fragment in text


def test_terminal_automata_from_info_and_from_lexer() -> None:
    """automata_for(NAME) is NAME's own regex; lexer_automata(NAME) leaves out keywords."""
    cg = compile_grammar_file(ARITH, "arith", disk_cache=False)
    g = cg.grammar
    name = g.terminal_id("NAME")
    own = automata_for(g.terminals[name])
    lexed = lexer_automata(cg, name)
    assert own is not None and lexed is not None
    assert own.full.matches("if") and not lexed.full.matches("if")
    assert lexed.full.matches("iff") and lexed.prefix.matches("i")
    assert own.suffix.matches("f") and lexed.infix.matches("f")
    assert automata_for(g.terminals[g.terminal_id("NUMBER")]).full.matches("1.5")  # type: ignore[union-attr]
