"""Tests for grammars/python.lark and its fixture table tests/data/grammars/python.jsonl.

Fixture rows: {"text", "expect", "why"} plus three optional keys:
  "python":  the oldest Python whose `ast.parse` gives `expect` (e.g. "3.12" for `type X = int`);
             older interpreters skip the `ast.parse` comparison for that row.
  "until":   the newest Python whose `ast.parse` gives `expect` (e.g. "3.11" for the pre-PEP 701
             f-string rules); newer interpreters skip the `ast.parse` comparison for that row.
  "grammar": what our grammar answers when it knowingly differs from `ast.parse` (a "known
             difference" listed in the grammar header); the checkers are held to this value.

(a) every `expect` agrees with `ast.parse`;
(b) holefill's own checker agrees with the fixtures and accepts a fixed sample of real files
    (skipped until `holefill.Checker` exists and knows "python");
(c) the Lark-based harness `python_lark_check.py` (CPython tokenizer + Lark Earley over our
    grammar) agrees with the fixtures and accepts the same sample of real files.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import re
import sys
import sysconfig
import tokenize
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "grammars" / "python.jsonl"
GRAMMAR = ROOT / "server" / "holefill" / "grammars" / "python.lark"
STDLIB = Path(sysconfig.get_paths()["stdlib"])
# A fixed sample of small real files (stable across Python 3.11 - 3.13).
REAL_FILES = [
    "keyword.py",
    "this.py",
    "colorsys.py",
    "bisect.py",
    "__future__.py",
    "fnmatch.py",
    "copyreg.py",
]


def _load_rows() -> list[dict]:
    rows = []
    for i, line in enumerate(FIXTURES.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            row["_line"] = i
            rows.append(row)
    return rows


ROWS = _load_rows()
ROW_KEYS = {"text", "expect", "why", "python", "until", "grammar"}


def _row_id(row: dict) -> str:
    return f"L{row['_line']}"


def _grammar_expect(row: dict) -> bool:
    return row.get("grammar", row["expect"]) == "accept"


def _ast_accepts(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            return False
    return True


def _real_file(name: str) -> str:
    path = STDLIB / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    text = path.read_text(encoding="utf-8")
    if not _ast_accepts(text):
        pytest.skip(f"{path}: ast.parse rejects it")
    return text


# ----------------------------------------------------------------------------- fixture table


def test_fixture_table_shape():
    """tests/data/grammars/python.jsonl: known keys, both answers present, no duplicates."""
    assert len(ROWS) >= 80
    seen = set()
    for row in ROWS:
        keys = set(row) - {"_line"}
        assert {"text", "expect", "why"} <= keys <= ROW_KEYS, row
        assert row["expect"] in ("accept", "reject"), row
        assert row["why"].strip(), row
        if "grammar" in row:
            assert row["grammar"] in ("accept", "reject") and row["grammar"] != row["expect"], row
        assert row["text"] not in seen, f"duplicate fixture at line {row['_line']}"
        seen.add(row["text"])
    answers = {r["expect"] for r in ROWS}
    assert answers == {"accept", "reject"}


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_fixture_agrees_with_ast_parse(row):
    """Each fixture's `expect` is what `ast.parse` of this interpreter answers."""
    need = tuple(int(p) for p in row.get("python", "3.0").split("."))
    if sys.version_info[:2] < need:
        pytest.skip(f"needs Python {row['python']}")
    until = tuple(int(p) for p in row.get("until", "99.0").split("."))
    if sys.version_info[:2] > until:
        pytest.skip(f"Python {row['until']} rules only")
    assert _ast_accepts(row["text"]) == (row["expect"] == "accept"), row["why"]


def test_grammar_header_lists_differences():
    """python.lark starts with a header that lists the known differences."""
    head = GRAMMAR.read_text(encoding="utf-8").split("\nstart:", 1)[0]
    assert "Known differences" in head
    assert "%soft" in GRAMMAR.read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- holefill checker


def _holefill_python_checker():
    try:
        import holefill  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT / "server"))
    import holefill

    checker_cls = getattr(holefill, "Checker", None)
    if checker_cls is None:
        try:
            from holefill.check.checker import Checker as checker_cls
        except ImportError:
            pytest.skip("holefill.Checker is not available yet")
    try:
        return checker_cls.for_language("python")
    except Exception as e:  # any failure means "python is not supported yet"
        pytest.skip(f"holefill.Checker does not know python yet: {e!r}")


def _truth(result) -> bool:
    """`completable` returns a Verdict (YES / NO / UNKNOWN; only YES is truthy). UNKNOWN (the
    work budget ran out) is neither answer, so it fails the test instead of counting as NO."""
    value = getattr(result, "value", None)
    if value == "unknown":
        pytest.fail("the checker ran out of budget (UNKNOWN)")
    return bool(result)


@pytest.fixture(scope="module")
def holefill_checker():
    return _holefill_python_checker()


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_holefill_checker_agrees_with_fixture(holefill_checker, row):
    """holefill's checker answers each fixture as the grammar should (`grammar` or `expect`)."""
    got = _truth(holefill_checker.completable([row["text"]]))
    assert got == _grammar_expect(row), f"{row['why']}: {row['text']!r}"


@pytest.mark.parametrize("name", REAL_FILES)
def test_holefill_checker_accepts_real_file(holefill_checker, name):
    """holefill's checker accepts small standard-library files (REAL_FILES)."""
    assert _truth(holefill_checker.completable([_real_file(name)]))


# ----------------------------------------------------------------------------- Lark harness


@pytest.fixture(scope="module")
def lark_checker():
    pytest.importorskip("lark")
    spec = importlib.util.spec_from_file_location(
        "python_lark_check", Path(__file__).with_name("python_lark_check.py")
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("python_lark_check", mod)
    spec.loader.exec_module(mod)
    _split_string_kinds(mod)
    checker = mod.Checker(GRAMMAR)
    # FSTRING is built from helper terminals, so the harness has no single regex for it: take
    # Lark's compiled pattern, so that CPython string tokens our FSTRING rejects are rejected.
    pattern = checker.lark.get_terminal("FSTRING").pattern
    checker.regexes["FSTRING"] = re.compile(pattern.to_regexp(), re.S)
    # NAME too is built from helpers (_XID_START, _XID_CONTINUE).
    checker.regexes["NAME"] = re.compile(checker.lark.get_terminal("NAME").pattern.to_regexp())
    return checker


def _split_string_kinds(mod) -> None:
    """CPython has one STRING token; python.lark has STRING (str), BYTES and FSTRING. Relabel
    the harness's STRING lexemes by their prefix."""
    if getattr(mod, "_string_kinds_split", False):
        return
    original = mod.cpython_lexemes

    def cpython_lexemes(source: str):
        out = []
        for lx in original(source):
            if lx.kind == "STRING":
                prefix = re.match(r"[A-Za-z]*", lx.text).group(0).lower()
                kind = "BYTES" if "b" in prefix else "FSTRING" if "f" in prefix else "STRING"
                lx = dataclasses.replace(lx, kind=kind)
            out.append(lx)
        return out

    mod.cpython_lexemes = cpython_lexemes
    mod._string_kinds_split = True


def test_lark_harness_agrees_with_fixtures(lark_checker):
    """CPython tokens + Lark Earley over python.lark answer each fixture as expected."""
    wrong = []
    for row in ROWS:
        got, why = lark_checker.check(row["text"])
        if got != _grammar_expect(row):
            wrong.append(f"line {row['_line']}: got {got} ({why}) for {row['text']!r}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
@pytest.mark.parametrize("name", REAL_FILES)
def test_lark_harness_accepts_real_file(lark_checker, name):
    """The Lark harness accepts small standard-library files (REAL_FILES)."""
    got, why = lark_checker.check(_real_file(name))
    assert got, why


@pytest.mark.slow
def test_lark_harness_accepts_stdlib_sample(lark_checker):
    """The deterministic sample of `python_lark_check.py --stdlib` (150 files of at most 300
    lines, seed 0); about 3 minutes."""
    mod = sys.modules["python_lark_check"]
    failed = []
    for path in mod.stdlib_sample(150, 300, 0, STDLIB):
        with tokenize.open(path) as f:
            text = f.read()
        if not _ast_accepts(text):
            continue
        got, why = lark_checker.check(text)
        if not got:
            failed.append(f"{path}: {why}")
    assert not failed, "\n".join(failed)
