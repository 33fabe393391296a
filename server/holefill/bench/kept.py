"""Did a filling keep the user's code? Judged by CPython's own tokenizer, not by our lexer.

A filling may change the tokens that touch a hole; every other token of the fixed text must be
found unchanged, at its place, in the filled file. `python_tokens_kept` compares the tokens
CPython's `tokenize` reads in the original file (the chunks with the text that was there, or
with empty holes for a cursor) with those it reads in the filled file: every token that lies
inside a chunk, but the first and the last of each chunk, must reappear with the same type
and text at the same place relative to its chunk. A filling that turns fixed code into string
or comment content (or back) fails this.

`lenient=True` is for fillings that may leave the file invalid (the bench's unconstrained
modes): the filled file's tokens are those CPython reads before its tokenizer gives up. A
string left open at the end of the file reads nothing after its quotes, so the fixed text
after it counts as swallowed; a bracket left open at the end only turns line ends into NL (not
compared); an indentation error stops the comparison at its line (the tokens after it are not
judged, so an unconstrained filling's count is a lower bound).
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Sequence

# Layout tokens move legitimately when a hole adds or removes lines; the rest must stay.
_LAYOUT = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER,
           tokenize.ENCODING}


Token = tuple[int, int, int, str]  # start offset, end offset, type, text


def _tokens(text: str, lenient: bool = False) -> tuple[list[Token], int] | None:
    """The non-layout tokens and the offset up to which they are complete (the text's length,
    or with `lenient` the start of the line of an indentation error); None when CPython's
    tokenizer rejects the text and `lenient` is off."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out: list[Token] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in _LAYOUT:
                continue
            a = starts[tok.start[0] - 1] + tok.start[1]
            b = starts[tok.end[0] - 1] + tok.end[1]
            out.append((a, b, tok.type, tok.string))
    except IndentationError as exc:  # a SyntaxError: before the general case
        if not lenient:
            return None
        at = exc.lineno or len(starts)
        return out, starts[min(at, len(starts)) - 1]
    except (tokenize.TokenError, SyntaxError):
        if not lenient:
            return None
    return out, len(text)


def _chunk_starts(chunks: Sequence[str], middles: Sequence[str]) -> list[int]:
    out, at = [], 0
    for j, c in enumerate(chunks):
        out.append(at)
        at += len(c) + (len(middles[j]) if j < len(middles) else 0)
    return out


def python_tokens_kept(chunks: Sequence[str], original: Sequence[str],
                       fills: Sequence[str], *, lenient: bool = False) -> bool | None:
    """Whether every interior token of every chunk of the original file (`chunks` filled with
    `original`: the removed text, or "" per hole for a cursor) is in the file filled with
    `fills`, unchanged and in place. None when CPython cannot tokenize the original. Without
    `lenient` a filled file CPython cannot tokenize is False; with it, see the module doc."""
    read = _tokens("".join(c + m for c, m in zip(chunks, [*original, ""], strict=True)))
    if read is None:
        return None
    before = read[0]
    got = _tokens("".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True)), lenient)
    if got is None:
        return False
    after, judged_to = got
    old_at, new_at = _chunk_starts(chunks, original), _chunk_starts(chunks, fills)
    found = set(after)
    for j, chunk in enumerate(chunks):
        lo, hi = old_at[j], old_at[j] + len(chunk)
        inside = [tok for tok in before if lo <= tok[0] and tok[1] <= hi]
        shift = new_at[j] - old_at[j]
        for a, b, t, s in inside[1:-1]:
            if b + shift > judged_to:
                return True
            if (a + shift, b + shift, t, s) not in found:
                return False
    return True


_OPENERS = {"(": ")", "[": "]", "{": "}"}


def _partners(tokens: list[Token]) -> dict[int, int]:
    """Bracket token start offset -> its partner's start offset, both ways (CPython's
    tokenizer reads brackets as OP tokens; a mismatched closer pairs with nothing)."""
    out: dict[int, int] = {}
    stack: list[tuple[int, str]] = []
    for a, _, _, s in tokens:
        if s in _OPENERS:
            stack.append((a, _OPENERS[s]))
        elif s in _OPENERS.values():
            if stack and stack[-1][1] == s:
                b, _ = stack.pop()
                out[a], out[b] = b, a
            else:
                stack.clear()
    return out


def python_brackets_kept(chunks: Sequence[str], original: Sequence[str],
                         fills: Sequence[str]) -> bool | None:
    """Whether every bracket of the fixed text that paired with another bracket of the fixed
    text in the original file still pairs with that one in the filled file (a filling that
    closes the user's dict early so that the user's `}` closes a new one fails). None when
    CPython cannot tokenize the original; judged as far as the filled file tokenizes."""
    read = _tokens("".join(c + m for c, m in zip(chunks, [*original, ""], strict=True)))
    if read is None:
        return None
    got = _tokens("".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True)), True)
    assert got is not None  # lenient
    return pairs_kept(_partners(read[0]), _partners(got[0]), got[1], chunks, original, fills)


def pairs_kept(before: dict[int, int], after: dict[int, int], judged: int,
               chunks: Sequence[str], original: Sequence[str], fills: Sequence[str]) -> bool:
    """Whether each pair of `before` (partners by offset in the original file) whose two
    brackets lie in fixed text pairs the same two brackets in `after` (the filled file's),
    up to offset `judged` of the filled file."""
    old_at, new_at = _chunk_starts(chunks, original), _chunk_starts(chunks, fills)

    def fixed(offset: int) -> int | None:  # the offset in the filled file, or None
        for j, chunk in enumerate(chunks):
            if old_at[j] <= offset < old_at[j] + len(chunk):
                return offset - old_at[j] + new_at[j]
        return None

    for a, b in before.items():
        fa, fb = fixed(a), fixed(b)
        if fa is None or fb is None or max(fa, fb) >= judged:
            continue
        if after.get(fa) != fb:
            return False
    return True


def lexed_brackets_kept(language: str, chunks: Sequence[str], original: Sequence[str],
                        fills: Sequence[str]) -> bool:
    """`python_brackets_kept` for any language, with the language's own maximal-munch
    reading deciding the brackets (C, C++, JSON: no tokenizer of their compilers is at hand)
    and the same stack rule pairing them (holefill.check.structure.pair_brackets)."""
    from holefill.check.checker import Checker
    from holefill.check.structure import bracket_partners

    chk = Checker.for_language(language)

    def partners(text: str) -> dict[int, int]:
        return bracket_partners(chk.lexer.reference, chk.brackets, text)

    filled = "".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True))
    before = partners("".join(c + m for c, m in zip(chunks, [*original, ""], strict=True)))
    return pairs_kept(before, partners(filled), len(filled), chunks, original, fills)


def _headers(text: str, lenient: bool) -> tuple[dict[int, int], int] | None:
    """Logical line start offset -> the start of the header line whose block holds it (-1 at
    the top level), by CPython's tokenize (INDENT opens a block under the line before it),
    and the offset up to which the text was read; None when it cannot be tokenized."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    out: dict[int, int] = {}
    stack: list[int] = [-1]
    line_start: int | None = None  # the start of the logical line being read
    previous = -1  # the start of the last complete logical line
    judged = len(text)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            at = starts[tok.start[0] - 1] + tok.start[1]
            if tok.type == tokenize.INDENT:
                stack.append(previous)
            elif tok.type == tokenize.DEDENT:
                stack.pop()
            elif tok.type == tokenize.NEWLINE:
                previous, line_start = (line_start if line_start is not None else previous), None
            elif tok.type not in _LAYOUT and tok.type != tokenize.COMMENT and line_start is None:
                line_start = at
                out[at] = stack[-1]
    except (tokenize.TokenError, SyntaxError) as exc:
        if not lenient:
            return None
        row = getattr(exc, "lineno", None) or (exc.args[1][0] if len(exc.args) > 1 else 1)
        judged = starts[min(int(row), len(starts)) - 1]
    return out, judged


def python_blocks_kept(chunks: Sequence[str], original: Sequence[str],
                       fills: Sequence[str]) -> bool | None:
    """Whether every logical line that begins in fixed text keeps its block: the header line
    whose block holds it (a fixed line, or the top level) is the same in the filled file, as
    far as CPython's tokenizer reads it (a filling that dedents the user's `return` out of its
    function, or puts the user's lines under a header of its own, fails). None when the
    original cannot be tokenized."""
    read = _headers("".join(c + m for c, m in zip(chunks, [*original, ""], strict=True)), False)
    if read is None:
        return None
    got = _headers("".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True)), True)
    assert got is not None  # lenient
    old_at, new_at = _chunk_starts(chunks, original), _chunk_starts(chunks, fills)

    def fixed(offset: int) -> int | None:
        for j, chunk in enumerate(chunks):
            if old_at[j] <= offset < old_at[j] + len(chunk):  # a fixed first token
                return offset - old_at[j] + new_at[j]
        return None

    for line, header in read[0].items():
        at = fixed(line)
        if at is None or at >= got[1]:
            continue
        want = -1 if header < 0 else fixed(header)
        if want is None:
            continue  # its header was written by a hole's text
        if got[0].get(at, -2) not in (want, -2):
            return False
    return True
