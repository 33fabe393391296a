"""HumanEval-Infilling in the bench: the data, the test sandbox, the functional metrics.

Data: the four HumanEval-Infilling splits read through holefill.datasets.data_dir()
(shipped in the package).
"""

from __future__ import annotations

import socket
import time

import pytest

from holefill.bench import config as bench_config
from holefill.bench.datasets import infilling_samples
from holefill.bench.infilling import SPLITS, infilling_tasks, sample_tasks
from holefill.bench.kept import python_tokens_kept
from holefill.bench.metrics import paired
from holefill.bench.report import _con_vs_van
from holefill.bench.runner import Record, repaired, swallowed
from holefill.bench.sandbox import Isolation, run_python

SIZES = {"single-line": 1033, "multi-line": 5815, "random-span": 1640, "random-span-light": 164}


def test_every_split_has_the_papers_task_count_and_fields() -> None:
    for split, n in SIZES.items():
        tasks = infilling_tasks(split)
        assert len(tasks) == n, split
        t = tasks[0]
        assert t.split == split and t.entry_point and "def check" in t.test
        assert t.problem.startswith("HumanEval/")
    assert tuple(SPLITS) == bench_config.INFILLING_SPLITS


def test_fixed_samples_are_deterministic_and_grow_by_adding_tasks() -> None:
    small = sample_tasks("multi-line", 5, seed=0)
    assert small == sample_tasks("multi-line", 5, seed=0)
    big = sample_tasks("multi-line", 40, seed=0)
    assert {t.task_id for t in small} <= {t.task_id for t in big}
    assert sample_tasks("multi-line", 5, seed=1) != small
    assert len(sample_tasks("random-span-light", None, seed=0)) == 164


def _samples(n: int) -> list:
    cfg = bench_config.QUICK.limited(n)
    return infilling_samples(cfg)


def test_canonical_fillings_pass_and_wrong_ones_fail_in_the_sandbox() -> None:
    samples = _samples(2)
    assert {s.group for s in samples} == {f"python {k}" for k in SPLITS}
    for s in samples:
        ok = run_python(s.program(list(s.cut.middles)), timeout_s=20)
        assert ok.passed, (s.name, ok)
        broken = run_python(s.program(["    )(\n"]), timeout_s=20)
        assert broken.status == "failed" and "Error" in broken.detail, s.name


def test_single_line_tasks_stop_at_the_line_end_and_exact_match_ignores_trailing_blanks(
        ) -> None:
    samples = _samples(1)
    line = next(s for s in samples if s.group == "python single-line")
    assert dict(line.decode) == {"multiline": False}
    assert all(not s.decode for s in samples if s is not line)
    middle = line.cut.middles[0]
    assert line.exact([middle.rstrip("\n")])
    assert line.exact([middle + "  \n"])
    assert not line.exact([" " + middle])  # indentation is code in Python
    span = next(s for s in samples if s.group == "python random-span")
    assert span.exact(list(span.cut.middles))
    assert not span.exact([span.cut.middles[0] + " "])


def test_sandbox_fails_assertions_and_kills_endless_loops_in_time() -> None:
    assert run_python("assert sum([1, 2]) == 3\n", 10).passed
    res = run_python("assert 1 == 2\n", 10)
    assert res.status == "failed" and "AssertionError" in res.detail
    t0 = time.monotonic()
    res = run_python("while True:\n    pass\n", 1.5)
    assert res.status == "timeout" and time.monotonic() - t0 < 10


def test_sandbox_refuses_processes_sockets_and_file_removal() -> None:
    for code in ("import os\nos.system('true')\n",
                 "import subprocess\nsubprocess.run(['true'])\n",
                 "import socket\nsocket.create_connection(('127.0.0.1', 9))\n",
                 "import os\nos.remove('task.py')\n",
                 "import shutil\nshutil.rmtree('.')\n"):
        res = run_python(code, 10)
        assert not res.passed and "PermissionError" in res.detail, code


def test_sandbox_has_no_network_when_the_machine_allows_a_namespace() -> None:
    if not Isolation.probe().net_prefix:
        pytest.skip("unshare cannot make a network namespace here")
    # below the in-process guard: the raw socket module, to a listening local port
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        code = (f"import _socket\ns = _socket.socket()\ns.settimeout(2)\n"
                f"s.connect(('127.0.0.1', {port}))\n")
        res = run_python(code, 10)
    finally:
        server.close()
    assert not res.passed and ("refused" in res.detail or "unreachable" in res.detail), res


def test_sandbox_limits_memory_and_file_size() -> None:
    assert not run_python("x = bytearray(3 << 30)\n", 10).passed
    res = run_python("open('big', 'wb').write(b'x' * (64 << 20))\n", 10)
    assert not res.passed and "File too large" in res.detail


def _rec(sample: str, mode: str, passed: bool | None, group: str = "g") -> Record:
    return Record(sample, group, "python", 1, mode, [""], exact=False, passed=passed)


def test_paired_counts_tasks_won_and_lost_against_vanilla() -> None:
    recs = [_rec("a", "Van.", True), _rec("a", "Con.", False),
            _rec("b", "Van.", False), _rec("b", "Con.", True),
            _rec("c", "Van.", False), _rec("c", "Con.", True),
            _rec("d", "Van.", True), _rec("d", "Con.", True),
            _rec("e", "Van.", None), _rec("e", "Con.", True)]  # tests did not run for Van.
    assert paired(recs, lambda r: r.group, "Con.") == {"g": {"n": 4, "gains": 2, "losses": 1}}


def test_report_says_where_constrained_loses_or_gains_pass_at_1() -> None:
    table = {("s1", "Van."): 10.0, ("s1", "Con."): 20.0,
             ("s2", "Van."): 30.0, ("s2", "Con."): 25.0,
             ("s3", "Van."): 5.0, ("s3", "Con."): 5.0}
    text = _con_vs_van(["s1", "s2", "s3"], lambda g, m: table[g, m],
                       {"s1": {"gains": 1, "losses": 0}, "s2": {"gains": 0, "losses": 1}})
    assert "loses pass@1 against Van. on: s2 (25.0 vs 30.0)" in text
    assert "gains on: s1 (+10.0 points, 1 task(s) won)" in text
    assert "over all splits: 1" in text
    fine = _con_vs_van(["s1"], lambda g, m: table[g, m], {})
    assert "loses pass@1 against Van. on no split" in fine


def test_swallowed_fixed_code_is_judged_by_cpythons_tokenizer() -> None:
    # the plain-semantics witness of tests/check/test_anchors.py: valid, and destructive
    chunks = ["", "\nprint(1)\nx = 2\n", "\n"]
    assert swallowed("python", chunks, ["a", "b"], ["'''", "'''"]) is True
    assert swallowed("python", chunks, ["a", "b"], ["a", "b"]) is False
    assert swallowed("python", chunks, ["a", "b"], ["x = (", ")"]) is False
    assert swallowed("cpp", ["int x = ", ";"], ["1"], ["2"]) is None
    # the original itself cannot be tokenized: not judged
    assert swallowed("python", ["x = '''", "\n"], ["a"], ["'''"]) is None


def test_repaired_brackets_are_judged_by_cpythons_tokenizer() -> None:
    """A filling that closes the user's dict early, so that the user's `}` closes a new one,
    re-pairs it; brackets whose partner was in the removed text are free."""
    chunks = ['d = {"mean": m, "count": ', "}\n"]
    assert repaired("python", chunks, ["n"], ["n"]) is False
    assert repaired("python", chunks, ["n"], ["n} ; {"]) is True
    assert repaired("python", chunks, ["n"], ["f(n)"]) is False
    # the `(` paired with the removed `)`: the filling may close it anywhere
    assert repaired("python", ["x = f(a", "\ny = 2\n"], [")"], [", b)"]) is False
    # the user's `(` ... `)` around a hole stay paired, across lines
    around = ["x = f(\n    ", ",\n    b)\n"]
    assert repaired("python", around, ["a"], ["g(a)"]) is False
    assert repaired("python", around, ["a"], ["a), (c"]) is True
    # brace languages are judged too, by their own reading (issue 30)
    assert repaired("cpp", ["int x = ", ";"], ["1"], ["2"]) is False
    main = ["int main() {\n    f(", ");\n    return 0;\n}\n"]
    assert repaired("cpp", main, ["1"], ["1); }\nint g() { h(2"]) is True
    assert repaired("json", ['{"a": [1, ', "]}"], ["2"], ["2], [3"]) is True


def test_lenient_reading_of_invalid_fills() -> None:
    """Unconstrained fills may leave the file invalid: a string open at the end swallows the
    rest; a bracket open at the end swallows nothing; past an indentation error nothing is
    judged."""
    tail = "\ny = 2\nz = 3\n"
    assert python_tokens_kept(["x = ", tail], ["1"], ["'''"], lenient=True) is False
    assert python_tokens_kept(["x = foo(", ")" + tail], ["a"], ["a, ("], lenient=True) is True
    assert python_tokens_kept(["x = foo(", ")" + tail], ["a"], ["a, ("]) is False  # strict
    body = "\n    a = 2\n    return a\n"
    assert python_tokens_kept(["def f():\n    ", body], ["x = 1"], ["x = 1\n  y"],
                              lenient=True) is True
    assert python_tokens_kept(["def f():\n    ", body], ["x = 1"], ["x = 1\n  y"]) is False
    # before an indentation error the comparison still holds
    chunks = ["if x:\n    a = f(", ") + 1\n    b = 2\n", "\n    c = 3\n"]
    assert python_tokens_kept(chunks, ["1", "    d = 4"], ["1)  #", "  e"], lenient=True) is False
    assert python_tokens_kept(chunks, ["1", "    d = 4"], ["1", "  e"], lenient=True) is True
