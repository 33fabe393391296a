"""The identifier classes of grammars/c.lark and cpp.lark (_ID_START, _ID_CONTINUE) are what gcc
and g++ accept in a name, asked of the compilers on a sample of code points: both sides of
every range boundary of the grammar's classes, the fuzzer's non-ASCII letters and a few hundred
code points drawn at random (tests/grammar/c_identifiers.py --write probes all of them)."""

from __future__ import annotations

import importlib.util
import random
import shutil
import sys
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location(
    "c_identifiers", Path(__file__).with_name("c_identifiers.py"))
assert spec and spec.loader
cid = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cid)


def _classes(path: Path) -> dict[str, set[int]]:
    return cid.grammar_classes(path.read_text(encoding="utf-8"))


def test_c_and_cpp_hold_the_same_classes() -> None:
    c, cpp = (_classes(p) for p in cid.FILES)
    assert set(c) == {"_ID_START", "_ID_CONTINUE"}
    assert c == cpp


def _sample(classes: dict[str, set[int]]) -> list[int]:
    edges: set[int] = set()
    for cps in classes.values():
        for a, b in cid.ranges(cps):
            edges.update((a - 1, a, b, b + 1))
    rng = random.Random(29)
    drawn = {rng.randrange(0x80, 0x30000) for _ in range(300)}
    drawn |= {rng.randrange(0x80, 0x110000) for _ in range(100)}
    fuzz = {ord(ch) for ch in "éµªΩℕﬁ·٣ǅ€—\u00a0\u200b\u0301𝔘中ー\u2177℘℮×∂"}
    return sorted(c for c in edges | drawn | fuzz if 0x80 <= c <= 0x10FFFF)


@pytest.mark.parametrize("language", ["c", "cpp"])
@pytest.mark.parametrize(("name", "position"),
                         [("_ID_START", "start"), ("_ID_CONTINUE", "continue")])
def test_identifier_class_matches_the_compiler(language: str, name: str, position: str) -> None:
    if shutil.which(cid.COMPILERS[language][0]) is None:
        pytest.skip("no compiler to judge with")
    classes = _classes(cid.FILES[0])
    sample = _sample(classes)
    ok = cid.accepted(language, position, sample)
    wrong = [c for c in sample if not 0xD800 <= c <= 0xDFFF and (c in classes[name]) != (c in ok)]
    assert not wrong, [f"U+{c:04X}" for c in wrong[:20]]


@pytest.mark.parametrize("language", ["c", "cpp"])
def test_names_the_lexer_reads(language: str) -> None:
    """Spot checks on the classes as the compiled lexer and the directive lexemes use them."""
    sys.path.insert(0, str(cid.GRAMMARS.parents[1]))
    from holefill.check.checker import Checker

    c = Checker.for_language(language)
    assert c.completable(["int gr\u00f6\u00dfe = 1, ou\u01c5t, x\u0301, \u20acuro;\n"])
    assert not c.completable(["int \u0301x;\n"])  # a combining mark does not start a name
    assert not c.completable(["int a\u00d7b;\n"])  # U+00D7 is no letter
    assert not c.completable(["int a\u2014b;\n"])
    assert c.completable(["#define \u03b1(\u03b2, \u03b3) \u03b2\n#ifdef \u03b1\n"
                          "#if defined(\u03b1) && \u03b4 > 1\n#endif\n#endif\nint x;\n"])
    assert not c.completable(["#if \u00d7\n#endif\n"])
