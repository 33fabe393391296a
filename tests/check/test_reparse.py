"""Tree-sitter trees re-used across edits (holefill.check.reparse): which base a text is
parsed from, and how often the segments and windows built on incremental trees differ from
those built on fresh trees while real code is typed into a hole (they may: the module
docstring says why that is sound; here it is measured and bounded).

Data: files of HumanEval-X C++ programs (holefill.bench.scaling.cpp_file) with seeded 1- and
3-hole cuts whose removed text keeps the reading around it; the first hole's real text is
typed a few characters at a time, a request per state.
"""

from __future__ import annotations

import random

import pytest

from holefill import Checker
from holefill.bench.scaling import cpp_file, reading_cuts
from holefill.check import reparse, segments_brace, window_brace
from holefill.check.segments import split_segments
from holefill.check.window import find_window
from holefill.lexing.relex import common_prefix, common_suffix


@pytest.fixture(autouse=True)
def cold():
    forget()
    yield
    forget()


def forget() -> None:
    window_brace.forget()
    segments_brace._classes.cache_clear()
    reparse.forget()


def test_common_prefix_and_suffix_of_bytes_agree_with_a_plain_scan():
    rng = random.Random(0)
    for _ in range(300):
        a = bytes(rng.choice(b"ab\n") for _ in range(rng.randrange(2000)))
        b = a[: rng.randrange(len(a) + 1)] + bytes(rng.choice(b"ab") for _ in range(
            rng.randrange(5))) + a[rng.randrange(len(a) + 1):]
        n = min(len(a), len(b))
        prefix = next((i for i in range(n) if a[i] != b[i]), n)
        assert common_prefix(a, b) == prefix
        suffix = next((i for i in range(n) if a[-1 - i] != b[-1 - i]), n)
        assert common_suffix(a, b, n) == suffix
        assert common_suffix(a, b, n - prefix) == min(suffix, n - prefix)


def test_a_keystroke_is_parsed_from_the_fresh_base_and_a_far_text_fresh():
    text = cpp_file(600, 0).encode()
    base = reparse.parse("cpp", text)
    at = text.index(b"{\n", len(text) // 2) + 2
    typed = text[:at] + b"int x = " + text[at:]
    tree = reparse.parse("cpp", typed)
    assert list(reparse._bases("cpp")) == [text]  # the incremental tree is no fresh base
    assert list(reparse._seconds("cpp")) == [typed]
    assert tree.root_node.end_byte == len(typed)
    assert str(tree.root_node) == str(reparse.parser("cpp").parse(typed).root_node)
    assert str(base.root_node) == str(reparse.parser("cpp").parse(text).root_node)
    other = cpp_file(600, 1).encode()
    reparse.parse("cpp", other)
    assert list(reparse._bases("cpp")) == [text, other]


def test_fresh_parses_keep_and_use_no_base():
    text = cpp_file(600, 0).encode()
    with reparse.fresh_parses():
        reparse.parse("cpp", text)
        reparse.parse("cpp", text[:100] + b" " + text[100:])
    assert not reparse._bases("cpp") and not reparse._seconds("cpp")


def request(checker: Checker, chunks: list[str]) -> list[tuple]:
    """What a request reads from the trees: its segments and each segment's window."""
    segs = split_segments("cpp", checker.lexer.reference, chunks,
                          list(checker.anchors(chunks).sites))
    return [(s.chunks, find_window("cpp", s.chunks)) for s in segs]


@pytest.mark.parametrize("holes", [1, 3])
def test_typing_real_code_gets_the_segments_and_windows_of_fresh_parses(holes, monkeypatch):
    """Requests while the first hole's real text is typed, on trees re-used from the cold
    request, against the same requests on fresh trees: they agree in nearly every state
    (heads searched every time: a remembered head is another way to keep a window)."""
    monkeypatch.setattr(window_brace, "HEAD_REACH", 0)
    checker = Checker.for_language("cpp")
    text = cpp_file(2000, holes)
    cuts = reading_cuts(checker, text, holes, 6, random.Random(f"reparse{holes}"), "c")
    assert len(cuts) == 6
    states = same = incremental = 0
    for c in cuts:
        forget()
        request(checker, list(c.chunks))  # the cold request: its trees are the bases
        middle, reused = c.middles[0], []
        ends = range(3, len(middle) + 1, 3)
        for end in ends:
            reused.append(request(checker, [c.chunks[0] + middle[:end], *c.chunks[1:]]))
        incremental += len(reparse._seconds("cpp"))
        for end, got in zip(ends, reused, strict=True):
            forget()
            with reparse.fresh_parses():
                fresh = request(checker, [c.chunks[0] + middle[:end], *c.chunks[1:]])
            states += 1
            same += got == fresh
    print(f"{holes} holes: {same} of {states} states alike ({incremental} trees re-used)")
    assert incremental >= 2
    assert states >= 50 and same >= 0.95 * states
