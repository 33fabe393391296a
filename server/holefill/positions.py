"""Lines and columns in code points, as editors count them.

Line breaks are "\\r\\n", "\\r" and "\\n" (the LSP's definition), not everything that
`str.splitlines` splits at: a form feed or a U+2028 in a source file is not a new line for an
editor, nor for Python's tokenizer. Lines and columns here are 0-based code points; the CLI adds
one for people, the language server converts columns to the client's encoding at its edge.
"""

from __future__ import annotations

import re

_BREAK = re.compile(r"\r\n|\r|\n")


def line_starts(text: str) -> list[int]:
    """The offset at which each line of `text` starts (the first is 0)."""
    return [0, *(m.end() for m in _BREAK.finditer(text))]


def line_col(text: str, offset: int) -> tuple[int, int]:
    """The 0-based (line, column) of `offset` in `text` (0 <= offset <= len(text))."""
    if not 0 <= offset <= len(text):
        raise ValueError(f"offset {offset} is outside the text (0..{len(text)})")
    line, start = 0, 0
    for m in _BREAK.finditer(text, 0, offset):
        if m.end() > offset:  # offset between the \r and the \n of one break
            break
        line, start = line + 1, m.end()
    return line, offset - start


def line_bodies(text: str) -> list[str]:
    """The lines of `text` without their line breaks (one more than there are breaks)."""
    starts = line_starts(text)
    ends = [m.start() for m in _BREAK.finditer(text)] + [len(text)]
    return [text[a:b] for a, b in zip(starts, ends, strict=True)]
