"""The exceptions holefill raises. Everything the engine raises derives from HolefillError."""

from __future__ import annotations


class HolefillError(Exception):
    """Base class of every error holefill raises on purpose."""


class GrammarError(HolefillError):
    """A grammar file is malformed; the message names file:line:column and shows a caret."""


class LanguageError(HolefillError):
    """A language was asked for that holefill has no grammar for."""


class CoreError(HolefillError):
    """The native core refused its input (API misuse or an internal limit)."""


class LexError(HolefillError):
    """Fixed text cannot be split into lexemes (e.g. an inconsistent dedent in Python)."""


class ModelError(HolefillError):
    """A model cannot be used: it is missing, fails to load, or has no usable FIM prompt."""
