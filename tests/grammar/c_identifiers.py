"""The non-ASCII identifier classes of grammars/c.lark and cpp.lark, from gcc and g++ themselves.

gcc 12 (-std=gnu17) and g++ 12 (-std=gnu++17) take UTF-8 in identifiers: a character may
stand in a name when it lies in the ranges of C11 Annex D.1 (C++11 [charname.allowed], the same
table), and first in a name unless it also lies in D.2 (combining marks: U+0300-036F, ...).
These are ranges of code points, unassigned ones included, not Unicode's XID properties
(U+00A8, U+200B, U+20AC are in; U+00D7 is out). Both compilers accept the same sets, so the
shared preprocessor section of the two grammars holds one copy (_ID_START, _ID_CONTINUE).

The oracle is the compiler: one file per (compiler, position, block of 64Ki code points) with a
declaration `int <c>a;` or `int a<c>;` per line, and the lines gcc reports an error on.

    python tests/grammar/c_identifiers.py            # print the two terminal lines
    python tests/grammar/c_identifiers.py --write    # rewrite them in c.lark and cpp.lark
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path (the tests)
    sys.path.append(str(Path(__file__).resolve().parent))
from _ranges import class_text as _class_text  # noqa: E402
from _ranges import print_or_write  # noqa: E402

GRAMMARS = Path(__file__).resolve().parents[2] / "server" / "holefill" / "grammars"
FILES = (GRAMMARS / "c.lark", GRAMMARS / "cpp.lark")
COMPILERS = {"c": ("gcc", "-std=gnu17", "c"), "cpp": ("g++", "-std=gnu++17", "c++")}
LINE_RE = re.compile(r"^(_ID_START|_ID_CONTINUE): /\[(.*)\]/$", re.M)
_CP = r"(\\u[0-9A-F]{4}|\\U[0-9A-F]{8})"
_RANGE = re.compile(f"{_CP}(?:-{_CP})?")
_ERROR_LINE = re.compile(r"^<stdin>:(\d+):\d+: error", re.M)


def accepted(language: str, position: str, cps: Iterable[int]) -> set[int]:
    """The code points c (>= 0x80, no surrogate) the compiler takes in a name: first
    (`position == "start"`, the name `<c>a`) or after a letter (the name `a<c>`)."""
    cc, std, lang = COMPILERS[language]
    cps = [c for c in cps if not 0xD800 <= c <= 0xDFFF]
    names = (chr(c) + "a" if position == "start" else "a" + chr(c) for c in cps)
    src = "".join(f"int {n};\n" for n in names)
    r = subprocess.run([cc, std, "-fsyntax-only", "-fmax-errors=0", "-w", "-x", lang, "-"],
                       input=src.encode(), capture_output=True, check=False)
    bad = {int(m) for m in _ERROR_LINE.findall(r.stderr.decode(errors="replace"))}
    return {c for i, c in enumerate(cps) if i + 1 not in bad}


def compiler_class(language: str, position: str) -> set[int]:
    blocks = [range(lo, min(lo + 0x10000, 0x110000)) for lo in range(0x80, 0x110000, 0x10000)]
    with ThreadPoolExecutor(2) as ex:
        return set().union(*ex.map(lambda b: accepted(language, position, b), blocks))


def ranges(cps: set[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


def class_text(cps: set[int]) -> str:
    return _class_text(ranges(cps))


def terminal_lines() -> dict[str, str]:
    """The two lines, from gcc; g++ must agree (the grammars share one copy)."""
    lines = {}
    for name, position in (("_ID_START", "start"), ("_ID_CONTINUE", "continue")):
        c, cpp = compiler_class("c", position), compiler_class("cpp", position)
        if c != cpp:
            raise SystemExit(f"gcc and g++ differ on {name}: {sorted(c ^ cpp)[:10]}")
        lines[name] = f"{name}: /[{class_text(c)}]/"
    return lines


def grammar_classes(text: str) -> dict[str, set[int]]:
    """The code points each class line of the grammar text holds."""
    out: dict[str, set[int]] = {}
    for m in LINE_RE.finditer(text):
        cps: set[int] = set()
        for a, b in _RANGE.findall(m.group(2)):
            lo = int(a[2:], 16)
            cps.update(range(lo, int(b[2:], 16) + 1 if b else lo + 1))
        out[m.group(1)] = cps
    return out


def main(argv: list[str]) -> int:
    return print_or_write(argv, terminal_lines(), FILES, LINE_RE)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
