"""A check of the piece around the hole being filled answers like a check of the whole text
(holefill.check.focus, Constraint with `split`).

The lemma says a text with several open holes is completable iff each piece of fixed text
between two consecutive open holes is, with the holes at its ends, for languages whose start
symbol derives two sentences one after the other (Python, C, C++). The decoder checks only the
piece around its hole. Here, on replays of real Python and C++ cuts with two and three holes,
every token prefix of the first hole's removed text, wrong turns after some of them, and the
hole closed after each prefix get the same answer from the piece (engine and classic check)
as from the classic check of the whole text, and so does the whole text checked as the
conjunction of its pieces (the request's first check); so do checks of a later hole while an
earlier one is still open. JSON is not split: its start symbol is one value.
"""

from __future__ import annotations

import random

import pytest

from holefill import Checker
from holefill.check.checker import Verdict
from holefill.check.focus import focus
from holefill.check.window import Window
from holefill.datasets import Cut, python_cuts, span_cuts
from holefill.decode.completer import request_checks, segment_constraint
from holefill.decode.loop import DecodeSettings, HoleState
from holefill.lexing.anchors import Anchors, Site

PYTHON_PROBES = [")", "]:", "\n      x", "  # c", "else", " = (", "\n\n\tpass", "'''", "\n"]
CPP_PROBES = [")", "}", "{", "; else", "/* c", "#define X\n", "\"", "::", "\n"]
SETTINGS = DecodeSettings(segmented=False)


def whole(checker: Checker, chunks: list[str], sites: list[Site]) -> Verdict:
    return checker.check(chunks, anchors=Anchors(tuple(sites))).verdict


def replay(language: str, c: Cut, probes: list[str], rng: random.Random,
           hole: int = 0) -> tuple[list, int]:
    """Checks of hole `hole` of cut `c` (earlier holes open) through the split constraint
    against the whole text's classic check: the differences, and the checks compared."""
    checker = Checker.for_language(language)
    chunks = list(c.chunks)
    sites = list(checker.anchors(chunks).sites)
    con = segment_constraint(checker, chunks, Window(), SETTINGS, None)
    assert con.split
    state = HoleState(chunks[: hole + 1], chunks[hole + 1:],
                      [s for s in sites if s.chunk <= hole],
                      [s.moved(s.chunk - hole - 1, s.base) for s in sites if s.chunk > hole])
    middle = c.middles[hole]
    ends = sorted({*range(0, len(middle), 3), len(middle)})
    diffs, compared = [], 0
    for k, end in enumerate(ends):
        texts = [middle[:end]] + ([middle[:end] + rng.choice(probes)] if k % 2 == 0 else [])
        for text in texts:
            for closed in (False, True):
                st = state.closed(text) if closed else state.open(text)
                st_sites = state.closed_sites(text) if closed else state.open_sites()
                around = state.merged if closed else state.around
                want = whole(checker, st, st_sites)
                got = [con.verdict(st, st_sites, hole == 0, around)]
                if k % 2 == 0:  # the whole text, as the conjunction of its pieces
                    got.append(con.verdict(st, st_sites, hole == 0))
                for one in got:
                    if Verdict.UNKNOWN in (one, want):
                        continue
                    compared += 1
                    if one is not want:
                        diffs.append((c.name, closed, repr(text[-30:]), one, want))
    return diffs, compared


def _cpp_cuts(holes: int, n: int) -> list[Cut]:
    from holefill.bench.scaling import cpp_file

    rng = random.Random(11)
    texts = [(f"cpp11.{i}", cpp_file(rng.randint(40, 90), rng.randrange(10**6),
                                     namespaced=i % 2 == 1)) for i in range(n)]
    return list(span_cuts(texts, holes, 1, seed=11))


def _check(language: str, cuts: list[Cut], probes: list[str], hole: int = 0) -> None:
    checker = Checker.for_language(language)
    cuts = [c for c in cuts if checker.keeps_reading(c.chunks, c.middles)]
    assert cuts
    rng = random.Random(3)
    diffs, compared = [], 0
    for c in cuts:
        d, n = replay(language, c, probes, rng, hole)
        diffs += d
        compared += n
    assert diffs == []
    assert compared >= 20 * len(cuts)


@pytest.mark.parametrize(("holes", "n"), [(2, 3), (3, 2)])
def test_the_python_piece_around_the_first_hole_answers_like_the_whole_text(holes, n):
    _check("python", python_cuts("span", n, seed=17, holes=holes, max_lines=80),
           PYTHON_PROBES)


def test_the_python_piece_around_a_later_hole_answers_like_the_whole_text():
    _check("python", python_cuts("line", 3, seed=19, holes=3, max_lines=80), PYTHON_PROBES,
           hole=1)


@pytest.mark.parametrize("holes", [2, 3])
def test_the_cpp_piece_around_the_first_hole_answers_like_the_whole_text(holes):
    _check("cpp", _cpp_cuts(holes, 2), CPP_PROBES)


def test_a_json_text_is_not_split_at_its_holes():
    """`[1] h [2]`: both pieces are completable, the text is not (two values)."""
    checker = Checker.for_language("json")
    chunks = ["[1]", "[2]", ""]
    con = segment_constraint(checker, chunks, Window(), SETTINGS, None)
    assert not con.split
    assert con.verdict(chunks, [], True, (0, 1)) is Verdict.NO
    pieces = [focus(chunks, [], 0, 0), focus(chunks, [], 1, 2)]
    assert [whole(checker, p.chunks, p.sites) for p in pieces] == [Verdict.YES, Verdict.YES]


def test_a_piece_keeps_the_sites_of_its_chunks_renumbered():
    sites = [Site(1, length=3, alpha_s=1), Site(2, length=2, alpha_s=0), Site(3, length=1)]
    chunks = ["a", "bcd", "ef", "g"]
    f = focus(chunks, sites, 1, 2)
    assert f.chunks == ["", "bcd", "ef", ""]
    assert f.sites == [Site(1, length=3, alpha_s=1), Site(2, length=2, alpha_s=0)]
    assert f.shift == 1
    first = focus(chunks, sites, 0, 1)
    assert first.chunks == ["a", "bcd", ""] and first.shift == 0
    last = focus(chunks, sites, 3, 3)
    assert last.chunks == ["", "g"] and last.sites == [Site(1, length=1)]


def test_a_three_hole_python_request_checks_each_token_without_the_classic_check():
    """The incremental engine answers every token of the first hole from its piece: its right
    context ends at the second hole, so the closure stays small (before, it ran out of its
    budget and every token paid the classic check)."""
    checker = Checker.for_language("python")
    cuts = [c for c in python_cuts("span", 4, seed=23, holes=3, max_lines=120)
            if checker.keeps_reading(c.chunks, c.middles)]
    for c in cuts:
        (seg, con), *_ = request_checks(checker, list(c.chunks), DecodeSettings())
        state = HoleState([seg.chunks[0]], list(seg.chunks[1:]), [],
                          [s.moved(s.chunk - 1, s.base) for s in seg.sites])
        for end in range(1, len(c.middles[0]) + 1, 4):
            got = con.verdict(state.open(c.middles[0][:end]), state.open_sites(), True,
                              state.around)
            assert got is Verdict.YES
        assert con.classic == 0, c.name


def test_a_diffusion_step_checks_the_piece_of_the_chunk_its_token_went_into():
    """Tokens placed in random order in the masked runs of a three-hole Python text: from
    every state the loop holds (the whole text completable), the check of the piece around
    the chunk the new token went into (diffusion._chunk_of) answers like the whole text."""
    from holefill.decode.diffusion import _chunk_of
    from holefill.decode.diffusion_canvas import EMPTY, MASK, Canvas

    vocab = ["x", " = ", "(", ")", ":", "\n", "    ", "if ", "1", " +", "'", "]", "return ", ","]
    checker = Checker.for_language("python")
    chunks = ["def f(a):\n    b = ", "\n    if b", "\n        return a", "\nprint(f(2))\n"]
    sites = list(checker.anchors(chunks).sites)
    con = segment_constraint(checker, chunks, Window(), SETTINGS, None)
    assert con.split
    canvas = Canvas(chunks, [[MASK] * 4 for _ in range(3)], sites,
                    lambda ids: "".join(vocab[i] for i in ids))
    rng = random.Random(29)
    compared, nos = 0, 0
    for _ in range(120):
        masked = canvas.masked()
        if not masked:
            break
        hole, slot = rng.choice(masked)
        value = rng.choice([EMPTY, *range(len(vocab))])
        nxt = canvas.with_slot(hole, slot, value)
        partial = nxt.partial()
        j = _chunk_of(partial, hole, slot)
        got = con.verdict(partial.chunks, partial.sites, False, (j, j))
        want = whole(checker, partial.chunks, partial.sites)
        assert got is want, (partial.chunks, j)
        compared += 1
        nos += want is Verdict.NO
        if want is Verdict.YES:
            canvas = nxt
    assert compared >= 30 and 0 < nos < compared
