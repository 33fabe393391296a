"""Regular expressions as a small AST over code-point interval sets.

Two sources build the AST: Python `re` syntax (`parse_regex`, through `re._parser`) and the
grammar file's terminal definitions (literals, ranges, names; built by `holefill.grammar.cfg`).
The AST is turned into an NFA by `holefill.grammar.automata`.

Nodes are tuples, cheap to build and compare:
  ("chars", ((lo, hi), ...))      one character from a sorted, disjoint, inclusive interval set
  ("seq", (node, ...))            concatenation; ("seq", ()) is the empty string
  ("alt", (node, ...))            alternation
  ("rep", node, min, max)         repetition, max None = unbounded
"""

from __future__ import annotations

import re
import re._constants as C  # noqa: N812
import re._parser as P  # noqa: N812
from typing import Any

MAX_CODE_POINT = 0x10FFFF
MAX_COUNTED_REPEAT = 1000          # {m,n} beyond this is refused (the NFA would be huge)

Intervals = tuple[tuple[int, int], ...]
Node = tuple[Any, ...]

EMPTY: Node = ("seq", ())

# ASCII classes (docs/grammar-format.md): \w also takes every non-ASCII character.
DIGIT: Intervals = ((0x30, 0x39),)
SPACE: Intervals = ((0x09, 0x0D), (0x20, 0x20))
WORD: Intervals = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A), (0x80, MAX_CODE_POINT))
NEWLINE: Intervals = ((0x0A, 0x0A),)


class RegexError(Exception):
    """A regex uses a feature we do not support or is malformed. `pos` is an offset into the
    pattern (or None when unknown); the caller turns it into a GrammarError."""

    def __init__(self, message: str, pos: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


# ----------------------------------------------------------------------------- interval sets

def normalize(intervals: Any) -> Intervals:
    """Sort and merge (lo, hi) pairs into a canonical interval set."""
    out: list[list[int]] = []
    for lo, hi in sorted(intervals):
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1][1] = hi
        else:
            out.append([lo, hi])
    return tuple((a, b) for a, b in out)


def negate(intervals: Intervals) -> Intervals:
    out = []
    prev = 0
    for lo, hi in intervals:
        if lo > prev:
            out.append((prev, lo - 1))
        prev = hi + 1
    if prev <= MAX_CODE_POINT:
        out.append((prev, MAX_CODE_POINT))
    return tuple(out)


def _case_variants(c: int) -> list[int]:
    ch = chr(c)
    out = [c]
    for v in (ch.lower(), ch.upper(), ch.casefold()):
        if len(v) == 1 and ord(v) != c:
            out.append(ord(v))
    return out


def fold_case(intervals: Intervals) -> Intervals:
    """Add the single-character upper/lower-case variants of every character.

    Intervals wider than 0x3000 code points are folded on their ASCII part only (they are
    classes like [^"] whose folding changes nothing in practice)."""
    extra: list[tuple[int, int]] = []
    for lo, hi in intervals:
        if hi - lo > 0x3000:
            lo2, hi2 = lo, min(hi, 0x7F)
        else:
            lo2, hi2 = lo, hi
        for c in range(lo2, hi2 + 1):
            for v in _case_variants(c):
                if not lo <= v <= hi:
                    extra.append((v, v))
    return normalize(list(intervals) + extra) if extra else intervals


def chars(intervals: Any) -> Node:
    return ("chars", normalize(intervals))


def literal(text: str, ignore_case: bool = False) -> Node:
    items = []
    for ch in text:
        iv: Intervals = ((ord(ch), ord(ch)),)
        items.append(("chars", fold_case(iv) if ignore_case else iv))
    return items[0] if len(items) == 1 else ("seq", tuple(items))


def seq(nodes: list[Node]) -> Node:
    flat: list[Node] = []
    for n in nodes:
        if n[0] == "seq":
            flat.extend(n[1])
        else:
            flat.append(n)
    return flat[0] if len(flat) == 1 else ("seq", tuple(flat))


def alt(nodes: list[Node]) -> Node:
    return nodes[0] if len(nodes) == 1 else ("alt", tuple(nodes))


def rep(node: Node, lo: int, hi: int | None) -> Node:
    return ("rep", node, lo, hi)


# ----------------------------------------------------------------------------- Python re syntax

_UNSUPPORTED_TEXT = [
    (r"(?<=", "lookbehind"), (r"(?<!", "lookbehind"), (r"(?=", "lookahead"),
    (r"(?!", "lookahead"), (r"(?P=", "backreference"), (r"(?(", "conditional group"),
    (r"(?>", "atomic group"), (r"\b", "word-boundary anchor"), (r"\B", "word-boundary anchor"),
    (r"\A", "anchor"), (r"\Z", "anchor"), (r"\z", "anchor"), ("^", "anchor"), ("$", "anchor"),
]


def _locate(pattern: str, needles: list[str]) -> int | None:
    """Offset of the first needle in `pattern` outside escapes, or None (for messages only)."""
    i = 0
    while i < len(pattern):
        for n in needles:
            if pattern.startswith(n, i):
                return i
        if pattern[i] == "\\":
            if i + 1 < len(pattern) and pattern[i + 1].isdigit() and "\\1" in needles:
                return i
            i += 2
            continue
        i += 1
    return None


def _unsupported(pattern: str, what: str) -> RegexError:
    needles = [t for t, w in _UNSUPPORTED_TEXT if w == what] or ["\\1"]
    if what == "backreference":
        needles = ["(?P=", "\\1"]
    pos = _locate(pattern, needles)
    return RegexError(
        f"unsupported regex feature: {what} (terminal regexes must be regular: no "
        "backreferences, lookaround or anchors)", pos)


def parse_regex(pattern: str, flags: str = "") -> Node:
    """Parse a Python `re` pattern (flags from "isx") into an AST; raises RegexError."""
    fl = 0
    for f in flags:
        if f == "i":
            fl |= re.IGNORECASE
        elif f == "s":
            fl |= re.DOTALL
        elif f == "x":
            fl |= re.VERBOSE
        else:
            raise RegexError(f"unsupported regex flag {f!r} (supported: i, s, x)")
    try:
        parsed = P.parse(pattern, fl)
    except re.error as e:
        raise RegexError(f"bad regex: {e.msg}", e.pos) from None
    if parsed.state.flags & re.MULTILINE:
        raise RegexError("unsupported regex flag: multiline", None)
    gflags = parsed.state.flags
    return _convert(list(parsed), pattern, bool(gflags & re.IGNORECASE),
                    bool(gflags & re.DOTALL))


def _category(cat: Any, pattern: str) -> Intervals:
    name = str(cat)
    table = {
        "CATEGORY_DIGIT": DIGIT, "CATEGORY_NOT_DIGIT": negate(DIGIT),
        "CATEGORY_SPACE": SPACE, "CATEGORY_NOT_SPACE": negate(SPACE),
        "CATEGORY_WORD": WORD, "CATEGORY_NOT_WORD": negate(WORD),
    }
    if name in table:
        return table[name]
    raise RegexError(f"unsupported regex class {name}", None)


def _convert(items: list[Any], pattern: str, icase: bool, dotall: bool) -> Node:
    out: list[Node] = []
    for op, av in items:
        out.append(_convert_one(op, av, pattern, icase, dotall))
    return seq(out) if out else EMPTY


def _convert_one(op: Any, av: Any, pattern: str, icase: bool, dotall: bool) -> Node:
    def fold(iv: Intervals) -> Intervals:
        return fold_case(iv) if icase else iv

    if op is C.LITERAL:
        return ("chars", fold(((av, av),)))
    if op is C.NOT_LITERAL:
        return ("chars", negate(fold(((av, av),))))
    if op is C.ANY:
        return ("chars", negate(()) if dotall else negate(NEWLINE))
    if op is C.IN:
        neg = False
        parts: list[tuple[int, int]] = []
        for sop, sav in av:
            if sop is C.NEGATE:
                neg = True
            elif sop is C.LITERAL:
                parts.append((sav, sav))
            elif sop is C.RANGE:
                parts.append((sav[0], sav[1]))
            elif sop is C.CATEGORY:
                parts.extend(_category(sav, pattern))
            else:
                raise RegexError(f"unsupported item in character class: {sop}", None)
        iv = fold(normalize(parts))
        return ("chars", negate(iv) if neg else iv)
    if op is C.BRANCH:
        return alt([_convert(list(b), pattern, icase, dotall) for b in av[1]])
    if op is C.SUBPATTERN:
        _group, add, dele, sub = av
        ic = (icase or bool(add & re.IGNORECASE)) and not bool(dele & re.IGNORECASE)
        da = (dotall or bool(add & re.DOTALL)) and not bool(dele & re.DOTALL)
        if add & re.MULTILINE:
            raise RegexError("unsupported regex flag: multiline", None)
        return _convert(list(sub), pattern, ic, da)
    if op is C.MAX_REPEAT or op is C.MIN_REPEAT:
        lo, hi, sub = av
        hi_ = None if hi is C.MAXREPEAT else int(hi)
        if lo > MAX_COUNTED_REPEAT or (hi_ is not None and hi_ > MAX_COUNTED_REPEAT):
            raise RegexError(f"counted repetition above {MAX_COUNTED_REPEAT} is not supported",
                             None)
        # Lazy and greedy repeats match the same language under fullmatch.
        return rep(_convert(list(sub), pattern, icase, dotall), int(lo), hi_)
    if op is C.POSSESSIVE_REPEAT:
        raise _unsupported(pattern, "possessive repeat")
    if op is C.AT:
        what = "word-boundary anchor" if "BOUNDARY" in str(av) else "anchor"
        raise _unsupported(pattern, what)
    if op in (C.GROUPREF, C.GROUPREF_EXISTS):
        raise _unsupported(pattern, "backreference" if op is C.GROUPREF else
                           "conditional group")
    if op in (C.ASSERT, C.ASSERT_NOT):
        direction = av[0]
        raise _unsupported(pattern, "lookbehind" if direction < 0 else "lookahead")
    if op is C.ATOMIC_GROUP:
        raise _unsupported(pattern, "atomic group")
    raise RegexError(f"unsupported regex construct {op}", None)


# ----------------------------------------------------------------------------- AST -> re text

def _esc_char(c: int) -> str:
    ch = chr(c)
    if ch in "\\]^-[":
        return "\\" + ch
    if 0x20 < c < 0x7F:
        return ch
    if c <= 0xFF:
        return f"\\x{c:02x}"
    if c <= 0xFFFF:
        return f"\\u{c:04x}"
    return f"\\U{c:08x}"


def class_text(iv: Intervals) -> str:
    """A Python regex character class for an interval set."""
    if len(iv) == 1 and iv[0][0] == iv[0][1]:
        return re.escape(chr(iv[0][0])) if 0x20 <= iv[0][0] < 0x7F else "[" + _esc_char(
            iv[0][0]) + "]"
    if not iv:
        return "[^\\x00-\\U0010ffff]"
    neg = negate(iv)
    if len(neg) < len(iv) and neg:
        return "[^" + "".join(_range_text(lo, hi) for lo, hi in neg) + "]"
    return "[" + "".join(_range_text(lo, hi) for lo, hi in iv) + "]"


def _range_text(lo: int, hi: int) -> str:
    if lo == hi:
        return _esc_char(lo)
    return _esc_char(lo) + "-" + _esc_char(hi)


def to_pattern(node: Node) -> str:
    """Python `re` text matching the same language as `node` (fullmatch semantics)."""
    kind = node[0]
    if kind == "chars":
        return class_text(node[1])
    if kind == "seq":
        return "".join(_atom(n, in_seq=True) for n in node[1])
    if kind == "alt":
        return "|".join(to_pattern(n) for n in node[1])
    sub, lo, hi = node[1], node[2], node[3]
    a = _atom(sub, in_seq=False)
    if (lo, hi) == (0, None):
        return a + "*"
    if (lo, hi) == (1, None):
        return a + "+"
    if (lo, hi) == (0, 1):
        return a + "?"
    if hi is None:
        return a + f"{{{lo},}}"
    if lo == hi:
        return a + f"{{{lo}}}"
    return a + f"{{{lo},{hi}}}"


def _atom(node: Node, in_seq: bool) -> str:
    t = to_pattern(node)
    if node[0] == "chars":
        return t
    if node[0] == "alt" or (node[0] == "seq" and not in_seq) or (
            node[0] == "rep" and not in_seq):
        return "(?:" + t + ")"
    return t
