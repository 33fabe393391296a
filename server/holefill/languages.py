"""The languages holefill knows: grammar file, lexer, hole marker, file extensions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from holefill.errors import LanguageError

if TYPE_CHECKING:
    from holefill.check.checker import PartialLexer
    from holefill.grammar.tables import CompiledGrammar

# Outside string literals and comments this text is invalid in every language we ship, so a
# file that contains it is not yet a program. It is configurable per call and per setting.
DEFAULT_HOLE_MARKER = "<|hole|>"


def _generic_lexer(compiled: CompiledGrammar) -> PartialLexer:
    from holefill.check.checker import GenericLexer

    return GenericLexer(compiled)


def _python_lexer(compiled: CompiledGrammar) -> PartialLexer:
    from holefill.lexing.python_layout import PythonLexer

    return PythonLexer(compiled)


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    grammar_file: str
    extensions: tuple[str, ...]
    hole_marker: str = DEFAULT_HOLE_MARKER
    lexer_factory: Callable[[CompiledGrammar], PartialLexer] = _generic_lexer

    @property
    def grammar_path(self) -> Path:
        return Path(str(resources.files("holefill") / "grammars" / self.grammar_file))

    def compile(self) -> CompiledGrammar:
        from holefill.grammar import compile_grammar_file

        return compile_grammar_file(self.grammar_path, self.name)

    def make_lexer(self, compiled: CompiledGrammar) -> PartialLexer:
        return self.lexer_factory(compiled)


LANGUAGES: dict[str, LanguageSpec] = {
    "json": LanguageSpec("json", "json.lark", (".json",)),
    "cpp": LanguageSpec("cpp", "cpp.lark", (".cpp", ".cc", ".cxx", ".hpp", ".hh", ".h")),
    "python": LanguageSpec("python", "python.lark", (".py", ".pyi"), lexer_factory=_python_lexer),
}

ALIASES = {"c++": "cpp", "cplusplus": "cpp", "py": "python", "python3": "python"}


def get_language(name: str) -> LanguageSpec:
    """The spec of `name` (case-insensitive, aliases allowed) or a LanguageError naming
    the languages we do have."""
    key = ALIASES.get(name.lower(), name.lower())
    spec = LANGUAGES.get(key)
    if spec is None:
        known = ", ".join(sorted(LANGUAGES))
        raise LanguageError(f"unknown language {name!r}; holefill knows: {known}")
    return spec


def language_for_path(path: str | Path) -> LanguageSpec:
    """The language of a file from its extension, or a LanguageError."""
    suffix = Path(path).suffix.lower()
    for spec in LANGUAGES.values():
        if suffix in spec.extensions:
            return spec
    raise LanguageError(
        f"cannot tell the language of {str(path)!r} from its extension; pass --language"
    )


def split_holes(text: str, marker: str) -> list[str]:
    """The chunks of `text` around every occurrence of `marker`."""
    if not marker:
        raise ValueError("the hole marker must not be empty")
    return text.split(marker)
