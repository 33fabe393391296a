"""Malformed grammar files: every error names file:line:col and shows a caret under the spot.

Data: tests/data/grammar_errors/*.lark; the table below holds (file, line, col, fragment)."""

from __future__ import annotations

from pathlib import Path

import pytest

from holefill.errors import GrammarError
from holefill.grammar import compile_grammar_file

DATA = Path(__file__).resolve().parents[1] / "data" / "grammar_errors"

CASES = [
    ("missing_colon.lark", 1, 7, "expected ':'"),
    ("undefined_rule.lark", 2, 13, "undefined rule thing"),
    ("undefined_terminal.lark", 1, 13, "undefined terminal SEMI"),
    ("unterminated_string.lark", 1, 8, "unterminated string"),
    ("unterminated_regex.lark", 2, 4, "unterminated regex"),
    ("backreference.lark", 2, 8, "backreference"),
    ("lookahead.lark", 2, 6, "lookahead"),
    ("anchor.lark", 2, 5, "anchor"),
    ("duplicate_terminal.lark", 3, 1, "duplicate definition of terminal A"),
    ("duplicate_rule.lark", 3, 1, "duplicate definition of rule a"),
    ("recursive_terminal.lark", 3, 8, "recursive terminal"),
    ("no_start.lark", 1, 1, "no `start` rule"),
    ("bad_regex.lark", 2, 6, "bad regex"),
    ("bad_flag.lark", 2, 7, "unsupported regex flag 'm'"),
    ("rule_in_terminal.lark", 2, 8, "cannot use rule b"),
    ("unclosed_group.lark", 1, 8, "unclosed '('"),
    ("unclosed_bracket.lark", 2, 4, "expected ']' to close"),
    ("import.lark", 1, 1, "%import is not supported"),
    ("declared_and_defined.lark", 3, 1, "both %declare'd"),
    ("empty_terminal.lark", 2, 1, "matches the empty string"),
    ("ignore_undefined.lark", 2, 9, "undefined terminal B"),
    ("bad_character.lark", 1, 12, "unexpected character '$'"),
]


@pytest.mark.parametrize("name,line,col,fragment", CASES, ids=[c[0] for c in CASES])
def test_malformed_grammar_reports_location_and_caret(name: str, line: int, col: int,
                                                      fragment: str) -> None:
    """The message starts with path:line:col, contains the fragment, then shows the source
    line and a caret in column `col`."""
    path = DATA / name
    with pytest.raises(GrammarError) as e:
        compile_grammar_file(path, "t", disk_cache=False)
    msg = str(e.value)
    head, src_line, caret = msg.split("\n")
    assert head.startswith(f"{path}:{line}:{col}: "), msg
    assert fragment in head, msg
    source = path.read_text().split("\n")[line - 1]
    assert src_line == "    " + source
    assert caret == "    " + " " * (col - 1) + "^"


def test_every_fixture_is_in_the_table() -> None:
    """Each file in tests/data/grammar_errors has an expected message."""
    assert sorted(p.name for p in DATA.glob("*.lark")) == sorted(c[0] for c in CASES)
