"""Python's layout with holes: indentation stacks with free zones, and witnesses of cuts that
once came out wrong (judged by `ast.parse`, never by our grammar)."""

from __future__ import annotations

import ast

import pytest

from holefill import Checker, Verdict
from holefill.datasets import python_cuts
from holefill.lexing.python_layout import (
    FREE0,
    FREE1,
    SPACE,
    free_width_moves,
    line_at,
    top_at_least,
    zone,
    zone_least,
    zone_min,
)


def test_zones_encode_their_least_levels_and_width():
    assert zone(False) == FREE0 and zone(True) == FREE1
    for at_least_one in (False, True):
        for least in (0, 1, 7, 40):
            z = zone(at_least_one, least)
            assert z < 0
            assert zone_min(z) == int(at_least_one)
            assert zone_least(z) == least


def sp(n: int) -> int:
    """The width of n spaces."""
    return n * SPACE


def test_a_line_after_a_hole_level_at_least_10_deep():
    """A hole opened levels above 4 whose last is at least 10 columns deep (its line holds a
    token there). A later line at 8 can only be a level the hole opened below its last one."""
    st = (0, sp(4), zone(True, sp(10)))
    assert [m for m, _ in line_at(st, sp(8), None)] == [("D+",)]
    assert sorted(m for m, _ in line_at(st, sp(10), None)) == [(), ("D+",)]
    assert sorted(m for m, _ in line_at(st, sp(12), None)) == [(), ("D+",), ("I",)]
    # A line at a known level closes the zone whatever its widths.
    assert [m for m, _ in line_at(st, sp(4), None)] == [("D+",)]


def test_strict_mode_keeps_the_least_width_too():
    st = (0, sp(4), zone(True, sp(10)))
    assert [m for m, _ in line_at(st, sp(8), sp(4))] == [("D+",)]
    assert sorted(m for m, _ in line_at(st, sp(12), sp(4))) == [(), ("D+",)]
    assert sorted(m for m, _ in line_at(st, sp(16), sp(4))) == [(), ("D+",), ("I",)]


def test_a_line_whose_width_a_hole_chose_opens_a_level_at_least_that_deep():
    moves = dict(free_width_moves((0, sp(4), sp(8)), least=sp(9)))
    assert set(moves) == {("I",)}
    assert zone_least(moves[("I",)][-1]) == sp(9)


def test_the_bound_goes_to_the_top_zone_only():
    assert top_at_least((0, sp(4)), sp(9)) == (0, sp(4))
    assert zone_least(top_at_least((0, sp(4), FREE1), sp(9))[-1]) == sp(9)
    assert top_at_least((0, sp(8), FREE0), sp(6)) == (0, sp(8), FREE0)  # the line may sit at 8
    assert zone_min(top_at_least((0, sp(4), FREE0), sp(6))[-1]) == 1


# Cuts of the standard library whose witnesses CPython rejected before the fixes named:
# lexemes running from one hole into the next (indentation carried over), a hole's line
# break right after a comment, a token that starts a line in a hole below the line's
# indentation, levels opened by a hole and pinned by the next line, the INDENT a text token
# emits before a hole, f-strings that swallowed the text after a hole, and the line width a
# hole's whitespace must reach.
FORMER_FAILURES = {  # (kind, holes, sample size of python_cuts with seed 0): cut names
    ("span", 1, 1000): ["test_ioctl.py#span37"],
    ("span", 1, 2000): ["colorchooser.py#span1495", "test___loader__.py#span1720"],
    ("span", 2, 300): ["_adapters.py#span51", "browser.py#span73", "test_cprofile.py#span118",
                       "test_longexp.py#span163", "copy.py#span250"],
    ("span", 3, 300): ["_test_embed_structseq.py#span84", "test_help.py#span199",
                       "test_tool.py#span209", "conv.py#span240", "saxutils.py#span274"],
    ("span", 3, 500): ["test_enumerate.py#span316"],
}


@pytest.mark.parametrize(("kind", "holes", "n"), sorted(FORMER_FAILURES))
def test_witnesses_of_former_failures_parse(kind, holes, n):
    names = set(FORMER_FAILURES[(kind, holes, n)])
    cuts = [c for c in python_cuts(kind, n, seed=0, holes=holes) if c.name in names]
    if not cuts:
        pytest.skip("this interpreter's standard library gives other cuts")
    assert len(cuts) == len(names), names - {c.name for c in cuts}
    chk = Checker.for_language("python")
    for c in cuts:
        res = chk.check(c.chunks, want_witness=True, anchored=False)  # the cuts' semantics
        assert res.verdict is Verdict.YES, c.name
        ast.parse(c.filled(res.fills or []))  # raises on a bad witness
