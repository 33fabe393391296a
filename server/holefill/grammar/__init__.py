"""The grammar toolchain: grammar file -> normalized CFG (2NF) + lexer DFA tables.

Public entry points:
  compile_grammar_file(path, language) -> CompiledGrammar   (memoized; disk cache when slow)
  compile_grammar_text(source, path, language) -> CompiledGrammar
  format_stats(compiled) -> str                              (for `holefill grammar LANG`)
  automata_for(info) -> TerminalAutomata | None              (full/prefix/suffix/infix DFAs)
  lexer_automata(compiled, tid) -> TerminalAutomata | None   (same, for the words the lexer
                                                              labels tid)
The output contract lives in `holefill.grammar.tables`.
"""

from .compile import (
    automata_for,
    compile_grammar_file,
    compile_grammar_text,
    format_stats,
    lexer_automata,
)
from .tables import (
    CompiledGrammar,
    GrammarSize,
    LexerDFA,
    NormalGrammar,
    TerminalInfo,
    literal_name,
)

__all__ = [
    "CompiledGrammar",
    "GrammarSize",
    "LexerDFA",
    "NormalGrammar",
    "TerminalInfo",
    "automata_for",
    "compile_grammar_file",
    "compile_grammar_text",
    "format_stats",
    "lexer_automata",
    "literal_name",
]
