"""holefill: code completions that keep a file completable to a valid program."""

from __future__ import annotations

__version__ = "0.1.0"
