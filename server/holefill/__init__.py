"""holefill: code completions that keep a file completable to a valid program."""

from __future__ import annotations

__version__ = "0.1.0"

from holefill.errors import GrammarError, HolefillError, LanguageError  # noqa: E402

__all__ = [
    "Checker", "Verdict", "CheckResult", "Completer", "FillResult",
    "HolefillError", "GrammarError", "LanguageError",
]


def __getattr__(name: str) -> object:
    # The checker pulls in the native core; import it on first use so that `holefill --help`
    # and the grammar tools work even before the extension is built.
    if name in ("Checker", "Verdict", "CheckResult"):
        from holefill.check import checker

        return getattr(checker, name)
    if name in ("Completer", "FillResult"):
        from holefill.decode import completer

        return getattr(completer, name)
    raise AttributeError(f"module 'holefill' has no attribute {name!r}")
