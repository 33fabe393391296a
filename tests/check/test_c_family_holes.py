"""C and C++ holes where the grammars once disagreed with the compilers (issue 29): a designator
takes `=` or a braced list, an array bound no comma expression; and a witness for a hole inside
a comment keeps the comment whole. gcc and g++ judge every witness."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from holefill.check.checker import Checker, Verdict

GCC = shutil.which("gcc") or "gcc"
GPP = shutil.which("g++") or "g++"
needs_compilers = pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("g++")),
                                     reason="gcc/g++ not installed")


def compiles(lang: str, text: str) -> bool:
    """gcc's (C, gnu17) or g++'s (C++17) verdict on a whole translation unit."""
    cmd = ([GCC, "-std=gnu17", "-x", "c"] if lang == "c" else [GPP, "-std=c++17", "-x", "c++"])
    run = subprocess.run([*cmd, "-fsyntax-only", "-w", "-"], input=text, capture_output=True,
                         text=True)
    return run.returncode == 0


def filled(chunks: list[str], fills: list[str]) -> str:
    return "".join(c + (fills[i] if i < len(fills) else "") for i, c in enumerate(chunks))


@pytest.mark.parametrize("lang", ["c", "cpp"])
@pytest.mark.parametrize("chunks", [
    ["int a[1, ", "];\n"],
    ["int f(int n) { int a[n, ", "]; return 0; }\n"],
    ["struct A { int a[2, ", "]; };\n"],
])
def test_an_array_bound_takes_no_comma_expression(lang: str, chunks: list[str]) -> None:
    """After `[1, ` no filling closes the bound: `[1, 2]` is no array bound (C++ was YES)."""
    assert Checker.for_language(lang).completable(chunks) is Verdict.NO


@needs_compilers
@pytest.mark.parametrize(("lang", "chunks"), [
    ("cpp", ["struct S { int a; const char *b; };\nS s = { .b ", " };\n"]),
    ("cpp", ["struct S { int a; const char *b; };\nS s = { .b ", "0 };\n"]),
    ("cpp", ["struct S { int a; const char *b; };\nS s = { .a = 1, .b ", ", };\n"]),
    ("c", ["struct S { int a; const char *b; };\nstruct S s = { .b ", " };\n"]),
    ("c", ["struct S { int a; const char *b; };\nstruct S s = { .b ", "0 };\n"]),
])
def test_a_designator_is_followed_by_an_initializer(lang: str, chunks: list[str]) -> None:
    """The witness after `.b` starts an initializer (`= ...` or `{...}`), which the compiler
    takes (`b` is a pointer: `""`, `0` and `{}` all do); `.b - 1` or `.b (1)` is no
    designated initializer."""
    chk = Checker.for_language(lang)
    fills = chk.witness(chunks)
    assert fills is not None
    assert fills[0].lstrip()[:1] in ("=", "{"), fills
    assert compiles(lang, filled(chunks, fills)), fills


@needs_compilers
@pytest.mark.parametrize("lang", ["c", "cpp"])
@pytest.mark.parametrize("chunks", [
    ["int x; /* c *", "/\nint y;\n"],
    ["int x; /* c ", "*", "/\nint y;\n"],
    ["int x; /", "* c */\nint y;\n"],
    ["int x; /", "/ c\nint y;\n"],
    ["int x; /* a", " b *", "/ int y;"],
    ["int x; /* c *", "/ int y; /* d *", "/"],
    ["int x = 1 /* c *", "/;"],
])
def test_a_hole_inside_a_comment_gets_a_witness_that_keeps_it(lang: str,
                                                              chunks: list[str]) -> None:
    """A comment that runs through a hole needs exactly its text there (here none): a blank
    between `/* c *` and `/` made `/ * c * /`, code the compiler refuses."""
    chk = Checker.for_language(lang)
    fills = chk.witness(chunks)
    assert fills is not None
    text = filled(chunks, fills)
    assert chk.completable([text]) is Verdict.YES, fills
    assert compiles(lang, text), fills


@needs_compilers
@pytest.mark.parametrize(("lang", "chunks"), [
    ("c", ["int a[2];\nint f(void) <% return a<:", "; %>\n"]),
    ("c", ["%:def", "\nint x;\n"]),
    ("c", ["int gr\u00f6", " = 1;\n"]),
    ("cpp", ["struct S <% int a; ", "\nS s;\n"]),
    ("cpp", ["%:def", "\nint x;\n"]),
    ("cpp", ["namespace \u03c0 { int ou\u01c5", " }\n"]),
])
def test_digraphs_and_utf8_names_get_witnesses_the_compiler_takes(lang: str,
                                                                 chunks: list[str]) -> None:
    """Digraphs (`<%` `%>` `<:` `:>` `%:`) and UTF-8 letters in names are read as gcc and g++
    read them (all these were NO)."""
    fills = Checker.for_language(lang).witness(chunks)
    assert fills is not None
    assert compiles(lang, filled(chunks, fills)), fills


@pytest.mark.parametrize("lang", ["c", "cpp"])
@pytest.mark.parametrize("chunks", [
    ["int \u0301", " = 1;\n"],
    ["int a\u00d7", " = 1;\n"],
])
def test_no_filling_makes_a_name_of_a_non_letter(lang: str, chunks: list[str]) -> None:
    """A combining mark starts no name and U+00D7 is in none (after a blank or a letter no
    filling makes them part of a string, a comment or a name)."""
    assert Checker.for_language(lang).completable(chunks) is Verdict.NO
