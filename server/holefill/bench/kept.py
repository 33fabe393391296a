"""Did a filling keep the user's code? Judged by CPython's own tokenizer, not by our lexer.

A filling may change the tokens that touch a hole; every other token of the fixed text must be
found unchanged, at its place, in the filled file. `python_tokens_kept` compares the tokens
CPython's `tokenize` reads in the original file (the chunks with the text that was there, or
with empty holes for a cursor) with those it reads in the filled file: every token that lies
inside a chunk, but the first and the last of each chunk, must reappear with the same type
and text at the same place relative to its chunk. A filling that turns fixed code into string
or comment content (or back) fails this.
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Sequence

# Layout tokens move legitimately when a hole adds or removes lines; the rest must stay.
_LAYOUT = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER,
           tokenize.ENCODING}


def _tokens(text: str) -> list[tuple[int, int, int, str]] | None:
    """(start offset, end offset, type, text) per non-layout token, or None when CPython's
    tokenizer rejects the text."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in _LAYOUT:
                continue
            a = starts[tok.start[0] - 1] + tok.start[1]
            b = starts[tok.end[0] - 1] + tok.end[1]
            out.append((a, b, tok.type, tok.string))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return out


def _chunk_starts(chunks: Sequence[str], middles: Sequence[str]) -> list[int]:
    out, at = [], 0
    for j, c in enumerate(chunks):
        out.append(at)
        at += len(c) + (len(middles[j]) if j < len(middles) else 0)
    return out


def python_tokens_kept(chunks: Sequence[str], original: Sequence[str],
                       fills: Sequence[str]) -> bool | None:
    """Whether every interior token of every chunk of the original file (`chunks` filled with
    `original`: the removed text, or "" per hole for a cursor) is in the file filled with
    `fills`, unchanged and in place. None when CPython cannot tokenize the original."""
    before = _tokens("".join(c + m for c, m in zip(chunks, [*original, ""], strict=True)))
    if before is None:
        return None
    after = _tokens("".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True)))
    if after is None:
        return False
    old_at, new_at = _chunk_starts(chunks, original), _chunk_starts(chunks, fills)
    found = {(a, b, t, s) for a, b, t, s in after}
    for j, chunk in enumerate(chunks):
        lo, hi = old_at[j], old_at[j] + len(chunk)
        inside = [tok for tok in before if lo <= tok[0] and tok[1] <= hi]
        shift = new_at[j] - old_at[j]
        for a, b, t, s in inside[1:-1]:
            if (a + shift, b + shift, t, s) not in found:
                return False
    return True
