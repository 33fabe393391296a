"""C and C++ support around the grammars: raw strings, the shared preprocessor lexemes, and
which language a document gets.

The raw-string expression is judged against a direct matcher written from the standard's
definition (`raw_strings.is_raw_string`) on every short string over a small alphabet.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from holefill.errors import LanguageError
from holefill.grammar.raw_strings import (
    CPP_RAW_DELIMITERS,
    is_raw_string,
    raw_body_regex,
    raw_string_regex,
)
from holefill.languages import (
    LANGUAGES,
    get_language,
    is_evident_cpp,
    language_for_document,
    language_for_path,
)

GRAMMARS = Path(__file__).resolve().parents[2] / "server" / "holefill" / "grammars"


def assert_tree_sitter_and_checker_agree(lang: str, text: str, ok: bool) -> None:
    """tree-sitter (the oracle) accepts `text` exactly when `ok`, and so does our checker."""
    tree_sitter = pytest.importorskip("tree_sitter")
    grammar = pytest.importorskip("tree_sitter_cpp" if lang == "cpp" else "tree_sitter_c")
    from holefill import Checker, Verdict

    parser = tree_sitter.Parser(tree_sitter.Language(grammar.language()))
    assert (not parser.parse(text.encode()).root_node.has_error) is ok  # the oracle agrees
    assert (Checker.for_language(lang).completable([text]) is Verdict.YES) is ok



def grammar_text(name: str) -> str:
    return (GRAMMARS / name).read_text()


def test_cpp_grammar_holds_the_generated_raw_string_expression() -> None:
    m = re.search(r"^_RAW: /(.*)/$", grammar_text("cpp.lark"), re.M)
    assert m is not None
    assert m.group(1).replace("\\/", "/") == raw_string_regex(CPP_RAW_DELIMITERS)


@pytest.mark.parametrize("delims", [("",), ("x",), ("ab",), ("", "x", "ab")])
def test_raw_string_expression_agrees_with_a_direct_matcher(delims: tuple[str, ...]) -> None:
    """Every string of up to 9 characters over R " ( ) a b x, with the `R"` head fixed."""
    rx = re.compile(raw_string_regex(delims), re.S)
    for n in range(10):
        for tail in itertools.product('"()abx', repeat=n):
            text = 'R"' + "".join(tail)
            assert bool(rx.fullmatch(text)) == is_raw_string(text, delims), (delims, text)


def test_a_raw_string_ends_at_its_own_delimiter_only() -> None:
    rx = re.compile(raw_body_regex("x"), re.S)
    assert rx.fullmatch('R"x(a)")x"')  # `)"` inside does not end it
    assert not rx.fullmatch('R"x(a)x" b)x"')  # the first `)x"` does
    with pytest.raises(ValueError):
        raw_body_regex("a b")


def test_c_and_cpp_share_the_preprocessor_lexemes() -> None:
    """c.lark's header says its directive lexemes are cpp.lark's: the same text."""

    def section(text: str) -> str:
        start = text.index("// Preprocessor directives, each one lexeme")
        return text[start : text.index("WHITESPACE:", start)]

    assert section(grammar_text("c.lark")) == section(grammar_text("cpp.lark"))


def test_c_is_a_language_of_its_own() -> None:
    assert get_language("c").grammar_file == "c.lark"
    assert get_language("C").name == "c"
    assert get_language("c++").name == "cpp"
    assert language_for_path("x.c").name == "c"
    assert language_for_path("x.h").name == "c"
    assert language_for_path("x.hpp").name == "cpp"
    assert language_for_path("x.cc").name == "cpp"


@pytest.mark.parametrize(
    ("text", "cpp"),
    [
        ("template <class T> struct X;\n", True),
        ("namespace a {\nint x;\n}\n", True),
        ("namespace fs = std::filesystem;\n", True),
        ("class A {\npublic:\n  int x;\n};\n", True),
        ("class Derived : public Base {};\n", True),
        ("#include <vector>\n", True),
        ('extern "C++" {\n}\n', True),
        ("using namespace std;\n", True),
        ("using Vec = int;\n", True),
        ("int f(void);\nstruct s { int a; };\n", False),
        ('#ifdef __cplusplus\nextern "C" {\n#endif\nint f(void);\n', False),
        ("/* a class of problems; see the template below */\nint x;\n", False),
        ("#include <stdio.h>\nint main(void) { return 0; }\n", False),
    ],
)
def test_evident_cpp_is_what_c_cannot_hold(text: str, cpp: bool) -> None:
    assert is_evident_cpp(text) is cpp


def test_document_language_follows_language_id_then_extension_then_text() -> None:
    assert language_for_document("a.c", "c").name == "c"
    assert language_for_document("a.c", "cpp").name == "cpp"  # the client knows best
    assert language_for_document("a.h", "cpp", "int f(void);").name == "cpp"
    assert language_for_document("a.h", "c", "int f(void);").name == "c"
    # a .h file announced as C whose text is evidently C++
    assert language_for_document("a.h", "c", "template <class T> T f();").name == "cpp"
    assert language_for_document("a.h", None, "class A { int x; };").name == "cpp"
    assert language_for_document("a.h", None, "int f(void);").name == "c"
    assert language_for_document("a.h", "plaintext", "int f(void);").name == "c"
    assert language_for_document("a.py", "python").name == "python"
    assert language_for_document("a.hpp", None).name == "cpp"


def test_the_h_files_setting_overrides_the_text() -> None:
    text = "template <class T> T f();"
    assert language_for_document("a.h", None, "int f(void);", h_files="cpp").name == "cpp"
    assert language_for_document("a.h", None, text, h_files="c").name == "c"
    with pytest.raises(LanguageError):
        language_for_document("a.h", None, "", h_files="fortran")


def test_unknown_documents_are_a_language_error() -> None:
    with pytest.raises(LanguageError):
        language_for_document("a.txt", "plaintext")
    with pytest.raises(LanguageError):
        language_for_document(None, None)
    assert set(LANGUAGES) >= {"c", "cpp", "python", "json"}


# A directive line must end where its directive does. Judged by tree-sitter (g++ only warns
# for some of these and drops the text, which is worse for a fill).
DIRECTIVE_LINES = [
    ("#include <vector>using namespace std;\nint x;\n", False),
    ("#include <vector> int x;\n", False),
    ("#define A 1\n#include \"a.h\" int y;\n", False),
    ("#include <vector> // the vectors\nint x;\n", True),
    ("#include <vector> /* a */ /* b */\nint x;\n", True),
    ("#include <vector>\n#include <map>\nint x;\n", True),
]


@pytest.mark.parametrize("lang", ["c", "cpp"])
@pytest.mark.parametrize(("text", "ok"), DIRECTIVE_LINES)
def test_a_directive_line_holds_nothing_after_its_directive(lang: str, text: str,
                                                            ok: bool) -> None:
    assert_tree_sitter_and_checker_agree(lang, text, ok)


def test_a_fill_cannot_put_code_on_a_directive_line() -> None:
    """With a hole after `#include <...>`, the hole may end the line, never continue it;
    the witness for `#include <vector>|int x;` breaks the line (tree-sitter judges). (The
    lexical rule alone: the structure rule keeps `int x;` on the user's line, where only a
    comment can take it, holefill.check.structure.)"""
    tree_sitter = pytest.importorskip("tree_sitter")
    tree_sitter_cpp = pytest.importorskip("tree_sitter_cpp")
    from holefill import Checker, Verdict

    checker = Checker.for_language("cpp")
    assert checker.completable(["#include <vector>using", "\nint x;\n"]) is Verdict.NO
    res = checker.check(["#include <vector>", "int x;\n"], want_witness=True, structured=False)
    assert res.verdict is Verdict.YES and res.fills is not None
    filled = "#include <vector>" + res.fills[0] + "int x;\n"
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_cpp.language()))
    assert not parser.parse(filled.encode()).root_node.has_error, filled


@pytest.mark.parametrize("lang", ["c", "cpp"])
def test_every_directive_lexeme_reads_like_a_whole_directive_line(lang: str) -> None:
    """A directive lexeme that no longer runs on where PP_TRAILING (the whole line, pairs of
    a backslash and the next character) cannot (`#if (a/\\` then a continued line) let the
    lexer with holes end a directive where maximal munch never does: witnesses that did not
    verify and fills stuck on `defined(__GNUC_P|e X \\`. So every word of a directive
    lexeme is a word or a prefix of a word of PP_TRAILING (the C header idiom's two
    three-line lexemes aside)."""
    from holefill.grammar import compile_grammar_file
    from holefill.grammar.automata import DFA, is_subset
    from holefill.grammar.compile import automata_for

    terms = {t.name: t for t in compile_grammar_file(GRAMMARS / f"{lang}.lark", lang)
             .grammar.terminals}

    def of(name: str) -> DFA:
        got = automata_for(terms[name])
        assert got is not None
        return got.full

    for first, names in (("", ("PP_LINE", "PP_IF", "PP_ELSE", "PP_ENDIF")),
                         ("_FIRST", ("PP", "PP_IF"))):
        whole = of("PP_TRAILING" + first)  # minimal, so every state is live
        lines = DFA(whole.boundaries, whole.trans, [0] * len(whole.trans))
        for name in names:
            assert is_subset(of(name + first), lines), name + first


# Directive lines a fill must not break, judged by tree-sitter (and the compiler agrees:
# "macro names must be identifiers", "operator "defined" requires an identifier").
DIRECTIVE_OPERANDS = [
    ("#ifndef 9IF_HPP\n#define IF_HPP\n#endif\n", False),
    ("#ifdef 1\nint x;\n#endif\n", False),
    ("#ifndef IF_HPP // guard\n#define IF_HPP\n#endif\n", True),
    ("int x;\n#if defined\nint y;\n#endif\n", False),
    ("int x;\n#if defined()\nint y;\n#endif\n", False),
    ("int x;\n#if defined && A\nint y;\n#endif\n", False),
    ("#if defined(A) && defined B || defined ( C ) || definedX\nint y;\n#endif\n", True),
    ("#if A\nint y;\n#elif defined\nint z;\n#endif\n", False),
]


@pytest.mark.parametrize("lang", ["c", "cpp"])
@pytest.mark.parametrize(("text", "ok"), DIRECTIVE_OPERANDS)
def test_ifdef_takes_a_name_and_defined_an_operand(lang: str, text: str, ok: bool) -> None:
    assert_tree_sitter_and_checker_agree(lang, text, ok)


# Holes on directive lines, from benchmarks/cpp_fills.py: the witness must verify (our
# grammar accepts the filled text) and tree-sitter must accept it.
DIRECTIVE_HOLES = [
    ["#ifndef ", "IF_HPP\n#define IF_HPP\n#endif\n"],
    ["int x;\n#if defined", "\nint y;\n#endif\n"],
    ["#if defined(__GNUC__) && defined(__GNUC_P",
     "e GNUC_VERSION \\\n  MAKE_VERSION(__GNUC__)\n#endif\n"],
]


@pytest.mark.parametrize("lang", ["c", "cpp"])
@pytest.mark.parametrize("chunks", DIRECTIVE_HOLES)
def test_a_hole_on_a_directive_line_gets_a_verified_witness(lang: str,
                                                            chunks: list[str]) -> None:
    tree_sitter = pytest.importorskip("tree_sitter")
    grammar = pytest.importorskip("tree_sitter_cpp" if lang == "cpp" else "tree_sitter_c")
    from holefill import Checker, Verdict

    checker = Checker.for_language(lang)
    # the lexical rule: the last hole's only fillings end the directive line the user's code
    # goes on, which the structure rule forbids (holefill.check.structure)
    res = checker.check(chunks, want_witness=True, structured=False)
    assert res.verdict is Verdict.YES and res.fills is not None
    assert res.stats.get("witness_verified") == 1.0, res.fills
    filled = chunks[0] + res.fills[0] + chunks[1]
    parser = tree_sitter.Parser(tree_sitter.Language(grammar.language()))
    assert not parser.parse(filled.encode()).root_node.has_error, filled


@pytest.mark.parametrize("lang", ["c", "cpp"])
def test_a_fill_cannot_start_an_ifdef_name_with_a_digit(lang: str) -> None:
    """The fill `9` of `#ifndef |IF_HPP` (benchmarks/cpp_fills.py, enable_if.hpp) made
    `#ifndef 9IF_HPP`, read as a condition with a number; g++ refuses it."""
    from holefill import Checker, Verdict

    checker = Checker.for_language(lang)
    assert checker.completable(["#ifndef 9", "IF_HPP\n#define IF_HPP\n#endif\n"]) is Verdict.NO
    assert checker.completable(["#ifndef ", "IF_HPP\n#define IF_HPP\n#endif\n"]) is Verdict.YES


# Fills that both oracles refused (benchmarks/cpp_fills.py): a member initializer list or
# `typedef` on a function definition (filtered.hpp: `typedef typename F<P, bool>::ty|
# filtered_range(P p, R& r) : base(...) {}`), and type arguments of a call at C file scope
# (psutil's init.h: `PyObject *psutil_proc_exe(PyObject *self, PyOb| ) ; |_proc_net_connections(
# PyObject *, PyObject *);`). Judged by tree-sitter; g++/gcc agree on the C++ and the first
# two C rows (tests/data/grammars), and take the last two as implicit-int declarations.
FUNCTION_FORMS = [
    ("cpp", "struct A { int b; int f() : b(1) { return b; } };\n", False),
    ("cpp", "struct A { typedef int T; typedef T A(int p) : b(p) {} int b; };\n", False),
    ("cpp", "typedef int f() { return 0; }\n", False),
    ("cpp", "struct A { int b; explicit A(int p) : b(p) {} };\n", True),
    ("cpp", "struct A { int b; A(int p); };\ninline A::A(int p) : b(p) {}\n", True),
    ("c", "typedef int f(void) { return 0; }\n", False),
    ("c", "static int f(void) { return 0; }\n", True),
    ("c", "typedef int P;\nf(P *, P *);\n", False),
    ("c", "f(int, char *);\n", False),
]


@pytest.mark.parametrize(("lang", "text", "ok"), FUNCTION_FORMS)
def test_function_heads_as_the_oracles_read_them(lang: str, text: str, ok: bool) -> None:
    assert_tree_sitter_and_checker_agree(lang, text, ok)


# Shapes g++ parses but tree-sitter-cpp refuses, that real code does not write, and that
# witnesses or fills wrote (HumanEval-X witnesses, benchmarks/cpp_fills.py): out of the
# grammar, so the checker's witnesses stay within what both oracles read. Judged by
# tree-sitter; the True rows are the forms real code writes instead.
TREE_SITTER_SHAPES = [
    ("void f(int x) { __typeof__(x) y = x; }\n", False),
    ("void f(int x) { decltype(x) y = x; }\n", True),
    ("void f() { [[ ]]; }\n", False),
    ("void f(int x) { [[maybe_unused]] int y = x; }\n", True),
    ("struct A { operator int(); int g() { return operator int(); } };\n", False),
    ("void f(int **p) { delete [] *p; }\n", False),
    ("void f(int **p) { delete [] (p); }\n", False),
    ("void f(int **p) { delete [] p[0]; }\n", True),
    ("void f(int y) { auto g = [x(y)] { return x; }; }\n", False),
    ("void f(int y) { auto g = [x = y] { return x; }; }\n", True),
    ("template <int I[3] = {1}> struct S;\n", False),
    ("template <int N = 3, bool B = (N > 2)> struct S;\n", True),
    ("template <class U> void g(U u) { u.template f(); }\n", False),
    ("template <class U> void g(U u) { u.template f<0>(); }\n", True),
]


@pytest.mark.parametrize(("text", "ok"), TREE_SITTER_SHAPES)
def test_cpp_shapes_tree_sitter_refuses_are_out(text: str, ok: bool) -> None:
    assert_tree_sitter_and_checker_agree("cpp", text, ok)
