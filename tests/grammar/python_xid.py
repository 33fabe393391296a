"""The non-ASCII identifier classes of grammars/python.lark, from this interpreter's `unicodedata`.

CPython's tokenizer (verify_identifier -> _PyUnicode_ScanIdentifier) accepts a name whose first
character is `_` or XID_Start and whose other characters are XID_Continue, checked on the text
as written (NFKC normalization comes later, in the parser). `str.isidentifier()` runs the same
scan, so it is the oracle here.

    python tests/grammar/python_xid.py            # print the two terminal lines
    python tests/grammar/python_xid.py --write    # rewrite them in python.lark

The grammar holds the classes of Unicode 15.0 (Python 3.12): run `--write` with a 3.12.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (the tests)
    sys.path.append(str(Path(__file__).resolve().parent))
from _ranges import class_text, print_or_write  # noqa: E402

GRAMMAR = Path(__file__).resolve().parents[2] / "server" / "holefill" / "grammars" / "python.lark"
UNICODE_VERSION = "15.0.0"  # the tables python.lark holds (Python 3.12)
LINE_RE = re.compile(r"^(_XID_START|_XID_CONTINUE): /\[(.*)\]/$", re.M)


def xid_start(c: int) -> bool:
    return c != 0x5F and chr(c).isidentifier()


def xid_continue(c: int) -> bool:
    return ("a" + chr(c)).isidentifier()


def ranges(pred, lo: int = 0x80, hi: int = 0x10FFFF) -> list[tuple[int, int]]:
    """Maximal ranges of code points in [lo, hi] that satisfy pred."""
    out: list[tuple[int, int]] = []
    start = None
    for c in range(lo, hi + 1):
        if pred(c):
            if start is None:
                start = c
        elif start is not None:
            out.append((start, c - 1))
            start = None
    if start is not None:
        out.append((start, hi))
    return out


def terminal_lines() -> dict[str, str]:
    return {"_XID_START": f"_XID_START: /[{class_text(ranges(xid_start))}]/",
            "_XID_CONTINUE": f"_XID_CONTINUE: /[{class_text(ranges(xid_continue))}]/"}


def grammar_classes(text: str) -> dict[str, set[int]]:
    """The code points each class line of the grammar text holds."""
    out: dict[str, set[int]] = {}
    for m in LINE_RE.finditer(text):
        body = m.group(2).encode().decode("unicode_escape")
        cps: set[int] = set()
        i = 0
        while i < len(body):
            if i + 2 < len(body) and body[i + 1] == "-":
                cps.update(range(ord(body[i]), ord(body[i + 2]) + 1))
                i += 3
            else:
                cps.add(ord(body[i]))
                i += 1
        out[m.group(1)] = cps
    return out


def main(argv: list[str]) -> int:
    if "--write" in argv and unicodedata.unidata_version != UNICODE_VERSION:
        print(f"run with a Python whose unicodedata is {UNICODE_VERSION}", file=sys.stderr)
        return 1
    return print_or_write(argv, terminal_lines(), [GRAMMAR], LINE_RE)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
