"""Constrained fills of holes cut into real C and C++ files, with the tiny random-weight model.

Data: `tests/data/corpus/` (real files with their licenses). The judge is tree-sitter-cpp /
tree-sitter-c (no ERROR or MISSING node), which needs no headers; g++'s semantic verdicts are
measured by benchmarks/cpp_fills.py, where the projects' headers are installed.

Cuts whose removed text changes the reading of the text around it (a span ending inside a
string or a directive) are not drawn: no filling may keep that reading, by design
(holefill.lexing.anchors). Every fill must parse, and none may swallow fixed text into a
comment across holes (which the anchors forbid).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
tree_sitter = pytest.importorskip("tree_sitter")

from holefill.bench.scaling import reading_cuts  # noqa: E402
from holefill.decode import Completer  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
C_PROJECTS = ("brotli", "psutil", "zstandard")
FAST = dict(max_new_tokens=10, top_k=4)


def files() -> list[tuple[str, Path]]:
    return [("c" if p.parent.name in C_PROJECTS else "cpp", p)
            for p in sorted(CORPUS.rglob("*")) if p.suffix in (".c", ".h", ".cc", ".cpp", ".hpp")]


def parses(lang: str, text: str) -> bool:
    mod = pytest.importorskip("tree_sitter_c" if lang == "c" else "tree_sitter_cpp")
    parser = tree_sitter.Parser(tree_sitter.Language(mod.language()))
    return not parser.parse(text.encode()).root_node.has_error


def swallows_fixed_text(fills: list[str]) -> bool:
    """A hole leaves a `/*` open and a later hole closes it: the fixed text between becomes a
    comment."""
    for i, f in enumerate(fills):
        if f.rfind("/*") > f.rfind("*/") and any("*/" in g for g in fills[i + 1 :]):
            return True
    return False


def test_swallowing_is_recognised() -> None:
    assert swallows_fixed_text(["x /*", "", "*/ y"])
    assert not swallows_fixed_text(["/* a */", "b"])
    assert not swallows_fixed_text(["a", "/* b"])


def cut(text: str, holes: int, rng: random.Random, lang: str) -> list[str]:
    from holefill import Checker

    (c,) = reading_cuts(Checker.for_language(lang), text, holes, 1, rng, "cut", span=(10, 60))
    return list(c.chunks)


@pytest.fixture(scope="module")
def completer(tiny_model_dir: Path) -> Completer:
    torch.set_num_threads(1)
    return Completer(model=tiny_model_dir, device="cpu", threads=1)


@pytest.mark.parametrize("holes", [1, 2, 3])
def test_constrained_fills_of_real_files_parse(completer: Completer, holes: int) -> None:
    """Every constrained fill (one cut per sample file) parses; print the unconstrained rate
    beside it."""
    rng = random.Random(holes)
    free_ok = total = 0
    for lang, path in files():
        text = path.read_text(encoding="utf-8")
        chunks = cut(text, holes, rng, lang)
        res = completer.fill(chunks, lang, **FAST)
        filled = "".join(c + f for c, f in zip(chunks, [*res.fills, ""], strict=True))
        assert not swallows_fixed_text(res.fills), (path.name, res.fills)
        assert parses(lang, filled), (path.name, res.fills)
        free = completer.fill(chunks, lang, constrained=False, **FAST)
        free_filled = "".join(c + f for c, f in zip(chunks, [*free.fills, ""], strict=True))
        free_ok += parses(lang, free_filled)
        total += 1
    print(f"\nC/C++ {holes} hole(s): constrained {total}/{total}, unconstrained "
          f"{free_ok}/{total}")


SPREAD_CPP = ("#include <vector>\n\nint f(int x) {\n  return <|hole|>;\n}\n\n"
              "int g(int a, int b) {\n  int s = 0;\n  for (int i = a; i < b; i++) s += i;\n"
              "  return s;\n}\n\nint h(std::vector<int> v) {\n  int n = <|hole|>;\n"
              "  return n;\n}\n\nstruct P {\n  int q = 1;\n};\n\n"
              "int k(int y) {\n  if (y > 0) {\n    <|hole|>\n  }\n  return y;\n}\n")


@pytest.mark.parametrize("lang", ["cpp", "c"])
def test_holes_in_different_functions_are_filled_segment_by_segment(completer: Completer,
                                                                    lang: str) -> None:
    """Three holes in three functions, whole functions between: three segments, each checked
    alone, and the whole filled file parses (the segments' soundness, end to end)."""
    from holefill import Checker
    from holefill.decode.completer import request_checks
    from holefill.decode.loop import DecodeSettings

    src = SPREAD_CPP if lang == "cpp" else (SPREAD_CPP.replace("#include <vector>\n", "")
                                            .replace("std::vector<int> v", "int v")
                                            .replace("  int q = 1;", "  int q;"))
    chunks = src.split("<|hole|>")
    parts = request_checks(Checker.for_language(lang), chunks, DecodeSettings())
    assert [list(seg.holes) for seg, _ in parts] == [[0], [1], [2]]
    res = completer.fill(chunks, lang, **FAST)
    filled = "".join(c + f for c, f in zip(chunks, [*res.fills, ""], strict=True))
    assert parses(lang, filled), res.fills
    assert not swallows_fixed_text(res.fills), res.fills


def test_a_hole_inside_a_directive_line_is_filled_within_the_window(completer: Completer,
                                                                    ) -> None:
    """A hole inside a directive line (`#if defined( B_NO_TY|include <...>`) misled the brace
    window about what follows (it took `namespace boost {` for a block and refused the text;
    the completer then went on without the window, `_Fill._unwindowed`). The window now ends
    the directive at its line before reading on, and accepts what the whole file does."""
    from holefill import Checker, Verdict
    from holefill.check.window import find_window

    chunks = ["#ifndef A_H\n#define A_H\n\n#include <boost/config.hpp>\n\n#if defined( B_NO_TY",
              "include <boost/core/typeinfo.hpp>\n\nnamespace boost\n{\n\nnamespace detail\n{\n\n"
              "typedef boost::core::typeinfo t_;\n\n} // namespace detail\n\n} // namespace boost"
              "\n\n#define B_(T) C(T)\n\n#else\n\n#include <typeinfo>\n\nnamespace boost\n{\n\n"
              "typedef std::type_info t_;\n\n} // namespace boost\n\n#endif\n\n#endif  // A_H\n"]
    checker = Checker.for_language("cpp")
    assert checker.check(chunks).verdict is Verdict.YES
    window = find_window("cpp", chunks)
    anchors = window.map_anchors(checker.anchors(chunks), chunks)
    assert checker.check(window.apply(chunks), anchors=anchors).verdict is Verdict.YES
    res = completer.fill(chunks, "cpp", **FAST)
    assert parses("cpp", chunks[0] + res.fills[0] + chunks[1]), res.fills
