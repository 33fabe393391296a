"""The diffusion state seen by the checker (the paper's §3.1 reduction), pinned down on a
word-level vocabulary: which slots become holes, where text and anchor sites go, how the
witness fills what is left. No model needed."""

from __future__ import annotations

from holefill import Checker
from holefill.decode.diffusion_canvas import EMPTY, MASK, Canvas, witness_texts
from holefill.lexing.anchors import Site

VOCAB = {1: "x", 2: " + ", 3: "1", 4: "(", 5: ")", 6: "\ufffd"}  # 6: half a character
M, E = MASK, EMPTY


def decode(ids) -> str:
    return "".join(VOCAB[i] for i in ids)


def canvas(chunks: list[str], runs: list[list[int]], frozen: frozenset[int] = frozenset()
           ) -> Canvas:
    sites = [Site(j, 0, len(c)) for j, c in enumerate(chunks) if j and c]
    return Canvas(chunks, runs, sites, decode, frozen)


def test_a_token_inside_a_masked_run_splits_it_into_two_holes() -> None:
    p = canvas(["y = ", "\n"], [[M, 1, M]]).partial()
    assert p is not None
    assert p.chunks == ["y = ", "x", "\n"]
    assert [[(s.start, s.end) for s in h] for h in p.holes] == [[(0, 1)], [(2, 3)]]


def test_empty_slots_are_no_text_and_join_the_masks_around_them() -> None:
    p = canvas(["y = ", "\n"], [[M, E, M, 1, E, 2, E]]).partial()
    assert p is not None
    assert p.chunks == ["y = ", "x + \n"]  # one hole, then the tokens with no gap
    assert len(p.holes) == 1 and p.holes[0][0].masked == 2


def test_a_run_without_masks_closes_its_hole_and_its_site_moves_into_the_merged_chunk() -> None:
    p = canvas(["y = ", " + 2\n", "\n"], [[1, E], [M]]).partial()
    assert p is not None
    assert p.chunks == ["y = x + 2\n", "\n"]
    # the user's " + 2\n" now starts at offset 5 of chunk 0
    assert [(s.chunk, s.base) for s in p.sites] == [(0, 5), (1, 0)]


def test_a_site_after_generated_text_of_an_open_hole_starts_behind_that_text() -> None:
    p = canvas(["y = ", ")\n"], [[M, 2, 3]]).partial()
    assert p is not None
    assert p.chunks == ["y = ", " + 1)\n"]
    assert [(s.chunk, s.base) for s in p.sites] == [(1, 4)]


def test_holes_side_by_side_are_one_hole() -> None:
    p = canvas(["y = ", "", "\n"], [[M], [M, M]]).partial()
    assert p is not None
    assert p.chunks == ["y = ", "\n"]
    assert [len(h) for h in p.holes] == [2]


def test_unfinished_characters_have_no_text_yet() -> None:
    assert canvas(["y = ", "\n"], [[6, M]]).partial() is None


def test_frozen_holes_are_holes_in_every_check_but_never_unmasked() -> None:
    c = canvas(["a = ", "\nb = ", "\n"], [[M, M], [M]], frozenset({1}))
    assert c.masked() == [(0, 0), (0, 1)]
    assert len(c.masked(asked_only=False)) == 3
    p = c.with_slot(0, 0, 1).with_slot(0, 1, E).partial()
    assert p is not None and p.chunks == ["a = x\nb = ", "\n"]


def test_growing_inserts_masks_after_the_slot() -> None:
    c = canvas(["y = ", "\n"], [[4, M]]).grown(0, 1, 3)
    assert c.runs == [[4, M, M, M, M]]
    assert c.segment_of(0, 2).masked == 4


def test_the_witness_fills_what_is_left_and_the_result_is_valid_python() -> None:
    c = canvas(["def f(y):\n    return ", "\n\nz = ", "\n"], [[4, M, 2, M], [E, M]])
    p = c.partial()
    assert p is not None and len(p.holes) == 3
    fills = Checker.for_language("python").witness(p.chunks)
    assert fills is not None
    texts = witness_texts(p, fills)
    filled = c.fills(texts)
    source = "def f(y):\n    return " + filled[0] + "\n\nz = " + filled[1] + "\n"
    compile(source, "<witness>", "exec")
    assert filled[0].startswith("(") and " + " in filled[0]  # the model's tokens stay
