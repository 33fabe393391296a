"""Segments (holefill.check.segments) against CPython: when every segment, filled, parses
and keeps its reading, the whole filled document parses and keeps its reading (`ast.parse`
and the anchors of the whole document are the judges); real middles are accepted segment by
segment; and decoding with segments gives fills that parse.

Data: cuts of standard-library modules of the running interpreter (read directly), with 2 and
3 spans removed by holefill.datasets' `random_spans` (seeded), kept when the removed text
leaves the reading around it as it was; random fillings put snippets
that open and close brackets, strings, blocks and decorators into one hole, or into each.
"""

from __future__ import annotations

import ast
import itertools
import random

import pytest
from tests.check.test_window import MEDIUM, modules, parses

from holefill import Checker, Verdict
from holefill.check.segments import MAX_SCAN, Segment, split_segments
from holefill.datasets import cut, random_spans

FRAGMENTS = ["", "x", "pass", "\n", ")", "(", "'''", '"', "#", "\\\n", ":", "]", "@d\n",
             "\ndef q():\n    pass\n", "\nelse:\n    pass\n", "    return 1\n", "\n\n",
             "if x:\n", "class K:\n    pass\n", "\n@cache\n"]


@pytest.fixture(scope="module")
def checker() -> Checker:
    return Checker.for_language("python")


def segments_of(checker: Checker, chunks: list[str]) -> list[Segment]:
    return split_segments("python", checker.lexer.reference, chunks,
                          list(checker.anchors(chunks).sites), checker.adjacent)


def joined(segments: list[Segment]) -> list[str]:
    """The document's chunks again: each segment's last chunk runs on into the next one's
    first."""
    out: list[str] = []
    for seg in segments:
        chunks = list(seg.chunks)
        assert chunks[0].startswith(seg.prefix) and chunks[-1].endswith(seg.guard)
        chunks[0] = chunks[0][len(seg.prefix):]
        chunks[-1] = chunks[-1][: len(chunks[-1]) - len(seg.guard)]
        if out:
            out[-1] += chunks[0]
            out.extend(chunks[1:])
        else:
            out.extend(chunks)
    return out


def filled(chunks: tuple[str, ...] | list[str], fills: list[str]) -> str:
    return "".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True))


THREE = ["def f(x):\n    y = x\n    return ", "\n    z = 1\n\n\ndef g(y):\n    z = ",
         "\n    return z\n\n\nclass C:\n    a = ", "\n# done\n"]


def test_a_definition_after_a_line_of_code_splits_the_text(checker):
    segs = segments_of(checker, THREE)
    assert [seg.holes for seg in segs] == [range(0, 1), range(1, 2), range(2, 3)]
    assert segs[1].chunks[0].startswith("def g(y):") and segs[2].chunks[0].startswith("class C")
    assert joined(segs) == THREE


def test_segments_keep_the_sites_of_their_chunks(checker):
    sites = checker.anchors(THREE).sites
    segs = segments_of(checker, THREE)
    assert segs[0].sites[0].alpha_s == sites[0].alpha_s
    assert segs[0].sites[0].length == len(segs[0].chunks[1])
    assert [s.chunk for seg in segs for s in seg.sites] == [1, 1, 1]


def test_no_cut_where_a_hole_may_write_the_definitions_decorator(checker):
    """Only blank lines and comments between the hole and `def`: `@cache` typed into the
    hole decorates it, which a cut there would refuse."""
    chunks = ["def f(x):\n    return x\n", "\n# next\n\ndef g():\n    pass\n", ""]
    assert len(segments_of(checker, chunks)) == 1
    assert parses(filled(chunks, ["\n@cache", ""]))


def test_no_cut_inside_a_string_the_hole_may_lie_in(checker):
    """The cursor inside a docstring: the `def` after it is string content in the user's
    reading."""
    chunks = ['s = """', '\nx = 1\ndef g():\n    pass\n"""\ny = 2\n', "\nz = 3\n"]
    assert len(segments_of(checker, chunks)) == 1


def test_a_hole_in_a_docstring_leaves_the_definitions_after_the_docstring_cut(checker):
    """The cursor in a docstring: read as code, the rest of it puts two names side by side,
    which no filling can keep, so only the docstring's own reading counts."""
    chunks = ['def f():\n    """Return the', ' sum of the values.\n\n    More words.\n    """\n'
              '    return 1\n\n\ndef g(y):\n    z = ', '\n    return z\n']
    segs = segments_of(checker, chunks)
    assert [seg.holes for seg in segs] == [range(0, 1), range(1, 2)]
    assert segs[1].chunks[0].startswith("def g(y):")
    assert joined(segs) == chunks
    # without the grammar's pairs, the code reading (its closing quotes open a string that
    # runs on past `def g`) keeps the text in one piece
    sites = list(checker.anchors(chunks).sites)
    assert len(split_segments("python", checker.lexer.reference, chunks, sites)) == 1


def test_lexemes_after_one_that_runs_past_the_text_read_rule_out_nothing(checker):
    """A cut is looked for in the first MAX_SCAN characters: a lexeme whose run reaches the
    end of what is read (g's docstring here) is unknown, and so is where every lexeme after
    it starts. Read as decided, `Doc string` after the cut-off quotes looked like two names
    side by side and made the document's own reading look impossible."""
    head = " sum of the values.\n"
    tail = ('    """\n    return 1\n\n\ndef g(y):\n    """Doc string that runs on, '
            + "and on, " * 20 + '\n    """\n    z = ')
    at = tail.index("def g")
    pad = "    More words.\n" * ((MAX_SCAN - len(head) - at) // 16)
    chunks = ['def f():\n    """Return the', head + pad + tail, "\n    return z\n"]
    keyword = len(head + pad) + at
    quotes = chunks[1].index('"""Doc')
    assert keyword <= MAX_SCAN and quotes < MAX_SCAN + 64 < chunks[1].index('"""', quotes + 3)
    segs = segments_of(checker, chunks)
    assert [seg.holes for seg in segs] == [range(0, 1), range(1, 2)]
    assert segs[1].chunks[0].startswith("def g(y):")


def test_a_top_level_statement_before_the_definition_ends_the_segment(checker):
    chunks = ["x = ", "\nLIMIT = 10\n\n\ndef g(y):\n    z = ", "\n    return z\n"]
    segs = segments_of(checker, chunks)
    assert [seg.holes for seg in segs] == [range(0, 1), range(1, 2)]
    assert segs[1].chunks[0].startswith("def g(y):")


def test_no_cut_after_a_decorator_a_blank_line_keeps_apart(checker):
    chunks = ["x = 1\n", "\ny = 2\n@cache\n\ndef g():\n    pass\n", ""]
    assert len(segments_of(checker, chunks)) == 1
    assert parses("@cache\n\ndef g():\n    pass\n")


@pytest.mark.parametrize("chunks", [
    ["x = 1\n", "\ny = 2 \\\ndef g():\n    pass\n", ""],  # continued line
    ["x = 1\n", "\ny = 2\n  def g():\n    pass\n", ""],  # not at column 0
    ["x = 1\n", "\ny = 2\ndefault = 3\n", ""],  # a name that starts with def
    ["x = 1\n", "\ny = 2\ndef", "():\n    pass\n"],  # the keyword touches a hole
])
def test_no_cut_where_the_line_may_not_start_a_definition(checker, chunks):
    assert len(segments_of(checker, chunks)) == 1


def test_no_segments_in_plain_semantics_or_other_languages(checker):
    assert len(split_segments("python", checker.lexer.reference, THREE, [])) == 1
    cpp = ["int f() { return ", "; }\nint g() { return ", "; }\n"]
    assert len(split_segments("cpp", None, cpp, [])) == 1


def real_cuts(checker: Checker, holes: int, per_file: int, seed: int) -> list:
    out = []
    for name, text in modules(tuple(MEDIUM)):
        rng = random.Random(f"segments:{seed}:{holes}:{name}")
        got = 0
        for _ in range(40 * per_file):
            if got == per_file:
                break
            spans = random_spans(text, holes, rng, 5, 80)
            if spans is None:
                continue
            c = cut(name, text, spans)
            if checker.keeps_place(c.chunks, c.middles):
                out.append(c)
                got += 1
    return out


@pytest.mark.parametrize("holes", [2, 3])
def test_filled_segments_that_parse_make_a_document_that_parses(checker, holes):
    """The lemma, with CPython as the judge: random fillings; whenever each
    segment filled parses and keeps its reading, the whole document does."""
    split, premises = lemma_sweep(checker, real_cuts(checker, holes, 2, 0), holes,
                                  FRAGMENTS, lambda segs: len(segs) > 1)
    assert split >= 5, "too few cuts were split to test anything"
    assert premises >= 10


def lemma_sweep(checker: Checker, cuts: list, holes: int, fragments: list[str],
                split: object) -> tuple[int, int]:
    """For the cuts whose segments `split` accepts, 20 random fillings each: one hole (or,
    a third of the time, each) takes a fragment, the rest their real text; whenever every
    segment, filled, parses and keeps its reading, the whole document must. Returns the
    cuts split and the fillings that met the premise."""
    rng = random.Random(holes)
    n_split = premises = 0
    for c in cuts:
        chunks = list(c.chunks)
        segs = segments_of(checker, chunks)
        if not split(segs):  # type: ignore[operator]
            continue
        n_split += 1
        assert joined(segs) == chunks
        for _ in range(20):
            fills = list(c.middles)
            for i in ([rng.randrange(holes)] if rng.random() < 0.67 else range(holes)):
                fills[i] = rng.choice(fragments)
            ok = all(parses(filled(seg.chunks, fills[seg.first:seg.first + len(seg.holes)]))
                     and checker.keeps_reading(list(seg.chunks),
                                               fills[seg.first:seg.first + len(seg.holes)])
                     for seg in segs)
            if ok:
                premises += 1
                assert parses(filled(chunks, fills)), (c.name, fills)
                assert checker.keeps_reading(chunks, fills), (c.name, fills)
    return n_split, premises


@pytest.mark.parametrize("holes", [2, 3])
def test_real_middles_are_accepted_segment_by_segment(checker, holes):
    """Nothing the user's code allows is refused: each segment with its real middles is YES,
    and each segment's witness completes the whole document."""
    split = 0
    for c in real_cuts(checker, holes, 2, 1):
        chunks = list(c.chunks)
        segs = segments_of(checker, chunks)
        if len(segs) == 1:
            continue
        split += 1
        witness: list[str] = []
        for seg in segs:
            middles = list(c.middles[seg.first:seg.first + len(seg.holes)])
            closed = [filled(seg.chunks, middles)]
            assert checker.check(closed).verdict is Verdict.YES, (c.name, seg.first)
            res = checker.check(list(seg.chunks), want_witness=True)
            assert res.verdict is Verdict.YES and res.fills is not None, (c.name, seg.first)
            witness.extend(res.fills)
        assert parses(filled(chunks, witness)), (c.name, witness)
        assert checker.keeps_reading(chunks, witness), (c.name, witness)
    assert split >= 5


# --- indented cuts (a file that is one large class) ----------------------------------------

CLASS = ["import os\n\n\nclass C:\n    a = 1\n\n    def f(self):\n        return ",
         "\n\n    @property\n    def g(self):\n        return 2\n\n    def h(self):\n"
         "        return ", "\n\n\nx = C()\n"]


def test_a_method_between_holes_of_one_class_splits_it_with_a_wrapper(checker):
    segs = segments_of(checker, CLASS)
    assert [list(s.holes) for s in segs] == [[0], [1]]
    a, b = segs
    assert a.guard == "    pass\n" and a.chunks[-1].endswith("\n\n    pass\n")
    # not before `@property`: no line of code between it and the hole (the hole could
    # write a decorator of its own, see the module docstring)
    assert b.prefix == "class _:\n" and b.chunks[0].startswith("class _:\n    def h(self)")
    assert joined(segs) == CLASS
    assert all(parses(filled(s.chunks, ["1"] * len(s.holes))) for s in segs)


@pytest.mark.parametrize("chunks", [
    # the class sits in an `if` whose `else` comes after the cut: the wrapper cannot take it
    ["if x:\n    class C:\n        def f(self):\n            return ",
     "\n        x = 1\n\n    def g():\n        return 2\nelse:\n    C = None\n", "\n"],
    # a definition nested deeper than the class body is no cut
    ["class C:\n    def f(self):\n        x = ", "\n        def inner():\n"
     "            return 2\n        return inner\n    y = ", "\n"],
    # the top-level statement is a `try`: an `except` after a later hole would continue it
    ["try:\n    x = 1\n\n    def f():\n        return ",
     "\n        y = 2\n\n    def g():\n        return ", "\nexcept ImportError:\n    pass\n"],
    # a line of the class body shallower than the definition's (a `def` in an `if`)
    ["class C:\n    if x:\n        def f(self):\n            return ",
     "\n            y = 1\n        def g(self):\n            return 2\n    z = ", "\n"],
])
def test_no_indented_cut_where_the_wrapper_could_refuse_the_users_lines(checker, chunks):
    segs = segments_of(checker, chunks)
    assert all(not s.prefix for s in segs), [s.prefix for s in segs]


CLASSY = ["_pydecimal.py", "argparse.py", "configparser.py", "pydoc.py", "tarfile.py",
          "imaplib.py", "ftplib.py", "smtplib.py"]


def class_cuts(checker: Checker, holes: int, per_file: int, seed: int,
               names: list[str] = CLASSY) -> list:
    """Cuts whose holes all lie in one top-level class of at least 300 lines."""
    out = []
    for name, text in modules(tuple(names)):
        tree = ast.parse(text)
        lines = text.splitlines(keepends=True)
        starts = [0, *itertools.accumulate(map(len, lines))]
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef)
                   and (n.end_lineno or 0) - n.lineno >= 300]
        rng = random.Random(f"class-segments:{seed}:{holes}:{name}")
        got = 0
        for _ in range(60 * per_file):
            if got == per_file or not classes:
                break
            node = rng.choice(classes)
            lo, hi = starts[node.lineno], starts[node.end_lineno or node.lineno]
            spans = random_spans(text[lo:hi], holes, rng, 5, 60)
            if spans is None:
                continue
            c = cut(name, text, [(a + lo, b + lo) for a, b in spans])
            if checker.keeps_place(c.chunks, c.middles):
                out.append(c)
                got += 1
    return out


@pytest.mark.parametrize("holes", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_indented_segments_that_parse_make_a_document_that_parses(checker, holes):
    """The indented lemma with CPython as the judge (as the top-level one above): random
    fillings of holes in one large class; whenever each segment, with its guard and
    wrapper, filled parses and keeps its reading, the whole document does."""
    fragments = FRAGMENTS + ["\nx = 1\n", "\n    def q(self):\n", "\nclass D:\n  def r(self):\n"]
    split, premises = lemma_sweep(checker, class_cuts(checker, holes, 2, 0), holes, fragments,
                                  lambda segs: any(s.prefix for s in segs))
    assert split >= 6, "too few cuts were split inside a class to test anything"
    assert premises >= 20


@pytest.mark.parametrize("holes", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_real_middles_in_one_class_are_accepted_segment_by_segment(checker, holes):
    """No false NO from an indented cut: every segment with its real middles is YES, and
    the segments' witnesses together complete the whole document."""
    split = 0
    for c in class_cuts(checker, holes, 2, 1):
        chunks = list(c.chunks)
        segs = segments_of(checker, chunks)
        if not any(s.prefix for s in segs):
            continue
        split += 1
        witness: list[str] = []
        for seg in segs:
            middles = list(c.middles[seg.first:seg.first + len(seg.holes)])
            assert parses(filled(seg.chunks, middles)), (c.name, seg.first)
            res = checker.check(list(seg.chunks), want_witness=True)
            assert res.verdict is Verdict.YES and res.fills is not None, (c.name, seg.first)
            witness.extend(res.fills)
        assert parses(filled(chunks, witness)), (c.name, witness)
    assert split >= 6


def test_every_prefix_of_real_middles_in_one_class_is_accepted_by_the_decoders_checks(checker):
    """The replay over the new cut points: every 4-character prefix of the first hole's real
    middle, checked as the decoder checks it (its segment, window and engine), is never
    NO where the real middle keeps the user's structure."""
    from holefill.decode.completer import request_checks
    from holefill.decode.loop import DecodeSettings

    split = replayed = 0
    for c in class_cuts(checker, 2, 2, 2):
        if checker.structure_violation(list(c.chunks), list(c.middles)) is not None:
            continue  # refused by the structure rule, by design
        parts = request_checks(checker, list(c.chunks), DecodeSettings())
        split += any(seg.prefix for seg, _ in parts)
        seg, constraint = next(p for p in parts if 0 in p[0].holes)
        rules = checker.structure(list(seg.chunks))
        shaped = rules.with_starts([len(seg.chunks[0])]) if rules.rules else rules
        middle = c.middles[0]
        for end in [*range(4, len(middle), 4), len(middle)]:
            state = [seg.chunks[0] + middle[:end], *seg.chunks[1:]]
            got = constraint.verdict(state, list(seg.sites), True, (0, 1), shaped)
            assert got is not Verdict.NO, (c.name, middle[:end])
            replayed += 1
    assert split >= 4 and replayed >= 30


UNSEEN = ["test/test_enum.py", "test/test_re.py", "test/test_math.py",
          "unittest/test/testmock/testmock.py", "test/test_dataclasses/__init__.py"]


@pytest.mark.slow
@pytest.mark.parametrize("holes", [2, 3])
def test_decoders_checks_agree_with_the_exact_check_in_unseen_large_classes(checker, holes):
    """Trying to break the indented cuts, the window engines and the member-wise parses on
    files none of them was built on: the first hole's text (a prefix of its real middle or
    a fragment) checked as the decoder checks it (segments, windows, engines) against the
    exact check of the whole document; where no hole is left open, CPython judges."""
    from holefill.decode.completer import request_checks
    from holefill.decode.loop import DecodeSettings

    cuts = class_cuts(checker, holes, 3, 3, UNSEEN)
    rng = random.Random(f"unseen:{holes}")
    asked = 0
    for c in cuts:
        parts = request_checks(checker, list(c.chunks), DecodeSettings())
        seg, constraint = next(p for p in parts if 0 in p[0].holes)
        rules = checker.structure(list(seg.chunks))
        shaped = rules.with_starts([len(seg.chunks[0])]) if rules.rules else rules
        whole_rules = checker.structure(list(c.chunks))
        whole_shaped = (whole_rules.with_starts([len(c.chunks[0])]) if whole_rules.rules
                        else whole_rules)
        middle = c.middles[0]
        texts = [middle[:rng.randrange(len(middle) + 1)] for _ in range(4)]
        texts += rng.sample(FRAGMENTS + ["\n        else:\n", "\n    def z(self):\n"], 4)
        for typed in texts:
            state = [seg.chunks[0] + typed, *seg.chunks[1:]]
            got = constraint.verdict(state, list(seg.sites), True, (0, 1), shaped)
            doc = [c.chunks[0] + typed, *c.chunks[1:]]
            exact = checker.check(doc, structure=whole_shaped).verdict
            if Verdict.UNKNOWN in (got, exact):
                continue
            asked += 1
            assert got is exact, (c.name, typed, got, exact)
    assert asked >= 60
