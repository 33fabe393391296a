"""C and C++ segments (holefill.check.segments_brace) against the whole document: when every
segment, filled and with its guard, is valid for our grammar and keeps its reading, the whole
filled document is (the soundness argument of the module docstring, tested); real middles are
accepted segment by segment, and the segments' witnesses complete the whole document; a
guard makes a comment left open in a hole visible to its segment; decoding with segments
gives valid fills.

Data: seeded 2- and 3-hole span cuts (holefill.datasets.random_spans) of the C and C++ files
in tests/data/corpus/ and of HumanEval-X C++ programs put one after another, kept when the
removed text leaves the reading around it as it was; random fillings put snippets that open
and close blocks, namespaces, comments, strings and directives into one hole or into each.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from holefill import Checker, Verdict
from holefill.check.segments import Segment, split_segments
from holefill.check.window import find_window
from holefill.datasets import TREE_SITTER_REJECTS_CPP, cut, humaneval_cpp_programs, random_spans
from holefill.decode.completer import request_checks
from holefill.decode.loop import DecodeSettings
from holefill.lexing.anchors import Anchors, respected

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
PROGRAMS = [p for p in humaneval_cpp_programs() if p[0] not in TREE_SITTER_REJECTS_CPP]
# Fillings that close and reopen blocks, add braces, open literals and comments, leave
# declarations unfinished (as in tests/check/test_window_brace.py).
FRAGMENTS = ["", "x", "0", "}", "}}", "{", "} int g() {", "}\n}\nint h() {", "} namespace N {",
             "} struct S {", "0;}", "/*", "*/", "//", '"', "'", 'R"(', ")\"", "#define X \\\n",
             "\n#include <x>\n", "template <class T>", "int a[] = {", "(", ")", ";",
             "return 0; } int k() { return 1;", "0; } } namespace M { int q() {", "\\",
             "}\n#if X\n", "\n#endif\n", "/* x */", "return 1;\n}\n\nint z(", "a /*b"]


def checker_for(language: str) -> Checker:
    return Checker.for_language(language)


def segments_of(checker: Checker, chunks: Sequence[str]) -> list[Segment]:
    return split_segments(checker.language, checker.lexer.reference, list(chunks),
                          list(checker.anchors(chunks).sites))


def joined(segments: list[Segment]) -> list[str]:
    """The document's chunks again (guards left out)."""
    out: list[str] = []
    for seg in segments:
        chunks = list(seg.chunks)
        chunks[-1] = chunks[-1][: len(chunks[-1]) - len(seg.guard)]
        if out:
            out[-1] += chunks[0]
            out.extend(chunks[1:])
        else:
            out.extend(chunks)
    return out


def filled(chunks: Sequence[str], fills: Sequence[str]) -> str:
    return "".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True))


def valid(checker: Checker, chunks: Sequence[str], sites: Sequence, fills: Sequence[str]) -> bool:
    """`chunks` filled with `fills` is a program of our grammar and keeps the reading that
    `sites` give the fixed text (the anchored semantics, for a text without holes)."""
    text = filled(chunks, fills)
    return (checker.completable([text], anchored=False) is Verdict.YES
            and respected(checker.lexer.reference, chunks, fills, Anchors(tuple(sites))))


def texts() -> list[tuple[str, str, str]]:
    """(language, name, text): the corpus files and files of 3-4 HumanEval-X programs."""
    out = [("c" if p.suffix == ".c" else "cpp", p.name, p.read_text(encoding="utf-8"))
           for p in sorted(CORPUS.glob("*/*")) if p.suffix in (".c", ".cc", ".cpp", ".h", ".hpp")]
    rng = random.Random(14)
    for i in range(12):
        picks = rng.sample(PROGRAMS, rng.randint(3, 4))
        out.append(("cpp", f"humaneval{i}", "".join(
            t if t.endswith("\n") else t + "\n" for _, t in picks)))
    return out


def real_cuts(holes: int, per_text: int, seed: int) -> list:
    out = []
    for language, name, text in texts():
        checker = checker_for(language)
        rng = random.Random(f"brace-segments:{seed}:{holes}:{name}")
        got = 0
        for _ in range(40 * per_text):
            if got == per_text:
                break
            spans = random_spans(text, holes, rng, 5, 80)
            if spans is None:
                continue
            c = cut(name, text, spans)
            if checker.keeps_place(c.chunks, c.middles):
                out.append((language, c))
                got += 1
    return out


# --- where the text is cut ----------------------------------------------------------------------

THREE = ["int f(int x) {\n  return ", ";\n}\n\nint g(int y) {\n  int z = ",
         ";\n  return z;\n}\n\n// h\nstruct H {\n  int a = ", ";\n};\n"]


def test_a_declaration_after_the_end_of_the_holes_one_splits_the_text():
    segs = segments_of(checker_for("cpp"), THREE)
    assert [seg.holes for seg in segs] == [range(0, 1), range(1, 2), range(2, 3)]
    assert segs[1].chunks[0].startswith("int g(int y)")
    assert segs[2].chunks[0].startswith("struct H")  # the comment stays with the segment before
    assert segs[0].guard.startswith("/*") and segs[0].chunks[-1].endswith(segs[0].guard)
    assert joined(segs) == THREE


def test_c_texts_are_cut_too():
    segs = segments_of(checker_for("c"), [*THREE[:2], ";\n  return z;\n}\n\nint h(void) {\n"
                                          "  return ", ";\n}\n"])
    assert len(segs) == 3 and segs[0].guard == "/**/"


K = "int k() { return 2; }\nint h() { return "


@pytest.mark.parametrize(("last", "middle"), [
    # a function's `{`: the `}` after the hole has no opener in the fixed text; it closes
    # the `{` the hole removed, inside the hole's own declaration
    ("int h", "(int z) {"),
    # a loop's `{`: the first `}` after the hole has more of the body after it, so it
    # closes what the hole removed, and the function ends at the `}` after which a line
    # starts at column 0
    ("int h(int n) {\n  int c = 0;\n  for (int i = 0; i < n; i++) ", "{"),
])
def test_a_hole_that_removed_an_opening_brace_leaves_the_text_before_it_cut(last, middle):
    checker = checker_for("cpp")
    after = "\n  return z;\n}\n" if middle != "{" else "\n    c += i;\n  }\n  return c;\n}\n"
    chunks = ["int f() { return ", ";\n}\n\nint g(int y) {\n  return y;\n}\n\n" + last, after]
    middles = ["1", middle]
    segs = segments_of(checker, chunks)
    assert len(segs) == 2 and segs[1].chunks[0].startswith("int g(int y)")
    assert all(valid(checker, seg.chunks, seg.sites, [middles[i] for i in seg.holes])
               for seg in segs)


def test_typing_into_a_hole_parses_nothing_again_for_the_cuts(monkeypatch):
    """Tree-sitter reads the document without the part of each hole's line before the hole
    (segments_brace.proposal_text): typing a word or an open bracket there leaves that text
    and the cuts as they were (a parse of the whole document re-read all of it after an
    open bracket); a comment that runs through the hole keeps its line."""
    from holefill.check import reparse, segments_brace

    checker = checker_for("cpp")
    body = "".join(f"int f{k}(int a) {{\n  return a + {k};\n}}\n" for k in range(300))
    chunks = [body + "int g(int y) {\n  return comp", "ute(y);\n}\n" + body +
              "int h() {\n  return ", ";\n}\n" + body]
    before = segments_of(checker, chunks)
    assert len(before) == 2
    parsed: list[int] = []
    real = reparse.parse
    monkeypatch.setattr(reparse, "parse", lambda lang, data: parsed.append(len(data))
                        or real(lang, data))
    for typed in ("x", "x + fo", "x + foo(a, "):
        typing = [chunks[0] + typed, *chunks[1:]]
        sites = list(checker.anchors(typing).sites)
        after = split_segments("cpp", checker.lexer.reference, typing, sites)
        assert [s.holes for s in after] == [s.holes for s in before]
        assert after[1].chunks == before[1].chunks
    assert parsed == []
    ref = checker.lexer.reference
    commented = ["int f() {\n  return 1; // the", " answer\n}\n", ""]
    text, kept = segments_brace.proposal_text(commented, ref.reading("".join(commented)))
    assert text == "".join(commented)


def test_a_closer_after_the_holes_declaration_still_counts():
    """A one-line function ends at the `}` on its line; the `}` after it closes the
    namespace whose `{` the first hole removed, so no line between the holes is top
    level."""
    chunks = ["#include <x>\nnamespace n ", "\nint f() { return 1; }\nint g() { return ",
              "; }\n}\n"]
    assert len(segments_of(checker_for("cpp"), chunks)) == 1


# depth steps and bracket kinds (1 `(`, 2 `[`, 3 `{`, a closer negative) of a few lexemes
BRACKETS = {"(": (1, 1), ")": (-1, -1), "[": (1, 2), "]": (-1, -2), "{": (1, 3), "}": (-1, -3),
            "x": (0, 0)}


def declaration_end(before: str, after: str) -> int | None:
    """`after` may mark with `!` a closer after which a line starts at column 0 (`?`: marks
    are given, none there)."""
    import numpy as np

    from holefill.check.segments_brace import _declaration_end

    text = before + after
    settles = None
    if "!" in text or "?" in text:
        settles = np.array([text[k + 1:k + 2] == "!" for k, ch in enumerate(text)
                            if ch not in "!?"], bool)
    steps = [BRACKETS[ch] for ch in text if ch not in "!?"]
    return _declaration_end(np.array([d for d, _ in steps], np.int64),
                            np.array([k for _, k in steps], np.int64), len(before), settles)


@pytest.mark.parametrize(("before", "after", "end"), [
    ("x{x", "x}x}", 1),  # closes the brace open at the hole
    ("x{x", "x)x}x}", 3),  # `)` closes a `(` the hole opened
    ("x{x", "x(x)x}", 5),  # the text's own pair is no end
    ("x{x(", "x)x}", 3),  # both open at the hole close
    ("x{x", "x(x}x)x}", 7),  # not inside a bracket the text opened after the hole
    ("x", "x)x(x)x}x", 7),  # none open at the hole: the deepest closer
    ("x", "x)x(x)x", 1),  # the first time it is reached
    ("x", "x(x)x", None),  # the hole opened nothing
    ("x{", "x{x", None),  # nothing closes
    # with line starts marked (`!`: a line at column 0 follows the closer)
    ("x{x", "x}x}!x", 3),  # the first `}` has more body after it: the hole opened `{`
    ("x{x", "x}!x}!x", 1),  # the first settles
    ("x{x", "x}x}x?", 1),  # none settles: the first
    ("x{x{x", "x}x}!", 3),  # an inner bracket closes where it may
])
def test_the_holes_declaration_ends_at_the_closer_of_what_is_open_at_the_hole(before, after,
                                                                                end):
    assert declaration_end(before, after) == end


@pytest.mark.parametrize("chunks", [
    # inside a namespace, a conditional group, an extern "C" block
    ["namespace n {\nint f() { return ", "; }\nint g() { return 1; }\nint h() { return ",
     "; }\n}\n"],
    ["#if X\nint f() { return ", "; }\nint g() { return 1; }\nint h() { return ",
     "; }\n#endif\n"],
    ['extern "C" {\nint f() { return ', "; }\nint g() { return 1; }\nint h() { return ",
     "; }\n}\n"],
    # the holes inside one comment that runs on through the fixed text between them
    ["int f() { /* ", " x\nint g() { return 1; }\nint h() { ", " */ }\n"],
])
def test_no_cut_where_no_line_starts_a_top_level_declaration(chunks):
    assert len(segments_of(checker_for("cpp"), chunks)) == 1


@pytest.mark.parametrize("line", [
    "; } \\\nint g() { return 1; }\n",  # the line break is continued
    "; }\n  int g() { return 1; }\n",  # indented
    "; }\n#define G 1\n",  # a directive
    "; }\n/* c */ int g() { return 1; }\n",  # a comment first
    "; }\ns;\n",  # the declaration of a struct goes on
    "; } /*\nint g() { return 1; }\n*/\n",  # inside a comment
    "; {\n  x = 1;\nL: g(); }\n}\n",  # a label in a block
])
def test_no_cut_where_the_line_may_not_start_a_top_level_declaration(line):
    """The first line after the hole's declaration may not start a segment; the next whole
    declaration does."""
    head = "struct S { int a = " if line.startswith("; }\ns;") else "int f() { return "
    segs = segments_of(checker_for("cpp"), [head, line + K, "; }\n"])
    assert len(segs) == 2 and segs[1].chunks[0].startswith(K), segs


def test_the_plain_semantics_gets_no_segments():
    checker = checker_for("cpp")
    assert len(split_segments("cpp", checker.lexer.reference, THREE, [])) == 1


def test_a_comment_left_open_in_a_hole_is_refused_by_its_segment():
    """`/*` typed into hole 0 and never closed: the segment alone would read `/`, `*`; the
    document reads a comment up to the next `*/`, over the fixed code after the hole (which
    its anchors refuse). The guard makes the segment refuse it too."""
    checker = checker_for("cpp")
    chunks = ["int f() { return 1 ", "; }\nint g() { return 1; }\n/* c */\nint h() { return ",
              "; }\n"]
    segs = segments_of(checker, chunks)
    assert len(segs) == 2
    a = segs[0]
    assert not valid(checker, a.chunks, a.sites, ["/*2"])
    assert not valid(checker, chunks, checker.anchors(chunks).sites, ["/*2", "0"])
    assert valid(checker, a.chunks, a.sites, ["/2"])
    constraint = dict(request_checks(checker, chunks, DecodeSettings(incremental=False)))[a]
    closed = [a.chunks[0] + "/*2" + a.chunks[1]]
    assert constraint.verdict(closed, [a.sites[0].moved(0, len(a.chunks[0]) + 3)]) is Verdict.NO


def test_a_window_that_drops_the_rest_of_the_file_guards_against_an_open_comment():
    """The same for one hole and its window: the window ends after the hole's function,
    the dropped text holds a `*/`."""
    checker = checker_for("cpp")
    chunks = ["int f() { return 1 ", "; }\nint g() { return 2; }\n/* c */\n"]
    window = find_window("cpp", chunks)
    assert window.tail and window.suffix.startswith("/*")
    (seg, constraint), = request_checks(checker, chunks, DecodeSettings(incremental=False))
    closed = [chunks[0] + "/*2" + chunks[1]]
    assert constraint.verdict(closed, [seg.sites[0].moved(0, len(chunks[0]) + 3)]) is Verdict.NO


def test_a_directive_after_the_holes_function_does_not_keep_the_rest_of_the_file():
    """After `}` and a line break, `#` keeps alive the run of `}` + `#endif` (the end of an
    extern "C" block); `#include` kills it before it accepts, so it needs no guard and the
    window still drops the rest of the file, guarded against the comment a filling opens."""
    checker = checker_for("cpp")
    chunks = ["int f() { return 1 ", "; }\n#include <vector>\nint g() { return 2; }\n/* c */\n"]
    window = find_window("cpp", chunks)
    assert window.tail and window.suffix.startswith("/*")
    (seg, constraint), = request_checks(checker, chunks, DecodeSettings(incremental=False))
    for fill, verdict in (("/*2", Verdict.NO), ("+2", Verdict.YES)):
        closed = [chunks[0] + fill + chunks[1]]
        site = seg.sites[0].moved(0, len(chunks[0]) + len(fill))
        assert constraint.verdict(closed, [site]) is verdict


# --- the segments against the whole document -----------------------------------------------------


@pytest.mark.parametrize("holes", [2, 3])
def test_filled_segments_that_are_valid_make_a_valid_document(holes):
    """The soundness argument, with our checker on the whole filled document as the judge:
    random fillings; whenever each segment filled (with its guard and its sites) is valid,
    the whole document is."""
    rng = random.Random(holes)
    split = premises = 0
    for language, c in real_cuts(holes, 5, 0):
        checker = checker_for(language)
        chunks = list(c.chunks)
        segs = segments_of(checker, chunks)
        if len(segs) == 1:
            continue
        split += 1
        sites = checker.anchors(chunks).sites
        for _ in range(40):
            fills = list(c.middles)
            for i in ([rng.randrange(holes)] if rng.random() < 0.67 else range(holes)):
                fills[i] = rng.choice(FRAGMENTS)
            if all(valid(checker, seg.chunks, seg.sites,
                         fills[seg.first:seg.first + len(seg.holes)]) for seg in segs):
                premises += 1
                assert valid(checker, chunks, sites, fills), (c.name, fills)
    assert split >= 8, "too few cuts were split to test anything"
    print(f"{split} cuts split, {premises} fillings with every segment valid")
    assert premises >= 30


@pytest.mark.parametrize("holes", [2, 3])
def test_real_middles_are_accepted_segment_by_segment(holes):
    """Nothing the user's code allows is refused: each segment with its real middles is
    valid, each segment is completable, and the segments' witnesses complete the whole
    document (when the real middles balance their own brackets; see the module docstring
    for the texts that pair brackets across holes)."""
    split = lost = 0
    for language, c in real_cuts(holes, 5, 1):
        checker = checker_for(language)
        chunks = list(c.chunks)
        segs = segments_of(checker, chunks)
        if len(segs) == 1:
            continue
        split += 1
        if pairs_across(checker, c.middles, segs):
            lost += 1  # the loss the module docstring names: not the cut's to see
            continue
        witness: list[str] = []
        for seg in segs:
            middles = list(c.middles[seg.first:seg.first + len(seg.holes)])
            assert valid(checker, seg.chunks, seg.sites, middles), (c.name, seg.first)
            res = checker.check(list(seg.chunks), want_witness=True,
                                anchors=Anchors(seg.sites))
            assert res.verdict is Verdict.YES and res.fills is not None, (c.name, seg.first)
            witness.extend(res.fills)
        assert valid(checker, chunks, checker.anchors(chunks).sites, witness), (c.name, witness)
    print(f"{split} cuts split, {lost} of them with removed texts that pair across a cut")
    assert split >= 8 and lost <= split // 4


def net(checker: Checker, text: str) -> tuple[int, int]:
    """Brackets and conditional groups that `text`, lexed alone, opens minus those it
    closes."""
    from holefill.check.segments_brace import _DEPTH, _GROUP

    ref = checker.lexer.reference
    names = [ref.names[lab] for _, _, lab in ref.lex(ref.classes(text)) if lab >= 0]
    return (sum(_DEPTH.get(n, 0) for n in names), sum(_GROUP.get(n, 0) for n in names))


def pairs_across(checker: Checker, middles: Sequence[str], segs: list[Segment]) -> bool:
    """Some removed text opens a bracket or group that a removed text after a cut closes."""
    for seg in segs[1:]:
        before = [net(checker, m) for m in middles[: seg.first]]
        after = [net(checker, m) for m in middles[seg.first:]]
        if any(d > 0 for b in before for d in b) and any(d < 0 for a in after for d in a):
            return True
    return False


def top_level_by_loop(ref, text: str, wanted: set[int], holes: Sequence[int]) -> set[int]:
    """Condition (e)'s counts one lexeme at a time: the reference `_top_level` is
    measured against (it counts with numpy)."""
    import bisect

    from holefill.check.segments_brace import _DEPTH, _ENDS, _GROUP

    lexemes = [(a, ref.names[lab]) for a, _, lab in ref.lex(ref.classes(text))
               if lab >= 0 and lab not in ref.blank and lab not in ref.comment_like]
    depth = group = k = 0
    last, forward = "", set()
    for a, name in lexemes:
        if (passed := bisect.bisect_right(holes, a)) != k:
            depth = group = 0
            k = passed
        if a in wanted and depth == group == 0 and (last in _ENDS or last.startswith("PP_")):
            forward.add(a)
        depth = max(0, depth + _DEPTH.get(name, 0))
        group = max(0, group + _GROUP.get(name, 0))
        last = name
    left_out = declarations_by_loop(lexemes, forward, sorted(wanted), holes, len(text))
    out = set()
    depth = group = 0
    for a, name in reversed(lexemes):
        if not any(lo <= a < hi for lo, hi in left_out):
            depth = max(0, depth - _DEPTH.get(name, 0))
        group = max(0, group - _GROUP.get(name, 0))
        if a in forward and depth == group == 0:
            out.add(a)
    return out


OPENER = {'"("': ")", '"["': "]", '"[["': "]]", '"{"': "}"}
CLOSER = {'")"': ")", '"]"': "]", '"}"': "}"}


def declarations_by_loop(lexemes, forward, heads, holes, n) -> list[tuple[int, int]]:
    """Each hole's own declaration, from the last forward head of the chunk before it to the
    closer that ends it (see condition e): the brackets the backward count leaves out."""
    out, lo = [], 0
    for h in holes:
        qs = [a for a in forward if lo <= a < h]
        lo = h
        if not qs:
            continue
        q = max(qs)
        end = next((x for x in heads if x > h), n)
        held: list[str] = []
        for a, name in lexemes:
            if q <= a < h and name in OPENER:
                held.extend(OPENER[name])
            elif q <= a < h and name in CLOSER and held and held[-1] == CLOSER[name]:
                held.pop()
        after = [(a, name) for a, name in lexemes if h <= a < end]
        stop = None
        if held:
            own: list[str] = []
            for a, name in after:
                if name in OPENER:
                    own.extend(OPENER[name])
                elif name in CLOSER:
                    if own and own[-1] == CLOSER[name]:
                        own.pop()
                    elif not own and held[-1] == CLOSER[name]:
                        held.pop()
                        if not held:
                            stop = a
                            break
        else:
            count = deepest = 0
            for a, name in after:
                count += len(OPENER.get(name, "")) - len(CLOSER.get(name, ""))
                if count < deepest:
                    deepest, stop = count, a
        out.append((q, end if stop is None else stop + 1))
    return out


@pytest.mark.parametrize("language", ["cpp", "c"])
@pytest.mark.parametrize("seed", range(6))
def test_top_level_positions_are_those_a_lexeme_by_lexeme_count_finds(language, seed):
    from holefill.check.segments_brace import _top_level

    rng = random.Random(seed)
    files = sorted(p for p in CORPUS.glob("*/*")
                   if p.suffix in ((".c",) if language == "c" else (".cc", ".cpp", ".hpp")))
    real = files[seed % len(files)].read_text(encoding="utf-8")
    # fragments that unbalance brackets and conditional groups, spliced in at line starts
    lines = real.splitlines(keepends=True)
    for _ in range(8):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(FRAGMENTS) + "\n")
    ref = checker_for(language).lexer.reference
    for text in (real, "".join(lines)):
        holes = sorted(rng.sample(range(len(text)), rng.randint(0, 4)))
        wanted = {i for i in range(1, len(text)) if text[i - 1] == "\n"}
        wanted |= set(rng.sample(range(len(text)), min(len(text), 500)))
        got = _top_level(ref, text, wanted, holes)
        assert got == top_level_by_loop(ref, text, wanted, holes)


def test_top_level_finds_the_declarations_of_programs_put_one_after_another():
    from holefill.check.segments_brace import _top_level

    text = "\n".join(program for _, program in PROGRAMS[:5])
    ref = checker_for("cpp").lexer.reference
    lines = {i for i in range(1, len(text)) if text[i - 1] == "\n"}
    got = _top_level(ref, text, lines, [])
    assert got == top_level_by_loop(ref, text, lines, [])
    assert len(got) >= 5
