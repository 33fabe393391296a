"""The C++ and JSON windows (holefill.check.window_brace) against the whole file.

Soundness is judged by our own grammar, as the contract is about its verdict: a windowed text
filled with y that our grammar accepts means the whole text filled with y is accepted, for
random and structured fillings (fillings that close and reopen blocks, add braces, end
containers early, open strings and comments). Real code is judged by oracles nobody here
wrote: the files are built from HumanEval-X C++ programs (concatenated: tree-sitter-cpp
accepts them; or each program in its own namespace: g++ -fsyntax-only accepts them) and JSON
documents that json.loads accepts; every token prefix of their removed text must get YES from
the windowed check with the hole open, as from the whole file, and from the engine started
where the window starts.

Data: holefill.datasets (`humaneval_cpp_programs`, `json_documents`, `span_cuts`), 4-6
programs per file, 1-3 holes, seeded (seeds in the test ids and the failure messages).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence

import pytest

from holefill import Checker, Verdict
from holefill.bench.oracles import cpp_ts_valid, gpp_syntax_ok, have_gpp, json_valid
from holefill.check.incremental import IncrementalCheck
from holefill.check.window import Window, find_window, left_start
from holefill.check.window_brace import brace_head
from holefill.datasets import (
    TREE_SITTER_REJECTS_CPP,
    Cut,
    humaneval_cpp_programs,
    json_documents,
    span_cuts,
)
from holefill.languages import LANGUAGES
from holefill.lexing.anchors import Anchors

HOLE = "<|hole|>"
PROGRAMS = [p for p in humaneval_cpp_programs() if p[0] not in TREE_SITTER_REJECTS_CPP]


def _line(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def cpp_file(programs: int, seed: int, namespaced: bool = False) -> str:
    """HumanEval-X C++ programs one after another; `namespaced`: each one's code in its own
    namespace, the directives gathered at the top (so that g++ accepts the file)."""
    picks = random.Random(seed).sample(PROGRAMS, programs)
    if not namespaced:
        return "".join(_line(t) for _, t in picks)
    heads, bodies = [], []
    for i, (_, text) in enumerate(picks):
        lines = _line(text).splitlines(keepends=True)
        heads += [x for x in lines if x.lstrip().startswith("#")]
        code = "".join(x for x in lines if not x.lstrip().startswith("#"))
        bodies.append(f"namespace t{i} {{\n{code}}}\n")
    return "".join(dict.fromkeys(heads)) + "".join(bodies)


def cpp_cuts(seed: int, files: int) -> list[Cut]:
    """1, 2 and 3-hole span cuts of plain and namespaced files."""
    rng = random.Random(seed)
    texts = [(f"cpp{seed}.{i}{'ns' if i % 2 else ''}",
              cpp_file(rng.randint(4, 6), rng.randrange(10**6), namespaced=i % 2 == 1))
             for i in range(files)]
    return [c for holes in (1, 2, 3) for c in span_cuts(texts, holes, 1, seed=seed)]


def json_cuts(seed: int, files: int) -> list[Cut]:
    texts = json_documents(files, seed=seed)
    return [c for holes in (1, 2, 3) for c in span_cuts(texts, holes, 1, seed=seed)]


def split(src: str) -> list[str]:
    return src.split(HOLE)


def filled(chunks: Sequence[str], fills: Sequence[str]) -> str:
    return "".join(c + f for c, f in zip(chunks, [*fills, ""], strict=True))


def accepts(language: str, text: str) -> bool:
    return Checker.for_language(language).completable([text], anchored=False) is Verdict.YES


def window_text(language: str, src: str) -> tuple[Window, str]:
    """The window and its text, without the guard that ends a window that drops the rest of
    the file (fact 5; tests/check/test_segments_brace.py pins what it does)."""
    chunks = split(src)
    w = find_window(language, chunks)
    text = HOLE.join(w.apply(chunks))
    for guard in GUARDS:
        if w.tail and text.endswith(guard):
            text = text[: -len(guard)]
    return w, text


GUARDS = ('/*)")x")---")EOF")json")delim"*/', "/**/")  # C++'s, C's


def judged_alike(language: str, src: str, fills: Sequence[str]) -> None:
    """The window may refuse what the file accepts, never accept what the file refuses."""
    chunks = split(src)
    w = find_window(language, chunks)
    if accepts(language, filled(w.apply(chunks), fills)):
        assert accepts(language, filled(chunks, fills)), (fills, w)


# --- C++: where the window starts and ends ------------------------------------------------------

FUNC = "int f{k}(int a) {{\n  return a + {k};\n}}\n\n"
BODY = "".join(f"    v{i} = g({i}, v{i + 1});\n" for i in range(12))


def test_the_head_is_the_top_level_declaration_that_holds_the_first_hole():
    before = "#include <vector>\nusing namespace std;\n\n" + "".join(
        FUNC.format(k=k) for k in range(3))
    src = before + "int h(int a) {\n  int b = a;\n  return <|hole|>;\n}\n" + FUNC.format(k=9)
    w, text = window_text("cpp", src)
    assert w.head == len(before) == left_start("cpp", split(src)[0])
    assert text == "int h(int a) {\n  int b = a;\n  return <|hole|>;\n}\n"
    assert w.tail == len(FUNC.format(k=9)) and w.suffix.startswith("/*")  # only the guard


def test_a_piece_our_grammar_refuses_stays_in_the_window():
    """The whole file is NO for every filling then, and so must the window be."""
    bad = "int a = 1 +;\n"  # a declaration no filling repairs
    src = FUNC.format(k=1) + bad + FUNC.format(k=2) + "int h() { return <|hole|>; }\n"
    w, text = window_text("cpp", src)
    assert text.startswith(bad) and left_start("cpp", split(src)[0]) == len(FUNC.format(k=1))
    chk = Checker.for_language("cpp")
    assert chk.completable(w.apply(split(src))) is Verdict.NO
    src = "int h() { return <|hole|>; }\n" + FUNC.format(k=2) + bad + FUNC.format(k=3)
    w, text = window_text("cpp", src)
    assert text.endswith(bad)  # and the declaration after it is cut
    assert chk.completable(w.apply(split(src))) is Verdict.NO


def test_the_rest_of_a_block_becomes_one_statement_and_later_bodies_collapse():
    src = ("int f(int a) {\n  for (int i = 0; i < a; i++) {\n    if (a) {\n      x = <|hole|>;\n"
           + BODY + "    } else {\n" + BODY + "    }\n" + BODY + "  }\n" + BODY
           + "  return a;\n}\n")
    w, text = window_text("cpp", src)
    assert text == ("int f(int a) {\n  for (int i = 0; i < a; i++) {\n    if (a) {\n"
                    "      x = <|hole|>;\n    v0 = g(0, v1);\n"  # the first statement stays
                    "0;\n} else {0;}\n0;\n}\n0;\n}\n")
    assert accepts("cpp", text.replace(HOLE, "1"))


def test_the_rest_of_a_namespace_becomes_one_namespace_declaration():
    src = ("namespace n {\nint h(int a) {\n  return <|hole|>;\n}\n"
           + "".join(FUNC.format(k=k) for k in range(4)) + "}\n")
    _, text = window_text("cpp", src)
    assert text == ("namespace n {\nint h(int a) {\n  return <|hole|>;\n}\n"
                    "namespace _ {}\n}\n")


def test_no_stand_in_before_every_reading_of_the_fixed_text_is_code_again():
    """A filling may leave a string or comment open that runs into the text after the hole;
    regions begin only after the line where every such reading has ended."""
    src = "int f(int a) {\n  x = g(<|hole|>1); y = 2; z = 3; w = 4; u = 5;\n" + BODY + "}\n"
    _, text = window_text("cpp", src)
    assert "  x = g(<|hole|>1); y = 2; z = 3; w = 4; u = 5;\n    v0 = g(0, v1);\n0;\n}" in text
    for fill in ['"', "'", "/*", "//", 'R"(', "a); /* ", '")', "\\"]:
        judged_alike("cpp", src, [fill])
    # a block comment whose end is in the text makes every region wait for that end
    src = "int f(int a) {\n  x = <|hole|>1;\n" + BODY + "  /* done */\n" + BODY + "}\n"
    _, text = window_text("cpp", src)
    assert "/* done */\n    v0 = g(0, v1);\n0;\n}" in text
    judged_alike("cpp", src, ["/*"])


def test_a_declaration_right_after_the_hole_stays_in_the_window():
    """A filling may end in specifiers or a template head that the next line completes."""
    src = FUNC.format(k=1) + "<|hole|>\nint g(int a) {\n  return a;\n}\n\n" + FUNC.format(k=2)
    _, text = window_text("cpp", src)
    assert text.startswith("<|hole|>\nint g(int a) {")
    for fill in ["template <class T>", "static", "const", "int x = 1;\nlong", "[[nodiscard]]"]:
        assert accepts("cpp", filled(split(src), [fill])) == accepts(
            "cpp", filled(find_window("cpp", split(src)).apply(split(src)), [fill])), fill


def test_an_unclosed_bracket_at_the_hole_does_not_stretch_the_window():
    """With the hole empty, `if (a > ` never closes: tree-sitter then reads the rest of the
    file as one node; the pieces after the hole come from the text after it alone."""
    rest = "".join(FUNC.format(k=k) for k in range(2, 40))
    src = FUNC.format(k=1) + "int h(int a) {\n  if (a > <|hole|>b = 2;\n  return a;\n}\n" + rest
    w, text = window_text("cpp", src)
    assert text == "int h(int a) {\n  if (a > <|hole|>b = 2;\n  return a;\n}\n"
    assert w.tail == len(rest)
    assert accepts("cpp", text.replace(HOLE, "0) "))



def test_a_hole_inside_a_directive_line_does_not_misread_the_bodies_after_it():
    """With the hole empty, tree-sitter read `#if defined( B_NO_TY|include <vector>` on into
    the next lines and the namespace body after it as a block, whose stand-in `0;` then made
    the window refuse what the file accepts (sp_typeinfo_.hpp in benchmarks/cpp_fills.py; the
    completer fell back to no window). The bodies after the hole are proposed from a parse
    that ends the directive at its line."""
    src = ("#include <a.h>\n\n#if defined( A ) || defined( B_NO_TY<|hole|>include <vector>\n\n"
           "namespace boost\n{\n\nint first_value = 1;\nint second_value = 2;\n"
           "int third_value = 3;\n\n} // namespace boost\n\n#else\nint f(int a) {\n" + BODY
           + "}\n#endif\n")
    w, text = window_text("cpp", src)
    assert "{\n\nint first_value = 1;\nint second_value = 2;\n" in text  # not a block
    assert text.endswith("#else\nint f(int a) {0;}\n#endif\n")  # later bodies still collapse
    chunks = split(src)
    chk = Checker.for_language("cpp")
    anchors = w.map_anchors(chk.anchors(chunks), chunks)
    assert chk.check(w.apply(chunks), anchors=anchors).verdict is Verdict.YES
    assert accepts("cpp", filled(w.apply(chunks), ["PE )\n\n#"]))
    for fill in ["PE )\n\n#", ")\n#", "\n#", "", "X) || defined(Y)\n#"]:
        judged_alike("cpp", src, [fill])



def test_the_directive_line_of_the_last_hole_is_closed_in_place():
    """The neutral line keeps every offset and line break, and the place of the line in
    its `#if` group; a hole on a code line changes nothing."""
    from holefill.check.window_brace import _directive_closed

    text = "int a;\n#elif defined( B_NO_TYinclude <x>\nint b;\n"
    p = text.index("include")
    closed = _directive_closed(text, p)
    assert closed is not None and len(closed) == len(text)
    assert closed.split("\n")[1].rstrip() == "#elif 1" and closed.endswith("\nint b;\n")
    text = "#define F(a) \\\n  g(a, <x>\nint b;\n"  # a continued line, blanked whole
    closed = _directive_closed(text, text.index("<x>"))
    assert closed == " " * 14 + "\n" + " " * 10 + "\nint b;\n"
    assert _directive_closed("int a = f(1, 2);\n", 10) is None


# Fillings that close and reopen blocks, add braces, open literals, leave things unfinished.
STRUCTURED_CPP = ["}", "}}", "{", "{{", "} int g() {", "}\n}\nint h() {", "} namespace N {",
                  "} struct S {", "} else {", "0;}", "/*", "//", '"', "'", 'R"(', ")\"",
                  "#define X \\\n", "\n#include <x>\n", "long", "const", "template <class T>",
                  "int a[] = {", "[](){", "if (x)", "do", "case 1:", "L:", "x = ", "(", ")",
                  "for (;;", '} extern "C" {', "];", "return 0; } int k() { return 1;",
                  "0; } } namespace M { int q() {", "\\", "1'0", "R", "}\n#if X\n"]


def test_fillings_that_restructure_blocks_are_judged_like_the_whole_file():
    src = ("namespace n {\nint f(int a) {\n  for (int i = 0; i < a; i++) {\n    if (a) {\n"
           "      x = <|hole|>;\n" + BODY + "    } else {\n" + BODY + "    }\n" + BODY
           + "  }\n" + BODY + "  return a;\n}\n" + FUNC.format(k=3) + "}\n" + FUNC.format(k=4))
    assert find_window("cpp", split(src)).suffix.strip().startswith(("0", "{", "namespace"))
    for fill in STRUCTURED_CPP:
        for y in (fill, "1;\n" + fill, fill + "\n0"):
            judged_alike("cpp", src, [y])


def test_the_window_of_a_function_does_not_depend_on_the_file_around_it():
    """What makes checks flat in file size: the windowed text is the same in a file of 100
    lines and in one of thousands."""
    target = "int h(int a) {\n  int b = a * 2;\n  if (b > 3) {\n    b = <|hole|>;\n" + BODY \
        + "  }\n" + BODY + "  return b;\n}\n"
    texts = []
    for programs in (3, 60):
        text = cpp_file(programs, seed=1)
        half = len(text) // 2
        cut_at = text.index("\n}\n", half) + 3  # after a function
        texts.append(HOLE.join(find_window("cpp", split(text[:cut_at] + target
                                                         + text[cut_at:])).apply(
            split(text[:cut_at] + target + text[cut_at:]))))
    assert texts[0] == texts[1]
    assert len(texts[0]) < 2 * len(target)


def test_offsets_are_code_points_and_crlf_line_ends_work():
    src = ('const char *s = "na\u00efve \u2603 \U0001f600";\r\n'
           "int f(int a) {\r\n  x = <|hole|>;\r\n" + BODY.replace("\n", "\r\n") + "}\r\n"
           + 'const char *t = "\u00e9";\r\n')
    w, text = window_text("cpp", src)
    assert w.head == src.index("int f")
    assert text == "int f(int a) {\r\n  x = <|hole|>;\r\n    v0 = g(0, v1);\n0;\n}\r\n"
    assert accepts("cpp", text.replace(HOLE, "1"))


@pytest.mark.parametrize("language", [x for x in ("c", "cpp") if x in LANGUAGES])
def test_every_registered_c_language_gets_a_verified_head(language):
    first = "int f0(int a) {\n  return a;\n}\n\nint h(int a) {\n  return "
    assert brace_head(language, first) == first.index("int h")


def test_typing_into_the_hole_keeps_the_head_of_the_text_before_it():
    """Typing appends to the first chunk: the pieces before its head stay verified, so the
    head is not searched again (a search would parse the whole chunk per keystroke)."""
    first = "int typing0(int a) {\n  return a;\n}\n\nint typing1(int a) {\n  return "
    head = brace_head("cpp", first)
    assert head == first.index("int typing1")
    typed = first + "a; }\nint typing2(void) { return 2; }\nint typing3(int b) {\n  return "
    assert brace_head("cpp", typed) == head
    far = typed + "b; }\n" + "int pad;\n" * 250 + "int typing4(int c) {\n  return "
    assert brace_head("cpp", far) == far.index("int typing4")  # too far: searched


def test_the_head_of_a_part_of_a_parsed_document_is_read_off_its_parse(monkeypatch):
    """A segment's text before its hole is a part of the request's document, which its cuts
    parsed: the head search takes the piece starts from that tree (no parse of its own) and
    finds the head a parse of its own finds."""
    from holefill.check import reparse, window_brace

    doc = "".join(FUNC.format(k=k) for k in range(1000))
    hole = doc.index(" + 700;")
    later = doc.index("int f800(")
    first = doc[doc.index("int f100("): hole]  # from a declaration on, as a segment's
    assert len(first) >= window_brace.HOLDER_MIN_CHARS
    window_brace.forget()
    own = window_brace._searched_head("cpp", first)
    window_brace.forget()
    window_brace.document_source("cpp", doc[:hole] + doc[later:])
    window_brace._searched_head.cache_clear()
    parsed: list[int] = []
    real = reparse.parse
    monkeypatch.setattr(reparse, "parse", lambda lang, data: parsed.append(len(data))
                        or real(lang, data))
    assert window_brace._searched_head("cpp", first) == own == first.index("int f700(")
    assert parsed == []
    window_brace.forget()


# --- JSON ---------------------------------------------------------------------------------------

DOC = ('{\n  "a": [\n    1,\n    {"b": <|hole|>},\n    3, 4, 5, 6, 7, 8, 9\n  ],\n'
       '  "c": "a long string value",\n  "d": {"e": [1, 2, 3, 4, 5, 6, 7]}\n}\n')


def test_the_rests_of_arrays_and_objects_become_one_neutral_element():
    w, text = window_text("json", DOC)
    assert w.head == 0 == left_start("json", split(DOC)[0])
    assert text == '{\n  "a": [\n    1,\n    {"b": <|hole|>},\n    3,0],"":0}\n'
    assert json_valid(text.replace(HOLE, "1")) and accepts("json", text.replace(HOLE, "1"))


def test_a_container_the_filling_ends_early_is_refused_as_in_the_whole_file():
    """`,0]` needs a value before it: a filling that closes the inner object and the array
    leaves `,0` after a member, where the file's `, 3, 4` would fail too."""
    for fill in ["1}]", "1}], [", "1}]}", "1}]} ", "1}, ", "1}, {", "1}, [", "[", "{",
                 "1, ", '"', '"\\', "1}, 2", "1}, 2]", "1}, 2], \"x\": {", "]", "}"]:
        judged_alike("json", DOC, [fill])


def test_a_single_line_document_gets_stand_ins_only_where_the_reading_is_settled():
    """A filling may leave a string open: until a character that no string and no code could
    take in both readings (a letter outside true/false/null) the text after it is kept."""
    doc = '{"a": [1, {"b": <|hole|>}, 3, 4, 5, 6, 7, 8, 9], "c": "xxxxxxxxxxxxxxxxx", ' \
          '"d": {"e": [1,2,3,4,5,6,7]}}'
    _, text = window_text("json", doc)
    assert text == '{"a": [1, {"b": <|hole|>}, 3, 4, 5, 6, 7, 8, 9], "c": 0,"":0}'
    for fill in ['"', '1, "', '1}, "', '1, "x": "', "1}, 3]}"]:
        judged_alike("json", doc, [fill])


# --- sweeps: never YES where the file says NO ---------------------------------------------------

STRUCTURED_JSON = ["}", "]", "}}", "]]", "[", "{", ",", '"', '"a":', "1]", "1}", "null]}",
                   "[1,", '{"a":', "0,", '"\\', "1, 2", "}, {", "], [", '"a": 1}, "b": ['
                   , "tru", ",0]", ',"":0}', "\n"]


def random_filling(rng: random.Random, text: str, middle: str, vocabulary: list[str]) -> str:
    """The real middle or a piece of it, a snippet of the file, or vocabulary that opens and
    closes blocks and containers (after a piece of the middle, half of the time)."""
    r = rng.random()
    if r < 0.1:
        return ""
    if r < 0.2:
        return middle
    if r < 0.4:
        a = rng.randrange(len(text))
        return text[a : a + rng.randint(1, 80)]
    if r < 0.5:
        return middle[: rng.randrange(len(middle) + 1)]
    parts = [rng.choice(vocabulary) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.5:
        parts.insert(0, middle[: rng.randrange(len(middle) + 1)])
    return (" " if rng.random() < 0.5 else "").join(parts)


def sweep(language: str, cuts: list[Cut], per_cut: int, seed: int) -> tuple[int, int, int]:
    """(fillings, windowed YES, real middles the window refused where the file accepts)."""
    rng = random.Random(seed)
    vocabulary = STRUCTURED_CPP if language == "cpp" else STRUCTURED_JSON
    trials = window_yes = refused = 0
    for c in cuts:
        w = find_window(language, c.chunks)
        window = w.apply(c.chunks)
        for k in range(per_cut):
            fills = list(c.middles) if k == 0 else \
                [random_filling(rng, c.original, m, vocabulary) for m in c.middles]
            trials += 1
            if accepts(language, filled(window, fills)):
                window_yes += 1
                assert accepts(language, c.filled(fills)), (c.name, seed, w, fills)
            elif k == 0:
                refused += accepts(language, c.original)
    return trials, window_yes, refused


@pytest.mark.parametrize(("language", "cuts"), [("cpp", lambda: cpp_cuts(0, 4)),
                                                ("json", lambda: json_cuts(0, 6))])
def test_no_window_accepts_a_filling_the_file_refuses(language: str, cuts: Callable) -> None:
    trials, yes, refused = sweep(language, cuts(), per_cut=16, seed=0)
    print(f"{language}: {trials} fillings, {yes} accepted in the window, {refused} real "
          "middles refused")
    assert yes > trials // 10  # the fillings are not all junk
    assert refused == 0


@pytest.mark.slow
@pytest.mark.parametrize("language", ["cpp", "json"])
def test_no_window_accepts_a_filling_the_file_refuses_on_thousands(language: str) -> None:
    trials = yes = refused = 0
    for seed in range(1, 16):
        cuts = cpp_cuts(seed, 8) if language == "cpp" else json_cuts(seed, 8)
        t, y, r = sweep(language, cuts, per_cut=25, seed=seed)
        trials, yes, refused = trials + t, yes + y, refused + r
    print(f"{language}: {trials} fillings, {yes} accepted in the window, {refused} real "
          "middles refused")
    assert trials >= 8000
    assert refused == 0


def test_valid_top_level_pieces_concatenate_to_a_valid_file():
    """Fact (2) of holefill.check.window_brace for our C++ grammar: pieces our grammar
    accepts, each ending with a line break, stay valid in any order and combination
    (directives, comments, `using`, functions, namespaces)."""
    from holefill.check.window_brace import _piece_starts, _Source

    pieces = []
    for seed in range(3):
        for namespaced in (False, True):
            text = cpp_file(4, seed, namespaced)
            starts = [*_piece_starts(_Source("cpp", text)), len(text)]
            pieces += [text[a:b] for a, b in zip(starts, starts[1:], strict=False)]
    pieces += ["// a comment\n", "/* a block\n comment */\n", "\n", "#define N 3\n",
               "#if N\nint n;\n#endif\n", ";\n"]
    pieces = [x for x in pieces if x.endswith("\n") and accepts("cpp", x)]
    assert len(pieces) > 30
    rng = random.Random(0)
    for _ in range(40):
        picks = rng.sample(pieces, rng.randint(2, 5))
        assert accepts("cpp", "".join(picks)), picks


# --- real code: every token prefix of the real middle -------------------------------------------


def replay(language: str, c: Cut, token_ends, whole_every: int) -> list[tuple]:
    """Every token prefix of the first hole's real text and the closed hole, checked as the
    decoder does: the classic check of the window (anchors of the windowed request), the
    engine from the window's head; every `whole_every`-th also on the whole file."""
    chk = Checker.for_language(language)
    chunks = list(c.chunks)
    w = find_window(language, chunks)
    engine = IncrementalCheck(chk, left_start(language, chunks[0]), w.tail, w.suffix, None)
    sites = list(chk.anchors(w.apply(chunks)).sites)
    whole_anchors = chk.anchors(chunks)
    problems = []
    middle = c.middles[0]
    for k, end in enumerate(token_ends(middle)):
        state = [chunks[0] + middle[:end], *chunks[1:]]
        got = chk.check(w.apply(state), anchors=w.map_anchors(Anchors(tuple(sites)), state))
        if got.verdict is not Verdict.YES:
            problems.append((c.name, end, "window", got.verdict))
        fast = engine.verdict(state, sites)
        if fast is not None and fast is not Verdict.YES:
            problems.append((c.name, end, "engine", fast))
        if whole_every and k % whole_every == 0:
            whole = chk.check(state, anchors=whole_anchors).verdict
            if whole is not Verdict.YES:
                problems.append((c.name, end, "whole file", whole))
    closed = [chunks[0] + middle + chunks[1], *chunks[2:]]
    if chk.check(w.apply(closed)).verdict is not Verdict.YES and len(chunks) == 2:
        problems.append((c.name, "closed", w))
    return problems


def real_cuts(language: str, seed: int, files: int) -> list[Cut]:
    """Cuts of real code (the oracle accepts the file) whose removed text keeps the reading
    of the text around it (anchored semantics refuses the others by design)."""
    cuts = cpp_cuts(seed, files) if language == "cpp" else json_cuts(seed, files)
    judge = cpp_ts_valid if language == "cpp" else json_valid
    chk = Checker.for_language(language)
    out = [c for c in cuts if chk.keeps_place(c.chunks, c.middles)]
    assert all(judge(c.original) for c in out)
    return out


@pytest.mark.parametrize(("language", "files"), [("cpp", 40), ("json", 40)])
def test_every_token_prefix_of_real_code_is_accepted_in_the_window(language, files,
                                                                   token_ends):
    # random spans mostly break a line the user's code goes on (holefill.check.structure):
    # more files give the ten cuts whose real middle keeps the reading and the structure
    cuts = real_cuts(language, seed=7, files=files)[:10]
    assert len(cuts) >= 8
    problems = [p for c in cuts for p in replay(language, c, token_ends, whole_every=5)]
    assert problems == []


def test_namespaced_files_are_real_cpp_for_gpp():
    """The namespaced files are C++ that g++ accepts (not only tree-sitter)."""
    if not have_gpp():
        pytest.skip("g++ is not installed")
    for seed in range(3):
        assert gpp_syntax_ok(cpp_file(5, seed, namespaced=True), timeout_s=60)


@pytest.mark.parametrize("language", ["cpp", "json"])
def test_windows_are_much_smaller_than_the_file(language):
    """The right context (fixed text after the last hole that a check still reads) stays
    short; the windowed text is a small part of the file."""
    cuts = cpp_cuts(3, 4) if language == "cpp" else json_cuts(3, 8)
    ratios, rights = [], []
    for c in cuts:
        w = find_window(language, c.chunks)
        window = w.apply(c.chunks)
        ratios.append(sum(map(len, window)) / sum(map(len, c.chunks)))
        rights.append(len(window[-1]))
    print(f"{language}: window/file {statistics.mean(ratios):.2f}, right context median "
          f"{statistics.median(rights):.0f} characters over {len(cuts)} cuts")
    assert statistics.median(rights) < 400
    assert statistics.mean(ratios) < (0.5 if language == "cpp" else 0.8)


@pytest.mark.parametrize(("language", "chunks"), [
    ("cpp", ["int f() { return 1; }\n", ""]), ("cpp", ["", "int f() { return 1; }\n"]),
    ("cpp", ["", ""]), ("cpp", ["int f() {", "", "}"]), ("json", ["[1, 2]", ""]),
    ("json", ["", "[1, 2]"]), ("json", ["", ""])])
def test_holes_at_the_ends_of_the_text(language, chunks):
    w = find_window(language, chunks)
    for fill in ["", "int g();\n", "}", "1", "[3]"]:
        fills = [fill] * (len(chunks) - 1)
        if accepts(language, filled(w.apply(chunks), fills)):
            assert accepts(language, filled(chunks, fills)), (chunks, fill, w)
