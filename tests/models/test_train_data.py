"""The training data of the bundled model: where FIM examples are cut, function units, and the
overlap check against HumanEval / HumanEval-X (data: the HumanEval-Infilling and HumanEval-X
files of holefill.datasets.data_dir())."""

from __future__ import annotations

import ast
import random

import pytest

from holefill.bench.infilling import infilling_tasks
from holefill.train.fim import FimIds, fim_example
from holefill.train.overlap import OverlapIndex, check_corpus, reference_texts
from holefill.train.spans import SpanMix, char_span
from holefill.train.units import function_units

TEXT = "import os\n\n\ndef f(x):\n    if x:\n        return 1\n\n    return os.sep\n"


def _lines_of(text: str) -> list[str]:
    return text.splitlines(keepends=True)


@pytest.mark.parametrize("seed", range(30))
def test_line_cuts_take_whole_lines_with_their_line_break(seed: int) -> None:
    rng = random.Random(seed)
    kind, (a, b) = SpanMix.parse("line=1").choose(TEXT, rng)
    assert kind == "line"
    middle = TEXT[a:b]
    assert middle in _lines_of(TEXT) and middle.strip()
    assert a == 0 or TEXT[a - 1] == "\n"


@pytest.mark.parametrize("seed", range(30))
def test_block_cuts_take_two_or_more_whole_lines(seed: int) -> None:
    kind, (a, b) = SpanMix.parse("lines=1").choose(TEXT, random.Random(seed))
    middle = TEXT[a:b]
    assert kind == "lines" and TEXT[a:b].strip()
    assert (a == 0 or TEXT[a - 1] == "\n") and (b == len(TEXT) or TEXT[b - 1] == "\n")
    assert middle.count("\n") >= 2 or b == len(TEXT)


@pytest.mark.parametrize("seed", range(30))
def test_line_end_cuts_run_from_inside_a_line_to_its_end(seed: int) -> None:
    _, (a, b) = SpanMix.parse("line-end=1").choose(TEXT, random.Random(seed))
    assert b > a and "\n" not in TEXT[a:b] and TEXT[b] == "\n"
    line_start = TEXT.rfind("\n", 0, a) + 1
    assert TEXT[line_start:a].strip() or TEXT[a] != " "  # after the indentation


def test_char_only_mix_replays_the_papers_random_stream() -> None:
    ids = FimIds(eot=0, prefix=1, middle=2, suffix=3, pad=4)

    def encode(s: str) -> list[int]:
        return [ord(c) for c in s]

    for seed in range(20):
        ours = fim_example(TEXT, encode, ids, random.Random(seed), fim_rate=1.0, spm_rate=0.0)
        rng = random.Random(seed)
        rng.random()
        a, b = char_span(TEXT, rng)
        paper = [1, *encode(TEXT[:a]), 3, *encode(TEXT[b:]), 2, *encode(TEXT[a:b]), 0]
        assert ours == (paper, "psm")


def test_span_mix_rejects_unknown_kinds_and_draws_every_listed_kind() -> None:
    with pytest.raises(ValueError):
        SpanMix.parse("word=1")
    with pytest.raises(ValueError):
        SpanMix.parse("line=0")
    mix = SpanMix.parse("char=1,line=1,lines=1,line-end=1")
    rng = random.Random(0)
    assert {mix.choose(TEXT, rng)[0] for _ in range(200)} == {"char", "line", "lines",
                                                               "line-end"}
    # a text without a code line falls back to the paper's cut
    assert mix.choose("\n\n", random.Random(1))[0] == "char"


def test_function_units_are_dedented_parseable_and_carry_the_imports_they_use() -> None:
    src = ("import os\nimport sys\nfrom typing import List\n\n\nclass A:\n"
           "    def m(self, xs: List[int]) -> int:\n        '''Sum.'''\n        t = 0\n"
           "        for x in xs:\n            t += x\n        return t\n\n\n"
           "def g():\n    return 1\n\n\ndef h(p):\n    q = os.path.join(p, 'x')\n"
           "    r = q + os.sep\n    return r\n")
    units = function_units(src)
    assert len(units) == 2  # g() is too short
    method, func = units
    assert method.startswith("from typing import List\n\n\ndef m(self")
    assert func.startswith("import os\n\n\ndef h(p):") and "import sys" not in func
    for unit in units:
        ast.parse(unit)
    assert function_units("def broken(:\n") == []


@pytest.fixture(scope="module")
def index() -> OverlapIndex:
    return OverlapIndex(reference_texts())


def test_a_file_holding_a_humaneval_solution_is_flagged_with_its_problem(
        index: OverlapIndex) -> None:
    task = infilling_tasks("single-line")[0]
    leaked = "# vendored\n" + task.prompt + task.canonical + task.suffix
    report = check_corpus([("site/leak.py", leaked), ("stdlib/clean.py", TEXT * 20)], index)
    assert report.contaminated == {"site/leak.py"}
    hit = next(h for h in report.hits if h.key == "site/leak.py")
    assert task.problem in hit.tasks


def test_references_cover_every_humaneval_x_language(index: OverlapIndex) -> None:
    refs = reference_texts()
    langs = {task.split("/")[0] for task, _ in refs}
    assert {"HumanEval", "CPP", "Python", "JavaScript", "Java", "Go", "Rust"} <= langs
    assert index.refs == len(refs) and len(index.ngrams) > 10_000
