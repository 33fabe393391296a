"""The languages holefill knows: grammar file, lexer, hole marker, file extensions.

`language_for_document(path, language_id, text)` is the one place that decides the language of
an open document: the client's languageId first, then the extension, and for a `.h` file (C
and C++ share the extension) the text itself (`is_evident_cpp`).
"""

from __future__ import annotations

import re
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


# Terminals of the C and C++ grammars that a witness should write only when nothing else will
# do: directive lines and strings can swallow fixed text up to the end of its line (or across
# holes), and MACRO_NAME opens the macro forms (`A0 (x) { ... }`) that only a macro definition
# makes valid. Witnesses pay this much extra per such lexeme written in a hole (or read from
# fixed text right after one: a macro word costs more than going on with the directive line
# that the hole ended early). Comments are not surcharged: a hole inside a comment (a license
# header) is best filled by staying in it. Digraphs cost as much as a directive line, so a
# witness writes `{` `}` `[` `]` (what tree-sitter and people read), and does not end with `%`
# before a fixed `>` (`%>`) where a directive line or more lexemes will do.
C_FAMILY_WITNESS_SURCHARGE: dict[str, int] = {
    '"<%"': 4, '"%>"': 4, '"<:"': 4, '":>"': 4,
    "PP_FIRST": 4, "PP_IF_FIRST": 4, "PP_LINE": 4, "PP_IF": 4, "PP_ELSE": 4, "PP_ENDIF": 4,
    "PP_EXTERN_C": 8, "PP_EXTERN_C_FIRST": 8, "PP_EXTERN_C_END": 8, "STRING": 3,
    "UD_STRING": 3, "EMPTY_UD_STRING": 3, "MACRO_NAME": 5, "PREFIXED_MACRO": 5, "SCOPE_MACRO": 5,
}


def _c_family_lexer(compiled: CompiledGrammar) -> PartialLexer:
    """The generic lexer, with C_FAMILY_WITNESS_SURCHARGE on the witness search."""
    from holefill.check.checker import GenericLexer

    terms = compiled.grammar.terminals
    surcharge = {i: C_FAMILY_WITNESS_SURCHARGE[t.name] for i, t in enumerate(terms)
                 if t.name in C_FAMILY_WITNESS_SURCHARGE}
    return GenericLexer(compiled, surcharge)


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
    "cpp": LanguageSpec("cpp", "cpp.lark", (".cpp", ".cc", ".cxx", ".c++", ".hpp", ".hh",
                                            ".hxx", ".h++", ".ipp", ".tpp", ".inl"),
                        lexer_factory=_c_family_lexer),
    "c": LanguageSpec("c", "c.lark", (".c", ".h"), lexer_factory=_c_family_lexer),
    "python": LanguageSpec("python", "python.lark", (".py", ".pyi"), lexer_factory=_python_lexer),
}

ALIASES = {"c++": "cpp", "cplusplus": "cpp", "cxx": "cpp", "cuda-cpp": "cpp",
           "objective-cpp": "cpp", "py": "python", "python3": "python", "h": "c"}


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


# Words and forms only C++ has, at the start of a line or after blanks (so not in a comment's
# middle, mostly): a file with one of them is C++ even when its extension is `.h`.
_CPP_EVIDENCE = re.compile(
    r"^[ \t]*(?:"
    r"(?:template\s*<|namespace\s+[A-Za-z_]\w*\s*(?:\{|=|::)|namespace\s*\{"
    r"|using\s+namespace\b|using\s+[A-Za-z_]\w*\s*=|class\s+[A-Za-z_]\w*\s*(?:\{|:[^:]|;|final\b)"
    r"|(?:public|private|protected)\s*:(?!:)|extern\s+\"C\+\+\")"
    r"|#\s*include\s*<(?:iostream|string|vector|map|memory|utility|algorithm|functional"
    r"|type_traits|cstdint|cstddef|cstdio|cstdlib|cstring|cassert|cmath|array|tuple|optional)>"
    r")",
    re.MULTILINE,
)


def is_evident_cpp(text: str) -> bool:
    """True when `text` holds C++ that C cannot hold: a template, a namespace, a class with a
    body or a base, an access specifier, `using namespace`, an alias, `extern "C++"`, or an
    include of a C++ standard header. `std::` alone or `::` in a comment does not count."""
    return _CPP_EVIDENCE.search(text) is not None


# The settings key that maps a `.h` file to a language whatever it holds ("c", "cpp", or
# "auto" for `is_evident_cpp`).
H_FILES_AUTO = "auto"


def language_for_document(
    path: str | Path | None,
    language_id: str | None = None,
    text: str = "",
    *,
    h_files: str = H_FILES_AUTO,
) -> LanguageSpec:
    """The language of an open document, or a LanguageError.

    The client's `language_id` decides when it names a language we have (`"c"`, `"cpp"`,
    aliases included), except that a `.h` file announced as C whose text is evidently C++ is
    C++ (editors announce every `.h` file as C or as C++ by a setting, not by its content).
    Otherwise the extension decides; `.h` goes to C unless `h_files` says "cpp", or it says
    "auto" (the default) and `is_evident_cpp(text)`.
    """
    suffix = Path(path).suffix.lower() if path is not None else ""
    spec: LanguageSpec | None = None
    if language_id:
        try:
            spec = get_language(language_id)
        except LanguageError:
            spec = None
    if spec is not None and not (suffix == ".h" and spec.name == "c"):
        return spec
    if suffix == ".h" or (spec is not None and spec.name == "c" and not suffix):
        if h_files == "cpp" or (h_files == H_FILES_AUTO and is_evident_cpp(text)):
            return LANGUAGES["cpp"]
        if h_files not in ("c", "cpp", H_FILES_AUTO):
            raise LanguageError(f"unknown setting for .h files: {h_files!r} (c, cpp or auto)")
        return LANGUAGES["c"]
    if spec is not None:
        return spec
    if path is None:
        raise LanguageError("no language id and no path: cannot tell the language")
    return language_for_path(path)


def split_holes(text: str, marker: str) -> list[str]:
    """The chunks of `text` around every occurrence of `marker`."""
    if not marker:
        raise ValueError("the hole marker must not be empty")
    return text.split(marker)
