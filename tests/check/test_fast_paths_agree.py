"""The decoder's fast paths (segments, windows, the incremental engine, the verdict memo)
answer every check as the exact whole-document check does (DESIGN.md §12: every fast path is
a second implementation of the check; a disagreement is a bug, not a fallback).

Each case is a cut of a real or corner file and a text typed into its first hole: a prefix of
the real middle, a clause line (`case 0:`, `else:`, `if 0:` ...) or a piece of the file from
elsewhere. The fast verdicts are asked exactly as `HoleDecoder` asks them (the hole open, then
closed after the text); the exact verdict is `Checker.check` of the whole document with the
request's anchors. A witness the decoder's fallback would take must make the whole document
valid for CPython. The slow variant sweeps more cuts (`pytest -m slow`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from holefill.bench.oracles import python_valid as parses
from holefill.check.checker import Checker, Verdict
from holefill.check.structure import PLAIN_STRUCTURE, Structure
from holefill.decode.completer import _hole_state, request_checks
from holefill.decode.loop import DecodeSettings
from holefill.lexing.anchors import Anchors

ROOT = Path(__file__).resolve().parents[1]
CORNERS = sorted((ROOT / "data" / "corners" / "python").glob("*.py"))
CLAUSES = ["case 0:", "case 0:\n", "if 0:", "if 0:\n", "else:", "elif 0:", "except:",
           "finally:", "return", "pass\n", "):", "]", "}", "\n", "\n    ", "\n\t", "x = (",
           "'", '"""', "#", "\\\n", "lambda:", "@d\n"]


def cuts(text: str, rng: random.Random, n: int) -> Iterator[tuple[list[str], str]]:
    """`n` one- and two-hole cuts of `text`: (chunks, the real middle of the first hole).
    Half of the holes start at a line's indentation, where clause lines are typed."""
    starts = [i for i, ch in enumerate(text) if ch == "\n"]
    for _ in range(n):
        if rng.random() < 0.5 and starts:
            a = rng.choice(starts) + 1
            while a < len(text) and text[a] in " \t":
                a += 1
        else:
            a = rng.randrange(len(text))
        b = min(len(text), a + rng.randrange(0, 40))
        if rng.random() < 0.3 and b + 2 < len(text):
            c = rng.randrange(b + 1, len(text))
            d = min(len(text), c + rng.randrange(0, 20))
            yield [text[:a], text[b:c], text[d:]], text[a:b]
        else:
            yield [text[:a], text[b:]], text[a:b]


def proposals(text: str, middle: str, rng: random.Random) -> list[str]:
    out = [middle[:k] for k in sorted({0, len(middle) // 3, len(middle) // 2, len(middle)})]
    out += rng.sample(CLAUSES, 4)
    a = rng.randrange(len(text))
    out.append(text[a: a + rng.randrange(1, 16)])
    return list(dict.fromkeys(out))


def exact(checker: Checker, chunks: list[str], anchors: Anchors,
          structure: Structure = PLAIN_STRUCTURE) -> Verdict:
    return checker.check(chunks, anchors=anchors, structure=structure).verdict


def closed_anchors(anchors: Anchors, at: int) -> Anchors:
    """The document's anchors once its first hole closed with its chunk 0 `at` long."""
    return Anchors(tuple(s.moved(0, at + s.base) if s.chunk == 1 else s.moved(s.chunk - 1,
                                                                              s.base)
                         for s in anchors.sites))


def disagreements(checker: Checker, chunks: list[str], typed: list[str],
                  structured: bool = False) -> list[str]:
    """Every check of `typed` texts in the first hole whose fast verdict differs from the
    exact one (UNKNOWN on either side is no disagreement), and every fallback witness that
    does not make the document valid. `structured`: both keep the structure of `chunks`
    (holefill.check.structure) as decoding does (the hole's region from where the typed
    text begins), else the reading only."""
    n = len(chunks) - 1
    parts = request_checks(checker, chunks, DecodeSettings(structured=structured))
    seg, constraint = next(p for p in parts if 0 in p[0].holes)
    rules = checker.structure(seg.chunks) if structured else None
    state = _hole_state(seg, 0, [""] * n, [False] * n, 0, rules)
    anchors = checker.anchors(chunks)
    whole = checker.structure(chunks) if structured else PLAIN_STRUCTURE
    at_start = whole.with_starts([len(chunks[0])]) if whole.rules else whole
    after = Structure(whole.rules[1:])
    found = []
    for text in typed:
        opened = [chunks[0] + text, *chunks[1:]]
        closed = [chunks[0] + text + chunks[1], *chunks[2:]]
        if structured and checker.structure_violation(chunks[:2], [text]) is not None:
            continue  # decoding's judge refuses the text before any check (FillJudge)
        pairs = [
            ("open", constraint.verdict(state.open(text), state.open_sites(), True,
                                        state.around, state.open_structure()),
             exact(checker, opened, anchors, at_start)),
            ("closed", constraint.verdict(state.closed(text), state.closed_sites(text), True,
                                          state.merged, state.closed_structure()),
             exact(checker, closed, closed_anchors(anchors, len(chunks[0] + text)), after)),
        ]
        for how, fast, whole in pairs:
            if Verdict.UNKNOWN not in (fast, whole) and fast is not whole:
                found.append(f"{how} {text!r}: fast {fast.value}, exact {whole.value}")
        if pairs[0][1] is Verdict.YES and n == 1:
            tail = constraint.witness(state.open(text), state.open_sites(), 0,
                                      state.open_structure())
            if tail is not None and not parses(chunks[0] + text + tail + chunks[1]):
                found.append(f"witness {text!r} + {tail!r} does not parse")
    return found


def sweep(files: list[Path], per_file: int, seed: int, structured: bool = False) -> list[str]:
    checker = Checker.for_language("python")
    rng = random.Random(seed)
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for chunks, middle in cuts(text, rng, per_file):
            if checker.check(chunks, structured=structured).verdict is not Verdict.YES:
                continue  # a cut whose fixed text no filling completes: nothing to type
            for line in disagreements(checker, chunks, proposals(text, middle, rng),
                                      structured):
                found.append(f"{path.name} {[c[-30:] for c in chunks[:-1]]}: {line}")
    return found


def test_a_match_block_hole_takes_only_what_a_match_block_allows() -> None:
    """The report's repro: `if 0:` where `case 2:` belongs was accepted by the window
    (its `class _:` wrappers let a dedent reach a statement list) and fell back to it."""
    checker = Checker.for_language("python")
    chunks = ["def f(x):\n    match x:\n        case 1:\n            return 1\n        ",
              ":\n            return 2\n    return 3\n"]
    assert disagreements(checker, chunks, ["if 0", "if 0:", "case 0", "i"]) == []


@pytest.mark.parametrize("path", CORNERS, ids=lambda p: p.stem)
def test_fast_checks_agree_with_the_exact_check_on_corner_files(path: Path) -> None:
    assert sweep([path], per_file=12, seed=7) == []


@pytest.mark.parametrize("path", CORNERS, ids=lambda p: p.stem)
def test_fast_checks_agree_with_the_exact_check_under_the_structure_rule(path: Path) -> None:
    """The same sweep with the structure rule, as decoding checks by default: the engine's
    right context product, the junction's counter, pieces with free end holes, windows."""
    assert sweep([path], per_file=12, seed=8, structured=True) == []


@pytest.mark.slow
def test_fast_checks_agree_with_the_exact_check_on_many_cuts() -> None:
    import sysconfig

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    small = sorted(p for p in stdlib.glob("*.py") if p.stat().st_size < 12_000)
    files = [*CORNERS, *random.Random(3).sample(small, 12)]
    assert sweep(files, per_file=40, seed=11) == []
