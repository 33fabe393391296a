"""Real C and C++ files: holefill accepts them whole, and never says NO while one is retyped.

Data: `tests/data/corpus/` (a fixed sample of benchmarks/cpp_corpus.py's corpora, with their
licenses; see its README). The judges of "valid" are tree-sitter-cpp / tree-sitter-c (no ERROR
or MISSING node), never our own grammars.

Replay: a middle of the file is cut out (1 to 3 seeded spans, the first one being retyped),
and for every token boundary k of the first middle the text `prefix + middle[:k] | rest`, with
the other spans left as holes, must be completable (YES or UNKNOWN, never NO): the real middle
completes it. The default run replays two cuts per file; the slow run sweeps more.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from holefill import Checker, Verdict

tree_sitter = pytest.importorskip("tree_sitter")

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
C_PROJECTS = ("brotli", "psutil", "zstandard")
SOURCES = (".c", ".h", ".cc", ".cpp", ".hpp")
TOKEN = re.compile(r"[A-Za-z_0-9]+|\s+|.", re.S)


def sample_files() -> list[tuple[str, Path]]:
    """(language, path) of every committed sample file."""
    out = []
    for p in sorted(CORPUS.rglob("*")):
        if p.suffix in SOURCES:
            out.append(("c" if p.parent.name in C_PROJECTS else "cpp", p))
    return out


FILES = sample_files()
IDS = [f"{lang}:{p.parent.name}/{p.name}" for lang, p in FILES]


def ts_parser(lang: str):
    if lang == "c":
        mod = pytest.importorskip("tree_sitter_c")
    else:
        mod = pytest.importorskip("tree_sitter_cpp")
    return tree_sitter.Parser(tree_sitter.Language(mod.language()))


def test_the_sample_holds_both_languages() -> None:
    langs = [lang for lang, _ in FILES]
    assert langs.count("c") >= 3 and langs.count("cpp") >= 4


@pytest.mark.parametrize(("lang", "path"), FILES, ids=IDS)
def test_sample_file_is_valid_for_tree_sitter_and_holefill(lang: str, path: Path) -> None:
    """Each sample file is one that the outside oracle accepts, and holefill accepts it too."""
    text = path.read_text(encoding="utf-8")
    assert not ts_parser(lang).parse(text.encode()).root_node.has_error
    assert Checker.for_language(lang).completable([text]) is Verdict.YES


def cuts(
    text: str, holes: int, seed: int, count: int, chk: Checker
) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """`count` seeded cuts: `holes` disjoint spans of 10-60 characters, sorted, whose removed
    text keeps the reading of the text around it (a span that ends inside a string or a
    `#include` leaves text no filling may read differently: anchored NO by design)."""
    rng = random.Random(seed)
    made = 0
    while made < count:
        starts = sorted(rng.sample(range(len(text) - 70), holes))
        spans = [(s, s + rng.randint(10, 60)) for s in starts]
        if not all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False)):
            continue
        chunks, middles, at = [], [], 0
        for a, b in spans:
            chunks.append(text[at:a])
            middles.append(text[a:b])
            at = b
        chunks.append(text[at:])
        if chk.keeps_place(chunks, middles):
            made += 1
            yield made, spans


def replay(chk: Checker, text: str, spans: list[tuple[int, int]]) -> list[str]:
    """Retype the first span token by token with the others as holes; the prefixes at which
    the checker said NO."""
    (s0, e0), rest = spans[0], spans[1:]
    tail = [text[e0 : rest[0][0]] if rest else text[e0:]]
    for i, (_, e) in enumerate(rest):
        tail.append(text[e : rest[i + 1][0]] if i + 1 < len(rest) else text[e:])
    middle = text[s0:e0]
    bounds = [0] + [m.end() for m in TOKEN.finditer(middle)]
    # as decoding does: the reading to keep is that of the text before anything was typed
    anchors = chk.anchors([text[:s0], *tail])
    wrong = []
    for k in bounds:
        chunks = [text[:s0] + middle[:k], *tail]
        if chk.check(chunks, anchors=anchors).verdict is Verdict.NO:
            wrong.append(repr(middle[:k]))
    return wrong


@pytest.mark.parametrize("holes", [1, 2, 3])
@pytest.mark.parametrize(("lang", "path"), FILES[::2], ids=IDS[::2])
def test_retyping_a_real_middle_is_never_refused(lang: str, path: Path, holes: int) -> None:
    """Every token-boundary prefix of a real middle, with the real suffix, is completable."""
    chk = Checker.for_language(lang)
    text = path.read_text(encoding="utf-8")
    for n, spans in cuts(text, holes, seed=holes, count=1, chk=chk):
        assert not replay(chk, text, spans), (path.name, n, spans)


@pytest.mark.slow
@pytest.mark.parametrize("holes", [1, 2, 3])
@pytest.mark.parametrize(("lang", "path"), FILES, ids=IDS)
def test_retyping_many_real_middles_is_never_refused(lang: str, path: Path, holes: int) -> None:
    chk = Checker.for_language(lang)
    text = path.read_text(encoding="utf-8")
    for n, spans in cuts(text, holes, seed=100 + holes, count=6, chk=chk):
        assert not replay(chk, text, spans), (path.name, n, spans)


@pytest.mark.parametrize(("lang", "path"), FILES, ids=IDS)
def test_witnesses_of_cut_files_parse(lang: str, path: Path) -> None:
    """A shortest filling of 1-3 holes cut into a real file is accepted by tree-sitter."""
    chk = Checker.for_language(lang)
    parser = ts_parser(lang)
    text = path.read_text(encoding="utf-8")
    for holes in (1, 2, 3):
        for _, spans in cuts(text, holes, seed=7 + holes, count=1, chk=chk):
            chunks, at = [], 0
            for s, e in spans:
                chunks.append(text[at:s])
                at = e
            chunks.append(text[at:])
            res = chk.check(chunks, want_witness=True)
            assert res.verdict is Verdict.YES, (path.name, spans)
            assert res.fills is not None
            filled = "".join(c + f for c, f in zip(chunks, [*res.fills, ""], strict=True))
            assert not parser.parse(filled.encode()).root_node.has_error, (spans, res.fills)
