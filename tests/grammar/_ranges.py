"""What c_identifiers.py and python_xid.py share: a code point class as the text of a Lark
regex class, and printing or rewriting a grammar's class lines."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path


def _esc(c: int) -> str:
    return f"\\u{c:04X}" if c <= 0xFFFF else f"\\U{c:08X}"


def class_text(rs: Iterable[tuple[int, int]]) -> str:
    """The inside of a regex class holding the ranges `rs` (inclusive (lo, hi) pairs)."""
    return "".join(_esc(a) if a == b else f"{_esc(a)}-{_esc(b)}" for a, b in rs)


def print_or_write(argv: list[str], lines: dict[str, str], paths: Iterable[Path],
                   line_re: re.Pattern[str]) -> int:
    """Without `--write` in argv, print the terminal lines; with it, put each in place of the
    line of the same name (line_re's group 1) in every file of `paths`."""
    if "--write" not in argv:
        print("\n".join(lines.values()))
        return 0
    for path in paths:
        text = path.read_text(encoding="utf-8")
        new = line_re.sub(lambda m: lines[m.group(1)], text)
        if new == text and not all(line in text for line in lines.values()):
            print(f"{path}: no {'/'.join(lines)} lines to rewrite", file=sys.stderr)
            return 1
        path.write_text(new, encoding="utf-8")
    return 0
