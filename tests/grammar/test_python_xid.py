"""The identifier classes of grammars/python.lark (_XID_START, _XID_CONTINUE) are what CPython
accepts: `str.isidentifier()` of this interpreter, up to the characters its Unicode tables and
the grammar's (15.0, Python 3.12) assign differently."""

from __future__ import annotations

import importlib.util
import sys
import unicodedata
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location(
    "python_xid", Path(__file__).with_name("python_xid.py"))
assert spec and spec.loader
xid = importlib.util.module_from_spec(spec)
spec.loader.exec_module(xid)


@pytest.fixture(scope="module")
def classes() -> dict[str, set[int]]:
    return xid.grammar_classes(xid.GRAMMAR.read_text(encoding="utf-8"))


def _differences(ours: set[int], pred) -> list[int]:
    """Code points where the grammar and this interpreter disagree, except code points that
    one of the two Unicode versions does not assign (a newer version only adds letters)."""
    out = []
    newer = unicodedata.unidata_version > xid.UNICODE_VERSION
    for c in range(0x80, 0x110000):
        if (c in ours) != pred(c):
            unassigned_here = unicodedata.category(chr(c)) == "Cn"
            if not unassigned_here and not (newer and c not in ours):
                out.append(c)
    return out


@pytest.mark.parametrize("name", ["_XID_START", "_XID_CONTINUE"])
def test_identifier_class_matches_isidentifier(classes, name):
    pred = xid.xid_start if name == "_XID_START" else xid.xid_continue
    wrong = _differences(classes[name], pred)
    assert not wrong, [f"U+{c:04X}" for c in wrong[:20]]


def test_identifier_classes_are_the_generated_ones():
    """With Python 3.12 (Unicode 15.0) the grammar holds exactly what the script writes."""
    if unicodedata.unidata_version != xid.UNICODE_VERSION:
        pytest.skip(f"needs unicodedata {xid.UNICODE_VERSION} (Python 3.12)")
    text = xid.GRAMMAR.read_text(encoding="utf-8")
    for line in xid.terminal_lines().values():
        assert line in text.splitlines()


def test_names_the_lexer_reads(classes):
    """Spot checks on the classes as the compiled lexer uses them."""
    sys.path.insert(0, str(xid.GRAMMAR.parents[2]))
    from holefill.check.checker import Checker

    c = Checker.for_language("python")
    assert c.completable(["\u2118x\u00b7 = 1\n"])
    assert not c.completable(["\u00b7x = 1\n"])
    assert not c.completable(["x\u2014y = 1\n"])
