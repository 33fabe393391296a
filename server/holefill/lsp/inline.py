"""What an inline completion at the cursor asks of the decoder, and the cache of answers.

Mid-line the suggestion is one line (it stops at the end of the line where the grammar
allows); at the end of a line it may span lines. Closers right after the cursor (an editor's
auto-inserted `)`, `]`, `"`) may be supplied by the suggestion, which then replaces them.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

from holefill.lsp.settings import Settings

_CLOSERS = re.compile(r"[)\]}\"'`]+(?=[ \t]*(?:\r?\n|\r|$))")


@dataclass(frozen=True)
class CursorContext:
    line_start: int
    line_end: int
    indent: int  # width of the cursor line's indentation
    rest_of_line: str  # text after the cursor on its line


def cursor_context(text: str, cursor: int) -> CursorContext:
    start = text.rfind("\n", 0, cursor) + 1
    end = len(text)
    for nl in ("\n", "\r"):
        i = text.find(nl, cursor)
        if i >= 0:
            end = min(end, i)
    line = text[start:end]
    indent = len(line) - len(line.lstrip(" \t"))
    return CursorContext(start, end, indent, text[cursor:end])


# Seconds an inline suggestion's final whole-file check may take; past them the suggestion
# is shown as unverified (a large file with other holes open: its exact check reads it all).
INLINE_FINAL_DEADLINE_S = 2.0


def decode_options(text: str, cursor: int, settings: Settings) -> dict:
    """The DecodeSettings fields for a completion at ``cursor``."""
    ctx = cursor_context(text, cursor)
    closers = _CLOSERS.match(ctx.rest_of_line)
    after = ctx.rest_of_line[closers.end():] if closers else ctx.rest_of_line
    if settings.multiline == "auto":
        multiline = not after.strip()
    else:
        multiline = settings.multiline == "always"
    # the block of the cursor: its line's indentation, or the cursor's column when the cursor
    # sits in the indentation itself (a new line in a block)
    indent = min(ctx.indent, cursor - ctx.line_start)
    return {
        "max_new_tokens": settings.max_new_tokens,
        "top_k": settings.top_k,
        "temperature": settings.temperature,
        "constrained": settings.constrained,
        "max_check_steps": settings.max_check_steps,
        "multiline": multiline,
        "stop_at_blank_line": multiline,
        "block_indent": indent if settings.stay_in_block and indent > 0 else None,
        "replaceable": closers.group(0) if closers else "",
        # the exact check of the filled file (holefill.check.final) within typing's patience
        "final_deadline_s": INLINE_FINAL_DEADLINE_S,
    }


@dataclass(frozen=True)
class Suggestion:
    text: str  # the inserted text
    replaced: int  # characters after the cursor it replaces (auto-inserted closers)


class SuggestionCache:
    """Recent suggestions, so that typing along a shown suggestion reuses it.

    An entry holds the document text before and after the cursor it was computed for. A new
    request whose text before the cursor extends that by characters the suggestion begins
    with, with the same text after, gets the rest of the suggestion: the document is then
    exactly the earlier one with part of the suggestion typed, so the rest keeps it valid.
    """

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[str, int], tuple[str, str, Suggestion]] = OrderedDict()
        self._counter = 0

    def put(self, uri: str, before: str, after: str, suggestion: Suggestion) -> None:
        self._counter += 1
        self._entries[(uri, self._counter)] = (before, after, suggestion)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def get(self, uri: str, before: str, after: str) -> Suggestion | None:
        for (u, n), (b, a, sug) in reversed(self._entries.items()):
            if u != uri or a != after or not before.startswith(b):
                continue
            typed = before[len(b):]
            if not typed:  # the same place again (also an empty suggestion)
                self._entries.move_to_end((u, n))
                return sug
            if len(typed) < len(sug.text) and sug.text.startswith(typed):
                self._entries.move_to_end((u, n))
                return Suggestion(sug.text[len(typed):], sug.replaced)
        return None

    def forget(self, uri: str) -> None:
        for key in [k for k in self._entries if k[0] == uri]:
            del self._entries[key]
