"""A reading re-read from a recent one equals maximal munch from scratch.

`Relexer` (holefill.lexing.relex) reuses the lexemes of a recent text before and after the
place where a new text differs from it. The reference is the reference lexer's own
`lex` over the whole new text. Data: the Python, C++ and C lexers on random edits of short
texts rich in what makes lexemes read far (block comments, strings, raw strings, directives
with continued lines, unclosed quotes), and edits of standard-library files.
"""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from holefill import Checker
from holefill.lexing.relex import Relexer, common_prefix, common_suffix, native_reader

PIECES = ["/*", "*/", "//", "\n", "\\\n", '"', "'", "'''", '"""', "#", "#define X ",
          "R\"(", ")\"", "x", "1", " ", "(", ")", "{", "}", "$", "if", "\t", "e+", "0x"]


def scratch(ref, text: str) -> list[tuple[int, int, int]]:
    return list(ref.lex(ref.classes(text)))


def fresh(language: str, native: bool = False) -> tuple[object, Relexer]:
    """The reference lexer and a new Relexer: in Python, or with the C munch (hf_munch)."""
    ref = Checker.for_language(language).lexer.reference
    reader = native_reader(ref.dfa, ref.error_terms, len(ref.names)) if native else None
    return ref, Relexer(ref.classes, ref.dfa.munch, ref.error_terms, reader)


texts = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)


@pytest.mark.parametrize("native", [False, True], ids=["python", "c"])
@pytest.mark.parametrize("language", ["python", "cpp", "c"])
@settings(max_examples=150, deadline=None)
@given(old=texts, at=st.integers(0, 400), cut=st.integers(0, 6), insert=texts)
def test_a_re_read_equals_a_reading_from_scratch(language, native, old, at, cut,
                                                 insert) -> None:
    ref, relexer = fresh(language, native)
    at = min(at, len(old))
    new = old[:at] + insert + old[at + cut:]
    assert relexer.read(old).triples() == scratch(ref, old)
    assert relexer.read(new).triples() == scratch(ref, new)


@pytest.mark.parametrize("native", [False, True], ids=["python", "c"])
@pytest.mark.parametrize("language", ["python", "cpp"])
def test_typing_along_in_a_real_file_re_reads_the_same_lexemes(language, native) -> None:
    """Insertions, deletions and a comment opened and closed again in a large file, one
    reading after the other (each from the one before)."""
    ref, relexer = fresh(language, native)
    if language == "python":
        text = (Path(sysconfig.get_paths()["stdlib"]) / "argparse.py").read_text()
    else:
        from holefill.datasets import humaneval_cpp_programs
        text = "\n".join(t for _, t in humaneval_cpp_programs()[:40])
    rng = random.Random(5)
    for step in range(40):
        at = rng.randrange(len(text))
        edit = rng.choice(["x", "(", "/*", "*/", '"', "\n", "", "#", "'''"])
        text = text[:at] + edit + text[at + rng.choice([0, 0, 1, 3]):]
        got = relexer.read(text)
        assert got.triples() == scratch(ref, text), step


@given(a=st.text("ab", max_size=12), b=st.text("ab", max_size=12))
def test_common_prefix_and_suffix_are_the_longest(a, b) -> None:
    d = common_prefix(a, b)
    assert a[:d] == b[:d] and (d == min(len(a), len(b)) or a[d] != b[d])
    limit = min(len(a), len(b)) - d
    e = common_suffix(a, b, limit)
    assert e <= limit and a[len(a) - e:] == b[len(b) - e:]
    assert e == limit or a[len(a) - e - 1] != b[len(b) - e - 1]


@pytest.mark.parametrize("language", ["python", "cpp"])
@pytest.mark.parametrize("chunk", [
    "/*" + "x" * 2000 + "*/ a b", '"' + "y" * 3000, " " * 1000 + "a b", "a" * 5000 + " b",
    "'''" + "z\n" * 900 + "''' + 1", "// c\n" * 300 + "q r", "  a" + " " * 3000,
])
def test_a_chunks_own_reading_reads_as_far_as_it_needs(language, chunk) -> None:
    """alpha_s and rho of a chunk after a hole come from a prefix of it that grows while a
    lexeme runs to its end: the same as from the whole chunk."""
    from holefill.lexing.anchors import _own_reading, _own_reading_of

    ref = Checker.for_language(language).lexer.reference
    assert _own_reading(ref, chunk) == _own_reading_of(ref, ref.classes(chunk), False)


@pytest.mark.parametrize("language", ["python", "cpp"])
def test_the_c_reading_of_a_large_file_is_the_python_one_scans_included(language) -> None:
    """Past the first window of classes (runs that need more classes resume), with
    characters outside ASCII and outside the BMP, and a lone surrogate."""
    _, python = fresh(language)
    _, native = fresh(language, native=True)
    text = (Path(sysconfig.get_paths()["stdlib"]) / "argparse.py").read_text()
    text = text + "\n/* é € 😀 \ud800 */ x = 'é😀'\n" + '"' + "y" * 9000
    a, b = python.read(text), native.read(text)
    assert a.triples() == b.triples()
    assert a.scans.tolist() == b.scans.tolist()


@pytest.mark.parametrize("language", ["python", "cpp", "json"])
@settings(max_examples=60, deadline=None)
@given(text=st.text(st.sampled_from("ab 1\n\t{}()'\"#/*\\é中😀\x00\x7f\x80\ud800"),
                    min_size=500, max_size=1500))
def test_long_texts_get_the_classes_a_character_by_character_lookup_gives(language,
                                                                           text) -> None:
    import bisect

    ref = Checker.for_language(language).lexer.reference
    dfa = ref.dfa
    one_by_one = [dfa.class_of_ascii[c] if (c := ord(ch)) < 128 and dfa.class_of_ascii
                  else bisect.bisect_right(dfa.boundaries, c) for ch in text]
    assert ref.classes(text) == one_by_one
